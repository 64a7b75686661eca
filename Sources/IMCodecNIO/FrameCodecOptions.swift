#if NIO
import IMCodec

/// Limits for reading length-prefixed `Frame`s off a stream: the largest frame a peer may
/// announce, and the `DecodingOptions` every frame body is checked against.
///
/// The frame size limit is checked on the length prefix, before a single byte of the body is
/// buffered, so a peer cannot make a connection hold more than `maxFrameSize` bytes plus one read.
public struct FrameCodecOptions: Sendable, Hashable {
    /// The default largest frame body: 4 MiB (a 300-message merger or a history page is a few hundred KiB).
    public static let defaultMaxFrameSize = 4 << 20

    /// The largest frame body accepted, in bytes; a larger announced length is an `IMCodecError.Code.tooLarge` error.
    public var maxFrameSize: Int

    /// The limits each frame body is decoded with (depth, field count, memory).
    public var decoding: DecodingOptions

    /// Bytes the per-channel `WireDecoder` arena keeps between frames.
    public var arenaBlockSize: Int

    /// Creates options; `maxFrameSize` also caps `decoding.maxInputSize`.
    public init(
        maxFrameSize: Int = FrameCodecOptions.defaultMaxFrameSize,
        decoding: DecodingOptions = DecodingOptions(),
        arenaBlockSize: Int = 64 << 10
    ) {
        self.maxFrameSize = max(0, maxFrameSize)
        self.decoding = decoding
        self.arenaBlockSize = arenaBlockSize
    }

    /// The frame size limit actually enforced: the smaller of ``maxFrameSize`` and `decoding.maxInputSize`.
    public var effectiveMaxFrameSize: Int { min(maxFrameSize, decoding.maxInputSize) }

    /// A `WireDecoder` configured with these options.
    public func makeWireDecoder() -> WireDecoder {
        var decoding = self.decoding
        decoding.maxInputSize = effectiveMaxFrameSize
        return WireDecoder(options: decoding, arenaBlockSize: arenaBlockSize)
    }
}
#endif
