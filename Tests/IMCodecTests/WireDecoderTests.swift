import IMCodec
import Testing

@Suite("WireDecoder and the routing view")
struct WireDecoderTests {
    @Test("the routing view agrees with the full decode for every sample", arguments: Samples.frames.keys.sorted())
    func viewAgrees(name: String) throws {
        let frame = try #require(Samples.frames[name])
        let decoder = WireDecoder()
        let bytes = frame.serializedBytes()
        try decoder.withFrameView(bytes) { view in
            #expect(view.payloadKind == frame.payload?.kind)
            #expect(view.schemaVersion == frame.schemaVersion)
            #expect(view.materialize() == frame)
            if case .message(let message)? = frame.payload {
                #expect(view.conversation == message.conversation)
                #expect(view.conversationType == (message.conversation?.type ?? .unspecified))
                #expect(view.targetID == (message.conversation?.targetID ?? ""))
                #expect(view.senderID == message.senderID)
                #expect(view.clientMsgID == message.clientMsgID)
                #expect(view.serverMsgUID == message.serverMsgUID)
                #expect(view.seq == message.seq)
                #expect(view.messageFlags == message.messageFlags)
                #expect(view.elementCount == message.elements.count)
                #expect(
                    (0..<view.elementCount).map { view.elementKind(at: $0) }
                        == message.elements.map { $0.content?.kind }
                )
                #expect(view.elementKind(at: view.elementCount) == nil)
                #expect(view.atAll == (message.at?.atAll ?? false))
                view.withTargetIDBytes { #expect(Array($0) == Array((message.conversation?.targetID ?? "").utf8)) }
            }
        }
        #expect(try decoder.decode(Frame.self, from: bytes) == frame)
    }

    @Test("one decoder decodes many inputs, good and bad, with no state carried over")
    func reuse() throws {
        let decoder = WireDecoder(arenaBlockSize: 1 << 10)
        let big = Frame(Message.c2cText(from: "a", to: "b", String(repeating: "🙂", count: 10_000)))
        for _ in 0..<3 {
            #expect(try decoder.decode(Frame.self, from: big.serializedBytes()) == big)
            #expect(throws: IMCodecError.truncated("")) { try decoder.decode(Frame.self, from: [0x52, 0x05]) }
            #expect(
                try decoder.decode(Frame.self, from: Samples.frames["receipt"]!.serializedBytes())
                    == Samples.frames["receipt"]
            )
        }
    }

    @Test("decoder errors carry the pre-scan's offset; body errors pass through")
    func errors() throws {
        let decoder = WireDecoder()
        struct Stop: Error {}
        #expect(throws: Stop.self) { try decoder.withFrameView(Frame().serializedBytes()) { _ in throw Stop() } }
        do {
            try decoder.withFrameView([0x08, 0x01, 0x0E]) { _ in }
            Issue.record("no error")
        } catch let error as IMCodecError {
            #expect(error.code == .malformed)
            #expect(error.offset == 2)
        }
    }

    @Test("decoders on many threads at once, over shared values")
    func concurrentUse() async throws {
        let frames = Samples.frames.values.map { $0 }
        let encoded = frames.map { $0.serializedBytes() }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for worker in 0..<8 {
                group.addTask { () async throws in
                    let decoder = WireDecoder()
                    for round in 0..<200 {
                        let i = (worker + round) % frames.count
                        #expect(try decoder.decode(Frame.self, from: encoded[i]) == frames[i])
                        #expect(frames[i].serializedBytes() == encoded[i])
                        #expect(try Frame(serializedBytes: encoded[i]) == frames[i])
                    }
                }
            }
            try await group.waitForAll()
        }
    }
}
