#if Tools
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import NIOCore

/// The relay processes of one benchmark run: one relay on the memory or SQLite store, or
/// `nodes` relay nodes (`serve --node-port 0`) on a PostgreSQL database the run creates on the
/// `--store` server and drops when it stops: the first node routes, the others forward their
/// clients to it. The nodes share the run's data directory: the first creates the auth secret,
/// the others read it (a PostgreSQL store keeps nothing else there).
struct BenchRelays {
    /// Every process, the routing one first.
    private(set) var children: [RelayChild] = []
    /// The run's own database (PostgreSQL only).
    private let database: BenchDatabase?
    /// The command each process was started with (the same for every node).
    private let serve: [String]
    private let relay: String
    private let timeoutSeconds: Int

    /// Starts the processes, the routing one first; on a failure, stops what it started and drops
    /// the database.
    /// - Parameters:
    ///   - store: `memory`, `sqlite` or `postgresql` (then `postgres` names the server).
    ///   - arguments: `serve` options of the run's own (`--synchronous`, `--groups`...).
    init(
        store: String,
        postgres: PostgresURL?,
        nodes: Int,
        directory: String,
        arguments: [String],
        relay: String,
        timeoutSeconds: Int
    ) throws {
        var storeArguments = ["--store", store]
        if store == "postgresql" {
            guard let postgres else { throw BenchFailure(description: "a PostgreSQL run needs --store's server") }
            let created = try BenchDatabase(server: postgres)
            database = created
            storeArguments = ["--store", created.url.withPassword]
        } else {
            database = nil
        }
        // What the relay carries, not what one user may have it carry (`--fan-out-rate`, `--peer-rate`).
        serve =
            ["serve"] + storeArguments + (nodes > 1 ? ["--node-port", "0"] : [])
            + ["--port", "0", "--data-dir", directory, "--quiet", "--fan-out-rate", "0", "--peer-rate", "0"]
            + arguments
        self.relay = relay
        self.timeoutSeconds = timeoutSeconds
        do {
            for node in 0..<nodes {
                let child = try RelayChild.start(relay, arguments: serve, timeoutSeconds: min(timeoutSeconds, 60))
                children.append(child)
                guard child.routes == (node == 0) else {
                    throw BenchFailure(
                        description:
                            "relay node \(node + 1) \(child.routes ? "routes" : "forwards") (expected the first to route)"
                    )
                }
            }
        } catch {
            stop()
            throw error
        }
    }

    /// The process that routes.
    var routing: RelayChild { children[0] }

    /// The nodes that forward their clients to the routing one (none with one process).
    var forwarding: ArraySlice<RelayChild> { children.dropFirst() }

    /// Whether every process still runs.
    var allRunning: Bool { children.allSatisfy(\.isRunning) }

    /// The resident sets and peaks of `processes` (default: every one), summed, in KiB.
    func memory(of processes: ArraySlice<RelayChild>? = nil) throws -> (rssKiB: Int, peakKiB: Int) {
        try (processes ?? children[...]).reduce((0, 0)) { sum, child in
            let each = try child.memory()
            return (sum.0 + each.rssKiB, sum.1 + each.peakKiB)
        }
    }

    /// The CPU time of `processes` (default: every one) so far, summed, in seconds.
    func cpuTime(of processes: ArraySlice<RelayChild>? = nil) throws -> Double {
        try (processes ?? children[...]).reduce(0) { $0 + (try cpuSeconds(pid: $1.pid)) }
    }

    /// Kills the routing process with SIGKILL (a crash) and starts it again with the same command
    /// on the same store; returns the seconds until it listened (it loads the store first).
    mutating func restartRouting() throws -> Double {
        children[0].killNow()
        let begin = NIODeadline.now()
        children[0] = try RelayChild.start(relay, arguments: serve, timeoutSeconds: timeoutSeconds)
        return Double((NIODeadline.now() - begin).nanoseconds) / 1e9
    }

    /// Stops every process, the forwarding ones first (the routing node's stop would make them take
    /// over), then drops the run's database. When the routing process is gone (killed), one of the
    /// others routes now, so they are all told to stop at once (none takes over from another).
    func stop() {
        if let first = children.first, !first.isRunning {
            for child in forwarding where child.isRunning { kill(child.pid, SIGTERM) }
        }
        for child in children.reversed() { child.stop() }
        database?.drop()
    }
}
#endif
