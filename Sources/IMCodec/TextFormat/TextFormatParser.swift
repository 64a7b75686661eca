/// Reads protobuf text format as protoc's `--encode` (Google's C++ `TextFormat::Parser`) reads it,
/// and turns it into protobuf wire bytes that the binary decoder then reads (implementation detail
/// of ``IMCodecMessage/init(textFormatString:options:)``):
///
///     text ──TextFormatLexer──▶ tokens ──TextFormatParser──▶ wire bytes ──decode recipe──▶ value
///
/// So a value read from text passes the same pipeline (pre-scan, arena, protobuf-c, conversion) as
/// one read from the wire. Fields are looked up by their schema name in the ``MessageSchema`` model.
///
/// Accepted, as by the C++ parser: `name: value` for scalars (the colon is required), `name { … }`,
/// `name < … >` and `name: { … }` for messages, `name: [a, b]` for repeated fields (messages too),
/// an optional `,` or `;` after each field, `#` comments, strings in `"` or `'` with the C escapes
/// (`\n`, `\t`, `\\`, `\"`, octal `\123`, `\x7f`, `\u00e9`, `\U0001F600`, …) and adjacent strings
/// concatenated, integers in decimal, hex (`0x1F`) and octal (`017`), floating point with an
/// optional `f` suffix and `inf`, `infinity`, `nan` in any case, booleans as `true`, `True`, `t`,
/// `1` and their negations, enums by name or number, map entries as `{ key: … value: … }`.
/// Refused, as by the C++ parser: unknown field names, a non-repeated field given twice, two
/// members of one oneof, extensions and `Any` expansions (`[…]`; the schema has none), field
/// numbers. The message nesting is checked against `maxDepth` before any field is read.
struct TextFormatParser {
    private var lexer: TextFormatLexer
    private var out: [UInt8] = []
    private let maxDepth: Int

    private init(_ input: UnsafeBufferPointer<UInt8>, maxDepth: Int) {
        lexer = TextFormatLexer(input)
        self.maxDepth = maxDepth
    }

    /// Reads one message of type `M` from text format.
    static func decode<M: IMCodecMessage>(
        _ type: M.Type,
        text: String,
        options: TextFormatDecodingOptions
    ) throws(IMCodecError) -> M {
        let size = text.utf8.count
        try DecodingOptions.checkInputSize(size, maxInputSize: options.maxInputSize, input: "text")
        let maxDepth = DecodingOptions.effectiveDepth(options.maxDepth)
        let bytes = try withContiguousBytes(text.utf8) { (buffer) throws(IMCodecError) -> [UInt8] in
            let input = buffer.bindMemory(to: UInt8.self)
            // Nesting first: hostile depth costs one pass of the lexer and nothing else.
            let depth = try TextFormatLexer.messageDepth(input, maxDepth: maxDepth)
            var parser = TextFormatParser(input, maxDepth: maxDepth)
            parser.out.reserveCapacity(size)
            try DecodeStack.run(depth: depth) { () throws(IMCodecError) in
                try parser.parseMessage(M.messageSchema, closing: nil, depth: 1)
            }
            return parser.out
        }
        do {
            // The bytes are ours: only the depth (already checked) and the memory estimate apply.
            // Text format is for people and tools, not the wire: min_reader_version is not enforced.
            return try M(serializedBytes: bytes, options: .ownBytes(acceptsNewerFrames: true))
        } catch {
            throw IMCodecError(
                code: error.code,
                reason: "the text reads as a message IMCodec cannot decode: \(error.reason)"
            )
        }
    }

    // MARK: Errors

    private func error(_ reason: String, at offset: Int) -> IMCodecError {
        lexer.error(reason, at: offset)
    }

    private func expected(_ what: String, found token: TextFormatToken) -> IMCodecError {
        error("expected \(what), found \(lexer.describe(token))", at: token.start)
    }

    // MARK: Messages

    /// Reads fields until `closing` (or the end of the text for the top level), writing them to `out`.
    private mutating func parseMessage(
        _ schema: MessageSchema,
        closing: UInt8?,
        depth: Int
    ) throws(IMCodecError) {
        var seen = Set<UInt32>()
        var oneofs: [Int: Int] = [:]  // the field index set in each oneof
        while true {
            let token = try lexer.next()
            if token.kind == .end {
                guard let closing else { return }
                let bracket = Character(Unicode.Scalar(closing))
                throw error("the text ends inside a message; expected '\(bracket)'", at: token.start)
            }
            if let closing, lexer.isSymbol(token, closing) { return }
            try parseField(token, schema, seen: &seen, oneofs: &oneofs, depth: depth)
        }
    }

    private mutating func parseField(
        _ nameToken: TextFormatToken,
        _ schema: MessageSchema,
        seen: inout Set<UInt32>,
        oneofs: inout [Int: Int],
        depth: Int
    ) throws(IMCodecError) {
        guard nameToken.kind == .identifier else {
            if lexer.isSymbol(nameToken, UInt8(ascii: "[")) {
                throw error(
                    "extension and Any fields ([…]) are not supported; \(schema.fullName) has none",
                    at: nameToken.start
                )
            }
            if nameToken.kind == .integer {
                throw error(
                    "fields are given by name, not number (\(lexer.text(nameToken))); "
                        + "unknown fields cannot be read from text",
                    at: nameToken.start
                )
            }
            throw expected("a field name", found: nameToken)
        }
        guard let index = lexer.field(named: nameToken, in: schema) else {
            let name = lexer.text(nameToken)
            throw error("message type \"\(schema.fullName)\" has no field named \"\(name)\"", at: nameToken.start)
        }
        let field = schema.fields[index]
        if !field.isRepeated {
            guard seen.insert(field.number).inserted else {
                throw error(
                    "non-repeated field \"\(field.nameString)\" is specified multiple times",
                    at: nameToken.start
                )
            }
            if let oneof = field.oneof {
                if let other = oneofs[oneof] {
                    throw error(
                        "field \"\(field.nameString)\" is specified along with field "
                            + "\"\(schema.fields[other].nameString)\", another member of the same oneof",
                        at: nameToken.start
                    )
                }
                oneofs[oneof] = index
            }
        }
        let isMessage = field.value.kind == .message
        if isMessage {
            _ = try lexer.consumeSymbol(UInt8(ascii: ":"))  // optional before a message
        } else {
            let colon = try lexer.next()
            guard lexer.isSymbol(colon, UInt8(ascii: ":")) else {
                throw expected("':' after \"\(field.nameString)\"", found: colon)
            }
        }
        if field.isRepeated, try lexer.consumeSymbol(UInt8(ascii: "[")) {
            if try !lexer.consumeSymbol(UInt8(ascii: "]")) {
                while true {
                    try parseValue(field, depth: depth)
                    if try lexer.consumeSymbol(UInt8(ascii: "]")) { break }
                    let comma = try lexer.next()
                    guard lexer.isSymbol(comma, UInt8(ascii: ",")) else {
                        throw expected("',' or ']' in the list of \"\(field.nameString)\"", found: comma)
                    }
                }
            }
        } else {
            try parseValue(field, depth: depth)
        }
        if try !lexer.consumeSymbol(UInt8(ascii: ";")) { _ = try lexer.consumeSymbol(UInt8(ascii: ",")) }
    }

    /// One value of `field` (one element when it is repeated).
    private mutating func parseValue(_ field: FieldSchema, depth: Int) throws(IMCodecError) {
        if field.value.kind == .message {
            try parseFieldMessage(field, depth: depth)
        } else {
            try parseScalar(field)
        }
    }

    /// `{ … }` or `< … >`: the tag, a 5-byte length patched when the message ends, the fields.
    private mutating func parseFieldMessage(_ field: FieldSchema, depth: Int) throws(IMCodecError) {
        let open = try lexer.next()
        let closing: UInt8
        if lexer.isSymbol(open, UInt8(ascii: "{")) {
            closing = UInt8(ascii: "}")
        } else if lexer.isSymbol(open, UInt8(ascii: "<")) {
            closing = UInt8(ascii: ">")
        } else {
            throw expected("'{' or '<' to open message field \"\(field.nameString)\"", found: open)
        }
        guard depth < maxDepth else {
            throw IMCodecError(
                code: .tooDeep,
                reason: lexer.position(open.start) + ": messages nest deeper than maxDepth (\(maxDepth))",
                offset: open.start
            )
        }
        guard let sub = field.value.message else {
            throw error("field \"\(field.nameString)\" has no message descriptor", at: open.start)
        }
        let mark = LengthDelimitedMark(number: field.number, in: &out)
        try parseMessage(sub, closing: closing, depth: depth + 1)
        guard mark.close(in: &out) else { throw .tooLarge("a message in the text is too large") }
    }

    // MARK: Scalars

    /// One value of a field that is not a message, written as a field to `out`.
    private mutating func parseScalar(_ field: FieldSchema) throws(IMCodecError) {
        let kind = field.value.kind
        switch kind {
        case .int32, .sint32, .sfixed32:
            let value = try signedInteger(min: Int64(Int32.min), max: Int64(Int32.max), field: field)
            kind.appendInteger(UInt64(bitPattern: value), number: field.number, to: &out)
        case .int64, .sint64, .sfixed64:
            let value = try signedInteger(min: .min, max: .max, field: field)
            kind.appendInteger(UInt64(bitPattern: value), number: field.number, to: &out)
        case .uint32, .fixed32:
            let value = try unsignedInteger(max: UInt64(UInt32.max), field: field)
            kind.appendInteger(value, number: field.number, to: &out)
        case .uint64, .fixed64:
            let value = try unsignedInteger(max: .max, field: field)
            kind.appendInteger(value, number: field.number, to: &out)
        case .float, .double:
            kind.appendFloatingPoint(try floatingPoint(field: field), number: field.number, to: &out)
        case .bool:
            kind.appendInteger(try bool(field: field) ? 1 : 0, number: field.number, to: &out)
        case .enumeration:
            let value = try enumNumber(field: field)
            kind.appendInteger(UInt64(bitPattern: Int64(value)), number: field.number, to: &out)
        case .string, .bytes:
            FieldKind.appendLengthDelimited(try string(field: field), number: field.number, to: &out)
        case .message:
            throw error("field \"\(field.nameString)\" has a type text format does not support", at: lexer.offset)
        }
    }

    /// `true`, `True`, `t`, `1`, or their negations.
    private mutating func bool(field: FieldSchema) throws(IMCodecError) -> Bool {
        let token = try lexer.next()
        switch (token.kind, lexer.text(token)) {
        case (.identifier, "true"), (.identifier, "True"), (.identifier, "t"), (.integer, "1"): return true
        case (.identifier, "false"), (.identifier, "False"), (.identifier, "f"), (.integer, "0"): return false
        default: throw expected("true or false for field \"\(field.nameString)\"", found: token)
        }
    }

    /// An enum value by name, or any int32 (proto3 enums are open).
    private mutating func enumNumber(field: FieldSchema) throws(IMCodecError) -> Int32 {
        let token = try lexer.peek()
        guard token.kind == .identifier else {
            return Int32(try signedInteger(min: Int64(Int32.min), max: Int64(Int32.max), field: field))
        }
        _ = try lexer.next()
        let valueName = lexer.text(token)
        guard let value = field.value.enumeration?.number(named: Array(valueName.utf8)[...]) else {
            throw error(
                "unknown enumeration value \"\(valueName)\" for field \"\(field.nameString)\"",
                at: token.start
            )
        }
        return value
    }

    /// One or more adjacent strings (concatenated), their escapes read; for a `string` field,
    /// checked to be UTF-8.
    private mutating func string(field: FieldSchema) throws(IMCodecError) -> [UInt8] {
        let first = try lexer.next()
        guard first.kind == .string else {
            throw expected("a string for field \"\(field.nameString)\"", found: first)
        }
        var value: [UInt8] = []
        try lexer.appendString(first, to: &value)
        while try lexer.peek().kind == .string {
            try lexer.appendString(lexer.next(), to: &value)  // adjacent strings are concatenated
        }
        if field.value.kind == .string && !UTF8Check.isValid(value) {
            throw IMCodecError(
                code: .invalidUTF8,
                reason: lexer.position(first.start)
                    + ": string field \"\(field.nameString)\" is not valid UTF-8 once its escapes are read",
                offset: first.start
            )
        }
        return value
    }

    /// An optional '-' and an integer token (decimal, hex or octal) in `min ... max`.
    private mutating func signedInteger(min: Int64, max: Int64, field: FieldSchema) throws(IMCodecError) -> Int64 {
        var token = try lexer.next()
        let start = token.start
        let negative = lexer.isSymbol(token, UInt8(ascii: "-"))
        if negative { token = try lexer.next() }
        guard token.kind == .integer else {
            throw expected("an integer for field \"\(field.nameString)\"", found: token)
        }
        guard let magnitude = lexer.integerValue(token) else {
            throw error("integer \(lexer.text(token)) is out of range for field \"\(field.nameString)\"", at: start)
        }
        if negative {
            guard magnitude <= UInt64(bitPattern: 0 &- min) || (min == .min && magnitude == 1 << 63) else {
                throw error(
                    "integer -\(lexer.text(token)) is out of range for field \"\(field.nameString)\"",
                    at: start
                )
            }
            return Int64(truncatingIfNeeded: 0 &- magnitude)
        }
        guard magnitude <= UInt64(max) else {
            throw error("integer \(lexer.text(token)) is out of range for field \"\(field.nameString)\"", at: start)
        }
        return Int64(magnitude)
    }

    private mutating func unsignedInteger(max: UInt64, field: FieldSchema) throws(IMCodecError) -> UInt64 {
        let token = try lexer.next()
        guard token.kind == .integer else {
            throw expected("an unsigned integer for field \"\(field.nameString)\"", found: token)
        }
        guard let value = lexer.integerValue(token), value <= max else {
            throw error(
                "integer \(lexer.text(token)) is out of range for field \"\(field.nameString)\"",
                at: token.start
            )
        }
        return value
    }

    /// An optional '-' and a decimal integer, a floating point number (optional `f` suffix), or
    /// `inf`, `infinity`, `nan` in any case.
    private mutating func floatingPoint(field: FieldSchema) throws(IMCodecError) -> Double {
        var token = try lexer.next()
        let negative = lexer.isSymbol(token, UInt8(ascii: "-"))
        if negative { token = try lexer.next() }
        var value: Double
        switch token.kind {
        case .integer, .float:
            var text = lexer.text(token)
            if token.kind == .integer && text.count > 1 && text.hasPrefix("0") {
                throw error(
                    "expected a decimal number for field \"\(field.nameString)\", found \(text)",
                    at: token.start
                )
            }
            if text.hasSuffix("f") || text.hasSuffix("F") { text.removeLast() }
            guard let parsed = Double(text) else {
                throw error("\(text) is not a number for field \"\(field.nameString)\"", at: token.start)
            }
            value = parsed
        case .identifier:
            switch lexer.text(token).lowercased() {
            case "inf", "infinity": value = .infinity
            case "nan": value = .nan
            default: throw expected("a number for field \"\(field.nameString)\"", found: token)
            }
        default:
            throw expected("a number for field \"\(field.nameString)\"", found: token)
        }
        if negative { value = -value }
        return value
    }
}
