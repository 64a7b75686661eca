internal import CIMCodecRuntime
internal import CIMCodecSchemas
internal import CProtobufC

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Reads protobuf text format as protoc's `--encode` (Google's C++ `TextFormat::Parser`) reads it,
/// and turns it into protobuf wire bytes that the binary decoder then reads (implementation detail
/// of ``IMCodecMessage/init(textFormatString:options:)``):
///
///     text ──TextFormatLexer──▶ tokens ──TextFormatParser──▶ wire bytes ──decode recipe──▶ value
///
/// So a value read from text passes the same pipeline (pre-scan, arena, protobuf-c, conversion) as
/// one read from the wire. Fields are looked up by their schema name in protobuf-c's descriptors.
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
                try parser.parseMessage(M._protobufCDescriptor.pointer, closing: nil, depth: 1)
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
        _ descriptor: UnsafePointer<ProtobufCMessageDescriptor>,
        closing: UInt8?,
        depth: Int
    ) throws(IMCodecError) {
        var seen = Set<UInt32>()
        var oneofs: [UInt32: UnsafePointer<ProtobufCFieldDescriptor>] = [:]  // by quantifier offset
        while true {
            let token = try lexer.next()
            if token.kind == .end {
                guard let closing else { return }
                let bracket = Character(Unicode.Scalar(closing))
                throw error("the text ends inside a message; expected '\(bracket)'", at: token.start)
            }
            if let closing, lexer.isSymbol(token, closing) { return }
            try parseField(token, descriptor, seen: &seen, oneofs: &oneofs, depth: depth)
        }
    }

    private static func name(_ descriptor: UnsafePointer<ProtobufCMessageDescriptor>) -> String {
        String(cString: descriptor.pointee.name)
    }

    private mutating func parseField(
        _ nameToken: TextFormatToken,
        _ descriptor: UnsafePointer<ProtobufCMessageDescriptor>,
        seen: inout Set<UInt32>,
        oneofs: inout [UInt32: UnsafePointer<ProtobufCFieldDescriptor>],
        depth: Int
    ) throws(IMCodecError) {
        guard nameToken.kind == .identifier else {
            if lexer.isSymbol(nameToken, UInt8(ascii: "[")) {
                throw error(
                    "extension and Any fields ([…]) are not supported; \(Self.name(descriptor)) has none",
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
        guard let field = lexer.field(named: nameToken, in: descriptor) else {
            let name = lexer.text(nameToken)
            throw error("message type \"\(Self.name(descriptor))\" has no field named \"\(name)\"", at: nameToken.start)
        }
        let name = FieldName(field: field)
        let repeated = field.pointee.label == PROTOBUF_C_LABEL_REPEATED
        if !repeated {
            guard seen.insert(field.pointee.id).inserted else {
                throw error("non-repeated field \"\(name)\" is specified multiple times", at: nameToken.start)
            }
            if field.pointee.flags & UInt32(PROTOBUF_C_FIELD_FLAG_ONEOF.rawValue) != 0 {
                if let other = oneofs[field.pointee.quantifier_offset] {
                    let otherName = String(cString: other.pointee.name)
                    throw error(
                        "field \"\(name)\" is specified along with field \"\(otherName)\", "
                            + "another member of the same oneof",
                        at: nameToken.start
                    )
                }
                oneofs[field.pointee.quantifier_offset] = field
            }
        }
        let isMessage = field.pointee.type == PROTOBUF_C_TYPE_MESSAGE
        if isMessage {
            _ = try lexer.consumeSymbol(UInt8(ascii: ":"))  // optional before a message
        } else {
            let colon = try lexer.next()
            guard lexer.isSymbol(colon, UInt8(ascii: ":")) else {
                throw expected("':' after \"\(name)\"", found: colon)
            }
        }
        if repeated, try lexer.consumeSymbol(UInt8(ascii: "[")) {
            if try !lexer.consumeSymbol(UInt8(ascii: "]")) {
                while true {
                    if isMessage {
                        try parseFieldMessage(field, depth: depth)
                    } else {
                        try parseScalar(field)
                    }
                    if try lexer.consumeSymbol(UInt8(ascii: "]")) { break }
                    let comma = try lexer.next()
                    guard lexer.isSymbol(comma, UInt8(ascii: ",")) else {
                        throw expected("',' or ']' in the list of \"\(name)\"", found: comma)
                    }
                }
            }
        } else if isMessage {
            try parseFieldMessage(field, depth: depth)
        } else {
            try parseScalar(field)
        }
        if try !lexer.consumeSymbol(UInt8(ascii: ";")) { _ = try lexer.consumeSymbol(UInt8(ascii: ",")) }
    }

    /// `{ … }` or `< … >`: the tag, a 5-byte length patched when the message ends, the fields.
    private mutating func parseFieldMessage(
        _ field: UnsafePointer<ProtobufCFieldDescriptor>,
        depth: Int
    ) throws(IMCodecError) {
        let open = try lexer.next()
        let closing: UInt8
        if lexer.isSymbol(open, UInt8(ascii: "{")) {
            closing = UInt8(ascii: "}")
        } else if lexer.isSymbol(open, UInt8(ascii: "<")) {
            closing = UInt8(ascii: ">")
        } else {
            throw expected("'{' or '<' to open message field \"\(String(cString: field.pointee.name))\"", found: open)
        }
        guard depth < maxDepth else {
            throw IMCodecError(
                code: .tooDeep,
                reason: lexer.position(open.start) + ": messages nest deeper than maxDepth (\(maxDepth))",
                offset: open.start
            )
        }
        guard let sub = field.pointee.descriptor?.assumingMemoryBound(to: ProtobufCMessageDescriptor.self) else {
            throw error("field \"\(String(cString: field.pointee.name))\" has no message descriptor", at: open.start)
        }
        writeTag(field.pointee.id, 2)
        let lengthAt = out.count
        out.append(contentsOf: repeatElement(0, count: 5))
        try parseMessage(sub, closing: closing, depth: depth + 1)
        // A varint padded to 5 bytes: valid protobuf; the decoded value is re-encoded canonically.
        let length = out.count - lengthAt - 5
        guard length < 1 << 35 else { throw .tooLarge("a message in the text is too large") }
        out.withUnsafeMutableBytes { out in
            WireFormat.storeVarint(UInt64(length), at: out.baseAddress! + lengthAt, paddedTo: 5)
        }
    }

    // MARK: Scalars

    private mutating func writeVarint(_ value: UInt64) {
        WireFormat.appendVarint(value, to: &out)
    }

    private mutating func writeTag(_ number: UInt32, _ wireType: UInt64) {
        WireFormat.appendTag(UInt64(number), wireType, to: &out)
    }

    private mutating func parseScalar(_ field: UnsafePointer<ProtobufCFieldDescriptor>) throws(IMCodecError) {
        let name = FieldName(field: field)
        let number = field.pointee.id
        switch field.pointee.type {
        case PROTOBUF_C_TYPE_INT32, PROTOBUF_C_TYPE_SINT32, PROTOBUF_C_TYPE_SFIXED32:
            let value = try signedInteger(min: Int64(Int32.min), max: Int64(Int32.max), field: name)
            switch field.pointee.type {
            case PROTOBUF_C_TYPE_INT32:
                writeTag(number, 0)
                writeVarint(UInt64(bitPattern: value))
            case PROTOBUF_C_TYPE_SINT32:
                writeTag(number, 0)
                let v = Int32(value)
                writeVarint(UInt64(UInt32(bitPattern: (v << 1) ^ (v >> 31))))
            default:
                writeTag(number, 5)
                WireFormat.appendFixed(UInt32(bitPattern: Int32(value)), to: &out)
            }
        case PROTOBUF_C_TYPE_INT64, PROTOBUF_C_TYPE_SINT64, PROTOBUF_C_TYPE_SFIXED64:
            let value = try signedInteger(min: .min, max: .max, field: name)
            switch field.pointee.type {
            case PROTOBUF_C_TYPE_INT64:
                writeTag(number, 0)
                writeVarint(UInt64(bitPattern: value))
            case PROTOBUF_C_TYPE_SINT64:
                writeTag(number, 0)
                writeVarint(UInt64(bitPattern: (value << 1) ^ (value >> 63)))
            default:
                writeTag(number, 1)
                WireFormat.appendFixed(UInt64(bitPattern: value), to: &out)
            }
        case PROTOBUF_C_TYPE_UINT32, PROTOBUF_C_TYPE_FIXED32:
            let value = try unsignedInteger(max: UInt64(UInt32.max), field: name)
            if field.pointee.type == PROTOBUF_C_TYPE_UINT32 {
                writeTag(number, 0)
                writeVarint(value)
            } else {
                writeTag(number, 5)
                WireFormat.appendFixed(UInt32(truncatingIfNeeded: value), to: &out)
            }
        case PROTOBUF_C_TYPE_UINT64, PROTOBUF_C_TYPE_FIXED64:
            let value = try unsignedInteger(max: .max, field: name)
            if field.pointee.type == PROTOBUF_C_TYPE_UINT64 {
                writeTag(number, 0)
                writeVarint(value)
            } else {
                writeTag(number, 1)
                WireFormat.appendFixed(value, to: &out)
            }
        case PROTOBUF_C_TYPE_FLOAT:
            let value = try floatingPoint(field: name)
            writeTag(number, 5)
            WireFormat.appendFixed(Float(value).bitPattern, to: &out)
        case PROTOBUF_C_TYPE_DOUBLE:
            let value = try floatingPoint(field: name)
            writeTag(number, 1)
            WireFormat.appendFixed(value.bitPattern, to: &out)
        case PROTOBUF_C_TYPE_BOOL:
            let token = try lexer.next()
            let value: Bool
            switch token.kind {
            case .identifier:
                switch lexer.text(token) {
                case "true", "True", "t": value = true
                case "false", "False", "f": value = false
                default: throw expected("true or false for field \"\(name)\"", found: token)
                }
            case .integer:
                switch lexer.text(token) {
                case "1": value = true
                case "0": value = false
                default: throw expected("true or false for field \"\(name)\"", found: token)
                }
            default:
                throw expected("true or false for field \"\(name)\"", found: token)
            }
            writeTag(number, 0)
            out.append(value ? 1 : 0)
        case PROTOBUF_C_TYPE_ENUM:
            let token = try lexer.peek()
            if token.kind == .identifier {
                _ = try lexer.next()
                let valueName = lexer.text(token)
                guard let enumeration = field.pointee.descriptor?.assumingMemoryBound(to: ProtobufCEnumDescriptor.self),
                    let value = protobuf_c_enum_descriptor_get_value_by_name(enumeration, valueName)
                else {
                    throw error("unknown enumeration value \"\(valueName)\" for field \"\(name)\"", at: token.start)
                }
                writeTag(number, 0)
                writeVarint(UInt64(bitPattern: Int64(value.pointee.value)))
            } else {
                // proto3 enums are open: any int32 is kept.
                let value = try signedInteger(min: Int64(Int32.min), max: Int64(Int32.max), field: name)
                writeTag(number, 0)
                writeVarint(UInt64(bitPattern: value))
            }
        case PROTOBUF_C_TYPE_STRING, PROTOBUF_C_TYPE_BYTES:
            let first = try lexer.next()
            guard first.kind == .string else { throw expected("a string for field \"\(name)\"", found: first) }
            var value: [UInt8] = []
            try lexer.appendString(first, to: &value)
            while try lexer.peek().kind == .string {
                try lexer.appendString(lexer.next(), to: &value)  // adjacent strings are concatenated
            }
            let isText = field.pointee.type == PROTOBUF_C_TYPE_STRING || imcodec_field_is_utf8_bytes(field) != 0
            if isText && value.withUnsafeBufferPointer({ imcodec_utf8_valid($0.baseAddress, $0.count) }) == 0 {
                throw IMCodecError(
                    code: .invalidUTF8,
                    reason: lexer.position(first.start)
                        + ": string field \"\(name)\" is not valid UTF-8 once its escapes are read",
                    offset: first.start
                )
            }
            writeTag(number, 2)
            writeVarint(UInt64(value.count))
            out.append(contentsOf: value)
        default:
            throw error("field \"\(name)\" has a type text format does not support", at: lexer.offset)
        }
    }

    /// An optional '-' and an integer token (decimal, hex or octal) in `min ... max`.
    private mutating func signedInteger(min: Int64, max: Int64, field: FieldName) throws(IMCodecError) -> Int64 {
        var token = try lexer.next()
        let start = token.start
        let negative = lexer.isSymbol(token, UInt8(ascii: "-"))
        if negative { token = try lexer.next() }
        guard token.kind == .integer else { throw expected("an integer for field \"\(field)\"", found: token) }
        guard let magnitude = lexer.integerValue(token) else {
            throw error("integer \(lexer.text(token)) is out of range for field \"\(field)\"", at: start)
        }
        if negative {
            guard magnitude <= UInt64(bitPattern: 0 &- min) || (min == .min && magnitude == 1 << 63) else {
                throw error("integer -\(lexer.text(token)) is out of range for field \"\(field)\"", at: start)
            }
            return Int64(truncatingIfNeeded: 0 &- magnitude)
        }
        guard magnitude <= UInt64(max) else {
            throw error("integer \(lexer.text(token)) is out of range for field \"\(field)\"", at: start)
        }
        return Int64(magnitude)
    }

    private mutating func unsignedInteger(max: UInt64, field: FieldName) throws(IMCodecError) -> UInt64 {
        let token = try lexer.next()
        guard token.kind == .integer else {
            throw expected("an unsigned integer for field \"\(field)\"", found: token)
        }
        guard let value = lexer.integerValue(token), value <= max else {
            throw error("integer \(lexer.text(token)) is out of range for field \"\(field)\"", at: token.start)
        }
        return value
    }

    /// An optional '-' and a decimal integer, a floating point number (optional `f` suffix), or
    /// `inf`, `infinity`, `nan` in any case.
    private mutating func floatingPoint(field: FieldName) throws(IMCodecError) -> Double {
        var token = try lexer.next()
        let negative = lexer.isSymbol(token, UInt8(ascii: "-"))
        if negative { token = try lexer.next() }
        var value: Double
        switch token.kind {
        case .integer, .float:
            var text = lexer.text(token)
            if token.kind == .integer && text.count > 1 && text.hasPrefix("0") {
                throw error("expected a decimal number for field \"\(field)\", found \(text)", at: token.start)
            }
            if text.hasSuffix("f") || text.hasSuffix("F") { text.removeLast() }
            guard let parsed = Double(text) else {
                throw error("\(text) is not a number for field \"\(field)\"", at: token.start)
            }
            value = parsed
        case .identifier:
            switch lexer.text(token).lowercased() {
            case "inf", "infinity": value = .infinity
            case "nan": value = .nan
            default: throw expected("a number for field \"\(field)\"", found: token)
            }
        default:
            throw expected("a number for field \"\(field)\"", found: token)
        }
        if negative { value = -value }
        return value
    }
}

/// A field's schema name, made into a `String` only when an error message interpolates it.
struct FieldName: CustomStringConvertible {
    let field: UnsafePointer<ProtobufCFieldDescriptor>
    var description: String { String(cString: field.pointee.name) }
}

/// One token of protobuf text format: where it is in the text and what kind it is.
struct TextFormatToken {
    enum Kind { case identifier, integer, float, string, symbol, end }
    let kind: Kind
    let start: Int
    let end: Int
}

/// Splits protobuf text format into tokens, as the C++ `io::Tokenizer` does: whitespace and `#`
/// comments between tokens; identifiers `[A-Za-z_][A-Za-z0-9_]*`; numbers; quoted strings (no
/// newline inside); every other character a one-character symbol.
struct TextFormatLexer {
    private let input: UnsafeBufferPointer<UInt8>
    private(set) var offset = 0
    private var lookahead: TextFormatToken?

    init(_ input: UnsafeBufferPointer<UInt8>) { self.input = input }

    // MARK: Errors

    /// `line L, column C` (1-based; columns count Unicode scalars) of a byte offset.
    func position(_ offset: Int) -> String {
        var line = 1
        var column = 1
        for k in 0..<min(offset, input.count) {
            let byte = input[k]
            if byte == 0x0A {
                line += 1
                column = 1
            } else if byte & 0xC0 != 0x80 {
                column += 1
            }
        }
        return "line \(line), column \(column)"
    }

    func error(_ reason: String, at offset: Int) -> IMCodecError {
        .invalidTextFormat(position(offset) + ": " + reason, offset: offset)
    }

    func describe(_ token: TextFormatToken) -> String {
        switch token.kind {
        case .end: return "the end of the text"
        case .string: return "a string"
        default:
            var text = self.text(token)
            if text.count > 40 { text = String(text.prefix(40)) + "…" }
            return "'\(text)'"
        }
    }

    func text(_ token: TextFormatToken) -> String {
        String(decoding: UnsafeBufferPointer(rebasing: input[token.start..<token.end]), as: UTF8.self)
    }

    /// The field of `descriptor` named by an identifier token: a binary search of protobuf-c's
    /// `fields_sorted_by_name` (sorted by `strcmp`) comparing the token's bytes in place.
    func field(
        named token: TextFormatToken,
        in descriptor: UnsafePointer<ProtobufCMessageDescriptor>
    ) -> UnsafePointer<ProtobufCFieldDescriptor>? {
        guard let sorted = descriptor.pointee.fields_sorted_by_name, let fields = descriptor.pointee.fields,
            let base = input.baseAddress
        else { return nil }
        let name = base + token.start
        let length = token.end - token.start
        var low = 0
        var high = Int(descriptor.pointee.n_fields)
        while low < high {
            let middle = (low + high) / 2
            let candidate = fields + Int(sorted[middle])
            let candidateName: UnsafePointer<CChar> = candidate.pointee.name
            let candidateLength = strlen(candidateName)
            var order = Int(memcmp(candidateName, name, min(candidateLength, length)))
            if order == 0 { order = candidateLength - length }
            if order == 0 { return candidate }
            if order < 0 { low = middle + 1 } else { high = middle }
        }
        return nil
    }

    func isSymbol(_ token: TextFormatToken, _ symbol: UInt8) -> Bool {
        token.kind == .symbol && input[token.start] == symbol
    }

    // MARK: Tokens

    mutating func peek() throws(IMCodecError) -> TextFormatToken {
        if let lookahead { return lookahead }
        let token = try scan()
        lookahead = token
        return token
    }

    mutating func next() throws(IMCodecError) -> TextFormatToken {
        if let token = lookahead {
            lookahead = nil
            return token
        }
        return try scan()
    }

    /// Consumes the next token if it is `symbol`.
    mutating func consumeSymbol(_ symbol: UInt8) throws(IMCodecError) -> Bool {
        guard isSymbol(try peek(), symbol) else { return false }
        lookahead = nil
        return true
    }

    private static func isLetter(_ c: UInt8) -> Bool {
        (c >= UInt8(ascii: "a") && c <= UInt8(ascii: "z")) || (c >= UInt8(ascii: "A") && c <= UInt8(ascii: "Z"))
            || c == UInt8(ascii: "_")
    }

    private static func isDigit(_ c: UInt8) -> Bool { c >= UInt8(ascii: "0") && c <= UInt8(ascii: "9") }

    private static func isHex(_ c: UInt8) -> Bool {
        isDigit(c) || (c | 0x20 >= UInt8(ascii: "a") && c | 0x20 <= UInt8(ascii: "f"))
    }

    private mutating func scan() throws(IMCodecError) -> TextFormatToken {
        // Whitespace and comments.
        while offset < input.count {
            let c = input[offset]
            if c == 0x20 || (c >= 0x09 && c <= 0x0D) {
                offset += 1
            } else if c == UInt8(ascii: "#") {
                while offset < input.count && input[offset] != 0x0A { offset += 1 }
            } else {
                break
            }
        }
        let start = offset
        guard offset < input.count else { return TextFormatToken(kind: .end, start: start, end: start) }
        let c = input[offset]
        if TextFormatLexer.isLetter(c) {
            while offset < input.count
                && (TextFormatLexer.isLetter(input[offset]) || TextFormatLexer.isDigit(input[offset]))
            {
                offset += 1
            }
            return TextFormatToken(kind: .identifier, start: start, end: offset)
        }
        if TextFormatLexer.isDigit(c)
            || (c == UInt8(ascii: ".") && offset + 1 < input.count && TextFormatLexer.isDigit(input[offset + 1]))
        {
            return try number(start)
        }
        if c == UInt8(ascii: "\"") || c == UInt8(ascii: "'") {
            offset += 1
            while true {
                guard offset < input.count, input[offset] != 0x0A else {
                    throw error("the string that starts here is not closed on its line", at: start)
                }
                let d = input[offset]
                offset += 1
                if d == c { break }
                if d == UInt8(ascii: "\\") && offset < input.count && input[offset] != 0x0A { offset += 1 }
            }
            return TextFormatToken(kind: .string, start: start, end: offset)
        }
        // A symbol: one Unicode scalar.
        offset += 1
        while offset < input.count && input[offset] & 0xC0 == 0x80 { offset += 1 }
        return TextFormatToken(kind: .symbol, start: start, end: offset)
    }

    private mutating func number(_ start: Int) throws(IMCodecError) -> TextFormatToken {
        var isFloat = false
        if input[offset] == UInt8(ascii: "0") && offset + 1 < input.count
            && (input[offset + 1] == UInt8(ascii: "x") || input[offset + 1] == UInt8(ascii: "X"))
        {
            offset += 2
            let digits = offset
            while offset < input.count && TextFormatLexer.isHex(input[offset]) { offset += 1 }
            guard offset > digits else { throw error("\"0x\" must be followed by hex digits", at: start) }
        } else {
            while offset < input.count && TextFormatLexer.isDigit(input[offset]) { offset += 1 }
            if offset < input.count && input[offset] == UInt8(ascii: ".") {
                isFloat = true
                offset += 1
                while offset < input.count && TextFormatLexer.isDigit(input[offset]) { offset += 1 }
            }
            if offset < input.count && (input[offset] == UInt8(ascii: "e") || input[offset] == UInt8(ascii: "E")) {
                isFloat = true
                offset += 1
                if offset < input.count && (input[offset] == UInt8(ascii: "+") || input[offset] == UInt8(ascii: "-")) {
                    offset += 1
                }
                let digits = offset
                while offset < input.count && TextFormatLexer.isDigit(input[offset]) { offset += 1 }
                guard offset > digits else { throw error("an exponent must have digits", at: start) }
            }
            if offset < input.count && (input[offset] == UInt8(ascii: "f") || input[offset] == UInt8(ascii: "F")) {
                isFloat = true
                offset += 1
            }
        }
        if offset < input.count && (TextFormatLexer.isLetter(input[offset]) || TextFormatLexer.isDigit(input[offset])) {
            throw error("a number must not be followed directly by a letter or digit", at: offset)
        }
        return TextFormatToken(kind: isFloat ? .float : .integer, start: start, end: offset)
    }

    /// The value of an integer token (decimal, `0x` hex, `0` octal), or nil above UInt64.max.
    func integerValue(_ token: TextFormatToken) -> UInt64? {
        var i = token.start
        var radix: UInt64 = 10
        if input[i] == UInt8(ascii: "0") && token.end - i > 1 {
            if input[i + 1] == UInt8(ascii: "x") || input[i + 1] == UInt8(ascii: "X") {
                radix = 16
                i += 2
            } else {
                radix = 8
                i += 1
            }
        }
        var value: UInt64 = 0
        while i < token.end {
            let c = input[i]
            let digit: UInt64
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt64(c - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt64(c - UInt8(ascii: "a") + 10)
            default: digit = UInt64(c - UInt8(ascii: "A") + 10)
            }
            guard digit < radix else { return nil }  // 08, 09: not octal
            let (scaled, overflow1) = value.multipliedReportingOverflow(by: radix)
            let (sum, overflow2) = scaled.addingReportingOverflow(digit)
            if overflow1 || overflow2 { return nil }
            value = sum
            i += 1
        }
        return value
    }

    /// Appends the bytes a string token stands for, its escapes read.
    func appendString(_ token: TextFormatToken, to value: inout [UInt8]) throws(IMCodecError) {
        var i = token.start + 1
        let end = token.end - 1
        while i < end {
            let c = input[i]
            guard c == UInt8(ascii: "\\") else {
                value.append(c)
                i += 1
                continue
            }
            let escape = i
            i += 1
            let e = input[i]
            i += 1
            switch e {
            case UInt8(ascii: "a"): value.append(0x07)
            case UInt8(ascii: "b"): value.append(0x08)
            case UInt8(ascii: "f"): value.append(0x0C)
            case UInt8(ascii: "n"): value.append(0x0A)
            case UInt8(ascii: "r"): value.append(0x0D)
            case UInt8(ascii: "t"): value.append(0x09)
            case UInt8(ascii: "v"): value.append(0x0B)
            case UInt8(ascii: "\\"), UInt8(ascii: "?"), UInt8(ascii: "'"), UInt8(ascii: "\""): value.append(e)
            case UInt8(ascii: "0")...UInt8(ascii: "7"):
                var code = UInt32(e - UInt8(ascii: "0"))
                var digits = 1
                while digits < 3 && i < end && input[i] >= UInt8(ascii: "0") && input[i] <= UInt8(ascii: "7") {
                    code = code * 8 + UInt32(input[i] - UInt8(ascii: "0"))
                    i += 1
                    digits += 1
                }
                value.append(UInt8(truncatingIfNeeded: code))
            case UInt8(ascii: "x"), UInt8(ascii: "X"):
                var code: UInt32 = 0
                var digits = 0
                while digits < 2 && i < end && TextFormatLexer.isHex(input[i]) {
                    code = code * 16 + TextFormatLexer.hexValue(input[i])
                    i += 1
                    digits += 1
                }
                guard digits > 0 else { throw error("\\x must be followed by hex digits", at: escape) }
                value.append(UInt8(code))
            case UInt8(ascii: "u"), UInt8(ascii: "U"):
                let count = e == UInt8(ascii: "u") ? 4 : 8
                guard var scalar = hexDigits(at: i, count: count, end: end) else {
                    throw error("\\\(Character(Unicode.Scalar(e))) must be followed by \(count) hex digits", at: escape)
                }
                i += count
                // A UTF-16 surrogate pair written as two \u escapes is one scalar.
                if scalar >= 0xD800 && scalar < 0xDC00 && i + 6 <= end && input[i] == UInt8(ascii: "\\")
                    && input[i + 1] == UInt8(ascii: "u"), let low = hexDigits(at: i + 2, count: 4, end: end),
                    low >= 0xDC00 && low < 0xE000
                {
                    scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    i += 6
                }
                guard let unicode = Unicode.Scalar(scalar) else {
                    let hex = String(scalar, radix: 16)
                    throw error(
                        "\\\(Character(Unicode.Scalar(e))) escape 0x\(hex) is not a Unicode scalar "
                            + "(a lone surrogate or above U+10FFFF)",
                        at: escape
                    )
                }
                value.append(contentsOf: UTF8.encode(unicode)!)
            default:
                throw error("invalid escape sequence \\\(String(decoding: [e], as: UTF8.self)) in a string", at: escape)
            }
        }
    }

    private static func hexValue(_ c: UInt8) -> UInt32 {
        if isDigit(c) { return UInt32(c - UInt8(ascii: "0")) }
        return UInt32((c | 0x20) - UInt8(ascii: "a") + 10)
    }

    private func hexDigits(at i: Int, count: Int, end: Int) -> UInt32? {
        guard end - i >= count else { return nil }
        var value: UInt32 = 0
        for k in 0..<count {
            guard TextFormatLexer.isHex(input[i + k]) else { return nil }
            value = value << 4 | TextFormatLexer.hexValue(input[i + k])
        }
        return value
    }

    // MARK: Depth

    /// How deep messages nest in the text (the top level counts as 1): every `{` or `<` opens a
    /// level and `}` or `>` closes one. Throws ``IMCodecError/Code/tooDeep`` at the first bracket that
    /// opens a level beyond `maxDepth`, and lexical errors met on the way.
    static func messageDepth(_ input: UnsafeBufferPointer<UInt8>, maxDepth: Int) throws(IMCodecError) -> Int {
        var lexer = TextFormatLexer(input)
        var depth = 1
        var deepest = 1
        while true {
            let token = try lexer.next()
            if token.kind == .end { return deepest }
            guard token.kind == .symbol else { continue }
            switch input[token.start] {
            case UInt8(ascii: "{"), UInt8(ascii: "<"):
                depth += 1
                guard depth <= maxDepth else {
                    throw IMCodecError(
                        code: .tooDeep,
                        reason: lexer.position(token.start) + ": messages nest deeper than maxDepth (\(maxDepth))",
                        offset: token.start
                    )
                }
                deepest = max(deepest, depth)
            case UInt8(ascii: "}"), UInt8(ascii: ">"):
                depth = max(depth - 1, 1)
            default:
                break
            }
        }
    }
}
