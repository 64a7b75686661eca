#if Tools
import Foundation
import IMCodec
import IMCodecNIO
import IMCodecTestSupport
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Testing

@testable import imcodec_relay

/// Issue 20 item 4: `--metrics-port` (Prometheus text format through swift-metrics and
/// swift-prometheus) and the relay's logs through swift-log.
@Suite("Relay metrics and logs", .timeLimit(.minutes(2)))
struct RelayMetricsTests {
    // One scenario, read top to bottom: kept as one function (over 80 lines).
    /// A scripted session on TCP and WebSocket, then one scrape: every counter has the exact value
    /// the session implies, and the commit histogram has one observation per store commit.
    @Test func aScrapeCountsExactlyWhatTheSessionDid() async throws {
        try await withClientGroup { group in
            try await withRelay({
                $0.webSocketPort = 0
                $0.metricsPort = 0
                $0.groups = ["team": ["alice", "bob"]]
            }) { server in
                let metricsPort = try #require(server.metricsPort)
                let alice = try await TestClient.connect(to: server, as: "alice", group: group, deviceID: "phone")
                let bob = try await TestClient.connect(to: server, as: "bob", group: group, deviceID: "laptop")

                // A login with a token the relay did not sign: refused (2004) and closed.
                let mallory = try await RawClient.connect(to: server, group: group)
                try await mallory.write(frame: RelayProtocol.loginFrame("mallory", token: "not.a.jwt", deviceID: "x"))
                #expect(await mallory.closedByPeer(within: 10))
                #expect(mallory.collector.errorCode == "notLoggedIn")

                // Three messages acknowledged (two one-to-one, one to the group), one refused (1001).
                try await alice.send(Frame(Message.c2cText(from: "alice", to: "bob", "one", clientMsgID: "a-1")))
                try await alice.send(Frame(Message.c2cText(from: "alice", to: "bob", "two", clientMsgID: "a-2")))
                try await alice.send(Frame(Message.groupText(from: "alice", group: "team", "all", clientMsgID: "a-3")))
                try await alice.send(Frame(Message.c2cText(from: "bob", to: "alice", "forged", clientMsgID: "a-4")))
                #expect(await eventually { alice.collector.acks.count == 4 && bob.collector.messages.count == 3 })
                #expect(alice.collector.acks.map(\.errorCode) == [0, 0, 0, RelayProtocol.AckError.senderMismatch])

                // A sync request, answered.
                let sync = RelayProtocol.answer(
                    .syncRequest(
                        SyncRequest.with {
                            $0.conversation = .oneToOne("alice")
                            $0.fromSeq = 1
                        }
                    ),
                    requestID: 21
                )
                let synced = try await bob.ask(sync)
                guard case .syncResponse(let response)? = synced?.payload else {
                    Issue.record("no sync_response: \(String(describing: synced))")
                    return
                }
                #expect(response.messages.count == 2)

                // A WebSocket client logs in and pings.
                let carol = try await RawWebSocketClient.connect(to: server, group: group)
                try await carol.login("carol")
                try await carol.send(RelayProtocol.answer(.ping(Ping.with { $0.id = 9 }), requestID: 9))
                #expect(await eventually { carol.messages.contains { $0.payload?.kind == .pong } })
                try await alice.roundTrip(31)
                try await bob.roundTrip(32)
                // The refused connection is gone on the relay's side too.
                #expect(await eventually { (try? server.stats().wait().connectionsOpen) == 3 })

                let before = try await server.stats().get()
                let scrape = try await httpGet(port: metricsPort, path: "/metrics", group: group)
                let after = try await server.stats().get()
                #expect(scrape.head.hasPrefix("HTTP/1.1 200"), "\(scrape.head)")
                #expect(scrape.head.lowercased().contains("content-type: text/plain; version=0.0.4"), "\(scrape.head)")
                let metrics = try PrometheusText(scrape.body)

                let expected: [String: Double] = [
                    #"imcodec_relay_connections_total{transport="tcp"}"#: 3,
                    #"imcodec_relay_connections_total{transport="websocket"}"#: 1,
                    #"imcodec_relay_connections_open{transport="tcp"}"#: 2,
                    #"imcodec_relay_connections_open{transport="websocket"}"#: 1,
                    #"imcodec_relay_users_online"#: 3,
                    #"imcodec_relay_logins_total{transport="tcp"}"#: 2,
                    #"imcodec_relay_logins_total{transport="websocket"}"#: 1,
                    #"imcodec_relay_logins_failed_total{error_code="2004"}"#: 1,
                    #"imcodec_relay_connections_closed_by_error_total{code="notLoggedIn"}"#: 1,
                    // In: three logins, four messages, a sync request, two pings on TCP; a login
                    // and a ping on WebSocket.
                    #"imcodec_relay_frames_in_total{kind="login_request",transport="tcp"}"#: 3,
                    #"imcodec_relay_frames_in_total{kind="message",transport="tcp"}"#: 4,
                    #"imcodec_relay_frames_in_total{kind="sync_request",transport="tcp"}"#: 1,
                    #"imcodec_relay_frames_in_total{kind="ping",transport="tcp"}"#: 2,
                    #"imcodec_relay_frames_in_total{kind="login_request",transport="websocket"}"#: 1,
                    #"imcodec_relay_frames_in_total{kind="ping",transport="websocket"}"#: 1,
                    // Out: three login results (one refused), four acks, three messages to bob, a
                    // sync response, two pongs on TCP; a login result and a pong on WebSocket.
                    #"imcodec_relay_frames_out_total{kind="login_result",transport="tcp"}"#: 3,
                    #"imcodec_relay_frames_out_total{kind="send_ack",transport="tcp"}"#: 4,
                    #"imcodec_relay_frames_out_total{kind="message",transport="tcp"}"#: 3,
                    #"imcodec_relay_frames_out_total{kind="sync_response",transport="tcp"}"#: 1,
                    #"imcodec_relay_frames_out_total{kind="pong",transport="tcp"}"#: 2,
                    #"imcodec_relay_frames_out_total{kind="login_result",transport="websocket"}"#: 1,
                    #"imcodec_relay_frames_out_total{kind="pong",transport="websocket"}"#: 1,
                    #"imcodec_relay_acks_total{error_code="0"}"#: 3,
                    #"imcodec_relay_acks_total{error_code="1001"}"#: 1,
                    #"imcodec_relay_sync_requests_total{kind="sync_request"}"#: 1,
                    #"imcodec_relay_slow_consumers_total{transport="tcp"}"#: 0,
                    #"imcodec_relay_slow_consumers_total{transport="websocket"}"#: 0,
                ]
                for (series, value) in expected.sorted(by: { $0.key < $1.key }) {
                    #expect(metrics.samples[series] == value, "\(series)")
                }
                // Nothing else was counted: every series of these families is listed above.
                for family in ["frames_in_total", "frames_out_total", "acks_total", "logins_failed_total"] {
                    let listed = Set(expected.keys.filter { $0.hasPrefix("imcodec_relay_\(family){") })
                    let scraped = Set(metrics.samples.keys.filter { $0.hasPrefix("imcodec_relay_\(family){") })
                    #expect(scraped == listed, "\(family)")
                }
                #expect(metrics.types["imcodec_relay_frames_in_total"] == "counter")
                #expect(metrics.types["imcodec_relay_connections_open"] == "gauge")
                #expect(metrics.types["imcodec_relay_store_commit_duration_seconds"] == "histogram")

                // One observation per commit (the groups file's memberships and the messages).
                #expect(before.storeCommits == after.storeCommits && before.storeCommits > 0)
                let commits = metrics.samples["imcodec_relay_store_commit_duration_seconds_count"]
                #expect(commits == Double(after.storeCommits))
                #expect(metrics.samples[#"imcodec_relay_store_commit_duration_seconds_bucket{le="+Inf"}"#] == commits)
                // The relay's own counters agree.
                #expect(after.logins == 3 && after.loginsRefused == 1 && after.acksSent == 4)
                #expect(after.messagesRouted == 3 && after.framesForwarded == 3)

                for client in [alice, bob] { await client.close() }
                await carol.close()
            }
        }
    }

    /// Only `/metrics` is served: another path is 404, another method 405.
    @Test func otherPathsAre404() async throws {
        try await withClientGroup { group in
            try await withRelay({ $0.metricsPort = 0 }) { server in
                let port = try #require(server.metricsPort)
                let other = try await httpGet(port: port, path: "/", group: group)
                #expect(other.head.hasPrefix("HTTP/1.1 404"), "\(other.head)")
                let near = try await httpGet(port: port, path: "/metrics/x", group: group)
                #expect(near.head.hasPrefix("HTTP/1.1 404"), "\(near.head)")
                let post = try await httpGet(port: port, path: "/metrics", method: "POST", group: group)
                #expect(post.head.hasPrefix("HTTP/1.1 405"), "\(post.head)")
                let query = try await httpGet(port: port, path: "/metrics?name=x", group: group)
                #expect(query.head.hasPrefix("HTTP/1.1 200"), "\(query.head)")
            }
        }
    }

    /// Without a metrics port there is no metrics listener.
    @Test func noMetricsPortNoListener() async throws {
        try await withRelay { server in
            #expect(server.metricsPort == nil)
        }
    }

    /// Two relays in one process count apart: each owns its registry.
    @Test func relaysInOneProcessCountApart() async throws {
        try await withClientGroup { group in
            try await withRelay({ $0.metricsPort = 0 }) { first in
                try await withRelay({ $0.metricsPort = 0 }) { second in
                    let client = try await TestClient.connect(to: first, as: "alice", group: group)
                    let one = try PrometheusText(
                        try await httpGet(port: first.metricsPort!, path: "/metrics", group: group).body
                    )
                    let two = try PrometheusText(
                        try await httpGet(port: second.metricsPort!, path: "/metrics", group: group).body
                    )
                    #expect(one.samples[#"imcodec_relay_logins_total{transport="tcp"}"#] == 1)
                    #expect(two.samples[#"imcodec_relay_logins_total{transport="tcp"}"#] == 0)
                    await client.close()
                }
            }
        }
    }

    /// The relay logs through swift-log: connections and logins at info, nothing of them at warning.
    @Test(arguments: [Logger.Level.info, .warning])
    func connectionsAndLoginsAreLoggedAtInfo(level: Logger.Level) async throws {
        let lines = NIOLockedValueBox<[String]>([])
        var logger = Logger(label: "imcodec-relay") { label in
            RelayLogHandler(label: label) { line in lines.withLockedValue { $0.append(line) } }
        }
        logger.logLevel = level
        try await withClientGroup { group in
            try await withRelay({ $0.logger = logger }) { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group, deviceID: "phone")
                try await alice.roundTrip(1)
                await alice.close()
                _ = await eventually { (try? server.stats().wait().connectionsOpen) == 0 }
            }
        }
        let logged = lines.withLockedValue { $0 }
        if level == .info {
            #expect(logged.contains { $0.hasPrefix("relay: accepted ?@127.0.0.1:") }, "\(logged)")
            #expect(
                logged.contains { $0.hasPrefix("relay: alice/phone@127.0.0.1:") && $0.contains(" logged in (") },
                "\(logged)"
            )
            #expect(logged.contains { $0.hasPrefix("relay: closed alice/phone@127.0.0.1:") }, "\(logged)")
        } else {
            #expect(logged.isEmpty, "\(logged)")
        }
    }

    /// `relay: LEVEL: ` before the message but for info and notice; metadata last, sorted.
    @Test func theLogLineFormat() {
        func line(_ level: Logger.Level, _ metadata: Logger.Metadata? = nil) -> String {
            RelayLogHandler.format(
                LogEvent(
                    level: level,
                    message: "hello",
                    metadata: metadata,
                    source: "s",
                    file: "f",
                    function: "g",
                    line: 1
                ),
                metadata: [:],
                provider: nil
            )
        }
        #expect(line(.info) == "relay: hello")
        #expect(line(.notice) == "relay: hello")
        #expect(line(.warning) == "relay: warning: hello")
        #expect(line(.debug, ["b": "2", "a": "1"]) == "relay: debug: hello a=1 b=2")
    }

    /// The relay executable prints where its metrics are, next to its other startup lines, serves
    /// them, and still stops on SIGTERM with `relay stopped`.
    @Test func serveMetricsPortPrintsItsAddress() async throws {
        let executable = try #require(
            RelayExecutable.url,
            "the imcodec-relay executable was not built next to the tests"
        )
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("relay-metrics-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let out = folder.appendingPathComponent("relay.out")
        let err = folder.appendingPathComponent("relay.err")
        _ = FileManager.default.createFile(atPath: out.path, contents: nil)
        let process = try ChildProcess(
            executable.path,
            [
                "serve", "--port", "0", "--metrics-port", "0", "--store", "memory", "--data-dir",
                folder.path + "/data", "--log-level", "warning",
            ],
            output: out.path,
            error: err.path
        )
        defer {
            process.signal(SIGKILL)
            process.waitUntilExit()
        }
        func stdout() -> String {
            ((try? String(contentsOf: out, encoding: .utf8)) ?? "")
                + ((try? String(contentsOf: err, encoding: .utf8)) ?? "")
        }
        let prefix = "relay metrics on http://127.0.0.1:"
        let started = await eventually(30) { stdout().contains(prefix) || !process.isRunning }
        #expect(started && process.isRunning, "\(stdout())")
        let lines = stdout().split(separator: "\n").map(String.init)
        let listening = lines.firstIndex { $0.hasPrefix("relay listening on 127.0.0.1:") }
        let metricsLine = try #require(lines.first { $0.hasPrefix(prefix) }, "\(lines)")
        #expect(metricsLine.hasSuffix("/metrics"))
        #expect(listening != nil && listening! < lines.firstIndex(of: metricsLine)!, "\(lines)")
        let port = try #require(Int(metricsLine.dropFirst(prefix.count).prefix { $0.isNumber }))
        try await withClientGroup { group in
            let scrape = try await httpGet(port: port, path: "/metrics", group: group)
            #expect(scrape.head.hasPrefix("HTTP/1.1 200"), "\(scrape.head)")
            let metrics = try PrometheusText(scrape.body)
            #expect(metrics.samples[#"imcodec_relay_connections_total{transport="tcp"}"#] == 0)
        }
        process.signal(SIGTERM)
        #expect(await eventually(20) { !process.isRunning })
        #expect(process.termination == .exited(0))
        #expect(stdout().contains("relay stopped"), "\(stdout())")
    }

    /// `serve --log-level` takes swift-log's levels only.
    @Test func aBadLogLevelIsAUsageError() async throws {
        let result = try await RelayExecutable.run(["serve", "--log-level", "loud", "--port", "0", "--store", "memory"])
        #expect(result.status == 2)
        #expect(result.stderr.contains("--log-level"), "\(result.stderr)")
    }
}

/// A response read to the end of its connection: the head and the body, as text.
struct HTTPText {
    let head: String
    let body: String
}

/// `METHOD path HTTP/1.1` to 127.0.0.1:`port` with `Connection: close`; the whole response.
func httpGet(port: Int, path: String, method: String = "GET", group: any EventLoopGroup) async throws -> HTTPText {
    let collector = ByteCollector()
    let channel = try await ClientBootstrap(group: group)
        .channelInitializer { channel in
            channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(collector) }
        }
        .connect(host: "127.0.0.1", port: port).get()
    var request = ByteBuffer()
    request.writeString("\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n\r\n")
    try await channel.writeAndFlush(request).get()
    let closed = await eventually { !channel.isActive }
    #expect(closed, "the metrics server did not close the connection")
    let text = String(decoding: collector.bytes, as: UTF8.self)
    guard let split = text.range(of: "\r\n\r\n") else { return HTTPText(head: text, body: "") }
    return HTTPText(head: String(text[..<split.lowerBound]), body: String(text[split.upperBound...]))
}

/// The samples and types of a Prometheus text exposition (version 0.0.4).
struct PrometheusText {
    /// Each sample's series (`name{label="value",...}`, as written) and value.
    var samples: [String: Double] = [:]
    /// Each family's `# TYPE`.
    var types: [String: String] = [:]

    struct Malformed: Error, CustomStringConvertible {
        let description: String
    }

    init(_ text: String) throws {
        for line in text.split(separator: "\n") {
            if line.hasPrefix("# TYPE ") {
                let words = line.split(separator: " ")
                if words.count == 4 { types[String(words[2])] = String(words[3]) }
                continue
            }
            if line.hasPrefix("#") { continue }
            guard let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...]) else {
                throw Malformed(description: "not a sample: \(line)")
            }
            samples[String(line[..<space])] = value
        }
    }
}
#endif
