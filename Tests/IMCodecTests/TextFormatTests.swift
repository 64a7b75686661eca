// Protobuf text format (textFormatString / init(textFormatString:)) against Google's protoc.
//
// Every valid fixture: textFormatString() of the decoded Frame equals `protoc --decode` of its
// bytes exactly, and Frame(textFormatString:) of protoc's text re-encodes to what
// `protoc --encode --deterministic_output` makes of the same text. Two kinds of fixture are
// handled differently, explicitly and with their own checks (never skipped):
// - merger_nested_100_layers (304 levels): protoc --decode refuses it (Google's C++ parser stops at
//   100 levels below the top). The test requires that refusal, and checks IMCodec's text with
//   protoc's text parser instead (which has no depth limit): protoc --encode of it gives the
//   fixture's canonical bytes.
// - system_notice_twice (a map key in both occurrences of a merged sub-message): protoc --decode
//   prints both entries for the key, because protoc's DynamicMessage keeps every map entry it
//   parses (it logs "map keys are not unique" when it encodes them). Protobuf keeps the last value
//   per key, as Google's generated code and upb do (the fixture's canonical bytes, made by upb, hold
//   one entry). The test requires protoc's duplicate, and compares IMCodec's text with protoc
//   --decode of the canonical bytes, and the Frame read from protoc's text with the canonical bytes.
// - fixtures with unknown fields: protoc prints them by number (`23: 5`), which no Google text
//   parser reads back. The test requires protoc --encode and IMCodec to refuse that text alike, and
//   the text printed without unknown fields to round-trip through both.
import Foundation
import IMCodec
import IMCodecTestSupport
import Testing

@Suite("Text format")
struct TextFormatTests {
    /// Fixtures protoc --decode cannot read (see the file header).
    static let deeperThanGoogle: Set<String> = ["merger_nested_100_layers"]
    /// Fixtures where protoc --decode prints a map key twice (see the file header).
    static let protocKeepsDuplicateMapKeys: Set<String> = ["system_notice_twice"]

    @Test(
        "fixture: textFormatString() is protoc --decode's text; protoc's text reads as protoc --encode reads it",
        arguments: FixtureFiles.validNames
    )
    func fixtureMatchesProtoc(_ name: String) throws {
        let entry = try #require(FixtureFiles.validCases[name])
        let binary = try FixtureFiles.bytes(FixtureFiles.valid.appendingPathComponent(name + ".binpb"))
        let frame = try Frame(serializedBytes: binary)
        let text = frame.textFormatString()
        var withoutUnknown = TextFormatEncodingOptions()
        withoutUnknown.printUnknownFields = false
        let knownText = frame.textFormatString(options: withoutUnknown)
        let canonical =
            try entry.canonical.map {
                try FixtureFiles.bytes(FixtureFiles.valid.appendingPathComponent($0))
            } ?? binary

        if Self.deeperThanGoogle.contains(name) {
            #expect(throws: Protoc.Failure.self, "protoc --decode now reads \(name); compare it like the others") {
                try Protoc.decode(binary)
            }
            #expect(try Protoc.encode(text: Array(text.utf8)) == canonical, "protoc --encode of IMCodec's text")
            #expect(try Frame(textFormatString: text).serializedBytes() == frame.serializedBytes())
            return
        }

        let google = try Protoc.decode(binary)
        if entry.canonical != nil {
            #expect(text == (try Protoc.decode(canonical)), "\(name): differs from protoc --decode of canonical bytes")
        }
        if Self.protocKeepsDuplicateMapKeys.contains(name) {
            #expect(text != google, "protoc --decode now merges map entries of \(name); compare it like the others")
            #expect(try Frame(textFormatString: google).serializedBytes() == canonical)
            return
        }
        #expect(text == google, "\(name): textFormatString() differs from protoc --decode")

        let hasUnknown = text != knownText
        let protocBytes = Result { try Protoc.encode(text: Array(google.utf8)) }
        if hasUnknown {
            // protoc cannot read its own unknown-field lines; neither does IMCodec.
            #expect(throws: Protoc.Failure.self) { try protocBytes.get() }
            #expect(throws: IMCodecError.self) { try Frame(textFormatString: google) }
            do {
                _ = try Frame(textFormatString: google)
            } catch {
                #expect(error.code == .invalidTextFormat)
            }
            let known = try Protoc.encode(text: Array(knownText.utf8))
            #expect(try Frame(textFormatString: knownText).serializedBytes() == known)
        } else {
            let expected = try protocBytes.get()
            let parsed = try Frame(textFormatString: google)
            #expect(parsed.serializedBytes() == expected, "\(name): differs from protoc --encode")
            #expect(parsed.serializedBytes() == frame.serializedBytes())  // bytes: NaN != NaN
        }
    }

    @Test(
        "hand-written fixture text (imcodec.v1.Frame) reads as protoc --encode read it",
        arguments: FixtureFiles.validNames
    )
    func handWrittenText(_ name: String) throws {
        let source = try String(contentsOf: FixtureFiles.valid.appendingPathComponent(name + ".txtpb"), encoding: .utf8)
        let binary = try FixtureFiles.bytes(FixtureFiles.valid.appendingPathComponent(name + ".binpb"))
        guard source.contains("# proto-message: imcodec.v1.Frame\n") else {
            // Written for a message type of Fixtures/schemas/future.proto (unknown fields,
            // duplicated fields), whose names imcodec.v1.Frame does not all have.
            #expect(source.contains("# proto-message: imcodec.future."), "\(name): which message type is it?")
            return
        }
        let frame = try Frame(textFormatString: source)
        #expect(frame.serializedBytes() == (try Frame(serializedBytes: binary)).serializedBytes())
        #expect(frame.serializedBytes() == binary)
    }

    @Test func printsEmptyMessageAsEmptyText() {
        #expect(Frame().textFormatString() == "")
        #expect((try? Frame(textFormatString: "")) == Frame())
        #expect((try? Frame(textFormatString: "  # only a comment\n")) == Frame())
    }

    // MARK: Syntax protoc accepts

    /// Text using every syntax form Google's parser accepts; IMCodec must encode it as protoc does.
    static let syntaxForms: [String] = [
        // < > and { }, optional colon before a message, ; and , separators, comments.
        "schema_version: 1; min_reader_version: 0x2, # hex\nmessage: < client_msg_id: 'single' seq: 017 >",
        // Repeated fields as a list, messages too; an empty list.
        "message { target_receivers: [\"a\", 'b'] elements: [{text {text: \"x\"}}, <face <index: -3>>] }",
        "message { target_receivers: [] target_receivers: \"c\" }",
        // Adjacent strings concatenated; every escape.
        #"message { client_msg_id: "a" 'b' "c" "#
            + #"sender_id: "\a\b\f\n\r\t\v\\\?\'\"\101\x41\u00e9\U0001F600\uD83D\uDE00" }"#,
        // Bytes: octal, hex and raw escapes.
        #"message { cloud_custom_data: "\000\377\x7f\xFF\1\12" }"#,
        // Enums by name and number; booleans in every spelling.
        "message { priority: 2 status: MESSAGE_STATUS_SENT storage_policy: -5 at { at_all: t } "
            + "offline_push { disabled: True } }",
        "message { at { at_all: 1 } offline_push { disabled: False } }",
        // Doubles: integers, exponents, f suffix, inf, nan, negative zero.
        "message { elements { location { longitude: -0 latitude: 1e-300 } } "
            + "elements { location { longitude: -inf latitude: Infinity } } "
            + "elements { location { longitude: 1.5f latitude: .25 } } elements { location { longitude: NaN } } }",
        // Integer limits.
        "message { seq: 18446744073709551615 client_time_ms: -9223372036854775808 "
            + "server_time_ms: 9223372036854775807 }",
        // Map entries: value before key, an entry without value, entries in a list.
        "message { custom_params { value: \"2\" key: \"k\" } "
            + "custom_params { key: \"only key\" } custom_params: [{key: \"l\" value: \"x\"}] }",
    ]

    @Test func mapKeyGivenTwiceKeepsTheLastValue() throws {
        // protoc --encode would write both entries (its DynamicMessage keeps every entry it parses,
        // and logs "map keys are not unique"); every protobuf parser then keeps the last value.
        let text = "message { custom_params { key: \"k\" value: \"1\" } custom_params { key: \"k\" value: \"2\" } }"
        let frame = try Frame(textFormatString: text)
        let protocBytes = try Protoc.encode(text: Array(text.utf8))
        #expect(frame.serializedBytes() == (try Frame(serializedBytes: protocBytes)).serializedBytes())
        guard case .message(let message)? = frame.payload else {
            Issue.record("no message in \(frame)")
            return
        }
        #expect(message.customParams == ["k": "2"])
    }

    @Test("syntax forms read as protoc --encode reads them", arguments: syntaxForms)
    func syntaxForm(_ text: String) throws {
        let expected = try Protoc.encode(text: Array(text.utf8))
        #expect(try Frame(textFormatString: text).serializedBytes() == expected)
    }

    // MARK: Hostile and bad input

    struct BadText: CustomStringConvertible, Sendable {
        let text: String
        let code: IMCodecError.Code
        let offset: Int
        /// Where the reason must say the problem is.
        let position: String
        var description: String { "\(code) at \(offset): \(text.prefix(60))" }
    }

    static func bad(
        _ text: String,
        _ offset: Int,
        _ position: String,
        _ code: IMCodecError.Code = .invalidTextFormat
    ) -> BadText {
        BadText(text: text, code: code, offset: offset, position: position)
    }

    static let badTexts: [BadText] = [
        bad("message {", 9, "line 1, column 10"),
        bad("message { client_msg_id: \"abc", 25, "line 1, column 26"),
        bad("message {\n  client_msg_id: \"a\nb\" }", 27, "line 2, column 18"),
        bad(#"message { client_msg_id: "ab\qc" }"#, 28, "column 29"),
        bad(#"message { client_msg_id: "\x" }"#, 26, "column 27"),
        bad(#"message { client_msg_id: "\u12" }"#, 26, "column 27"),
        bad(#"message { client_msg_id: "\uD800" }"#, 26, "column 27"),
        bad(#"message { client_msg_id: "\U00110000" }"#, 26, "column 27"),
        bad(#"message { client_msg_id: "ok" "\377" }"#, 25, "column 26", .invalidUTF8),
        bad("schema_version: 1\n  bogus: 2", 20, "line 2, column 3"),
        bad("schema_version: 1 schema_version: 2", 18, "column 19"),
        bad("message { } recall { }", 12, "column 13"),
        bad("message { } message { }", 12, "column 13"),
        bad("schema_version 1", 15, "column 16"),
        bad("schema_version: 4294967296", 16, "column 17"),
        bad("schema_version: -1", 16, "column 17"),
        bad("schema_version: 1.5", 16, "column 17"),
        bad("message { priority: PRIORITY_URGENT }", 20, "column 21"),
        bad("message { priority: 2147483648 }", 20, "column 21"),
        bad("message { conversation < }", 25, "column 26"),
        bad("message { conversation: 1 }", 24, "column 25"),
        bad("message }", 8, "column 9"),
        bad("23: 5", 0, "line 1, column 1"),
        bad("[imcodec.v1.ext]: 1", 0, "column 1"),
        bad("message { target_receivers: [\"a\" \"b\", ] }", 38, "column 39"),
        bad("message { at { at_all: yes } }", 23, "column 24"),
        // Columns count Unicode scalars, offsets bytes.
        bad("message { client_msg_id: \"你好\" 错 }", 34, "column 31"),
    ]

    @Test("bad text fails with its code, byte offset and line:column", arguments: badTexts)
    func badText(_ bad: BadText) {
        do {
            let frame = try Frame(textFormatString: bad.text)
            Issue.record("decoded \(frame), expected \(bad.code)")
        } catch {
            #expect(error.code == bad.code, "\(error)")
            #expect(error.offset == bad.offset, "\(error)")
            #expect(error.reason.contains(bad.position), "\(error)")
        }
    }

    @Test func depthBombFailsAtTheFirstLevelTooDeep() {
        // 100,000 nested messages: refused by the depth pass, at the brace that opens level 321.
        let text = String(repeating: "message { elements { merger { messages { ", count: 25_000)
        do {
            _ = try Frame(textFormatString: text)
            Issue.record("decoded a 100,000-level text")
        } catch {
            #expect(error.code == .tooDeep)
            // Level 1 is the Frame; the n-th "{" opens level n + 1, so level 321 is the 320th brace.
            let braces = text.utf8.enumerated().filter { $0.element == UInt8(ascii: "{") }.map(\.offset)
            #expect(error.offset == braces[319])
        }
    }

    @Test(
        "truncations and single-byte mutations of protoc's text decode or fail with an offset in the text",
        arguments: ["text_emoji_cjk", "chain_text_image_text"]
    )
    func mutatedTextFailsCleanly(_ name: String) throws {
        let binary = try FixtureFiles.bytes(FixtureFiles.valid.appendingPathComponent(name + ".binpb"))
        let text = Array(try Protoc.decode(binary).utf8)
        let allowed: Set<IMCodecError.Code> = [.invalidTextFormat, .invalidUTF8]
        func check(_ bytes: [UInt8]) {
            let candidate = String(decoding: bytes, as: UTF8.self)
            do {
                let frame = try Frame(textFormatString: candidate)
                // Whatever decodes prints to text that reads back to the same value.
                let again = try Frame(textFormatString: frame.textFormatString())
                #expect(again.serializedBytes() == frame.serializedBytes())
            } catch {
                #expect(allowed.contains(error.code), "\(error)")
                #expect((0...candidate.utf8.count).contains(error.offset ?? -1), "\(error)")
            }
        }
        for end in 0..<text.count { check(Array(text[..<end])) }
        for position in stride(from: 0, to: text.count, by: 2) {  // every other byte: a debug build is slow
            for byte in "{}<[:\"\\#-a".utf8 where byte != text[position] {
                var mutated = text
                mutated[position] = byte
                check(mutated)
            }
        }
    }

    @Test func maxDepthCountsTheTopLevel() throws {
        var options = TextFormatDecodingOptions()
        options.maxDepth = 3
        let three = "message { conversation { target_id: \"g\" } }"
        let frame = try Frame(textFormatString: three, options: options)
        guard case .message(let message)? = frame.payload else {
            Issue.record("no message in \(frame)")
            return
        }
        #expect(message.conversation?.targetID == "g")
        let four = "message { quote { conversation { } } }"
        do {
            _ = try Frame(textFormatString: four, options: options)
            Issue.record("decoded 4 levels with maxDepth 3")
        } catch {
            #expect(error.code == .tooDeep)
            #expect(error.offset == 31)
        }
    }

    @Test func textOverMaxInputSizeIsRefused() {
        var options = TextFormatDecodingOptions()
        options.maxInputSize = 16
        do {
            _ = try Frame(textFormatString: "schema_version: 1 min_reader_version: 1", options: options)
            Issue.record("decoded text over maxInputSize")
        } catch {
            #expect(error.code == .tooLarge)
        }
        #expect((try? Frame(textFormatString: "schema_version: 1", options: options)) == nil)
        #expect((try? Frame(textFormatString: "schema_version:1", options: options))?.schemaVersion == 1)
    }

    @Test func randomFramesRoundTripThroughText() throws {
        var random = RandomMessages(seed: 12)
        for _ in 0..<200 {
            let frame = random.frame()
            let text = frame.textFormatString()
            #expect(try Frame(textFormatString: text).serializedBytes() == frame.serializedBytes(), "\(text)")
        }
    }

    @Test func randomFramesPrintAsProtocDecodes() throws {
        var random = RandomMessages(seed: 7)
        for _ in 0..<20 {
            let frame = random.frame()
            #expect(frame.textFormatString() == (try Protoc.decode(frame.serializedBytes())))
        }
    }

    /// Unknown field 99 (length-delimited) holding `payload`: protoc prints it as a nested block when
    /// the payload parses as protobuf fields (groups included, 10 levels at most), else as a string.
    static let unknownPayloads: [[UInt8]] =
        [
            [],  // empty: a string
            Array("hello".utf8),  // not fields: a string
            [0x08, 0x01],  // field 1 = 1
            [0x0D, 1, 2, 3, 4, 0x11, 1, 2, 3, 4, 5, 6, 7, 8],  // fixed32, fixed64
            [0x08, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01],  // a 10-byte varint
            [0x0B, 0x10, 0x05, 0x0C],  // group 1 { 2: 5 }
            [0x0B, 0x13, 0x18, 0x07, 0x14, 0x0C],  // nested groups
            [0x0B, 0x14],  // group closed by another number
            [0x0C],  // a stray end-group tag
            [0x00, 0x01],  // field number 0
            [0x0E, 0x01],  // wire type 6
            [0x12, 0x03, 0x08, 0x01],  // length past the end
            [0x12, 0x02, 0x08, 0x96],  // a truncated varint inside
        ]
        + (8...13).map { levels in  // nesting around the recursion budget
            var payload: [UInt8] = [0x08, 0x01]
            for _ in 0..<levels { payload = [0x0A, UInt8(payload.count)] + payload }
            return payload
        }

    @Test("unknown fields print as protoc --decode prints them", arguments: unknownPayloads)
    func unknownFieldsPrintAsProtoc(_ payload: [UInt8]) throws {
        // schema_version = 1, then unknown fields 96 (fixed32), 97 (fixed64), 98 (varint), 99 (payload).
        var bytes: [UInt8] = [0x08, 0x01]
        bytes += [0x85, 0x06, 0x78, 0x56, 0x34, 0x12]
        bytes += [0x89, 0x06, 1, 0, 0, 0, 0, 0, 0, 0x80]
        bytes += [0x90, 0x06] + [UInt8](repeating: 0xFF, count: 9) + [0x01]
        bytes += [0x9A, 0x06, UInt8(payload.count)] + payload
        let frame = try Frame(serializedBytes: bytes)
        #expect(frame.textFormatString() == (try Protoc.decode(bytes)))
        var options = TextFormatEncodingOptions()
        options.printUnknownFields = false
        #expect(frame.textFormatString(options: options) == "schema_version: 1\n")
    }

    @Test func printsEveryMessageTypeAsProtocDecodes() throws {
        // A message other than Frame: the type comes from the value, the text from its descriptor.
        let message = Message.groupText(from: "alice", group: "team", "hi ü", atUserIDs: ["bob"])
        let google = try Protoc.decode(message.serializedBytes(), type: "imcodec.v1.Message")
        #expect(message.textFormatString() == google)
        #expect(try Message(textFormatString: google) == message)
    }
}
