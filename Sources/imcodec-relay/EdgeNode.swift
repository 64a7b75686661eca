#if Tools
import IMCodec
import IMCodecNIO
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import NIOSSL

/// A relay node that does not hold the database's lock (`serve --node-port` while another relay
/// routes): it accepts clients on its own ports (TCP, WebSocket, TLS as configured), checks their
/// frames against the limits, and forwards them over one link to the routing node, which decides,
/// commits and answers (``NodeLink``). It keeps nothing: a client it drops reconnects (here or to
/// another node) and resumes from its stream position, as after a restart.
///
/// It follows the routing node the database names (``follow(_:)``, at every try of the lock). When
/// the link goes away (the routing node stopped or died), it closes its clients with an
/// `unavailable` notice and links to the next routing node. When it takes the lock itself it stops
/// (``stop()``) and the relay starts routing on the same ports.
///
/// With `--metrics-port` it serves metrics of its own while it forwards (``metrics``): its
/// connections, the frames its clients sent, its slow consumers and the connections it closed for an
/// error, whether its link is up and how many clients it holds back; the routing node counts logins,
/// acks and frames out for every node's clients, as it sees each as a session.
///
/// Everything but ``follow(_:)``, ``stop()``, ``shutdown(drainTimeout:timeout:)``, ``mayTakeOver`` and
/// ``claimTakeover()`` (called from other threads) runs on its one event loop.
final class EdgeNode: @unchecked Sendable {
    private let configuration: RelayConfiguration
    private let options: NodeLink.Options
    private let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    let loop: any EventLoop

    private var started = false
    private var listeners: [any Channel] = []
    /// The ports it listens on, once it does.
    private let ports = NIOLockedValueBox<Ports?>(nil)
    /// Its own metrics, served on `--metrics-port` while it forwards.
    private let metrics = RelayMetrics()

    /// Where a forwarding node takes clients and serves its metrics: where the relay routes once it
    /// took the lock.
    struct Ports {
        var tcp: Int
        var webSocket: Int?
        var metrics: Int?
    }
    /// The routing node the database names, and the link to it.
    private var target: RouterNode?
    private var link: (any Channel)?
    private var linkReady = false
    private var connecting = false
    private var nextAttempt = NIODeadline.uptimeNanoseconds(0)
    private var stopped = false
    /// How the node ends, set from any thread by the first of a takeover (``claimTakeover()``,
    /// then ``stop()``) and a shutdown (``shutdown(drainTimeout:timeout:)``): the other then does
    /// nothing, so neither submits to an event loop the other shut down, and a node that shuts down
    /// never routes.
    private let ending = NIOLockedValueBox(End.forwarding)

    private enum End {
        /// Neither began.
        case forwarding
        /// The relay took the database's lock and routes (``claimTakeover()``); ``stop()`` stops forwarding.
        case takingOver
        /// ``stop()`` ran.
        case stopped
        /// A SIGTERM's shutdown began.
        case shuttingDown
    }
    /// Whether a failed link to ``target`` was announced (once per target, until a link is up).
    private var failureAnnounced = false

    /// The clients of the current link, by the session id the routing node knows them by.
    private var clients: [UInt32: ChannelConnection] = [:]
    /// Clients dropped with a link, while their connections close (a notice is flushed first): they
    /// belong to no link, so nothing of theirs goes to the next one, and their ids stay taken.
    private var dropped: [UInt32: ChannelConnection] = [:]
    private var nextID: UInt32 = 0
    private var toFlush: Set<UInt32> = []
    private var linkNeedsFlush = false
    /// The bytes queued on the link past which clients that send are held back
    /// (`--max-outbound-bytes`).
    private var linkHighWater: Int { max(2, configuration.maxOutboundBytes) }
    /// Whether the link to the routing node is past its high-water mark.
    private var linkFull = false
    /// The clients whose reads are off until the link drains, each with whether its read batch
    /// has ended since (NIO then reads it again only at its end of stream).
    /// Its count is the `imcodec_relay_node_clients_held` gauge, kept here and nowhere else.
    private var held: [UInt32: Bool] = [:] {
        didSet { metrics.nodeClientsHeld.set(held.count) }
    }
    /// Clients closed for what NIO read of them while held: nothing more of theirs is forwarded.
    private var refused: Set<UInt32> = []
    /// Set once a shutdown asked the routing node to answer what was forwarded (``NodeLink/Kind/drain``):
    /// nothing more is forwarded, and the promise completes with its answer.
    private var draining: EventLoopPromise<Void>?

    init(configuration: RelayConfiguration, options: NodeLink.Options) {
        self.configuration = configuration
        self.options = options
        self.loop = group.next()
    }

    /// Follows the routing node `node` (from any thread): starts listening the first time, and
    /// links to it when the link is down or the node changed.
    func follow(_ node: RouterNode?) {
        // Under the lock that ``shutdown(drainTimeout:timeout:)`` (and ``stop()``) claim before they shut the
        // loop down: a SIGTERM's shutdown runs beside the lock's waiting thread, which may call
        // this once more after it.
        ending.withLockedValue { end in
            guard end == .forwarding else { return }
            loop.execute { self.followOnLoop(node) }
        }
    }

    private func followOnLoop(_ node: RouterNode?) {
        // A node that shuts down follows no other routing node: it waits for the answers of the
        // one it forwarded to, then kicks its clients.
        guard !stopped, draining == nil else { return }
        if !started {
            started = true
            listen()
        }
        if node != target {
            target = node
            failureAnnounced = false
            if let stale = link {
                // A new routing node: the old link is stale even if it still stands. Forgotten
                // before it closes, so that its close (which NIO may report at once) is not taken
                // for the loss of the current link: the clients are dropped once, for this reason.
                self.link = nil
                stale.close(promise: nil)
                dropAll(reason: "another relay routes for the database now")
            }
            nextAttempt = .uptimeNanoseconds(0)
        }
        if link == nil, !connecting, let target, NIODeadline.now() >= nextAttempt {
            connect(to: target)
        }
    }

    private func listen() {
        let accept: RelayServer.ClientHandlerMaker = { channel, transport in
            let stats = FrameDecoderStats()
            return (
                EdgeClientHandler(edge: self, connection: ChannelConnection(channel: channel, transport: transport)),
                stats
            )
        }
        let tcp = RelayServer.bindTCP(configuration, port: configuration.port, loop: loop, accept: accept)
        let webSocket: EventLoopFuture<(any Channel)?> =
            configuration.webSocketPort.map {
                RelayServer.bindWebSocket(configuration, port: $0, loop: loop, accept: accept).map { Optional($0) }
            } ?? loop.makeSucceededFuture(nil)
        let metricsListener: EventLoopFuture<(any Channel)?> =
            configuration.metricsPort.map {
                MetricsHTTPHandler.bind(host: configuration.host, port: $0, loop: loop, registry: metrics.registry)
                    .map { Optional($0) }
            } ?? loop.makeSucceededFuture(nil)
        tcp.and(webSocket).and(metricsListener).whenComplete { result in
            switch result {
            case .success(let ((tcp, webSocket), metricsListener)):
                self.listeners = [tcp] + [webSocket, metricsListener].compactMap { $0 }
                let port = tcp.localAddress?.port ?? 0
                let webSocketPort = webSocket.map { $0.localAddress?.port ?? 0 }
                let metricsPort = metricsListener.map { $0.localAddress?.port ?? 0 }
                self.ports.withLockedValue { $0 = Ports(tcp: port, webSocket: webSocketPort, metrics: metricsPort) }
                let host = self.configuration.host
                let authority = { (port: Int) in host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
                var line = "listening on \(authority(port))" + (self.configuration.tls == nil ? "" : " (TLS)")
                if let webSocketPort {
                    line +=
                        ", WebSocket on \(self.configuration.tls == nil ? "ws" : "wss")://\(authority(webSocketPort))/"
                }
                self.options.announce(line + "; forwarding its clients to the relay that routes")
                if let metricsPort { self.options.announce("metrics on http://\(authority(metricsPort))/metrics") }
            case .failure(let error):
                self.configuration.onFatal("cannot listen as a relay node on \(self.configuration.host) (\(error))")
            }
        }
    }

    private func connect(to node: RouterNode) {
        connecting = true
        let maxSize = NodeLink.maxMessageSize(configuration.codec)
        let pinned = node.certificateSHA256
        var bootstrap = ClientBootstrap(group: loop)
        for (option, value) in NodeLink.socketOptions(routing: false) {
            bootstrap = bootstrap.channelOption(option, value: value)
        }
        // Past the high mark the clients that send are held back until the routing node has taken
        // half of it (``linkWritabilityChanged(_:)``): what they send waits in their sockets, not
        // in this process.
        let watermark = ChannelOptions.Types.WriteBufferWaterMark(low: max(1, linkHighWater / 2), high: linkHighWater)
        bootstrap =
            bootstrap
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelOption(.writeBufferWaterMark, value: watermark)
            .connectTimeout(.seconds(2))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let sync = channel.pipeline.syncOperations
                    if !pinned.isEmpty {
                        // The routing node's own certificate, as it published it: nothing else. The
                        // callback below replaces the chain check; it runs only when verification is
                        // on (with `.none`, swift-nio-ssl never calls it and any certificate passed).
                        var tls = TLSConfiguration.makeClientConfiguration()
                        tls.certificateVerification = .noHostnameVerification
                        let context = try NIOSSLContext(configuration: tls)
                        try sync.addHandler(
                            try NIOSSLClientHandler(context: context, serverHostname: nil) { certificates, promise in
                                let der = (try? certificates.first?.toDERBytes()) ?? []
                                promise.succeed(
                                    NodeLink.fingerprint(der) == pinned ? .certificateVerified : .failed
                                )
                            }
                        )
                    }
                    try sync.addHandler(ByteToMessageHandler(NodeLink.Decoder(maxSize: maxSize)))
                    try sync.addHandler(EdgeLinkHandler(edge: self))
                }
            }
        bootstrap.connect(host: node.host, port: node.port).whenComplete { result in
            self.connecting = false
            switch result {
            case .success(let channel):
                guard !self.stopped, self.draining == nil, self.target == node else {
                    channel.close(promise: nil)
                    return
                }
                self.link = channel
                var secret = channel.allocator.buffer(capacity: node.secret.utf8.count)
                secret.writeString(node.secret)
                NodeLink.write(.hello, session: 0, secret, to: channel, flush: true)
            case .failure:
                self.nextAttempt = .now() + .milliseconds(250)
            }
        }
    }

    // MARK: The link

    fileprivate func linkWelcomed(_ channel: any Channel) {
        guard channel === link else { return }
        linkReady = true
        failureAnnounced = false
        metrics.nodeForwarding.set(1)
        metrics.nodeClientsHeld.set(0)  // Exported from the first link on; ``held`` keeps it after.
        options.announce("forwarding clients to the relay that routes, at \(target?.address ?? "?")")
    }

    /// The link failed before it was up: a TLS handshake with a certificate other than the one the
    /// routing node published, or a peer that closed it. Said once per routing node.
    fileprivate func linkFailed(_ channel: any Channel, _ error: any Error) {
        guard channel === link, !linkReady, !failureAnnounced else { return }
        failureAnnounced = true
        options.announce(
            "could not link to the relay that routes, at \(target?.address ?? "?") (\(error)); trying again"
        )
    }

    /// The link to the routing node passed its high-water mark (the routing node takes frames more
    /// slowly than the clients send them), or drained to its low one. While it is full, a client
    /// that sends a frame has its reads turned off after that frame (``forward(_:_:)``); once it
    /// drained, those clients read again, and their deadline handlers give a frame caught in the
    /// middle its whole wait again (`ReadsResumed`). Without this the frames would queue in this
    /// process without bound; a relay alone gets the same from TCP, since it reads a client only as
    /// fast as it routes. Clients that send nothing are never touched.
    fileprivate func linkWritabilityChanged(_ channel: any Channel) {
        guard channel === link else { return }
        linkFull = !channel.isWritable
        guard !linkFull else { return }
        for id in held.keys {
            guard let connection = clients[id] else { continue }
            connection.channel.setOption(.autoRead, value: true).whenFailure { _ in }
            connection.channel.pipeline.fireUserInboundEventTriggered(ReadsResumed())
        }
        held.removeAll()
    }

    /// A client's read batch ended: if it is held, what NIO still reads of it is its end of stream.
    fileprivate func readBatchEnded(_ session: UInt32) {
        if held[session] != nil { held[session] = true }
    }

    fileprivate func linkLost(_ channel: any Channel) {
        guard channel === link else { return }
        link = nil
        // A shutdown that waits for answers gets no more: it kicks the clients now.
        if let draining {
            draining.succeed()
            return
        }
        // A node that stops (``stop()``, ``shutdown(drainTimeout:timeout:)``) closes the link itself and tells
        // its clients why: the close is no loss, nothing to announce or drop.
        guard !stopped else { return }
        let wasReady = linkReady
        nextAttempt = .now() + .milliseconds(100)
        if wasReady {
            options.announce("lost the link to the relay that routes; waiting for the next one")
        }
        dropAll(reason: "the relay that routed went away")
    }

    /// Closes every client: what they sent and was not acknowledged they send again where they reconnect.
    private func dropAll(reason: String) {
        linkReady = false
        metrics.nodeForwarding.set(0)
        // Every client goes; the next link starts empty (also when this one is still closing).
        linkFull = false
        held.removeAll()
        let notice = Self.noticeBuffer(code: "unavailable", reason: "\(reason); connect again to resume")
        for (id, connection) in clients {
            dropped[id] = connection
            connection.close(code: "unavailable", reason: reason, after: notice)
        }
        clients.removeAll()
    }

    fileprivate func deliver(_ session: UInt32, _ bytes: ByteBuffer) {
        guard let connection = clients[session] else { return }
        connection.write(bytes)
        toFlush.insert(session)
        if !connection.isWritable {
            // The relay's own rule, applied where the client's connection is.
            slowConsumer(connection)
        }
    }

    /// Closes a client whose queued output passed `--max-outbound-bytes`, and counts it.
    fileprivate func slowConsumer(_ connection: ChannelConnection) {
        guard connection.isActive else { return }
        metrics.slowConsumer(connection.transport)
        metrics.closedByError(code: "slowConsumer")
        connection.close(
            code: "slowConsumer",
            reason: "more than \(configuration.maxOutboundBytes) bytes queued",
            after: nil
        )
    }

    fileprivate func close(_ session: UInt32, code: String, reason: String, last: ByteBuffer?) {
        guard let connection = clients[session] else { return }
        connection.flush()
        connection.close(code: code, reason: reason, after: last)
    }

    fileprivate func flushClients() {
        for id in toFlush { clients[id]?.flush() }
        toFlush.removeAll(keepingCapacity: true)
    }

    // MARK: Clients

    /// A client connected: it gets an id and the routing node is told, or, with no link, it is
    /// closed with an `unavailable` notice.
    fileprivate func opened(_ connection: ChannelConnection) -> UInt32? {
        metrics.connectionOpened(connection.transport)
        guard linkReady, let link else {
            let reason = "no relay routes for the database at the moment"
            connection.close(
                code: "unavailable",
                reason: reason,
                after: Self.noticeBuffer(code: "unavailable", reason: "\(reason); connect again")
            )
            return nil
        }
        nextID = NodeLink.sessionID(after: nextID) { clients[$0] != nil || dropped[$0] != nil }
        clients[nextID] = connection
        var payload = link.allocator.buffer(capacity: 64)
        payload.writeInteger(UInt8(connection.transport == .webSocket ? 1 : 0))
        payload.writeString(connection.address)
        NodeLink.write(.open, session: nextID, payload, to: link, flush: true)
        return nextID
    }

    fileprivate func forward(_ session: UInt32, _ frame: InboundFrame) {
        // Once the node drains for its shutdown, what its clients send is not forwarded: they get
        // no answer to it, and send it again where they log in next.
        guard linkReady, draining == nil, let link, let connection = clients[session] else { return }
        guard !refused.contains(session) else { return }
        if held[session] == true {
            // Read after its reads were turned off and its read batch ended: only its end of
            // stream makes NIO read what is left, whatever autoRead says. It is closed instead of
            // having all of that queued; nothing after this frame is forwarded (no gap).
            refused.insert(session)
            let reason = "the relay that routes is not keeping up"
            metrics.closedByError(code: "unavailable")
            connection.close(
                code: "unavailable",
                reason: reason,
                after: Self.noticeBuffer(code: "unavailable", reason: "\(reason); connect again")
            )
            return
        }
        if linkFull, held[session] == nil {
            held[session] = false
            connection.channel.setOption(.autoRead, value: false).whenFailure { _ in }
        }
        metrics.frameIn(frame.payloadKind, connection.transport)
        NodeLink.write(.frame, session: session, frame.record, to: link)
        linkNeedsFlush = true
    }

    fileprivate func flushLink() {
        guard linkNeedsFlush else { return }
        linkNeedsFlush = false
        link?.flush()
    }

    /// Closes a client for an error its pipeline raised (the relay's own mapping of errors to codes).
    fileprivate func failed(_ connection: ChannelConnection, error: any Error) {
        guard let (code, reason) = RelayProtocol.closeReason(for: error, closing: !connection.isActive) else { return }
        metrics.closedByError(code: code)
        connection.close(code: code, reason: reason, after: Self.noticeBuffer(code: code, reason: reason))
    }

    /// A client's connection closed (whether or not it got a session).
    fileprivate func connectionClosed(_ transport: Session.Transport) {
        metrics.connectionClosed(transport)
    }

    fileprivate func closed(_ session: UInt32) {
        held[session] = nil
        refused.remove(session)
        dropped[session] = nil
        guard clients.removeValue(forKey: session) != nil, linkReady, let link else { return }
        NodeLink.write(.closed, session: session, nil, to: link, flush: true)
    }

    private static func noticeBuffer(code: String, reason: String) -> ByteBuffer {
        var buffer = ByteBuffer()
        buffer.writeFrame(RelayProtocol.errorFrame(code: code, reason: reason))
        return buffer
    }

    // MARK: Stopping

    /// Stops (from any thread, once the relay took the lock): closes its listeners, every client
    /// and the link, and its event loop.
    /// - Returns: The ports it listened on (and served metrics on), for the relay to route on the same ones.
    func stop() -> Ports? {
        let stops = ending.withLockedValue { end in
            guard end == .forwarding || end == .takingOver else { return false }
            end = .stopped
            return true
        }
        guard stops else { return ports.withLockedValue { $0 } }
        let done = loop.flatSubmit { () -> EventLoopFuture<Void> in
            self.stopped = true
            self.link?.close(promise: nil)
            self.link = nil
            self.dropAll(reason: "this relay node routes for the database now")
            let closes = self.listeners.map { $0.close() } + self.dropped.values.map(\.closeFuture)
            return EventLoopFuture.andAllComplete(closes, on: self.loop)
        }
        try? done.wait()
        try? group.syncShutdownGracefully()
        return ports.withLockedValue { $0 }
    }

    /// Shuts the node down for good (SIGTERM or SIGINT, from any thread), as a routing relay does:
    /// stops accepting and forwarding, waits for the routing node's answers to what it forwarded
    /// (``NodeLink/Kind/drain``: every ack of a frame the routing node committed reaches its
    /// client), tells every client `kicked_offline` (server shutdown) and closes it, then closes the
    /// link (the routing node has seen each client close by then). It acknowledged nothing itself,
    /// so nothing is lost: the clients log in again elsewhere and resume, and send again what was
    /// not acknowledged. Waits at most `drainTimeout` for the answers, and at most `timeout` for
    /// the clients' connections to close (a client that does not read is closed after a second,
    /// ``ChannelConnection/close(code:reason:after:)``). The relay gives the drain twice its
    /// store's timeout (`timeout` in the PostgreSQL URL, 10 s by default: each of the routing
    /// node's round trips to the database waits at most that long, and the answers may wait for
    /// the commit under way and the next); answers that come later are lost to their clients,
    /// which send those frames again where they log in (nothing acknowledged is lost). From then on
    /// the relay does not take the database's lock (``mayTakeOver``): another node routes. The
    /// caller must end the process after it (the relay's start never returns once it may not take
    /// the lock), as `serve`'s stop thread does.
    /// - Returns: `false` when the relay has taken the lock (``claimTakeover()``): then it does
    ///   nothing, and the caller ends the process; the relay, which opens its store, has
    ///   acknowledged nothing yet, and the node's clients see their connections close, unkicked.
    @discardableResult
    func shutdown(drainTimeout: TimeAmount = .seconds(20), timeout: TimeAmount = .seconds(5)) -> Bool {
        let shutsDown = ending.withLockedValue { end in
            guard end == .forwarding else { return false }
            end = .shuttingDown
            return true
        }
        guard shutsDown else { return false }
        let done = loop.flatSubmit { () -> EventLoopFuture<Void> in
            let listening = self.listeners.map { $0.close() }
            return self.drain(timeout: drainTimeout).flatMap { self.kickAll(timeout: timeout, listening: listening) }
        }
        try? done.wait()
        try? group.syncShutdownGracefully()
        return true
    }

    /// Forwards nothing more and asks the routing node to answer what was forwarded; succeeds once
    /// it has (its answers are then written to the clients), when the link goes, or after `timeout`.
    private func drain(timeout: TimeAmount) -> EventLoopFuture<Void> {
        let drained = loop.makePromise(of: Void.self)
        draining = drained
        guard linkReady, let link else {
            drained.succeed()
            return drained.futureResult
        }
        options.announce("shutting down: waiting for the relay that routes to answer what this node forwarded")
        flushLink()
        NodeLink.write(.drain, session: 0, nil, to: link, flush: true)
        // Whichever comes first (a second completion of the promise does nothing); a lost link
        // completes it too (``linkLost(_:)``).
        let timer = loop.scheduleTask(in: timeout) { drained.succeed() }
        return drained.futureResult.always { _ in timer.cancel() }
    }

    /// The routing node answered everything forwarded before the drain.
    fileprivate func drained(_ channel: any Channel) {
        guard channel === link else { return }
        flushClients()
        draining?.succeed()
    }

    /// Tells every client `kicked_offline` (server shutdown) and closes it; succeeds once they and
    /// the listeners closed, or after `timeout`, and closes the link.
    private func kickAll(timeout: TimeAmount, listening: [EventLoopFuture<Void>]) -> EventLoopFuture<Void> {
        stopped = true
        var kicked = ByteBuffer()
        kicked.writeFrame(
            RelayProtocol.kickedFrame(.serverShutdown, "this relay node is shutting down; log in again to resume")
        )
        for connection in clients.values {
            connection.close(code: "serverShutdown", reason: "the relay node is shutting down", after: kicked)
        }
        let closes = listening + (Array(clients.values) + dropped.values).map(\.closeFuture)
        // Whichever comes first (a second completion of the promise does nothing).
        let closed = loop.makePromise(of: Void.self)
        EventLoopFuture.andAllComplete(closes, on: loop).cascade(to: closed)
        let timer = loop.scheduleTask(in: timeout) { closed.succeed() }
        return closed.futureResult.always { _ in
            timer.cancel()
            self.link?.close(promise: nil)
        }
    }
}

extension EdgeNode {
    /// Whether the relay may take the database's lock (from the lock's waiting thread): not once a
    /// shutdown began, which ends the process.
    var mayTakeOver: Bool { ending.withLockedValue { $0 != .shuttingDown } }

    /// Claims the takeover once the relay took the lock (from the lock's waiting thread): `false`
    /// when a shutdown began first, and then the relay must give the lock back and not route.
    func claimTakeover() -> Bool {
        ending.withLockedValue { end in
            switch end {
            case .forwarding, .takingOver:
                end = .takingOver
                return true
            case .stopped, .shuttingDown:
                return false
            }
        }
    }
}

/// A forwarding node's end of its link to the routing node.
private final class EdgeLinkHandler: ChannelInboundHandler {
    typealias InboundIn = NodeLink.Message

    private let edge: EdgeNode

    init(edge: EdgeNode) { self.edge = edge }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let message = Self.unwrapInboundIn(data)
        switch message.kind {
        case .welcome:
            edge.linkWelcomed(context.channel)
        case .frame:
            edge.deliver(message.session, message.payload)
        case .close:
            var payload = message.payload
            guard let (code, reason, last) = NodeLink.readClose(&payload) else {
                context.close(promise: nil)
                return
            }
            edge.close(message.session, code: code, reason: reason, last: last)
        case .drained:
            edge.drained(context.channel)
        case .hello, .open, .closed, .drain:
            context.close(promise: nil)
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        edge.flushClients()
        context.fireChannelReadComplete()
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        edge.linkWritabilityChanged(context.channel)
        context.fireChannelWritabilityChanged()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        edge.linkFailed(context.channel, error)
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        edge.linkLost(context.channel)
        context.fireChannelInactive()
    }
}

/// The last handler of a forwarding node's client connection: hands its frames to the link.
final class EdgeClientHandler: ChannelInboundHandler {
    typealias InboundIn = InboundFrame

    private let edge: EdgeNode
    private let connection: ChannelConnection
    private var id: UInt32?
    private var started = false

    fileprivate init(edge: EdgeNode, connection: ChannelConnection) {
        self.edge = edge
        self.connection = connection
    }

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
        id = edge.opened(connection)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard let id else { return }
        // Both transports' frames carry their length prefix (a WebSocket message gets one).
        edge.forward(id, Self.unwrapInboundIn(data))
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if let id { edge.readBatchEnded(id) }
        edge.flushLink()
        context.fireChannelReadComplete()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard id != nil else { return context.close(promise: nil) }
        edge.failed(connection, error: error)
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if !context.channel.isWritable { edge.slowConsumer(connection) }
        context.fireChannelWritabilityChanged()
    }

    func channelInactive(context: ChannelHandlerContext) {
        if started { edge.connectionClosed(connection.transport) }
        if let id { edge.closed(id) }
        context.fireChannelInactive()
    }
}
#endif
