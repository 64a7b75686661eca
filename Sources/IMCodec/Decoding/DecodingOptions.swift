/// Limits that protect a decoder from hostile input. Every limit is checked before protobuf-c runs
/// (the memory limit caps the arena protobuf-c allocates from).
///
/// The defaults suit IM traffic: a frame is rarely above a few hundred KiB (a 300-message merger or
/// a history page); anything far larger is more likely an attack than a message.
public struct DecodingOptions: Sendable, Hashable {
    /// Largest input accepted, in bytes. Default 16 MiB.
    public var maxInputSize: Int = 16 << 20

    /// Deepest message nesting accepted; the top-level message counts as 1. Default 320.
    ///
    /// A merger layer costs 3 levels (Message, MessageElement, MergerElement), so the 100 nested
    /// layers ``ValidationLimits/maxMergerDepth`` allows (Tencent Cloud IM's limit) reach depth 303
    /// for the innermost message of an edit or a history page (302 in a message frame), and 306 for
    /// the deepest field inside it (an image rendition: MessageElement, ImageElement, ImageInfo).
    /// The default leaves room above that; a value ``Frame/validate(limits:)`` accepts always
    /// decodes with the default options. (swift-protobuf and upb default to 100.) Values above
    /// ``maxDepthCap`` are treated as ``maxDepthCap``. protobuf-c recurses once per level, about
    /// 1 KiB of stack each, and so do the conversions to Swift values: input nested deeper than a
    /// few dozen levels is unpacked on the calling thread only when its stack has room, else on a
    /// thread with a stack of the size it needs.
    public var maxDepth: Int = 320

    /// Most fields (each occurrence, each packed element) accepted in one input. Default 1,000,000.
    public var maxFieldCount: Int = 1_000_000

    /// Most bytes protobuf-c may allocate for one decode, or `nil` for the default:
    /// 16 times the input size plus 1 MiB. protobuf-c's structs are larger than the wire form (a
    /// 2-byte empty sub-message becomes a struct of up to a few hundred bytes), so this caps the
    /// amplification a hostile input can cause.
    public var maxDecodedMemory: Int? = nil

    /// Whether to decode a ``Frame`` whose `min_reader_version` is above the schema version this
    /// library implements (``Frame/currentSchemaVersion``). Default `false`: such a frame is
    /// refused with ``IMCodecError/Code/unsupportedVersion``, because its writer declared that a
    /// reader this old cannot act on it correctly (see the SchemaVersions article). A relay that
    /// only forwards bytes, or a tool that inspects them, may opt in.
    public var acceptsNewerFrames = false

    /// Whether a length prefix may take 6 to 10 bytes (a short length padded with `0x80` bytes), as
    /// Google's upb (Python, PHP, Ruby), Java and Go parsers read it. Default `true`. Google's C++
    /// parser (and protobuf-c) stop at 5 bytes, so a server that forwards a sender's bytes to
    /// clients that may parse them with C++ (the relay does) sets it to `false`: such input is then
    /// refused as ``IMCodecError/Code/malformed``. Either way the decoded value is the same, and it
    /// encodes its known fields' lengths in the shortest form (an unknown field is written back as
    /// it came, as upb does).
    public var acceptsLongLengthPrefixes = true

    /// The highest ``maxDepth`` honoured (the pre-scan's explicit stack has this many frames).
    public static let maxDepthCap = 512

    /// Creates the default options.
    public init() {}

    /// Creates options with the given limits; omitted ones keep their defaults.
    public init(
        maxInputSize: Int? = nil,
        maxDepth: Int? = nil,
        maxFieldCount: Int? = nil,
        maxDecodedMemory: Int? = nil,
        acceptsNewerFrames: Bool = false,
        acceptsLongLengthPrefixes: Bool = true
    ) {
        self.acceptsNewerFrames = acceptsNewerFrames
        self.acceptsLongLengthPrefixes = acceptsLongLengthPrefixes
        if let maxInputSize { self.maxInputSize = maxInputSize }
        if let maxDepth { self.maxDepth = maxDepth }
        if let maxFieldCount { self.maxFieldCount = maxFieldCount }
        self.maxDecodedMemory = maxDecodedMemory
    }

    /// Options for bytes this library wrote itself (a value's own encoding, decoded again to print it
    /// or to merge into it): no size or field limit, the depth cap (the stack still bounds the
    /// recursion), `maxDecodedMemory` as given (`nil`: the default estimate for the input).
    static func ownBytes(maxDecodedMemory: Int? = nil, acceptsNewerFrames: Bool) -> DecodingOptions {
        DecodingOptions(
            maxInputSize: Int.max,
            maxDepth: maxDepthCap,
            maxFieldCount: Int.max,
            maxDecodedMemory: maxDecodedMemory,
            acceptsNewerFrames: acceptsNewerFrames
        )
    }

}

// MARK: - The limits as enforced

/// Every decoder (binary, JSON, text format) derives the limits it enforces here, and only here,
/// from the options it was given.
extension DecodingOptions {
    /// The depth limit enforced for a requested `maxDepth` (``DecodingOptions``', or the JSON or
    /// text-format options'): below 0 counts as 0, above ``maxDepthCap`` as ``maxDepthCap``.
    static func effectiveDepth(_ maxDepth: Int) -> Int {
        min(max(maxDepth, 0), maxDepthCap)
    }

    /// ``maxDepth`` as enforced.
    var effectiveMaxDepth: Int { Self.effectiveDepth(maxDepth) }

    /// ``maxFieldCount`` as enforced (below 0 counts as 0).
    var effectiveMaxFieldCount: Int { max(maxFieldCount, 0) }

    /// The memory cap for an input of `inputSize` bytes.
    func decodedMemoryLimit(forInputSize inputSize: Int) -> Int {
        if let maxDecodedMemory { return max(0, maxDecodedMemory) }
        let (scaled, overflow) = inputSize.multipliedReportingOverflow(by: 16)
        return overflow ? Int.max : scaled &+ (1 << 20)
    }

    /// Refuses an input of `size` bytes when it is above `maxInputSize`.
    /// - Parameter input: What the input is, for the message: "input", "JSON text", "text".
    /// - Throws: ``IMCodecError/Code/tooLarge``.
    @inline(__always)
    static func checkInputSize(_ size: Int, maxInputSize: Int, input: StaticString) throws(IMCodecError) {
        if _slowPath(size > maxInputSize) { throw inputTooLarge(size, maxInputSize: maxInputSize, input: input) }
    }

    @inline(never)
    private static func inputTooLarge(_ size: Int, maxInputSize: Int, input: StaticString) -> IMCodecError {
        .tooLarge("the \(input) is \(size) bytes; the limit (maxInputSize) is \(maxInputSize)")
    }
}
