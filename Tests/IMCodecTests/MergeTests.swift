import IMCodec
import IMCodecTestSupport
import Testing

/// Parsing is merging: a singular sub-message that occurs more than once is merged, as Google's
/// parsers do (protobuf-c 1.4.1 does it wrongly; IMCodec rewrites such input first, see
/// Sources/CIMCodecRuntime/transcode.c). DifferentialTests compares with Google's parser itself.
@Suite("Merging repeated fields and concatenated messages")
struct MergeTests {
    private func bytes(_ message: some IMCodecMessage) -> [UInt8] { message.serializedBytes() }

    @Test("a singular sub-message twice is merged; zero proto3 scalars of the second clear nothing")
    func singularSubMessageTwice() throws {
        let first = Message.with { $0.conversation = .with { $0.type = .group } }
        let second = Message.with { $0.conversation = .with { $0.targetID = "b" } }
        let merged = try Message(serializedBytes: bytes(first) + bytes(second))
        #expect(
            merged.conversation
                == .with {
                    $0.type = .group; $0.targetID = "b"
                }
        )
        #expect(
            merged.serializedBytes()
                == bytes(
                    Message.with {
                        $0.conversation = .with {
                            $0.type = .group; $0.targetID = "b"
                        }
                    }
                )
        )
    }

    @Test("scalars: the last occurrence wins, an explicit zero included")
    func scalarsLastWins() throws {
        // Message.seq (field 3) = 5, then 7; then 7 and an explicit 0 on the wire.
        #expect(try Message(serializedBytes: Wire.tag(3, 0) + [5] + Wire.tag(3, 0) + [7]).seq == 7)
        #expect(try Message(serializedBytes: Wire.tag(3, 0) + [7] + Wire.tag(3, 0) + [0]).seq == 0)
        // Inside merged sub-messages too: Frame.message{seq 7} + Frame.message{seq 0 (explicit)}.
        let explicitZero = Wire.field(10, Wire.tag(3, 0) + [0])
        let frame = try Frame(serializedBytes: bytes(Frame(.message(.with { $0.seq = 7 }))) + explicitZero)
        #expect(frame.payload == .message(Message()))
    }

    @Test("repeated fields are appended, maps keep the last value per key, unknown fields are kept in order")
    func repeatedMapsAndUnknown() throws {
        let first = Message.with {
            $0.targetReceivers = ["a", "b"]
            $0.customParams = ["k": "1", "x": "first"]
            $0.elements = [.text("one")]
        }
        let second = Message.with {
            $0.targetReceivers = ["c"]
            $0.customParams = ["k": "2"]
            $0.elements = [.text("two"), .text("three")]
        }
        let input = bytes(first) + Wire.tag(90, 0) + [1] + bytes(second) + Wire.tag(91, 0) + [2]
        let merged = try Message(serializedBytes: input)
        #expect(merged.targetReceivers == ["a", "b", "c"])
        #expect(merged.customParams == ["k": "2", "x": "first"])
        #expect(merged.elements == [.text("one"), .text("two"), .text("three")])
        #expect(merged.unknownFields.bytes == Wire.tag(90, 0) + [1] + Wire.tag(91, 0) + [2])
    }

    @Test("oneof: the same member merges, another member replaces, and a member after that starts afresh")
    func oneofMembers() throws {
        let textA = Frame(
            .message(
                .with {
                    $0.clientMsgID = "a"; $0.elements = [.text("x")]
                }
            )
        )
        let textB = Frame(
            .message(
                .with {
                    $0.seq = 9; $0.elements = [.text("y")]
                }
            )
        )
        let receipt = Frame(
            .receipt(
                .with {
                    $0.kind = .read; $0.userID = "r"
                }
            )
        )
        // Same member twice: merged.
        #expect(
            try Frame(serializedBytes: bytes(textA) + bytes(textB)).payload
                == .message(
                    .with {
                        $0.clientMsgID = "a"; $0.seq = 9; $0.elements = [.text("x"), .text("y")]
                    }
                )
        )
        // Another member after it: replaced.
        #expect(try Frame(serializedBytes: bytes(textA) + bytes(receipt)).payload == receipt.payload)
        // message, receipt, message: only the last message counts.
        #expect(try Frame(serializedBytes: bytes(textA) + bytes(receipt) + bytes(textB)).payload == textB.payload)
        // message, message, receipt: the receipt.
        #expect(try Frame(serializedBytes: bytes(textA) + bytes(textB) + bytes(receipt)).payload == receipt.payload)
        // An element's content oneof, inside a merged message: text then text merge, image replaces.
        let image = MessageElement.with { $0.content = .image(.with { $0.format = .png }) }
        let element = try MessageElement(serializedBytes: bytes(MessageElement.text("p")) + bytes(image))
        #expect(element == image)
    }

    @Test("duplicates at every depth merge recursively")
    func nestedDuplicates() throws {
        // Frame.message twice; in each, Message.conversation twice; in the merged elements, a merger
        // whose inline message has its quote twice.
        func message(_ build: (inout Message) -> Void) -> [UInt8] { Wire.field(10, bytes(Message.with(build))) }
        let conversationType = Wire.field(6, bytes(Conversation.with { $0.type = .oneToOne }))
        let conversationTarget = Wire.field(6, bytes(Conversation.with { $0.targetID = "bob" }))
        let inner =
            bytes(Message.with { $0.quote = .with { $0.clientMsgID = "q1" } })
            + Wire.field(19, bytes(MessageRef.with { $0.seq = 4 }))
        let merger = MessageElement.with { $0.content = .merger(.with { $0.title = "t" }) }
        let mergerBytes = Wire.field(
            20,
            Wire.field(10, bytes(MergerElement.with { $0.title = "t" }) + Wire.field(4, inner))
        )
        let input =
            Wire.field(10, conversationType + mergerBytes) + message { $0.senderID = "al" }
            + Wire.field(10, conversationTarget)
        let frame = try Frame(serializedBytes: input)
        var expectedMerger = merger
        if case .merger(var element)? = expectedMerger.content {
            element.messages = [
                Message.with {
                    $0.quote = .with {
                        $0.clientMsgID = "q1"; $0.seq = 4
                    }
                }
            ]
            expectedMerger.content = .merger(element)
        }
        #expect(
            frame.payload
                == .message(
                    .with {
                        $0.conversation = .with {
                            $0.type = .oneToOne; $0.targetID = "bob"
                        }
                        $0.senderID = "al"
                        $0.elements = [expectedMerger]
                    }
                )
        )
        // Every decoding path sees the same merged frame.
        let decoder = WireDecoder()
        #expect(try decoder.decode(Frame.self, from: input) == frame)
        #expect(try decoder.withFrameView(input) { $0.materialize() } == frame)
        #expect(try decoder.withFrameView(input) { ($0.targetID, $0.senderID, $0.elementCount) } == ("bob", "al", 1))
        #expect(try ProtoJSON.jsonString(fromBinary: input, messageType: "imcodec.v1.Frame") == frame.jsonString())
    }

    @Test("a wire-type mismatch inside a merged message is still kept as an unknown field")
    func mismatchInsideMerge() throws {
        // Frame.message{seq: 1}, then Frame.message{client_msg_id (a string) sent as a varint}.
        let input = bytes(Frame(.message(.with { $0.seq = 1 }))) + Wire.field(10, Wire.tag(1, 0) + [5])
        let frame = try Frame(serializedBytes: input)
        guard case .message(let message)? = frame.payload else {
            Issue.record("no message")
            return
        }
        #expect(message.seq == 1)
        #expect(message.unknownFields.bytes == Wire.tag(1, 0) + [5])
    }

    @Test("merge(serializedBytes:) merges into the value; a failure leaves it unchanged")
    func mergeAPI() throws {
        var frame = Frame(
            .message(
                .with {
                    $0.clientMsgID = "c"; $0.elements = [.text("hi")]
                }
            )
        )
        try frame.merge(
            serializedBytes: bytes(
                Frame(
                    .message(
                        .with {
                            $0.seq = 42; $0.serverMsgUID = "s"
                        }
                    )
                )
            )
        )
        #expect(
            frame.payload
                == .message(
                    .with {
                        $0.clientMsgID = "c"; $0.serverMsgUID = "s"; $0.seq = 42; $0.elements = [.text("hi")]
                    }
                )
        )
        let before = frame
        #expect(throws: IMCodecError(code: .truncated, reason: "")) { try frame.merge(serializedBytes: [0x52, 0x05]) }
        #expect(frame == before)
        // The limits apply to the merged bytes, with offsets in them.
        let error = #expect(throws: IMCodecError.self) {
            try frame.merge(serializedBytes: Wire.nestingBomb(levels: 10), options: DecodingOptions(maxDepth: 5))
        }
        #expect(error?.code == .tooDeep)
        #expect(frame == before)
    }

    @Test("decoding a + b equals merging b into a, on every path, for random frame pairs")
    func randomPairs() throws {
        var random = RandomMessages(seed: 2026)
        let decoder = WireDecoder()
        func frame() -> Frame {
            random.chance(85)
                ? Frame(.message(random.message(depth: 2)))
                : Frame(
                    .receipt(
                        .with {
                            $0.kind = .read; $0.userID = random.string()
                        }
                    )
                )
        }
        for _ in 0..<300 {
            let a = frame()
            let b = frame()
            let joined = bytes(a) + bytes(b)
            let decoded = try Frame(serializedBytes: joined)
            var merged = a
            try merged.merge(serializedBytes: bytes(b))
            #expect(decoded == merged)
            #expect(try decoder.decode(Frame.self, from: joined) == decoded)
            #expect(try decoder.withFrameView(joined) { $0.materialize() } == decoded)
            // Canonical bytes decode back to the same value.
            #expect(try Frame(serializedBytes: decoded.serializedBytes()) == decoded)
            // Properties every merge has: both messages' repeated fields are there, in order.
            if case .message(let x)? = a.payload, case .message(let y)? = b.payload,
                case .message(let m)? = decoded.payload
            {
                #expect(m.elements == x.elements + y.elements)
                #expect(m.targetReceivers == x.targetReceivers + y.targetReceivers)
                #expect(m.customParams == x.customParams.merging(y.customParams) { $1 })
                #expect(m.clientMsgID == (y.clientMsgID.isEmpty ? x.clientMsgID : y.clientMsgID))
                #expect(m.seq == (y.seq == 0 ? x.seq : y.seq))
            }
        }
    }

    @Test("many occurrences of one field merge into one, within the limits")
    func manyDuplicates() throws {
        // Frame.message occurrences, each adding one target receiver.
        let one = Wire.field(10, Wire.field(12, Array("u".utf8)))
        func receivers(_ input: [UInt8], _ options: DecodingOptions) throws -> Int {
            guard case .message(let message)? = try Frame(serializedBytes: input, options: options).payload else {
                return -1
            }
            return message.targetReceivers.count
        }
        let few = Array([[UInt8]](repeating: one, count: 5_000).joined())
        #expect(try receivers(few, DecodingOptions()) == 5_000)
        let many = Array([[UInt8]](repeating: one, count: 50_000).joined())
        #expect(try receivers(many, DecodingOptions(maxDecodedMemory: 64 << 20)) == 50_000)
        // The limits still apply to the input as it came.
        let error = #expect(throws: IMCodecError.self) {
            try Frame(serializedBytes: many, options: DecodingOptions(maxFieldCount: 60_000))
        }
        #expect(error?.code == .tooManyFields)
        #expect(throws: IMCodecError(code: .memoryLimitExceeded, reason: "")) {
            try Frame(serializedBytes: many, options: DecodingOptions(maxDecodedMemory: 1 << 20))
        }
    }
}
