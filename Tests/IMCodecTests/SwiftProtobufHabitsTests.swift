// The swift-protobuf spellings: Data in and out, JSON as UTF-8 Data, debugDescription.
import Foundation
import IMCodec
import Testing

@Suite("swift-protobuf habits")
struct SwiftProtobufHabitsTests {
    static let sample = Frame(
        Message.groupText(from: "alice", group: "team-apollo", "@bob ship it 🚀", atUserIDs: ["bob"])
    )

    @Test func serializedDataHoldsTheCanonicalBytes() throws {
        let data = Self.sample.serializedData()
        #expect([UInt8](data) == Self.sample.serializedBytes())
        #expect(try Frame(serializedData: data) == Self.sample)
        #expect(Frame().serializedData().isEmpty)
    }

    @Test("serializedData: the fixture's bytes decode as serializedBytes does", arguments: FixtureFiles.validNames)
    func serializedDataOfFixture(_ name: String) throws {
        let data = try Data(contentsOf: FixtureFiles.valid.appendingPathComponent(name + ".binpb"))
        let frame = try Frame(serializedData: data)
        // Compared as bytes: a NaN field makes a value unequal to itself.
        #expect(frame.serializedBytes() == (try Frame(serializedBytes: [UInt8](data))).serializedBytes())
        #expect([UInt8](frame.serializedData()) == frame.serializedBytes())
    }

    @Test("init(serializedData:) fails as init(serializedBytes:) does", arguments: FixtureFiles.invalidNames)
    func serializedDataErrors(_ file: String) throws {
        let entry = try #require(FixtureFiles.invalidCases[file])
        let options = try #require(decodingOptions(entry.options))
        let type = try #require(IMCodecSchema.messageType(named: entry.type))
        let data = try Data(contentsOf: FixtureFiles.invalid.appendingPathComponent(file))
        func decode<M: IMCodecMessage>(_ type: M.Type) throws(IMCodecError) {
            _ = try M(serializedData: data, options: options)
        }
        do {
            try decode(type)
            Issue.record("\(file) decoded")
        } catch {
            #expect(error.code == IMCodecError.Code(rawValue: entry.code))
            #expect(error.offset == entry.offset)
        }
    }

    @Test func mergeSerializedDataMergesLikeBytes() throws {
        var a = Self.sample
        var b = Self.sample
        let more = Frame(Message.c2cText(from: "bob", to: "alice", "later")).serializedData()
        try a.merge(serializedData: more)
        try b.merge(serializedBytes: [UInt8](more))
        #expect(a == b)
        guard case .message(let merged)? = a.payload else {
            Issue.record("the merged frame has no message")
            return
        }
        #expect(merged.senderID == "bob")
    }

    @Test func jsonUTF8DataIsTheJSONString() throws {
        var options = JSONEncodingOptions()
        options.prettyPrinted = true
        let data = try Self.sample.jsonUTF8Data(options: options)
        #expect(String(decoding: data, as: UTF8.self) == (try Self.sample.jsonString(options: options)))
        #expect(try Frame(jsonUTF8Data: data) == Self.sample)
        #expect(try Frame(jsonUTF8Data: Self.sample.jsonUTF8Data()) == Self.sample)
    }

    @Test("jsonUTF8Data: each fixture's JSON reads as the string does", arguments: FixtureFiles.validNames)
    func jsonUTF8DataOfFixture(_ name: String) throws {
        let data = try Data(contentsOf: FixtureFiles.valid.appendingPathComponent(name + ".json"))
        let fromString = try Frame(jsonString: String(decoding: data, as: UTF8.self))
        #expect(try Frame(jsonUTF8Data: data).serializedBytes() == fromString.serializedBytes())
    }

    @Test func jsonUTF8DataErrorsCarryTheSameOffsets() {
        let text = #"{"message": {"seq": "x"}}"#
        var fromString: IMCodecError?
        var fromData: IMCodecError?
        do { _ = try Frame(jsonString: text) } catch { fromString = error }
        do { _ = try Frame(jsonUTF8Data: Data(text.utf8)) } catch { fromData = error }
        #expect(fromString?.code == .invalidJSON)
        #expect(fromData?.code == .invalidJSON)
        #expect(fromData?.offset == fromString?.offset)
        #expect(fromData?.offset == 20)
    }

    @Test(
        arguments: [[0xFF], [0xC3], [0xED, 0xA0, 0x80], [0xF4, 0x90, 0x80, 0x80], [0xE4, 0xBD], [0xC0, 0xAF]]
            as [[UInt8]]
    )
    func jsonUTF8DataRefusesInvalidUTF8(bad: [UInt8]) {
        // {"message": {"clientMsgId": "ab<bad>"}}: the error points at the first bad byte.
        let prefix = Array(#"{"message": {"clientMsgId": "ab"#.utf8)
        let data = Data(prefix + bad + Array(#""}}"#.utf8))
        do {
            _ = try Frame(jsonUTF8Data: data)
            Issue.record("decoded invalid UTF-8")
        } catch {
            #expect(error.code == .invalidUTF8)
            #expect(error.offset == prefix.count)
        }
    }

    @Test func debugDescriptionIsTextFormat() {
        let frame = Self.sample
        #expect(frame.debugDescription == "IMCodec.Frame:\n" + frame.textFormatString())
        #expect(String(describing: frame) == frame.debugDescription)
        #expect("\(frame)" == frame.debugDescription)
        var printed = ""
        debugPrint(frame, terminator: "", to: &printed)
        #expect(printed == frame.debugDescription)
        #expect(!printed.contains("UnknownFields"))
        #expect(printed.contains("sender_id: \"alice\""))
        #expect(Frame().debugDescription == "IMCodec.Frame:\n")
        #expect(TextElement.with { $0.text = "hi" }.debugDescription == "IMCodec.TextElement:\ntext: \"hi\"\n")
    }

    @Test func debugDescriptionShowsUnknownFieldsByNumber() throws {
        let binary = try FixtureFiles.bytes(
            FixtureFiles.valid.appendingPathComponent("unknown_fields_future_message.binpb")
        )
        let frame = try Frame(serializedBytes: binary)
        #expect(!frame.unknownFields.isEmpty)
        #expect(frame.debugDescription.hasSuffix("4: 0xdeadbeef\n6: \"4bf92f3577b34da6a3ce929d0e0e4736\"\n"))
        #expect(
            String(describing: frame.unknownFields)
                == "UnknownFields:\n4: 0xdeadbeef\n6: \"4bf92f3577b34da6a3ce929d0e0e4736\"\n"
        )
        #expect(String(describing: Frame().unknownFields) == "UnknownFields()")
    }
}
