import IMCodec
import Testing

@Suite("WireEncoder")
struct WireEncoderTests {
    @Test("a reused encoder writes the same bytes as serializedBytes(), plain and delimited")
    func sameBytes() throws {
        let encoder = WireEncoder(capacity: 16)
        for name in Samples.frames.keys.sorted() {
            let frame = Samples.frames[name]!
            #expect(encoder.encode(frame) == frame.serializedBytes())
            var delimited: [UInt8] = []
            Delimited.append(frame, to: &delimited)
            #expect(encoder.withEncodedDelimited(frame) { Array($0) } == delimited)
            var appended: [UInt8] = [0xAA]
            encoder.encode(frame, appendingTo: &appended)
            #expect(appended == [0xAA] + frame.serializedBytes())
        }
    }

    @Test("the routing view names the message a receipt, recall or edit refers to")
    func referencedMessage() throws {
        let decoder = WireDecoder()
        for name in ["receipt", "recall", "edit", "delete", "groupReadMembers"] {
            try decoder.withFrameView(Samples.frames[name]!.serializedBytes()) { view in
                #expect(view.referencedMessage == Samples.ref, "\(name)")
                #expect(view.referencedSenderID == "alice", "\(name)")
            }
        }
        try decoder.withFrameView(Samples.frames["message-text"]!.serializedBytes()) { view in
            #expect(view.referencedMessage == nil)
            #expect(view.referencedSenderID == "")
        }
    }
}
