// Canonical proto3 JSON: printing (IMCodecMessage.jsonString), parsing (init(jsonString:)) and the
// by-name entry points (ProtoJSON). Expected texts are what Python's json_format (protobuf 4.21)
// prints for the same messages; see Sources/IMCodec/JSON/ and Sources/IMCodec/Schema/.
import IMCodec
import IMCodecTestSupport
import Testing

// MARK: - Helpers (file-private)

private func compact<M: IMCodecMessage>(_ message: M) throws -> String {
    try message.jsonString()
}

private func pretty<M: IMCodecMessage>(_ message: M) throws -> String {
    var options = JSONEncodingOptions()
    options.prettyPrinted = true
    return try message.jsonString(options: options)
}

/// The error `body` throws, or nil when it succeeds.
private func jsonError(_ body: () throws(IMCodecError) -> Void) -> IMCodecError? {
    do {
        try body()
        return nil
    } catch {
        return error
    }
}

/// Parses `json` as `M` and returns the error (nil when parsing succeeds).
private func parseError<M: IMCodecMessage>(
    _ type: M.Type,
    _ json: String,
    _ options: JSONDecodingOptions = JSONDecodingOptions()
) -> IMCodecError? {
    jsonError { () throws(IMCodecError) in _ = try M(jsonString: json, options: options) }
}

private func location(longitude: Double) -> LocationElement {
    LocationElement.with { $0.longitude = longitude }
}

private func message(_ json: String) throws -> Message {
    try Message(jsonString: json)
}

// MARK: - Printing

@Suite("JSON printing")
struct JSONPrintingTests {
    @Test func defaultValuesAreLeftOut() throws {
        #expect(try compact(Frame()) == "{}")
        #expect(try pretty(Frame()) == "{}")
        let defaults = Message.with {
            $0.seq = 0
            $0.senderID = ""
            $0.priority = .unspecified
            $0.cloudCustomData = []
            $0.customParams = [:]
            $0.targetReceivers = []
        }
        #expect(try compact(defaults) == "{}")
        #expect(
            try compact(
                LocationElement.with {
                    $0.longitude = 0; $0.latitude = 0
                }
            ) == "{}"
        )
        #expect(try compact(AtInfo.with { $0.atAll = false }) == "{}")
    }

    @Test func fieldsComeInFieldNumberOrderUnderTheirJsonNames() throws {
        let value = Message.with {
            $0.senderNickname = "Li Lei"  // 22
            $0.senderID = "u1"  // 5
            $0.clientMsgID = "c1"  // 1
            $0.random = 7  // 4
            $0.editVersion = 2  // 21
        }
        #expect(
            try compact(value)
                == #"{"clientMsgId":"c1","random":7,"senderId":"u1","editVersion":2,"senderNickname":"Li Lei"}"#
        )
        let frame = Frame.with { $0.payload = .c2cReadReceipt(C2CReadReceipt.with { $0.userID = "p" }) }
        #expect(try compact(frame) == #"{"c2cReadReceipt":{"userId":"p"}}"#)
    }

    @Test func preserveProtoFieldNamesPrintsSchemaNames() throws {
        var options = JSONEncodingOptions()
        options.preserveProtoFieldNames = true
        let frame = Frame.with {
            $0.minReaderVersion = 1
            $0.payload = .c2cReadReceipt(
                C2CReadReceipt.with {
                    $0.userID = "p"; $0.readTimeMs = 5
                }
            )
        }
        #expect(
            try frame.jsonString(options: options)
                == #"{"min_reader_version":1,"c2c_read_receipt":{"user_id":"p","read_time_ms":"5"}}"#
        )
    }

    @Test func sixtyFourBitIntegersAreStringsAndThirtyTwoBitIntegersAreNumbers() throws {
        let ref = MessageRef.with {
            $0.seq = .max; $0.serverTimeMs = .min
        }
        #expect(try compact(ref) == #"{"seq":"18446744073709551615","serverTimeMs":"-9223372036854775808"}"#)
        let frame = Frame.with { $0.schemaVersion = .max }
        #expect(try compact(frame) == #"{"schemaVersion":4294967295}"#)
        #expect(try compact(FaceElement.with { $0.index = -2_147_483_648 }) == #"{"index":-2147483648}"#)
        #expect(try compact(FaceElement.with { $0.index = -1 }) == #"{"index":-1}"#)
    }

    @Test(
        "doubles print as Python's repr",
        arguments: [
            (-0.0, "-0.0"), (1.0, "1.0"), (-1.0, "-1.0"), (0.1, "0.1"), (1e20, "1e+20"), (1e16, "1e+16"),
            (1e15, "1000000000000000.0"), (1e-5, "1e-05"), (0.0001, "0.0001"), (123456789.0, "123456789.0"),
            (Double.leastNonzeroMagnitude, "5e-324"), (1.7976931348623157e308, "1.7976931348623157e+308"),
            (113.935016, "113.935016"),
            (-1.5e-7, "-1.5e-07"), (2.5e+100, "2.5e+100"), (9007199254740993.0, "9007199254740992.0"),
        ]
    )
    func doublesPrintAsPythonRepr(_ value: Double, _ text: String) throws {
        #expect(try compact(location(longitude: value)) == #"{"longitude":"# + text + "}")
    }

    @Test func negativeZeroIsPrintedBecauseItIsNotTheDefaultBitPattern() throws {
        #expect(try compact(location(longitude: -0.0)) == #"{"longitude":-0.0}"#)
        #expect(try compact(location(longitude: 0.0)) == "{}")
    }

    @Test func nonFiniteDoublesAreStrings() throws {
        #expect(try compact(location(longitude: .nan)) == #"{"longitude":"NaN"}"#)
        #expect(try compact(location(longitude: .infinity)) == #"{"longitude":"Infinity"}"#)
        #expect(try compact(location(longitude: -.infinity)) == #"{"longitude":"-Infinity"}"#)
    }

    @Test(
        "bytes are standard base64 with padding",
        arguments: [
            ([UInt8](), "{}"), ([0xFF], #"{"data":"/w=="}"#), ([0xFF, 0xFE], #"{"data":"//4="}"#),
            ([0xFF, 0xFE, 0xFD], #"{"data":"//79"}"#), (Array("hello".utf8), #"{"data":"aGVsbG8="}"#),
            ([0xFB, 0xEF, 0xBE], #"{"data":"++++"}"#),
        ]
    )
    func bytesAreStandardBase64WithPadding(_ bytes: [UInt8], _ json: String) throws {
        #expect(try compact(CustomElement.with { $0.data = bytes }) == json)
    }

    @Test func enumsPrintByNameAndUnknownNumbersAsNumbers() throws {
        #expect(
            try compact(
                Message.with {
                    $0.priority = .normal; $0.status = .sent
                }
            ) == #"{"priority":"PRIORITY_NORMAL","status":"MESSAGE_STATUS_SENT"}"#
        )
        #expect(try compact(Message.with { $0.priority = .unrecognized(99) }) == #"{"priority":99}"#)
        #expect(try compact(Message.with { $0.priority = .unrecognized(-5) }) == #"{"priority":-5}"#)
        #expect(
            try compact(GroupChangeInfo.with { $0.type = .shutUpAll })
                == #"{"type":"GROUP_INFO_CHANGE_TYPE_SHUT_UP_ALL"}"#
        )
    }

    @Test func setOneofMembersAndPresentSubMessagesPrintEvenWhenEmpty() throws {
        #expect(try compact(Frame.with { $0.payload = .message(Message()) }) == #"{"message":{}}"#)
        #expect(try compact(MessageElement.with { $0.content = .text(TextElement()) }) == #"{"text":{}}"#)
        #expect(try compact(Message.with { $0.conversation = Conversation() }) == #"{"conversation":{}}"#)
        #expect(try pretty(Frame.with { $0.payload = .message(Message()) }) == "{\n  \"message\": {}\n}")
    }

    @Test func repeatedFieldsAreArraysAndMapsAreObjectsSortedByKey() throws {
        let value = Message.with {
            $0.targetReceivers = ["b", "a"]
            $0.customParams = ["b": "2", "a": "1", "": "empty", "é": "e-acute", "Z": "upper"]
            $0.elements = [
                MessageElement(), MessageElement.with { $0.content = .text(TextElement.with { $0.text = "x" }) },
            ]
        }
        #expect(
            try compact(value)
                == #"{"targetReceivers":["b","a"],"customParams":{"":"empty","Z":"upper","a":"1","b":"2","é":"e-acute"},"elements":[{},{"text":{"text":"x"}}]}"#
        )
    }

    @Test func prettyLayoutMatchesPythonJsonDumpsIndent2() throws {
        let value = Message.with {
            $0.seq = 1
            $0.conversation = Conversation()
            $0.targetReceivers = ["a", "b"]
            $0.customParams = ["k": "v"]
            $0.elements = [MessageElement()]
        }
        let expected = """
            {
              "seq": "1",
              "conversation": {},
              "targetReceivers": [
                "a",
                "b"
              ],
              "customParams": {
                "k": "v"
              },
              "elements": [
                {}
              ]
            }
            """
        #expect(try pretty(value) == expected)
    }

    @Test func stringsEscapeQuotesBackslashesAndControlCharacters() throws {
        let text = TextElement.with { $0.text = "q\"b\\s/\u{8}\u{C}\n\r\t\u{0}\u{1F}\u{7F}é😀\u{2028}" }
        #expect(try compact(text) == "{\"text\":\"q\\\"b\\\\s/\\b\\f\\n\\r\\t\\u0000\\u001f\u{7F}é😀\u{2028}\"}")
    }

    @Test func asciiOnlyEscapesEverythingAboveASCIIWithLowercaseHexAndSurrogatePairs() throws {
        var options = JSONEncodingOptions()
        options.asciiOnly = true
        let text = TextElement.with { $0.text = "a\u{7F}é中😀\u{2028}" }
        #expect(try text.jsonString(options: options) == #"{"text":"a\u007f\u00e9\u4e2d\ud83d\ude00\u2028"}"#)
        let map = Message.with { $0.customParams = ["表情": "👍🏽"] }
        #expect(
            try map.jsonString(options: options) == #"{"customParams":{"\u8868\u60c5":"\ud83d\udc4d\ud83c\udffd"}}"#
        )
    }

    @Test func unknownFieldsAreNotPrinted() throws {
        // schema_version = 1, then unknown field 7 (varint 5) and field 99 (length-delimited "hi").
        let bytes: [UInt8] = [0x08, 0x01, 0x38, 0x05, 0x9A, 0x06, 0x02, 0x68, 0x69]
        let frame = try Frame(serializedBytes: bytes)
        #expect(!frame.unknownFields.isEmpty)
        #expect(try compact(frame) == #"{"schemaVersion":1}"#)
        #expect(try ProtoJSON.jsonString(fromBinary: bytes, messageType: "imcodec.v1.Frame") == #"{"schemaVersion":1}"#)
    }

    /// A record with a map's or a repeated field's number but another wire type is an unknown
    /// field (Google's parsers keep it as one), kept after the known fields: the map or array
    /// still prints once, whole, and nothing after it is misread. (The fuzzer found the map case:
    /// the printer consumed the record's tag and read its fixed32 payload as fields, printing
    /// `"clientMsgId": ""` a second time.)
    @Test(
        arguments: [
            // Message.expansion (17): {"k": "v"}, then field 17 as a fixed32 whose bytes read as fields.
            ([0x8A, 0x01, 0x06, 0x0A, 0x01, 0x6B, 0x12, 0x01, 0x76], [0x8D, 0x01, 0x0A, 0x00, 0x01, 0x0C]),
            // Message.expansion (17), then field 17 as a varint.
            ([0x8A, 0x01, 0x06, 0x0A, 0x01, 0x6B, 0x12, 0x01, 0x76], [0x88, 0x01, 0x05]),
            // Message.target_receivers (12): ["a", "b"], then field 12 as a varint.
            ([0x62, 0x01, 0x61, 0x62, 0x01, 0x62], [0x60, 0x07]),
            // Message.target_receivers (12), then field 12 as a fixed64.
            ([0x62, 0x01, 0x61], [0x61, 0, 0, 0, 0, 0, 0, 0, 0x0A]),
        ] as [([UInt8], [UInt8])]
    )
    func aRecordOfARepeatedFieldsNumberWithAnotherWireTypeIsAnUnknownField(known: [UInt8], unknown: [UInt8]) throws {
        let clientMsgID: [UInt8] = [0x0A, 0x01, 0x41]
        func frame(_ message: [UInt8]) -> [UInt8] { [0x08, 0x01, 0x52, UInt8(message.count)] + message }
        let expected = try ProtoJSON.jsonString(fromBinary: frame(clientMsgID + known), messageType: "imcodec.v1.Frame")
        for message in [
            clientMsgID + known + unknown, clientMsgID + unknown + known, clientMsgID + known + unknown + known,
        ] {
            let bytes = frame(message)
            let decoded = try Frame(serializedBytes: bytes)
            guard case .message(let decodedMessage) = decoded.payload else {
                Issue.record("not a message: \(bytes)")
                continue
            }
            #expect(!decodedMessage.unknownFields.isEmpty)
            let twice = message.count > clientMsgID.count + known.count + unknown.count
            let json = try ProtoJSON.jsonString(fromBinary: bytes, messageType: "imcodec.v1.Frame")
            if twice {
                // A map keeps one entry per key; a repeated field's elements come twice.
                let again = try ProtoJSON.jsonString(
                    fromBinary: frame(clientMsgID + known + known),
                    messageType: "imcodec.v1.Frame"
                )
                #expect(json == again, "\(bytes)")
            } else {
                #expect(json == expected, "\(bytes)")
            }
            #expect(try compact(decoded) == json)
        }
    }

    @Test func aMapEntryRepeatedOnTheWireKeepsItsLastValue() throws {
        // SystemNotice.params: {"k": "1"} then {"k": "2"}.
        let entry1: [UInt8] = [0x12, 0x06, 0x0A, 0x01, 0x6B, 0x12, 0x01, 0x31]
        let entry2: [UInt8] = [0x12, 0x06, 0x0A, 0x01, 0x6B, 0x12, 0x01, 0x32]
        let json = try ProtoJSON.jsonString(fromBinary: entry1 + entry2, messageType: "imcodec.v1.SystemNotice")
        #expect(json == #"{"params":{"k":"2"}}"#)
    }

    @Test func nulInAMapKeyOrValueIsPrinted() throws {
        let value = Message.with { $0.customParams = ["a\u{0}b": "v\u{0}"] }
        #expect(try value.jsonString() == #"{"customParams":{"a\u0000b":"v\u0000"}}"#)
    }

    @Test func binaryEntryPointUsesTheDecodingLimits() {
        let bytes = Frame.with { $0.schemaVersion = 1 }.serializedBytes()
        var limits = DecodingOptions()
        limits.maxInputSize = 1
        let error = jsonError { () throws(IMCodecError) in
            _ = try ProtoJSON.jsonString(fromBinary: bytes, messageType: "imcodec.v1.Frame", decoding: limits)
        }
        #expect(error?.code == .tooLarge)
        let truncated = jsonError { () throws(IMCodecError) in
            _ = try ProtoJSON.jsonString(fromBinary: [0x08], messageType: "imcodec.v1.Frame")
        }
        #expect(truncated?.code == .truncated)
        #expect(truncated?.offset == 1)
    }

    @Test func unknownMessageTypeNamesAreRejected() {
        let print = jsonError { () throws(IMCodecError) in
            _ = try ProtoJSON.jsonString(fromBinary: [], messageType: "imcodec.v1.Nope")
        }
        #expect(print?.code == .unknownMessageType)
        let parse = jsonError { () throws(IMCodecError) in
            _ = try ProtoJSON.binary(fromJSON: "{}", messageType: "Frame")
        }
        #expect(parse?.code == .unknownMessageType)
    }

    @Test func deeplyNestedValuesPrint() throws {
        // 33 merger layers: 1 + 3 × 33 = 100 message levels, the default limit.
        var inner = Message.with { $0.seq = 1 }
        for _ in 0..<33 {
            inner = Message.with {
                $0.elements = [
                    MessageElement.with { $0.content = .merger(MergerElement.with { $0.messages = [inner] }) }
                ]
            }
        }
        let json = try compact(inner)
        let layer = #"{"elements":[{"merger":{"messages":["#
        #expect(json == String(repeating: layer, count: 33) + #"{"seq":"1"}"# + String(repeating: "]}}]}", count: 33))
        #expect(try Message(jsonString: json) == inner)
        // One more layer is past the default JSON limit but still prints (values are trusted).
        let deeper = Message.with {
            $0.elements = [MessageElement.with { $0.content = .merger(MergerElement.with { $0.messages = [inner] }) }]
        }
        #expect(try compact(deeper).hasPrefix(layer + layer))
    }
}

// MARK: - Parsing

@Suite("JSON parsing")
struct JSONParsingTests {
    @Test func acceptsJsonNamesAndSchemaNames() throws {
        let byJSON = try message(#"{"clientMsgId":"c","senderNickname":"n","customParams":{"k":"v"}}"#)
        let bySchema = try message(#"{"client_msg_id":"c","sender_nickname":"n","custom_params":{"k":"v"}}"#)
        #expect(byJSON == bySchema)
        #expect(byJSON.clientMsgID == "c" && byJSON.senderNickname == "n" && byJSON.customParams == ["k": "v"])
        #expect(
            try Frame(jsonString: #"{"c2c_read_receipt":{"user_id":"u"}}"#)
                == Frame(jsonString: #"{"c2cReadReceipt":{"userId":"u"}}"#)
        )
    }

    @Test func nullMeansTheDefault() throws {
        let value = try message(
            #"{"seq":null,"senderId":null,"conversation":null,"targetReceivers":null,"customParams":null,"priority":null,"cloudCustomData":null}"#
        )
        #expect(value == Message())
        // A null oneof member does not count as set.
        let frame = try Frame(jsonString: #"{"message":null,"recall":{}}"#)
        #expect(frame.payload == .recall(RecallEvent()))
    }

    @Test(
        "integers from numbers and numeric strings",
        arguments: [
            (#""seq":1"#, UInt64(1)), (#""seq":"1""#, 1), (#""seq":1e2"#, 100), (#""seq":"1e2""#, 100),
            (#""seq":100.000"#, 100), (#""seq":1.5e1"#, 15), (#""seq":"18446744073709551615""#, .max),
            (#""seq":18446744073709551615"#, .max), (#""seq":-0"#, 0), (#""seq":0.0e5"#, 0),
            (#""seq":1844674407370955161.5e1"#, 18_446_744_073_709_551_615),
        ]
    )
    func integersFromNumbersAndNumericStrings(_ member: String, _ seq: UInt64) throws {
        #expect(try message("{" + member + "}").seq == seq)
    }

    @Test func signedAndThirtyTwoBitIntegerRanges() throws {
        #expect(try MessageRef(jsonString: #"{"serverTimeMs":"-9223372036854775808"}"#).serverTimeMs == .min)
        #expect(try MessageRef(jsonString: #"{"serverTimeMs":9223372036854775807}"#).serverTimeMs == .max)
        #expect(try FaceElement(jsonString: #"{"index":-2147483648}"#).index == .min)
        #expect(try FaceElement(jsonString: #"{"index":"2147483647"}"#).index == .max)
        #expect(try Frame(jsonString: #"{"schemaVersion":4294967295}"#).schemaVersion == .max)
        #expect(try Frame(jsonString: #"{"schemaVersion":2.147483647e9}"#).schemaVersion == 2_147_483_647)
    }

    @Test(
        "out-of-range and non-integral integers are rejected",
        arguments: [
            #"{"index":2147483648}"#, #"{"index":-2147483649}"#, #"{"index":1.5}"#, #"{"index":"1.5"}"#,
            #"{"index":1e10}"#, #"{"index":1e-2}"#, #"{"index":"abc"}"#, #"{"index":" 1"}"#, #"{"index":"1 "}"#,
            #"{"index":""}"#, #"{"index":"+1"}"#, #"{"index":"01"}"#, #"{"index":"0x10"}"#, #"{"index":true}"#,
            #"{"index":[1]}"#, #"{"index":{}}"#, #"{"index":1e999999999999}"#,
        ]
    )
    func outOfRangeAndNonIntegralIntegersAreRejected(_ json: String) {
        let error = parseError(FaceElement.self, json)
        #expect(error?.code == .invalidJSON)
        #expect(error?.offset == 9)
    }

    @Test func unsignedAndSixtyFourBitRangesAreEnforced() {
        #expect(parseError(Frame.self, #"{"schemaVersion":-1}"#)?.code == .invalidJSON)
        #expect(parseError(Frame.self, #"{"schemaVersion":4294967296}"#)?.code == .invalidJSON)
        #expect(parseError(Message.self, #"{"seq":"18446744073709551616"}"#)?.code == .invalidJSON)
        #expect(parseError(Message.self, #"{"seq":-1}"#)?.code == .invalidJSON)
        #expect(parseError(MessageRef.self, #"{"serverTimeMs":"9223372036854775808"}"#)?.code == .invalidJSON)
        #expect(parseError(MessageRef.self, #"{"serverTimeMs":-9223372036854775809}"#)?.code == .invalidJSON)
        #expect(parseError(Message.self, #"{"seq":1e20}"#)?.code == .invalidJSON)
    }

    @Test(
        "doubles from numbers, numeric strings and the special strings",
        arguments: [
            (#"1.5"#, 1.5), (#""1.5""#, 1.5), (#"-0.0"#, -0.0), (#"1e308"#, 1e308), (#""NaN""#, .nan),
            (#""Infinity""#, .infinity), (#""-Infinity""#, -.infinity), (#"113.935016"#, 113.935016),
            (#"5e-324"#, Double.leastNonzeroMagnitude), (#"1e-400"#, 0), (#"3"#, 3), (#""-2.5e-3""#, -0.0025),
        ]
    )
    func doublesFromNumbersAndStrings(_ text: String, _ value: Double) throws {
        let parsed = try LocationElement(jsonString: #"{"longitude":"# + text + "}").longitude
        if value.isNaN {
            #expect(parsed.isNaN)
        } else {
            #expect(parsed == value && parsed.sign == value.sign)
        }
    }

    @Test(
        "bad doubles are rejected",
        arguments: [
            #"{"longitude":1e309}"#, #"{"longitude":-1e309}"#, #"{"longitude":"nan"}"#, #"{"longitude":"inf"}"#,
            #"{"longitude":"infinity"}"#, #"{"longitude":" 1"}"#, #"{"longitude":"1,5"}"#, #"{"longitude":true}"#,
            #"{"longitude":"0x1p3"}"#, #"{"longitude":"1e400"}"#, #"{"longitude":[]}"#,
        ]
    )
    func badDoublesAreRejected(_ json: String) {
        let error = parseError(LocationElement.self, json)
        #expect(error?.code == .invalidJSON)
        #expect(error?.offset == 13)
    }

    @Test func negativeZeroSurvivesJSONToBinary() throws {
        let bytes = try ProtoJSON.binary(fromJSON: #"{"longitude":-0.0}"#, messageType: "imcodec.v1.LocationElement")
        #expect(bytes == [0x11, 0, 0, 0, 0, 0, 0, 0, 0x80])
    }

    @Test(
        "bytes from standard or URL-safe base64, padded or not",
        arguments: [
            ("/w==", [UInt8]([0xFF])), ("/w", [0xFF]), ("_w==", [0xFF]), ("_w", [0xFF]), ("//79", [0xFF, 0xFE, 0xFD]),
            ("__79", [0xFF, 0xFE, 0xFD]), ("--++", [0xFB, 0xEF, 0xBE]), ("", []), ("aGVsbG8", Array("hello".utf8)),
            ("aGVsbG8=", Array("hello".utf8)),
        ]
    )
    func bytesFromBase64(_ text: String, _ bytes: [UInt8]) throws {
        #expect(try CustomElement(jsonString: #"{"data":""# + text + #""}"#).data == bytes)
    }

    @Test(
        "invalid base64 is rejected",
        arguments: [
            // The offset is the first bad character (the string's contents start at byte 9).
            ("@@@@", 9), ("A", 10), ("ab=", 11), ("a===", 10), ("ab==c", 11), ("ab c", 11), ("YW=J", 11),
            ("a\\u003d", 10),
        ]
    )
    func invalidBase64IsRejected(_ text: String, _ offset: Int) {
        let error = parseError(CustomElement.self, #"{"data":""# + text + #""}"#)
        #expect(error?.code == .invalidJSON)
        #expect(error?.offset == offset)
    }

    @Test func enumsByNameOrNumber() throws {
        #expect(try message(#"{"priority":"PRIORITY_LOW"}"#).priority == .low)
        #expect(try message(#"{"priority":2}"#).priority == .normal)
        #expect(try message(#"{"priority":"2"}"#).priority == .normal)
        #expect(try message(#"{"priority":99}"#).priority == .unrecognized(99))
        #expect(try message(#"{"priority":-7}"#).priority == .unrecognized(-7))
        #expect(try message(#"{"priority":"PRIORITY_UNSPECIFIED"}"#) == Message())
        #expect(parseError(Message.self, #"{"priority":"PRIORITY_URGENT"}"#)?.code == .invalidJSON)
        #expect(parseError(Message.self, #"{"priority":"priority_low"}"#)?.code == .invalidJSON)
        #expect(parseError(Message.self, #"{"priority":1.5}"#)?.code == .invalidJSON)
        #expect(parseError(Message.self, #"{"priority":2147483648}"#)?.code == .invalidJSON)
        #expect(parseError(Message.self, #"{"priority":true}"#)?.code == .invalidJSON)
    }

    @Test func unknownEnumNamesAreSkippedWhenUnknownFieldsAreIgnored() throws {
        var options = JSONDecodingOptions()
        options.ignoreUnknownFields = true
        #expect(
            try Message(jsonString: #"{"priority":"PRIORITY_URGENT","seq":"3"}"#, options: options)
                == Message.with { $0.seq = 3 }
        )
    }

    @Test func stringsDecodeEveryEscape() throws {
        let text = try TextElement(jsonString: #"{"text":"q\"b\\s\/\b\f\n\r\t\u0000\u00e9\u4E2D\ud83d\ude00é😀"}"#).text
        #expect(text == "q\"b\\s/\u{8}\u{C}\n\r\t\u{0}é中😀é😀")
    }

    @Test func mapsAreObjectsWithStringKeys() throws {
        let value = try message(#"{"customParams":{"b":"2","a":"1","":""},"expansion":{}}"#)
        #expect(value.customParams == ["a": "1", "b": "2", "": ""])
        #expect(value.expansion.isEmpty)
        #expect(parseError(Message.self, #"{"customParams":{"a":"1","a":"2"}}"#)?.offset == 25)
        #expect(parseError(Message.self, #"{"customParams":{"a":null}}"#)?.code == .invalidJSON)
        #expect(parseError(Message.self, #"{"customParams":{"a":1}}"#)?.code == .invalidJSON)
        #expect(parseError(Message.self, #"{"customParams":[]}"#)?.code == .invalidJSON)
        #expect(parseError(Message.self, #"{"customParams":"a=1"}"#)?.code == .invalidJSON)
    }

    @Test func nulInAMapKeyOrValueIsKept() throws {
        #expect(try Message(jsonString: #"{"customParams":{"a\u0000":"v"}}"#).customParams == ["a\u{0}": "v"])
        #expect(try SystemNotice(jsonString: #"{"params":{"k":"\u0000"}}"#).params == ["k": "\u{0}"])
        // U+0000 in an ordinary string field is fine (protobuf-c keeps its length).
        #expect(try TextElement(jsonString: #"{"text":"a\u0000b"}"#).text == "a\u{0}b")
    }

    @Test func unknownFieldsAreRejectedUnlessIgnored() throws {
        let error = parseError(Frame.self, #"{"schemaVersion":1,"traceId":"x"}"#)
        #expect(error?.code == .invalidJSON)
        #expect(error?.offset == 19)
        var options = JSONDecodingOptions()
        options.ignoreUnknownFields = true
        let frame = try Frame(
            jsonString: #"{"schemaVersion":1,"traceId":{"deep":[1,{"x":null}]},"message":{"future":1,"seq":"2"}}"#,
            options: options
        )
        #expect(
            frame
                == Frame.with {
                    $0.schemaVersion = 1; $0.payload = .message(Message.with { $0.seq = 2 })
                }
        )
        // Field names are case-sensitive.
        #expect(parseError(Frame.self, #"{"SchemaVersion":1}"#)?.code == .invalidJSON)
    }

    @Test func aFieldGivenTwiceIsRejectedEvenUnderBothNames() {
        let same = parseError(Frame.self, #"{"schemaVersion":1,"schemaVersion":2}"#)
        #expect(same?.code == .invalidJSON)
        #expect(same?.offset == 19)
        let both = parseError(Frame.self, #"{"min_reader_version":1,"minReaderVersion":1}"#)
        #expect(both?.code == .invalidJSON)
        #expect(both?.offset == 24)
        let nulls = parseError(Frame.self, #"{"message":null,"message":null}"#)
        #expect(nulls?.code == .invalidJSON)
        var options = JSONDecodingOptions()
        options.ignoreUnknownFields = true
        #expect(parseError(Frame.self, #"{"x":1,"x":2}"#, options)?.code == .invalidJSON)
    }

    @Test func twoMembersOfOneOneofAreRejected() {
        let error = parseError(Frame.self, #"{"message":{},"recall":{}}"#)
        #expect(error?.code == .invalidJSON)
        #expect(error?.offset == 14)
        #expect(parseError(MessageElement.self, #"{"text":{"text":"a"},"face":{"index":1}}"#)?.code == .invalidJSON)
    }

    @Test(
        "wrong JSON types are rejected",
        arguments: [
            (#"{"schemaVersion":"one"}"#, 17), (#"{"message":[]}"#, 11), (#"{"message":"m"}"#, 11),
            (#"{"message":1}"#, 11),
            (#"{"receipts":{"receipts":{}}}"#, 24), (#"{"receipts":{"receipts":[null]}}"#, 25),
            (#"{"receipts":{"receipts":[1]}}"#, 25), (#"{"markRead":{"allConversations":"true"}}"#, 32),
            (#"{"markRead":{"allConversations":1}}"#, 32), (#"{"markRead":{"userId":1}}"#, 22),
            (#"{"markRead":{"userId":["u"]}}"#, 22), (#"{"message":{"targetReceivers":"a"}}"#, 30),
            (#"{"message":{"targetReceivers":[null]}}"#, 31), (#"{"message":{"cloudCustomData":[1]}}"#, 30),
        ]
    )
    func wrongJSONTypesAreRejected(_ json: String, _ offset: Int) {
        let error = parseError(Frame.self, json)
        #expect(error?.code == .invalidJSON)
        #expect(error?.offset == offset)
    }

    @Test(
        "the top level must be one object",
        arguments: [
            "[]", "null", "1", #""{}""#, "true",
        ]
    )
    func theTopLevelMustBeOneObject(_ json: String) {
        #expect(parseError(Frame.self, json)?.code == .invalidJSON)
    }

    @Test(
        "invalid JSON syntax is rejected with the offset of the problem",
        arguments: [
            ("", 0), ("   ", 3), ("{", 1), ("{\"schemaVersion\":1", 18), ("{\"schemaVersion\":1,}", 19), ("{,}", 1),
            ("{'schemaVersion':1}", 1), ("{schemaVersion:1}", 1), ("{\"schemaVersion\" 1}", 17),
            ("{\"schemaVersion\":01}", 17),
            ("{\"schemaVersion\":+1}", 17), ("{\"schemaVersion\":.5}", 17), ("{\"schemaVersion\":1.}", 17),
            ("{\"schemaVersion\":1e}", 17), ("{\"schemaVersion\":-}", 17), ("{\"schemaVersion\":NaN}", 17),
            ("{\"schemaVersion\":tru}", 17), ("{\"schemaVersion\":nulll}", 17), ("{} x", 3), ("{}{}", 2), ("{}]", 2),
            ("{\"a\":[1 2]}", 8), ("{\"a\":[1,]}", 8), ("{\"message\":{}/*c*/}", 13), ("\u{FEFF}{}", 0),
            ("{\"a\":\"x\ny\"}", 7), ("{\"a\":\"\\x\"}", 6), ("{\"a\":\"\\u12G4\"}", 6), ("{\"a\":\"abc", 5),
            ("{\"a\":\"\\", 5), ("{\"a\" : [ ] ", 11),
        ]
    )
    func invalidJSONSyntaxIsRejected(_ json: String, _ offset: Int) {
        let error = parseError(Frame.self, json)
        #expect(error?.code == .invalidJSON)
        #expect(error?.offset == offset)
    }

    @Test(
        "lone surrogates are rejected",
        arguments: [
            (#"{"text":"\ud800"}"#, 9), (#"{"text":"\udc00"}"#, 9), (#"{"text":"\ud83d\u0041"}"#, 9),
            (#"{"text":"ab\ud83dx"}"#, 11), (#"{"text":"\ude00\ud83d"}"#, 9),
        ]
    )
    func loneSurrogatesAreRejected(_ json: String, _ offset: Int) {
        let error = parseError(TextElement.self, json)
        #expect(error?.code == .invalidJSON)
        #expect(error?.offset == offset)
    }

    @Test func whitespaceAroundTokensIsAccepted() throws {
        let frame = try Frame(
            jsonString:
                " \t\r\n{ \"schemaVersion\" :\n1 , \"message\" : { \"targetReceivers\" : [ \"a\" , \"b\" ] } }\n "
        )
        #expect(
            frame
                == Frame.with {
                    $0.schemaVersion = 1; $0.payload = .message(Message.with { $0.targetReceivers = ["a", "b"] })
                }
        )
    }

    @Test func offsetsCountUTF8Bytes() {
        // "é" is 2 bytes and "😀" 4, so the value of "seq" starts at byte 45.
        let error = parseError(Message.self, #"{"senderId":"é😀","clientMsgId":"x","seq":"y"}"#)
        #expect(error?.offset == 45)
    }

    @Test func hostileNestingFailsFastWithoutRecursion() {
        let brackets = String(repeating: "[", count: 1_000_000)
        let error = parseError(Frame.self, brackets)
        #expect(error?.code == .tooDeep)
        #expect(error?.offset == 2 * JSONDecodingOptions().maxDepth + 2)  // open arrays
        let objects = String(repeating: #"{"a":"#, count: 200_000)
        #expect(parseError(Frame.self, objects)?.code == .tooDeep)
        var options = JSONDecodingOptions()
        options.maxDepth = 1_000_000  // capped at DecodingOptions.maxDepthCap
        #expect(parseError(Frame.self, brackets, options)?.offset == 2 * DecodingOptions.maxDepthCap + 2)
    }

    /// A Frame whose message nesting is `depth` (the Frame counts as 1; a merger layer costs 3).
    private func nestedFrameJSON(depth: Int) -> String {
        // Frame(1) > Message(2) > MessageElement(3) > MergerElement(4) > Message(5) > ...
        var json = ""
        var level = 2
        var closing = ""
        json += #"{"message":"#
        closing = "}"
        while level < depth {
            switch (level - 2) % 3 {
            case 0: json += #"{"elements":["#; closing = "]}" + closing
            case 1: json += #"{"merger":"#; closing = "}" + closing
            default: json += #"{"messages":["#; closing = "]}" + closing
            }
            level += 1
        }
        return json + "{}" + closing
    }

    @Test func messageNestingIsLimitedByMaxDepth() throws {
        let maxDepth = JSONDecodingOptions().maxDepth
        #expect(maxDepth == DecodingOptions().maxDepth)
        let atLimit = nestedFrameJSON(depth: maxDepth)
        let frame = try Frame(jsonString: atLimit)
        #expect(try Frame(serializedBytes: frame.serializedBytes()) == frame)  // the binary default is the same
        let tooDeep = nestedFrameJSON(depth: maxDepth + 1)
        #expect(parseError(Frame.self, tooDeep)?.code == .tooDeep)
        var options = JSONDecodingOptions()
        options.maxDepth = maxDepth + 1
        #expect(try Frame(jsonString: tooDeep, options: options).serializedBytes().count > 0)
        options.maxDepth = 2
        #expect(
            try Frame(jsonString: #"{"message":{}}"#, options: options)
                == Frame.with { $0.payload = .message(Message()) }
        )
        #expect(parseError(Frame.self, #"{"message":{"conversation":{}}}"#, options)?.offset == 27)
        // Empty arrays and maps do not count: only messages do.
        #expect(
            try Frame(jsonString: #"{"message":{"elements":[],"customParams":{}}}"#, options: options).payload != nil
        )
    }

    @Test func largeMapsArraysAndUnknownMembersTakeLinearTime() throws {
        let count = 100_000
        let map = #"{"customParams":{"# + (0..<count).map { #""k\#($0)":"v""# }.joined(separator: ",") + "}}"
        let value = try message(map)
        #expect(value.customParams.count == count)
        #expect(try message(compact(value)) == value)
        let array = #"{"targetReceivers":["# + (0..<count).map { #""u\#($0)""# }.joined(separator: ",") + "]}"
        #expect(try message(array).targetReceivers.count == count)
        var options = JSONDecodingOptions()
        options.ignoreUnknownFields = true
        let unknown = "{" + (0..<count).map { #""x\#($0)":[{}]"# }.joined(separator: ",") + #","seq":"1"}"#
        #expect(try Message(jsonString: unknown, options: options).seq == 1)
    }

    @Test func inputLargerThanMaxInputSizeIsRejected() throws {
        var options = JSONDecodingOptions()
        options.maxInputSize = 20
        #expect(try Frame(jsonString: #"{"schemaVersion":1}"#, options: options).schemaVersion == 1)  // 19 bytes
        #expect(parseError(Frame.self, #"{"schemaVersion": 1}"#, options) == nil)  // 20 bytes
        #expect(parseError(Frame.self, #"{"schemaVersion":  1}"#, options)?.code == .tooLarge)  // 21 bytes
        options.maxInputSize = 0
        #expect(parseError(Frame.self, "{}", options)?.code == .tooLarge)
    }
}

// MARK: - Round trips

@Suite("JSON round trips")
struct JSONRoundTripTests {
    static let sample: Frame = {
        let message = Message.with {
            $0.clientMsgID = "cli-1"
            $0.serverMsgUID = "srv-1"
            $0.seq = .max
            $0.random = .max
            $0.senderID = "user_é😀"
            $0.conversation = Conversation.with {
                $0.type = .group; $0.targetID = "g"; $0.channelID = "c"
            }
            $0.clientTimeMs = .min
            $0.serverTimeMs = 1_732_186_860_112
            $0.priority = .unrecognized(42)
            $0.status = .recalled
            $0.flags = 127
            $0.targetReceivers = ["a", "", "\"q\"\n"]
            $0.at = AtInfo.with {
                $0.userIDs = ["x"]; $0.atAll = true
            }
            $0.offlinePush = OfflinePushInfo.with {
                $0.title = "t"; $0.disabled = true
            }
            $0.cloudCustomData = Array(0...255)
            $0.customParams = ["k": "v", "中": "\u{1}\u{7F}", "": "empty"]
            $0.expansion = ["like_count": "12"]
            $0.storagePolicy = .statusOnly
            $0.quote = MessageRef.with {
                $0.seq = 1; $0.conversation = Conversation()
            }
            $0.elements = [
                MessageElement.with { $0.content = .text(TextElement.with { $0.text = "hi\u{0}\u{2028}" }) },
                MessageElement.with {
                    $0.content = .location(
                        LocationElement.with {
                            $0.longitude = -0.0; $0.latitude = .infinity
                        }
                    )
                },
                MessageElement.with {
                    $0.content = .face(
                        FaceElement.with {
                            $0.index = -3; $0.data = [1]
                        }
                    )
                },
                MessageElement.with {
                    $0.content = .image(
                        ImageElement.with {
                            $0.format = .other; $0.images = [ImageInfo(), ImageInfo.with { $0.size = 9 }]
                        }
                    )
                },
                MessageElement(),
            ]
            $0.editVersion = 3
            $0.senderNickname = "Li Lei"
        }
        return Frame.with {
            $0.schemaVersion = 1; $0.minReaderVersion = 1; $0.payload = .message(message)
        }
    }()

    static let layouts: [JSONEncodingOptions] = {
        var all: [JSONEncodingOptions] = []
        for pretty in [false, true] {
            for protoNames in [false, true] {
                for ascii in [false, true] {
                    var options = JSONEncodingOptions()
                    options.prettyPrinted = pretty
                    options.preserveProtoFieldNames = protoNames
                    options.asciiOnly = ascii
                    all.append(options)
                }
            }
        }
        return all
    }()

    @Test("a Frame survives JSON in every layout", arguments: layouts)
    func aFrameSurvivesJSON(_ options: JSONEncodingOptions) throws {
        let json = try Self.sample.jsonString(options: options)
        let back = try Frame(jsonString: json)
        #expect(back.serializedBytes() == Self.sample.serializedBytes())
        #expect(try ProtoJSON.binary(fromJSON: json, messageType: "imcodec.v1.Frame") == Self.sample.serializedBytes())
        #expect(try back.jsonString(options: options) == json)
    }

    @Test func everyPayloadKindSurvivesJSON() throws {
        let payloads: [Frame.Payload] = [
            .receipt(
                MessageReceipt.with {
                    $0.kind = .read; $0.readCount = 3; $0.isPeerRead = true
                }
            ),
            .receipts(ReceiptBatch.with { $0.c2cReadReceipts = [C2CReadReceipt.with { $0.readTimeMs = -1 }] }),
            .groupReadMembers(
                GroupReadMembers.with {
                    $0.memberIDs = ["a", "b"]; $0.nextSeq = 5
                }
            ),
            .recall(RecallEvent.with { $0.reason = "r" }),
            .edit(EditEvent.with { $0.newMessage = Message() }),
            .delete(
                DeleteEvent.with {
                    $0.scope = .everyone; $0.messages = [MessageRef()]
                }
            ),
            .typing(TypingEvent.with { $0.state = .started }),
            .markRead(MarkReadEvent.with { $0.allConversations = true }),
            .systemNotice(
                SystemNotice.with {
                    $0.params = ["a": "b"]; $0.timeMs = 1
                }
            ),
            .sendAck(SendAck.with { $0.errorCode = -80001 }),
            .historyRequest(
                HistoryRequest.with {
                    $0.count = 20; $0.direction = .older
                }
            ),
            .historyResponse(
                HistoryResponse.with {
                    $0.messages = [Message()]; $0.finished = true
                }
            ),
            .mergerPayload(MergerPayload.with { $0.messages = [Message.with { $0.seq = 1 }] }),
        ]
        for payload in payloads {
            let frame = Frame.with { $0.payload = payload }
            let json = try frame.jsonString()
            #expect(try Frame(jsonString: json) == frame, "\(json)")
        }
    }

    @Test func randomStringsSurviveJSON() throws {
        var generator = SeededGenerator(seed: 0x1234_5678)
        let alphabet: [Unicode.Scalar] = [
            "a", "\"", "\\", "/", "\u{0}", "\u{1}", "\u{1F}", "\u{7F}", "\u{80}", "é", "\u{2028}", "中", "\u{FFFF}",
            "\u{10000}", "😀", "\u{10FFFF}",
        ]
        for _ in 0..<200 {
            var text = String.UnicodeScalarView()
            for _ in 0..<Int(generator.next() % 12) {
                text.append(alphabet[Int(generator.next() % UInt64(alphabet.count))])
            }
            let value = TextElement.with { $0.text = String(text) }
            for ascii in [false, true] {
                var options = JSONEncodingOptions()
                options.asciiOnly = ascii
                let json = try value.jsonString(options: options)
                if ascii { #expect(json.utf8.allSatisfy { $0 < 0x7F }) }
                #expect(try TextElement(jsonString: json) == value)
            }
        }
    }
}
