import CIMCodecRuntime
import CIMCodecSchemas
import CProtobufC

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
    private var arena: _Arena?

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
    // is specialized in the caller's module; the work with C pointers stays behind these two
    // non-generic functions. `_unpack` leaves the message in the arena until `_reset`.

    /// Implementation detail: checks and unpacks `buffer` into the arena.
    @usableFromInline
    func _unpack(_ descriptor: _ProtobufCDescriptor, _ buffer: UnsafeRawBufferPointer) throws(IMCodecError)
    -> _ProtobufCMessage {
        let arena: _Arena
        if let existing = self.arena {
            arena = existing
        } else {
            arena = try _Arena(firstBlockSize: firstBlockSize)
            self.arena = arena
        }
        do {
            return try WireCodec.unpack(descriptor, buffer, options: options, arena: arena)
        } catch {
            arena.reset()
            throw error
        }
    }

    /// Implementation detail: checks and unpacks `bytes` into the arena.
    @usableFromInline
    func _unpack(_ descriptor: _ProtobufCDescriptor, _ bytes: [UInt8]) throws(IMCodecError) -> _ProtobufCMessage {
        var failure: IMCodecError?
        let message: _ProtobufCMessage? = bytes.withUnsafeBytes { raw in
            do throws(IMCodecError) {
                return try _unpack(descriptor, raw)
            } catch {
                failure = error
                return nil
            }
        }
        guard let message else { throw failure ?? .malformed("the input could not be read") }
        return message
    }

    /// Implementation detail: checks and unpacks any collection of bytes (copied when it is not
    /// contiguous).
    @usableFromInline
    func _unpack<Bytes: Collection>(_ descriptor: _ProtobufCDescriptor, _ bytes: Bytes) throws(IMCodecError)
    -> _ProtobufCMessage where Bytes.Element == UInt8 {
        try withContiguousBytes(bytes) { (raw) throws(IMCodecError) in try _unpack(descriptor, raw) }
    }

    /// Implementation detail: forgets the last unpacked message.
    @usableFromInline
    func _reset() { arena?.reset() }

    /// Checks and unpacks `buffer` as a ``Frame`` exactly as ``withFrameView(_:_:)-([UInt8],_)`` does, and
    /// passes `body` the view and the number of fields the pre-scan counted (for ``ServerStamp``,
    /// which must know how many fields the input holds to keep the stamped frame within the limits).
    func withCheckedFrame<R>(
        _ buffer: UnsafeRawBufferPointer, _ body: (borrowing FrameView, _ fieldCount: Int) -> R
    ) throws(IMCodecError) -> R {
        let arena: _Arena
        if let existing = self.arena {
            arena = existing
        } else {
            arena = try _Arena(firstBlockSize: firstBlockSize)
            self.arena = arena
        }
        defer { arena.reset() }
        let descriptor = Frame._protobufCDescriptor
        let scan = try WireCodec.scan(descriptor, buffer, options: options)
        let message = try WireCodec.unpack(descriptor, buffer, scan: scan, options: options, arena: arena)
        return body(FrameView(_message: message), scan.field_count)
    }

    /// Decodes one message of type `type`.
    /// - Throws: ``IMCodecError`` with the code of the first problem and its byte offset.
    @inlinable
    public func decode<M: IMCodecMessage>(_ type: M.Type = M.self, from bytes: [UInt8]) throws(IMCodecError) -> M {
        let message = try _unpack(M._protobufCDescriptor, bytes)
        defer { _reset() }
        return try _DecodeStack.run(depth: message.depth) { M(_protobufCMessage: message) }
    }

    /// Decodes one message of type `type` from raw memory (a NIO `ByteBuffer`'s readable bytes).
    /// - Throws: ``IMCodecError`` with the code of the first problem and its byte offset.
    @inlinable
    public func decode<M: IMCodecMessage>(_ type: M.Type = M.self, from buffer: UnsafeRawBufferPointer)
    throws(IMCodecError) -> M {
        let message = try _unpack(M._protobufCDescriptor, buffer)
        defer { _reset() }
        return try _DecodeStack.run(depth: message.depth) { M(_protobufCMessage: message) }
    }

    /// Decodes one message of type `type` from any collection of bytes.
    /// - Throws: ``IMCodecError`` with the code of the first problem and its byte offset.
    @inlinable
    public func decode<M: IMCodecMessage, Bytes: Collection>(_ type: M.Type = M.self, from bytes: Bytes)
    throws(IMCodecError) -> M where Bytes.Element == UInt8 {
        let message = try _unpack(M._protobufCDescriptor, bytes)
        defer { _reset() }
        return try _DecodeStack.run(depth: message.depth) { M(_protobufCMessage: message) }
    }

    /// Decodes a ``Frame`` and passes a read-only view of it to `body`, without building Swift values
    /// for the parts `body` does not read. The view cannot leave `body` (it is non-copyable and
    /// borrowed), so nothing can reach the arena after the call.
    /// - Throws: ``IMCodecError`` when the bytes do not decode, or whatever `body` throws.
    @inlinable
    public func withFrameView<R>(_ bytes: [UInt8], _ body: (borrowing FrameView) throws -> R) throws -> R {
        let message = try _unpack(Frame._protobufCDescriptor, bytes)
        defer { _reset() }
        return try body(FrameView(_message: message))
    }

    /// ``withFrameView(_:_:)-([UInt8],_)`` over raw memory (a NIO `ByteBuffer`'s readable bytes).
    @inlinable
    public func withFrameView<R>(_ buffer: UnsafeRawBufferPointer, _ body: (borrowing FrameView) throws -> R) throws -> R {
        let message = try _unpack(Frame._protobufCDescriptor, buffer)
        defer { _reset() }
        return try body(FrameView(_message: message))
    }

    /// ``withFrameView(_:_:)-([UInt8],_)`` over any collection of bytes.
    @inlinable
    public func withFrameView<Bytes: Collection, R>(_ bytes: Bytes, _ body: (borrowing FrameView) throws -> R) throws -> R
    where Bytes.Element == UInt8 {
        let message = try _unpack(Frame._protobufCDescriptor, bytes)
        defer { _reset() }
        return try body(FrameView(_message: message))
    }
}

@available(*, unavailable, message: "a WireDecoder reuses one arena; give each thread its own")
extension WireDecoder: Sendable {}
