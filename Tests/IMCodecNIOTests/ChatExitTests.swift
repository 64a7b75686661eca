#if Tools
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import IMCodec
import NIOCore
import NIOPosix
import Testing

@testable import imcodec_relay

/// `imcodec-relay chat` as a user runs it: its exit status and what it prints when things fail.
@Suite("imcodec-relay chat: exit status and errors")
struct ChatExitTests {
    @Test("chat --send exits 1 when the relay refuses the send, 0 when it accepts it")
    func refusedSendExitsNonZero() async throws {
        try await withRelay({ $0.groups = ["team": ["alice"]] }) { server in
            let port = String(server.port)
            // chat mints its token from the relay's secret file.
            let secretFile = "/tmp/imcodec-chat-secret-\(getpid())-\(port)"
            try writeFile(secretFile, TestAuth.secret + "\n")
            defer { unlink(secretFile) }
            let refused = try await RelayExecutable.run(
                [
                    "chat", "--port", port, "--user", "alice", "--auth-secret-file", secretFile, "--send", "#ops hello",
                    "--linger", "0",
                ])
            #expect(refused.status == 1, "\(refused.stdout)\(refused.stderr)")
            #expect(refused.stdout.contains("✗ not sent to #ops: error 1003"), "\(refused.stdout)")
            #expect(refused.stderr == "imcodec-relay: the relay refused 1 of the messages sent\n")

            let accepted = try await RelayExecutable.run(
                [
                    "chat", "--port", port, "--user", "alice", "--auth-secret-file", secretFile, "--send",
                    "#team hello",
                    "--linger", "0",
                ])
            #expect(accepted.status == 0, "\(accepted.stdout)\(accepted.stderr)")
            #expect(accepted.stdout.contains("✓ sent to #team"), "\(accepted.stdout)")
            #expect(accepted.stderr.isEmpty)
        }
    }

    @Test("--version names the release and the schema; a usage error exits 2, as imcodec's do")
    func versionAndUsageErrors() async throws {
        let version = try await RelayExecutable.run(["--version"])
        #expect(version.status == 0)
        #expect(version.stdout.hasPrefix("imcodec-relay \(IMCodecRelease.version) (IMCodec"), "\(version.stdout)")
        #expect(version.stdout.contains("schema_version \(IMCodecRelease.schemaVersion)"))
        let unknown = try await RelayExecutable.run(["serve", "--no-such-option"])
        #expect(unknown.status == 2, "\(unknown.stderr)")
        #expect(unknown.stderr.contains("--no-such-option"))
        let invalid = try await RelayExecutable.run(["serve", "--store", "tape"])
        #expect(
            invalid.status == 2
                && invalid.stderr.contains("--store is sqlite, memory or postgresql://USER[:PASSWORD]@HOST[:PORT]/DB"),
            "\(invalid.stderr)"
        )
        // A rate whose burst would overflow is a usage error, not a trap at the first message.
        for option in [
            "--fan-out-rate", "--live-update-rate", "--key-fetch-rate", "--join-rate", "--login-rate", "--peer-rate",
        ] {
            let rate = try await RelayExecutable.run(["serve", option, "1000000001"])
            #expect(rate.status == 2 && rate.stderr.contains("\(option) is between 0 and 1000000000"), "\(rate.stderr)")
        }
    }

    @Test("with no relay listening, chat prints one line, cannot connect ... connection refused, and exits 1")
    func refusedConnectionIsOneLine() async throws {
        // A port that was just free: bind an ephemeral port, then close it.
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let listener = try await ServerBootstrap(group: group).bind(host: "127.0.0.1", port: 0).get()
        let port = try #require(listener.localAddress?.port)
        try await listener.close()
        try await group.shutdownGracefully()

        let result = try await RelayExecutable.run(
            ["chat", "--port", String(port), "--user", "alice", "--token", "unused", "--linger", "0"])
        #expect(result.status == 1)
        #expect(result.stdout.isEmpty, "\(result.stdout)")
        #expect(result.stderr == "imcodec-relay: cannot connect to 127.0.0.1:\(port): connection refused\n")
    }

    @Test("ChatClient.connectFailure names the address and the system's reason")
    func connectFailureLine() {
        let refused = IOError(errnoCode: ECONNREFUSED, reason: "connect")
        #expect(
            ChatClient.connectFailure(refused, host: "127.0.0.1", port: 7070)
                == "cannot connect to 127.0.0.1:7070: connection refused"
        )
        #expect(
            ChatClient.connectFailure(ChannelError.connectTimeout(.seconds(1)), host: "127.0.0.1", port: 1)
                == "cannot connect to 127.0.0.1:1: timed out"
        )
    }
}
#endif
