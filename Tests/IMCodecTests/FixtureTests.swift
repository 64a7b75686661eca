// The golden fixtures in Fixtures/ (made by Google's encoder, see Scripts/generate-fixtures), run
// through IMCodec one case at a time.
//
// valid/NAME.binpb  decodes as imcodec.v1.Frame; its pretty JSON equals NAME.json (as JSON trees,
//                   numbers by value, and line for line up to the order of map entries); it
//                   re-encodes to NAME.binpb exactly; where the manifest says json_roundtrip, the
//                   Frame read from NAME.json re-encodes to NAME.binpb exactly.
// invalid/NAME.bin  fails to decode with the manifest's options, code and offset.
import Foundation
import IMCodec
import Testing

enum FixtureFiles {
    static let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures")
    static let valid = root.appendingPathComponent("valid")
    static let invalid = root.appendingPathComponent("invalid")

    struct ValidCase: Decodable {
        let name: String
        let description: String
        let json_roundtrip: Bool
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
indirect enum FixtureJSON: Decodable, Equatable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([FixtureJSON])
    case object([String: FixtureJSON])

    init(from decoder: Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([FixtureJSON].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: FixtureJSON].self))
        }
    }

    static func parse(_ text: String) throws -> FixtureJSON {
        try JSONDecoder().decode(FixtureJSON.self, from: Data(text.utf8))
    }
}

/// The lines of a pretty-printed document without trailing commas, sorted: equal for two documents
/// that differ only in the order of map entries (one per line), different for any change of
/// layout, escaping or number text.
private func sortedLines(_ text: String) -> [String] {
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

@Suite("Golden fixtures")
struct FixtureTests {
    @Test func manifestsListCases() {
        #expect(!FixtureFiles.validCases.isEmpty, "Fixtures/valid/manifest.json is missing or empty")
        #expect(!FixtureFiles.invalidCases.isEmpty, "Fixtures/invalid/manifest.json is missing or empty")
    }

    @Test("valid fixture: binary → Frame → JSON and back", arguments: FixtureFiles.validNames)
    func validCase(_ name: String) throws {
        let entry = try #require(FixtureFiles.validCases[name])
        let binary = try FixtureFiles.bytes(FixtureFiles.valid.appendingPathComponent(name + ".binpb"))
        let expectedJSON = try String(contentsOf: FixtureFiles.valid.appendingPathComponent(name + ".json"), encoding: .utf8)

        let frame = try Frame(serializedBytes: binary)

        // JSON: same tree as Google's, and the same text up to the order of map entries (Python
        // prints maps in hash order). json_format's defaults: indent=2, ensure_ascii=True.
        var options = JSONEncodingOptions()
        options.prettyPrinted = true
        options.asciiOnly = true
        let json = try frame.jsonString(options: options)
        #expect(try FixtureJSON.parse(json) == FixtureJSON.parse(expectedJSON), "JSON differs from \(name).json")
        #expect(sortedLines(json) == sortedLines(expectedJSON), "JSON text differs from \(name).json")
        // The binary-to-JSON entry point gives the same text.
        #expect(try ProtoJSON.jsonString(fromBinary: binary, messageType: "imcodec.v1.Frame", options: options) == json)

        // Binary: re-encoding is canonical.
        let reencoded = frame.serializedBytes()
        if entry.json_roundtrip {
            #expect(reencoded == binary, "re-encoding differs from \(name).binpb")
        } else {
            // Unknown fields move behind the known ones, duplicates merge: the bytes are Google's
            // canonical form of the message, not the fixture's wire shape. They must be stable.
            let again = try Frame(serializedBytes: reencoded)
            #expect(again == frame)
            #expect(again.serializedBytes() == reencoded)
            #expect(try again.jsonString(options: options) == json)
        }

        // JSON back to binary.
        let fromJSON = try Frame(jsonString: expectedJSON)
        if entry.json_roundtrip {
            #expect(fromJSON.serializedBytes() == binary, "\(name).json re-encodes differently from \(name).binpb")
            #expect(try ProtoJSON.binary(fromJSON: expectedJSON, messageType: "imcodec.v1.Frame") == binary)
        } else {
            // Only what JSON can hold survives, and it prints the same.
            #expect(try fromJSON.jsonString(options: options) == json)
        }
    }

    @Test("invalid fixture: decoding fails with the manifest's code and offset", arguments: FixtureFiles.invalidNames)
    func invalidCase(_ file: String) throws {
        let entry = try #require(FixtureFiles.invalidCases[file])
        let options = try #require(decodingOptions(entry.options), "unknown option in \(entry.options)")
        let type = try #require(IMCodecSchema.messageType(named: entry.type), "unknown type \(entry.type)")
        let bytes = try FixtureFiles.bytes(FixtureFiles.invalid.appendingPathComponent(file))

        func decode<M: IMCodecMessage>(_ type: M.Type) throws(IMCodecError) {
            _ = try M(serializedBytes: bytes, options: options)
        }
        do {
            try decode(type)
            Issue.record("\(file) decoded, expected \(entry.code): \(entry.description)")
        } catch {
            #expect(error.code == IMCodecError.Code(rawValue: entry.code), "\(file): \(error) — \(entry.description)")
            if let offset = entry.offset {
                #expect(error.offset == offset, "\(file): \(error) — \(entry.description)")
            }
        }

        // The binary-to-JSON entry point reports the same error.
        do {
            _ = try ProtoJSON.jsonString(fromBinary: bytes, messageType: entry.type, decoding: options)
            Issue.record("\(file) printed as JSON, expected \(entry.code)")
        } catch {
            #expect(error.code == IMCodecError.Code(rawValue: entry.code))
            if let offset = entry.offset { #expect(error.offset == offset) }
        }
    }
}
