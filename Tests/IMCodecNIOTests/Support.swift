#if Tools
import IMCodec
import IMCodecNIO
import NIOCore

/// Frames of every routing-relevant shape, for the decoder tests.
enum SampleFrames {
    static let alice = "alice"
    static let bob = "bob"

    static let c2c: Frame = {
        Frame(Message.c2cText(from: alice, to: bob, "hello bob", clientMsgID: "c-1"))
    }()

    static let group: Frame = {
        var message = Message.groupText(from: alice, group: "team", "hi @bob", atUserIDs: [bob], clientMsgID: "c-2")
        message.messageFlags = [.needReadReceipt, .saveToHistory]
        message.customParams = ["k": "v", "emoji": "🙂"]
        return Frame(message)
    }()

    static let receipt: Frame = {
        var message = Message.c2cText(from: alice, to: bob, "x", clientMsgID: "c-3")
        message.serverMsgUID = "s-3"
        message.seq = 3
        return Frame.readReceipt(for: message.reference, by: bob, timeMs: 1_700_000_000_000)
    }()

    static let recall: Frame = {
        Frame.recall(Message.c2cText(from: alice, to: bob, "oops", clientMsgID: "c-4").reference, by: alice, timeMs: 1)
    }()

    static let notice: Frame = {
        Frame(
            .systemNotice(
                SystemNotice.with {
                    $0.type = "login"; $0.params = ["user_id": alice]
                }
            )
        )
    }()

    static let empty = Frame()

    static let merger: Frame = {
        let inner = (0..<5).map { Message.c2cText(from: alice, to: bob, "line \($0)", clientMsgID: "m-\($0)") }
        return Frame(
            Message.merger(from: alice, in: .oneToOne(bob), title: "history", messages: inner, clientMsgID: "c-5")
        )
    }()

    static let all: [Frame] = { [c2c, group, receipt, recall, notice, empty, merger] }()

    /// A frame nesting mergers `layers` deep (3 protobuf levels per layer).
    static func depthBomb(layers: Int) -> Frame {
        var message = Message.c2cText(from: alice, to: bob, "core", clientMsgID: "bomb")
        for _ in 0..<layers {
            message = Message(
                from: alice,
                in: .oneToOne(bob),
                elements: [.merger(title: "", abstracts: [], compatibleText: "", messages: [message])],
                clientMsgID: "b",
                clientTimeMs: 0
            )
        }
        return Frame(message)
    }
}

/// The delimited bytes of `frames`.
func delimited(_ frames: [Frame]) -> ByteBuffer {
    var buffer = ByteBuffer()
    for frame in frames { buffer.writeFrame(frame) }
    return buffer
}

/// Expects `body` to throw an ``IMCodecError`` with `code`, possibly wrapped by NIO.
func codecErrorCode(_ body: () throws -> Void) -> IMCodecError.Code? {
    do {
        try body()
        return nil
    } catch let error as IMCodecError {
        return error.code
    } catch {
        return IMCodecError.Code(rawValue: "other: \(error)")
    }
}
#endif
