#if NIO
import IMCodec
import NIOCore

/// Counters a frame decoder keeps for its channel, for monitoring memory and throughput.
///
/// Not thread-safe: read it on the channel's event loop (as the decoder that updates it runs there).
public final class FrameDecoderStats {
    /// Frames decoded so far.
    public private(set) var framesDecoded = 0
    /// Frame bytes (prefixes and bodies) decoded so far.
    public private(set) var bytesDecoded = 0
    /// The most bytes the channel's decode buffer has held at once (a partial frame plus the latest read).
    public private(set) var peakBufferedBytes = 0
    /// The bytes the decode buffer held after the last decode step (the part of a frame still awaited).
    public private(set) var bufferedBytes = 0

    /// Creates zeroed counters.
    public init() {}

    func observe(buffered: Int) {
        bufferedBytes = buffered
        if buffered > peakBufferedBytes { peakBufferedBytes = buffered }
    }

    func count(frameBytes: Int) {
        framesDecoded += 1
        bytesDecoded += frameBytes
    }
}

@available(*, unavailable, message: "FrameDecoderStats belongs to one channel's event loop")
extension FrameDecoderStats: Sendable {}

/// The framing steps both decoders share: prefix check, size limit, EOF handling, statistics.
struct FrameSplitter {
    let maxFrameSize: Int
    let stats: FrameDecoderStats?

    func next(_ buffer: inout ByteBuffer) throws(IMCodecError) -> FrameRecord? {
        stats?.observe(buffered: buffer.readableBytes)
        guard let record = try buffer.readFrameRecord(maxFrameSize: maxFrameSize) else { return nil }
        stats?.count(frameBytes: record.record.readableBytes)
        stats?.observe(buffered: buffer.readableBytes)
        return record
    }

    func nextAtEnd(_ buffer: inout ByteBuffer, seenEOF: Bool) throws(IMCodecError) -> FrameRecord? {
        if let record = try next(&buffer) { return record }
        if seenEOF, buffer.readableBytes > 0 {
            throw .truncated("the stream ended inside a frame (\(buffer.readableBytes) bytes of it received)")
        }
        return nil
    }
}

/// Decodes varint-length-prefixed `Frame`s (Google's delimited format) from a byte stream.
///
/// Put it in a `ByteToMessageHandler`, or use
/// ``NIOCore/ChannelPipeline/SynchronousOperations/addFrameCodec(options:stats:)``:
///
/// ```swift
/// try channel.pipeline.syncOperations.addFrameCodec()   // reads and writes Frame values
/// ```
///
/// A prefix that is not a varint below 2^32 is a `malformed` `IMCodecError`, an announced
/// length above ``FrameCodecOptions/maxFrameSize`` is `tooLarge` (raised before the body is buffered),
/// a body that does not decode raises its own code (`tooDeep`, `malformed`, ...), and a stream that
/// ends inside a frame is `truncated`. Bodies are decoded with one arena-backed
/// `WireDecoder` per decoder, so a decoder belongs to one channel.
public struct FrameDecoder: NIOSingleStepByteToMessageDecoder {
    /// Each decoded frame.
    public typealias InboundOut = Frame

    /// The limits this decoder enforces.
    public let options: FrameCodecOptions
    private let splitter: FrameSplitter
    private let wireDecoder: WireDecoder

    /// Creates a decoder.
    /// - Parameters:
    ///   - options: The frame size limit and decoding limits.
    ///   - stats: Counters to update, or `nil` for none.
    public init(options: FrameCodecOptions = FrameCodecOptions(), stats: FrameDecoderStats? = nil) {
        self.options = options
        self.splitter = FrameSplitter(maxFrameSize: options.effectiveMaxFrameSize, stats: stats)
        self.wireDecoder = options.makeWireDecoder()
    }

    private func decodeBody(_ record: FrameRecord) throws(IMCodecError) -> Frame {
        try wireDecoder.decode(Frame.self, from: record.body.readableBytesView)
    }

    /// Decodes the next frame, or returns `nil` when the buffer does not yet hold a whole one.
    /// - Throws: `IMCodecError` for a bad or oversize prefix or a body that does not decode.
    public mutating func decode(buffer: inout ByteBuffer) throws -> Frame? {
        guard let record = try splitter.next(&buffer) else { return nil }
        return try decodeBody(record)
    }

    /// Decodes what is left when the stream ends.
    /// - Throws: `IMCodecError` `truncated` when the stream ended inside a frame.
    public mutating func decodeLast(buffer: inout ByteBuffer, seenEOF: Bool) throws -> Frame? {
        guard let record = try splitter.nextAtEnd(&buffer, seenEOF: seenEOF) else { return nil }
        return try decodeBody(record)
    }
}

/// Decodes varint-length-prefixed frames into ``InboundFrame``s: each body is validated and its
/// routing facts read through a `FrameView`, but no `Frame` value is built.
///
/// This is the router's fast path: a relay reads kind, conversation, sender and flags, then writes
/// ``InboundFrame/record`` (the original bytes) to the receivers. Errors are those of
/// ``FrameDecoder``.
public struct InboundFrameDecoder: NIOSingleStepByteToMessageDecoder {
    /// Each received frame with its routing facts.
    public typealias InboundOut = InboundFrame

    /// The limits this decoder enforces.
    public let options: FrameCodecOptions
    private let splitter: FrameSplitter
    private let wireDecoder: WireDecoder

    /// Creates a decoder.
    /// - Parameters:
    ///   - options: The frame size limit and decoding limits.
    ///   - stats: Counters to update, or `nil` for none.
    public init(options: FrameCodecOptions = FrameCodecOptions(), stats: FrameDecoderStats? = nil) {
        self.options = options
        self.splitter = FrameSplitter(maxFrameSize: options.effectiveMaxFrameSize, stats: stats)
        self.wireDecoder = options.makeWireDecoder()
    }

    private func inspect(_ record: FrameRecord) throws(IMCodecError) -> InboundFrame {
        try InboundFrame(inspecting: record, with: wireDecoder)
    }

    /// Validates the next frame and reads its routing facts, or returns `nil` when the buffer does not yet hold a whole one.
    /// - Throws: `IMCodecError` for a bad or oversize prefix or a body that does not decode.
    public mutating func decode(buffer: inout ByteBuffer) throws -> InboundFrame? {
        guard let record = try splitter.next(&buffer) else { return nil }
        return try inspect(record)
    }

    /// Decodes what is left when the stream ends.
    /// - Throws: `IMCodecError` `truncated` when the stream ended inside a frame.
    public mutating func decodeLast(buffer: inout ByteBuffer, seenEOF: Bool) throws -> InboundFrame? {
        guard let record = try splitter.nextAtEnd(&buffer, seenEOF: seenEOF) else { return nil }
        return try inspect(record)
    }
}

/// Encodes `Frame`s with their varint length prefix, for a `MessageToByteHandler`.
public struct FrameEncoder: MessageToByteEncoder {
    /// The frames to write.
    public typealias OutboundIn = Frame

    /// Creates an encoder.
    public init() {}

    /// Writes `data` with its length prefix to `out`.
    public func encode(data: Frame, out: inout ByteBuffer) throws {
        out.writeFrame(data)
    }
}
#endif
