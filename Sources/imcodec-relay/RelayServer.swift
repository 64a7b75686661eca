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
    /// Static group membership: group id to member user ids (membership frames change it).
    var groups: [String: Set<String>] = [:]
    /// `LoginResult.heartbeat_interval_s`: how often clients are asked to ping. The relay answers
    /// pings but does not close silent sessions.
    var heartbeatIntervalS: UInt32 = 30
    /// The most messages kept per conversation; past it the oldest is dropped, and a sync from below
    /// the oldest kept seq starts at the oldest kept message.
    var maxMessagesPerConversation = 10_000
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

/// The loopback relay server: logs clients in (session.proto), routes one-to-one and group messages
/// on the fast path (``IMCodecNIO/InboundFrame``), acknowledges every message, keeps the stamped
/// messages of each conversation in memory for sync (resume after a reconnect, offline delivery),
/// answers pings, joins and leaves, tells presence to subscribers, and forwards receipts, recalls,
/// edits, deletes, typing, reactions, pins, poll votes and updates and disappearing timers. See
/// ``RelayProtocol`` and README.md.
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
        let bootstrap = serverBootstrap(configuration, loop: loop)
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

    /// The socket options both listeners share: a backlog, address reuse, no Nagle delay, and the
    /// write-buffer high-water mark at which a client becomes a slow consumer.
    private static func serverBootstrap(_ configuration: RelayConfiguration, loop: any EventLoop) -> ServerBootstrap {
        let watermark = ChannelOptions.Types.WriteBufferWaterMark(
            low: max(1, configuration.maxOutboundBytes / 2), high: max(2, configuration.maxOutboundBytes))
        return ServerBootstrap(group: loop)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelOption(.writeBufferWaterMark, value: watermark)
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
        let bootstrap = serverBootstrap(configuration, loop: loop)
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
    /// The device and platform the login named, and the session id the relay gave it.
    var deviceID = ""
    var platform = Platform.unspecified
    var sessionID = ""
    /// Set when the session stopped being its user's current one other than by a newer login
    /// (subscribers learn the user is offline when the connection has closed).
    var wentOffline = false
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

/// The routing table, the message store and the routing rules. Lives on the relay's event loop.
final class Router {
    let eventLoop: any EventLoop
    let configuration: RelayConfiguration
    /// The logged-in connection of each user.
    private var sessions: [String: Session] = [:]
    private var connections: [ObjectIdentifier: Session] = [:]
    /// Members of each group, chatroom and ultra-group channel.
    private var members: [ConversationKey: Set<String>] = [:]
    /// The conversations each user belongs to: one-to-one ones with history, shared ones it is a member of.
    private var belongs: [String: Set<ConversationKey>] = [:]
    /// The kept messages of each conversation.
    private var logs: [ConversationKey: ConversationLog] = [:]
    /// Who subscribed to each user's presence.
    private var subscribers: [String: Set<String>] = [:]
    /// When each user that went offline was last online.
    private var lastOnlineMs: [String: Int64] = [:]
    private var uidCounter: UInt64 = 0
    private var sessionCounter: UInt64 = 0
    private let uidPrefix: String
    private var stats = RelayStats()
    private var toFlush: [Session] = []
    private let allocator = ByteBufferAllocator()
    private let wireDecoder: WireDecoder

    init(eventLoop: any EventLoop, configuration: RelayConfiguration) {
        self.eventLoop = eventLoop
        self.configuration = configuration
        self.uidPrefix = String(UInt32.random(in: 0x1000_0000...UInt32.max), radix: 16)
        self.wireDecoder = configuration.codec.makeWireDecoder()
        for (group, users) in configuration.groups {
            let key = ConversationKey.group(group)
            members[key, default: []].formUnion(users)
            for user in users { belongs[user, default: []].insert(key) }
        }
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
        if session.wentOffline, let user = session.userID {
            // Told here, once the connection is gone, whatever closed it (error, logout, the peer).
            broadcastPresence(of: user)
            flush()
        }
    }

    /// Removes `session` from the routing table if it is its user's current session; the user is
    /// then offline (subscribers are told when the connection has closed).
    private func unregister(_ session: Session) {
        if let user = session.userID, sessions[user] === session {
            sessions[user] = nil
            stats.usersOnline -= 1
            lastOnlineMs[user] = RelayProtocol.nowMs()
            session.wentOffline = true
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

    /// Closes `session` after telling it why (where the socket still takes bytes): with `last`
    /// when given, else with an error notice carrying `code` and `reason`.
    func fail(_ session: Session, code: String, reason: String, last: Frame? = nil) {
        guard !session.closing else { return }
        session.closing = true
        stats.closedByError[code, default: 0] += 1
        log("closing \(session.label): \(code): \(reason)")
        unregister(session)
        closeAfterWriting(last ?? RelayProtocol.errorFrame(code: code, reason: reason), session, code: code, reason: reason)
    }

    /// Writes `frame`, flushes, and closes `session` (announcing `code` to a WebSocket peer).
    private func closeAfterWriting(_ frame: Frame, _ session: Session, code: String, reason: String) {
        session.announceClose(code: code, reason: reason)
        let channel = session.channel
        guard channel.isActive else {
            channel.close(promise: nil)
            return
        }
        var buffer = allocator.buffer(capacity: 128)
        buffer.writeFrame(frame)
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

    /// Answers `requestID` with a request result (error_code 0: success).
    private func result(_ session: Session, _ requestID: UInt64, _ code: Int32 = 0, _ description: String = "") {
        write(RelayProtocol.answer(.requestResult(RequestResult.with {
            $0.errorCode = code
            $0.errorDescription = description
            $0.serverTimeMs = RelayProtocol.nowMs()
        }), requestID: requestID), to: session)
    }

    /// Refuses a frame: with a request result when it carries a request id, else with an error notice.
    private func refuse(_ session: Session, _ requestID: UInt64, _ code: Int32, notice: String, _ reason: String) {
        if requestID != 0 {
            result(session, requestID, code, "\(notice): \(reason)")
        } else {
            self.notice(session, code: notice, reason: reason)
        }
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
        case .recall?, .edit?, .delete?, .typing?, .reaction?, .pin?, .pollVote?, .pollUpdate?, .disappearingTimer?:
            routeEvent(frame, from: session, user: user)
        case .receipt?, .receipts?:
            routeReceipts(frame, from: session, user: user)
        case .loginRequest?, .ping?, .logout?, .maxSeqRequest?, .syncRequest?, .presence?, .presenceSubscription?,
            .membership?:
            request(frame, from: session, user: user)
        case let kind:
            let requestID = decoded(frame, session)?.requestID ?? 0
            guard !session.closing else { return }
            refuse(
                session, requestID, RelayProtocol.RequestError.unsupported, notice: "unsupported",
                "the relay does not route \(kind?.protoName ?? "empty") frames")
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

    /// Closes a connection whose first frame is not a good login, with a failed login result.
    private func refuseLogin(_ session: Session, requestID: UInt64, code: Int32, reason: String) {
        let answer = RelayProtocol.answer(.loginResult(LoginResult.with {
            $0.errorCode = code
            $0.errorDescription = "notLoggedIn: \(reason)"
            $0.serverTimeMs = RelayProtocol.nowMs()
        }), requestID: requestID)
        fail(session, code: "notLoggedIn", reason: reason, last: answer)
    }

    private func login(_ frame: InboundFrame, _ session: Session) {
        guard frame.payloadKind == .loginRequest else {
            refuseLogin(
                session, requestID: 0, code: RelayProtocol.LoginError.notLoggedIn,
                reason: "the first frame must be a login_request")
            return
        }
        guard let decoded = decoded(frame, session), case .loginRequest(let request)? = decoded.payload else { return }
        guard !request.userID.isEmpty, !request.token.isEmpty else {
            refuseLogin(
                session, requestID: decoded.requestID, code: RelayProtocol.LoginError.missingCredentials,
                reason: "a login_request needs a user_id and a token")
            return
        }
        let user = request.userID
        if let previous = sessions[user] {
            log("\(user) logged in again; closing the older connection \(previous.label)")
            sessions[user] = nil
            stats.usersOnline -= 1
            previous.closing = true
            let kicked = Frame(.kickedOffline(KickedOffline.with {
                $0.reason = .loggedInElsewhere
                $0.description = "\(user) logged in on another connection"
                $0.otherDeviceID = request.deviceID
                $0.otherPlatform = request.platform
                $0.timeMs = RelayProtocol.nowMs()
            }))
            closeAfterWriting(kicked, previous, code: "kickedOffline", reason: "logged in elsewhere")
        }
        sessionCounter += 1
        session.userID = user
        session.deviceID = request.deviceID
        session.platform = request.platform
        session.sessionID = "\(uidPrefix)-s\(sessionCounter)"
        sessions[user] = session
        stats.usersOnline += 1
        log("\(session.label) logged in (device \"\(request.deviceID)\", \(request.platform.protoName))")
        var answer = LoginResult.with {
            $0.serverTimeMs = RelayProtocol.nowMs()
            $0.sessionID = session.sessionID
            $0.heartbeatIntervalS = configuration.heartbeatIntervalS
        }
        var named = Set<ConversationKey>()
        for seen in request.lastSeen {
            guard let conversation = seen.conversation, let key = ConversationKey(conversation, user: user),
                isMember(user, key), named.insert(key).inserted
            else { continue }
            answer.maxSeqs.append(maxSeq(key, for: user))
        }
        for key in (belongs[user] ?? []).sorted(by: { "\($0)" < "\($1)" }) where named.insert(key).inserted {
            answer.maxSeqs.append(maxSeq(key, for: user))
        }
        write(RelayProtocol.answer(.loginResult(answer), requestID: decoded.requestID), to: session)
        broadcastPresence(of: user)
    }

    private func maxSeq(_ key: ConversationKey, for user: String) -> ConversationSeq {
        ConversationSeq.with {
            $0.conversation = key.conversation(for: user)
            $0.seq = logs[key]?.maxSeq ?? 0
        }
    }

    /// Whether `user` may read `key`: its own one-to-one conversations, the shared ones it is a member of.
    private func isMember(_ user: String, _ key: ConversationKey) -> Bool {
        switch key {
        case .direct(let a, let b): return a == user || b == user
        case .shared: return members[key]?.contains(user) == true
        }
    }

    // MARK: Session requests

    private func request(_ frame: InboundFrame, from session: Session, user: String) {
        guard let decoded = decoded(frame, session), let payload = decoded.payload else { return }
        let requestID = decoded.requestID
        switch payload {
        case .loginRequest:
            write(RelayProtocol.answer(.loginResult(LoginResult.with {
                $0.errorCode = RelayProtocol.LoginError.alreadyLoggedIn
                $0.errorDescription = "alreadyLoggedIn: this connection is logged in as \(user)"
                $0.serverTimeMs = RelayProtocol.nowMs()
            }), requestID: requestID), to: session)
        case .ping(let ping):
            write(RelayProtocol.answer(.pong(Pong.with {
                $0.id = ping.id
                $0.timeMs = RelayProtocol.nowMs()
            }), requestID: requestID), to: session)
        case .logout:
            log("\(session.label) logged out")
            session.closing = true
            unregister(session)
            let answer = RelayProtocol.answer(.requestResult(RequestResult.with {
                $0.serverTimeMs = RelayProtocol.nowMs()
            }), requestID: requestID)
            closeAfterWriting(answer, session, code: "logout", reason: "logged out")
        case .maxSeqRequest(let request):
            var answer = MaxSeqResponse.with { $0.serverTimeMs = RelayProtocol.nowMs() }
            if request.conversations.isEmpty {
                for key in (belongs[user] ?? []).sorted(by: { "\($0)" < "\($1)" }) {
                    answer.maxSeqs.append(maxSeq(key, for: user))
                }
            } else {
                for conversation in request.conversations {
                    // A conversation the user may not read is answered with seq 0.
                    guard let key = ConversationKey(conversation, user: user), isMember(user, key) else {
                        answer.maxSeqs.append(ConversationSeq.with { $0.conversation = conversation })
                        continue
                    }
                    answer.maxSeqs.append(maxSeq(key, for: user))
                }
            }
            write(RelayProtocol.answer(.maxSeqResponse(answer), requestID: requestID), to: session)
        case .syncRequest(let request):
            write(RelayProtocol.answer(.syncResponse(sync(request, user: user)), requestID: requestID), to: session)
        case .presenceSubscription(let subscription):
            subscribe(subscription, requestID: requestID, session: session, user: user)
        case .presence(let update):
            // A client sets its own status (e.g. AWAY): its subscribers are told.
            var update = update
            update.userID = user
            update.deviceID = session.deviceID
            update.platform = session.platform
            update.timeMs = RelayProtocol.nowMs()
            for subscriber in subscribers[user] ?? [] {
                if let other = sessions[subscriber] { write(Frame(.presence(update)), to: other) }
            }
            if requestID != 0 { result(session, requestID) }
        case .membership(let change):
            membership(change, requestID: requestID, session: session, user: user)
        default:
            break
        }
    }

    /// Answers a sync request from the kept records (``RelayConfiguration/maxMessagesPerConversation``).
    private func sync(_ request: SyncRequest, user: String) -> SyncResponse {
        var answer = SyncResponse.with { $0.conversation = request.conversation ?? Conversation() }
        guard let conversation = request.conversation, let key = ConversationKey(conversation, user: user) else {
            answer.errorCode = RelayProtocol.RequestError.unsupportedConversation
            answer.errorDescription = "the relay keeps one-to-one, group, chatroom and ultra-group conversations only"
            return answer
        }
        guard isMember(user, key) else {
            answer.errorCode = RelayProtocol.RequestError.notAMember
            answer.errorDescription = "\(user) is not a member of \(conversation.targetID)"
            return answer
        }
        let log = logs[key]
        let maxSeq = log?.maxSeq ?? 0
        answer.maxSeq = maxSeq
        let limit = UInt64(request.limit == 0 ? RelayProtocol.maxSyncLimit : min(request.limit, RelayProtocol.maxSyncLimit))
        let last = request.toSeq == 0 ? maxSeq : min(request.toSeq, maxSeq)
        // Below the oldest kept message: from the oldest kept one.
        let first = max(request.fromSeq, log?.oldestSeq ?? 1, 1)
        guard let log, first <= last else {
            answer.nextFromSeq = max(first, last + 1)
            return answer
        }
        var end = min(last, first + limit - 1)
        // The answer must fit the frame size limit too: a message takes at most its stamped record's
        // size (plus its tag and length); the rest waits for the next page.
        var budget = configuration.codec.effectiveMaxFrameSize - 512 - conversation.serializedBytes().count
        for seq in first...end {
            guard let entry = log.entry(seq) else { continue }
            budget -= entry.record.readableBytes + 6
            if budget < 0, !answer.messages.isEmpty {
                end = seq - 1
                break
            }
            var record = entry.record
            // The records were decoded once when they arrived; decoding them again cannot fail.
            if let frame = try? record.readFrame(options: configuration.codec, decoder: wireDecoder),
                case .message(let message)? = frame.payload
            {
                answer.messages.append(message)
            }
        }
        answer.hasMore = end < last
        answer.nextFromSeq = end + 1
        return answer
    }

    private func subscribe(_ subscription: PresenceSubscription, requestID: UInt64, session: Session, user: String) {
        switch subscription.action {
        case .subscribe:
            result(session, requestID)
            for watched in subscription.userIDs where !watched.isEmpty {
                subscribers[watched, default: []].insert(user)
                write(Frame(.presence(presence(of: watched))), to: session)
            }
        case .unsubscribe:
            for watched in subscription.userIDs { subscribers[watched]?.remove(user) }
            result(session, requestID)
        default:
            refuse(
                session, requestID, RelayProtocol.RequestError.badRequest, notice: "badRequest",
                "a presence_subscription must subscribe or unsubscribe")
        }
    }

    /// The presence of `user` now.
    private func presence(of user: String) -> PresenceUpdate {
        PresenceUpdate.with {
            $0.userID = user
            $0.timeMs = RelayProtocol.nowMs()
            if let session = sessions[user] {
                $0.status = .online
                $0.deviceID = session.deviceID
                $0.platform = session.platform
            } else {
                $0.status = .offline
                $0.lastSeenMs = lastOnlineMs[user] ?? 0
            }
        }
    }

    /// Tells the online subscribers of `user` its presence now.
    private func broadcastPresence(of user: String) {
        guard let watchers = subscribers[user], !watchers.isEmpty else { return }
        let frame = Frame(.presence(presence(of: user)))
        for watcher in watchers {
            if let session = sessions[watcher] { write(frame, to: session) }
        }
    }

    private func membership(_ change: MembershipChange, requestID: UInt64, session: Session, user: String) {
        guard let conversation = change.conversation, change.action != .unspecified else {
            refuse(
                session, requestID, RelayProtocol.RequestError.badRequest, notice: "badRequest",
                "a membership change needs an action and a conversation")
            return
        }
        guard let key = ConversationKey(conversation, user: user), key.isShared else {
            refuse(
                session, requestID, RelayProtocol.RequestError.unsupportedConversation, notice: "unsupported",
                "only groups, chatrooms and ultra-group channels are joined and left")
            return
        }
        var told = change
        told.conversation = key.conversation(for: user)
        told.userID = user
        told.timeMs = RelayProtocol.nowMs()
        let changed: Bool
        if change.action == .join {
            changed = members[key, default: []].insert(user).inserted
            belongs[user, default: []].insert(key)
        } else {
            changed = members[key]?.remove(user) != nil
            belongs[user]?.remove(key)
        }
        result(session, requestID)
        log("\(user) \(change.action == .join ? "joined" : "left") \(conversation.targetID)")
        guard changed else { return }
        // The other members (and, for a leave, no longer the one who left) see the change.
        let frame = Frame(.membership(told))
        for member in members[key] ?? [] where member != user {
            if let other = sessions[member] { write(frame, to: other) }
        }
    }

    // MARK: Messages and events

    /// The fast path: routes a message by the facts the decoder read, forwarding its original bytes
    /// with the stamp appended, and keeps the stamped record for sync.
    private func routeMessage(_ frame: InboundFrame, from session: Session, user: String) {
        let type = frame.conversationType
        let conversation = Conversation.with {
            $0.type = type; $0.targetID = frame.targetID; $0.channelID = frame.channelID
        }
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
        guard let key = ConversationKey(conversation, user: user) else {
            ack.errorCode = RelayProtocol.AckError.unsupportedConversation
            ack.errorDescription = "conversation type \(type) with target \"\(frame.targetID)\" cannot be routed"
            return
        }
        guard isMember(user, key) else {
            ack.errorCode = RelayProtocol.AckError.notAGroupMember
            ack.errorDescription = "\(user) is not a member of \(frame.targetID)"
            return
        }
        let log = logs[key] ?? ConversationLog(capacity: configuration.maxMessagesPerConversation)
        if let first = log.stamp(sender: user, clientMsgID: frame.clientMsgID) {
            // Sent again (its ack was lost with a connection): acknowledged as the first time, not routed again.
            ack = first.sendAck(clientMsgID: frame.clientMsgID, conversation: conversation)
            return
        }
        let stamp = ServerStamp(
            serverMsgUID: "\(uidPrefix)-\(uidCounter + 1)", seq: log.nextSeq, serverTimeMs: RelayProtocol.nowMs())
        // Stamped once for every receiver and for the store: the sender's bytes with the server's fields appended.
        let out: ByteBuffer
        do {
            out = try RelayProtocol.stampedRecord(body: frame.body, stamp: stamp, decoder: wireDecoder, allocator: allocator)
        } catch {
            ack.errorCode = RelayProtocol.AckError.cannotStamp
            ack.errorDescription = "\(error.code): \(error.reason)"
            return
        }
        if logs[key] == nil {
            logs[key] = log
            if case .direct(let a, let b) = key {
                belongs[a, default: []].insert(key)
                belongs[b, default: []].insert(key)
            }
        }
        log.append(out, stamp: stamp, sender: user, clientMsgID: frame.clientMsgID)
        uidCounter += 1
        ack = stamp.sendAck(clientMsgID: frame.clientMsgID, conversation: conversation)
        stats.messagesRouted += 1
        for receiver in receivers(key, from: user) { forward(out, to: receiver) }
    }

    /// The online sessions a conversation reaches from `user` (a one-to-one note to oneself reaches oneself).
    private func receivers(_ key: ConversationKey, from user: String) -> [Session] {
        switch key {
        case .direct(let a, let b):
            return sessions[a == user ? b : a].map { [$0] } ?? []
        case .shared:
            var reached: [Session] = []
            for member in members[key] ?? [] where member != user {
                if let session = sessions[member] { reached.append(session) }
            }
            return reached
        }
    }

    private func forward(_ buffer: ByteBuffer, to session: Session) {
        guard !session.closing else { return }
        write(buffer, to: session)
        stats.framesForwarded += 1
    }

    /// Recall, edit, delete, typing, reaction, pin, poll vote and update, disappearing timer: forwarded
    /// unchanged where ``IMCodec/FrameView/route`` says (online receivers only; events are not kept).
    private func routeEvent(_ frame: InboundFrame, from session: Session, user: String) {
        let route = frame.route
        switch route {
        case .user(let peer) where peer == user:
            notice(session, code: "unroutable", reason: "a one-to-one event must name the peer as its target")
        case .user(let peer), .referencedSender(let peer):
            if peer != user, let receiver = sessions[peer] { forward(frame.record, to: receiver) }
        case .group(let id), .chatroom(let id), .ultraGroup(let id, _):
            let type: ConversationType
            let channel: String
            switch route {
            case .chatroom: (type, channel) = (.chatroom, "")
            case .ultraGroup(_, let channelID): (type, channel) = (.ultraGroup, channelID)
            default: (type, channel) = (.group, "")
            }
            guard let key = ConversationKey(type, id, channelID: channel, user: user), isMember(user, key) else {
                notice(session, code: "unroutable", reason: "\(user) is not a member of \(id)")
                return
            }
            for receiver in receivers(key, from: user) { forward(frame.record, to: receiver) }
        case .ownDevices:
            break  // One connection per user: there are no other devices to tell.
        default:
            notice(session, code: "unroutable", reason: "the \(frame.payloadKind?.protoName ?? "empty") frame names no receiver")
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
