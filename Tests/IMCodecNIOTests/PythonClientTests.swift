#if Tools
import Foundation
import Testing

/// The relay's promises checked from outside, by an independent Python client that starts the
/// relay executable itself and kills it with SIGKILL.
@Suite("Relay promises, from an independent Python client", .timeLimit(.minutes(4)))
struct PythonClientTests {
    /// Scripts/relay_resume_client.py (Google's protobuf over TCP, JWTs minted with Python's hmac;
    /// installed by Scripts/bootstrap) runs `imcodec-relay serve` as a child process and checks:
    /// refused credentials (another secret, alg none, HS512, no exp, expired, another sub, malformed)
    /// each get one login_result 2004 and a closed connection; bob goes offline at stream position P;
    /// alice sends texts and events (reaction, pin, receipt, delete, recall, membership, edit); the
    /// relay is killed with SIGKILL the moment the last one is acknowledged and restarted on the same
    /// data directory; alice sends more (seqs continue); bob resumes from P and gets exactly those
    /// frames, once each, in order; a second device of bob reads the stream and is online with the
    /// first; messages from one device reach the other with direction SENT; the same device id
    /// again kicks only the older connection, and resumes from its last stream_ack.
    ///
    /// On two nodes (`--nodes`, a PostgreSQL database through `Scripts/with-postgres`): the same
    /// checks against two relay nodes on one database, alice on the routing node A and bob on node
    /// B, which forwards to A; the kill is of A: B takes over routing, A starts again forwarding to B.
    @Test(arguments: [false, true])
    func survivesAKillAndKeepsEveryPromise(onTwoNodes: Bool) async throws {
        let relay = try #require(RelayExecutable.url, "the imcodec-relay executable was not built next to the tests")
        let database = onTwoNodes ? try await PostgresTestDatabase() : nil
        defer { database?.drop() }
        let (status, output) = try await runProcess(
            [
                "timeout", "180", "python3", "Scripts/relay_resume_client.py", "--relay", relay.path,
            ] + (database.map { ["--nodes", $0.url.description] } ?? []),
            environment: ["PYTHONDONTWRITEBYTECODE": "1"]
        )
        #expect(
            status == 0,
            "Scripts/relay_resume_client.py failed (install its packages with Scripts/bootstrap):\n\(output)"
        )
        let lines = output.split(separator: "\n").map(String.init)
        let expected = [
            onTwoNodes ? "OK relay started: two nodes on one PostgreSQL database" : "OK relay started",
            "OK credentials refused: another secret", "OK credentials refused: an altered signature",
            "OK credentials refused: alg none", "OK credentials refused: an HS512 header over an HS256 signature",
            "OK credentials refused: a genuine HS512 token", "OK credentials refused: no exp",
            "OK credentials refused: an expired exp", "OK credentials refused: a sub for another user",
            "OK credentials refused: a malformed token", "OK credentials refused: three garbage segments",
            "OK credentials: every refusal reads 'notLoggedIn: the credentials were refused'",
            "OK credentials: a good HS256 token logs in",
            "OK login alice/desk and bob/phone with stream_resume",
            "OK membership: alice and bob joined g",
            "OK bob/phone caught up at position P=",
            "OK alice sent bob a-1..a-3",
            "OK alice reacted to g-2",
            "OK relay killed with SIGKILL the moment the edit was acknowledged",
            onTwoNodes
                ? "OK relay nodes: node B took over routing on its port" : "OK relay restarted on the same data dir",
            "OK after the restart alice sent a-4",
            "OK bob/phone resumed from P=",
            "OK bob/laptop (new device, position 0) read the whole stream",
            "OK bob/phone and bob/laptop both online (no kicked_offline)",
            "OK alice's a-live reached bob/phone and bob/laptop live",
            "OK bob/phone's b-2 reached bob/laptop live with direction SENT",
            "OK a new login on device phone kicked the older bob/phone (LOGGED_IN_ELSEWHERE)",
            "OK bob/laptop and the new bob/phone stay online",
            "OK the new bob/phone login (stream_position 0) resumes from its stream_ack P=",
        ]
        // Every step, in order.
        var remaining = lines[...]
        for step in expected {
            let found = remaining.firstIndex { $0.hasPrefix(step) }
            #expect(found != nil, "missing \"\(step)\" in:\n\(output)")
            if let found { remaining = remaining[(found + 1)...] }
        }
        #expect(!lines.contains { $0.hasPrefix("FAIL") }, "\(output)")
        let okLines = lines.filter { $0.hasPrefix("OK ") }.count
        #expect(lines.last == "relay_resume_client: \(okLines) passed, 0 failed", "\(output)")
    }
}
#endif
