#if Tools
import IMCodec
import IMCodecNIO
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix

@testable import imcodec_relay

/// Who sends what in a load run: client `i` sends `messages` messages; every `groupEvery`-th goes to
/// its group `g(i % groupCount)`, the rest one-to-one to client `i + 1` (a ring). At most `window`
/// messages per client wait for their ack.
struct LoadPlan: Sendable {
    var prefix = "u"
    var clients = 50
    var messages = 2_000
    var groupEvery = 10
    var groupCount = 5
    var window = 32
    /// Clients whose connection is closed abruptly (from the client side) when they have received
    /// this many messages: each then reconnects with `last_seen`, syncs the gap, and goes on.
    var drops: [Int: [Int]] = [:]
    /// The sync limit resuming clients ask for (0: the relay's cap).
    var syncLimit: UInt32 = 0

    func user(_ i: Int) -> String { "\(prefix)\(i)" }
    func group(of i: Int) -> String { "\(prefix)g\(i % groupCount)" }
    func peer(of i: Int) -> String { user((i + 1) % clients) }
    func isGroupMessage(_ k: Int) -> Bool { k % groupEvery == groupEvery - 1 }
    func members(of i: Int) -> [Int] { (0..<clients).filter { $0 % groupCount == i % groupCount } }

    /// The static group file of the run.
    var groups: [String: Set<String>] {
        var groups: [String: Set<String>] = [:]
        for i in 0..<clients { groups[group(of: i), default: []].insert(user(i)) }
        return groups
    }

    var groupIndices: [Int] { (0..<messages).filter(isGroupMessage) }
    var directIndices: [Int] { (0..<messages).filter { !isGroupMessage($0) } }

    /// Frames client `i` should receive: its predecessor's one-to-one messages and its group's messages.
    func expectedDeliveries(for i: Int) -> Int {
        directIndices.count + (members(of: i).count - 1) * groupIndices.count
    }
}

/// A load client's connection closed before its plan was done.
struct LoadIncomplete: Error, CustomStringConvertible {
    let description: String
}

/// What one load client saw.
struct LoadClientResult: Sendable {
    var index = 0
    var acked = 0
    var ackErrors: [String] = []
    var ackOrderViolations = 0
    /// Per sender and conversation ("c:u3" or "g:ug1:u3"), the message indices in arrival order.
    var received: [String: [Int]] = [:]
    var seqViolations = 0
    /// Messages whose text is not the one their client_msg_id names.
    var contentMismatches = 0
    var deliveries = 0
    /// Connections closed on purpose and resumed.
    var reconnects = 0
    /// Messages that came by sync rather than live.
    var synced = 0
    var latenciesNs: [UInt64] = []
    var ackLatenciesNs: [UInt64] = []
}

/// A load client: logs in, sends its plan with a window, checks acks and what arrives. When the
/// plan drops it, it closes its connection, reconnects (the same handler on a new channel) with
/// `last_seen`, syncs the gap (``ResumeTracker``), and sends again what was not acknowledged (the
/// relay acknowledges a message it already has with its first stamp).
final class LoadClientHandler: ChannelInboundHandler {
    typealias InboundIn = Frame
    typealias OutboundOut = Frame

    let plan: LoadPlan
    let index: Int
    let loggedIn: EventLoopPromise<Void>
    let finished: EventLoopPromise<LoadClientResult>
    private var context: ChannelHandlerContext?
    private var result = LoadClientResult()
    private var nextToSend = 0
    private var sentTimes: [String: UInt64] = [:]
    private var unackedOrder: [String] = []
    private var unackedHead = 0
    private var ackSeq: [String: UInt64] = [:]
    private var lastSeq: [String: UInt64] = [:]
    private let expected: Int
    private var tracker: ResumeTracker
    private var dropsLeft: [Int]
    private var dropping = false
    /// Whether frames from the current channel count: not once the client decided to drop it.
    private var connected = false
    private var aborted = false
    private var started = false
    /// Opens a new connection with this handler (set by ``runLoad``).
    var reconnect: (() -> Void)?
    /// The channel the handler is on now.
    var channel: (any Channel)? { context?.channel }

    /// The client's login token.
    let token: String

    init(
        plan: LoadPlan,
        index: Int,
        token: String,
        loggedIn: EventLoopPromise<Void>,
        finished: EventLoopPromise<LoadClientResult>
    ) {
        self.plan = plan
        self.token = token
        self.index = index
        self.loggedIn = loggedIn
        self.finished = finished
        self.expected = plan.expectedDeliveries(for: index)
        self.tracker = ResumeTracker(user: plan.user(index))
        self.dropsLeft = plan.drops[index] ?? []
        result.index = index
        result.latenciesNs.reserveCapacity(expected)
    }

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }

    /// Drops the context, which holds this handler: keeping it would leak both (a retain cycle).
    /// (After a drop, the old channel may remove it after the new one added it: only its own context goes.)
    func handlerRemoved(context: ChannelHandlerContext) {
        if self.context === context { self.context = nil }
    }

    func channelActive(context: ChannelHandlerContext) {
        if aborted {
            context.close(promise: nil)
            return
        }
        connected = true
        let login = RelayProtocol.loginFrame(
            plan.user(index),
            token: token,
            deviceID: "load-\(index)-\(result.reconnects)",
            lastSeen: tracker.lastSeen,
            requestID: 1
        )
        context.writeAndFlush(wrapOutboundOut(login), promise: nil)
        context.fireChannelActive()
    }

    /// Stops the client (the run ended or stalled): its connection closes and it does not reconnect.
    func abort() {
        aborted = true
        context?.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        if dropping, !aborted, let reconnect {
            // Closed on purpose: come back, without what was in flight.
            dropping = false
            result.reconnects += 1
            nextToSend = result.acked
            unackedOrder = []
            unackedHead = 0
            context.fireChannelInactive()
            reconnect()
            return
        }
        reconnect = nil  // It holds this handler.
        loggedIn.fail(ChannelError.ioOnClosedChannel)
        finished.fail(
            LoadIncomplete(
                description: "\(plan.user(index)) closed after \(result.acked)/\(plan.messages) acks and "
                    + "\(result.deliveries)/\(expected) deliveries"
            )
        )
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // Dropping a connection mid-frame ends its stream inside a frame: expected, not a failure.
        if dropping || context !== self.context { return }
        finished.fail(error)
        context.close(promise: nil)
    }

    /// Starts sending (on the channel's event loop).
    func start() {
        started = true
        fill()
        checkDone()
    }

    private func deliver(_ message: Message, now: UInt64, bySync: Bool) {
        // A sync returns the client's own group messages too; only what others sent is counted.
        guard message.senderID != plan.user(index) else { return }
        result.deliveries += 1
        if bySync { result.synced += 1 }
        let k = Int(message.clientMsgID.split(separator: "-").last ?? "") ?? -1
        if message.firstText != "m\(k)" { result.contentMismatches += 1 }
        let conversation = message.conversation
        let key =
            conversation?.type == .group
            ? "g:\(conversation?.targetID ?? ""):\(message.senderID)" : "c:\(message.senderID)"
        result.received[key, default: []].append(k)
        let seqKey = conversation?.type == .group ? "g:\(conversation?.targetID ?? "")" : key
        let previous = lastSeq[seqKey, default: 0]
        let inOrder = conversation?.type == .group ? message.seq > previous : message.seq == previous + 1
        if !inOrder { result.seqViolations += 1 }
        lastSeq[seqKey] = message.seq
        if message.cloudCustomData.count == 8 {
            let sent = message.cloudCustomData.withUnsafeBytes {
                UInt64(littleEndian: $0.loadUnaligned(as: UInt64.self))
            }
            result.latenciesNs.append(now &- sent)
        }
        if connected, let next = dropsLeft.first, result.deliveries >= next, let context {
            dropsLeft.removeFirst()
            dropping = true
            connected = false
            // The dropped channel is no longer this client's: what it still reports is ignored.
            self.context = nil
            context.close(promise: nil)
        }
    }

    private func fill() {
        guard let context else { return }
        var wrote = false
        while nextToSend < plan.messages, unackedOrder.count - unackedHead < plan.window {
            let k = nextToSend
            nextToSend += 1
            let id = "\(index)-\(k)"
            let me = plan.user(index)
            var message =
                plan.isGroupMessage(k)
                ? Message.groupText(from: me, group: plan.group(of: index), "m\(k)", clientMsgID: id)
                : Message.c2cText(from: me, to: plan.peer(of: index), "m\(k)", clientMsgID: id)
            let now = NIODeadline.now().uptimeNanoseconds
            withUnsafeBytes(of: now.littleEndian) { message.cloudCustomData = Array($0) }
            sentTimes[id] = now
            unackedOrder.append(id)
            context.write(wrapOutboundOut(Frame(message)), promise: nil)
            wrote = true
        }
        if wrote { context.flush() }
    }

    private func checkDone() {
        if result.acked == plan.messages, result.deliveries == expected {
            finished.succeed(result)
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        testClientReads.withLockedValue { $0 += 1 }
        // Frames still arriving on a connection being dropped are lost with it (the resume fetches them).
        guard connected, context === self.context else { return }
        let frame = unwrapInboundIn(data)
        let now = NIODeadline.now().uptimeNanoseconds
        switch frame.payload {
        case .loginResult(let login)?:
            guard login.errorCode == 0 else {
                finished.fail(
                    LoadIncomplete(description: "\(plan.user(index)): login refused: \(login.errorDescription)")
                )
                return
            }
            for request in tracker.loggedIn(login, limit: plan.syncLimit) {
                context.write(wrapOutboundOut(Frame(.syncRequest(request))), promise: nil)
            }
            context.flush()
            loggedIn.succeed()
            if started { fill() }
        case .syncResponse(let response)?:
            let (messages, next) = tracker.synced(response, limit: plan.syncLimit)
            for request in next { context.write(wrapOutboundOut(Frame(.syncRequest(request))), promise: nil) }
            if !next.isEmpty { context.flush() }
            for message in messages { deliver(message, now: now, bySync: true) }
        case .sendAck(let ack)?:
            result.acked += 1
            if unackedHead < unackedOrder.count, unackedOrder[unackedHead] == ack.clientMsgID {
                unackedHead += 1
            } else {
                result.ackOrderViolations += 1
            }
            if unackedHead > 1024 {
                unackedOrder.removeFirst(unackedHead)
                unackedHead = 0
            }
            if ack.errorCode != 0 {
                result.ackErrors.append("\(ack.clientMsgID): \(ack.errorCode) \(ack.errorDescription)")
            }
            let key = ack.conversation.map { "\($0.type)/\($0.targetID)" } ?? "?"
            if ack.seq <= ackSeq[key, default: 0] { result.ackOrderViolations += 1 }
            ackSeq[key] = ack.seq
            if let sent = sentTimes.removeValue(forKey: ack.clientMsgID) { result.ackLatenciesNs.append(now &- sent) }
            fill()
        case .message(let message)?:
            for message in tracker.received(message) { deliver(message, now: now, bySync: false) }
        default:
            break
        }
        checkDone()
    }
}

/// The outcome of a whole load run.
struct LoadRunResult: Sendable {
    var clients: [LoadClientResult]
    var seconds: Double
    var messages: Int
    var deliveries: Int

    var messagesPerSecond: Double { Double(messages) / seconds }
    var deliveriesPerSecond: Double { Double(deliveries) / seconds }

    static func percentile(_ sorted: [UInt64], _ p: Double) -> Double {
        guard !sorted.isEmpty else { return 0 }
        let index = min(sorted.count - 1, Int((Double(sorted.count - 1) * p).rounded()))
        return Double(sorted[index]) / 1_000_000
    }

    var deliveryLatencyMs: (p50: Double, p99: Double, max: Double) {
        let all = clients.flatMap(\.latenciesNs).sorted()
        return (Self.percentile(all, 0.5), Self.percentile(all, 0.99), Self.percentile(all, 1))
    }

    var ackLatencyMs: (p50: Double, p99: Double) {
        let all = clients.flatMap(\.ackLatenciesNs).sorted()
        return (Self.percentile(all, 0.5), Self.percentile(all, 0.99))
    }

    /// Everything that differs from the plan: lost, duplicated or reordered messages, bad acks.
    func problems(_ plan: LoadPlan) -> [String] {
        var problems: [String] = []
        for result in clients {
            let i = result.index
            if result.acked != plan.messages { problems.append("\(plan.user(i)): \(result.acked) acks") }
            if !result.ackErrors.isEmpty {
                problems.append("\(plan.user(i)): ack errors \(result.ackErrors.prefix(3))")
            }
            if result.ackOrderViolations > 0 {
                problems.append("\(plan.user(i)): \(result.ackOrderViolations) acks out of order")
            }
            if result.seqViolations > 0 { problems.append("\(plan.user(i)): \(result.seqViolations) seq out of order") }
            if result.contentMismatches > 0 {
                problems.append("\(plan.user(i)): \(result.contentMismatches) messages with the wrong text")
            }
            let drops = plan.drops[i]?.count ?? 0
            if result.reconnects != drops {
                problems.append("\(plan.user(i)): \(result.reconnects)/\(drops) reconnects")
            }
            let predecessor = (i + plan.clients - 1) % plan.clients
            if result.received["c:\(plan.user(predecessor))"] ?? [] != plan.directIndices {
                problems.append("\(plan.user(i)): one-to-one from \(plan.user(predecessor)) not exactly once in order")
            }
            for member in plan.members(of: i) where member != i {
                let key = "g:\(plan.group(of: i)):\(plan.user(member))"
                if result.received[key] ?? [] != plan.groupIndices {
                    problems.append(
                        "\(plan.user(i)): group messages from \(plan.user(member)) not exactly once in order"
                    )
                }
            }
            let unexpected = result.received.count - 1 - (plan.members(of: i).count - 1)
            if unexpected != 0 {
                problems.append("\(plan.user(i)): messages from \(unexpected) unexpected conversations")
            }
        }
        return problems
    }
}

/// A load run that stopped because no test client read anything for its stall time.
struct LoadStalled: Error, CustomStringConvertible {
    let description: String
}

/// Opens a connection for `handler` (the first, or one after a drop) to the relay on `port`.
func connectLoadClient(
    _ handler: NIOLoopBound<LoadClientHandler>,
    loop: any EventLoop,
    port: Int
) -> EventLoopFuture<any Channel> {
    ClientBootstrap(group: loop)
        .channelOption(.socketOption(.tcp_nodelay), value: 1)
        .channelInitializer { channel in
            channel.eventLoop.makeCompletedFuture {
                try channel.pipeline.syncOperations.addFrameCodec()
                try channel.pipeline.syncOperations.addHandler(handler.value)
            }
        }
        .connect(host: "127.0.0.1", port: port)
}

/// Connects the plan's clients to `server`, logs them in, runs the plan, and collects the results.
/// `whileRunning` runs once everyone is logged in, concurrently with the traffic.
///
/// The run is stopped (each client then fails with what it had acknowledged and received) when no
/// test client read anything for `stallSeconds` (``eventually(_:_:)``'s measure, which the load
/// clients' reads feed too): a stalled relay or a lost frame. It is not bounded in wall-clock time
/// as a whole: a machine slowed by a sanitizer or by other suites still makes progress, and a 300 s
/// bound on the whole run failed there by chance.
func runLoad(
    _ plan: LoadPlan,
    server: RelayServer,
    group: any EventLoopGroup,
    stallSeconds: Double = 60,
    whileRunning: @Sendable () async throws -> Void = {}
) async throws -> LoadRunResult {
    var channels: [(any Channel, NIOLoopBound<LoadClientHandler>, EventLoopFuture<LoadClientResult>)] = []
    var logins: [EventLoopFuture<Void>] = []
    for i in 0..<plan.clients {
        let loop = group.next()
        let token = try await TestAuth.token(plan.user(i))
        let (handler, finished, loggedIn) = try await loop.submit {
            let loggedIn = loop.makePromise(of: Void.self)
            let finished = loop.makePromise(of: LoadClientResult.self)
            let handler = LoadClientHandler(plan: plan, index: i, token: token, loggedIn: loggedIn, finished: finished)
            let bound = NIOLoopBound(handler, eventLoop: loop)
            let port = server.port
            handler.reconnect = {
                connectLoadClient(bound, loop: loop, port: port).whenFailure { error in
                    bound.value.finished.fail(error)
                }
            }
            return (bound, finished.futureResult, loggedIn.futureResult)
        }.get()
        let channel = try await connectLoadClient(handler, loop: loop, port: server.port).get()
        channels.append((channel, handler, finished))
        logins.append(loggedIn)
    }
    for login in logins { try await login.get() }

    let start = NIODeadline.now()
    for (channel, handler, _) in channels {
        channel.eventLoop.execute { handler.value.start() }
    }
    async let sideShow: Void = whileRunning()
    let finishedCount = NIOLockedValueBox(0)
    for (_, _, finished) in channels { finished.whenComplete { _ in finishedCount.withLockedValue { $0 += 1 } } }
    let stalled = !(await eventually(stallSeconds) { finishedCount.withLockedValue { $0 } == channels.count })
    if stalled {
        for (_, handler, _) in channels { handler.eventLoop.execute { handler.value.abort() } }
    }
    var results: [LoadClientResult] = []
    var failure: (any Error)?
    for (_, _, finished) in channels {
        do { results.append(try await finished.get()) } catch { failure = failure ?? error }
    }
    if stalled {
        let finished = finishedCount.withLockedValue { $0 }
        failure = LoadStalled(
            description: "no test client read anything for \(stallSeconds) s, with \(finished) of \(channels.count) "
                + "clients finished; stopped: \(failure.map { "\($0)" } ?? "no client failed")"
        )
    }
    let seconds = Double((NIODeadline.now() - start).nanoseconds) / 1e9
    try await sideShow
    for (_, handler, _) in channels {
        let current = try? await handler.eventLoop.submit { () -> (any Channel)? in
            handler.value.abort()
            return handler.value.channel
        }.get()
        if let current { try? await current.closeFuture.get() }
    }
    if let failure { throw failure }
    return LoadRunResult(
        clients: results,
        seconds: seconds,
        messages: plan.clients * plan.messages,
        deliveries: results.reduce(0) { $0 + $1.deliveries }
    )
}
#endif
