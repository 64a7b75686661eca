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
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import PostgresNIO

extension RelayCommand {
    /// `imcodec-relay bench`: the durable store against the in-memory store, in one run.
    ///
    /// For each round and each store (memory, then sqlite, so both see the same machine state), a
    /// relay runs as a child process on a fresh data directory; N users log in over loopback TCP and
    /// each sends M one-to-one texts to the next user (a ring), W unacknowledged at a time, each
    /// carrying its send time. The figures are the median over the rounds; the ratio line compares
    /// the two stores' throughput, which the issue's target says must be at least 0.80.
    struct Bench: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Benchmark the relay: the sqlite store against the memory store, over loopback, in one run.",
            discussion: """
                For each round and each store (memory, then sqlite, then postgresql with --store), starts \
                `imcodec-relay serve --store S \
                --port 0 --data-dir <fresh temp dir> --quiet` as a child process, logs in --users users \
                (tokens minted from the temp dir's secret), and has each send --messages one-to-one texts \
                to the next user (user i to user i+1, a ring), --window unacknowledged at a time. Measures \
                throughput (acknowledged messages per second over the send phase), delivery latency (the \
                receiver's receive time minus the send time carried in cloud_custom_data), ack latency, the \
                relay's RSS per connection (VmRSS after every login minus before the first connection, \
                divided by the users) and its peak RSS (VmHWM). Checks that every message is acknowledged \
                with error 0 and delivered exactly once, with increasing seqs and stream positions.

                With --store and --nodes 1,2,3, the PostgreSQL store also runs with 2 and 3 relay nodes \
                (`serve --node-port 0` on the run's database, sharing its data directory's auth secret): \
                the first routes, the others forward their clients to it, user i connects to node i mod N, \
                and the relay's CPU and memory figures are the sums over every node's process.

                With --restart, each run on a durable store (sqlite, postgresql with one node) ends with a \
                restart after a crash: the relay is killed with SIGKILL once every check has passed, started \
                again on the same store, and measured: the seconds from its start to its listening line (it \
                loads the store first, as a standby taking over does) and its RSS then. The store then holds \
                users x messages messages (at most 10,000 per conversation, serve's default \
                --max-stored-messages) and twice as many stream entries (at most 10,000 per user).

                Exit status: 0; 1 when a check failed or a run did not finish in --timeout seconds.
                """
        )

        @Option(help: "Users, each on its own connection.")
        var users = 100

        @Option(help: "One-to-one messages each user sends (to the next user).")
        var messages = 100

        @Option(help: "Unacknowledged messages each user keeps in flight.")
        var window = 8

        @Option(help: "Rounds; each runs the memory store, the sqlite store (and PostgreSQL). The table shows medians.")
        var rounds = 2

        @Option(help: "The imcodec-relay executable to start as the server (default: this one).")
        var relay: String?

        @Option(help: "Also write the figures to this file, as JSON.")
        var json: String?

        @Option(help: "Seconds each run (start, logins, send phase) may take before it counts as failed.")
        var timeout = 300

        @Option(help: "SQLite's synchronous setting for the sqlite store (passed to serve).")
        var synchronous = "FULL"

        @Option(
            help: """
                Also run each round on a PostgreSQL store on this server, postgresql://USER[:PASSWORD]@HOST[:PORT]/DB: \
                each run creates a database of its own there and drops it at the end (USER needs CREATEDB).
                """
        )
        var store: String?

        @Option(
            help: """
                With --store: the numbers of relay nodes the PostgreSQL store runs with, e.g. 1,2,3 (each a \
                run of its own per round; user i connects to node i mod N).
                """
        )
        var nodes = "1"

        @Flag(
            help: """
                After each run on a durable store, kill the relay with SIGKILL, start it again on the same \
                store and measure how long it takes to load the store and listen, and its RSS then.
                """
        )
        var restart = false

        /// `--nodes` parsed (validate() checked it).
        private var nodeCounts: [Int] { nodes.split(separator: ",").compactMap { Int($0) } }

        /// `--store` parsed (validate() checked it).
        private var postgres: PostgresURL? { store.flatMap { try? PostgresURL($0) } }

        func validate() throws {
            guard users >= 2 else { throw ValidationError("--users must be at least 2 (each sends to the next)") }
            guard messages >= 1 else { throw ValidationError("--messages must be positive") }
            guard window >= 1 else { throw ValidationError("--window must be positive") }
            guard rounds >= 1 else { throw ValidationError("--rounds must be positive") }
            guard timeout >= 1 else { throw ValidationError("--timeout must be positive") }
            guard synchronous == "FULL" || synchronous == "NORMAL" else {
                throw ValidationError("--synchronous is FULL or NORMAL")
            }
            if let store {
                do { _ = try PostgresURL(store) } catch { throw ValidationError("--store: \(error)") }
            }
            let counts = nodes.split(separator: ",", omittingEmptySubsequences: false).map { Int($0) }
            guard !counts.isEmpty, counts.allSatisfy({ ($0 ?? 0) >= 1 && ($0 ?? 0) <= 16 }),
                Set(counts).count == counts.count
            else {
                throw ValidationError("--nodes is a list of distinct node counts from 1 to 16, e.g. 1,2,3")
            }
            guard store != nil || counts == [1] else { throw ValidationError("--nodes needs --store postgresql://...") }
        }

        // Long on purpose (over 80 lines): the rounds, then the table, the ratios and the JSON report.
        func run() throws {
            raiseOpenFileLimit()
            let executable = relay ?? Self.thisExecutable()
            let plan = BenchPlan(users: users, messages: messages, window: window)
            let stores = ["memory", "sqlite"] + (postgres == nil ? [] : ["postgresql"])
            // Each store once, the PostgreSQL store once per node count.
            let runners = stores.flatMap { store in (store == "postgresql" ? nodeCounts : [1]).map { (store, $0) } }
            let labels = runners.map { BenchRun.label(store: $0.0, nodes: $0.1) }
            emit(
                "relay bench: \(users) users x \(messages) one-to-one messages (ring), window \(window), "
                    + "\(rounds) round(s), stores \(labels.joined(separator: ", ")) (sqlite synchronous "
                    + "\(synchronous)\(postgres.map { "; postgresql on \($0.host):\($0.port)" } ?? "")); relay "
                    + "\(executable); \(ProcessInfo.processInfo.activeProcessorCount) cores" + Self.loadAverage()
            )
            let group = MultiThreadedEventLoopGroup(numberOfThreads: System.coreCount)
            defer { try? group.syncShutdownGracefully() }
            var runs: [String: [BenchFigures]] = [:]
            var failed = false
            let width = labels.map(\.count).max() ?? 0
            for round in 1...rounds {
                for (store, nodes) in runners {
                    let label = BenchRun.label(store: store, nodes: nodes)
                    do {
                        let figures = try BenchRun(
                            plan: plan,
                            store: store,
                            synchronous: synchronous,
                            postgres: postgres,
                            relay: executable,
                            timeoutSeconds: timeout,
                            group: group,
                            nodes: nodes,
                            restart: restart && store != "memory" && nodes == 1
                        ).run()
                        runs[label, default: []].append(figures)
                        emit("round \(round) \(label.padding(width)): " + figures.line)
                    } catch {
                        emitError("relay bench: round \(round), \(label): \(error)")
                        failed = true
                    }
                    if failed { break }
                }
                if failed { break }
            }
            guard !failed else { throw ExitCode.failure }
            let medians = labels.map { BenchFigures.median(store: $0, runs[$0] ?? []) }
            emit("")
            emit(BenchFigures.table(medians))
            let ratio = medians[1].messagesPerSecond / medians[0].messagesPerSecond
            let perRound = zip(runs["sqlite"] ?? [], runs["memory"] ?? []).map {
                fixed($0.messagesPerSecond / $1.messagesPerSecond, 2)
            }
            emit("")
            emit(
                "sqlite/memory throughput: \(fixed(ratio, 2)) (target >= 0.80); per round: \(perRound.joined(separator: ", "))"
            )
            let postgresRatio = medians.count > 2 ? medians[2].messagesPerSecond / medians[0].messagesPerSecond : nil
            if let postgresRatio {
                let first = labels[2]
                let perRound = zip(runs[first] ?? [], runs["memory"] ?? []).map {
                    fixed($0.messagesPerSecond / $1.messagesPerSecond, 2)
                }
                emit(
                    "\(first)/memory throughput: \(fixed(postgresRatio, 2)); \(first)/sqlite: "
                        + "\(fixed(medians[2].messagesPerSecond / medians[1].messagesPerSecond, 2)); per round "
                        + "(\(first)/memory): \(perRound.joined(separator: ", ")); its CPU per message is the "
                        + "relay's, not the PostgreSQL server's"
                )
                for more in medians.dropFirst(3) {
                    emit(
                        "\(more.store)/\(first) throughput: "
                            + "\(fixed(more.messagesPerSecond / medians[2].messagesPerSecond, 2)); CPU per message "
                            + "(every node): \(fixed(more.relayCPUMicrosecondsPerMessage, 1)) us against "
                            + "\(fixed(medians[2].relayCPUMicrosecondsPerMessage, 1)) us"
                    )
                }
            }
            if let json {
                let report = BenchReport(
                    users: users,
                    messages: messages,
                    window: window,
                    rounds: rounds,
                    synchronous: synchronous,
                    nodeCounts: postgres == nil ? [] : nodeCounts,
                    median: medians,
                    runs: labels.flatMap { runs[$0] ?? [] },
                    sqliteOverMemoryThroughput: ratio,
                    postgresqlOverMemoryThroughput: postgresRatio,
                    target: 0.80
                )
                do {
                    let encoder = JSONEncoder()
                    encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
                    try encoder.encode(report).write(to: URL(fileURLWithPath: json))
                } catch {
                    emitError("relay bench: cannot write \(json): \(error)")
                    throw ExitCode.failure
                }
            }
        }

        /// This executable's path (`/proc/self/exe`, else `argv[0]`).
        static func thisExecutable() -> String {
            var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
            let n = readlink("/proc/self/exe", &buffer, buffer.count - 1)
            if n > 0 { return String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self) }
            return CommandLine.arguments[0]
        }

        /// "; load average L" from /proc/loadavg, or nothing.
        static func loadAverage() -> String {
            guard let text = try? readTextFile("/proc/loadavg"), let first = text.split(separator: " ").first else {
                return ""
            }
            return "; load average \(first) before the run"
        }
    }
}

/// What every run of a benchmark does: N users in a ring, M messages each, W in flight.
struct BenchPlan: Sendable {
    var users: Int
    var messages: Int
    var window: Int

    func user(_ i: Int) -> String { "bench\(i)" }
    func peer(of i: Int) -> Int { (i + 1) % users }
    func predecessor(of i: Int) -> Int { (i + users - 1) % users }
    func clientMsgID(_ i: Int, _ k: Int) -> String { "bench\(i)-\(k)" }

    /// The text of message `k` of user `i`: about 90 bytes (a short chat line), the same on both stores.
    func text(_ i: Int, _ k: Int) -> String {
        "message \(k) from \(user(i)): the quick brown fox jumps over the lazy dog, twice on Sundays."
    }
}

/// The figures of one run (or the medians of several). With several relay nodes, the relay's
/// memory and CPU figures are the sums over every node's process.
struct BenchFigures: Codable, Sendable {
    /// The store, with the node count when there were several (`postgresql 2 nodes`).
    var store: String
    var messagesPerSecond: Double
    var seconds: Double
    var deliveryP50Ms: Double
    var deliveryP99Ms: Double
    var ackP50Ms: Double
    var ackP99Ms: Double
    var rssPerConnectionKiB: Double
    var peakRSSMiB: Double
    /// The relay's RSS before the first connection and once every user was logged in, in KiB.
    var idleRSSKiB: Double
    var loggedInRSSKiB: Double
    /// CPU time (user + system) per message during the send phase, in microseconds: the relay's, and
    /// the benchmark clients' (this process). The machine's cores are shared by both.
    var relayCPUMicrosecondsPerMessage: Double
    var clientCPUMicrosecondsPerMessage: Double
    /// With `--restart`: the seconds from the relay's start after a SIGKILL to its listening line
    /// (loading the store), and its RSS then, in MiB.
    var restartSeconds: Double? = nil
    var restartRSSMiB: Double? = nil

    var line: String {
        "\(fixed(messagesPerSecond, 0)) msgs/s (\(fixed(seconds, 2)) s); delivery p50 \(fixed(deliveryP50Ms, 2)) ms, "
            + "p99 \(fixed(deliveryP99Ms, 2)) ms; ack p50 \(fixed(ackP50Ms, 2)) ms, p99 \(fixed(ackP99Ms, 2)) ms; "
            + "RSS \(fixed(idleRSSKiB / 1024, 1)) MiB idle, \(fixed(loggedInRSSKiB / 1024, 1)) MiB logged in "
            + "(\(fixed(rssPerConnectionKiB, 1)) KiB/conn), peak \(fixed(peakRSSMiB, 1)) MiB; CPU per message "
            + "\(fixed(relayCPUMicrosecondsPerMessage, 1)) us relay, \(fixed(clientCPUMicrosecondsPerMessage, 1)) us clients"
            + (restartSeconds.map { seconds in
                "; restart after SIGKILL: listening after \(fixed(seconds, 2)) s, RSS "
                    + "\(fixed(restartRSSMiB ?? 0, 1)) MiB"
            } ?? "")
    }

    /// Each figure's median over `runs`.
    static func median(store: String, _ runs: [BenchFigures]) -> BenchFigures {
        func m(_ value: KeyPath<BenchFigures, Double>) -> Double { median(runs.map { $0[keyPath: value] }) ?? 0 }
        func m(_ value: KeyPath<BenchFigures, Double?>) -> Double? { median(runs.compactMap { $0[keyPath: value] }) }
        return BenchFigures(
            store: store,
            messagesPerSecond: m(\.messagesPerSecond),
            seconds: m(\.seconds),
            deliveryP50Ms: m(\.deliveryP50Ms),
            deliveryP99Ms: m(\.deliveryP99Ms),
            ackP50Ms: m(\.ackP50Ms),
            ackP99Ms: m(\.ackP99Ms),
            rssPerConnectionKiB: m(\.rssPerConnectionKiB),
            peakRSSMiB: m(\.peakRSSMiB),
            idleRSSKiB: m(\.idleRSSKiB),
            loggedInRSSKiB: m(\.loggedInRSSKiB),
            relayCPUMicrosecondsPerMessage: m(\.relayCPUMicrosecondsPerMessage),
            clientCPUMicrosecondsPerMessage: m(\.clientCPUMicrosecondsPerMessage),
            restartSeconds: m(\.restartSeconds),
            restartRSSMiB: m(\.restartRSSMiB)
        )
    }

    /// The median of `values`, `nil` when there are none.
    private static func median(_ values: [Double]) -> Double? {
        let sorted = values.sorted()
        guard !sorted.isEmpty else { return nil }
        let mid = sorted.count / 2
        return sorted.count % 2 == 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
    }

    /// The table of medians, one row per store.
    static func table(_ rows: [BenchFigures]) -> String {
        let plain = [
            "store", "msgs/s", "delivery p50 ms", "p99 ms", "ack p50", "p99", "RSS/conn KiB", "peak RSS MiB",
            "relay CPU us/msg",
        ]
        // The restart columns only when a run restarted (--restart).
        let restarts = rows.contains { $0.restartSeconds != nil }
        let header = plain + (restarts ? ["restart s", "RSS after restart MiB"] : [])
        let cells = rows.map {
            [
                $0.store, fixed($0.messagesPerSecond, 0), fixed($0.deliveryP50Ms, 2), fixed($0.deliveryP99Ms, 2),
                fixed($0.ackP50Ms, 2), fixed($0.ackP99Ms, 2), fixed($0.rssPerConnectionKiB, 1),
                fixed($0.peakRSSMiB, 1), fixed($0.relayCPUMicrosecondsPerMessage, 1),
            ]
                + (restarts
                    ? [$0.restartSeconds.map { fixed($0, 2) } ?? "-", $0.restartRSSMiB.map { fixed($0, 1) } ?? "-"]
                    : [])
        }
        let widths = header.indices.map { column in
            ([header[column]] + cells.map { $0[column] }).map(\.count).max() ?? 0
        }
        func row(_ values: [String]) -> String {
            "| "
                + values.enumerated().map { column, value in
                    column == 0 ? value.padding(widths[column]) : value.leftPadding(widths[column])
                }.joined(separator: " | ") + " |"
        }
        let rule =
            "| "
            + widths.enumerated().map { column, width in
                column == 0 ? String(repeating: "-", count: width) : String(repeating: "-", count: width - 1) + ":"
            }.joined(separator: " | ") + " |"
        return ([row(header), rule] + cells.map(row)).joined(separator: "\n")
    }
}

/// What `--json` writes.
struct BenchReport: Codable {
    var users: Int
    var messages: Int
    var window: Int
    var rounds: Int
    var synchronous: String
    /// The node counts the PostgreSQL store ran with (`--nodes`); empty without `--store`.
    var nodeCounts: [Int]
    /// One entry per store (and node count): each figure's median over the rounds.
    var median: [BenchFigures]
    /// Every run, in store order then round order.
    var runs: [BenchFigures]
    var sqliteOverMemoryThroughput: Double
    /// With `--store postgresql://...`.
    var postgresqlOverMemoryThroughput: Double?
    var target: Double
}

/// A benchmark run failed: a check, a timeout, or the relay.
struct BenchFailure: Error, CustomStringConvertible {
    let description: String
}

/// A PostgreSQL database made for one benchmark run on the `--store` server, dropped by ``drop()``.
struct BenchDatabase {
    let server: PostgresURL
    let url: PostgresURL

    /// Creates `imcodec_bench_PID_RANDOM` (a name of [a-z0-9_]: a database's name is an identifier,
    /// which PostgreSQL does not take as a bound parameter).
    init(server: PostgresURL) throws {
        self.server = server
        var url = server
        url.database = "imcodec_bench_\(getpid())_\(UInt32.random(in: 0...UInt32.max))"
        self.url = url
        try Self.run("CREATE DATABASE \(url.database)", on: server)
    }

    /// Drops the database (the relay has stopped by then).
    func drop() {
        do {
            try Self.run("DROP DATABASE IF EXISTS \(url.database) WITH (FORCE)", on: server)
        } catch {
            emitError("relay bench: cannot drop the database \(url.database): \(error)")
        }
    }

    private static func run(_ sql: String, on server: PostgresURL) throws {
        let logger = Logger(label: "imcodec-relay.bench", factory: { _ in SwiftLogNoOpLogHandler() })
        do {
            let connection = try PostgresConnection.connect(
                on: MultiThreadedEventLoopGroup.singleton.any(),
                configuration: try PostgresRelayStore.connectionConfiguration(for: server),
                id: 0,
                logger: logger
            ).wait()
            defer { try? connection.close().wait() }
            _ = try connection.query(PostgresQuery(unsafeSQL: sql), logger: logger).wait()
        } catch {
            throw BenchFailure(description: "PostgreSQL at \(server): \(PostgresRelayStore.describe(error))")
        }
    }
}

/// One run: a relay child process on one store (or several relay nodes on one PostgreSQL
/// database), the users' connections, the send phase, the checks.
struct BenchRun {
    let plan: BenchPlan
    /// `memory`, `sqlite` or `postgresql` (a database of the run's own on ``postgres``'s server).
    let store: String
    let synchronous: String
    let postgres: PostgresURL?
    let relay: String
    let timeoutSeconds: Int
    let group: MultiThreadedEventLoopGroup
    /// Relay processes: 1, or (PostgreSQL only) that many relay nodes (`serve --node-port 0`) on the
    /// run's database, the first routing and the others forwarding their clients to it; user `i`
    /// connects to node `i % nodes`, so most messages cross from one node to another.
    var nodes = 1
    /// Whether the run ends with a restart after a SIGKILL (the relay is started again on the same
    /// store), measured: `--restart`, on a durable store with one node.
    var restart = false

    /// The store, and the node count when there are several nodes (`postgresql 3 nodes`).
    var label: String { Self.label(store: store, nodes: nodes) }

    static func label(store: String, nodes: Int) -> String { nodes == 1 ? store : "\(store) \(nodes) nodes" }

    // Long on purpose (over 80 lines): the phases of one run (start, logins, send phase, checks,
    // figures), in the order they happen.
    func run() throws -> BenchFigures {
        let directory = try makeTemporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var relays = try BenchRelays(
            store: store,
            postgres: postgres,
            nodes: nodes,
            directory: directory,
            arguments: store == "sqlite" ? ["--synchronous", synchronous] : [],
            relay: relay,
            timeoutSeconds: timeoutSeconds
        )
        defer { relays.stop() }
        let deadline = NIODeadline.now() + .seconds(Int64(timeoutSeconds))

        let idleRSS = try relays.memory().rssKiB
        let secret = try RelayAuthenticator.readSecret(RelayFiles(dataDirectory: directory).secretPath)
        let plan = self.plan
        let tokens = try runAsync {
            let authenticator = try await RelayAuthenticator(secret: secret)
            var tokens: [String] = []
            for i in 0..<plan.users { tokens.append(try await authenticator.mint(user: plan.user(i), ttl: 86_400)) }
            return tokens
        }

        // Connect and log in everyone; nobody sends yet.
        let (clients, channels) = try connectBenchClients(
            count: plan.users,
            group: group,
            ports: relays.children.map(\.port),
            until: deadline,
            name: plan.user
        ) { i, loop in
            BenchClient(plan: plan, index: i, token: tokens[i], eventLoop: loop)
        }
        let logins = try clients.map { client in
            try client.eventLoop.submit { client.value.loggedIn.futureResult }.wait()
        }
        let dones = try clients.map { client in
            try client.eventLoop.submit { client.value.done.futureResult }.wait()
        }
        defer {
            for channel in channels { channel.close(promise: nil) }
            for channel in channels { _ = try? bounded(channel.closeFuture, until: .now() + .seconds(5), "closing") }
        }
        try bounded(EventLoopFuture.andAllSucceed(logins, on: group.next()), until: deadline, "logging in")
        let loggedInRSS = try relays.memory().rssKiB

        // The send phase: everyone starts at once; it ends when every message is acknowledged and delivered.
        let relayCPUBefore = try relays.cpuTime()
        let clientCPUBefore = try cpuSeconds(pid: getpid())
        let start = NIODeadline.now()
        for client in clients { client.eventLoop.execute { client.value.start() } }
        let all = EventLoopFuture.andAllSucceed(dones, on: group.next())
        do {
            try bounded(all, until: deadline, "the send phase")
        } catch {
            let reports = collect(clients)
            throw BenchFailure(
                description: "\(error); " + Self.problems(reports, plan: plan).prefix(5).joined(separator: "; ")
            )
        }
        let seconds = Double((NIODeadline.now() - start).nanoseconds) / 1e9
        let relayCPU = try relays.cpuTime() - relayCPUBefore
        let clientCPU = try cpuSeconds(pid: getpid()) - clientCPUBefore
        let peak = try relays.memory().peakKiB
        // A duplicate would arrive right after the last expected frame: give it a moment.
        usleep(200_000)
        let reports = collect(clients)
        let problems = Self.problems(reports, plan: plan)
        guard problems.isEmpty else {
            throw BenchFailure(
                description: "\(problems.count) check(s) failed: " + problems.prefix(10).joined(separator: "; ")
            )
        }
        guard relays.allRunning else {
            throw BenchFailure(description: "a relay process exited during the run")
        }

        var restarted: (seconds: Double, rssMiB: Double)?
        if restart {
            // A crash, then the same command on the same store: it loads the store, then listens.
            let seconds = try relays.restartRouting()
            restarted = (seconds, Double(try relays.routing.memory().rssKiB) / 1024)
        }

        let deliveries = reports.flatMap(\.deliveryLatenciesNs).sorted()
        let acks = reports.flatMap(\.ackLatenciesNs).sorted()
        return BenchFigures(
            store: label,
            messagesPerSecond: Double(plan.users * plan.messages) / seconds,
            seconds: seconds,
            deliveryP50Ms: percentileMs(deliveries, 0.50),
            deliveryP99Ms: percentileMs(deliveries, 0.99),
            ackP50Ms: percentileMs(acks, 0.50),
            ackP99Ms: percentileMs(acks, 0.99),
            rssPerConnectionKiB: Double(loggedInRSS - idleRSS) / Double(plan.users),
            peakRSSMiB: Double(peak) / 1024,
            idleRSSKiB: Double(idleRSS),
            loggedInRSSKiB: Double(loggedInRSS),
            relayCPUMicrosecondsPerMessage: relayCPU * 1e6 / Double(plan.users * plan.messages),
            clientCPUMicrosecondsPerMessage: clientCPU * 1e6 / Double(plan.users * plan.messages),
            restartSeconds: restarted?.seconds,
            restartRSSMiB: restarted?.rssMiB
        )
    }

    /// Every client's report (bounded: a client whose loop does not answer is left out, and counted as a problem).
    private func collect(_ clients: [NIOLoopBound<BenchClient>]) -> [BenchClientReport] {
        clients.compactMap { client in
            try? bounded(
                client.eventLoop.submit { client.value.report },
                until: .now() + .seconds(10),
                "collecting a report"
            )
        }
    }

    /// What differs from the plan, one line per user and check.
    static func problems(_ reports: [BenchClientReport], plan: BenchPlan) -> [String] {
        var problems: [String] = []
        if reports.count != plan.users { problems.append("\(plan.users - reports.count) clients did not report") }
        for report in reports {
            let user = plan.user(report.index)
            problems += report.problems.map { "\(user): \($0)" }
            if report.acked != plan.messages { problems.append("\(user): \(report.acked)/\(plan.messages) acks") }
            if report.delivered != plan.messages {
                problems.append("\(user): \(report.delivered)/\(plan.messages) messages delivered")
            }
            if report.duplicates > 0 { problems.append("\(user): \(report.duplicates) messages delivered twice") }
        }
        return problems
    }
}

/// Waits for `future` until `deadline`.
/// - Throws: the future's error, or ``BenchFailure`` when the deadline passes first.
@discardableResult
func bounded<T: Sendable>(_ future: EventLoopFuture<T>, until deadline: NIODeadline, _ what: String) throws -> T {
    let promise = future.eventLoop.makePromise(of: T.self)
    future.cascade(to: promise)
    let timer = future.eventLoop.scheduleTask(deadline: deadline) {
        promise.fail(BenchFailure(description: "\(what) did not finish in time"))
    }
    defer { timer.cancel() }
    return try promise.futureResult.wait()
}

/// Connects `count` benchmark clients over loopback TCP, client `i` to `ports[i % ports.count]` (a
/// relay's port, or one per relay node), each made by `make` on the next event loop of `group` (it
/// logs in from `channelActive`), within `deadline`: returns the clients and their channels.
func connectBenchClients<Client: ChannelInboundHandler & SendableMetatype>(
    count: Int,
    group: MultiThreadedEventLoopGroup,
    ports: [Int],
    until deadline: NIODeadline,
    name: (Int) -> String,
    make: @escaping @Sendable (Int, any EventLoop) -> Client
) throws -> ([NIOLoopBound<Client>], [any Channel]) where Client.InboundIn == Frame, Client.OutboundOut == Frame {
    var clients: [NIOLoopBound<Client>] = []
    var channels: [any Channel] = []
    clients.reserveCapacity(count)
    channels.reserveCapacity(count)
    for i in 0..<count {
        let loop = group.next()
        let client = try loop.submit { NIOLoopBound(make(i, loop), eventLoop: loop) }.wait()
        let channel = try bounded(
            connectBenchClient(client, port: ports[i % ports.count]),
            until: deadline,
            "connecting \(name(i))"
        )
        clients.append(client)
        channels.append(channel)
    }
    return (clients, channels)
}

/// Connects `client` over loopback TCP to `port`, on its event loop, with the frame codec in front
/// of it (it logs in from `channelActive`).
func connectBenchClient<Client: ChannelInboundHandler & SendableMetatype>(
    _ client: NIOLoopBound<Client>,
    port: Int
) -> EventLoopFuture<any Channel> where Client.InboundIn == Frame, Client.OutboundOut == Frame {
    ClientBootstrap(group: client.eventLoop)
        .channelOption(.socketOption(.tcp_nodelay), value: 1)
        .connectTimeout(.seconds(10))
        .channelInitializer { channel in
            channel.eventLoop.makeCompletedFuture {
                try channel.pipeline.syncOperations.addFrameCodec()
                try channel.pipeline.syncOperations.addHandler(client.value)
            }
        }
        .connect(host: "127.0.0.1", port: port)
}

/// The `p` percentile of `sorted` (nanoseconds), in milliseconds (nearest rank).
func percentileMs(_ sorted: [UInt64], _ p: Double) -> Double {
    guard !sorted.isEmpty else { return 0 }
    let index = min(sorted.count - 1, Int((Double(sorted.count - 1) * p).rounded()))
    return Double(sorted[index]) / 1_000_000
}

/// The CPU time (user + system) process `pid` has used so far, in seconds (/proc/PID/stat).
func cpuSeconds(pid: pid_t) throws -> Double {
    let stat = (try? readTextFile("/proc/\(pid)/stat")) ?? ""
    // The fields after the command name (which is in parentheses and may hold spaces): state is
    // field 3, utime and stime are fields 14 and 15.
    guard let close = stat.lastIndex(of: ")") else {
        throw BenchFailure(description: "cannot read /proc/\(pid)/stat")
    }
    let fields = stat[stat.index(after: close)...].split(separator: " ")
    guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else {
        throw BenchFailure(description: "cannot read the CPU times in /proc/\(pid)/stat")
    }
    return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
}

/// `value` with `digits` decimals.
func fixed(_ value: Double, _ digits: Int) -> String { String(format: "%.\(digits)f", value) }

extension String {
    fileprivate func padding(_ width: Int) -> String { self + String(repeating: " ", count: max(0, width - count)) }
    fileprivate func leftPadding(_ width: Int) -> String { String(repeating: " ", count: max(0, width - count)) + self }
}

/// A new, empty directory under the system's temporary directory (mode 0700).
func makeTemporaryDirectory() throws -> String {
    var template = Array("\(NSTemporaryDirectory())/imcodec-relay-bench.XXXXXX".utf8CString)
    guard let made = mkdtemp(&template) else {
        throw BenchFailure(description: "cannot create a temporary directory: \(String(cString: strerror(errno)))")
    }
    return String(cString: made)
}

/// What one benchmark client saw, handed from its event loop to the run.
struct BenchClientReport: Sendable {
    var index = 0
    var acked = 0
    /// Distinct messages of the predecessor received.
    var delivered = 0
    var duplicates = 0
    var problems: [String] = []
    var ackLatenciesNs: [UInt64] = []
    var deliveryLatenciesNs: [UInt64] = []
}

/// What every benchmark client does with its connection: logs in as `me` (device `bench-INDEX`)
/// once connected, and fails its run when the connection closes, errs or loses its handler.
protocol BenchConnection: ChannelInboundHandler, AnyObject where InboundIn == Frame, OutboundOut == Frame {
    var index: Int { get }
    var token: String { get }
    var me: String { get }
    /// Set while the handler is in a pipeline.
    var context: ChannelHandlerContext? { get set }
    func fail(_ reason: String)
}

extension BenchConnection {
    func handlerAdded(context: ChannelHandlerContext) { self.context = context }

    /// Drops the context, which holds this handler (a retain cycle otherwise).
    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
        fail("the handler was removed")
    }

    func channelActive(context: ChannelHandlerContext) {
        let login = RelayProtocol.loginFrame(me, token: token, deviceID: "bench-\(index)", requestID: 1)
        context.writeAndFlush(wrapOutboundOut(login), promise: nil)
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        fail("the connection closed")
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        fail("\(error)")
        context.close(promise: nil)
    }
}

/// One user of the benchmark: logs in, then (on ``start()``) sends its messages to the next user
/// with at most `window` unacknowledged, and checks every ack and every message it receives from
/// the previous user: error 0, each exactly once, seqs and stream positions increasing.
final class BenchClient: BenchConnection {
    typealias InboundIn = Frame
    typealias OutboundOut = Frame

    let plan: BenchPlan
    let index: Int
    let token: String
    /// Succeeds once the login is accepted.
    let loggedIn: EventLoopPromise<Void>
    /// Succeeds once every message is acknowledged and every expected one received; fails when the
    /// connection closes or the relay refuses something.
    let done: EventLoopPromise<Void>
    var context: ChannelHandlerContext?
    private var started = false
    private var nextToSend = 0
    private var inFlight = 0
    private var sentAt: [UInt64]
    private var acked: [Bool]
    private var received: [Bool]
    private var result = BenchClientReport()
    private var lastAckSeq: UInt64 = 0
    private var lastReceivedSeq: UInt64 = 0
    private var lastStreamPosition: UInt64 = 0
    let me: String
    private let peer: String
    private let predecessor: String

    init(plan: BenchPlan, index: Int, token: String, eventLoop: any EventLoop) {
        self.plan = plan
        self.index = index
        self.token = token
        self.loggedIn = eventLoop.makePromise()
        self.done = eventLoop.makePromise()
        self.me = plan.user(index)
        self.peer = plan.user(plan.peer(of: index))
        self.predecessor = plan.user(plan.predecessor(of: index))
        sentAt = Array(repeating: 0, count: plan.messages)
        acked = Array(repeating: false, count: plan.messages)
        received = Array(repeating: false, count: plan.messages)
        result.index = index
        result.ackLatenciesNs.reserveCapacity(plan.messages)
        result.deliveryLatenciesNs.reserveCapacity(plan.messages)
    }

    /// What the client saw so far.
    var report: BenchClientReport { result }

    func fail(_ reason: String) {
        if !isComplete { problem(reason) }
        loggedIn.fail(BenchFailure(description: "\(me): \(reason)"))
        done.fail(BenchFailure(description: "\(me): \(reason)"))
    }

    private func problem(_ text: String) {
        if result.problems.count < 5 { result.problems.append(text) }
    }

    private var isComplete: Bool { result.acked == plan.messages && result.delivered == plan.messages }

    /// Starts sending (on the channel's event loop).
    func start() {
        started = true
        fill()
        if isComplete { done.succeed() }
    }

    private func fill() {
        guard started, let context else { return }
        var wrote = false
        while nextToSend < plan.messages, inFlight < plan.window {
            let k = nextToSend
            nextToSend += 1
            inFlight += 1
            var message = Message.c2cText(
                from: me,
                to: peer,
                plan.text(index, k),
                clientMsgID: plan.clientMsgID(index, k)
            )
            let now = NIODeadline.now().uptimeNanoseconds
            withUnsafeBytes(of: now.littleEndian) { message.cloudCustomData = Array($0) }
            sentAt[k] = now
            context.write(wrapOutboundOut(Frame(message)), promise: nil)
            wrote = true
        }
        if wrote { context.flush() }
    }

    /// The text of the message's first element, if it is a text element.
    private static func text(of message: Message) -> String? {
        if case .text(let element)? = message.elements.first?.content { element.text } else { nil }
    }

    /// The message index `k` in a client message id `benchI-K` of user `i`.
    private static func messageIndex(_ clientMsgID: String, user: String) -> Int? {
        guard clientMsgID.hasPrefix(user + "-") else { return nil }
        return Int(clientMsgID.dropFirst(user.utf8.count + 1))
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        let now = NIODeadline.now().uptimeNanoseconds
        switch frame.payload {
        case .loginResult(let login)?:
            guard login.errorCode == 0 else {
                fail("login refused: \(login.errorCode) \(login.errorDescription)")
                return
            }
            loggedIn.succeed()
        case .sendAck(let ack)?:
            guard let k = Self.messageIndex(ack.clientMsgID, user: me), k < plan.messages else {
                problem("an ack for an unknown message \(ack.clientMsgID)")
                return
            }
            guard ack.errorCode == 0 else {
                problem("message \(k) refused: \(ack.errorCode) \(ack.errorDescription)")
                fail("a message was refused")
                return
            }
            guard !acked[k] else {
                problem("message \(k) acknowledged twice")
                return
            }
            acked[k] = true
            result.acked += 1
            inFlight -= 1
            if ack.seq <= lastAckSeq { problem("ack seq \(ack.seq) after \(lastAckSeq)") }
            lastAckSeq = ack.seq
            result.ackLatenciesNs.append(now &- sentAt[k])
            fill()
        case .message(let message)?:
            guard message.senderID == predecessor, message.conversation?.type == .oneToOne,
                let k = Self.messageIndex(message.clientMsgID, user: predecessor), k < plan.messages
            else {
                problem("an unexpected message \(message.clientMsgID) from \(message.senderID)")
                return
            }
            guard !received[k] else {
                result.duplicates += 1
                return
            }
            received[k] = true
            result.delivered += 1
            if Self.text(of: message) != plan.text(plan.predecessor(of: index), k) {
                problem("message \(k): wrong text")
            }
            if message.seq <= lastReceivedSeq { problem("seq \(message.seq) after \(lastReceivedSeq)") }
            lastReceivedSeq = message.seq
            if frame.streamPosition <= lastStreamPosition {
                problem("stream position \(frame.streamPosition) after \(lastStreamPosition)")
            }
            lastStreamPosition = frame.streamPosition
            if message.cloudCustomData.count == 8 {
                let sent = message.cloudCustomData.withUnsafeBytes {
                    UInt64(littleEndian: $0.loadUnaligned(as: UInt64.self))
                }
                result.deliveryLatenciesNs.append(now &- sent)
            } else {
                problem("message \(k) lost its send time")
            }
        case .systemNotice(let notice)?:
            problem("a notice: \(notice.text)")
        default:
            break
        }
        if started, isComplete { done.succeed() }
    }
}

/// The relay under test, as a child process.
final class RelayChild: @unchecked Sendable {
    /// The child; used from the thread that runs the benchmark.
    let process: Process
    /// Where its clients connect.
    let port: Int
    /// Whether it routes (`relay listening on ...`); a relay node that forwards its clients to the
    /// node that routes does not.
    let routes: Bool

    private init(process: Process, port: Int, routes: Bool) {
        self.process = process
        self.port = port
        self.routes = routes
    }

    var pid: pid_t { process.processIdentifier }
    var isRunning: Bool { process.isRunning }

    /// What a child's first lines say: where it takes clients, and whether it routes.
    private struct Readiness {
        var port: Int?
        var routes = false
        var nodePort: Int?
        var forwarding = false

        /// Reads one line; returns whether the child is ready: it routes (`relay listening on
        /// 127.0.0.1:PORT`), or it is a relay node that listens (`relay node: listening on
        /// 127.0.0.1:PORT; ...`) and has linked to the node that routes.
        mutating func read(_ line: String) -> Bool {
            func portNumber(after prefix: String) -> Int? {
                line.hasPrefix(prefix) ? Int(line.dropFirst(prefix.count).prefix { $0.isNumber }) : nil
            }
            if let listening = portNumber(after: "relay listening on 127.0.0.1:") {
                (port, routes) = (listening, true)
                return true
            }
            if let listening = portNumber(after: "relay node: listening on 127.0.0.1:") { nodePort = listening }
            if line.hasPrefix("relay node: forwarding clients to the relay that routes") { forwarding = true }
            if forwarding, let nodePort {
                port = nodePort
                return true
            }
            return false
        }
    }

    /// util-linux's `setpriv`, which sets the parent-death signal before it runs the relay.
    private static let setpriv = "/usr/bin/setpriv"

    /// Whether a relay started here gets SIGKILL when the benchmark process ends, however it ends
    /// (crashed, killed): started from the main thread, through `setpriv --pdeathsig KILL` (the
    /// signal comes when the thread that started the child ends, and the main thread ends with the
    /// process; a `setpriv` older than util-linux 2.33 has no such option). Checked once.
    private static let setprivSetsParentDeathSignal: Bool = {
        guard FileManager.default.isExecutableFile(atPath: setpriv) else { return false }
        let probe = Process()
        probe.executableURL = URL(fileURLWithPath: setpriv)
        probe.arguments = ["--pdeathsig", "KILL", "--", "/bin/true"]
        probe.standardInput = FileHandle.nullDevice
        probe.standardOutput = FileHandle.nullDevice
        probe.standardError = FileHandle.nullDevice
        guard (try? probe.run()) != nil else { return false }
        probe.waitUntilExit()
        return probe.terminationReason == .exit && probe.terminationStatus == 0
    }()

    /// Starts `executable arguments...` and waits (at most `timeoutSeconds`) until it routes (its
    /// line `relay listening on 127.0.0.1:PORT`) or, as a relay node, forwards to the node that
    /// does (it listens and has linked). Standard output is read to its end by a thread of its
    /// own (so the child never blocks on it); standard error goes to ours. Started from the main
    /// thread where `setpriv` can, the relay does not outlive this process.
    static func start(_ executable: String, arguments: [String], timeoutSeconds: Int) throws -> RelayChild {
        let process = Process()
        if Thread.isMainThread && setprivSetsParentDeathSignal {
            // setpriv becomes the relay (exec, the same pid): the pid, its memory and its CPU time
            // are the relay's.
            process.executableURL = URL(fileURLWithPath: setpriv)
            process.arguments = ["--pdeathsig", "KILL", "--", executable] + arguments
        } else {
            process.executableURL = URL(fileURLWithPath: executable)
            process.arguments = arguments
        }
        let output = Pipe()
        process.standardOutput = output
        process.standardInput = FileHandle.nullDevice
        do {
            try process.run()
        } catch {
            throw BenchFailure(description: "cannot start \(executable): \(error)")
        }
        let readiness = NIOLockedValueBox(Readiness())
        let lines = NIOLockedValueBox<[String]>([])
        let ready = DispatchSemaphore(value: 0)
        let reader = output.fileHandleForReading
        Thread.detachNewThread {
            var pending = ""
            var signalled = false
            while true {
                let data = reader.availableData
                if data.isEmpty { break }
                pending += String(decoding: data, as: UTF8.self)
                while let newline = pending.firstIndex(of: "\n") {
                    let line = String(pending[..<newline])
                    pending = String(pending[pending.index(after: newline)...])
                    lines.withLockedValue { if $0.count < 20 { $0.append(line) } }
                    if !signalled, readiness.withLockedValue({ $0.read(line) }) {
                        signalled = true
                        ready.signal()
                    }
                }
            }
            if !signalled { ready.signal() }
        }
        let child = RelayChild(process: process, port: 0, routes: false)
        guard ready.wait(timeout: .now() + .seconds(timeoutSeconds)) == .success,
            case let readyAs = readiness.withLockedValue({ $0 }), let listening = readyAs.port
        else {
            child.stop()
            let said = lines.withLockedValue { $0 }.joined(separator: " / ")
            throw BenchFailure(
                description: "the relay exited, or did not say where it listens within \(timeoutSeconds) s"
                    + (said.isEmpty ? "" : " (it printed: \(said))")
            )
        }
        return RelayChild(process: process, port: listening, routes: readyAs.routes)
    }

    /// The child's resident set now and its peak, in KiB (`VmRSS`, `VmHWM` of /proc/PID/status).
    func memory() throws -> (rssKiB: Int, peakKiB: Int) {
        let status = (try? readTextFile("/proc/\(pid)/status")) ?? ""
        func field(_ name: String) -> Int? {
            guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix(name + ":") }) else {
                return nil
            }
            return Int(line.dropFirst(name.count + 1).split(whereSeparator: { $0 == " " || $0 == "\t" }).first ?? "")
        }
        guard let rss = field("VmRSS"), let peak = field("VmHWM") else {
            throw BenchFailure(description: "cannot read the relay's memory from /proc/\(pid)/status")
        }
        return (rss, peak)
    }

    /// Stops the child: SIGTERM, then SIGKILL if it has not exited within 5 seconds; waits (bounded) for it.
    func stop() {
        guard process.isRunning else { return }
        kill(pid, SIGTERM)
        if !waitForExit(seconds: 5) {
            kill(pid, SIGKILL)
            _ = waitForExit(seconds: 5)
        }
    }

    /// Kills the child with SIGKILL (a crash) and waits (bounded) for it to exit.
    func killNow() {
        guard process.isRunning else { return }
        kill(pid, SIGKILL)
        _ = waitForExit(seconds: 10)
    }

    private func waitForExit(seconds: Double) -> Bool {
        let deadline = NIODeadline.now() + .milliseconds(Int64(seconds * 1000))
        while process.isRunning {
            if NIODeadline.now() > deadline { return false }
            usleep(10_000)
        }
        return true
    }
}
#endif
