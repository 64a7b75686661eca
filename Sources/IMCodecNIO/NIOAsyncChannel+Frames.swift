#if NIO
import IMCodec
import NIOCore

/// A connection that carries IMCodec frames, for Swift concurrency: ``InboundFrame``s in, as an
/// `AsyncSequence`, and `Frame` values out, through an async writer.
///
/// Make one in a bootstrap's channel initializer with
/// ``NIOCore/NIOAsyncChannel/framing(_:options:maxFrameWait:configuration:)`` (or, inside an
/// initializer that adds handlers of its own, with
/// ``NIOCore/NIOAsyncChannel/init(synchronouslyFraming:options:maxFrameWait:configuration:)``),
/// then use it in ``NIOCore/NIOAsyncChannel/withFrames(isolation:_:)``:
///
/// ```swift
/// let connection = try await ClientBootstrap(group: group)
///     .connect(host: "127.0.0.1", port: 7070) { channel in IMCodecFrameChannel.framing(channel) }
/// try await connection.withFrames { inbound, outbound in
///     try await outbound.write(Frame(Message.c2cText(from: "alice", to: "bob", "hi")))
///     for try await frame in inbound { print(frame.payloadKind as Any) }
/// }
/// ```
///
/// The channel handlers stay the layer underneath: the pipeline holds an ``InboundFrameDecoder``
/// (validates each body and reads its routing facts) and a ``FrameEncoder``, and NIO's
/// `NIOAsyncChannel` bridges them to Swift concurrency:
///
/// - **Backpressure.** Inbound frames are buffered up to the high watermark of the
///   configuration's `backPressureStrategy` (by default 10 frames); then the channel stops reading
///   from the socket until the consumer has taken the buffer down to the low watermark, so a slow
///   consumer holds at most that many frames plus one read. Outbound, `write(_:)` suspends while the
///   channel is not writable (its pending bytes are above the channel's write-buffer watermark).
/// - **Errors.** A frame the decoder rejects (`IMCodecError`: `malformed`, `tooLarge`,
///   `tooDeep`, `truncated`, `frameTimeout`...) ends the inbound sequence by throwing that error;
///   the frames before it are delivered first.
/// - **Cancellation.** Cancelling the task that runs ``NIOCore/NIOAsyncChannel/withFrames(isolation:_:)``
///   closes the connection at once: the peer sees the end of the stream.
public typealias IMCodecFrameChannel = NIOAsyncChannel<InboundFrame, Frame>

extension ChannelPipeline.SynchronousOperations {
    /// Adds the handlers of a length-prefixed (TCP) frame connection that reads ``InboundFrame``s
    /// and is written `Frame`s: a ``FrameDeadlineHandler`` when `maxFrameWait` is given,
    /// an ``InboundFrameDecoder`` and a ``FrameEncoder``.
    ///
    /// ```
    /// socket ─▶ [FrameDeadlineHandler] ─▶ InboundFrameDecoder ─▶ InboundFrame
    /// socket ◀─ FrameEncoder ◀─ Frame
    /// ```
    ///
    /// Wrap the channel in a `NIOAsyncChannel<InboundFrame, Frame>` after it
    /// (``NIOCore/NIOAsyncChannel/init(synchronouslyFraming:options:maxFrameWait:configuration:)`` does both), or
    /// add an application handler of your own.
    ///
    /// - Parameters:
    ///   - options: The frame size limit and decoding limits.
    ///   - maxFrameWait: How long a frame may stay incomplete before the decoder fails the
    ///     connection with `frameTimeout`; `nil` for no limit.
    ///   - stats: Counters for the decoder to update, or `nil`.
    /// - Throws: When a handler cannot be added (the channel is closed).
    public func addIMCodecFrameHandlers(
        options: FrameCodecOptions = FrameCodecOptions(),
        maxFrameWait: TimeAmount? = nil,
        stats: FrameDecoderStats? = nil
    ) throws {
        if let maxFrameWait { try addHandler(FrameDeadlineHandler(maxFrameWait: maxFrameWait)) }
        try addInboundFrameDecoder(options: options, stats: stats)
        try addHandler(MessageToByteHandler(FrameEncoder()))
    }

    /// Adds the handlers of a WebSocket frame connection (on the server side, after NIOWebSocket's
    /// frame decoder and encoder) that reads ``InboundFrame``s and is written `Frame`s: a
    /// ``WebSocketFrameHandler`` and a ``FrameEncoder``, so that the connection reads and writes
    /// the same values as one built by ``addIMCodecFrameHandlers(options:maxFrameWait:stats:)``.
    ///
    /// Call it in the upgrader's pipeline configuration, then wrap the channel in a
    /// `NIOAsyncChannel<InboundFrame, Frame>` (`init(wrappingChannelSynchronously:configuration:)`).
    ///
    /// - Parameters:
    ///   - options: The message size limit and decoding limits.
    ///   - limits: The ping, fragment and close limits.
    ///   - stats: Counters for the handler to update, or `nil`.
    /// - Throws: When a handler cannot be added (the channel is closed).
    public func addIMCodecWebSocketFrameHandlers(
        options: FrameCodecOptions = FrameCodecOptions(),
        limits: WebSocketFrameLimits = WebSocketFrameLimits(),
        stats: FrameDecoderStats? = nil
    ) throws {
        try addHandler(WebSocketFrameHandler(options: options, limits: limits, stats: stats))
        try addHandler(MessageToByteHandler(FrameEncoder()))
    }
}

extension NIOAsyncChannel where Inbound == InboundFrame, Outbound == Frame {
    /// Adds the length-prefixed frame handlers to `channel`'s pipeline
    /// (``NIOCore/ChannelPipeline/SynchronousOperations/addIMCodecFrameHandlers(options:maxFrameWait:stats:)``)
    /// and wraps it.
    ///
    /// Call it on the channel's event loop, before the channel is active: in a bootstrap's
    /// channel initializer, inside `channel.eventLoop.makeCompletedFuture { }`.
    ///
    /// - Parameters:
    ///   - channel: A newly created channel.
    ///   - options: The frame size limit and decoding limits.
    ///   - maxFrameWait: How long a frame may stay incomplete; `nil` for no limit.
    ///   - configuration: The inbound backpressure (by default, low watermark 2 and high watermark 10
    ///     frames) and outbound half-closure.
    /// - Throws: When a handler cannot be added (the channel is closed).
    public init(
        synchronouslyFraming channel: any Channel,
        options: FrameCodecOptions = FrameCodecOptions(),
        maxFrameWait: TimeAmount? = nil,
        configuration: Configuration = Configuration()
    ) throws {
        try channel.pipeline.syncOperations.addIMCodecFrameHandlers(options: options, maxFrameWait: maxFrameWait)
        try self.init(wrappingChannelSynchronously: channel, configuration: configuration)
    }

    /// A channel initializer for `ServerBootstrap.bind(host:port:childChannelInitializer:)` and
    /// `ClientBootstrap.connect(host:port:channelInitializer:)` (or any bootstrap's): adds the
    /// length-prefixed frame handlers to `channel` and wraps it.
    ///
    /// ```swift
    /// let server = try await ServerBootstrap(group: group)
    ///     .bind(host: "127.0.0.1", port: 0) { channel in IMCodecFrameChannel.framing(channel) }
    /// ```
    ///
    /// - Parameters:
    ///   - channel: The channel the bootstrap created.
    ///   - options: The frame size limit and decoding limits.
    ///   - maxFrameWait: How long a frame may stay incomplete; `nil` for no limit.
    ///   - configuration: The inbound backpressure and outbound half-closure.
    /// - Returns: A future for the wrapped channel, completed on the channel's event loop.
    public static func framing(
        _ channel: any Channel,
        options: FrameCodecOptions = FrameCodecOptions(),
        maxFrameWait: TimeAmount? = nil,
        configuration: Configuration = Configuration()
    ) -> EventLoopFuture<NIOAsyncChannel<InboundFrame, Frame>> {
        channel.eventLoop.makeCompletedFuture {
            try NIOAsyncChannel(
                synchronouslyFraming: channel,
                options: options,
                maxFrameWait: maxFrameWait,
                configuration: configuration
            )
        }
    }

    /// Gives `body` the connection's inbound frames and outbound writer, and closes the connection
    /// when `body` returns or throws, or as soon as the task running it is cancelled.
    ///
    /// This is `executeThenClose(_:)` plus the cancellation: NIO's own ends the inbound sequence
    /// when the task is cancelled, but leaves the connection open until `body` returns; this one
    /// closes it at once, so the peer sees the end of the stream and pending writes fail.
    ///
    /// - Parameters:
    ///   - isolation: The actor `body` runs on (the caller's, by default).
    ///   - body: Reads `inbound` (``InboundFrame``s, in order; it throws the decoder's
    ///     `IMCodecError` for bad input) and writes `Frame`s with `outbound`.
    /// - Returns: What `body` returns.
    /// - Throws: What `body` throws.
    public func withFrames<Result: Sendable>(
        isolation: isolated (any Actor)? = #isolation,
        _ body: (
            _ inbound: NIOAsyncChannelInboundStream<InboundFrame>, _ outbound: NIOAsyncChannelOutboundWriter<Frame>
        ) async throws -> Result
    ) async throws -> Result {
        let channel = self.channel
        return try await withTaskCancellationHandler(
            operation: {
                try await executeThenClose(isolation: isolation) { inbound, outbound in
                    try await body(inbound, outbound)
                }
            },
            onCancel: { channel.close(promise: nil) },
            isolation: isolation
        )
    }
}
#endif
