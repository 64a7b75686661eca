#if NIO
import IMCodec
import NIOCore

/// The WebSocket counterpart of ``FrameDeadlineHandler``: fires an `IMCodecError` with
/// code `IMCodecError.Code.frameTimeout` when a WebSocket message stays incomplete for
/// longer than `maxMessageWait`, so a peer that stalls (or trickles) inside a frame or between the
/// fragments of a message cannot pin a connection and its buffer.
///
/// Place it in front of NIOWebSocket's frame decoder (in a `NIOWebSocketServerUpgrader`'s
/// `upgradePipelineHandler`, `.before` the `ByteToMessageHandler<WebSocketFrameDecoder>`). It passes
/// every byte through unchanged and only follows the frame headers (RFC 6455 §5.2). The clock starts
/// at the read that leaves a frame or a fragmented message incomplete and stops at the read that
/// completes a message; control frames (pings between fragments) do not stop it. A peer idle between
/// messages is not affected. Like ``FrameDeadlineHandler`` it only raises the error; an error
/// handler (``WebSocketFrameHandler`` and the application behind it) answers and closes. Time the
/// server does not read (`autoRead` off, or a `read()` held back after a batch of reads, for which
/// the handler issues one `read()` itself, once per hold, when the wait passes) is not the peer's,
/// as for ``FrameDeadlineHandler``.
public final class WebSocketDeadlineHandler: ChannelDuplexHandler, RemovableChannelHandler {
    /// Bytes read from the socket.
    public typealias InboundIn = ByteBuffer
    /// The same bytes, passed on.
    public typealias InboundOut = ByteBuffer
    /// Whatever is written, passed on.
    public typealias OutboundIn = NIOAny
    /// The same, unchanged.
    public typealias OutboundOut = NIOAny

    /// How long a message may stay incomplete.
    public let maxMessageWait: TimeAmount

    private var header: [UInt8] = []
    private var remainingPayload: UInt64 = 0
    private var inFragmentedMessage = false
    private var frameEndsMessage = false
    private var deadline: Scheduled<Void>?
    private var reads = HeldReads()

    /// Creates a handler that allows each message `maxMessageWait` to arrive in full.
    public init(maxMessageWait: TimeAmount) {
        self.maxMessageWait = maxMessageWait
        header.reserveCapacity(14)
    }

    /// Whether the bytes seen so far end inside a frame or a fragmented message.
    public var isInsideMessage: Bool { !header.isEmpty || remainingPayload > 0 || inFragmentedMessage }

    /// Follows the frame boundaries in `data`, arms or disarms the deadline, and passes `data` on.
    public func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let completed = scan(Self.unwrapInboundIn(data))
        if completed || !isInsideMessage {
            deadline?.cancel()
            deadline = nil
        }
        if isInsideMessage, deadline == nil {
            arm(context: context)
        }
        context.fireChannelRead(data)
    }

    /// Notes the end of a batch of reads: the next `read()` has not gone by yet.
    public func channelReadComplete(context: ChannelHandlerContext) {
        reads.batchEnded()
        context.fireChannelReadComplete()
    }

    /// Notes the `read()` going by; one that ends a hold a deadline passed in gives a message still
    /// incomplete its whole wait again.
    public func read(context: ChannelHandlerContext) {
        if reads.readGoesBy(), isInsideMessage {
            deadline?.cancel()
            deadline = nil
            arm(context: context)
        }
        context.read()
    }

    /// Cancels the deadline when the channel closes.
    public func channelInactive(context: ChannelHandlerContext) {
        deadline?.cancel()
        deadline = nil
        context.fireChannelInactive()
    }

    /// Cancels the deadline when the handler leaves the pipeline.
    public func handlerRemoved(context: ChannelHandlerContext) {
        deadline?.cancel()
        deadline = nil
    }

    /// On ``ReadsResumed``: a message still incomplete gets its whole wait again.
    public func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is ReadsResumed, isInsideMessage {
            deadline?.cancel()
            deadline = nil
            arm(context: context)
        }
        context.fireUserInboundEventTriggered(event)
    }

    private func arm(context: ChannelHandlerContext) {
        let wait = maxMessageWait
        let loopBoundContext = NIOLoopBound(context, eventLoop: context.eventLoop)
        let loopBoundSelf = NIOLoopBound(self, eventLoop: context.eventLoop)
        deadline = context.eventLoop.scheduleTask(in: wait) {
            let handler = loopBoundSelf.value
            handler.deadline = nil
            guard handler.isInsideMessage else { return }
            let context = loopBoundContext.value
            // Reads off or held back: the rest may be waiting in the socket (HeldReads).
            let found = handler.reads.deadlinePassed(readsPaused: context.channel.readsArePaused)
            guard !found.waitsAgain(arm: { handler.arm(context: context) }, read: { context.read() }) else { return }
            let ms = wait.nanoseconds / 1_000_000
            let amount = ms % 1000 == 0 ? "\(ms / 1000) s" : "\(ms) ms"
            context.fireErrorCaught(
                IMCodecError(code: .frameTimeout, reason: "a WebSocket message stayed incomplete for \(amount)")
            )
        }
    }

    /// The header's size once its first two bytes are known.
    private static func headerSize(_ second: UInt8) -> Int {
        let length = second & 0x7F
        return 2 + (length == 126 ? 2 : length == 127 ? 8 : 0) + (second & 0x80 != 0 ? 4 : 0)
    }

    /// Walks the frames in `buffer`; returns whether some message was completed.
    private func scan(_ buffer: ByteBuffer) -> Bool {
        var completed = false
        buffer.withUnsafeReadableBytes { bytes in
            var index = 0
            while index < bytes.count {
                if remainingPayload > 0 {
                    let take = min(remainingPayload, UInt64(bytes.count - index))
                    remainingPayload -= take
                    index += Int(take)
                    if remainingPayload == 0, frameEnded() { completed = true }
                    continue
                }
                header.append(bytes[index])
                index += 1
                guard header.count >= 2, header.count == Self.headerSize(header[1]) else { continue }
                let fin = header[0] & 0x80 != 0
                let opcode = header[0] & 0x0F
                switch header[1] & 0x7F {
                case 126: remainingPayload = UInt64(header[2]) << 8 | UInt64(header[3])
                case 127: remainingPayload = header[2..<10].reduce(0) { $0 << 8 | UInt64($1) }
                case let length: remainingPayload = UInt64(length)
                }
                header.removeAll(keepingCapacity: true)
                // Data frames: 0 continuation, 1 text, 2 binary; 8 and above are control frames.
                frameEndsMessage = opcode < 8 && fin
                if opcode < 8, !fin { inFragmentedMessage = true }
                if remainingPayload == 0, frameEnded() { completed = true }
            }
        }
        return completed
    }

    /// Called when a frame's last byte has arrived; returns whether it completed a message.
    private func frameEnded() -> Bool {
        guard frameEndsMessage else { return false }
        frameEndsMessage = false
        inFragmentedMessage = false
        return true
    }
}

@available(*, unavailable)
extension WebSocketDeadlineHandler: Sendable {}
#endif
