/// A reusable encoder for servers: keeps its buffer between messages, so encoding costs no
/// `malloc` once the buffer has grown to the largest message (``IMCodecMessage/serializedBytes()``
/// allocates a buffer and an array each time).
///
/// ```swift
/// let encoder = WireEncoder()
/// encoder.withEncoded(frame) { bytes in channel.write(bytes) }   // no copy, no allocation
/// ```
///
/// Not thread-safe: give each thread or connection its own.
public final class WireEncoder {
    private var writer: _WireWriter

    /// Creates an encoder whose buffer starts with room for `capacity` bytes.
    public init(capacity: Int = 4 << 10) {
        writer = _WireWriter(capacity: capacity)
    }

    /// Encodes `message` (canonical bytes, as ``IMCodecMessage/serializedBytes()``) and lends the
    /// bytes to `body`; they are valid only during the call.
    public func withEncoded<M: IMCodecMessage, R>(
        _ message: M,
        _ body: (UnsafeRawBufferPointer) throws -> R
    ) rethrows -> R {
        writer.removeAll()
        message._encode(to: &writer)
        return try writer.withBytes(body)
    }

    /// Encodes `message` with its varint length prefix (Google's delimited format) and lends the
    /// bytes to `body`; they are valid only during the call.
    public func withEncodedDelimited<M: IMCodecMessage, R>(
        _ message: M,
        _ body: (UnsafeRawBufferPointer) throws -> R
    ) rethrows -> R {
        writer.removeAll()
        message._encode(to: &writer)
        writer.writeVarint(UInt64(writer.count))
        return try writer.withBytes(body)
    }

    /// Encodes `message` and appends the bytes to `bytes`.
    public func encode<M: IMCodecMessage>(_ message: M, appendingTo bytes: inout [UInt8]) {
        withEncoded(message) { bytes.append(contentsOf: $0) }
    }

    /// Encodes `message` to a new array.
    public func encode<M: IMCodecMessage>(_ message: M) -> [UInt8] {
        withEncoded(message) { Array($0) }
    }
}

@available(*, unavailable, message: "a WireEncoder reuses one buffer; give each thread its own")
extension WireEncoder: Sendable {}
