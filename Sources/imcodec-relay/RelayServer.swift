#if Tools
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import IMCodec
import IMCodecNIO
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOWebSocket

/// How a ``RelayServer`` listens and what it tolerates from a client.
struct RelayConfiguration: Sendable {
    /// The address to listen on. An address other than loopback needs ``tls`` (or
    /// ``allowsPlaintextOffLoopback``).
    var host = "127.0.0.1"
    /// TLS for both listeners (`--tls-cert`, `--tls-key`), or `nil` for plain TCP and `ws://`.
    var tls: RelayTLS?
    /// Listen on an address other than loopback without TLS (`--insecure-no-tls`).
    var allowsPlaintextOffLoopback = false
    /// The port to listen on; 0 picks a free one (see ``RelayServer/port``).
    var port = 7070
    /// The port to accept WebSocket connections on (same host), or `nil` for none; 0 picks a free
    /// one (see ``RelayServer/webSocketPort``).
    var webSocketPort: Int?
    /// Pings, fragments and the close wait of WebSocket connections (their frame size limit is
    /// ``codec``'s).
    var webSocket = WebSocketFrameLimits()
    /// The frame size and decoding limits for every connection (``codecOptions(maxFrameSize:)``).
    var codec = RelayConfiguration.codecOptions(maxFrameSize: 1 << 20)
    /// How long a frame may stay incomplete before its connection is closed.
    var maxFrameWait: TimeAmount = .seconds(10)
    /// How long a new connection has to send its login frame.
    var loginTimeout: TimeAmount = .seconds(10)
    /// The most bytes queued for one client before it is closed as a slow consumer.
    var maxOutboundBytes = 8 << 20
    /// Static group membership: group id to member user ids (membership frames change it).
    var groups: [String: Set<String>] = [:]
    /// `LoginResult.heartbeat_interval_s`: how often clients are asked to ping. A logged-in session
    /// that sends no frame for 3 intervals is closed (session.proto; ``Router/closeSilentSessions()``);
    /// 0 asks for no pings and closes no session for silence.
    var heartbeatIntervalS: UInt32 = 30
    /// How often the relay looks for silent sessions.
    var silenceCheckInterval = TimeAmount.seconds(1)
    /// The time in milliseconds that silence and the users' rate budgets (Router+RateLimits.swift)
    /// are measured by: any clock that only moves forward.
    /// Tests move it forward instead of waiting (apart from ``clock``, so that moving message
    /// expiries forward closes no session).
    var silenceClock: @Sendable () -> Int64 = { Int64(NIODeadline.now().uptimeNanoseconds / 1_000_000) }
    /// Awaited before each login's token is checked; `nil` (the default) awaits nothing. Tests hold
    /// logins with it to see what the relay does with the frames a client sends meanwhile.
    var beforeTokenCheck: (@Sendable () async -> Void)?
    /// The most messages kept per conversation; past it the oldest is dropped, and a sync from below
    /// the oldest kept seq starts at the oldest kept message.
    var maxMessagesPerConversation = 10_000
    /// The most entries kept in each user's stream; past it the oldest is dropped, and a device that
    /// resumes from below the oldest kept position is told (`StreamSyncResponse.truncated`).
    var maxStreamEntries = 10_000
    /// The most groups, chatrooms and ultra-group channels a user may be in when it joins one (the
    /// groups file may put it in more); a join past it is refused with 3012. Without a bound, one
    /// user could join (and so create) any number of them.
    var maxJoinedConversations = 1_000
    /// The most devices the relay keeps for one user (each keeps a stream position, a view-once
    /// floor and its key bundles). A login with a device id it does not know, by a user at the
    /// bound, makes it forget the least recently seen device that is offline (Router+Devices.swift),
    /// or is refused with ``RelayProtocol/LoginError/tooManyDevices`` when every one is online.
    var maxDevicesPerUser = 16
    /// The most one-to-one conversations a user may have when it starts one (its first message to
    /// a peer, a view of a conversation with a peer it has none with, or a kept event in one); one
    /// started with it by others is never refused. Past it a start is refused (``RelayProtocol/AckError/conversationLimit``,
    /// ``RelayProtocol/RequestError/listFull``). Without a bound, one user could make the relay keep
    /// a conversation with every user id it made up.
    var maxDirectConversations = 10_000
    /// How often the relay erases the disappearing messages that expired (Router+Expiry.swift);
    /// they are served to no one from the moment they expire, erased or not.
    var expirySweepInterval = TimeAmount.seconds(1)
    /// How often at most the relay sends the results of a message's polls after votes, by ``clock``:
    /// the first vote's at once, then the ones since at the first sweep (``expirySweepInterval``)
    /// after this interval ends (Router+Polls.swift). A closing's final results go at once.
    var pollResultsInterval = TimeAmount.seconds(1)
    /// Messages a second (by ``clock``) a group, chatroom or ultra group carries before it is busy:
    /// its `PRIORITY_LOW` messages are then refused until the next second (Router+Priority.swift);
    /// 0: never busy.
    var groupMessageRate = 40
    /// Typing events and status updates (`presence`) a second one user may have the relay fan out,
    /// in bursts of up to four seconds' worth (Router+RateLimits.swift); past it typing is dropped
    /// and a status update refused (``RelayProtocol/RequestError/tooFrequent``). 0: no bound.
    var liveUpdateRate = 5
    /// Users a second one user's messages, kept events, extension updates, receipts, joins and
    /// system notices may reach (each costs the users it reaches), in bursts of up to five seconds' worth
    /// (Router+RateLimits.swift); past it they are refused (``RelayProtocol/AckError/tooFrequent``,
    /// ``RelayProtocol/RequestError/tooFrequent``). 0: no bound.
    var fanOutRate = 20_000
    /// One-time keys a minute one user's fetches may take from one user's devices (its own
    /// included), in bursts of up to a minute's worth (Router+RateLimits.swift; Signal's prekey
    /// limit per requester and target); past it a fetch that would hand one out is refused
    /// (``RelayProtocol/RequestError/tooFrequent``). 0: no bound.
    var keyFetchRate = 100
    /// Groups, chatrooms and channels a minute one user may join, in bursts of up to a minute's
    /// worth (Router+RateLimits.swift; Matrix Synapse's `rc_joins`); past it a join is refused
    /// (``RelayProtocol/RequestError/tooFrequent``). 0: no bound.
    var joinRate = 10
    /// Logins a minute one user may make, across its devices, in bursts of up to a minute's worth
    /// (Router+RateLimits.swift; Matrix Synapse's `rc_login` per account): each writes the device's
    /// records and may tell the user's subscribers it is online, and its close that it is offline.
    /// Past it a login is refused (``RelayProtocol/LoginError/tooFrequent``). 0: no bound.
    var loginRate = 60
    /// One-to-one messages, kept one-to-one events and extension updates, system notices and
    /// receipts (to each message's sender) a second one user may send one other user, in bursts of
    /// up to five seconds' worth (Router+RateLimits.swift); past it they are refused as past the
    /// fan-out budget (``RelayProtocol/AckError/tooFrequent``,
    /// ``RelayProtocol/RequestError/tooFrequent``). 0: no bound.
    var peerRate = 50
    /// The time in milliseconds since the Unix epoch that messages are stamped with and that
    /// disappearing messages expire by (``Router/nowMs()``). Tests move it forward instead of waiting.
    var clock: @Sendable () -> Int64 = { RelayProtocol.nowMs() }
    /// Where the relay keeps what it promises.
    var store = StoreLocation.memory
    /// With a PostgreSQL store: wait for the database's lock while another relay serves it, and take
    /// over when that one stops (`serve --standby`); `nil`: refuse after a few seconds.
    var standby: PostgresRelayStore.Standby?
    /// What the sender of a one-to-one message to a user who blocked it is told: nothing (silent,
    /// Tencent's default) or error 20007.
    var blockedSenders = Router.BlockedSenders.silent
    /// Checks login tokens. The relay does not start without one.
    var authenticator: RelayAuthenticator?
    /// The port of the metrics endpoint (`GET /metrics` on ``host``, Prometheus' text format), or
    /// `nil` for none; 0 picks a free one (see ``RelayServer/metricsPort``).
    var metricsPort: Int?
    /// Where the relay logs connections, logins, closes and errors (swift-log); silent by default.
    /// `serve` logs to standard output at `--log-level` (``RelayLogHandler``).
    var logger = Logger.silent(label: "imcodec-relay")
    /// With a PostgreSQL store: this relay is one of several nodes serving the database
    /// (`--node-port`, ``NodeLink``); `nil`: it serves alone (or stands by, ``standby``).
    var node: NodeLink.Options?
    /// Called once when the store fails and the relay stops (the `serve` command exits with status 1).
    var onFatal: @Sendable (String) -> Void = { _ in }

    /// The relay's frame limits: frames of at most `maxFrameSize` bytes, decoded with the default
    /// limits, but a length prefix over 5 bytes is refused (`malformed`): a message is forwarded
    /// as its sender wrote it, and Google's C++ parser, which clients may use, refuses such a
    /// prefix (upb, Java and Go read it; ``IMCodec/DecodingOptions/acceptsLongLengthPrefixes``).
    static func codecOptions(maxFrameSize: Int) -> FrameCodecOptions {
        FrameCodecOptions(maxFrameSize: maxFrameSize, decoding: DecodingOptions(acceptsLongLengthPrefixes: false))
    }
}

/// Where a relay keeps what it promises.
enum StoreLocation: Sendable, CustomStringConvertible {
    /// In memory: lost with the process (tests, the relay benchmark's baseline).
    case memory
    /// A SQLite database at `path` (``SQLiteRelayStore``); `synchronous` is `FULL` or `NORMAL`.
    case sqlite(path: String, synchronous: String = "FULL")
    /// A PostgreSQL database (``PostgresRelayStore``), served by one relay at a time.
    case postgres(PostgresURL)

    /// Opens the store; postgres-nio logs to `logger`. A PostgreSQL database another relay serves is
    /// waited for with `standby`, else refused.
    /// - Throws: ``RelayStoreError`` when it is damaged, unreadable or unreachable, or held by another
    ///   relay.
    func open(logger: Logger, standby: PostgresRelayStore.Standby? = nil) throws -> any RelayStore {
        switch self {
        case .memory: return MemoryRelayStore()
        case .sqlite(let path, let synchronous): return try SQLiteRelayStore(path: path, synchronous: synchronous)
        case .postgres(let url):
            guard let standby else {
                return try PostgresRelayStore(url: url, lockWait: .refuse(after: .seconds(5)), logger: logger)
            }
            // A standby that lost its connection while it waited (the server restarted, the network
            // failed) connects again, rather than leave the database with no relay to take over. A
            // failure before it waited (a wrong password) or after it took the lock (a newer schema)
            // stops it.
            let state = NIOLockedValueBox((waited: false, took: false))
            let watched = PostgresRelayStore.Standby(
                waiting: { line in
                    let first = state.withLockedValue { state in
                        defer { state.waited = true }
                        return !state.waited
                    }
                    if first { standby.waiting(line) }
                },
                took: {
                    guard standby.took() else { return false }
                    state.withLockedValue { $0.took = true }
                    return true
                },
                mayTake: standby.mayTake,
                router: standby.router
            )
            while true {
                do {
                    return try PostgresRelayStore(url: url, lockWait: .standby(watched), logger: logger)
                } catch let error as RelayStoreError where state.withLockedValue({ $0.waited && !$0.took }) {
                    standby.waiting("lost the database while waiting (\(error)); connecting again in 1 s")
                    sleep(1)
                }
            }
        }
    }

    /// Where the store is, for people: a path, a PostgreSQL URL without its password, or `memory`.
    var description: String { description(connection: nil) }

    /// ``description`` with how the relay reached the store (``RelayStore/connectionSummary``).
    func description(connection: String?) -> String {
        switch self {
        case .memory: return "memory (lost on exit)"
        case .sqlite(let path, _): return path
        case .postgres(let url): return "\(url) (PostgreSQL\(connection.map { ", \($0)" } ?? ""))"
        }
    }
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
    /// Logins accepted, and refused for their credentials.
    var logins = 0
    var loginsRefused = 0
    /// Store commits (each a group of frames) completed. How long each took is the histogram
    /// `imcodec_relay_store_commit_duration_seconds` (``RelayMetrics``).
    var storeCommits = 0
}

/// The relay server: logs clients in (session.proto), routes one-to-one and group messages
/// on the fast path (``IMCodecNIO/InboundFrame``), acknowledges every message, keeps the stamped
/// messages of each conversation in memory for sync (resume after a reconnect, offline delivery),
/// answers pings, joins and leaves, tells presence to subscribers, and forwards receipts, recalls,
/// edits, deletes, typing, reactions, pins and disappearing timers, and tallies poll votes. See
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
    private let metricsChannel: (any Channel)?
    private let nodeChannel: (any Channel)?
    private let router: NIOLoopBound<Router>

    /// The port the relay listens on.
    let port: Int
    /// The port the relay accepts WebSocket connections on, if it does.
    let webSocketPort: Int?
    /// The port of the relay's metrics endpoint (`GET /metrics`), if it has one.
    let metricsPort: Int?
    /// The port the relay takes links from other relay nodes on, if it does (``NodeLink``).
    let nodePort: Int?
    /// Where the relay keeps its store, and how it reaches it (`postgresql://... (PostgreSQL, TLS TLSv1.3)`).
    let storeDescription: String

    private init(
        group: MultiThreadedEventLoopGroup,
        channel: any Channel,
        webSocketChannel: (any Channel)?,
        metricsChannel: (any Channel)?,
        nodeChannel: (any Channel)?,
        router: NIOLoopBound<Router>,
        storeDescription: String
    ) {
        self.storeDescription = storeDescription
        self.group = group
        self.eventLoop = channel.eventLoop
        self.channel = channel
        self.webSocketChannel = webSocketChannel
        self.metricsChannel = metricsChannel
        self.nodeChannel = nodeChannel
        self.nodePort = nodeChannel.map { $0.localAddress?.port ?? 0 }
        self.router = router
        self.port = channel.localAddress?.port ?? 0
        self.webSocketPort = webSocketChannel.map { $0.localAddress?.port ?? 0 }
        self.metricsPort = metricsChannel.map { $0.localAddress?.port ?? 0 }
    }

    /// Whether `host` names a loopback address (where the relay may listen without TLS, and the
    /// PostgreSQL store connects in clear text by default): `localhost`, `::1`, or an IPv4 address
    /// in 127.0.0.0/8 written as one (a name such as `127.example.com` is not).
    static func isLoopback(_ host: String) -> Bool {
        if host == "localhost" || host == "::1" { return true }
        var address = in_addr()
        return inet_pton(AF_INET, host, &address) == 1 && UInt32(bigEndian: address.s_addr) >> 24 == 127
    }

    /// Refuses to listen in the clear anywhere but loopback.
    /// - Throws: ``IMCodec/IMCodecError`` (`invalidArgument`) for a non-loopback host without TLS,
    ///   unless ``RelayConfiguration/allowsPlaintextOffLoopback``.
    static func checkTransport(_ configuration: RelayConfiguration) throws {
        guard isLoopback(configuration.host) || configuration.tls != nil || configuration.allowsPlaintextOffLoopback
        else {
            throw IMCodecError.invalidArgument(
                "listening on \(configuration.host), which is not loopback, needs TLS (--tls-cert and --tls-key), "
                    + "or --insecure-no-tls to accept clients in the clear"
            )
        }
    }

    /// Starts a relay on its own one-thread event loop group: opens and loads its store, then listens
    /// (and serves its metrics when ``RelayConfiguration/metricsPort`` is set). Its metrics are in a
    /// registry of its own (``RelayMetrics``): relays in one process never share counts.
    /// - Throws: ``IMCodec/IMCodecError`` (`invalidArgument`) for a non-loopback host without TLS or no
    ///   authenticator, and ``RelayStoreError`` for a store that is damaged or cannot be opened,
    ///   before any thread is started; the future fails when the relay cannot listen.
    static func start(_ configuration: RelayConfiguration) throws -> EventLoopFuture<RelayServer> {
        var configuration = configuration
        try checkTransport(configuration)
        guard let authenticator = configuration.authenticator else {
            throw IMCodecError.invalidArgument("the relay needs an authenticator to check login tokens")
        }
        // One of several nodes: while another relay routes, this one forwards its clients to it.
        var standby = configuration.standby
        var edge: EdgeNode?
        if let node = configuration.node, var waiting = standby {
            let forwarding = EdgeNode(configuration: configuration, options: node)
            waiting.router = { forwarding.follow($0) }
            // A node that shuts down (SIGTERM) never takes over: it drains, and another node routes.
            waiting.took = { forwarding.claimTakeover() }
            waiting.mayTake = { forwarding.mayTakeOver }
            standby = waiting
            edge = forwarding
            node.forwarding(forwarding)
        }
        let store: any RelayStore
        do {
            store = try configuration.store.open(logger: configuration.logger, standby: standby)
        } catch {
            configuration.node?.forwarding(nil)
            _ = edge?.stop()
            throw error
        }
        configuration.node?.forwarding(nil)
        if let ports = edge?.stop() {
            // It routes now, on the ports it forwarded on: its clients reconnect where they were.
            configuration.port = ports.tcp
            configuration.webSocketPort = ports.webSocket
            configuration.metricsPort = ports.metrics
        }
        let state: StoredState
        do {
            state = try store.load()
        } catch {
            store.close()
            throw error
        }
        let storeDescription = configuration.store.description(connection: store.connectionSummary)
        let handoff = StoreHandoff(store: store, state: state)
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let loop = group.next()
        let serving = configuration
        return loop.flatSubmit {
            let metrics = RelayMetrics()
            let queue = StoreQueue(store: handoff.store, eventLoop: loop, commitDuration: metrics.storeCommitDuration)
            let router = Router(
                eventLoop: loop,
                configuration: serving,
                store: queue,
                state: handoff.state,
                authenticator: authenticator,
                metrics: metrics
            )
            if let interval = handoff.store.connectionCheckInterval {
                router.checkStoreConnection(every: interval)
            }
            router.sweepExpiredMessages(every: serving.expirySweepInterval)
            router.closeSilentSessions(every: serving.silenceCheckInterval)
            return bind(serving, group: group, loop: loop, router: router, storeDescription: storeDescription)
        }
    }

    /// Carries the opened store to the event loop that uses it from then on.
    private struct StoreHandoff: @unchecked Sendable {
        let store: any RelayStore
        let state: StoredState
    }

    private static func bind(
        _ configuration: RelayConfiguration,
        group: MultiThreadedEventLoopGroup,
        loop: any EventLoop,
        router: Router,
        storeDescription: String
    ) -> EventLoopFuture<RelayServer> {
        let router = NIOLoopBound(router, eventLoop: loop)
        router.value.onFatal = { reason in configuration.onFatal(reason) }
        let accept: ClientHandlerMaker = { channel, transport in
            let session = Session(channel: channel, transport: transport)
            return (RelayConnectionHandler(router: router.value, session: session), session.decoderStats)
        }
        let registry = router.value.metrics.registry
        return bindTCP(configuration, port: configuration.port, loop: loop, accept: accept)
            .flatMap { channel -> EventLoopFuture<RelayServer> in
                let webSocket: EventLoopFuture<(any Channel)?> =
                    configuration.webSocketPort.map {
                        bindWebSocket(configuration, port: $0, loop: loop, accept: accept).map { Optional($0) }
                    } ?? loop.makeSucceededFuture(nil)
                return webSocket.flatMap { webSocketChannel -> EventLoopFuture<RelayServer> in
                    let metrics: EventLoopFuture<(any Channel)?> =
                        configuration.metricsPort.map {
                            MetricsHTTPHandler.bind(host: configuration.host, port: $0, loop: loop, registry: registry)
                                .map { Optional($0) }
                        } ?? loop.makeSucceededFuture(nil)
                    return metrics.flatMap { metricsChannel in
                        let node: EventLoopFuture<(any Channel)?> =
                            configuration.node.map {
                                bindNode(configuration, node: $0, loop: loop, router: router).map { Optional($0) }
                            } ?? loop.makeSucceededFuture(nil)
                        return node.map { nodeChannel in
                            RelayServer(
                                group: group,
                                channel: channel,
                                webSocketChannel: webSocketChannel,
                                metricsChannel: metricsChannel,
                                nodeChannel: nodeChannel,
                                router: router,
                                storeDescription: storeDescription
                            )
                        }.flatMapError { error in
                            let closed = metricsChannel?.close() ?? loop.makeSucceededVoidFuture()
                            return closed.flatMapThrowing { throw error }
                        }
                    }.flatMapError { error in
                        let closed = webSocketChannel?.close() ?? loop.makeSucceededVoidFuture()
                        return closed.flatMapThrowing { throw error }
                    }
                }.flatMapError { error in channel.close().flatMapThrowing { throw error } }
            }
            .flatMapError { error in
                router.value.store.close().flatMap {
                    group.shutdownGracefully { _ in }
                    return loop.makeFailedFuture(error)
                }
            }
    }

    /// The routing node's node port (``NodeLink``): TLS when the clients have it, then the link
    /// handler; once bound, where it is, a new secret and the certificate's fingerprint are
    /// published in the database for the forwarding nodes, and the future completes after that.
    private static func bindNode(
        _ configuration: RelayConfiguration,
        node: NodeLink.Options,
        loop: any EventLoop,
        router: NIOLoopBound<Router>
    ) -> EventLoopFuture<any Channel> {
        let secret = NodeLink.makeSecret()
        let maxSize = NodeLink.maxMessageSize(configuration.codec)
        // A node's link carries all its clients' frames, and NIO counts a frame's bytes once per
        // client it is written for (a group message to many members of one node can pass any
        // fixed mark although its bytes are shared): each client's share is bounded on its own
        // (LinkConnection), and a node that stops reading is given up by the socket's user
        // timeout (NodeLink.socketOptions), not by volume.
        var bootstrap = ServerBootstrap(group: loop)
        for (option, value) in NodeLink.socketOptions(routing: true) {
            bootstrap = bootstrap.childChannelOption(option, value: value)
        }
        return
            bootstrap
            .serverChannelOption(.backlog, value: 64)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let sync = channel.pipeline.syncOperations
                    try configuration.tls?.addHandler(to: sync)
                    try sync.addHandler(ByteToMessageHandler(NodeLink.Decoder(maxSize: maxSize)))
                    try sync.addHandler(NodeLinkHandler(router: router.value, secret: secret))
                }
            }
            .bind(host: configuration.host, port: node.port)
            .flatMap { channel in
                let published = RouterNode(
                    host: node.advertisedHost,
                    port: channel.localAddress?.port ?? node.port,
                    secret: secret,
                    certificateSHA256: configuration.tls?.fingerprint ?? ""
                )
                // The relay starts (and says it routes) once the other nodes can find it.
                let promise = loop.makePromise(of: (any Channel).self)
                router.value.store.read(
                    { store in Result { try store.publish(published) } },
                    then: { result in
                        switch result {
                        case .success: promise.succeed(channel)
                        case .failure(let error):
                            channel.close(promise: nil)
                            promise.fail(error)
                        }
                    }
                )
                return promise.futureResult
            }
    }

    /// The socket options both listeners share: a backlog, address reuse, no Nagle delay, and the
    /// write-buffer high-water mark at which a client becomes a slow consumer.
    static func serverBootstrap(_ configuration: RelayConfiguration, loop: any EventLoop) -> ServerBootstrap {
        let watermark = ChannelOptions.Types.WriteBufferWaterMark(
            low: max(1, configuration.maxOutboundBytes / 2),
            high: max(2, configuration.maxOutboundBytes)
        )
        return ServerBootstrap(group: loop)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelOption(.writeBufferWaterMark, value: watermark)
    }

    /// Makes the last handler of a client connection (``RelayConnectionHandler``, or a forwarding
    /// node's ``EdgeClientHandler``) and the counters its frame decoder updates; called on the loop.
    typealias ClientHandlerMaker = @Sendable (any Channel, Session.Transport) -> (any ChannelHandler, FrameDecoderStats)

    /// The TCP listener: TLS when configured, the frame deadline, the frame decoder, then the
    /// handler `accept` makes.
    static func bindTCP(
        _ configuration: RelayConfiguration,
        port: Int,
        loop: any EventLoop,
        accept: @escaping ClientHandlerMaker
    ) -> EventLoopFuture<any Channel> {
        let codec = configuration.codec
        let frameWait = configuration.maxFrameWait
        return serverBootstrap(configuration, loop: loop)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let (handler, stats) = accept(channel, .tcp)
                    let sync = channel.pipeline.syncOperations
                    try configuration.tls?.addHandler(to: sync)
                    try sync.addHandler(FrameDeadlineHandler(maxFrameWait: frameWait))
                    try sync.addInboundFrameDecoder(options: codec, stats: stats)
                    try sync.addHandler(handler)
                }
            }
            .bind(host: configuration.host, port: port)
    }

    /// The WebSocket listener: an HTTP/1.1 server that only upgrades to WebSocket, then the
    /// handler `accept` makes, as on TCP, behind a ``IMCodecNIO/WebSocketFrameHandler`` (one
    /// frame per binary message).
    static func bindWebSocket(
        _ configuration: RelayConfiguration,
        port: Int,
        loop: any EventLoop,
        accept: @escaping ClientHandlerMaker
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
                                let (handler, stats) = accept(channel, .webSocket)
                                let sync = channel.pipeline.syncOperations
                                sync.removeHandler(name: UpgradeRequiredHandler.name, promise: nil)
                                // In front of NIOWebSocket's decoder: a message left incomplete is frameTimeout.
                                let decoder = try sync.context(
                                    handlerType: ByteToMessageHandler<WebSocketFrameDecoder>.self
                                )
                                try sync.addHandler(
                                    WebSocketDeadlineHandler(maxMessageWait: frameWait),
                                    position: .before(decoder.handler)
                                )
                                try sync.addHandler(WebSocketFrameHandler(options: codec, limits: limits, stats: stats))
                                try sync.addHandler(handler)
                            }
                        }
                    )
                    let sync = channel.pipeline.syncOperations
                    try configuration.tls?.addHandler(to: sync)
                    try sync.configureHTTPServerPipeline(
                        withServerUpgrade: (upgraders: [upgrader], completionHandler: { _ in })
                    )
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

    /// Runs `body` with the router on its event loop (for tests that look at or set up its state).
    func withRouter<T: Sendable>(_ body: @escaping @Sendable (Router) -> T) -> EventLoopFuture<T> {
        eventLoop.submit { body(self.router.value) }
    }

    /// Completes when the listening socket closes.
    var closeFuture: EventLoopFuture<Void> { channel.closeFuture }

    /// Shuts down gracefully: stops listening (and serving metrics); commits everything already accepted and writes its
    /// acks and forwards; tells every logged-in device `kicked_offline` (server shutdown) and closes
    /// every connection (``Router/shutDown()``); then closes the store (a PostgreSQL store's
    /// connection, which releases its lock), stops the store thread and the event loop.
    /// `serve` runs it on SIGTERM and SIGINT.
    func shutdown() async throws {
        try? await channel.close()
        try? await webSocketChannel?.close()
        try? await metricsChannel?.close()
        try? await nodeChannel?.close()
        try? await eventLoop.flatSubmit {
            let store = NIOLoopBound(self.router.value.store, eventLoop: self.eventLoop)
            return self.router.value.shutDown().flatMap { store.value.close() }
        }.get()
        try await group.shutdownGracefully()
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
        context.write(
            Self.wrapOutboundOut(
                .head(
                    HTTPResponseHead(
                        version: .http1_1,
                        status: .upgradeRequired,
                        headers: headers
                    )
                )
            ),
            promise: nil
        )
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

    init(router: Router, session: Session) {
        self.router = router
        self.session = session
    }

    private var started = false

    func handlerAdded(context: ChannelHandlerContext) {
        // Behind a WebSocket upgrade the handler joins a channel that is already active.
        if context.channel.isActive { start() }
    }

    func channelActive(context: ChannelHandlerContext) {
        start()
        context.fireChannelActive()
    }

    private func start() {
        guard !started else { return }
        started = true
        router.opened(session)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = Self.unwrapInboundIn(data)
        router.metrics.frameIn(frame.payloadKind, session.transport)
        router.handle(frame, from: session)
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
        router.closed(session)
        context.fireChannelInactive()
    }
}
#endif
