internal import CIMCodecRuntime
internal import CIMCodecSchemas
internal import CProtobufC

/// The steps of a decode, from bytes to a protobuf-c message (``DecodePipeline`` runs them, in
/// this order, for every caller):
///
///     bytes ──size check──▶ imcodec_prescan_ex ──▶ protobuf_c_message_unpack(arena) ──▶ Swift value
///                                │ wire-type mismatches, repeated   ▲
///                                │ singular sub-messages (rare)     │
///                                └──▶ imcodec_transcode ─────────────┘
///
/// The pre-scan (Sources/CIMCodecRuntime/prescan.c) checks the bytes without allocating and
/// estimates what decoding them will take: protobuf-c's arena and the Swift value. Input whose
/// estimate passes ``DecodingOptions/maxDecodedMemory`` fails there, before anything is allocated;
/// otherwise the arena is created at the estimated size and capped at it, so a decode never holds
/// more than the input plus that limit (see HardeningTests "heap bound").
///
/// A known field that arrives with the wrong wire type is kept as an unknown field, as Google's
/// parsers do. protobuf-c 1.4.1 would reject the message, so such input (the pre-scan counts these
/// fields in `wrap_count`) is first rewritten by imcodec_transcode (Sources/CIMCodecRuntime/
/// transcode.c) into the arena: each such field wrapped in a field numbered
/// `IMCODEC_WRAPPER_FIELD_NUMBER`, which ``CRead/unknownFields(_:)`` unwraps again. Likewise a
/// singular sub-message that occurs more than once must be merged, as protobuf defines parsing
/// (`merge_count`): protobuf-c 1.4.1 merges such occurrences wrongly, so the transcoder writes
/// each such field once with its occurrences merged (transcode.c explains how). And a length
/// prefix of 6 to 10 bytes (`long_length_count`), which upb, Java and Go read and protobuf-c does
/// not, is written again in 5 bytes or fewer (an unknown field's is kept, wrapped). Input without
/// any of these (the fast path) is unpacked where it is. Errors always carry offsets into the original
/// input: every check runs on it, before any rewriting.
///
/// (Encoding is generated Swift: see ``_WireWriter``.)
enum WireCodec {
    /// What ``IMCodecMessage/merge(serializedBytes:options:)`` decodes: a value's own (trusted)
    /// bytes followed by `bytes`, which are first checked against `options` by the pre-scan (so
    /// errors carry offsets into them, and nothing is decoded when they fail), and the options for
    /// decoding the two together (only the stack cap on depth and the memory limit still apply).
    static func mergeInput<Bytes: Collection>(
        _ descriptor: _ProtobufCDescriptor,
        own: [UInt8],
        merging bytes: Bytes,
        options: DecodingOptions
    ) throws(IMCodecError) -> (bytes: [UInt8], options: DecodingOptions) where Bytes.Element == UInt8 {
        var joined = own
        try withContiguousBytes(bytes) { (buffer) throws(IMCodecError) in
            _ = try scan(descriptor, buffer, options: options)
            joined.append(contentsOf: buffer)
        }
        return (joined, .ownBytes(acceptsNewerFrames: options.acceptsNewerFrames))
    }

    /// The pre-scan of `buffer` with `options`; throws its error.
    static func scan(
        _ descriptor: _ProtobufCDescriptor,
        _ buffer: UnsafeRawBufferPointer,
        options: DecodingOptions,
        alwaysEstimate: Bool = false
    ) throws(IMCodecError) -> imcodec_scan_result {
        try DecodingOptions.checkInputSize(buffer.count, maxInputSize: options.maxInputSize, input: "input")
        var scanOptions = ValueCost.scanOptions
        scanOptions.max_depth = UInt32(clamping: options.effectiveMaxDepth)
        scanOptions.max_fields = options.effectiveMaxFieldCount
        scanOptions.max_memory = options.decodedMemoryLimit(forInputSize: buffer.count)
        if alwaysEstimate { scanOptions.flags |= IMCODEC_SCAN_ALWAYS_ESTIMATE }
        if !options.acceptsLongLengthPrefixes { scanOptions.flags &= ~IMCODEC_SCAN_LONG_LENGTHS }
        let scan = withBase(buffer) { imcodec_prescan_ex(descriptor.pointer, $0, buffer.count, &scanOptions) }
        if scan.status != IMCODEC_SCAN_OK {
            throw error(for: scan, options: options, inputSize: buffer.count)
        }
        return scan
    }

    /// Unpacks `buffer`, which `scan` accepted, into `arena` (transcoding it first when it has
    /// wire-type mismatches).
    static func unpack(
        _ descriptor: _ProtobufCDescriptor,
        _ buffer: UnsafeRawBufferPointer,
        scan: imcodec_scan_result,
        options: DecodingOptions,
        arena: Arena
    ) throws(IMCodecError) -> _ProtobufCMessage {
        let limit = options.decodedMemoryLimit(forInputSize: buffer.count)
        // The estimate bounds protobuf-c's allocations; the cap makes that a guarantee (a little
        // slack for the arena's alignment of the first allocation). Without the estimate the input
        // cannot pass the limit (imcodec_scan_bound), which is then the cap.
        let cap = scan.estimated != 0 ? scan.arena_bytes &+ 64 : limit
        arena.setMaxBytes(cap)
        // protobuf-c (and the transcoder) recurse once per level: deep input runs where the stack allows.
        let message = try DecodeStack.run(depth: Int(scan.max_depth_seen)) {
            () throws(IMCodecError) -> _ProtobufCMessage in
            guard scan.wrap_count == 0 && scan.merge_count == 0 && scan.long_length_count == 0 else {
                return try transcodeAndUnpack(descriptor, buffer, scan: scan, options: options, arena: arena)
            }
            let unpacked = withBase(buffer) {
                protobuf_c_message_unpack(descriptor.pointer, arena.allocator, buffer.count, $0)
            }
            return try result(unpacked, arena: arena, scan: scan)
        }
        if !options.acceptsNewerFrames { try checkReaderVersion(descriptor, message.raw) }
        return message
    }

    /// Refuses a ``Frame`` whose `min_reader_version` is above ``Frame/currentSchemaVersion``
    /// (binary and JSON decoding; other message types pass). 0, proto3's default, means 1.
    static func checkReaderVersion(
        _ descriptor: _ProtobufCDescriptor,
        _ message: UnsafeRawPointer
    ) throws(IMCodecError) {
        guard descriptor.pointer == Frame._protobufCDescriptor.pointer else { return }
        let needed = message.assumingMemoryBound(to: Imcodec__V1__Frame.self).pointee.min_reader_version
        guard needed > Frame.currentSchemaVersion else { return }
        throw IMCodecError(
            code: .unsupportedVersion,
            reason: "the frame needs a reader of schema version \(needed) or newer (min_reader_version \(needed)); "
                + "this reader implements schema version \(Frame.currentSchemaVersion) "
                + "(DecodingOptions.acceptsNewerFrames decodes it anyway)"
        )
    }

    /// The slow path, for input protobuf-c would decode differently from Google's parsers (a
    /// wire-type mismatch, a singular sub-message that occurs twice, a length prefix over 5
    /// bytes): rewrite it into the arena
    /// with imcodec_transcode, then unpack the rewritten bytes. The rewrite's buffers (sized from
    /// the scan's counts) and the estimate of the rewritten bytes (which is exact for them, where
    /// the input's estimate cannot foresee what merging adds) together must fit the memory limit,
    /// checked before protobuf-c runs.
    private static func transcodeAndUnpack(
        _ descriptor: _ProtobufCDescriptor,
        _ buffer: UnsafeRawBufferPointer,
        scan: imcodec_scan_result,
        options: DecodingOptions,
        arena: Arena
    ) throws(IMCodecError) -> _ProtobufCMessage {
        let limit = options.decodedMemoryLimit(forInputSize: buffer.count)
        let stride = MemoryLayout<imcodec_transcode_segment>.stride
        let capacity = imcodec_transcode_capacity(buffer.count, scan.message_count, scan.wrap_count)
        let (segments, segmentsOverflow) = scan.message_count.multipliedReportingOverflow(by: 2)
        let (scratchBytes, scratchOverflow) = (segments | 1).multipliedReportingOverflow(by: stride)
        let (needed, sumOverflow) = scratchBytes.addingReportingOverflow(capacity)
        guard !(segmentsOverflow || scratchOverflow || sumOverflow || capacity == Int.max), needed <= limit else {
            throw memoryError(limit)
        }
        arena.setMaxBytes(Int.max)
        let scratch = try allocate(scratchBytes, in: arena, limit: limit)
            .bindMemory(to: imcodec_transcode_segment.self, capacity: segments | 1)
        let rewritten = try allocate(max(capacity, 1), in: arena, limit: limit).bindMemory(
            to: UInt8.self,
            capacity: max(capacity, 1)
        )
        var length = 0
        let status = withBase(buffer) {
            imcodec_transcode(descriptor.pointer, $0, buffer.count, scratch, segments | 1, rewritten, capacity, &length)
        }
        try check(status)
        // Merged messages may need more of protobuf-c's scratch than their parts were charged, so
        // the rewritten bytes (which hold no repeats) are estimated again, and checked against
        // what is left of the limit, before protobuf-c runs.
        var rescanOptions = ValueCost.scanOptions
        rescanOptions.max_depth = UInt32(IMCODEC_PRESCAN_DEPTH_CAP)
        rescanOptions.max_fields = Int.max
        rescanOptions.max_memory = max(0, limit - arena.bytesUsed)
        rescanOptions.flags |= IMCODEC_SCAN_ALWAYS_ESTIMATE
        let rescan = imcodec_prescan_ex(descriptor.pointer, rewritten, length, &rescanOptions)
        guard rescan.status == IMCODEC_SCAN_OK, rescan.merge_count == 0, rescan.long_length_count == 0 else {
            if rescan.status == IMCODEC_SCAN_TOO_MUCH_MEMORY { throw memoryError(limit) }
            throw .malformed("the rewritten input does not pass the pre-scan (a bug in imcodec_transcode)")
        }
        arena.setMaxBytes(arena.bytesUsed &+ rescan.arena_bytes &+ 64)
        let unpacked = protobuf_c_message_unpack(descriptor.pointer, arena.allocator, length, rewritten)
        return try result(unpacked, arena: arena, scan: rescan)
    }

    private static func result(
        _ unpacked: UnsafeMutablePointer<ProtobufCMessage>?,
        arena: Arena,
        scan: imcodec_scan_result
    ) throws(IMCodecError) -> _ProtobufCMessage {
        guard let unpacked else {
            if arena.limitHit {
                // Only if the estimate were wrong: a bug (the fuzz targets check for it).
                throw IMCodecError(
                    code: .memoryLimitExceeded,
                    reason: scan.estimated != 0
                        ? "protobuf-c needed more than the pre-scan's estimate of \(scan.arena_bytes) bytes"
                        : "decoding needs more than maxDecodedMemory bytes"
                )
            }
            throw .malformed("protobuf-c rejected input that passed the pre-scan")
        }
        return _ProtobufCMessage(unpacked, depth: Int(scan.max_depth_seen))
    }

    private static func allocate(
        _ size: Int,
        in arena: Arena,
        limit: Int
    ) throws(IMCodecError) -> UnsafeMutableRawPointer {
        guard let pointer = imcodec_arena_alloc(arena.raw, size) else {
            if arena.limitHit { throw memoryError(limit) }
            throw .outOfMemory("cannot allocate \(size) bytes")
        }
        return pointer
    }

    private static func check(_ status: imcodec_transcode_status) throws(IMCodecError) {
        switch status {
        case IMCODEC_TRANSCODE_OK: return
        case IMCODEC_TRANSCODE_TOO_LARGE:
            throw .tooLarge("rewriting the input for protobuf-c makes a sub-message longer than 2^31-1 bytes")
        default:
            throw .malformed("the input changed while it was decoded, or the pre-scan and the transcoder disagree")
        }
    }

    private static func memoryError(_ limit: Int) -> IMCodecError {
        IMCodecError(code: .memoryLimitExceeded, reason: "decoding needs more than \(limit) bytes (maxDecodedMemory)")
    }

    /// Calls `body` with the buffer's first byte, or a pointer to a zero byte when it is empty
    /// (protobuf-c reads nothing when the length is 0, but wants a non-NULL pointer).
    @inline(__always)
    private static func withBase<R>(_ buffer: UnsafeRawBufferPointer, _ body: (UnsafePointer<UInt8>) -> R) -> R {
        if let base = buffer.baseAddress { return body(base.assumingMemoryBound(to: UInt8.self)) }
        var empty: UInt8 = 0
        return withUnsafePointer(to: &empty) { body($0) }
    }

    /// The error for a failed pre-scan.
    static func error(for scan: imcodec_scan_result, options: DecodingOptions, inputSize: Int = 0) -> IMCodecError {
        let code: IMCodecError.Code
        switch scan.status {
        case IMCODEC_SCAN_TRUNCATED: code = .truncated
        case IMCODEC_SCAN_MALFORMED: code = .malformed
        case IMCODEC_SCAN_INVALID_UTF8: code = .invalidUTF8
        case IMCODEC_SCAN_TOO_DEEP: code = .tooDeep
        case IMCODEC_SCAN_TOO_MANY_FIELDS: code = .tooManyFields
        case IMCODEC_SCAN_WIRE_TYPE_MISMATCH: code = .wireTypeMismatch
        case IMCODEC_SCAN_UNSUPPORTED: code = .unsupported
        case IMCODEC_SCAN_TOO_MUCH_MEMORY: code = .memoryLimitExceeded
        default: code = .malformed
        }
        var reason = scan.detail.map { String(cString: $0) } ?? "invalid input"
        if scan.status == IMCODEC_SCAN_TOO_DEEP {
            reason += " (maxDepth \(options.effectiveMaxDepth))"
        } else if scan.status == IMCODEC_SCAN_TOO_MANY_FIELDS {
            reason += " (maxFieldCount \(options.maxFieldCount))"
        } else if scan.status == IMCODEC_SCAN_TOO_MUCH_MEMORY {
            reason =
                "decoding needs more than \(options.decodedMemoryLimit(forInputSize: inputSize)) bytes (maxDecodedMemory)"
        }
        if let name = scan.message_name {
            reason +=
                scan.field_number > 0
                ? " in field \(scan.field_number) of \(String(cString: name))"
                : " in \(String(cString: name))"
        }
        return IMCodecError(code: code, reason: reason, offset: scan.offset)
    }
}

/// Calls `body` with the bytes of `bytes` in contiguous memory, copying only when they are not.
@inlinable
func withContiguousBytes<Bytes: Collection, R>(
    _ bytes: Bytes,
    _ body: (UnsafeRawBufferPointer) throws(IMCodecError) -> R
) throws(IMCodecError) -> R where Bytes.Element == UInt8 {
    var result: Result<R, IMCodecError>?
    bytes.withContiguousStorageIfAvailable { buffer in
        result = Result { () throws(IMCodecError) -> R in try body(UnsafeRawBufferPointer(buffer)) }
    }
    if let result { return try result.get() }
    let copy = Array(bytes)
    return try copy.withUnsafeBytes { (raw) -> Result<R, IMCodecError> in
        Result { () throws(IMCodecError) -> R in try body(raw) }
    }.get()
}
