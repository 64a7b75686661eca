#if Tools
import IMCodec
import IMCodecNIO
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOWebSocket

/// How a ``RelayServer`` listens and what it tolerates from a client.
struct RelayConfiguration: Sendable {
    /// The address to listen on; only loopback addresses are accepted.
    var host = "127.0.0.1"
    /// The port to listen on; 0 picks a free one (see ``RelayServer/port``).
    var port = 7070
    /// The port to accept WebSocket connections on (same host), or `nil` for none; 0 picks a free
    /// one (see ``RelayServer/webSocketPort``).
    var webSocketPort: Int?
    /// Pings, fragments and the close wait of WebSocket connections (their frame size limit is
    /// ``codec``'s).
    var webSocket = WebSocketFrameLimits()
    /// The frame size and decoding limits for every connection.
    var codec = FrameCodecOptions(maxFrameSize: 1 << 20)
    /// How long a frame may stay incomplete before its connection is closed.
    var maxFrameWait: TimeAmount = .seconds(10)
    /// How long a new connection has to send its login frame.
    var loginTimeout: TimeAmount = .seconds(10)
    /// The most bytes queued for one client before it is closed as a slow consumer.
    var maxOutboundBytes = 8 << 20
    /// Static group membership: group id to member user ids (join frames add to it).
    var groups: [String: Set<String>] = [:]
    /// Where the relay reports connections, logins and errors.
    var log: @Sendable (String) -> Void = { _ in }
}

/// Counters of a running relay, read with ``RelayServer/stats()``.
struct RelayStats: Sendable {
    /// Connections accepted since start.
    var connectionsAccepted = 0
    /// Connections open now.
    var connectionsOpen = 0
    /// Users logged in now.
    var usersOnline = 0
    /// Message frames answered with a successful send ack.
    var messagesRouted = 0
    /// Frames written to receivers (a group message counts once per receiver).
    var framesForwarded = 0
    /// Send acks written (successful or not).
    var acksSent = 0
    /// Connections closed by the relay, by error code (`tooLarge`, `tooDeep`, `frameTimeout`, ...).
    var closedByError: [String: Int] = [:]
    /// The most bytes any connection's decode buffer has held at once.
    var peakInboundBufferedBytes = 0
    /// The most bytes any connection had queued for writing, sampled when it was written to.
    var peakOutboundBufferedBytes = 0
}

/// The loopback relay server: logs clients in, routes one-to-one and group messages on the
/// fast path (``IMCodecNIO/InboundFrame``), acknowledges every message, and forwards receipts,
/// recalls, edits, deletes and typing events. See ``RelayProtocol`` and README.md.
///
/// All connections share one event loop, so the routing table needs no lock and every
/// conversation's frames leave the relay in the order their sequence numbers were assigned.
final class RelayServer: Sendable {
    /// The event loop every connection and the routing table live on.
    let eventLoop: any EventLoop
    private let group: MultiThreadedEventLoopGroup
    private let channel: any Channel
    private let webSocketChannel: (any Channel)?
    private let router: NIOLoopBound<Router>

    /// The port the relay listens on.
    let port: Int
    /// The port the relay accepts WebSocket connections on, if it does.
    let webSocketPort: Int?

    private init(
        group: MultiThreadedEventLoopGroup, channel: any Channel, webSocketChannel: (any Channel)?,
        router: NIOLoopBound<Router>
    ) {
        self.group = group
        self.eventLoop = channel.eventLoop
        self.channel = channel
        self.webSocketChannel = webSocketChannel
        self.router = router
        self.port = channel.localAddress?.port ?? 0
        self.webSocketPort = webSocketChannel.map { $0.localAddress?.port ?? 0 }
    }

    /// Whether `host` names a loopback address (the relay listens nowhere else).
    static func isLoopback(_ host: String) -> Bool {
        host == "localhost" || host == "::1" || host.hasPrefix("127.")
    }

    /// Starts a relay on its own one-thread event loop group.
    static func start(_ configuration: RelayConfiguration) -> EventLoopFuture<RelayServer> {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let loop = group.next()
        guard isLoopback(configuration.host) else {
            let failed: EventLoopFuture<RelayServer> = loop.makeFailedFuture(
                IMCodecError.invalidArgument("the relay listens on loopback only, not \(configuration.host)"))
            return failed.flatMapError { error in
                group.shutdownGracefully { _ in }
                return loop.makeFailedFuture(error)
            }
        }
        return loop.flatSubmit { bind(configuration, group: group, loop: loop) }
    }

    private static func bind(
        _ configuration: RelayConfiguration, group: MultiThreadedEventLoopGroup, loop: any EventLoop
    ) -> EventLoopFuture<RelayServer> {
        let router = NIOLoopBound(Router(eventLoop: loop, configuration: configuration), eventLoop: loop)
        let codec = configuration.codec
        let frameWait = configuration.maxFrameWait
        let watermark = ChannelOptions.Types.WriteBufferWaterMark(
            low: max(1, configuration.maxOutboundBytes / 2), high: max(2, configuration.maxOutboundBytes))
        let bootstrap = ServerBootstrap(group: loop)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelOption(.writeBufferWaterMark, value: watermark)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let router = router.value
                    let session = Session(channel: channel, transport: .tcp)
                    let sync = channel.pipeline.syncOperations
                    try sync.addHandler(FrameDeadlineHandler(maxFrameWait: frameWait))
                    try sync.addInboundFrameDecoder(options: codec, stats: session.decoderStats)
                    try sync.addHandler(RelayConnectionHandler(router: router, session: session))
                }
            }
        return bootstrap.bind(host: configuration.host, port: configuration.port)
            .flatMap { channel -> EventLoopFuture<RelayServer> in
                guard let webSocketPort = configuration.webSocketPort else {
                    return loop.makeSucceededFuture(
                        RelayServer(group: group, channel: channel, webSocketChannel: nil, router: router))
                }
                return bindWebSocket(configuration, port: webSocketPort, loop: loop, router: router)
                    .map { RelayServer(group: group, channel: channel, webSocketChannel: $0, router: router) }
                    .flatMapError { error in channel.close().flatMapThrowing { throw error } }
            }
            .flatMapError { error in
                group.shutdownGracefully { _ in }
                return loop.makeFailedFuture(error)
            }
    }

    /// The WebSocket listener: an HTTP/1.1 server that only upgrades to WebSocket, then the same
    /// ``RelayConnectionHandler`` as on TCP behind a ``IMCodecNIO/WebSocketFrameHandler`` (one
    /// frame per binary message).
    private static func bindWebSocket(
        _ configuration: RelayConfiguration, port: Int, loop: any EventLoop, router: NIOLoopBound<Router>
    ) -> EventLoopFuture<any Channel> {
        let codec = configuration.codec
        let limits = configuration.webSocket
        let frameWait = configuration.maxFrameWait
        let upgradeTimeout = configuration.loginTimeout
        let watermark = ChannelOptions.Types.WriteBufferWaterMark(
            low: max(1, configuration.maxOutboundBytes / 2), high: max(2, configuration.maxOutboundBytes))
        let bootstrap = ServerBootstrap(group: loop)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelOption(.writeBufferWaterMark, value: watermark)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let upgrader = NIOWebSocketServerUpgrader(
                        maxFrameSize: min(codec.effectiveMaxFrameSize, Int(UInt32.max)),
                        automaticErrorHandling: false,
                        shouldUpgrade: { channel, _ in channel.eventLoop.makeSucceededFuture(HTTPHeaders()) },
                        upgradePipelineHandler: { channel, _ in
                            channel.eventLoop.makeCompletedFuture {
                                let session = Session(channel: channel, transport: .webSocket)
                                let sync = channel.pipeline.syncOperations
                                sync.removeHandler(name: UpgradeRequiredHandler.name, promise: nil)
                                // In front of NIOWebSocket's decoder: a message left incomplete is frameTimeout.
                                let decoder = try sync.context(
                                    handlerType: ByteToMessageHandler<WebSocketFrameDecoder>.self)
                                try sync.addHandler(
                                    WebSocketDeadlineHandler(maxMessageWait: frameWait),
                                    position: .before(decoder.handler))
                                try sync.addHandler(
                                    WebSocketFrameHandler(options: codec, limits: limits, stats: session.decoderStats))
                                try sync.addHandler(RelayConnectionHandler(router: router.value, session: session))
                            }
                        })
                    let sync = channel.pipeline.syncOperations
                    try sync.configureHTTPServerPipeline(
                        withServerUpgrade: (upgraders: [upgrader], completionHandler: { _ in }))
                    try sync.addHandler(UpgradeRequiredHandler(), name: UpgradeRequiredHandler.name)
                    // A connection that never completes its upgrade is closed after the login timeout
                    // (once upgraded, the session's own login timer runs).
                    channel.eventLoop.scheduleTask(in: upgradeTimeout) {
                        if (try? channel.pipeline.syncOperations.context(name: UpgradeRequiredHandler.name)) != nil {
                            channel.close(promise: nil)
                        }
                    }
                }
            }
        return bootstrap.bind(host: configuration.host, port: port)
    }

    /// A snapshot of the relay's counters.
    func stats() -> EventLoopFuture<RelayStats> {
        eventLoop.submit { self.router.value.snapshot() }
    }

    /// Completes when the listening socket closes.
    var closeFuture: EventLoopFuture<Void> { channel.closeFuture }

    /// Stops listening, closes every client, and shuts the event loop down.
    func shutdown() async throws {
        try? await channel.close()
        try? await webSocketChannel?.close()
        try? await eventLoop.submit { self.router.value.closeAll() }.get()
        try await group.shutdownGracefully()
    }
}

/// One client connection.
final class Session {
    /// How a client speaks to the relay.
    enum Transport: String {
        /// Length-prefixed frames on a TCP connection.
        case tcp
        /// One frame per binary WebSocket message.
        case webSocket = "ws"
    }

    /// The client's channel.
    let channel: any Channel
    /// How the client speaks to the relay.
    let transport: Transport
    /// The decoder's counters for this connection.
    let decoderStats = FrameDecoderStats()
    /// The logged-in user, once the login frame arrived.
    var userID: String?
    /// Set when the relay has decided to close this connection.
    var closing = false
    /// Whether a write awaits a flush.
    var needsFlush = false
    /// `user@address` for logs.
    var label: String {
        let address = channel.remoteAddress.map { "\($0.ipAddress ?? "?"):\($0.port ?? 0)" } ?? "?"
        return "\(userID ?? "?")@\(address)\(transport == .webSocket ? " (ws)" : "")"
    }

    init(channel: any Channel, transport: Transport) {
        self.channel = channel
        self.transport = transport
    }

    /// Tells a WebSocket connection's ``IMCodecNIO/WebSocketFrameHandler`` the close code and reason
    /// of the close that follows (an error the handler raised itself keeps its own code).
    func announceClose(code: String, reason: String) {
        guard transport == .webSocket else { return }
        let request = WebSocketFrameHandler.CloseRequest(
            code: RelayProtocol.webSocketCloseCode(for: code), reason: "\(code): \(reason)")
        channel.triggerUserOutboundEvent(request, promise: nil)
    }
}

/// The routing table and the routing rules. Lives on the relay's event loop.
final class Router {
    let eventLoop: any EventLoop
    let configuration: RelayConfiguration
    private var sessions: [String: Session] = [:]
    private var connections: [ObjectIdentifier: Session] = [:]
    private var groups: [String: Set<String>]
    private var seqs: [String: UInt64] = [:]
    private var uidCounter: UInt64 = 0
    private let uidPrefix: String
    private var stats = RelayStats()
    private var toFlush: [Session] = []
    private let allocator = ByteBufferAllocator()
    private let wireDecoder: WireDecoder

    init(eventLoop: any EventLoop, configuration: RelayConfiguration) {
        self.eventLoop = eventLoop
        self.configuration = configuration
        self.groups = configuration.groups
        self.uidPrefix = String(UInt32.random(in: 0x1000_0000...UInt32.max), radix: 16)
        self.wireDecoder = configuration.codec.makeWireDecoder()
    }

    private func log(_ line: String) { configuration.log(line) }

    // MARK: Connections

    func opened(_ session: Session) {
        connections[ObjectIdentifier(session)] = session
        stats.connectionsAccepted += 1
        stats.connectionsOpen += 1
    }

    func closed(_ session: Session) {
        guard connections.removeValue(forKey: ObjectIdentifier(session)) != nil else { return }
        stats.connectionsOpen -= 1
        stats.peakInboundBufferedBytes = max(stats.peakInboundBufferedBytes, session.decoderStats.peakBufferedBytes)
        unregister(session)
        log("closed \(session.label)")
    }

    private func unregister(_ session: Session) {
        if let user = session.userID, sessions[user] === session {
            sessions[user] = nil
            stats.usersOnline -= 1
        }
    }

    func snapshot() -> RelayStats {
        var copy = stats
        for session in connections.values {
            copy.peakInboundBufferedBytes = max(copy.peakInboundBufferedBytes, session.decoderStats.peakBufferedBytes)
        }
        return copy
    }

    func closeAll() {
        for session in connections.values {
            if session.transport == .webSocket {
                let request = WebSocketFrameHandler.CloseRequest(code: .goingAway, reason: "the relay is shutting down")
                session.channel.triggerUserOutboundEvent(request, promise: nil)
            }
            session.channel.close(promise: nil)
        }
    }

    /// Closes `session` after telling it why (where the socket still takes bytes).
    func fail(_ session: Session, code: String, reason: String) {
        guard !session.closing else { return }
        session.closing = true
        stats.closedByError[code, default: 0] += 1
        log("closing \(session.label): \(code): \(reason)")
        unregister(session)
        session.announceClose(code: code, reason: reason)
        let channel = session.channel
        guard channel.isActive else {
            channel.close(promise: nil)
            return
        }
        var buffer = allocator.buffer(capacity: 128)
        buffer.writeFrame(RelayProtocol.errorFrame(code: code, reason: reason))
        channel.writeAndFlush(buffer).whenComplete { _ in channel.close(promise: nil) }
        // A peer that does not read cannot hold the connection open.
        channel.eventLoop.scheduleTask(in: .seconds(1)) { channel.close(promise: nil) }
    }

    /// Closes `session` for an error raised in its pipeline (decoder, deadline, ...).
    func fail(_ session: Session, error: any Error) {
        switch error {
        case let error as IMCodecError:
            fail(session, code: error.code.rawValue, reason: error.reason)
        case is ByteToMessageDecoderError.PayloadTooLargeError:
            fail(session, code: IMCodecError.Code.tooLarge.rawValue, reason: "the decode buffer passed its cap")
        case let error as WebSocketFrameError:
            fail(session, code: error.code, reason: error.reason)
        case let error as ByteToMessageDecoderError:
            // Data after an earlier decode error; the connection is already being closed.
            if !session.closing { fail(session, code: "internal", reason: "\(error)") }
        default:
            fail(session, code: "io", reason: "\(error)")
        }
    }

    /// Drops a client whose queued output passed ``RelayConfiguration/maxOutboundBytes``: it stops
    /// receiving at once and is closed as soon as the current event is handled.
    func slowConsumer(_ session: Session) {
        guard !session.closing, !session.channel.isWritable else { return }
        session.closing = true
        stats.closedByError["slowConsumer", default: 0] += 1
        if let pending = try? session.channel.syncOptions?.getOption(.bufferedWritableBytes) {
            stats.peakOutboundBufferedBytes = max(stats.peakOutboundBufferedBytes, pending)
        }
        log("closing \(session.label): slowConsumer: more than \(configuration.maxOutboundBytes) bytes queued")
        unregister(session)
        session.announceClose(code: "slowConsumer", reason: "more than \(configuration.maxOutboundBytes) bytes queued")
        let channel = session.channel
        eventLoop.execute { channel.close(promise: nil) }
    }

    // MARK: Writing

    private func write(_ buffer: ByteBuffer, to session: Session) {
        guard !session.closing else { return }
        session.channel.write(buffer, promise: nil)
        if !session.needsFlush {
            session.needsFlush = true
            toFlush.append(session)
        }
        if !session.channel.isWritable {
            // Past the high-water mark: nothing more is queued for this client.
            slowConsumer(session)
        }
    }

    private func write(_ frame: Frame, to session: Session) {
        var buffer = allocator.buffer(capacity: 64)
        buffer.writeFrame(frame)
        write(buffer, to: session)
    }

    /// Flushes every connection written to since the last flush.
    func flush() {
        for session in toFlush {
            session.needsFlush = false
            guard !session.closing else { continue }
            if let pending = try? session.channel.syncOptions?.getOption(.bufferedWritableBytes),
                pending > stats.peakOutboundBufferedBytes
            {
                stats.peakOutboundBufferedBytes = pending
            }
            session.channel.flush()
        }
        toFlush.removeAll(keepingCapacity: true)
    }

    private func notice(_ session: Session, code: String, reason: String) {
        write(RelayProtocol.errorFrame(code: code, reason: reason), to: session)
    }

    // MARK: Routing

    func handle(_ frame: InboundFrame, from session: Session) {
        guard !session.closing else { return }
        guard let user = session.userID else {
            login(frame, session)
            return
        }
        switch frame.payloadKind {
        case .message?:
            routeMessage(frame, from: session, user: user)
        case .recall?, .edit?, .delete?, .typing?:
            routeEvent(frame, from: session, user: user)
        case .receipt?, .receipts?:
            routeReceipts(frame, from: session, user: user)
        case .systemNotice?:
            control(frame, from: session, user: user)
        case let kind:
            notice(session, code: "unsupported", reason: "the relay does not route \(kind?.protoName ?? "empty") frames")
        }
    }

    private func decoded(_ frame: InboundFrame, _ session: Session) -> Frame? {
        do {
            return try frame.decode(with: wireDecoder)
        } catch {
            fail(session, code: error.code.rawValue, reason: error.reason)
            return nil
        }
    }

    private func login(_ frame: InboundFrame, _ session: Session) {
        guard frame.payloadKind == .systemNotice, let decoded = decoded(frame, session) else {
            if !session.closing {
                fail(session, code: "notLoggedIn", reason: "the first frame must be a \"login\" system notice")
            }
            return
        }
        guard case .systemNotice(let notice)? = decoded.payload, notice.type == RelayProtocol.login,
            let user = notice.params["user_id"], !user.isEmpty
        else {
            fail(session, code: "notLoggedIn", reason: "the first frame must be a \"login\" system notice with a user_id")
            return
        }
        if let previous = sessions[user] {
            log("\(user) logged in again; closing the older connection \(previous.label)")
            unregister(previous)
            previous.closing = true
            var buffer = allocator.buffer(capacity: 64)
            buffer.writeFrame(RelayProtocol.notice(RelayProtocol.kickedOffline, ["user_id": user]))
            let channel = previous.channel
            channel.writeAndFlush(buffer).whenComplete { _ in channel.close(promise: nil) }
        }
        session.userID = user
        sessions[user] = session
        stats.usersOnline += 1
        log("\(session.label) logged in")
        write(RelayProtocol.notice(RelayProtocol.loggedIn, ["user_id": user]), to: session)
    }

    private func control(_ frame: InboundFrame, from session: Session, user: String) {
        guard let decoded = decoded(frame, session), case .systemNotice(let notice)? = decoded.payload else { return }
        let groupID = notice.params["group_id"] ?? ""
        switch notice.type {
        case RelayProtocol.joinGroup where !groupID.isEmpty:
            groups[groupID, default: []].insert(user)
            write(RelayProtocol.notice(RelayProtocol.joined, ["group_id": groupID, "user_id": user]), to: session)
        case RelayProtocol.leaveGroup where !groupID.isEmpty:
            groups[groupID]?.remove(user)
            write(RelayProtocol.notice(RelayProtocol.left, ["group_id": groupID, "user_id": user]), to: session)
        case RelayProtocol.login:
            self.notice(session, code: "alreadyLoggedIn", reason: "this connection is logged in as \(user)")
        default:
            self.notice(session, code: "unsupported", reason: "unknown request \"\(notice.type)\"")
        }
    }

    /// The sessions a conversation reaches from `user`, or an ack error.
    private func receivers(
        _ type: ConversationType, _ target: String, user: String
    ) -> Result<(key: String, sessions: [Session]), AckFailure> {
        switch type {
        case .oneToOne where !target.isEmpty:
            guard let peer = sessions[target] else {
                return .failure(AckFailure(RelayProtocol.AckError.receiverOffline, "\(target) is not online"))
            }
            let key = user < target ? "c\u{0}\(user)\u{0}\(target)" : "c\u{0}\(target)\u{0}\(user)"
            return .success((key, [peer]))
        case .group where !target.isEmpty:
            guard let members = groups[target], members.contains(user) else {
                return .failure(AckFailure(RelayProtocol.AckError.notAGroupMember, "\(user) is not a member of \(target)"))
            }
            var reached: [Session] = []
            reached.reserveCapacity(members.count)
            for member in members where member != user {
                if let session = sessions[member] { reached.append(session) }
            }
            return .success(("g\u{0}\(target)", reached))
        default:
            return .failure(AckFailure(
                RelayProtocol.AckError.unsupportedConversation,
                "conversation type \(type) with target \"\(target)\" cannot be routed"))
        }
    }

    struct AckFailure: Error {
        let code: Int32
        let description: String
        init(_ code: Int32, _ description: String) {
            self.code = code
            self.description = description
        }
    }

    /// The fast path: routes a message by the facts the decoder read, forwarding its original bytes.
    private func routeMessage(_ frame: InboundFrame, from session: Session, user: String) {
        let conversation = Conversation.with { $0.type = frame.conversationType; $0.targetID = frame.targetID }
        var ack = SendAck.with { $0.clientMsgID = frame.clientMsgID; $0.conversation = conversation }
        defer {
            stats.acksSent += 1
            write(Frame(.sendAck(ack)), to: session)
        }
        guard frame.senderID == user else {
            ack.errorCode = RelayProtocol.AckError.senderMismatch
            ack.errorDescription = "sender_id \"\(frame.senderID)\" is not the logged-in user \(user)"
            return
        }
        let route: (key: String, sessions: [Session])
        switch receivers(frame.conversationType, frame.targetID, user: user) {
        case .success(let found): route = found
        case .failure(let failure):
            ack.errorCode = failure.code
            ack.errorDescription = failure.description
            return
        }
        let seq = seqs[route.key, default: 0] + 1
        let stamp = ServerStamp(
            serverMsgUID: "\(uidPrefix)-\(uidCounter + 1)", seq: seq, serverTimeMs: RelayProtocol.nowMs())
        // Stamped once for every receiver: the sender's bytes with the server's fields appended.
        var out: ByteBuffer?
        if !route.sessions.isEmpty {
            do {
                out = try RelayProtocol.stampedRecord(
                    body: frame.body, stamp: stamp, decoder: wireDecoder, allocator: allocator)
            } catch {
                ack.errorCode = RelayProtocol.AckError.cannotStamp
                ack.errorDescription = "\(error.code): \(error.reason)"
                return
            }
        }
        seqs[route.key] = seq
        uidCounter += 1
        ack = stamp.sendAck(clientMsgID: frame.clientMsgID, conversation: conversation)
        stats.messagesRouted += 1
        guard let out else { return }
        for receiver in route.sessions { forward(out, to: receiver) }
    }

    private func forward(_ buffer: ByteBuffer, to session: Session) {
        guard !session.closing else { return }
        write(buffer, to: session)
        stats.framesForwarded += 1
    }

    /// Recall, edit, delete and typing: forwarded unchanged to the conversation's other side.
    private func routeEvent(_ frame: InboundFrame, from session: Session, user: String) {
        if frame.conversationType == .oneToOne, frame.targetID == user {
            notice(session, code: "unroutable", reason: "a one-to-one event must name the peer as its target")
            return
        }
        switch receivers(frame.conversationType, frame.targetID, user: user) {
        case .success(let route):
            for receiver in route.sessions { forward(frame.record, to: receiver) }
        case .failure(let failure):
            if failure.code != RelayProtocol.AckError.receiverOffline {
                notice(session, code: "unroutable", reason: failure.description)
            }
        }
    }

    /// Receipts go to the sender of the message they refer to (read from the message reference).
    private func routeReceipts(_ frame: InboundFrame, from session: Session, user: String) {
        guard let decoded = decoded(frame, session) else { return }
        switch decoded.payload {
        case .receipt(let receipt)?:
            let target = receipt.message?.senderID ?? ""
            if let receiver = sessions[target], receiver !== session { forward(frame.record, to: receiver) }
        case .receipts(let batch)?:
            var byTarget: [String: [MessageReceipt]] = [:]
            for receipt in batch.receipts { byTarget[receipt.message?.senderID ?? "", default: []].append(receipt) }
            if byTarget.count == 1, batch.c2cReadReceipts.isEmpty, let target = byTarget.keys.first {
                if let receiver = sessions[target], receiver !== session { forward(frame.record, to: receiver) }
                return
            }
            for (target, receipts) in byTarget {
                guard let receiver = sessions[target], receiver !== session else { continue }
                var out = allocator.buffer(capacity: 256)
                out.writeFrame(Frame(.receipts(ReceiptBatch.with { $0.receipts = receipts })))
                forward(out, to: receiver)
            }
        default:
            break
        }
    }
}

/// Answers an HTTP request that does not ask for a WebSocket upgrade with 426 and closes; removed
/// from the pipeline when the upgrade succeeds.
final class UpgradeRequiredHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    /// Its name in the pipeline.
    static let name = "imcodec-relay.upgrade-required"

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case .head = Self.unwrapInboundIn(data) else { return }
        var body = context.channel.allocator.buffer(capacity: 80)
        body.writeString("This is an imcodec-relay WebSocket port: connect with a WebSocket client.\n")
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "text/plain; charset=utf-8")
        headers.add(name: "Content-Length", value: "\(body.readableBytes)")
        headers.add(name: "Connection", value: "close")
        headers.add(name: "Upgrade", value: "websocket")
        context.write(Self.wrapOutboundOut(.head(HTTPResponseHead(
            version: .http1_1, status: .upgradeRequired, headers: headers))), promise: nil)
        context.write(Self.wrapOutboundOut(.body(.byteBuffer(body))), promise: nil)
        let loopBoundContext = NIOLoopBound(context, eventLoop: context.eventLoop)
        context.writeAndFlush(Self.wrapOutboundOut(.end(nil))).whenComplete { _ in
            loopBoundContext.value.close(promise: nil)
        }
    }
}

/// The last handler of a relay connection: hands frames and errors to the ``Router``.
final class RelayConnectionHandler: ChannelInboundHandler {
    typealias InboundIn = InboundFrame
    typealias OutboundOut = ByteBuffer

    private let router: Router
    private let session: Session
    private var loginTimer: Scheduled<Void>?

    init(router: Router, session: Session) {
        self.router = router
        self.session = session
    }

    private var started = false

    func handlerAdded(context: ChannelHandlerContext) {
        // Behind a WebSocket upgrade the handler joins a channel that is already active.
        if context.channel.isActive { start(context: context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        start(context: context)
        context.fireChannelActive()
    }

    private func start(context: ChannelHandlerContext) {
        guard !started else { return }
        started = true
        router.opened(session)
        router.configuration.log("accepted \(session.label)")
        let router = NIOLoopBound(self.router, eventLoop: context.eventLoop)
        let session = NIOLoopBound(self.session, eventLoop: context.eventLoop)
        loginTimer = context.eventLoop.scheduleTask(in: router.value.configuration.loginTimeout) {
            guard session.value.userID == nil else { return }
            router.value.fail(session.value, code: "loginTimeout", reason: "no login frame in time")
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        router.handle(Self.unwrapInboundIn(data), from: session)
        if session.userID != nil, let timer = loginTimer {
            timer.cancel()
            loginTimer = nil
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        router.flush()
        context.fireChannelReadComplete()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        router.fail(session, error: error)
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if !context.channel.isWritable {
            let router = NIOLoopBound(self.router, eventLoop: context.eventLoop)
            let session = NIOLoopBound(self.session, eventLoop: context.eventLoop)
            context.eventLoop.execute { router.value.slowConsumer(session.value) }
        }
        context.fireChannelWritabilityChanged()
    }

    func channelInactive(context: ChannelHandlerContext) {
        loginTimer?.cancel()
        loginTimer = nil
        router.closed(session)
        context.fireChannelInactive()
    }
}
#endif
