import Foundation
import IMCodec
import IMCodecTestSupport
import Testing

@Suite("Round trips and canonical bytes")
struct RoundTripTests {
    @Test("every payload and element kind round-trips", arguments: Samples.frames.keys.sorted())
    func sampleRoundTrips(name: String) throws {
        let frame = try #require(Samples.frames[name])
        let bytes = frame.serializedBytes()
        #expect(try Frame(serializedBytes: bytes) == frame)
    }

    @Test("sample frames encode exactly as Google's deterministic serializer does")
    func samplesMatchProtoc() throws {
        for name in Samples.frames.keys.sorted() {
            let bytes = Samples.frames[name]!.serializedBytes()
            #expect(try Protoc.reencode(bytes) == bytes, "\(name)")
        }
    }

    @Test("1,000 seeded random messages round-trip and match protoc byte for byte")
    func randomMessages() throws {
        var random = RandomMessages(seed: 0x1AC0DEC)
        var messages: [Message] = []
        for _ in 0..<1_000 {
            let message = random.message()
            let frame = Frame(message)
            let bytes = frame.serializedBytes()
            let back = try Frame(serializedBytes: bytes)
            // NaN is never equal to itself; compare through the bytes then.
            #expect(back == frame || back.serializedBytes() == bytes)
            messages.append(message)
        }
        // One protoc run over all of them: a history page holding the 1,000 messages.
        for chunk in stride(from: 0, to: messages.count, by: 250) {
            let page = Frame(
                .historyResponse(HistoryResponse.with { $0.messages = Array(messages[chunk..<chunk + 250]) })
            )
            let bytes = page.serializedBytes()
            #expect(try Protoc.reencode(bytes) == bytes)
        }
    }

    @Test("map entries are sorted by the UTF-8 bytes of their keys, with empty keys and values written")
    func mapOrder() throws {
        var message = Message()
        message.customParams = ["é": "1", "B": "", "a": "3", "": "4", "ab": "5", "_x": "6"]
        let bytes = Frame(message).serializedBytes()
        #expect(try Protoc.reencode(bytes) == bytes)
        let text = try Protoc.run(["--decode=imcodec.v1.Frame", "imcodec/v1/frame.proto"], input: bytes)
        let keys = String(decoding: text, as: UTF8.self).split(separator: "\n").filter { $0.contains("key:") }
        #expect(
            keys.map { $0.trimmingCharacters(in: .whitespaces) } == [
                "key: \"\"", "key: \"B\"", "key: \"_x\"", "key: \"a\"", "key: \"ab\"", "key: \"\\303\\251\"",
            ]
        )
    }

    @Test("-0.0, infinities and NaN keep their bit patterns")
    func floatingPointBits() throws {
        for value in [-0.0, .infinity, -.infinity, .nan, .leastNonzeroMagnitude] {
            // (Text format, which the protoc check goes through, has no negative NaN.)
            let other = value.isNaN ? value : -value
            let element = MessageElement.location(latitude: value, longitude: other)
            let bytes = element.serializedBytes()
            let back = try MessageElement(serializedBytes: bytes)
            guard case .location(let location)? = back.content else {
                Issue.record("not a location")
                continue
            }
            #expect(location.latitude.bitPattern == value.bitPattern)
            #expect(location.longitude.bitPattern == other.bitPattern)
            #expect(try Protoc.reencode(bytes, type: "imcodec.v1.MessageElement") == bytes)
        }
    }

    @Test("embedded NUL, CJK and emoji survive in string fields")
    func edgeStrings() throws {
        let text = "a\u{0}b 中文 🙂\u{0}"
        let frame = Frame(Message.c2cText(from: "x\u{0}y", to: "bob", text))
        let back = try Frame(serializedBytes: frame.serializedBytes())
        guard case .message(let message)? = back.payload, case .text(let element)? = message.elements.first?.content
        else {
            Issue.record("payload lost")
            return
        }
        #expect(element.text == text)
        #expect(element.text.utf8.count == text.utf8.count)
        #expect(message.senderID == "x\u{0}y")
    }

    @Test("unknown enum numbers survive a round trip")
    func unknownEnumNumbers() throws {
        var message = Message()
        message.priority = .unrecognized(99)
        message.status = .unrecognized(-5)
        message.conversation = Conversation.with { $0.type = .unrecognized(Int32.max) }
        let back = try Message(serializedBytes: message.serializedBytes())
        #expect(back.priority == .unrecognized(99))
        #expect(back.status.rawValue == -5)
        #expect(back.conversation?.type.rawValue == Int32.max)
        #expect(Priority(rawValue: 1) == .high)
    }

    @Test("unknown fields are kept and written back after the known ones")
    func unknownFields() throws {
        // Frame{schema_version: 1, field 99: varint 150, field 100: "hi", field 101: fixed32, field 102: fixed64}
        let bytes: [UInt8] = [
            0x08, 0x01, 0x98, 0x06, 0x96, 0x01, 0xA2, 0x06, 0x02, 0x68, 0x69,
            0xAD, 0x06, 1, 2, 3, 4, 0xB1, 0x06, 1, 2, 3, 4, 5, 6, 7, 8,
        ]
        let frame = try Frame(serializedBytes: bytes)
        #expect(frame.schemaVersion == 1)
        #expect(frame.unknownFields.bytes == Array(bytes[2...]))
        #expect(frame.serializedBytes() == bytes)
        // Unknown fields inside a nested message too.
        let nested: [UInt8] = [0x52, 0x06, 0x0A, 0x01, 0x63, 0xF8, 0x07, 0x01] + [0x08, 0x02]
        let decoded = try Frame(serializedBytes: nested)
        guard case .message(let message)? = decoded.payload else {
            Issue.record("no message")
            return
        }
        #expect(message.unknownFields.bytes == [0xF8, 0x07, 0x01])
        #expect(decoded.serializedBytes() == [0x08, 0x02, 0x52, 0x06, 0x0A, 0x01, 0x63, 0xF8, 0x07, 0x01])
    }

    @Test("a repeated scalar or string keeps its last value; repeated fields concatenate")
    func lastOneWins() throws {
        // Frame{schema_version: 1, schema_version: 2, message{client_msg_id: "a", client_msg_id: "b",
        //       target_receivers: "x", target_receivers: "y"}}
        let bytes: [UInt8] = [
            0x08, 0x01, 0x08, 0x02, 0x52, 0x0C, 0x0A, 0x01, 0x61, 0x0A, 0x01, 0x62,
            0x62, 0x01, 0x78, 0x62, 0x01, 0x79,
        ]
        let frame = try Frame(serializedBytes: bytes)
        #expect(frame.schemaVersion == 2)
        guard case .message(let message)? = frame.payload else {
            Issue.record("no message")
            return
        }
        #expect(message.clientMsgID == "b")
        #expect(message.targetReceivers == ["x", "y"])
    }

    @Test("the empty input is an empty frame")
    func emptyInput() throws {
        #expect(try Frame(serializedBytes: [UInt8]()) == Frame())
        #expect(Frame().serializedBytes().isEmpty)
    }

    @Test("decoding accepts any collection of bytes")
    func collections() throws {
        let bytes = Samples.frames["message-text"]!.serializedBytes()
        #expect(try Frame(serializedBytes: Data(bytes)) == Samples.frames["message-text"])
        #expect(try Frame(serializedBytes: bytes[...]) == Samples.frames["message-text"])
        #expect(try Frame(serializedBytes: AnySequenceCollection(bytes)) == Samples.frames["message-text"])
    }
}

/// A collection without contiguous storage, to exercise the copying path.
struct AnySequenceCollection: Collection {
    let base: [UInt8]
    init(_ base: [UInt8]) { self.base = base }
    var startIndex: Int { 0 }
    var endIndex: Int { base.count }
    subscript(i: Int) -> UInt8 { base[i] }
    func index(after i: Int) -> Int { i + 1 }
}
