/// The one error IMCodec throws: a ``Code`` saying what kind of problem it is, and a reason a person
/// can act on.
///
/// Two errors are equal when their codes are equal, so tests and callers match on the code:
///
/// ```swift
/// do {
///     _ = try Frame(serializedBytes: bytes)
/// } catch let error where error.code == .tooDeep {
///     // reject the peer
/// }
/// ```
public struct IMCodecError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What kind of problem an ``IMCodecError`` reports. A struct rather than an enum so that new codes
    /// can be added without breaking `switch` statements.
    public struct Code: Hashable, Sendable, RawRepresentable, CustomStringConvertible {
        /// The code's stable name, as used in `Fixtures/invalid/manifest.json` and on the CLI.
        public let rawValue: String

        /// Creates a code from its stable name.
        public init(rawValue: String) { self.rawValue = rawValue }

        /// The input ends inside a tag, varint, fixed-width value or declared length.
        public static let truncated = Code(rawValue: "truncated")
        /// The bytes are not protobuf: over-long varint, field number 0 or above 2^29-1, group or
        /// reserved wire types, a length above 2^31-1, a packed payload that is not whole elements.
        public static let malformed = Code(rawValue: "malformed")
        /// A known field arrived with a wire type other than the one its schema declares.
        public static let wireTypeMismatch = Code(rawValue: "wireTypeMismatch")
        /// A `string` field holds bytes that are not valid UTF-8.
        public static let invalidUTF8 = Code(rawValue: "invalidUTF8")
        /// The input is larger than ``DecodingOptions/maxInputSize``.
        public static let tooLarge = Code(rawValue: "tooLarge")
        /// Messages nest deeper than ``DecodingOptions/maxDepth``.
        public static let tooDeep = Code(rawValue: "tooDeep")
        /// The input holds more fields than ``DecodingOptions/maxFieldCount``.
        public static let tooManyFields = Code(rawValue: "tooManyFields")
        /// Decoding would need more memory than ``DecodingOptions/maxDecodedMemory`` allows.
        public static let memoryLimitExceeded = Code(rawValue: "memoryLimitExceeded")
        /// Valid protobuf that protobuf-c cannot represent faithfully. IMCodec's own schemas have no
        /// such input any more (repeated singular sub-messages are merged and map strings keep
        /// U+0000); kept for descriptors with C-string fields and a message that declares field
        /// 536870911 (the transcoder's wrapper number) next to a wire-type mismatch.
        public static let unsupported = Code(rawValue: "unsupported")
        /// The system could not provide memory.
        public static let outOfMemory = Code(rawValue: "outOfMemory")
        /// A JSON document is not valid proto3 JSON for the message type.
        public static let invalidJSON = Code(rawValue: "invalidJSON")
        /// A text is not valid protobuf text format for the message type (the reason starts with
        /// its line and column).
        public static let invalidTextFormat = Code(rawValue: "invalidTextFormat")
        /// No message type has the given name.
        public static let unknownMessageType = Code(rawValue: "unknownMessageType")
        /// An argument is outside what the API accepts.
        public static let invalidArgument = Code(rawValue: "invalidArgument")
        /// Reading or writing a file or stream failed.
        public static let io = Code(rawValue: "io")
        /// A frame stayed incomplete on a stream for longer than allowed (a stalled or trickling
        /// peer; raised by IMCodecNIO's `FrameDeadlineHandler`).
        public static let frameTimeout = Code(rawValue: "frameTimeout")
        /// A well-formed frame whose payload is not the kind the operation needs (``ServerStamp``
        /// stamps only frames whose payload is a `message`).
        public static let payloadMismatch = Code(rawValue: "payloadMismatch")

        /// A ``Frame`` whose `min_reader_version` is above the schema version this library implements
        /// (``Frame/currentSchemaVersion``): its writer declared that this reader cannot act on it
        /// correctly. The reason names both versions. ``DecodingOptions/acceptsNewerFrames`` decodes
        /// it anyway.
        public static let unsupportedVersion = Code(rawValue: "unsupportedVersion")

        public var description: String { rawValue }
    }

    /// What kind of problem this is.
    public let code: Code
    /// What went wrong, in words a person can act on.
    public let reason: String
    /// Byte offset in the input of the first byte of the problem, where it is known.
    public let offset: Int?
    /// The source file that raised the error (for bug reports; not part of equality).
    public let file: String
    /// The source line that raised the error (for bug reports; not part of equality).
    public let line: UInt

    /// Creates an error. Prefer the factory functions (``truncated(_:offset:file:line:)`` and so on).
    public init(code: Code, reason: String, offset: Int? = nil, file: String = #fileID, line: UInt = #line) {
        self.code = code
        self.reason = reason
        self.offset = offset
        self.file = file
        self.line = line
    }

    /// `code: reason (at byte N)`.
    public var description: String {
        if let offset { return "\(code): \(reason) (at byte \(offset))" }
        return "\(code): \(reason)"
    }

    public static func == (lhs: IMCodecError, rhs: IMCodecError) -> Bool { lhs.code == rhs.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }
}

extension IMCodecError {
    /// The input ends inside a value.
    public static func truncated(
        _ reason: String,
        offset: Int? = nil,
        file: String = #fileID,
        line: UInt = #line
    ) -> Self {
        Self(code: .truncated, reason: reason, offset: offset, file: file, line: line)
    }

    /// The bytes are not well-formed protobuf.
    public static func malformed(
        _ reason: String,
        offset: Int? = nil,
        file: String = #fileID,
        line: UInt = #line
    ) -> Self {
        Self(code: .malformed, reason: reason, offset: offset, file: file, line: line)
    }

    /// The input or a value is larger than a limit allows.
    public static func tooLarge(
        _ reason: String,
        offset: Int? = nil,
        file: String = #fileID,
        line: UInt = #line
    ) -> Self {
        Self(code: .tooLarge, reason: reason, offset: offset, file: file, line: line)
    }

    /// Valid input that IMCodec cannot represent faithfully.
    public static func unsupported(
        _ reason: String,
        offset: Int? = nil,
        file: String = #fileID,
        line: UInt = #line
    ) -> Self {
        Self(code: .unsupported, reason: reason, offset: offset, file: file, line: line)
    }

    /// The system could not provide memory.
    public static func outOfMemory(_ reason: String, file: String = #fileID, line: UInt = #line) -> Self {
        Self(code: .outOfMemory, reason: reason, file: file, line: line)
    }

    /// An argument is outside what the API accepts.
    public static func invalidArgument(_ reason: String, file: String = #fileID, line: UInt = #line) -> Self {
        Self(code: .invalidArgument, reason: reason, file: file, line: line)
    }

    /// A JSON document is not valid proto3 JSON for the type.
    public static func invalidJSON(
        _ reason: String,
        offset: Int? = nil,
        file: String = #fileID,
        line: UInt = #line
    ) -> Self {
        Self(code: .invalidJSON, reason: reason, offset: offset, file: file, line: line)
    }

    /// A text is not valid protobuf text format for the type.
    public static func invalidTextFormat(
        _ reason: String,
        offset: Int? = nil,
        file: String = #fileID,
        line: UInt = #line
    ) -> Self {
        Self(code: .invalidTextFormat, reason: reason, offset: offset, file: file, line: line)
    }
}
