// The golden fixtures in Fixtures/ (made by Google's encoder, see Scripts/generate-fixtures), run
// through IMCodec one case at a time.
//
// valid/NAME.binpb  decodes as imcodec.v1.Frame; its pretty JSON equals NAME.json (as JSON trees,
//                   numbers by value, and line for line up to the order of map entries); it
//                   re-encodes to Google's deterministic bytes exactly: NAME.binpb, or
//                   NAME.canonical.binpb where the manifest names one (merged duplicates, unknown
//                   fields last); where the manifest says json_roundtrip, the Frame read from
//                   NAME.json re-encodes to NAME.binpb exactly.
// invalid/NAME.bin  fails to decode with the manifest's options, code and offset.
import Foundation
import IMCodec
import Testing

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
        let expectedJSON = try String(
            contentsOf: FixtureFiles.valid.appendingPathComponent(name + ".json"),
            encoding: .utf8
        )

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

        // Binary: re-encoding gives Google's deterministic serialization, which is NAME.binpb itself
        // unless the manifest names NAME.canonical.binpb (duplicates merged, unknown fields last).
        let reencoded = frame.serializedBytes()
        let canonical = try entry.canonical.map {
            try FixtureFiles.bytes(FixtureFiles.valid.appendingPathComponent($0))
        }
        if entry.json_roundtrip {
            #expect(entry.canonical == nil, "\(name): a case whose JSON round-trips is canonical")
        }
        #expect(reencoded == (canonical ?? binary), "re-encoding differs from \(entry.canonical ?? name + ".binpb")")
        if let canonical {
            // The canonical bytes decode to the same Frame and are a fixed point.
            let again = try Frame(serializedBytes: canonical)
            #expect(again == frame)
            #expect(again.serializedBytes() == canonical)
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
