#if Tools
import Foundation
import Testing

@testable import imcodec_relay

/// The relay's benchmarks run end to end on a small load: every check they make passes, and they
/// print their figures (the figures themselves are measured by Benchmarks/relay-run, never here).
@Suite("Relay benchmarks, on a small load")
struct RelayBenchmarkTests {
    @Test("bench: a ring of users on both stores; every message acknowledged and delivered once")
    func ring() throws {
        let result = try RelayExecutable.run([
            "bench", "--users", "4", "--messages", "10", "--rounds", "1", "--timeout", "120",
        ])
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        #expect(result.stdout.contains("round 1 memory"))
        #expect(result.stdout.contains("round 1 sqlite"))
        #expect(result.stdout.contains("sqlite/memory throughput:"))
    }

    @Test("bench --nodes 1,2,3: the ring on one PostgreSQL database with one, two and three relay nodes")
    func nodes() throws {
        let server = try PostgresTestDatabase.serverURL()
        // (Each run creates a database of its own on that server, and drops it.)
        let result = try RelayExecutable.run([
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
    func nodesNeedPostgreSQL() throws {
        let alone = try RelayExecutable.run(["bench", "--nodes", "1,2"])
        #expect(alone.status == 2 && alone.stderr.contains("--nodes needs --store postgresql://"), "\(alone.stderr)")
        let zero = try RelayExecutable.run(["bench", "--store", "postgresql://u@127.0.0.1/d", "--nodes", "0"])
        #expect(zero.status == 2 && zero.stderr.contains("--nodes is a list of distinct node counts"))
    }

    @Test("bench-group: every member receives every group message once, in order", arguments: ["memory", "sqlite"])
    func group(_ store: String) throws {
        let result = try RelayExecutable.run([
            "bench-group", "--members", "30", "--messages", "3", "--store", store, "--timeout", "120",
        ])
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        #expect(result.stdout.contains("30 members, 3 message(s), store \(store): every member had a message after"))
        #expect(result.stdout.contains("KiB per idle connection"))
    }

    @Test("bench-group --nodes 3: the members on two forwarding nodes, the group's messages routed by a third")
    func groupOnNodes() throws {
        let server = try PostgresTestDatabase.serverURL()
        let result = try RelayExecutable.run([
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
    func groupFailover() throws {
        let server = try PostgresTestDatabase.serverURL()
        let result = try RelayExecutable.run([
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
    func groupNodesNeedPostgreSQL() throws {
        let alone = try RelayExecutable.run(["bench-group", "--nodes", "2"])
        #expect(alone.status == 2 && alone.stderr.contains("--nodes needs --store postgresql://"), "\(alone.stderr)")
        let zero = try RelayExecutable.run(["bench-group", "--store", "postgresql://u@127.0.0.1/d", "--nodes", "0"])
        #expect(zero.status == 2 && zero.stderr.contains("--nodes is 1 to 16"), "\(zero.stderr)")
        let kill = try RelayExecutable.run(["bench-group", "--kill-routing"])
        #expect(kill.status == 2 && kill.stderr.contains("--kill-routing needs --nodes 2 or more"), "\(kill.stderr)")
        let store = try RelayExecutable.run(["bench-group", "--store", "mysql"])
        #expect(
            store.status == 2 && store.stderr.contains("--store is memory, sqlite or postgresql://"),
            "\(store.stderr)"
        )
    }

    @Test("bench-group refuses a group of one")
    func groupOfOne() throws {
        let result = try RelayExecutable.run(["bench-group", "--members", "1"])
        #expect(result.status == 2)
        #expect(result.stderr.contains("--members must be at least 2"))
    }
}
#endif
