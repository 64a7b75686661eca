#if Tools
import Foundation
import IMCodecTestSupport
import NIOConcurrencyHelpers
import Testing

@testable import imcodec_relay

/// The relay's benchmarks run end to end on a small load: every check they make passes, and they
/// print their figures (the figures themselves are measured by Benchmarks/relay-run, never here).
@Suite("Relay benchmarks, on a small load")
struct RelayBenchmarkTests {
    @Test("bench: a ring of users on both stores; every message acknowledged and delivered once")
    func ring() async throws {
        let result = try await RelayExecutable.run([
            "bench", "--users", "4", "--messages", "10", "--rounds", "1", "--timeout", "120",
        ])
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        #expect(result.stdout.contains("round 1 memory"))
        #expect(result.stdout.contains("round 1 sqlite"))
        #expect(result.stdout.contains("sqlite/memory throughput:"))
    }

    @Test("bench --nodes 1,2,3: the ring on one PostgreSQL database with one, two and three relay nodes")
    func nodes() async throws {
        let server = try PostgresTestDatabase.serverURL()
        // (Each run creates a database of its own on that server, and drops it.)
        let result = try await RelayExecutable.run([
            "bench", "--users", "6", "--messages", "10", "--rounds", "1", "--timeout", "120",
            "--store", server.withPassword, "--nodes", "1,2,3",
        ])
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        // Lines `round 1 LABEL: figures`, the labels padded to one width.
        let rounds = result.stdout.split(separator: "\n").compactMap { line in
            line.hasPrefix("round 1 ")
                ? line.split(separator: ":").first?.dropFirst(8).trimmingCharacters(in: .whitespaces) : nil
        }
        #expect(rounds == ["memory", "sqlite", "postgresql", "postgresql 2 nodes", "postgresql 3 nodes"])
        #expect(result.stdout.contains("postgresql 3 nodes/postgresql throughput:"))
    }

    @Test("bench --nodes without a PostgreSQL store, or with a count out of range, is a usage error")
    func nodesNeedPostgreSQL() async throws {
        let alone = try await RelayExecutable.run(["bench", "--nodes", "1,2"])
        #expect(alone.status == 2 && alone.stderr.contains("--nodes needs --store postgresql://"), "\(alone.stderr)")
        let zero = try await RelayExecutable.run(["bench", "--store", "postgresql://u@127.0.0.1/d", "--nodes", "0"])
        #expect(zero.status == 2 && zero.stderr.contains("--nodes is a list of distinct node counts"))
    }

    @Test("bench-group: every member receives every group message once, in order", arguments: ["memory", "sqlite"])
    func group(_ store: String) async throws {
        let result = try await RelayExecutable.run([
            "bench-group", "--members", "30", "--messages", "3", "--store", store, "--timeout", "120",
        ])
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        #expect(result.stdout.contains("30 members, 3 message(s), store \(store): every member had a message after"))
        #expect(result.stdout.contains("KiB per idle connection"))
    }

    @Test("bench-group --nodes 3: the members on two forwarding nodes, the group's messages routed by a third")
    func groupOnNodes() async throws {
        let server = try PostgresTestDatabase.serverURL()
        let result = try await RelayExecutable.run([
            "bench-group", "--members", "30", "--messages", "3", "--store", server.withPassword, "--nodes", "3",
            "--timeout", "120",
        ])
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        #expect(
            result.stdout.contains(
                "30 members, 3 message(s), store postgresql 3 nodes: every member had a message after"
            )
        )
        #expect(result.stdout.contains("KiB per idle connection"))
        #expect(result.stdout.contains("KiB per forwarded session"))
    }

    @Test(
        "bench-group --kill-routing: after the routing node's SIGKILL every member logs in again and gets every message"
    )
    func groupFailover() async throws {
        let server = try PostgresTestDatabase.serverURL()
        let result = try await RelayExecutable.run([
            "bench-group", "--members", "30", "--messages", "3", "--store", server.withPassword, "--nodes", "3",
            "--kill-routing", "--timeout", "120",
        ])
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        #expect(result.stdout.contains("store postgresql 3 nodes: every member had a message after"))
        // Every member connected again at least once (its node dropped it).
        let connections = result.stdout.split(separator: "\n").first { $0.hasPrefix("failover: ") }.flatMap { line in
            line.split(separator: " in ").last?.split(separator: " ").first.flatMap { Int($0) }
        }
        #expect((connections ?? 0) >= 30, "\(result.stdout)")
    }

    @Test("bench-group --nodes without a PostgreSQL store, or with a count out of range, is a usage error")
    func groupNodesNeedPostgreSQL() async throws {
        let alone = try await RelayExecutable.run(["bench-group", "--nodes", "2"])
        #expect(alone.status == 2 && alone.stderr.contains("--nodes needs --store postgresql://"), "\(alone.stderr)")
        let zero = try await RelayExecutable.run([
            "bench-group", "--store", "postgresql://u@127.0.0.1/d", "--nodes", "0",
        ])
        #expect(zero.status == 2 && zero.stderr.contains("--nodes is 1 to 16"), "\(zero.stderr)")
        let kill = try await RelayExecutable.run(["bench-group", "--kill-routing"])
        #expect(kill.status == 2 && kill.stderr.contains("--kill-routing needs --nodes 2 or more"), "\(kill.stderr)")
        let store = try await RelayExecutable.run(["bench-group", "--store", "mysql"])
        #expect(
            store.status == 2 && store.stderr.contains("--store is memory, sqlite or postgresql://"),
            "\(store.stderr)"
        )
    }

    #if os(Linux)
    @Test("a benchmark killed with SIGKILL takes its relay with it (setpriv --pdeathsig)")
    func killedBenchLeavesNoRelay() async throws {
        let executable = try #require(
            RelayExecutable.url,
            "the imcodec-relay executable was not built next to the tests"
        )
        // A ring far longer than the test: the benchmark is killed while its first relay serves.
        // Its output goes to a file, to say why should it end before that.
        let output = FileManager.default.temporaryDirectory.appendingPathComponent(
            "bench-\(getpid())-\(UInt64.random(in: 0...UInt64.max)).log"
        ).path
        defer { try? FileManager.default.removeItem(atPath: output) }
        let bench = try ChildProcess(
            executable.path,
            ["bench", "--users", "2", "--messages", "1000000", "--rounds", "1", "--timeout", "120"],
            output: output,
            errorToOutput: true
        )
        /// How the benchmark ended, if it did, and what it wrote.
        func ended() -> String {
            "benchmark \(String(describing: bench.termination)), its output: "
                + ((try? String(contentsOfFile: output, encoding: .utf8)) ?? "none")
        }
        // Watched, and killed once its relay serves the benchmark's two users (its listening socket
        // and theirs: it has printed where it listens, so no write to the benchmark's closed pipe
        // ends it first), from a thread of its own: under the full suite, synchronous waits of
        // other tests held this test's task off its pool for two minutes, past the benchmark's own
        // --timeout, and a watch from the task saw the benchmark end or its relay go.
        let seen = NIOLockedValueBox<(pid: pid_t, start: Substring)?>(nil)
        let watching = NIOLockedValueBox(true)
        Thread.detachNewThread {
            defer { watching.withLockedValue { $0 = false } }
            while bench.isRunning {  // it ends by itself within its --timeout
                if let relay = Self.relays(startedBy: bench.pid).first, Self.sockets(of: relay) >= 3,
                    let start = Self.startTime(relay)
                {
                    seen.withLockedValue { $0 = (relay, start) }
                    bench.signal(SIGKILL)
                    return
                }
                usleep(10_000)
            }
        }
        defer {
            bench.signal(SIGKILL)
            _ = bench.waitUntilExit()
            // Only while it still runs: a pid that ended may already be another process's.
            if let relay = seen.withLockedValue({ $0 }), Self.startTime(relay.pid) == relay.start {
                kill(relay.pid, SIGKILL)
            }
        }
        while watching.withLockedValue({ $0 }) { try await Task.sleep(nanoseconds: 20_000_000) }
        let relay = try #require(seen.withLockedValue { $0 }, "the benchmark ended before its relay served; \(ended())")
        #expect(bench.waitUntilExit() == .signalled(SIGKILL), "\(ended())")
        #expect(
            await eventually(30) { Self.startTime(relay.pid) != relay.start },
            "relay \(relay.pid) outlived the benchmark"
        )
    }

    /// When `pid` started (field 22 of /proc/PID/stat, in clock ticks since boot), or `nil` once it
    /// is gone or a zombie: with the pid, it names one process (a pid may be reused).
    static func startTime(_ pid: pid_t) -> Substring? {
        guard let stat = stat(pid), stat.state != "Z" else { return nil }
        return stat.start
    }

    /// The children of `parent` that run `imcodec-relay` (once `setpriv` has become the relay:
    /// then the parent-death signal is set), from /proc.
    static func relays(startedBy parent: pid_t) -> [pid_t] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return names.compactMap { pid_t($0) }.filter { Self.stat($0)?.parent == parent && Self.runsRelay($0) }
    }

    /// Whether `pid` runs the `imcodec-relay` executable (its first argument, /proc/PID/cmdline).
    static func runsRelay(_ pid: pid_t) -> Bool {
        let command = try? String(contentsOfFile: "/proc/\(pid)/cmdline", encoding: .utf8)
        return command?.split(separator: "\0").first?.hasSuffix("/imcodec-relay") == true
    }

    /// How many sockets `pid` holds open (its /proc/PID/fd entries that name one).
    static func sockets(of pid: pid_t) -> Int {
        let folder = "/proc/\(pid)/fd"
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        return names.filter { name in
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "\(folder)/\(name)"))?.hasPrefix("socket:")
                == true
        }.count
    }

    /// The state letter, the parent and the start time (field 22) of `pid` (/proc/PID/stat: after
    /// the command name in parentheses, which may hold spaces and parentheses itself).
    static func stat(_ pid: pid_t) -> (state: Character, parent: pid_t, start: Substring)? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = text.lastIndex(of: ")")
        else { return nil }
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count > 19, let state = fields[0].first, let parent = pid_t(fields[1]) else { return nil }
        return (state, parent, fields[19])
    }
    #endif

    @Test("bench-group refuses a group of one")
    func groupOfOne() async throws {
        let result = try await RelayExecutable.run(["bench-group", "--members", "1"])
        #expect(result.status == 2)
        #expect(result.stderr.contains("--members must be at least 2"))
    }
}
#endif
