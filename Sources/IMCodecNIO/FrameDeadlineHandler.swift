#if NIO
import IMCodec
import NIOCore

/// Fires an `IMCodecError` with code `IMCodecError.Code.frameTimeout` when a
/// frame stays incomplete for longer than `maxFrameWait`, so a peer that stalls (or trickles a byte
/// at a time) inside a frame cannot pin a connection and its buffer forever.
///
/// Place it in front of the frame decoder. It passes every byte through unchanged and only follows
/// the length prefixes; the clock starts at the read that leaves a frame incomplete and stops when
/// that frame's last byte arrives. It does not close the channel itself: the error travels down the
/// pipeline, where an error handler (such as the relay's) answers and closes. A peer that is idle
/// between frames is not affected; use NIO's `IdleStateHandler` for that.
///
/// Time the server does not read is not the peer's: the frame is not late while the channel's
/// `autoRead` is off (the server stopped reading, for instance to hold clients back while what it
/// forwards them to is full; a ``ReadsResumed`` event then gives it its whole wait again, see
/// there), nor while the application holds back the next `read()` after a batch of reads, as
/// `NIOAsyncChannel` does while its consumer is behind: a deadline that passes while no `read()`
/// went by since the last batch issues one `read()` (the rest may wait in the socket; once per
/// hold) and gives the frame its whole wait again; while the hold lasts past that read, later
/// deadlines only start again, and the application's `read()` that ends it gives the frame its
/// whole wait again. The frame is late after a whole wait with a `read()` pending. So a
/// hold lets in at most one more batch of reads than the application asked for.
public final class FrameDeadlineHandler: ChannelDuplexHandler, RemovableChannelHandler {
    /// Bytes read from the socket.
    public typealias InboundIn = ByteBuffer
    /// The same bytes, passed on.
    public typealias InboundOut = ByteBuffer
    /// Whatever is written, passed on.
    public typealias OutboundIn = NIOAny
    /// The same, unchanged.
    public typealias OutboundOut = NIOAny

    /// How long a frame may stay incomplete.
    public let maxFrameWait: TimeAmount

    private var prefixValue: UInt64 = 0
    private var prefixBytes = 0
    private var remainingBody = 0
    private var lostTrack = false
    private var deadline: Scheduled<Void>?
    private var reads = HeldReads()

    /// Creates a handler that allows each frame `maxFrameWait` to arrive in full.
    public init(maxFrameWait: TimeAmount) {
        self.maxFrameWait = maxFrameWait
    }

    /// Whether the bytes seen so far end inside a frame.
    public var isInsideFrame: Bool { prefixBytes > 0 || remainingBody > 0 }

    /// Follows the frame boundaries in `data`, arms or disarms the deadline, and passes `data` on.
    public func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let buffer = Self.unwrapInboundIn(data)
        if !lostTrack {
            let completed = scan(buffer)
            if completed || !isInsideFrame {
                deadline?.cancel()
                deadline = nil
            }
            if isInsideFrame, deadline == nil {
                arm(context: context)
            }
        }
        context.fireChannelRead(data)
    }

    /// Notes the end of a batch of reads: the next `read()` has not gone by yet.
    public func channelReadComplete(context: ChannelHandlerContext) {
        reads.batchEnded()
        context.fireChannelReadComplete()
    }

    /// Notes the `read()` going by; one that ends a hold a deadline passed in gives a frame still
    /// incomplete its whole wait again.
    public func read(context: ChannelHandlerContext) {
        if reads.readGoesBy(), !lostTrack, isInsideFrame {
            disarm()
            arm(context: context)
        }
        context.read()
    }

    /// Cancels the deadline when the channel closes.
    public func channelInactive(context: ChannelHandlerContext) {
        disarm()
        context.fireChannelInactive()
    }

    /// On ``ReadsResumed``: a frame still incomplete gets its whole wait again.
    public func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is ReadsResumed, !lostTrack, isInsideFrame {
            disarm()
            arm(context: context)
        }
        context.fireUserInboundEventTriggered(event)
    }

    /// Cancels the deadline when the handler leaves the pipeline.
    public func handlerRemoved(context: ChannelHandlerContext) {
        disarm()
    }

    private func disarm() {
        deadline?.cancel()
        deadline = nil
    }

    private func arm(context: ChannelHandlerContext) {
        let wait = maxFrameWait
        let loopBoundContext = NIOLoopBound(context, eventLoop: context.eventLoop)
        let loopBoundSelf = NIOLoopBound(self, eventLoop: context.eventLoop)
        deadline = context.eventLoop.scheduleTask(in: wait) {
            let handler = loopBoundSelf.value
            handler.deadline = nil
            guard handler.isInsideFrame else { return }
            let context = loopBoundContext.value
            // Reads off or held back: the rest may be waiting in the socket (HeldReads).
            let found = handler.reads.deadlinePassed(readsPaused: context.channel.readsArePaused)
            guard !found.waitsAgain(arm: { handler.arm(context: context) }, read: { context.read() }) else { return }
            handler.lostTrack = true
            let awaited = handler.remainingBody
            context.fireErrorCaught(
                IMCodecError(
                    code: .frameTimeout,
                    reason: "a frame stayed incomplete for \(Self.describe(wait))"
                        + (awaited > 0 ? " (\(awaited) bytes of it still missing)" : " (inside its length prefix)")
                )
            )
        }
    }

    /// Walks the prefixes in `buffer`; returns whether some frame was completed.
    private func scan(_ buffer: ByteBuffer) -> Bool {
        var completed = false
        buffer.withUnsafeReadableBytes { bytes in
            var index = 0
            while index < bytes.count {
                if remainingBody > 0 {
                    let take = min(remainingBody, bytes.count - index)
                    remainingBody -= take
                    index += take
                    if remainingBody == 0 { completed = true }
                    continue
                }
                switch WireFormat.continueVarint(
                    bytes,
                    &index,
                    end: bytes.count,
                    value: &prefixValue,
                    count: &prefixBytes
                )
                {
                case .complete:
                    remainingBody = Int(clamping: prefixValue)
                    prefixValue = 0
                    prefixBytes = 0
                    if remainingBody == 0 { completed = true }
                case .overlong:
                    // Longer than 10 bytes: not a prefix the decoder accepts (it reads a padded one up
                    // to 10, as `Delimited.readLengthPrefix` does) and reports it; stop following.
                    lostTrack = true
                    prefixBytes = 0
                    remainingBody = 0
                    return
                case .truncated:
                    break  // the prefix goes on in the next read
                }
            }
        }
        return completed
    }

    private static func describe(_ amount: TimeAmount) -> String {
        let ms = amount.nanoseconds / 1_000_000
        return ms % 1000 == 0 ? "\(ms / 1000) s" : "\(ms) ms"
    }
}

@available(*, unavailable)
extension FrameDeadlineHandler: Sendable {}

extension ChannelPipeline.SynchronousOperations {
    /// Adds a ``FrameDecoder`` and a ``FrameEncoder``: the channel then reads and writes `Frame` values.
    /// - Parameters:
    ///   - options: The frame size limit and decoding limits.
    ///   - stats: Counters for the decoder to update, or `nil`.
    public func addFrameCodec(options: FrameCodecOptions = FrameCodecOptions(), stats: FrameDecoderStats? = nil) throws
    {
        try addHandler(frameDecoderHandler(FrameDecoder(options: options, stats: stats), options: options))
        try addHandler(MessageToByteHandler(FrameEncoder()))
    }

    /// Adds an ``InboundFrameDecoder`` (the routing fast path): the channel then reads ``InboundFrame`` values
    /// and is written `ByteBuffer`s (for instance ``InboundFrame/record``, or bytes from ``NIOCore/ByteBuffer/writeFrame(_:)``).
    /// - Parameters:
    ///   - options: The frame size limit and decoding limits.
    ///   - stats: Counters for the decoder to update, or `nil`.
    public func addInboundFrameDecoder(
        options: FrameCodecOptions = FrameCodecOptions(),
        stats: FrameDecoderStats? = nil
    ) throws {
        try addHandler(frameDecoderHandler(InboundFrameDecoder(options: options, stats: stats), options: options))
    }
}

/// A `ByteToMessageHandler` whose buffer is capped at one maximal frame, as a second line of defence behind the prefix check.
func frameDecoderHandler<D: NIOSingleStepByteToMessageDecoder>(
    _ decoder: D,
    options: FrameCodecOptions
) -> ByteToMessageHandler<D> {
    let (cap, overflow) = options.effectiveMaxFrameSize.addingReportingOverflow(16)
    return ByteToMessageHandler(decoder, maximumBufferSize: overflow ? nil : cap)
}
#endif
