#if NIO
import IMCodec
import NIOCore
import NIOWebSocket

/// Limits a ``WebSocketFrameHandler`` enforces beyond the frame size (which comes from its
/// ``FrameCodecOptions``).
public struct WebSocketFrameLimits: Sendable, Hashable {
    /// The most ping frames a peer may send in one ``pingWindow``; one more closes the connection
    /// with `policyViolation` (1008).
    public var maxPings: Int
    /// The window ``maxPings`` is counted in.
    public var pingWindow: TimeAmount
    /// The most WebSocket frames one fragmented message may take.
    public var maxFragments: Int
    /// How long the handler waits for the peer's close frame after sending its own, before it
    /// closes the connection anyway.
    public var closeTimeout: TimeAmount

    /// Creates limits: by default 32 pings per 10 s, 1,024 fragments per message, a 2 s close wait.
    public init(
        maxPings: Int = 32,
        pingWindow: TimeAmount = .seconds(10),
        maxFragments: Int = 1024,
        closeTimeout: TimeAmount = .seconds(2)
    ) {
        self.maxPings = max(0, maxPings)
        self.pingWindow = pingWindow
        self.maxFragments = max(1, maxFragments)
        self.closeTimeout = closeTimeout
    }
}

/// A WebSocket protocol violation seen by a ``WebSocketFrameHandler``: the peer broke RFC 6455 or
/// the one-`Frame`-per-binary-message mapping. Violations of the frame itself (size,
/// decoding) are `IMCodecError`s, as on the length-prefixed transport.
public struct WebSocketFrameError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong, as a short name: `textMessage`, `protocolError` or `pingFlood`.
    public let code: String
    /// The WebSocket close code the handler sends for it.
    public let closeCode: UInt16
    /// What the peer did.
    public let reason: String

    /// Creates an error.
    public init(code: String, closeCode: WebSocketErrorCode, reason: String) {
        self.code = code
        self.closeCode = UInt16(webSocketErrorCode: closeCode)
        self.reason = reason
    }

    /// `code: reason`.
    public var description: String { "\(code): \(reason)" }
}

/// Carries `Frame`s over WebSocket: one frame per binary WebSocket message, as the
/// length-prefixed transport carries one frame per varint-prefixed record.
///
/// Add it after NIOWebSocket's frame decoder and encoder (the `upgradePipelineHandler` of a
/// `NIOWebSocketServerUpgrader` created with `automaticErrorHandling: false` and a `maxFrameSize`
/// equal to ``FrameCodecOptions/effectiveMaxFrameSize``). Its two sides match the pipeline
/// ``NIOCore/ChannelPipeline/SynchronousOperations/addInboundFrameDecoder(options:stats:)`` builds, so
/// the same application handler serves both transports:
///
/// - **Inbound** it reads `WebSocketFrame`s and passes on ``InboundFrame``s: each binary message
///   (fragments joined, at most ``WebSocketFrameLimits/maxFragments`` of them) is validated and its
///   routing facts read through a `FrameView`, exactly as ``InboundFrameDecoder`` does,
///   and its ``InboundFrame/record`` is the body behind a varint length prefix, ready to be written
///   to a length-prefixed peer.
/// - **Outbound** it takes `ByteBuffer`s holding length-prefixed records (``InboundFrame/record``,
///   or bytes from ``NIOCore/ByteBuffer/writeFrame(_:)``) and writes each record's body as one
///   binary message.
///
/// It answers pings with pongs (at most ``WebSocketFrameLimits/maxPings`` per window), answers a
/// close frame with a close frame and closes the connection, and turns a `close()` of the channel
/// into the close handshake: it sends a close frame and closes when the peer answers or after
/// ``WebSocketFrameLimits/closeTimeout``. A violation is fired down the pipeline as an error
/// (`IMCodecError` for the frame: `tooLarge`, `malformed`, `tooDeep`, ...;
/// ``WebSocketFrameError`` for the WebSocket protocol: a text message, a bad fragment sequence,
/// a ping flood); the handler drops any further input and, when the application closes the
/// channel, sends the close code that fits the error (``closeCode(for:)``). The application may
/// choose the code of a close it starts itself with a ``CloseRequest`` outbound user event.
public final class WebSocketFrameHandler: ChannelDuplexHandler, RemovableChannelHandler {
    /// WebSocket frames from NIOWebSocket's decoder.
    public typealias InboundIn = WebSocketFrame
    /// Each received IMCodec frame with its routing facts.
    public typealias InboundOut = InboundFrame
    /// Length-prefixed records to send, one binary message each.
    public typealias OutboundIn = ByteBuffer
    /// WebSocket frames for NIOWebSocket's encoder.
    public typealias OutboundOut = WebSocketFrame

    /// An outbound user event that sets the code and reason of the close frame the handler sends
    /// when the channel is next closed. An error the handler raised itself keeps its own code.
    public struct CloseRequest: Sendable, Hashable {
        /// The WebSocket close code.
        public var code: UInt16
        /// The reason (cut to 123 bytes of UTF-8, the most a close frame holds).
        public var reason: String

        /// Creates a request.
        public init(code: WebSocketErrorCode, reason: String) {
            self.code = UInt16(webSocketErrorCode: code)
            self.reason = reason
        }
    }

    /// The WebSocket close code for a frame error: `messageTooLarge` (1009) for `tooLarge`,
    /// `policyViolation` (1008) for `frameTimeout` (a message left incomplete, see
    /// ``WebSocketDeadlineHandler``), `dataInconsistentWithMessage` (1007, invalid payload data) for
    /// every other decoding error.
    public static func closeCode(for code: IMCodecError.Code) -> WebSocketErrorCode {
        switch code {
        case .tooLarge: .messageTooLarge
        case .frameTimeout: .policyViolation
        default: .dataInconsistentWithMessage
        }
    }

    /// The frame size and decoding limits.
    public let options: FrameCodecOptions
    /// The ping, fragment and close limits.
    public let limits: WebSocketFrameLimits

    private let wireDecoder: WireDecoder
    private let stats: FrameDecoderStats?
    private let maxMessageSize: Int
    private var fragments: ByteBuffer?
    private var fragmentCount = 0
    private var pingWindowStart: NIODeadline?
    private var pingsInWindow = 0
    private var needsFlush = false
    /// Set once the peer broke the protocol; further input is dropped.
    private var failed = false
    /// Set once the peer's close frame arrived.
    private var closeReceived = false
    /// Set once this side sent its close frame; nothing is written after it.
    private var closeSent = false
    private var pendingClose: (code: UInt16, reason: String, fromError: Bool)?
    private var closePromise: EventLoopPromise<Void>?
    private var closeTimer: Scheduled<Void>?

    /// Creates a handler.
    /// - Parameters:
    ///   - options: The frame size limit (for a whole message, fragments joined) and decoding limits.
    ///   - limits: The ping, fragment and close limits.
    ///   - stats: Counters to update (frames and bytes decoded, bytes buffered for a fragmented
    ///     message), or `nil`.
    public init(
        options: FrameCodecOptions = FrameCodecOptions(),
        limits: WebSocketFrameLimits = WebSocketFrameLimits(),
        stats: FrameDecoderStats? = nil
    ) {
        self.options = options
        self.limits = limits
        self.stats = stats
        self.maxMessageSize = options.effectiveMaxFrameSize
        self.wireDecoder = options.makeWireDecoder()
    }

    // MARK: Inbound

    /// Handles one WebSocket frame: data, ping, pong or close.
    public func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = Self.unwrapInboundIn(data)
        guard !closeReceived else { return }
        guard !failed || frame.opcode == .connectionClose else { return }
        if frame.rsv1 || frame.rsv2 || frame.rsv3 {
            return fail(context, Self.protocolError("reserved bits set (no extension was agreed)"))
        }
        if frame.maskKey == nil {
            return fail(context, Self.protocolError("a client frame must be masked"))
        }
        switch frame.opcode {
        case .binary:
            guard fragments == nil else {
                return fail(context, Self.protocolError("a new message began before the fragmented one ended"))
            }
            if frame.fin {
                deliver(context, frame.unmaskedData)
            } else {
                fragmentCount = 1
                fragments = frame.unmaskedData
                stats?.observe(buffered: frame.length)
            }
        case .continuation:
            continueMessage(context, frame)
        case .text:
            fail(
                context,
                WebSocketFrameError(
                    code: "textMessage",
                    closeCode: .unacceptableData,
                    reason: "text messages are not accepted: send each frame as one binary message"
                )
            )
        case .ping:
            ping(context, frame)
        case .pong:
            break
        case .connectionClose:
            peerClosed(context, frame)
        default:
            fail(context, Self.protocolError("unknown opcode \(frame.opcode)"))
        }
    }

    /// A continuation frame: appended to the fragmented message, which is delivered at its last
    /// fragment, within the size and fragment-count limits.
    private func continueMessage(_ context: ChannelHandlerContext, _ frame: WebSocketFrame) {
        guard var buffer = fragments else {
            return fail(context, Self.protocolError("a continuation frame outside a fragmented message"))
        }
        fragments = nil  // keeps the buffer uniquely referenced while it grows
        fragmentCount += 1
        guard buffer.readableBytes + frame.length <= maxMessageSize else {
            return fail(context, IMCodecError.tooLarge("a fragmented message passed the \(maxMessageSize)-byte limit"))
        }
        guard fragmentCount <= limits.maxFragments else {
            return fail(
                context,
                WebSocketFrameError(
                    code: "protocolError",
                    closeCode: .policyViolation,
                    reason: "a message in more than \(limits.maxFragments) fragments"
                )
            )
        }
        var piece = frame.unmaskedData
        buffer.writeBuffer(&piece)
        stats?.observe(buffered: buffer.readableBytes)
        if frame.fin {
            fragmentCount = 0
            deliver(context, buffer)
        } else {
            fragments = buffer
        }
    }

    /// A violation of RFC 6455, closed with 1002 (protocol error).
    private static func protocolError(_ reason: String) -> WebSocketFrameError {
        WebSocketFrameError(code: "protocolError", closeCode: .protocolError, reason: reason)
    }

    /// Flushes the pongs written while reading.
    public func channelReadComplete(context: ChannelHandlerContext) {
        if needsFlush {
            needsFlush = false
            context.flush()
        }
        context.fireChannelReadComplete()
    }

    /// Turns an error of NIOWebSocket's frame decoder into this handler's errors; passes others on.
    public func errorCaught(context: ChannelHandlerContext, error: any Error) {
        switch error {
        case NIOWebSocketError.invalidFrameLength:
            fail(context, IMCodecError.tooLarge("a WebSocket frame longer than \(maxMessageSize) bytes"))
        case let error as NIOWebSocketError:
            fail(context, WebSocketFrameError(code: "protocolError", closeCode: .protocolError, reason: "\(error)"))
        case let error as IMCodecError:
            // From a handler in front, such as WebSocketDeadlineHandler (frameTimeout).
            fail(context, error)
        default:
            if failed, error is ByteToMessageDecoderError { return }  // bytes after the decoder's own error
            context.fireErrorCaught(error)
        }
    }

    /// Cancels the close timer and completes a pending close. A connection that ends between the
    /// fragments of a message raises `truncated` first, as a length-prefixed stream that ends
    /// inside a frame does (``FrameDecoder``); one that ends between messages, or after a close
    /// frame either side sent, ends cleanly.
    public func channelInactive(context: ChannelHandlerContext) {
        if let fragments, !failed, !closeReceived, !closeSent {
            failed = true
            self.fragments = nil
            context.fireErrorCaught(
                IMCodecError.truncated(
                    "the connection ended inside a fragmented message (\(fragments.readableBytes) bytes of it received)"
                )
            )
        }
        closeTimer?.cancel()
        closeTimer = nil
        if let promise = closePromise {
            closePromise = nil
            promise.succeed()
        }
        context.fireChannelInactive()
    }

    private func deliver(_ context: ChannelHandlerContext, _ body: ByteBuffer) {
        guard body.readableBytes <= maxMessageSize else {
            return fail(
                context,
                IMCodecError.tooLarge(
                    "a message of \(body.readableBytes) bytes passed the \(maxMessageSize)-byte limit"
                )
            )
        }
        var record = context.channel.allocator.buffer(capacity: body.readableBytes + 5)
        let prefixSize = record.writeLengthPrefix(body.readableBytes)
        record.writeImmutableBuffer(body)
        let inbound: InboundFrame
        do {
            inbound = try InboundFrame(
                inspecting: FrameRecord(record: record, prefixSize: prefixSize),
                with: wireDecoder
            )
        } catch {
            return fail(context, error)
        }
        stats?.count(frameBytes: record.readableBytes)
        stats?.observe(buffered: 0)
        context.fireChannelRead(Self.wrapInboundOut(inbound))
    }

    private func ping(_ context: ChannelHandlerContext, _ frame: WebSocketFrame) {
        let now = NIODeadline.now()
        if let start = pingWindowStart, now - start < limits.pingWindow {
            pingsInWindow += 1
        } else {
            pingWindowStart = now
            pingsInWindow = 1
        }
        guard pingsInWindow <= limits.maxPings else {
            return fail(
                context,
                WebSocketFrameError(
                    code: "pingFlood",
                    closeCode: .policyViolation,
                    reason: "more than \(limits.maxPings) pings in \(Self.describe(limits.pingWindow))"
                )
            )
        }
        guard !closeSent else { return }
        let pong = WebSocketFrame(fin: true, opcode: .pong, data: frame.unmaskedData)
        context.write(Self.wrapOutboundOut(pong), promise: nil)
        needsFlush = true
    }

    private func peerClosed(_ context: ChannelHandlerContext, _ frame: WebSocketFrame) {
        closeReceived = true
        fragments = nil
        if closeSent {
            // The answer to our close frame: the handshake is complete.
            context.close(promise: nil)
            return
        }
        closeSent = true
        var data = frame.unmaskedData
        var reply = context.channel.allocator.buffer(capacity: 2)
        if let code = data.readInteger(as: UInt16.self) {
            // Echo the peer's code, as RFC 6455 §5.5.1 suggests; a code it may not send is a protocol error.
            let valid = (1000...1003).contains(code) || (1007...1011).contains(code) || (3000...4999).contains(code)
            reply.writeInteger(valid ? code : UInt16(webSocketErrorCode: .protocolError))
        }
        let closeFrame = WebSocketFrame(fin: true, opcode: .connectionClose, data: reply)
        let loopBoundContext = NIOLoopBound(context, eventLoop: context.eventLoop)
        context.writeAndFlush(Self.wrapOutboundOut(closeFrame)).whenComplete { _ in
            loopBoundContext.value.close(promise: nil)
        }
    }

    /// Records `error` as the reason to close, drops further input, and fires the error.
    private func fail(_ context: ChannelHandlerContext, _ error: any Error) {
        guard !failed else { return }
        failed = true
        fragments = nil
        switch error {
        case let error as IMCodecError:
            pendingClose = (
                UInt16(webSocketErrorCode: Self.closeCode(for: error.code)),
                "\(error.code.rawValue): \(error.reason)", true
            )
        case let error as WebSocketFrameError:
            pendingClose = (error.closeCode, error.description, true)
        default:
            pendingClose = (UInt16(webSocketErrorCode: .unexpectedServerError), "\(error)", true)
        }
        context.fireErrorCaught(error)
    }

    // MARK: Outbound

    /// Writes each length-prefixed record in `data` as one binary message.
    public func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard !closeSent else {
            promise?.fail(ChannelError.outputClosed)
            return
        }
        var buffer = Self.unwrapOutboundIn(data)
        var messages: [ByteBuffer] = []
        do {
            while buffer.readableBytes > 0 {
                guard let record = try buffer.readFrameRecord(maxFrameSize: Int(UInt32.max)) else {
                    throw IMCodecError.invalidArgument("an outbound buffer ends inside a length-prefixed record")
                }
                messages.append(record.body)
            }
        } catch {
            promise?.fail(error)
            return
        }
        guard let last = messages.popLast() else {
            promise?.succeed()
            return
        }
        for body in messages {
            context.write(Self.wrapOutboundOut(WebSocketFrame(fin: true, opcode: .binary, data: body)), promise: nil)
        }
        context.write(Self.wrapOutboundOut(WebSocketFrame(fin: true, opcode: .binary, data: last)), promise: promise)
    }

    /// Takes a ``CloseRequest``; passes other events on.
    public func triggerUserOutboundEvent(context: ChannelHandlerContext, event: Any, promise: EventLoopPromise<Void>?) {
        guard let request = event as? CloseRequest else {
            context.triggerUserOutboundEvent(event, promise: promise)
            return
        }
        if pendingClose?.fromError != true {
            pendingClose = (request.code, request.reason, false)
        }
        promise?.succeed()
    }

    /// Starts the close handshake: sends a close frame and closes when the peer answers, or after
    /// ``WebSocketFrameLimits/closeTimeout``. A second close, or one after the handshake, closes at once.
    public func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        guard mode == .all, !closeSent, context.channel.isActive else {
            context.close(mode: mode, promise: promise)
            return
        }
        closeSent = true
        closePromise = promise
        let (code, reason, _) = pendingClose ?? (UInt16(webSocketErrorCode: .normalClosure), "", false)
        var data = context.channel.allocator.buffer(capacity: 2 + min(reason.utf8.count, 123))
        data.writeInteger(code)
        data.writeBytes(Self.truncated(reason, toUTF8Bytes: 123))
        let loopBoundContext = NIOLoopBound(context, eventLoop: context.eventLoop)
        context.writeAndFlush(Self.wrapOutboundOut(WebSocketFrame(fin: true, opcode: .connectionClose, data: data)))
            .whenFailure { _ in loopBoundContext.value.close(promise: nil) }
        closeTimer = context.eventLoop.scheduleTask(in: limits.closeTimeout) {
            loopBoundContext.value.close(promise: nil)
        }
    }

    static func truncated(_ text: String, toUTF8Bytes limit: Int) -> [UInt8] {
        var bytes = Array(text.utf8.prefix(limit))
        // Drop a scalar cut in half (continuation bytes are 10xxxxxx).
        if bytes.count == limit, text.utf8.count > limit {
            while let last = bytes.last, last & 0xC0 == 0x80 { bytes.removeLast() }
            if let last = bytes.last, last >= 0xC0 { bytes.removeLast() }
        }
        return bytes
    }

    private static func describe(_ amount: TimeAmount) -> String {
        let ms = amount.nanoseconds / 1_000_000
        return ms % 1000 == 0 ? "\(ms / 1000) s" : "\(ms) ms"
    }
}

@available(*, unavailable)
extension WebSocketFrameHandler: Sendable {}
#endif
