#if Tools
import Foundation
import IMCodec
import NIOCore
import NIOSSL
import Testing

@testable import imcodec_relay

/// TLS on both listeners (`--tls-cert`, `--tls-key`), with a certificate each test makes with the
/// `openssl` command (Debian's openssl; `Scripts/bootstrap` installs it): TLS clients log in and
/// talk over TCP and `wss://`; a client that does not speak TLS, or never finishes the handshake,
/// is dropped; a non-loopback address without TLS is refused; unusable TLS files stop `serve` with
/// a message naming them.
@Suite("Relay over TLS", .timeLimit(.minutes(3)))
struct RelayTLSTests {
    /// A self-signed certificate for `localhost` and 127.0.0.1 with its key, in a new folder.
    struct Certificate {
        let folder: URL
        var certificate: String { folder.appendingPathComponent("cert.pem").path }
        var key: String { folder.appendingPathComponent("key.pem").path }

        static func make() async throws -> Certificate {
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
                "imcodec-tls-\(UUID().uuidString)"
            )
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            let made = Certificate(folder: folder)
            let (status, output) = try await runProcess([
                "openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                "-keyout", made.key, "-out", made.certificate, "-days", "2", "-subj", "/CN=localhost",
                "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
            ])
            #expect(status == 0, "openssl could not make a certificate (install it with Scripts/bootstrap):\n\(output)")
            return made
        }

        /// A client context that trusts only this certificate.
        func clientContext() throws -> NIOSSLContext {
            var configuration = TLSConfiguration.makeClientConfiguration()
            configuration.trustRoots = .certificates(try NIOSSLCertificate.fromPEMFile(certificate))
            return try NIOSSLContext(configuration: configuration)
        }

        func remove() { try? FileManager.default.removeItem(at: folder) }
    }

    @Test func tlsClientsLogInAndTalkOverTCP() async throws {
        let certificate = try await Certificate.make()
        defer { certificate.remove() }
        let tls = try RelayTLS(certificateFile: certificate.certificate, keyFile: certificate.key)
        try await withClientGroup { group in
            try await withRelay({ $0.tls = tls }) { server in
                let context = try certificate.clientContext()
                let alice = try await TestClient.connect(port: server.port, as: "alice", group: group, tls: context)
                let bob = try await TestClient.connect(port: server.port, as: "bob", group: group, tls: context)
                try await alice.send(Frame(Message.c2cText(from: "alice", to: "bob", "over TLS", clientMsgID: "t-1")))
                #expect(await eventually { alice.collector.acks.count == 1 && bob.collector.messages.count == 1 })
                #expect(alice.collector.acks.first?.errorCode == 0)
                #expect(bob.collector.messages.first?.firstText == "over TLS")
                await alice.close()
                await bob.close()
            }
        }
    }

    @Test func tlsClientsLogInOverSecureWebSocket() async throws {
        let certificate = try await Certificate.make()
        defer { certificate.remove() }
        let tls = try RelayTLS(certificateFile: certificate.certificate, keyFile: certificate.key)
        try await withClientGroup { group in
            try await withRelay({
                $0.tls = tls; $0.webSocketPort = 0
            }) { server in
                let carol = try await TestClient.connect(
                    port: server.port,
                    as: "carol",
                    group: group,
                    tls: try certificate.clientContext()
                )
                let alice = try await RawWebSocketClient.connect(
                    to: server,
                    group: group,
                    tls: try certificate.clientContext()
                )
                try await alice.login("alice")
                try await alice.send(Frame(Message.c2cText(from: "alice", to: "carol", "over wss", clientMsgID: "w-1")))
                #expect(await eventually { carol.collector.messages.count == 1 })
                #expect(carol.collector.messages.first?.firstText == "over wss")
                await alice.close()
                await carol.close()
            }
        }
    }

    @Test func aClientThatDoesNotSpeakTLSIsDropped() async throws {
        let certificate = try await Certificate.make()
        defer { certificate.remove() }
        let tls = try RelayTLS(certificateFile: certificate.certificate, keyFile: certificate.key)
        try await withClientGroup { group in
            try await withRelay({ $0.tls = tls }) { server in
                // A login frame in the clear is not a TLS ClientHello: the handshake fails and the
                // relay closes the connection without answering.
                let plain = try await TestClient.connect(port: server.port, as: nil, group: group)
                try await plain.send(try await TestAuth.login("mallory"))
                #expect(await eventually { !plain.channel.isActive }, "the relay kept a client that does not speak TLS")
                #expect(plain.collector.loginResults.isEmpty)
            }
        }
    }

    @Test func aClientThatNeverFinishesTheHandshakeIsClosedOnTheLoginTimeout() async throws {
        let certificate = try await Certificate.make()
        defer { certificate.remove() }
        let tls = try RelayTLS(certificateFile: certificate.certificate, keyFile: certificate.key)
        try await withClientGroup { group in
            try await withRelay({
                $0.tls = tls; $0.loginTimeout = .milliseconds(300); $0.webSocketPort = 0
            }) { server in
                // Connected, silent: no ClientHello, so no login either.
                let silent = try await TestClient.connect(port: server.port, as: nil, group: group)
                let silentWebSocket = try await RawWebSocketClient.connectRaw(to: server, group: group)
                #expect(await eventually { !silent.channel.isActive }, "a silent TLS connection stayed open")
                #expect(await silentWebSocket.closedByPeer(within: 10), "a silent wss connection stayed open")
            }
        }
    }

    @Test func aNonLoopbackAddressNeedsTLSOrTheInsecureFlag() async throws {
        let certificate = try await Certificate.make()
        defer { certificate.remove() }
        var configuration = RelayConfiguration()
        configuration.host = "0.0.0.0"
        #expect(throws: IMCodecError.self) { try RelayServer.checkTransport(configuration) }
        configuration.tls = try RelayTLS(certificateFile: certificate.certificate, keyFile: certificate.key)
        try RelayServer.checkTransport(configuration)
        configuration.tls = nil
        configuration.allowsPlaintextOffLoopback = true
        try RelayServer.checkTransport(configuration)
        configuration.host = "127.0.0.1"
        configuration.allowsPlaintextOffLoopback = false
        try RelayServer.checkTransport(configuration)

        // The command refuses before it binds anything: a usage error, exit status 2.
        let relay = try #require(RelayExecutable.url, "the imcodec-relay executable was not built next to the tests")
        let (status, output) = try await runProcess([
            "timeout", "20", relay.path, "serve", "--host", "0.0.0.0", "--store", "memory",
        ])
        #expect(status == 2, "\(output)")
        #expect(output.contains("--tls-cert") && output.contains("--insecure-no-tls"), "\(output)")
    }

    @Test func unusableTLSFilesStopServeWithAMessageNamingThem() async throws {
        let certificate = try await Certificate.make()
        defer { certificate.remove() }
        let other = try await Certificate.make()
        defer { other.remove() }
        let relay = try #require(RelayExecutable.url, "the imcodec-relay executable was not built next to the tests")
        let missing = certificate.folder.appendingPathComponent("missing.pem").path
        let cases: [(cert: String, key: String, named: String)] = [
            (missing, certificate.key, missing),
            (certificate.certificate, missing, missing),
            (certificate.key, certificate.key, certificate.key),  // a key where the certificate should be
            (certificate.certificate, other.key, other.key),  // the key of another certificate
        ]
        for (cert, key, named) in cases {
            // Under `timeout`: a relay that started anyway would be stopped (status 124), not wait forever.
            let (status, output) = try await runProcess([
                "timeout", "20", relay.path, "serve", "--port", "0", "--store", "memory", "--data-dir",
                certificate.folder.path,
                "--tls-cert", cert, "--tls-key", key,
            ])
            #expect(status == 1, "\(output)")
            #expect(output.contains("imcodec-relay: ") && output.contains(named), "\(output)")
            #expect(!output.contains("relay listening"), "\(output)")
        }
    }
}
#endif
