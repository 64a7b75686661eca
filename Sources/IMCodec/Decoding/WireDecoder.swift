/// A reusable decoder for servers: decodes into one arena that it resets between inputs, so a
/// decode costs no `malloc` per field, and lets a router read a frame's routing facts through a
/// ``FrameView`` without building the Swift value.
///
/// ```swift
/// let decoder = WireDecoder()
/// let route = try decoder.withFrameView(bytes) { frame in
///     (frame.payloadKind, frame.conversationType, frame.targetID, frame.messageFlags)
/// }
/// ```
///
/// A decoder is not thread-safe: use one per connection or per thread. The values it returns are
/// ordinary Swift values that share nothing with it.
public final class WireDecoder {
    /// The limits every input is checked against.
    public let options: DecodingOptions
    private let firstBlockSize: Int
    private var arena: Arena?

    /// Creates a decoder.
    /// - Parameters:
    ///   - options: Limits for hostile input.
    ///   - arenaBlockSize: Bytes the arena keeps between inputs; larger inputs borrow more and give
    ///     it back after each call.
    public init(options: DecodingOptions = DecodingOptions(), arenaBlockSize: Int = 64 << 10) {
        self.options = options
        self.firstBlockSize = max(arenaBlockSize, 1 << 10)
    }

    // The entry points below are @inlinable so that the conversion to `M` (or the call of `body`)
    // is specialized in the caller's module; they decode through DecodePipeline, in the arena
    // this decoder reuses.

    /// Implementation detail: the arena this decoder reuses (made by the first decode).
    @usableFromInline
    func _arena() throws(IMCodecError) -> Arena {
        if let arena { return arena }
        let made = try DecodePipeline.reusableArena(blockSize: firstBlockSize)
        arena = made
        return made
    }

    /// Decodes one message of type `type`.
    /// - Throws: ``IMCodecError`` with the code of the first problem and its byte offset.
    @inlinable
    public func decode<M: IMCodecMessage>(_ type: M.Type = M.self, from bytes: [UInt8]) throws(IMCodecError) -> M {
        try DecodePipeline.decode(M.self, bytes, options: options, arena: _arena())
    }

    /// Decodes one message of type `type` from raw memory (a NIO `ByteBuffer`'s readable bytes).
    /// - Throws: ``IMCodecError`` with the code of the first problem and its byte offset.
    @inlinable
    public func decode<M: IMCodecMessage>(
        _ type: M.Type = M.self,
        from buffer: UnsafeRawBufferPointer
    )
        throws(IMCodecError) -> M
    {
        try DecodePipeline.decode(M.self, buffer, options: options, arena: _arena())
    }

    /// Decodes one message of type `type` from any collection of bytes.
    /// - Throws: ``IMCodecError`` with the code of the first problem and its byte offset.
    @inlinable
    public func decode<M: IMCodecMessage, Bytes: Collection>(
        _ type: M.Type = M.self,
        from bytes: Bytes
    )
        throws(IMCodecError) -> M where Bytes.Element == UInt8
    {
        try DecodePipeline.decode(M.self, bytes, options: options, arena: _arena())
    }

    /// Decodes a ``Frame`` and passes a read-only view of it to `body`, without building Swift values
    /// for the parts `body` does not read. The view cannot leave `body` (it is `~Escapable`, and so
    /// is every view it hands out), so nothing can reach the arena after the call. Every message
    /// type has such a view: `withView(Message.self, bytes) { ... }`.
    /// - Throws: ``IMCodecError`` when the bytes do not decode, or whatever `body` throws.
    @inlinable
    public func withFrameView<R>(_ bytes: [UInt8], _ body: (borrowing FrameView) throws -> R) throws -> R {
        try DecodePipeline.withMessage(Frame._protobufCDescriptor, bytes, options: options, arena: _arena()) {
            message in
            Result { try body(FrameView(_message: message)) }
        }.get()
    }

    /// ``withFrameView(_:_:)-([UInt8],_)`` over raw memory (a NIO `ByteBuffer`'s readable bytes).
    @inlinable
    public func withFrameView<R>(
        _ buffer: UnsafeRawBufferPointer,
        _ body: (borrowing FrameView) throws -> R
    ) throws -> R {
        try DecodePipeline.withMessage(Frame._protobufCDescriptor, buffer, options: options, arena: _arena()) {
            message in
            Result { try body(FrameView(_message: message)) }
        }.get()
    }

    /// ``withFrameView(_:_:)-([UInt8],_)`` over any collection of bytes.
    @inlinable
    public func withFrameView<Bytes: Collection, R>(
        _ bytes: Bytes,
        _ body: (borrowing FrameView) throws -> R
    ) throws -> R
    where Bytes.Element == UInt8 {
        try DecodePipeline.withMessage(Frame._protobufCDescriptor, bytes, options: options, arena: _arena()) {
            message in
            Result { try body(FrameView(_message: message)) }
        }.get()
    }
}

@available(*, unavailable, message: "a WireDecoder reuses one arena; give each thread its own")
extension WireDecoder: Sendable {}
