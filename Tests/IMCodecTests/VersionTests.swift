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

    @Test("this library writes and reads schema version 3")
    func current() {
        #expect(Frame.currentSchemaVersion == 3)
        #expect(IMCodecRelease.schemaVersion == 3)
        #expect(Frame(Self.text).schemaVersion == 3)
        #expect(Frame(Self.text).minReaderVersion == 1, "a plain text message needs no newer reader")
    }

    /// A message in a merger, as it would be forwarded.
    static func forwarded(_ message: Message) -> Message {
        Message.merger(from: "alice", in: .oneToOne("bob"), title: "t", messages: [message])
    }

    @Test(
        "min_reader_version 3 for content a version-2 reader would show wrongly: encrypted elements, encrypted media, spoilers",
        arguments: [
            MessageElement.with { $0.content = .encrypted(EncryptedElement.with { $0.ciphertext = [1] }) },
            MessageElement.with { $0.content = .image(ImageElement.with { $0.mediaKey = MediaKey() }) },
            MessageElement.with { $0.content = .video(VideoElement.with { $0.mediaKey = MediaKey() }) },
            MessageElement.with { $0.content = .sound(SoundElement.with { $0.mediaKey = MediaKey() }) },
            MessageElement.with { $0.content = .file(FileElement.with { $0.mediaKey = MediaKey() }) },
            MessageElement.with {
                $0.content = .text(
                    TextElement.with {
                        $0.text = "it was a typo"
                        $0.styles = [
                            StyleRange.with {
                                $0.offset = 7; $0.length = 6; $0.style = .spoiler
                            }
                        ]
                    }
                )
            },
        ]
    )
    func version3Content(_ element: MessageElement) {
        var message = Self.text
        message.elements = [element]
        #expect(Frame(message).minReaderVersion == 3)
        #expect(Frame(Self.forwarded(message)).minReaderVersion == 3, "inside a merger too")
        var edit = EditEvent()
        edit.newMessage = message
        #expect(Frame(.edit(edit)).minReaderVersion == 3)
        // Content an old reader may ignore safely keeps version 1: a caption, a bold range, a sticker.
        var plain = Self.text
        plain.elements = [
            .with {
                $0.content = .text(
                    .with {
                        $0.text = "hi";
                        $0.styles = [
                            .with {
                                $0.offset = 0; $0.length = 2; $0.style = .bold
                            }
                        ]
                    }
                )
            }
        ]
        #expect(Frame(plain).minReaderVersion == 1)
        plain.elements = [.with { $0.content = .image(.with { $0.caption = "sunset" }) }]
        #expect(Frame(plain).minReaderVersion == 1)
        plain.viewOnce = true
        #expect(Frame(plain).minReaderVersion == 2)
    }

    @Test("a frame for a newer reader is refused on every decoding path, with both versions named")
    func refused() throws {
        let bytes = Self.frame(needing: 4).serializedBytes()
        func check(_ path: String, _ body: () throws -> Void) {
            do {
                try body()
                Issue.record("\(path) decoded a frame that needs reader version 4")
            } catch let error as IMCodecError {
                #expect(error.code == .unsupportedVersion, "\(path): \(error)")
                #expect(error.reason.contains("schema version 4"), "\(path): \(error.reason)")
                #expect(error.reason.contains("schema version 3"), "\(path): \(error.reason)")
            } catch {
                Issue.record("\(path): \(error)")
            }
        }
        check("Frame(serializedBytes:)") { _ = try Frame(serializedBytes: bytes) }
        check("WireDecoder.decode") { _ = try WireDecoder().decode(Frame.self, from: bytes) }
        check("withFrameView") { try WireDecoder().withFrameView(bytes) { _ in } }
        check("Frame(jsonString:)") { _ = try Frame(jsonString: try Self.frame(needing: 4).jsonString()) }
        check("ProtoJSON from binary") {
            _ = try ProtoJSON.jsonString(fromBinary: bytes, messageType: "imcodec.v1.Frame")
        }
        var stream: [UInt8] = []
        Delimited.append(Self.frame(needing: 4), to: &stream)
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
        let newer = Self.frame(needing: 4)
        let bytes = newer.serializedBytes()
        #expect(try Frame(serializedBytes: bytes, options: DecodingOptions(acceptsNewerFrames: true)) == newer)
        var json = JSONDecodingOptions()
        json.acceptsNewerFrames = true
        #expect(try Frame(jsonString: try newer.jsonString(), options: json) == newer)
        for version: UInt32 in [0, 1, 2, 3] {
            #expect(
                try Frame(serializedBytes: Self.frame(needing: version).serializedBytes())
                    == Self.frame(needing: version)
            )
        }
        // Only Frame carries the rule: the same field number in another message type means nothing.
        #expect(try Conversation(serializedBytes: [0x10, 0x03]).targetID == "")
    }
}
