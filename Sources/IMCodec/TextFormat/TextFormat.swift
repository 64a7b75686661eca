/// How messages are printed as protobuf text format.
///
/// Whatever the options, the text is what protoc's `--decode` prints (Google's C++
/// `TextFormat::Printer` with its defaults); see ``IMCodecMessage/textFormatString(options:)``.
public struct TextFormatEncodingOptions: Sendable, Hashable {
    /// Whether to print unknown fields by number, as protoc's `--decode` does (`23: 5`,
    /// `24 { 1: "x" }`). Default `true`. Google's text parsers cannot read such lines back.
    public var printUnknownFields = true

    /// Creates the default options.
    public init() {}
}

/// How protobuf text format is read, and the limits that protect the reader from hostile input.
public struct TextFormatDecodingOptions: Sendable, Hashable {
    /// Deepest message nesting accepted; the top-level message counts as 1. Default: the binary
    /// decoder's (``DecodingOptions/maxDepth``, 320). Values above ``DecodingOptions/maxDepthCap``
    /// are treated as ``DecodingOptions/maxDepthCap``. The text's nesting is measured before any
    /// field is read.
    public var maxDepth = DecodingOptions().maxDepth

    /// Largest text accepted, in UTF-8 bytes. Default 16 MiB.
    public var maxInputSize = DecodingOptions().maxInputSize

    /// Creates the default options.
    public init() {}
}

extension IMCodecMessage {
    /// Prints the message in protobuf text format, exactly as `protoc --decode` prints its bytes.
    ///
    /// Fields come in field-number order, one per line (`name: value`), sub-messages as
    /// `name {` … `}` with two-space indentation, repeated fields and map entries as repeated
    /// lines (map entries as `{ key: … value: … }`, sorted by key), fields at their proto3 default
    /// left out, strings and bytes in double quotes with C escapes (every byte outside printable
    /// ASCII as a three-digit octal escape, so `"é"` prints as `"\303\251"`), enums by name (by
    /// number when the schema has no name for it), floating point as C++ `SimpleDtoa` writes it
    /// (`1.5`, `1e-300`, `-0`, `inf`, `nan`), and unknown fields last, by number. An empty message
    /// prints as the empty string. Printing cannot fail, whatever the depth.
    /// - Parameters:
    ///   - options: Whether unknown fields are printed.
    /// - Returns: The text, ending in a newline unless it is empty.
    public func textFormatString(options: TextFormatEncodingOptions = TextFormatEncodingOptions()) -> String {
        TextFormatPrinter.print(
            canonical: serializedBytes(),
            schema: Self.messageSchema,
            options: options
        )
    }

    /// Reads a message from protobuf text format, as `protoc --encode` reads it.
    ///
    /// Accepts what Google's C++ text parser accepts: fields by schema name, `{ }` or `< >` around
    /// messages, repeated fields as repeated lines or `[a, b]` lists, `#` comments, strings in
    /// double or single quotes with C escapes (`\n`, octal `\303`, `\xC3`, `\u00e9`, `\U0001F600`)
    /// and adjacent strings concatenated, integers in decimal, hex or octal, `inf` and `nan`,
    /// enums by name or number. The value is then decoded from wire bytes as
    /// ``init(serializedBytes:options:)-([UInt8],_)`` would decode it.
    /// - Parameters:
    ///   - textFormatString: The text of one message.
    ///   - options: Limits for hostile input.
    /// - Throws: ``IMCodecError`` with the byte offset of the problem in the UTF-8 text and its line
    ///   and column (1-based, columns in Unicode scalars) at the start of the reason:
    ///   ``IMCodecError/Code/invalidTextFormat`` for text that does not parse or names a field the
    ///   schema does not have (unknown fields cannot be read from text, as in Google's parsers), a
    ///   non-repeated field given twice, or two members of one oneof;
    ///   ``IMCodecError/Code/invalidUTF8`` for a `string` field whose escapes make invalid UTF-8;
    ///   ``IMCodecError/Code/tooLarge`` for text over `maxInputSize`; ``IMCodecError/Code/tooDeep``
    ///   for messages nested deeper than `maxDepth`.
    public init(
        textFormatString: String,
        options: TextFormatDecodingOptions = TextFormatDecodingOptions()
    )
        throws(IMCodecError)
    {
        self = try TextFormatParser.decode(Self.self, text: textFormatString, options: options)
    }

    /// The message in text format after its Swift type name, as swift-protobuf's
    /// `debugDescription` shows it: `IMCodec.Frame:` and a newline, then
    /// ``textFormatString(options:)`` (unknown fields by number; an empty message shows only the
    /// type name). `print(frame)`, `debugPrint(frame)` and string interpolation use it.
    public var debugDescription: String {
        String(reflecting: Self.self) + ":\n" + textFormatString()
    }
}
