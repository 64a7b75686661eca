// Golden fixtures (Fixtures/, see Fixtures/README.md) and the helpers that compare with them.
import Foundation
import IMCodec

enum FixtureFiles {
    static let root = Protoc.root.appendingPathComponent("Fixtures")
    static let valid = root.appendingPathComponent("valid")
    static let invalid = root.appendingPathComponent("invalid")

    struct ValidCase: Decodable {
        let name: String
        let description: String
        let json_roundtrip: Bool
        /// NAME.canonical.binpb when Google's deterministic serialization of the case differs from
        /// its bytes (duplicated fields merged, unknown fields behind the known ones); nil when
        /// NAME.binpb is canonical itself.
        let canonical: String?
    }

    struct InvalidCase: Decodable {
        let file: String
        let type: String
        let code: String
        let offset: Int?
        let options: [String: Int]
        let description: String
    }

    static func load<T: Decodable>(_ url: URL, as type: T.Type) -> T? {
        guard let data = try? Data(contentsOf: url) else { return nil }
        return try? JSONDecoder().decode(T.self, from: data)
    }

    static let validCases: [String: ValidCase] = {
        let cases = load(valid.appendingPathComponent("manifest.json"), as: [ValidCase].self) ?? []
        return Dictionary(cases.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
    }()

    static let invalidCases: [String: InvalidCase] = {
        let cases = load(invalid.appendingPathComponent("manifest.json"), as: [InvalidCase].self) ?? []
        return Dictionary(cases.map { ($0.file, $0) }, uniquingKeysWith: { first, _ in first })
    }()

    static var validNames: [String] { validCases.keys.sorted() }
    static var invalidNames: [String] { invalidCases.keys.sorted() }

    static func bytes(_ url: URL) throws -> [UInt8] { [UInt8](try Data(contentsOf: url)) }
}

/// A JSON value for comparing documents by meaning: objects as dictionaries, numbers by value.
indirect enum FixtureJSON: Equatable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([FixtureJSON])
    case object([String: FixtureJSON])

    struct ParseError: Error, CustomStringConvertible {
        let description: String
    }

    /// Parses one JSON document (RFC 8259; a duplicated object key keeps the last value). A small
    /// hand-written reader: JSONDecoder is some 20 times slower in debug builds, which matters for
    /// the thousands of documents of DifferentialTests.
    static func parse(_ text: String) throws -> FixtureJSON {
        var reader = Reader(bytes: Array(text.utf8))
        let value = try reader.value(depth: 0)
        reader.skipSpace()
        guard reader.position == reader.bytes.count else { throw reader.error("trailing characters") }
        return value
    }

    private struct Reader {
        let bytes: [UInt8]
        var position = 0

        func error(_ what: String) -> ParseError { ParseError(description: "JSON: \(what) at byte \(position)") }

        mutating func skipSpace() {
            while position < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[position]) { position += 1 }
        }

        mutating func literal(_ word: String, _ value: FixtureJSON) throws -> FixtureJSON {
            let utf8 = Array(word.utf8)
            guard bytes.count - position >= utf8.count, Array(bytes[position..<position + utf8.count]) == utf8 else {
                throw error("unexpected character")
            }
            position += utf8.count
            return value
        }

        mutating func value(depth: Int) throws -> FixtureJSON {
            guard depth < 1_000 else { throw error("too deep") }
            skipSpace()
            guard position < bytes.count else { throw error("unexpected end") }
            switch bytes[position] {
            case UInt8(ascii: "n"): return try literal("null", .null)
            case UInt8(ascii: "t"): return try literal("true", .bool(true))
            case UInt8(ascii: "f"): return try literal("false", .bool(false))
            case UInt8(ascii: "\""): return .string(try string())
            case UInt8(ascii: "["):
                position += 1
                var items: [FixtureJSON] = []
                skipSpace()
                if position < bytes.count, bytes[position] == UInt8(ascii: "]") { position += 1; return .array(items) }
                while true {
                    items.append(try value(depth: depth + 1))
                    skipSpace()
                    guard position < bytes.count else { throw error("unterminated array") }
                    position += 1
                    if bytes[position - 1] == UInt8(ascii: "]") { return .array(items) }
                    guard bytes[position - 1] == UInt8(ascii: ",") else { throw error("expected , or ]") }
                }
            case UInt8(ascii: "{"):
                position += 1
                var members: [String: FixtureJSON] = [:]
                skipSpace()
                if position < bytes.count, bytes[position] == UInt8(ascii: "}") {
                    position += 1
                    return .object(members)
                }
                while true {
                    skipSpace()
                    guard position < bytes.count, bytes[position] == UInt8(ascii: "\"") else {
                        throw error("expected a key")
                    }
                    let key = try string()
                    skipSpace()
                    guard position < bytes.count, bytes[position] == UInt8(ascii: ":") else {
                        throw error("expected :")
                    }
                    position += 1
                    members[key] = try value(depth: depth + 1)
                    skipSpace()
                    guard position < bytes.count else { throw error("unterminated object") }
                    position += 1
                    if bytes[position - 1] == UInt8(ascii: "}") { return .object(members) }
                    guard bytes[position - 1] == UInt8(ascii: ",") else { throw error("expected , or }") }
                }
            default:
                let start = position
                while position < bytes.count, "+-0123456789.eE".utf8.contains(bytes[position]) { position += 1 }
                guard position > start, let number = Double(String(decoding: bytes[start..<position], as: UTF8.self))
                else { throw error("unexpected character") }
                return .number(number)
            }
        }

        mutating func hex4() throws -> UInt32 {
            guard bytes.count - position >= 4,
                let value = UInt32(String(decoding: bytes[position..<position + 4], as: UTF8.self), radix: 16)
            else { throw error("bad \\u escape") }
            position += 4
            return value
        }

        mutating func string() throws -> String {
            position += 1  // the opening quote
            var scalars = String.UnicodeScalarView()
            var run = position  // start of the unescaped bytes not yet copied
            func flush(_ end: Int) {
                scalars.append(contentsOf: String(decoding: bytes[run..<end], as: UTF8.self).unicodeScalars)
            }
            while position < bytes.count {
                let byte = bytes[position]
                if byte == UInt8(ascii: "\"") {
                    flush(position)
                    position += 1
                    return String(scalars)
                }
                guard byte == UInt8(ascii: "\\") else { position += 1; continue }
                flush(position)
                position += 1
                guard position < bytes.count else { break }
                let escape = bytes[position]
                position += 1
                switch escape {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): scalars.append(Unicode.Scalar(escape))
                case UInt8(ascii: "b"): scalars.append("\u{08}")
                case UInt8(ascii: "f"): scalars.append("\u{0C}")
                case UInt8(ascii: "n"): scalars.append("\n")
                case UInt8(ascii: "r"): scalars.append("\r")
                case UInt8(ascii: "t"): scalars.append("\t")
                case UInt8(ascii: "u"):
                    var code = try hex4()
                    if (0xD800..<0xDC00).contains(code), bytes.count - position >= 6,
                        bytes[position] == UInt8(ascii: "\\"), bytes[position + 1] == UInt8(ascii: "u")
                    {
                        position += 2
                        let low = try hex4()
                        guard (0xDC00..<0xE000).contains(low) else { throw error("unpaired surrogate") }
                        code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                    }
                    guard let scalar = Unicode.Scalar(code) else { throw error("unpaired surrogate") }
                    scalars.append(scalar)
                default: throw error("bad escape")
                }
                run = position
            }
            throw error("unterminated string")
        }
    }
}

/// The lines of a pretty-printed document without trailing commas, sorted: equal for two documents
/// that differ only in the order of map entries (one per line), different for any change of
/// layout, escaping or number text.
func sortedLines(_ text: String) -> [String] {
    text.split(separator: "\n", omittingEmptySubsequences: false)
        .map { $0.hasSuffix(",") ? String($0.dropLast()) : String($0) }
        .filter { !$0.isEmpty }
        .sorted()
}

func decodingOptions(_ options: [String: Int]) -> DecodingOptions? {
    var result = DecodingOptions()
    for (key, value) in options {
        switch key {
        case "maxInputSize": result.maxInputSize = value
        case "maxDepth": result.maxDepth = value
        case "maxFieldCount": result.maxFieldCount = value
        case "maxDecodedMemory": result.maxDecodedMemory = value
        default: return nil
        }
    }
    return result
}
