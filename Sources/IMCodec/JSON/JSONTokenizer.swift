/// Reads JSON text into a ``JSONTape``.
struct JSONTokenizer {
    private let input: UnsafeBufferPointer<UInt8>
    private var i = 0
    private var tape = JSONTape()

    private init(_ input: UnsafeBufferPointer<UInt8>) { self.input = input }

    /// Parses exactly one JSON value, with optional whitespace around it.
    /// - Parameters:
    ///   - input: UTF-8 JSON text (Swift strings are valid UTF-8, so it is not checked again).
    ///   - maxNesting: The most arrays and objects that may be open at once.
    /// - Throws: ``IMCodecError/Code/invalidJSON`` with the offset of the first bad byte.
    static func parse(_ input: UnsafeRawBufferPointer, maxNesting: Int) throws(IMCodecError) -> JSONTape {
        guard input.count < Int(UInt32.max) else {
            throw .invalidJSON("the JSON text is \(input.count) bytes; at most \(UInt32.max - 1) are supported")
        }
        var tokenizer = JSONTokenizer(input.bindMemory(to: UInt8.self))
        tokenizer.tape.nodes.reserveCapacity(min(input.count / 4 + 4, 1 << 20))
        tokenizer.tape.text.reserveCapacity(min(input.count, 1 << 24))
        try tokenizer.run(maxNesting: maxNesting)
        return tokenizer.tape
    }

    private static let quote = UInt8(ascii: "\""), backslash = UInt8(ascii: "\\")

    private func describe(_ byte: UInt8) -> String {
        if byte >= 0x21 && byte < 0x7F { return "'\(Character(Unicode.Scalar(byte)))'" }
        return "byte 0x" + String(byte, radix: 16, uppercase: true)
    }

    private func error(_ reason: String, at offset: Int) -> IMCodecError {
        .invalidJSON(reason, offset: offset)
    }

    @inline(__always)
    private mutating func skipWhitespace() {
        while i < input.count {
            switch input[i] {
            case 0x20, 0x09, 0x0A, 0x0D: i += 1
            default: return
            }
        }
    }

    // Long on purpose (over 80 lines): one loop over the input with an explicit stack, never
    // recursion, so nesting costs no stack; its cases are the JSON grammar's tokens.
    private mutating func run(maxNesting: Int) throws(IMCodecError) {
        var stack: [Int] = []  // node indices of the open arrays and objects
        skipWhitespace()
        if input.count >= 3 && input[0] == 0xEF && input[1] == 0xBB && input[2] == 0xBF {
            throw error("the JSON text starts with a byte order mark", at: 0)
        }
        var expectValue = true
        while true {
            if expectValue {
                guard i < input.count else {
                    throw error(
                        stack.isEmpty ? "the JSON text is empty" : "the JSON text ends where a value should be",
                        at: i
                    )
                }
                let byte = input[i]
                switch byte {
                case UInt8(ascii: "{"), UInt8(ascii: "["):
                    guard stack.count < maxNesting else {
                        throw IMCodecError(
                            code: .tooDeep,
                            reason: "arrays and objects nest deeper than \(maxNesting) levels",
                            offset: i
                        )
                    }
                    let isObject = byte == UInt8(ascii: "{")
                    stack.append(tape.nodes.count)
                    tape.deepest = max(tape.deepest, stack.count)
                    tape.nodes.append(JSONTape.Node(kind: isObject ? .object : .array, offset: i, a: 0, b: 0))
                    i += 1
                    skipWhitespace()
                    if i < input.count && input[i] == (isObject ? UInt8(ascii: "}") : UInt8(ascii: "]")) {
                        i += 1
                        close(&stack)
                    } else if isObject {
                        try readKey()
                        continue
                    } else {
                        continue
                    }
                case JSONTokenizer.quote:
                    try readString()
                case UInt8(ascii: "t"):
                    try readLiteral("true", .true)
                case UInt8(ascii: "f"):
                    try readLiteral("false", .false)
                case UInt8(ascii: "n"):
                    try readLiteral("null", .null)
                case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                    try readNumber()
                default:
                    throw error("expected a JSON value, found \(describe(byte))", at: i)
                }
                expectValue = false
            }
            // A value just ended: it belongs to the innermost open container, if any.
            skipWhitespace()
            guard let top = stack.last else {
                if i < input.count {
                    throw error("unexpected \(describe(input[i])) after the JSON value", at: i)
                }
                return
            }
            tape.nodes[top].a += 1
            let isObject = tape.nodes[top].kind == .object
            guard i < input.count else {
                throw error("the JSON text ends inside an \(isObject ? "object" : "array")", at: i)
            }
            switch input[i] {
            case UInt8(ascii: ","):
                i += 1
                skipWhitespace()
                if isObject { try readKey() }
                expectValue = true
            case UInt8(ascii: "}") where isObject, UInt8(ascii: "]") where !isObject:
                i += 1
                close(&stack)
            default:
                throw error("expected ',' or '\(isObject ? "}" : "]")', found \(describe(input[i]))", at: i)
            }
        }
    }

    @inline(__always)
    private mutating func close(_ stack: inout [Int]) {
        let top = stack.removeLast()
        tape.nodes[top].b = tape.nodes.count
    }

    /// Reads `"key"` `:` and the whitespace after the colon.
    private mutating func readKey() throws(IMCodecError) {
        guard i < input.count else { throw error("the JSON text ends inside an object", at: i) }
        guard input[i] == JSONTokenizer.quote else {
            throw error("expected a string key, found \(describe(input[i]))", at: i)
        }
        try readString()
        skipWhitespace()
        guard i < input.count, input[i] == UInt8(ascii: ":") else {
            throw error(
                i < input.count
                    ? "expected ':' after an object key, found \(describe(input[i]))"
                    : "the JSON text ends inside an object",
                at: i
            )
        }
        i += 1
        skipWhitespace()
    }

    private mutating func readLiteral(_ word: StaticString, _ kind: JSONTape.Kind) throws(IMCodecError) {
        let count = word.utf8CodeUnitCount
        let start = i
        var matches = i + count <= input.count
        if matches {
            for k in 0..<count where input[i + k] != word.utf8Start[k] { matches = false; break }
        }
        if matches, i + count < input.count, JSONTokenizer.isIdentifierByte(input[i + count]) { matches = false }
        guard matches else { throw error("invalid literal (expected \(word))", at: start) }
        tape.nodes.append(JSONTape.Node(kind: kind, offset: start, a: 0, b: 0))
        i += count
    }

    @inline(__always)
    private static func isDigit(_ b: UInt8) -> Bool { b >= UInt8(ascii: "0") && b <= UInt8(ascii: "9") }

    @inline(__always)
    private static func isIdentifierByte(_ b: UInt8) -> Bool {
        isDigit(b) || (b | 0x20 >= UInt8(ascii: "a") && b | 0x20 <= UInt8(ascii: "z")) || b == UInt8(ascii: "_")
            || b == UInt8(ascii: ".") || b == UInt8(ascii: "+") || b == UInt8(ascii: "-") || b >= 0x80
    }

    private mutating func readNumber() throws(IMCodecError) {
        let start = i
        guard JSONNumber.scan(input, &i) else {
            throw error("invalid number: JSON numbers are -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?", at: start)
        }
        if i < input.count, JSONTokenizer.isIdentifierByte(input[i]) {
            throw error("invalid number: JSON numbers are -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?", at: start)
        }
        let textStart = tape.text.count
        tape.text.append(contentsOf: UnsafeBufferPointer(rebasing: input[start..<i]))
        tape.nodes.append(JSONTape.Node(kind: .number, offset: start, a: textStart, b: i - start))
    }

    private mutating func hex4(at position: Int) throws(IMCodecError) -> UInt32 {
        guard position + 4 <= input.count else {
            throw error("the JSON text ends inside a \\u escape", at: position - 2)
        }
        var value: UInt32 = 0
        for k in 0..<4 {
            let b = input[position + k]
            let digit: UInt8
            switch b {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = b - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = b - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = b - UInt8(ascii: "A") + 10
            default: throw error("a \\u escape needs 4 hex digits", at: position - 2)
            }
            value = value << 4 | UInt32(digit)
        }
        return value
    }

    private mutating func readString() throws(IMCodecError) {
        let start = i
        i += 1
        let textStart = tape.text.count
        while true {
            // Copy the run of plain bytes.
            let runStart = i
            while i < input.count {
                let b = input[i]
                if b == JSONTokenizer.quote || b == JSONTokenizer.backslash || b < 0x20 { break }
                i += 1
            }
            if i > runStart { tape.text.append(contentsOf: UnsafeBufferPointer(rebasing: input[runStart..<i])) }
            guard i < input.count else { throw error("unterminated string", at: start) }
            let b = input[i]
            if b == JSONTokenizer.quote {
                i += 1
                break
            }
            if b < 0x20 {
                throw error(
                    "control character U+00\(b < 0x10 ? "0" : "")\(String(b, radix: 16, uppercase: true)) must be escaped in a string",
                    at: i
                )
            }
            // A backslash escape.
            guard i + 1 < input.count else { throw error("unterminated string", at: start) }
            let escapeStart = i
            let e = input[i + 1]
            i += 2
            switch e {
            case UInt8(ascii: "\""): tape.text.append(0x22)
            case UInt8(ascii: "\\"): tape.text.append(0x5C)
            case UInt8(ascii: "/"): tape.text.append(0x2F)
            case UInt8(ascii: "b"): tape.text.append(0x08)
            case UInt8(ascii: "f"): tape.text.append(0x0C)
            case UInt8(ascii: "n"): tape.text.append(0x0A)
            case UInt8(ascii: "r"): tape.text.append(0x0D)
            case UInt8(ascii: "t"): tape.text.append(0x09)
            case UInt8(ascii: "u"):
                var scalar = try hex4(at: i)
                i += 4
                if scalar >= 0xD800 && scalar <= 0xDBFF {
                    guard i + 1 < input.count, input[i] == JSONTokenizer.backslash, input[i + 1] == UInt8(ascii: "u")
                    else {
                        throw error(
                            "lone surrogate \\u\(String(scalar, radix: 16, uppercase: true)): a high surrogate must be followed by a \\u escape of a low surrogate",
                            at: escapeStart
                        )
                    }
                    let low = try hex4(at: i + 2)
                    guard low >= 0xDC00 && low <= 0xDFFF else {
                        throw error(
                            "lone surrogate \\u\(String(scalar, radix: 16, uppercase: true)): a high surrogate must be followed by a low surrogate",
                            at: escapeStart
                        )
                    }
                    i += 6
                    scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                } else if scalar >= 0xDC00 && scalar <= 0xDFFF {
                    throw error(
                        "lone surrogate \\u\(String(scalar, radix: 16, uppercase: true)): a low surrogate without a high surrogate before it",
                        at: escapeStart
                    )
                }
                appendUTF8(scalar)
            default:
                throw error(
                    "invalid escape \\\(e >= 0x20 && e < 0x7F ? String(Character(Unicode.Scalar(e))) : "x" + String(e, radix: 16))",
                    at: escapeStart
                )
            }
        }
        tape.nodes.append(JSONTape.Node(kind: .string, offset: start, a: textStart, b: tape.text.count - textStart))
    }

    private mutating func appendUTF8(_ scalar: UInt32) {
        switch scalar {
        case ..<0x80:
            tape.text.append(UInt8(scalar))
        case ..<0x800:
            tape.text.append(UInt8(0xC0 | scalar >> 6))
            tape.text.append(UInt8(0x80 | scalar & 0x3F))
        case ..<0x10000:
            tape.text.append(UInt8(0xE0 | scalar >> 12))
            tape.text.append(UInt8(0x80 | scalar >> 6 & 0x3F))
            tape.text.append(UInt8(0x80 | scalar & 0x3F))
        default:
            tape.text.append(UInt8(0xF0 | scalar >> 18))
            tape.text.append(UInt8(0x80 | scalar >> 12 & 0x3F))
            tape.text.append(UInt8(0x80 | scalar >> 6 & 0x3F))
            tape.text.append(UInt8(0x80 | scalar & 0x3F))
        }
    }
}
