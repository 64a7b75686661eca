import IMCodec
import Testing

/// Frame.min_reader_version: a reader refuses a frame that needs a newer reader, unless asked not to.
@Suite("Schema versions: readers enforce min_reader_version")
struct VersionTests {
    static let text = Message.c2cText(from: "alice", to: "bob", "from the future")

    static func frame(needing version: UInt32) -> Frame {
        Frame.with {
            $0.schemaVersion = version; $0.minReaderVersion = version; $0.payload = .message(text)
        }
    }

    @Test("this library writes and reads schema version 2")
    func current() {
        #expect(Frame.currentSchemaVersion == 2)
        #expect(IMCodecRelease.schemaVersion == 2)
        #expect(Frame(Self.text).schemaVersion == 2)
        #expect(Frame(Self.text).minReaderVersion == 1, "a plain text message needs no version-2 reader")
    }

    @Test("a frame for a newer reader is refused on every decoding path, with both versions named")
    func refused() throws {
        let bytes = Self.frame(needing: 3).serializedBytes()
        func check(_ path: String, _ body: () throws -> Void) {
            do {
                try body()
                Issue.record("\(path) decoded a frame that needs reader version 3")
            } catch let error as IMCodecError {
                #expect(error.code == .unsupportedVersion, "\(path): \(error)")
                #expect(error.reason.contains("schema version 3"), "\(path): \(error.reason)")
                #expect(error.reason.contains("schema version 2"), "\(path): \(error.reason)")
            } catch {
                Issue.record("\(path): \(error)")
            }
        }
        check("Frame(serializedBytes:)") { _ = try Frame(serializedBytes: bytes) }
        check("WireDecoder.decode") { _ = try WireDecoder().decode(Frame.self, from: bytes) }
        check("withFrameView") { try WireDecoder().withFrameView(bytes) { _ in } }
        check("Frame(jsonString:)") { _ = try Frame(jsonString: try Self.frame(needing: 3).jsonString()) }
        check("ProtoJSON from binary") {
            _ = try ProtoJSON.jsonString(fromBinary: bytes, messageType: "imcodec.v1.Frame")
        }
        var stream: [UInt8] = []
        Delimited.append(Self.frame(needing: 3), to: &stream)
        check("Delimited.Reader") {
            var reader = Delimited.Reader<Frame>(stream)
            _ = try reader.next()
        }
        var merged = Frame(Self.text)
        check("merge(serializedBytes:)") { try merged.merge(serializedBytes: bytes) }
        #expect(merged == Frame(Self.text), "a refused merge leaves the value as it was")
    }

    @Test("acceptsNewerFrames decodes it anyway; frames for this reader or older always decode")
    func optIn() throws {
        let newer = Self.frame(needing: 3)
        let bytes = newer.serializedBytes()
        #expect(try Frame(serializedBytes: bytes, options: DecodingOptions(acceptsNewerFrames: true)) == newer)
        var json = JSONDecodingOptions()
        json.acceptsNewerFrames = true
        #expect(try Frame(jsonString: try newer.jsonString(), options: json) == newer)
        for version: UInt32 in [0, 1, 2] {
            #expect(
                try Frame(serializedBytes: Self.frame(needing: version).serializedBytes())
                    == Self.frame(needing: version)
            )
        }
        // Only Frame carries the rule: the same field number in another message type means nothing.
        #expect(try Conversation(serializedBytes: [0x10, 0x03]).targetID == "")
    }
}
