import IMCodec
import Testing

@Test func textFrameRoundTrips() throws {
    var message = Message()
    message.clientMsgID = "c-1"
    message.senderID = "alice"
    message.conversation = Conversation.with { $0.type = .oneToOne; $0.targetID = "bob" }
    message.customParams = ["b": "2", "a": "1"]
    message.elements = [MessageElement.with { $0.content = .text(TextElement.with { $0.text = "hi\u{0}🙂" }) }]
    message.priority = .unrecognized(99)
    let frame = Frame.with { $0.schemaVersion = 1; $0.payload = .message(message) }
    let bytes = try frame.serializedBytes()
    let back = try Frame(serializedBytes: bytes)
    #expect(back == frame)
    print(bytes.map { String($0, radix: 16) }.joined(separator: " "))
}
