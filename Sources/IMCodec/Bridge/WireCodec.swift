import CIMCodecRuntime
import CProtobufC

/// The one path from bytes to Swift values:
///
///     bytes ──size check──▶ imcodec_prescan ──▶ protobuf_c_message_unpack(arena) ──▶ Swift value
///
/// (Encoding is generated Swift: see ``_WireWriter``.)
enum WireCodec {
    /// Decodes one message of type `M`.
    static func decode<M: IMCodecMessage, Bytes: Collection>(
        _ type: M.Type, from bytes: Bytes, options: DecodingOptions
    ) throws(IMCodecError) -> M where Bytes.Element == UInt8 {
        let arena = try _Arena(firstBlockSize: min(max(bytes.count * 4, 1 << 10), 64 << 10))
        return try withContiguousBytes(bytes) { (buffer) throws(IMCodecError) -> M in
            let message = try unpack(M._protobufCDescriptor, buffer, options: options, arena: arena)
            return M(_protobufCMessage: message)
        }
    }

    /// Checks `buffer` and unpacks it into `arena`. The result lives until the arena is reset.
    static func unpack(
        _ descriptor: _ProtobufCDescriptor, _ buffer: UnsafeRawBufferPointer, options: DecodingOptions, arena: _Arena
    ) throws(IMCodecError) -> _ProtobufCMessage {
        guard buffer.count <= options.maxInputSize else {
            throw .tooLarge("the input is \(buffer.count) bytes; the limit (maxInputSize) is \(options.maxInputSize)")
        }
        // protobuf-c reads nothing when the length is 0, but wants a non-NULL pointer.
        var empty: UInt8 = 0
        return try withUnsafeMutablePointer(to: &empty) { (emptyPointer) throws(IMCodecError) -> _ProtobufCMessage in
            let base = buffer.baseAddress?.assumingMemoryBound(to: UInt8.self) ?? UnsafePointer(emptyPointer)
            let depth = UInt32(clamping: min(max(options.maxDepth, 0), DecodingOptions.maxDepthCap))
            let scan = imcodec_prescan(descriptor.pointer, base, buffer.count, depth, max(options.maxFieldCount, 0))
            if scan.status != IMCODEC_SCAN_OK {
                throw error(for: scan, options: options)
            }
            arena.setMaxBytes(options.decodedMemoryLimit(forInputSize: buffer.count))
            guard let message = protobuf_c_message_unpack(descriptor.pointer, arena.allocator, buffer.count, base) else {
                if arena.limitHit {
                    let limit = options.decodedMemoryLimit(forInputSize: buffer.count)
                    throw IMCodecError(
                        code: .memoryLimitExceeded,
                        reason: "decoding needs more than \(limit) bytes (maxDecodedMemory)")
                }
                throw .malformed("protobuf-c rejected input that passed the pre-scan")
            }
            return _ProtobufCMessage(message)
        }
    }

    /// The error for a failed pre-scan.
    static func error(for scan: imcodec_scan_result, options: DecodingOptions) -> IMCodecError {
        let code: IMCodecError.Code
        switch scan.status {
        case IMCODEC_SCAN_TRUNCATED: code = .truncated
        case IMCODEC_SCAN_MALFORMED: code = .malformed
        case IMCODEC_SCAN_INVALID_UTF8: code = .invalidUTF8
        case IMCODEC_SCAN_TOO_DEEP: code = .tooDeep
        case IMCODEC_SCAN_TOO_MANY_FIELDS: code = .tooManyFields
        case IMCODEC_SCAN_WIRE_TYPE_MISMATCH: code = .wireTypeMismatch
        case IMCODEC_SCAN_UNSUPPORTED: code = .unsupported
        default: code = .malformed
        }
        var reason = scan.detail.map { String(cString: $0) } ?? "invalid input"
        if scan.status == IMCODEC_SCAN_TOO_DEEP {
            reason += " (maxDepth \(min(options.maxDepth, DecodingOptions.maxDepthCap)))"
        } else if scan.status == IMCODEC_SCAN_TOO_MANY_FIELDS {
            reason += " (maxFieldCount \(options.maxFieldCount))"
        }
        if let name = scan.message_name {
            reason += scan.field_number > 0
                ? " in field \(scan.field_number) of \(String(cString: name))"
                : " in \(String(cString: name))"
        }
        return IMCodecError(code: code, reason: reason, offset: scan.offset)
    }
}

/// Calls `body` with the bytes of `bytes` in contiguous memory, copying only when they are not.
@inline(__always)
func withContiguousBytes<Bytes: Collection, R>(
    _ bytes: Bytes, _ body: (UnsafeRawBufferPointer) throws(IMCodecError) -> R
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
