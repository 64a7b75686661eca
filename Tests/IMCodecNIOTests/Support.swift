#if NIO
import IMCodec
import IMCodecNIO
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

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
        message.expireAfterS = 60  // InboundFrame.expireAfterS is read too.
        message.customParams = ["k": "v", "emoji": "🙂"]
        // InboundFrame.carriesPoll is read too.
        message.elements.append(.poll(id: "p", question: "Lunch?", options: ["pizza", "sushi"]))
        return Frame(message)
    }()

    static let receipt: Frame = {
        var message = Message.c2cText(from: alice, to: bob, "x", clientMsgID: "c-3")
        message.serverMsgUID = "s-3"
        message.seq = 3
        return Frame.readReceipt(for: message.reference, by: bob, timeMs: 1_700_000_000_000)
    }()

    static let recall: Frame = {
        var frame = Frame.recall(
            Message.c2cText(from: alice, to: bob, "oops", clientMsgID: "c-4").reference,
            by: alice,
            timeMs: 1
        )
        frame.requestID = 42  // InboundFrame.requestID is read too.
        return frame
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

/// Whether this run is under ThreadSanitizer (`Scripts/test-sanitizers` sets
/// `IMCODEC_TEST_SANITIZER=thread`). The load tests then run a smaller load: the same code
/// paths on the same threads, which is what ThreadSanitizer judges, without its 5-15x slowdown of
/// every frame; the full load runs in the plain suite (`Scripts/test`). Each says which it ran.
let underThreadSanitizer = getenv("IMCODEC_TEST_SANITIZER").map { String(cString: $0) } == "thread"

/// Runs `body` with a client event loop group of `threads` threads, then shuts it down.
func withClientGroup<R>(threads: Int = 1, _ body: (MultiThreadedEventLoopGroup) async throws -> R) async throws -> R {
    let group = MultiThreadedEventLoopGroup(numberOfThreads: threads)
    do {
        let result = try await body(group)
        try await group.shutdownGracefully()
        return result
    } catch {
        try? await group.shutdownGracefully()
        throw error
    }
}

/// How many reads every test client has had so far (frames or byte buffers): the progress that
/// ``eventually(_:_:)`` watches.
let testClientReads = NIOLockedValueBox(0)

/// Polls `condition` every 10 ms until it holds; returns whether it held. It gives up after
/// `seconds` in which no test client read anything (a stalled relay or a lost frame), not after
/// `seconds` in all: a machine slowed by a sanitizer or by other suites still makes progress, and
/// a wait measured in wall-clock time alone failed there by chance.
func eventually(_ seconds: Double = 10, _ condition: () throws -> Bool) async rethrows -> Bool {
    let quiet = TimeAmount.milliseconds(Int64(seconds * 1000))
    var reads = testClientReads.withLockedValue { $0 }
    var deadline = NIODeadline.now() + quiet
    while NIODeadline.now() < deadline {
        if try condition() { return true }
        try? await Task.sleep(nanoseconds: 10_000_000)
        let now = testClientReads.withLockedValue { $0 }
        if now != reads {
            reads = now
            deadline = NIODeadline.now() + quiet
        }
    }
    return try condition()
}

/// One WebSocket frame's bytes, masked as a client must (unless `masked` is false).
func webSocketFrameBytes(opcode: UInt8, payload: [UInt8], fin: Bool = true, masked: Bool = true) -> [UInt8] {
    var out: [UInt8] = [(fin ? 0x80 : 0) | opcode]
    let maskBit: UInt8 = masked ? 0x80 : 0
    if payload.count < 126 {
        out.append(maskBit | UInt8(payload.count))
    } else if payload.count <= 0xFFFF {
        out.append(maskBit | 126)
        out += [UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
    } else {
        out.append(maskBit | 127)
        out += (0..<8).reversed().map { UInt8((payload.count >> ($0 * 8)) & 0xFF) }
    }
    guard masked else { return out + payload }
    let key: [UInt8] = [0x37, 0xFA, 0x21, 0x3D]
    out += key
    out += payload.enumerated().map { $0.element ^ key[$0.offset % 4] }
    return out
}
extension Frame {
    /// The frame's message payload, if it carries one.
    var messagePayload: Message? {
        if case .message(let message)? = payload { message } else { nil }
    }
}

/// Counts the `read()`s that reach it (put it in front of the handler whose reads it counts).
final class ReadCounter: ChannelOutboundHandler {
    typealias OutboundIn = NIOAny
    private(set) var reads = 0

    func read(context: ChannelHandlerContext) {
        reads += 1
        context.read()
    }
}
#endif
