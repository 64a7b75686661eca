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

    /// The index in `schema`'s fields of the field named by an identifier token (its bytes
    /// compared in place).
    func field(named token: TextFormatToken, in schema: MessageSchema) -> Int? {
        schema.field(protoName: UnsafeBufferPointer(rebasing: input[token.start..<token.end]))
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
