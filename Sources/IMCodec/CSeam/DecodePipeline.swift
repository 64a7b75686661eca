internal import CIMCodecRuntime
internal import CProtobufC

/// The one decode pipeline: every path from input to a protobuf-c message goes through it, and it
/// hands the message over to a closure.
///
///     limits + pre-scan ──▶ arena ──▶ unpack ──▶ body(message) ──▶ arena reset (reused) or released (new)
///
/// - Limits and pre-scan: `WireCodec.scan` checks the input against the ``DecodingOptions`` and
///   estimates what decoding it takes.
/// - Arena: a new one whose first block is sized from the estimate (`firstBlockSize`), or a
///   ``WireDecoder``'s, which it reuses from input to input.
/// - Unpack: `WireCodec.unpack` caps the arena, runs protobuf-c (through the transcoder when the
///   input needs it) where the stack is deep enough (``DecodeStack``), and refuses a frame for
///   newer readers unless ``DecodingOptions/acceptsNewerFrames``.
/// - Hand-over: `body` gets the message, which lives in the arena and is valid only during the
///   call. Afterwards a reused arena is reset, whether `body` returned or threw, and a new one is
///   released.
///
/// Its callers: `IMCodecMessage.init(serializedBytes:options:)` (and through it `merge` and
/// ``Delimited``), ``WireDecoder`` (`decode`, `withFrameView`, and the check ``ServerStamp`` makes;
/// IMCodecNIO decodes with a `WireDecoder`), the accounting decode of the fuzz oracles
/// (`DecodeProbe`), and the format engines: the JSON and text-format parsers write wire bytes
/// that `init(serializedBytes:options:)` then decodes, and the JSON printer, which walks a
/// value's canonical bytes, has them checked and its stack provided here (`withNesting`,
/// `withCanonicalBytes`).
///
/// The entry points that take a body are generic in what the body returns, so that the
/// conversion to a Swift value (or the body of `withFrameView`) is specialized in the caller's
/// module; the work with C pointers stays behind them.
@usableFromInline
enum DecodePipeline {
    /// What the pre-scan and protobuf-c made of an input (for callers inside the library that need
    /// more than the message: ``ServerStamp``'s field count, `DecodeProbe`'s accounting).
    struct Unpacked {
        /// The message, valid until the arena is reset or released.
        let message: _ProtobufCMessage
        /// The pre-scan of the input.
        let scan: imcodec_scan_result
        /// The arena the message lives in.
        let arena: Arena
    }

    // MARK: Arenas

    /// The first block of a new arena for input the pre-scan checked: with the estimate, one block
    /// that holds everything protobuf-c will allocate; without (the input is too short to pass the
    /// memory limit), a block that usually suffices.
    static func firstBlockSize(scan: imcodec_scan_result, inputSize: Int) -> Int {
        scan.estimated != 0 ? max(scan.arena_bytes, 256) : usualBlockSize(inputSize: inputSize, bytesPerInputByte: 4)
    }

    /// A first block of `bytesPerInputByte` bytes per input byte, from 1 KiB to 64 KiB.
    private static func usualBlockSize(inputSize: Int, bytesPerInputByte: Int) -> Int {
        inputSize > (64 << 10) / bytesPerInputByte ? 64 << 10 : max(inputSize * bytesPerInputByte, 1 << 10)
    }

    /// The arena a ``WireDecoder`` keeps between inputs: a first block of `blockSize` bytes, no cap
    /// until an input sets one.
    static func reusableArena(blockSize: Int) throws(IMCodecError) -> Arena {
        try Arena(firstBlockSize: blockSize)
    }

    // MARK: Wire bytes

    /// Checks `buffer` and unpacks it as a message of type `descriptor` into `reused` (a decoder's
    /// arena, which is reset if this fails) or, when `reused` is `nil`, into a new arena sized from
    /// the pre-scan. Returns the message, the scan and the arena it lives in. Not generic, so that
    /// the generic entry points below, specialized in the caller's module, stay thin around it.
    /// `alwaysEstimate` makes the pre-scan estimate even input too short to pass the memory limit
    /// (for `DecodeProbe`).
    static func unpack(
        _ descriptor: _ProtobufCDescriptor,
        _ buffer: UnsafeRawBufferPointer,
        options: DecodingOptions,
        arena reused: Arena?,
        alwaysEstimate: Bool = false
    ) throws(IMCodecError) -> Unpacked {
        do throws(IMCodecError) {
            let scan = try WireCodec.scan(descriptor, buffer, options: options, alwaysEstimate: alwaysEstimate)
            let arena: Arena
            if let reused {
                arena = reused
            } else {
                arena = try Arena(firstBlockSize: firstBlockSize(scan: scan, inputSize: buffer.count))
            }
            let message = try WireCodec.unpack(descriptor, buffer, scan: scan, options: options, arena: arena)
            return Unpacked(message: message, scan: scan, arena: arena)
        } catch {
            reused?.reset()
            throw error
        }
    }

    /// ``unpack(_:_:options:arena:alwaysEstimate:)`` for the inlinable entry points: the message
    /// and the arena that holds it.
    @usableFromInline
    static func unpackMessage(
        _ descriptor: _ProtobufCDescriptor,
        _ buffer: UnsafeRawBufferPointer,
        options: DecodingOptions,
        arena: Arena?
    ) throws(IMCodecError) -> (message: _ProtobufCMessage, arena: Arena) {
        let unpacked = try unpack(descriptor, buffer, options: options, arena: arena)
        return (unpacked.message, unpacked.arena)
    }

    /// Checks and unpacks `buffer` as a message of type `descriptor`, and passes `body` what came
    /// out. `arena` is a decoder's arena, reset afterwards whether `body` returns or throws; `nil`
    /// makes a new one for this input, released afterwards.
    static func withUnpacked<R>(
        _ descriptor: _ProtobufCDescriptor,
        _ buffer: UnsafeRawBufferPointer,
        options: DecodingOptions,
        arena reused: Arena?,
        alwaysEstimate: Bool = false,
        _ body: (Unpacked) throws(IMCodecError) -> R
    ) throws(IMCodecError) -> R {
        let unpacked = try unpack(descriptor, buffer, options: options, arena: reused, alwaysEstimate: alwaysEstimate)
        defer { reused?.reset() }
        return try withExtendedLifetime(unpacked.arena) { () throws(IMCodecError) -> R in try body(unpacked) }
    }

    /// ``unpackMessage(_:_:options:arena:)-(_,UnsafeRawBufferPointer,_,_)`` over the bytes of an
    /// array (not generic either).
    @usableFromInline
    static func unpackMessage(
        _ descriptor: _ProtobufCDescriptor,
        _ bytes: [UInt8],
        options: DecodingOptions,
        arena: Arena?
    ) throws(IMCodecError) -> (message: _ProtobufCMessage, arena: Arena) {
        var failure: IMCodecError?
        let unpacked: (message: _ProtobufCMessage, arena: Arena)? = bytes.withUnsafeBytes { buffer in
            do throws(IMCodecError) {
                return try unpackMessage(descriptor, buffer, options: options, arena: arena)
            } catch {
                failure = error
                return nil
            }
        }
        guard let unpacked else { throw failure ?? .malformed("the input could not be read") }
        return unpacked
    }

    /// ``unpackMessage(_:_:options:arena:)-(_,UnsafeRawBufferPointer,_,_)`` over any collection of
    /// bytes (copied when it is not contiguous).
    @inlinable
    static func unpackMessage<Bytes: Collection>(
        _ descriptor: _ProtobufCDescriptor,
        _ bytes: Bytes,
        options: DecodingOptions,
        arena: Arena?
    ) throws(IMCodecError) -> (message: _ProtobufCMessage, arena: Arena) where Bytes.Element == UInt8 {
        try withContiguousBytes(bytes) { (buffer) throws(IMCodecError) in
            try unpackMessage(descriptor, buffer, options: options, arena: arena)
        }
    }

    // The entry points below are generic in what `body` returns (or in the message type), and
    // inlinable, so that they are specialized in the caller's module: the value is built and
    // returned without generic metadata or extra copies. The C work stays in `unpackMessage`.

    /// Checks and unpacks `buffer` as a message of type `descriptor` and passes `body` the message
    /// (see ``withUnpacked(_:_:options:arena:alwaysEstimate:_:)``).
    @inlinable
    static func withMessage<R>(
        _ descriptor: _ProtobufCDescriptor,
        _ buffer: UnsafeRawBufferPointer,
        options: DecodingOptions,
        arena reused: Arena?,
        _ body: (_ProtobufCMessage) throws(IMCodecError) -> R
    ) throws(IMCodecError) -> R {
        let (message, arena) = try unpackMessage(descriptor, buffer, options: options, arena: reused)
        defer { release(arena, reused: reused) }
        return try body(message)
    }

    /// `withMessage` over the bytes of an array.
    @inlinable
    static func withMessage<R>(
        _ descriptor: _ProtobufCDescriptor,
        _ bytes: [UInt8],
        options: DecodingOptions,
        arena reused: Arena?,
        _ body: (_ProtobufCMessage) throws(IMCodecError) -> R
    ) throws(IMCodecError) -> R {
        let (message, arena) = try unpackMessage(descriptor, bytes, options: options, arena: reused)
        defer { release(arena, reused: reused) }
        return try body(message)
    }

    /// `withMessage` over any collection of bytes (copied when it is not contiguous).
    @inlinable
    static func withMessage<Bytes: Collection, R>(
        _ descriptor: _ProtobufCDescriptor,
        _ bytes: Bytes,
        options: DecodingOptions,
        arena reused: Arena?,
        _ body: (_ProtobufCMessage) throws(IMCodecError) -> R
    ) throws(IMCodecError) -> R where Bytes.Element == UInt8 {
        let (message, arena) = try unpackMessage(descriptor, bytes, options: options, arena: reused)
        defer { release(arena, reused: reused) }
        return try body(message)
    }

    /// After the hand-over: a decoder's arena is reset; a new one is released (kept alive until
    /// here, since the message lived in it).
    @inlinable
    static func release(_ arena: Arena, reused: Arena?) {
        if let reused { reused.reset() } else { withExtendedLifetime(arena) {} }
    }

    /// Decodes `bytes` into a value of type `M`: the pipeline, with a body that converts the
    /// message where the stack is deep enough for it.
    @inlinable
    static func decode<M: IMCodecMessage>(
        _ type: M.Type,
        _ bytes: [UInt8],
        options: DecodingOptions,
        arena reused: Arena?
    ) throws(IMCodecError) -> M {
        let (message, arena) = try unpackMessage(M._protobufCDescriptor, bytes, options: options, arena: reused)
        defer { release(arena, reused: reused) }
        return try value(message)
    }

    /// `decode` from raw memory.
    @inlinable
    static func decode<M: IMCodecMessage>(
        _ type: M.Type,
        _ buffer: UnsafeRawBufferPointer,
        options: DecodingOptions,
        arena reused: Arena?
    ) throws(IMCodecError) -> M {
        let (message, arena) = try unpackMessage(M._protobufCDescriptor, buffer, options: options, arena: reused)
        defer { release(arena, reused: reused) }
        return try value(message)
    }

    /// `decode` from any collection of bytes.
    @inlinable
    static func decode<M: IMCodecMessage, Bytes: Collection>(
        _ type: M.Type,
        _ bytes: Bytes,
        options: DecodingOptions,
        arena reused: Arena?
    ) throws(IMCodecError) -> M where Bytes.Element == UInt8 {
        let (message, arena) = try unpackMessage(M._protobufCDescriptor, bytes, options: options, arena: reused)
        defer { release(arena, reused: reused) }
        return try value(message)
    }

    /// The Swift value of `message`, converted where the stack is deep enough for it.
    @inlinable
    static func value<M: IMCodecMessage>(_ message: _ProtobufCMessage) throws(IMCodecError) -> M {
        try DecodeStack.run(depth: message.depth) { M(_protobufCMessage: message) }
    }

    // MARK: Format engines

    /// Checks `bytes`, the canonical encoding of a value of type `M`, with the pre-scan and
    /// `options` (no unpacking), then runs `body` where the stack allows the nesting the scan
    /// found (for the JSON printer, which recurses once per message level).
    static func withNesting<M: IMCodecMessage, R>(
        of bytes: [UInt8],
        _ type: M.Type,
        options: DecodingOptions,
        _ body: () throws(IMCodecError) -> R
    ) throws(IMCodecError) -> R {
        let depth = try withContiguousBytes(bytes) { (buffer) throws(IMCodecError) -> Int in
            Int(try WireCodec.scan(M._protobufCDescriptor, buffer, options: options).max_depth_seen)
        }
        return try DecodeStack.run(depth: depth, body)
    }

    /// Decodes `bytes` as an `M` (the whole recipe, with `options`) and passes `body` the canonical
    /// encoding of the value, where the stack allows its nesting: the conversion, the encoding and
    /// `body` all recurse once per level (JSON printed from wire bytes of any form).
    static func withCanonicalBytes<M: IMCodecMessage, R>(
        _ type: M.Type,
        _ bytes: [UInt8],
        options: DecodingOptions,
        _ body: ([UInt8]) throws(IMCodecError) -> R
    ) throws(IMCodecError) -> R {
        try withMessage(M._protobufCDescriptor, bytes, options: options, arena: nil) {
            (message) throws(IMCodecError) -> R in
            try DecodeStack.run(depth: message.depth) { () throws(IMCodecError) -> R in
                try body(M(_protobufCMessage: message).serializedBytes())
            }
        }
    }
}

extension WireDecoder {
    /// Checks and unpacks `buffer` as a ``Frame`` exactly as ``withFrameView(_:_:)-([UInt8],_)`` does, and
    /// passes `body` the view and the number of fields the pre-scan counted (for ``ServerStamp``,
    /// which must know how many fields the input holds to keep the stamped frame within the limits).
    func withCheckedFrame<R>(
        _ buffer: UnsafeRawBufferPointer,
        _ body: (borrowing FrameView, _ fieldCount: Int) -> R
    ) throws(IMCodecError) -> R {
        try DecodePipeline.withUnpacked(Frame._protobufCDescriptor, buffer, options: options, arena: _arena()) {
            body(FrameView(_message: $0.message), $0.scan.field_count)
        }
    }
}
