/// How messages are printed as canonical proto3 JSON.
///
/// Whatever the options, the content is what Google's implementations print by default:
/// lowerCamelCase json names, proto3 defaults left out, 64-bit integers as strings, enums by name.
/// `prettyPrinted` and `asciiOnly` together give the text of Python's
/// `json_format.MessageToJson(message)` (up to the order of map entries, which Python leaves to its
/// hash table; IMCodec sorts them).
public struct JSONEncodingOptions: Sendable, Hashable {
    /// Whether to lay the JSON out over several lines with two-space indentation, as Python's
    /// `json.dumps(indent=2)` does (`"key": value`, one member per line, `{}` and `[]` when empty);
    /// otherwise no whitespace at all is written.
    public var prettyPrinted = false

    /// Whether to use each field's name from the schema (`client_msg_id`) instead of its json name
    /// (`clientMsgId`).
    public var preserveProtoFieldNames = false

    /// Whether to escape every non-ASCII character as `\uXXXX` (a surrogate pair above U+FFFF), as
    /// Python's `ensure_ascii` does.
    public var asciiOnly = false

    /// Creates the default options.
    public init() {}
}

/// How proto3 JSON is read, and the limits that protect the reader from hostile input.
public struct JSONDecodingOptions: Sendable, Hashable {
    /// Whether to skip members whose name is not a field of the message (and enum names the schema
    /// does not know) instead of rejecting them.
    public var ignoreUnknownFields = false

    /// Deepest message nesting accepted; the top-level message counts as 1. Default: the binary
    /// decoder's (``DecodingOptions/maxDepth``, 320). Values above ``DecodingOptions/maxDepthCap``
    /// are treated as ``DecodingOptions/maxDepthCap``.
    public var maxDepth = DecodingOptions().maxDepth

    /// Largest JSON text accepted, in UTF-8 bytes. Default 16 MiB.
    public var maxInputSize = DecodingOptions().maxInputSize

    /// Whether to accept a ``Frame`` whose `minReaderVersion` is above
    /// ``Frame/currentSchemaVersion`` (``DecodingOptions/acceptsNewerFrames``). Default `false`.
    public var acceptsNewerFrames = false

    /// Creates the default options.
    public init() {}
}

extension IMCodecMessage {
    /// Prints the message as canonical proto3 JSON.
    ///
    /// Fields come in field-number order; fields at their proto3 default are left out; unknown
    /// fields are never printed.
    /// - Parameters:
    ///   - options: The layout and naming of the JSON.
    /// - Throws: ``IMCodecError`` when the value cannot be represented: nesting deeper than
    ///   ``DecodingOptions/maxDepthCap`` (``IMCodecError/Code/tooDeep``).
    public func jsonString(options: JSONEncodingOptions = JSONEncodingOptions()) throws(IMCodecError) -> String {
        String(decoding: try _jsonUTF8Bytes(options: options), as: UTF8.self)
    }

    /// Reads a message from proto3 JSON.
    ///
    /// Accepts what Google's parsers accept: json names and schema field names, `null` for a
    /// default, integers as numbers or strings (`1e2` included), floating point numbers and
    /// `"NaN"` / `"Infinity"` / `"-Infinity"`, standard or URL-safe base64 with or without padding,
    /// enums by name or number.
    /// - Parameters:
    ///   - jsonString: One JSON object.
    ///   - options: Unknown-field handling and limits for hostile input.
    /// - Throws: ``IMCodecError`` with code ``IMCodecError/Code/invalidJSON`` and the byte offset
    ///   of the problem in the UTF-8 text, ``IMCodecError/Code/tooLarge`` for text over
    ///   `maxInputSize`, ``IMCodecError/Code/tooDeep`` for nesting deeper than `maxDepth`,
    ///   or ``IMCodecError/Code/memoryLimitExceeded`` when the decoded message (protobuf-c's
    ///   structs and the Swift value, as the binary decoder estimates them) would need more than
    ///   32 times the text's size plus 1 MiB (the binary decoder's default cap for input twice
    ///   the text's size).
    public init(jsonString: String, options: JSONDecodingOptions = JSONDecodingOptions()) throws(IMCodecError) {
        self = try ProtoJSONParser.decode(Self.self, json: jsonString, options: options)
    }

    /// The UTF-8 bytes of ``jsonString(options:)`` (implementation of `jsonUTF8Data(options:)`).
    func _jsonUTF8Bytes(options: JSONEncodingOptions) throws(IMCodecError) -> [UInt8] {
        // The bytes are our own, so only the stack-depth cap applies (and a value is printed whatever
        // reader version it asks for).
        try ProtoJSONPrinter.printUTF8(canonical: serializedBytes(), Self.self, options: options)
    }

    /// Reads a message from JSON given as UTF-8 bytes, in place (implementation of
    /// `init(jsonUTF8Data:options:)`); the bytes are checked to be UTF-8 first.
    init(_jsonUTF8 buffer: UnsafeRawBufferPointer, options: JSONDecodingOptions) throws(IMCodecError) {
        self = try ProtoJSONParser.decode(Self.self, utf8: buffer, validated: false, options: options)
    }
}

/// Conversions between protobuf wire bytes and proto3 JSON for a message type named at run time
/// (as the command-line tool's `--type` does).
public enum ProtoJSON {
    /// Prints protobuf wire bytes of the named message type as canonical proto3 JSON.
    /// - Parameters:
    ///   - bytes: The wire bytes of exactly one message.
    ///   - messageType: The message's full name, e.g. `imcodec.v1.Frame`.
    ///   - decoding: Limits for hostile binary input.
    ///   - options: The layout and naming of the JSON.
    /// - Throws: ``IMCodecError/Code/unknownMessageType`` for a name the schema does not have, or
    ///   the error of decoding `bytes`.
    public static func jsonString(
        fromBinary bytes: [UInt8],
        messageType: String,
        decoding: DecodingOptions = DecodingOptions(),
        options: JSONEncodingOptions = JSONEncodingOptions()
    ) throws(IMCodecError) -> String {
        let type = try self.type(named: messageType)
        func print<M: IMCodecMessage>(_ type: M.Type) throws(IMCodecError) -> [UInt8] {
            try ProtoJSONPrinter.printUTF8(binary: bytes, M.self, decoding: decoding, options: options)
        }
        return String(decoding: try print(type), as: UTF8.self)
    }

    /// Reads proto3 JSON of the named message type and returns its canonical protobuf wire bytes.
    /// - Parameters:
    ///   - json: One JSON object.
    ///   - messageType: The message's full name, e.g. `imcodec.v1.Frame`.
    ///   - options: Unknown-field handling and limits for hostile input.
    /// - Throws: ``IMCodecError/Code/unknownMessageType`` for a name the schema does not have, or
    ///   the error of reading `json` (see ``IMCodecMessage/init(jsonString:options:)``).
    public static func binary(
        fromJSON json: String,
        messageType: String,
        options: JSONDecodingOptions = JSONDecodingOptions()
    ) throws(IMCodecError) -> [UInt8] {
        let type = try self.type(named: messageType)
        func encode<M: IMCodecMessage>(_ type: M.Type) throws(IMCodecError) -> [UInt8] {
            try M(jsonString: json, options: options).serializedBytes()
        }
        return try encode(type)
    }

    private static func type(named name: String) throws(IMCodecError) -> any IMCodecMessage.Type {
        guard let type = IMCodecSchema.messageType(named: name) else {
            throw IMCodecError(code: .unknownMessageType, reason: "the schema has no message type named \"\(name)\"")
        }
        return type
    }
}
