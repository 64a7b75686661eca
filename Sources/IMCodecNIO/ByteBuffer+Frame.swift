#if NIO
import IMCodec
import NIOCore

/// One length-prefixed record cut from a stream: the prefix and body bytes as received, and where
/// the body starts.
struct FrameRecord {
    /// The varint length prefix followed by the body.
    var record: ByteBuffer
    /// How many bytes of ``record`` the prefix takes.
    var prefixSize: Int
    /// The body alone (a slice of ``record``, no copy).
    var body: ByteBuffer {
        record.getSlice(at: record.readerIndex + prefixSize, length: record.readableBytes - prefixSize)!
    }
}

extension ByteBuffer {
    /// Cuts the next complete record off the front; `nil` (nothing consumed) when more bytes are needed.
    mutating func readFrameRecord(maxFrameSize: Int) throws(IMCodecError) -> FrameRecord? {
        let prefix = try withUnsafeReadableBytes { raw in
            Result { () throws(IMCodecError) in try Delimited.readLengthPrefix(raw, maxLength: maxFrameSize) }
        }.get()
        guard let prefix else { return nil }
        let total = prefix.prefixSize + prefix.length
        guard readableBytes >= total, let record = readSlice(length: total) else { return nil }
        return FrameRecord(record: record, prefixSize: prefix.prefixSize)
    }

    /// Reads the body of the next length-prefixed frame without decoding it (a slice, no copy).
    ///
    /// - Parameter maxFrameSize: The largest body accepted.
    /// - Returns: The body, or `nil` when the buffer does not yet hold a whole frame (nothing is consumed then).
    /// - Throws: `IMCodecError` `malformed` for a bad prefix, `tooLarge` for a body above `maxFrameSize`;
    ///   nothing is consumed.
    public mutating func readFrameBytes(
        maxFrameSize: Int = FrameCodecOptions.defaultMaxFrameSize
    ) throws(IMCodecError) -> ByteBuffer? {
        try readFrameRecord(maxFrameSize: maxFrameSize)?.body
    }

    /// Reads and decodes the next length-prefixed `Frame`.
    ///
    /// - Parameters:
    ///   - options: The frame size limit and decoding limits.
    ///   - decoder: A reusable decoder (one per channel or thread); a new one when `nil`.
    /// - Returns: The frame, or `nil` when the buffer does not yet hold a whole frame.
    /// - Throws: `IMCodecError` for a bad or oversize prefix or a body that does not decode;
    ///   the buffer is left unchanged then.
    public mutating func readFrame(
        options: FrameCodecOptions = FrameCodecOptions(),
        decoder: WireDecoder? = nil
    ) throws(IMCodecError) -> Frame? {
        var copy = self
        guard let record = try copy.readFrameRecord(maxFrameSize: options.effectiveMaxFrameSize) else { return nil }
        let wireDecoder = decoder ?? options.makeWireDecoder()
        let frame: Frame = try wireDecoder.decode(Frame.self, from: record.body.readableBytesView)
        self = copy
        return frame
    }

    /// Writes `message` (usually a `Frame`) with its varint length prefix.
    /// - Returns: The number of bytes written.
    @discardableResult
    public mutating func writeFrame<M: IMCodecMessage>(_ message: M) -> Int {
        let body = message.serializedBytes()
        let written = writeLengthPrefix(body.count)
        return written + writeBytes(body)
    }

    /// Writes an already encoded frame body with its varint length prefix.
    /// - Returns: The number of bytes written.
    @discardableResult
    public mutating func writeFrameBytes(_ body: ByteBuffer) -> Int {
        let written = writeLengthPrefix(body.readableBytes)
        return written + writeImmutableBuffer(body)
    }

    /// Writes `length` as a varint (the delimited-format length prefix).
    /// - Returns: The number of bytes written (1 to 5 for lengths below 2^32).
    @discardableResult
    public mutating func writeLengthPrefix(_ length: Int) -> Int {
        precondition(length >= 0, "a frame length cannot be negative")
        return writeWithUnsafeMutableBytes(minimumWritableBytes: WireFormat.maxVarintSize) { buffer in
            WireFormat.storeVarint(UInt64(length), at: buffer.baseAddress!)
        }
    }
}
#endif
