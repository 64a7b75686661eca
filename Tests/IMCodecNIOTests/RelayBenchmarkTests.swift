#if Tools
import Foundation
import Testing

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

    @Test("bench-group: every member receives every group message once, in order", arguments: ["memory", "sqlite"])
    func group(_ store: String) throws {
        let result = try RelayExecutable.run([
            "bench-group", "--members", "30", "--messages", "3", "--store", store, "--timeout", "120",
        ])
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        #expect(result.stdout.contains("30 members, 3 message(s), store \(store): every member had a message after"))
        #expect(result.stdout.contains("KiB per idle connection"))
    }

    @Test("bench-group refuses a group of one")
    func groupOfOne() throws {
        let result = try RelayExecutable.run(["bench-group", "--members", "1"])
        #expect(result.status == 2)
        #expect(result.stderr.contains("--members must be at least 2"))
    }
}
#endif
