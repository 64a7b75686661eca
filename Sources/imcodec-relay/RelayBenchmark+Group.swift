#if Tools
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import ArgumentParser
import Foundation
import IMCodec
import IMCodecNIO
import NIOCore
import NIOPosix

extension RelayCommand {
    /// `imcodec-relay bench-group`: one message to a large group, and what every member's connection
    /// costs the relay.
    struct BenchGroup: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "bench-group",
            abstract: "Benchmark the relay's fan-out: messages to one large group, over loopback, in one run.",
            discussion: """
                Starts `imcodec-relay serve --store S --port 0 --data-dir <fresh temp dir> --groups FILE \
                --quiet` as a child process with one group of --members users (bench0 ... benchN-1), logs \
                every member in on a connection of its own, then has bench0 send --messages group texts, one \
                at a time: each is sent once the previous one reached every other member. For each message \
                it measures the time from the send until the first member and until the last member \
                (every member's device) had it, and it reports the relay's RSS per connection (VmRSS after \
                every login minus before the first connection, divided by the members: what an idle \
                logged-in connection costs), its peak RSS and its CPU time per delivered frame. Checks that \
                every member received every message exactly once, in seq order, and that every send was \
                acknowledged with error 0.

                With --store postgresql://... and --nodes N (2 or more), the relay is N relay nodes on a \
                database the run creates on that server and drops at the end: the first routes, the others \
                forward their clients to it, and the members connect to the forwarding nodes only (member i \
                to forwarding node i mod (N-1)). The RSS per connection is then the forwarding nodes' (what \
                a client costs the node it connects to), reported beside what each forwarded session costs \
                the routing node; the CPU time is every node's, and the routing node's on its own.

                With --kill-routing (and --nodes 2 or more), once every member is logged in the routing node is \
                killed with SIGKILL: a forwarding node takes over routing, and every member, dropped by its \
                node, connects again to the same node (after 50-100 ms, then twice as long at each attempt, up \
                to 1-2 s) and logs in. It reports the time from the kill until the members were logged \
                in again, and the connections that took; the messages are then sent through the new routing \
                node, with the same checks, and the CPU time is the surviving nodes'.

                Exit status: 0; 1 when a check failed or the run did not finish in --timeout seconds.
                """
        )

        @Option(help: "Members of the group, each logged in on its own connection.")
        var members = 1000

        @Option(help: "Group messages bench0 sends, one at a time.")
        var messages = 20

        @Option(
            help: """
                The store the relay runs on: memory, sqlite, or postgresql://USER[:PASSWORD]@HOST[:PORT]/DB (a \
                server: the run creates a database of its own there and drops it at the end; USER needs CREATEDB).
                """
        )
        var store = "sqlite"

        @Option(
            help: """
                Relay nodes (PostgreSQL only): the first routes, the others forward their clients to it; the \
                members connect to the forwarding nodes.
                """
        )
        var nodes = 1

        @Flag(
            help: """
                Kill the routing node (SIGKILL) once every member is logged in, and measure how long until every \
                member is logged in again through the node that takes over (needs --nodes 2 or more).
                """
        )
        var killRouting = false

        @Option(help: "The imcodec-relay executable to start as the server (default: this one).")
        var relay: String?

        @Option(help: "Seconds the run (start, logins, messages) may take before it counts as failed.")
        var timeout = 300

        func validate() throws {
            guard members >= 2 else { throw ValidationError("--members must be at least 2") }
            guard messages >= 1 else { throw ValidationError("--messages must be positive") }
            if store != "memory" && store != "sqlite" {
                do { _ = try PostgresURL(store) } catch {
                    throw ValidationError("--store is memory, sqlite or postgresql://...: \(error)")
                }
            }
            guard (1...16).contains(nodes) else { throw ValidationError("--nodes is 1 to 16") }
            guard nodes == 1 || store != "memory" && store != "sqlite" else {
                throw ValidationError("--nodes needs --store postgresql://...")
            }
            guard !killRouting || nodes >= 2 else { throw ValidationError("--kill-routing needs --nodes 2 or more") }
            guard timeout >= 1 else { throw ValidationError("--timeout must be positive") }
        }

        func run() throws {
            raiseOpenFileLimit()
            let executable = relay ?? Bench.thisExecutable()
            let postgres = try? PostgresURL(store)
            let storeLabel = BenchRun.label(store: postgres == nil ? store : "postgresql", nodes: nodes)
            emit(
                "relay bench-group: \(members) members, \(messages) group message(s) one at a time, store "
                    + "\(storeLabel)\(postgres.map { " on \($0.host):\($0.port)" } ?? ""); relay \(executable); "
                    + "\(ProcessInfo.processInfo.activeProcessorCount) cores" + Bench.loadAverage()
            )
            let group = MultiThreadedEventLoopGroup(numberOfThreads: System.coreCount)
            defer { try? group.syncShutdownGracefully() }
            do {
                let figures = try GroupBenchRun(
                    members: members,
                    messages: messages,
                    store: postgres == nil ? store : "postgresql",
                    postgres: postgres,
                    nodes: nodes,
                    killRouting: killRouting,
                    relay: executable,
                    timeoutSeconds: timeout,
                    group: group
                ).run()
                emit(figures.summary)
            } catch {
                emitError("relay bench-group: \(error)")
                throw ExitCode.failure
            }
        }
    }
}

/// The figures of one group run.
struct GroupBenchFigures {
    var members: Int
    var messages: Int
    /// The store, with the node count when there were several (`postgresql 2 nodes`).
    var store: String
    /// From the send until the first other member had the message, and until every other member had it.
    var firstP50Ms: Double
    var allP50Ms: Double
    var allP99Ms: Double
    var allMaxMs: Double
    var rssPerConnectionKiB: Double
    var idleRSSKiB: Double
    var loggedInRSSKiB: Double
    var peakRSSMiB: Double
    var loginSeconds: Double
    /// The relay's CPU time from the first connection until every member was logged in, per member
    /// (every node's: accepting the connection, checking the token, the session, the answer).
    var relayCPUMicrosecondsPerLogin: Double
    var relayCPUMicrosecondsPerDelivery: Double
    /// With several nodes: what the routing node took (the figures above are then the forwarding nodes').
    var routing: Routing?
    /// With `--kill-routing`: how long the members took to log in again once the routing node was killed.
    var failover: Failover?

    /// The members' return after the routing node's SIGKILL.
    struct Failover {
        var members: Int
        /// From the kill until a member was logged in again: the median and the last.
        var p50Seconds: Double
        var maxSeconds: Double
        /// Connections the members made after the kill (each refused or dropped one, plus the last).
        var connections: Int

        var summary: String {
            """
            failover: the routing node killed with SIGKILL; the members logged in again through the node that took \
            over after p50 \(fixed(p50Seconds, 2)) s, every one of the \(members) after \(fixed(maxSeconds, 2)) s, in \
            \(connections) connections (\(fixed(Double(connections) / Double(members), 2)) a member); the messages \
            above went through it
            """
        }
    }

    /// What the routing node took while the members were connected to the forwarding nodes.
    struct Routing {
        var idleRSSKiB: Double
        var loggedInRSSKiB: Double
        /// What each member's session, forwarded to it, costs the routing node.
        var rssPerSessionKiB: Double
        /// Its share of the CPU per delivered frame (none when it was killed before the messages).
        var cpuMicrosecondsPerDelivery: Double?

        var summary: String {
            """
            routing node, measured before any kill (the RSS above is the forwarding nodes', where the members \
            connect; the CPU above is every running node's): RSS \(fixed(idleRSSKiB / 1024, 1)) MiB before the first session, \
            \(fixed(loggedInRSSKiB / 1024, 1)) MiB with every member's: \(fixed(rssPerSessionKiB, 1)) KiB per \
            forwarded session\(cpuMicrosecondsPerDelivery.map { "; CPU \(fixed($0, 2)) us per delivered frame" } ?? "")
            """
        }
    }

    var summary: String {
        """
        \(members) members, \(messages) message(s), store \(store): every member had a message after \
        p50 \(fixed(allP50Ms, 2)) ms, p99 \(fixed(allP99Ms, 2)) ms, max \(fixed(allMaxMs, 2)) ms (the first \
        member after p50 \(fixed(firstP50Ms, 2)) ms); relay CPU \(fixed(relayCPUMicrosecondsPerDelivery, 2)) us \
        per delivered frame
        logins: \(members) in \(fixed(loginSeconds, 2)) s, relay CPU \(fixed(relayCPUMicrosecondsPerLogin, 1)) us a \
        login; relay RSS \(fixed(idleRSSKiB / 1024, 1)) MiB before \
        the first connection, \(fixed(loggedInRSSKiB / 1024, 1)) MiB with every member logged in: \
        \(fixed(rssPerConnectionKiB, 1)) KiB per idle connection; peak \(fixed(peakRSSMiB, 1)) MiB
        """
            + (routing.map { "\n" + $0.summary } ?? "") + (failover.map { "\n" + $0.summary } ?? "")
    }
}

/// One group run: a relay child process with one group, every member's connection, the messages.
struct GroupBenchRun {
    let members: Int
    let messages: Int
    /// `memory`, `sqlite` or `postgresql` (a database of the run's own on ``postgres``'s server).
    let store: String
    let postgres: PostgresURL?
    /// Relay processes: 1, or (PostgreSQL only) that many relay nodes, the members on the forwarding ones.
    let nodes: Int
    /// Whether the routing node is killed once the members are logged in (see ``GroupBenchFigures/Failover``).
    let killRouting: Bool
    let relay: String
    let timeoutSeconds: Int
    let group: MultiThreadedEventLoopGroup

    static let groupID = "bench"
    static func user(_ i: Int) -> String { "bench\(i)" }

    func run() throws -> GroupBenchFigures {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let groupsFile = directory + "/groups.txt"
        let memberList = (0..<members).map(Self.user).joined(separator: " ")
        try Data("\(Self.groupID): \(memberList)\n".utf8).write(to: URL(fileURLWithPath: groupsFile))
        let relays = try BenchRelays(
            store: store,
            postgres: postgres,
            nodes: nodes,
            directory: directory,
            arguments: ["--groups", groupsFile],
            relay: relay,
            timeoutSeconds: timeoutSeconds
        )
        defer { relays.stop() }
        // The processes the members connect to: the forwarding nodes when there are several.
        let edges = nodes > 1 ? relays.forwarding : relays.children[...]
        let routing = relays.children.prefix(1)
        let deadline = NIODeadline.now() + .seconds(Int64(timeoutSeconds))
        let idleRSS = try relays.memory(of: edges).rssKiB
        let idleRoutingRSS = try relays.memory(of: routing).rssKiB
        let secret = try RelayAuthenticator.readSecret(RelayFiles(dataDirectory: directory).secretPath)
        let count = members
        let tokens = try runAsync {
            let authenticator = try await RelayAuthenticator(secret: secret)
            var tokens: [String] = []
            for i in 0..<count { tokens.append(try await authenticator.mint(user: Self.user(i), ttl: 86_400)) }
            return tokens
        }

        let loginStart = NIODeadline.now()
        let loginCPUBefore = try relays.cpuTime()
        let messages = self.messages
        let (clients, channels) = try connectBenchClients(
            count: members,
            group: group,
            ports: edges.map(\.port),
            until: deadline,
            name: Self.user
        ) { i, loop in
            GroupBenchClient(
                index: i,
                token: tokens[i],
                messages: messages,
                port: edges[edges.startIndex + i % edges.count].port,
                eventLoop: loop
            )
        }
        defer {
            // (After a failover, each client's channel is one it connected itself.)
            let current = clients.map { client in
                try? bounded(client.eventLoop.submit { client.value.stop() }, until: .now() + .seconds(5), "stopping")
            }
            let all = channels + current.compactMap { $0 ?? nil }
            for channel in all { channel.close(promise: nil) }
            for channel in all { _ = try? bounded(channel.closeFuture, until: .now() + .seconds(5), "closing") }
        }
        let logins = try clients.map { client in
            try client.eventLoop.submit { client.value.loggedIn.futureResult }.wait()
        }
        try bounded(EventLoopFuture.andAllSucceed(logins, on: group.next()), until: deadline, "logging in")
        let loginSeconds = Double((NIODeadline.now() - loginStart).nanoseconds) / 1e9
        let loginCPU = try relays.cpuTime() - loginCPUBefore
        let loggedInRSS = try relays.memory(of: edges).rssKiB
        let loggedInRoutingRSS = try relays.memory(of: routing).rssKiB
        let failover = killRouting ? try failOver(clients, relays: relays, until: deadline) : nil
        // The processes that run from here to the end.
        let running = killRouting ? edges : relays.children[...]

        // One message at a time: sent once the previous one reached every other member.
        let relayCPUBefore = try relays.cpuTime(of: running)
        let routingCPUBefore = killRouting ? 0 : try relays.cpuTime(of: routing)
        let sender = clients[0]
        var (first, all) = try fanOut(from: sender, to: clients.dropFirst(), until: deadline)
        try bounded(sender.eventLoop.submit { sender.value.allAcked.futureResult }.wait(), until: deadline, "acks")
        let relayCPU = try relays.cpuTime(of: running) - relayCPUBefore
        let routingCPU = killRouting ? nil : try relays.cpuTime(of: routing) - routingCPUBefore
        // A duplicate would arrive right after the last expected frame: give it a moment.
        usleep(200_000)
        let problems = try clients.flatMap { client in
            try bounded(client.eventLoop.submit { client.value.problems }, until: deadline, "collecting problems")
        }
        guard problems.isEmpty else {
            throw BenchFailure(
                description: "\(problems.count) check(s) failed: " + problems.prefix(10).joined(separator: "; ")
            )
        }
        guard running.allSatisfy(\.isRunning) else {
            throw BenchFailure(description: "a relay process exited during the run")
        }
        first.sort()
        all.sort()
        let deliveries = Double(messages * (members - 1))
        return GroupBenchFigures(
            members: members,
            messages: messages,
            store: BenchRun.label(store: store, nodes: nodes),
            firstP50Ms: percentileMs(first, 0.50),
            allP50Ms: percentileMs(all, 0.50),
            allP99Ms: percentileMs(all, 0.99),
            allMaxMs: percentileMs(all, 1),
            rssPerConnectionKiB: Double(loggedInRSS - idleRSS) / Double(members),
            idleRSSKiB: Double(idleRSS),
            loggedInRSSKiB: Double(loggedInRSS),
            peakRSSMiB: Double(try relays.memory(of: edges).peakKiB) / 1024,
            loginSeconds: loginSeconds,
            relayCPUMicrosecondsPerLogin: loginCPU * 1e6 / Double(members),
            relayCPUMicrosecondsPerDelivery: relayCPU * 1e6 / deliveries,
            routing: nodes == 1
                ? nil
                : GroupBenchFigures.Routing(
                    idleRSSKiB: Double(idleRoutingRSS),
                    loggedInRSSKiB: Double(loggedInRoutingRSS),
                    rssPerSessionKiB: Double(loggedInRoutingRSS - idleRoutingRSS) / Double(members),
                    cpuMicrosecondsPerDelivery: routingCPU.map { $0 * 1e6 / deliveries }
                ),
            failover: failover
        )
    }

    /// Kills the routing node with SIGKILL and waits until every member is logged in again through
    /// the node that takes over (each connects again to its own node, see ``GroupBenchClient``).
    private func failOver(
        _ clients: [NIOLoopBound<GroupBenchClient>],
        relays: BenchRelays,
        until deadline: NIODeadline
    ) throws -> GroupBenchFigures.Failover {
        let returns = try clients.map { client in
            try client.eventLoop.submit { client.value.expectFailover() }.wait()
        }
        let killedAt = NIODeadline.now().uptimeNanoseconds
        relays.routing.killNow()
        let times = try bounded(
            EventLoopFuture.whenAllSucceed(returns, on: group.next()),
            until: deadline,
            "every member logging in again after the routing node's kill"
        ).map { $0 &- killedAt }.sorted()
        let connections = try clients.reduce(0) { sum, client in
            sum + (try bounded(client.eventLoop.submit { client.value.reconnections }, until: deadline, "counting"))
        }
        return GroupBenchFigures.Failover(
            members: clients.count,
            p50Seconds: percentileMs(times, 0.50) / 1000,
            maxSeconds: percentileMs(times, 1) / 1000,
            connections: connections
        )
    }

    /// Sends the messages from `sender`, each once the previous one reached every receiver: for each,
    /// the time until the first and until the last receiver had it (nanoseconds).
    private func fanOut(
        from sender: NIOLoopBound<GroupBenchClient>,
        to receivers: ArraySlice<NIOLoopBound<GroupBenchClient>>,
        until deadline: NIODeadline
    ) throws -> (first: [UInt64], all: [UInt64]) {
        var first: [UInt64] = []
        var all: [UInt64] = []
        for k in 0..<messages {
            let arrivals = try receivers.map { client in
                try client.eventLoop.submit { client.value.arrival(k) }.wait()
            }
            let sentAt = try bounded(
                sender.eventLoop.submit { sender.value.send(k) },
                until: deadline,
                "sending message \(k)"
            )
            let times = try bounded(
                EventLoopFuture.whenAllSucceed(arrivals, on: group.next()),
                until: deadline,
                "message \(k) reaching every member"
            )
            first.append((times.min() ?? sentAt) &- sentAt)
            all.append((times.max() ?? sentAt) &- sentAt)
        }
        return (first, all)
    }
}

/// One member of the group benchmark: logs in; member 0 sends the group texts (``send(_:)``); every
/// other member reports when each arrives (``arrival(_:)``) and checks that each arrives once, from
/// bench0, in seq order. Once told to expect a failover (``expectFailover()``), a close is no failure:
/// it connects again to its node, with a backoff, until it is logged in again.
final class GroupBenchClient: BenchConnection {
    typealias InboundIn = Frame
    typealias OutboundOut = Frame

    let index: Int
    let token: String
    let messages: Int
    /// Its relay node's port, to connect to again after a failover.
    let port: Int
    /// Succeeds once the login is accepted.
    let loggedIn: EventLoopPromise<Void>
    /// Member 0: succeeds once every message it sent is acknowledged with error 0.
    let allAcked: EventLoopPromise<Void>
    private let eventLoop: any EventLoop
    var context: ChannelHandlerContext?
    /// The uptime in nanoseconds at which each message arrived, once it did.
    private var arrivals: [EventLoopPromise<UInt64>?]
    private var received: [Bool]
    private var acked = 0
    private var lastSeq: UInt64 = 0
    private(set) var problems: [String] = []
    /// From ``expectFailover()`` until the next login is accepted: succeeds with that login's uptime
    /// (nanoseconds). While it is set, a close is the failover's, and the client connects again.
    private var failover: EventLoopPromise<UInt64>?
    /// Connections made after the first (each attempt after a failover).
    private(set) var reconnections = 0
    /// The wait before the next connection attempt after a failover, in milliseconds.
    private var backoffMs: Int64 = 50
    /// Set by ``stop()``: the run is over, so a close is neither a failure nor a reason to connect again.
    private var stopped = false
    /// The first failure: a promise asked for after it fails at once (the run reports it, not a timeout).
    private var failed: BenchFailure?

    init(index: Int, token: String, messages: Int, port: Int, eventLoop: any EventLoop) {
        self.index = index
        self.token = token
        self.messages = messages
        self.port = port
        self.eventLoop = eventLoop
        self.loggedIn = eventLoop.makePromise()
        self.allAcked = eventLoop.makePromise()
        arrivals = Array(repeating: nil, count: messages)
        received = Array(repeating: false, count: messages)
    }

    var me: String { GroupBenchRun.user(index) }

    /// The time message `k` arrives (on the channel's event loop).
    func arrival(_ k: Int) -> EventLoopFuture<UInt64> {
        if let failed { return eventLoop.makeFailedFuture(failed) }
        let promise = eventLoop.makePromise(of: UInt64.self)
        arrivals[k] = promise
        return promise.futureResult
    }

    /// Sends group text `k` and returns its send time (member 0, on the channel's event loop).
    func send(_ k: Int) -> UInt64 {
        let message = Message.groupText(
            from: me,
            group: GroupBenchRun.groupID,
            "group message \(k): the quick brown fox jumps over the lazy dog, twice on Sundays.",
            clientMsgID: "\(me)-\(k)"
        )
        let now = NIODeadline.now().uptimeNanoseconds
        context?.writeAndFlush(wrapOutboundOut(Frame(message)), promise: nil)
        return now
    }

    func fail(_ reason: String) {
        let failure = BenchFailure(description: "\(me): \(reason)")
        if failed == nil { failed = failure }
        loggedIn.fail(failure)
        allAcked.fail(failure)
        failover?.fail(failure)
        for promise in arrivals { promise?.fail(failure) }
    }

    /// From now on a close is the routing node's loss: the client connects again and logs in. The
    /// future gives the uptime (nanoseconds) at which that login is accepted.
    func expectFailover() -> EventLoopFuture<UInt64> {
        if let failed { return eventLoop.makeFailedFuture(failed) }
        let promise = eventLoop.makePromise(of: UInt64.self)
        failover = promise
        return promise.futureResult
    }

    /// Ends the run for this client: returns its channel, for the run to close (the promises still
    /// pending fail when the handler leaves it, or now when it has no channel).
    func stop() -> (any Channel)? {
        stopped = true
        if context == nil { fail("the run ended") }
        return context?.channel
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        // A connection made again that completes after the run ended (the run closes only the
        // channels it knows of).
        if stopped { context.close(promise: nil) }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        // (Only the current connection's pipeline counts: after a failover the handler is in the next one's.)
        guard self.context === context else { return }
        self.context = nil
        if failover == nil || stopped { fail("the handler was removed") }
    }

    func channelInactive(context: ChannelHandlerContext) {
        defer { context.fireChannelInactive() }
        guard self.context === context, !stopped else { return }
        if failover != nil {
            connectAgain()
        } else {
            fail("the connection closed")
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // A connection reset by a node that dropped its clients is part of a failover.
        if failover == nil, !stopped { fail("\(error)") }
        context.close(promise: nil)
    }

    /// Connects to its node again after the backoff (50-100 ms, then twice as long at each attempt:
    /// a base doubling up to 1 s, plus up to as much again at random, so that the members do not all
    /// come back at once); a connection that
    /// fails is tried again the same way. The handler goes into the new channel's pipeline.
    private func connectAgain() {
        let wait = backoffMs + Int64.random(in: 0...backoffMs)
        backoffMs = min(backoffMs * 2, 1000)
        let me = NIOLoopBound(self, eventLoop: eventLoop)
        let port = port
        eventLoop.scheduleTask(in: .milliseconds(wait)) {
            let client = me.value
            guard !client.stopped else { return }
            client.reconnections += 1
            connectBenchClient(me, port: port).whenFailure { _ in me.value.connectAgain() }
        }
    }

    private func problem(_ text: String) {
        if problems.count < 5 { problems.append("\(me): \(text)") }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        let now = NIODeadline.now().uptimeNanoseconds
        switch frame.payload {
        case .loginResult(let login)?:
            guard login.errorCode == 0 else {
                return fail("login refused: \(login.errorCode) \(login.errorDescription)")
            }
            if let failover {
                // Back: from here a close fails the run again.
                self.failover = nil
                backoffMs = 50
                failover.succeed(now)
            } else {
                loggedIn.succeed()
            }
        case .sendAck(let ack)?:
            guard ack.errorCode == 0 else {
                return fail("a message was refused: \(ack.errorCode) \(ack.errorDescription)")
            }
            acked += 1
            if acked == messages { allAcked.succeed() }
        case .message(let message)?:
            let prefix = GroupBenchRun.user(0) + "-"
            guard message.senderID == GroupBenchRun.user(0), message.clientMsgID.hasPrefix(prefix),
                let k = Int(message.clientMsgID.dropFirst(prefix.count)), k < messages
            else {
                return problem("an unexpected message \(message.clientMsgID) from \(message.senderID)")
            }
            guard !received[k] else { return problem("message \(k) received twice") }
            received[k] = true
            if message.seq <= lastSeq { problem("seq \(message.seq) after \(lastSeq)") }
            lastSeq = message.seq
            arrivals[k]?.succeed(now)
        default:
            break
        }
    }
}
#endif
