#if Tools
import Foundation
import IMCodec
import IMCodecNIO
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Testing

@testable import imcodec_relay

/// The relay's WebSocket listener (`serve --websocket-port`): an independent Python client, the
/// WebSocket rules (fragments, ping, close handshake, masking, plain HTTP), and faults that close
/// only the faulty client while the others lose nothing.
@Suite("Relay over WebSocket", .timeLimit(.minutes(3)))
struct WebSocketRelayTests {
    /// Starts a relay with a WebSocket port too.
    private func withWebSocketRelay<R>(
        _ configure: (inout RelayConfiguration) -> Void = { _ in },
        _ body: (RelayServer) async throws -> R
    ) async throws -> R {
        try await withRelay(
            { configuration in
                configuration.webSocketPort = 0
                configure(&configuration)
            },
            body
        )
    }

    /// Scripts/ws_client.py (Python's `websockets` and Google's protobuf, installed by Scripts/bootstrap)
    /// logs alice and bob in over WebSocket (login_request → login_result), both join a group
    /// (membership → request_result, alice sees bob join), alice pings (pong with the same id);
    /// alice sends bob a text, gets the ack, bob gets the delivery,
    /// sends a read receipt, alice recalls; then alice talks with carol, a Swift client on the TCP port.
    @Test func anIndependentPythonClientSpeaksTheProtocol() async throws {
        try await withClientGroup { group in
            try await withWebSocketRelay { server in
                let carol = try await TestClient.connect(to: server, as: "carol", group: group)
                let wsPort = try #require(server.webSocketPort)
                // carol answers alice's first message with a text of her own.
                let answered = Task {
                    let got = await eventually(60) { carol.collector.messages.contains { $0.senderID == "alice" } }
                    guard got else { return false }
                    try await carol.send(
                        Frame(
                            Message.c2cText(
                                from: "carol",
                                to: "alice",
                                "hi alice, from TCP",
                                clientMsgID: "tcp-1"
                            )
                        )
                    )
                    return true
                }
                // The Python client mints its own tokens (HS256, standard library) from the relay's secret.
                let secretFile = FileManager.default.temporaryDirectory
                    .appendingPathComponent("imcodec-ws-secret-\(UUID().uuidString)")
                try Data((TestAuth.secret + "\n").utf8).write(to: secretFile)
                defer { try? FileManager.default.removeItem(at: secretFile) }
                let (status, output) = try await runProcess(
                    [
                        "timeout", "120", "python3", "Scripts/ws_client.py", "--port", "\(wsPort)", "--tcp-peer",
                        "carol",
                        "--auth-secret-file", secretFile.path,
                    ],
                    environment: ["PYTHONDONTWRITEBYTECODE": "1"]
                )
                let carolAnswered = try await answered.value
                let lines = output.split(separator: "\n").map(String.init)
                #expect(
                    status == 0,
                    "Scripts/ws_client.py failed (install its packages with Scripts/bootstrap):\n\(output)"
                )
                let expected = [
                    "OK login alice session=", "OK login bob session=", "OK join alice #pyteam", "OK join bob #pyteam",
                    "OK membership alice saw bob join #pyteam", "OK heartbeat alice pong id=7",
                    "OK ack py-1 seq=1 uid=",
                    "OK delivery bob text='hello bob, from Python 🐍' seq=1 uid=", "OK receipt alice from=bob uid=",
                    "OK recall bob uid=", "OK pong alice", "OK ack py-2 seq=1 uid=",
                    "OK answer alice from=carol text='hi alice, from TCP' seq=2", "OK close alice code=1000",
                    "OK close bob code=1000", "OK done",
                ]
                // Every step, in order.
                var remaining = lines[...]
                for step in expected {
                    let found = remaining.firstIndex { $0.hasPrefix(step) }
                    #expect(found != nil, "missing \"\(step)\" in:\n\(output)")
                    if let found { remaining = remaining[(found + 1)...] }
                }
                // The uid alice's ack carried is the one bob's delivery, receipt and recall name.
                let uid = lines.first { $0.hasPrefix("OK ack py-1") }?.components(separatedBy: "uid=").last
                #expect(uid != nil && uid != "")
                for prefix in ["OK delivery bob", "OK receipt alice", "OK recall bob"] {
                    #expect(lines.first { $0.hasPrefix(prefix) }?.hasSuffix("uid=\(uid ?? "?")") == true, "\(prefix)")
                }
                // carol (TCP) got alice's (WebSocket) text, stamped with the uid of alice's ack.
                #expect(carolAnswered)
                let fromAlice = carol.collector.messages.filter { $0.senderID == "alice" }
                #expect(fromAlice.count == 1)
                #expect(fromAlice.first?.firstText == "hello carol over TCP")
                let uid2 = lines.first { $0.hasPrefix("OK ack py-2") }?.components(separatedBy: "uid=").last
                #expect(fromAlice.first?.serverMsgUID == uid2)
                #expect(carol.collector.acks.map(\.errorCode) == [0])
                let stats = try await server.stats().get()
                #expect(stats.closedByError.isEmpty, "\(stats.closedByError)")
                #expect(stats.messagesRouted == 3)
                await carol.close()
            }
        }
    }

    @Test func fragmentsPingsAndTheCloseHandshake() async throws {
        try await withClientGroup { group in
            try await withWebSocketRelay { server in
                let bob = try await TestClient.connect(to: server, as: "bob", group: group)
                let alice = try await RawWebSocketClient.connect(to: server, group: group)
                try await alice.login("alice")
                // A message in three fragments, with a ping between two of them, is one frame.
                let text = Frame(Message.c2cText(from: "alice", to: "bob", "in three pieces", clientMsgID: "f-1"))
                let bytes = text.serializedBytes()
                let third = bytes.count / 3
                try await alice.send(opcode: WSOpcode.binary, payload: Array(bytes[..<third]), fin: false)
                try await alice.send(
                    opcode: WSOpcode.continuation,
                    payload: Array(bytes[third..<2 * third]),
                    fin: false
                )
                try await alice.send(opcode: WSOpcode.ping, payload: Array("are you there".utf8))
                try await alice.send(opcode: WSOpcode.continuation, payload: Array(bytes[(2 * third)...]))
                #expect(await eventually { bob.collector.messages.count == 1 })
                #expect(bob.collector.messages.first?.firstText == "in three pieces")
                #expect(await eventually { alice.messages.contains { $0.payload?.kind == .sendAck } })
                let ack = alice.messages.compactMap { if case .sendAck(let a)? = $0.payload { a } else { nil } }.first
                #expect(ack?.clientMsgID == "f-1" && ack?.errorCode == 0)
                // The ping's pong carries its payload.
                let pongs = alice.frames.filter { $0.opcode == WSOpcode.pong }.map(\.payload)
                #expect(pongs == [Array("are you there".utf8)])
                // A message from a TCP client arrives as one binary message, without the length prefix.
                try await bob.send(Frame(Message.c2cText(from: "bob", to: "alice", "back", clientMsgID: "b-1")))
                #expect(await eventually { alice.chatMessages.count == 1 })
                #expect(alice.chatMessages.first?.firstText == "back")
                #expect(alice.chatMessages.first?.seq == 2)
                // The client closes with 1000 and a reason; the relay answers 1000 and closes the connection.
                try await alice.send(opcode: WSOpcode.close, payload: [0x03, 0xE8] + Array("bye".utf8))
                #expect(await alice.closedByPeer(within: 10))
                #expect(alice.closeCode == 1000)
                #expect(alice.frames.last?.opcode == WSOpcode.close)
                #expect(await eventually { (try? server.stats().wait().usersOnline) == 1 })
                let stats = try await server.stats().get()
                #expect(stats.closedByError.isEmpty, "\(stats.closedByError)")
                await bob.close()
            }
        }
    }

    /// A logout is answered, then the connection closes with 1000; a session replaced by a newer
    /// login of the same device gets kicked_offline and close code 1008. Neither counts as an error.
    @Test func logoutClosesWith1000AndAKickWith1008() async throws {
        try await withClientGroup { group in
            try await withWebSocketRelay { server in
                let leaving = try await RawWebSocketClient.connect(to: server, group: group)
                try await leaving.login("alice")
                try await leaving.send(RelayProtocol.answer(.logout(Logout()), requestID: 77))
                #expect(await leaving.closedByPeer(within: 10))
                #expect(leaving.messages.contains { $0.requestID == 77 && $0.payload?.kind == .requestResult })
                #expect(leaving.closeCode == 1000)

                let first = try await RawWebSocketClient.connect(to: server, group: group)
                try await first.login("bob")
                // The same device (no device id) logs in again, over TCP.
                let second = try await TestClient.connect(to: server, as: "bob", group: group)
                #expect(await first.closedByPeer(within: 10))
                #expect(first.messages.contains { $0.payload?.kind == .kickedOffline })
                #expect(first.closeCode == 1008)
                #expect(second.channel.isActive)
                let stats = try await server.stats().get()
                #expect(stats.closedByError.isEmpty, "\(stats.closedByError)")
                await second.close()
            }
        }
    }

    @Test func stoppingTheRelaySendsGoingAway() async throws {
        try await withClientGroup { group in
            var configuration = try await RelayConfiguration.forTests()
            configuration.webSocketPort = 0
            let server = try await RelayServer.start(configuration).get()
            let client: RawWebSocketClient
            do {
                client = try await RawWebSocketClient.connect(to: server, group: group)
                try await client.login("alice")
            } catch {
                try? await server.shutdown()
                throw error
            }
            try await server.shutdown()
            #expect(await client.closedByPeer(within: 10))
            #expect(client.closeCode == 1001)
        }
    }

    @Test func serveParsesTheWebSocketPort() throws {
        let serve = try RelayCommand.Serve.parse(["--port", "7070", "--websocket-port", "7071"])
        #expect(serve.websocketPort == 7071 && serve.port == 7070)
        #expect(try RelayCommand.Serve.parse([]).websocketPort == nil)
        #expect(throws: (any Error).self) {
            try RelayCommand.Serve.parse(["--port", "7070", "--websocket-port", "7070"])
        }
    }

    /// A connection that never completes the upgrade (silent, or stuck inside its request) is closed
    /// after the login timeout.
    @Test func anUnfinishedUpgradeIsClosedAtTheLoginTimeout() async throws {
        try await withClientGroup { group in
            try await withWebSocketRelay({ $0.loginTimeout = .milliseconds(300) }) { server in
                let silent = try await RawWebSocketClient.connectRaw(to: server, group: group)
                let partial = try await RawWebSocketClient.connectRaw(to: server, group: group)
                do {
                    try await partial.write(Array("GET / HTTP/1.1\r\nUpgrade: websocket\r\n".utf8))
                } catch ChannelError.ioOnClosedChannel {
                    // On a slow machine the login timeout may close it first: unfinished either way.
                }
                #expect(await silent.closedByPeer(within: 10))
                #expect(await partial.closedByPeer(within: 10))
                #expect(silent.collector.bytes.isEmpty && partial.collector.bytes.isEmpty)
                let stats = try await server.stats().get()
                #expect(stats.connectionsAccepted == 0, "no session is opened before the upgrade")
            }
        }
    }

    @Test func plainHTTPAndUnmaskedFramesAreRefused() async throws {
        try await withClientGroup { group in
            try await withWebSocketRelay { server in
                // A request without an upgrade gets 426 and is closed.
                let http = try await RawWebSocketClient.connectRaw(to: server, group: group)
                try await http.write(Array("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".utf8))
                #expect(await http.closedByPeer(within: 10))
                #expect(http.responseHead?.hasPrefix("HTTP/1.1 426") == true, "\(http.responseHead ?? "")")
                // A client frame without a mask breaks RFC 6455: close 1002.
                let unmasked = try await RawWebSocketClient.connect(to: server, group: group)
                try await unmasked.send(try await TestAuth.login("mallory"))
                #expect(await eventually { unmasked.messages.count == 1 })
                try await unmasked.send(opcode: WSOpcode.binary, payload: [0x08, 0x01], masked: false)
                #expect(await unmasked.closedByPeer(within: 10))
                #expect(unmasked.closeCode == 1002)
                #expect(unmasked.errorCode == "protocolError")
                let stats = try await server.stats().get()
                #expect(stats.closedByError == ["protocolError": 1])
            }
        }
    }

    /// A client that stalls inside a frame, or between the fragments of a message (pinging meanwhile),
    /// is closed with frameTimeout (close code 1008); a client idle between messages is not.
    @Test func aMessageLeftIncompleteTimesOut() async throws {
        try await withClientGroup { group in
            try await withWebSocketRelay({ $0.maxFrameWait = .milliseconds(300) }) { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group)
                let bob = try await RawWebSocketClient.connect(to: server, group: group)
                try await bob.login("bob")
                let body = Frame(Message.c2cText(from: "carol", to: "bob", "never finished")).serializedBytes()
                // Inside a frame: the header and half the payload.
                let insideFrame = try await RawWebSocketClient.connect(to: server, group: group)
                try await insideFrame.login("carol")
                let whole = webSocketFrameBytes(opcode: WSOpcode.binary, payload: body)
                try await insideFrame.write(Array(whole.prefix(whole.count / 2)))
                // Between fragments, with pings that do not stop the clock.
                let betweenFragments = try await RawWebSocketClient.connect(to: server, group: group)
                try await betweenFragments.login("dave")
                try await betweenFragments.send(opcode: WSOpcode.binary, payload: Array(body.prefix(4)), fin: false)
                // The relay may already have closed the connection for frameTimeout (what this
                // checks) before a ping is written, on a slow run (ThreadSanitizer, a loaded
                // machine): a ping that finds it closed is fine; the close code below is checked.
                for i in 0..<3 { try? await betweenFragments.send(opcode: WSOpcode.ping, payload: [UInt8(i)]) }
                for client in [insideFrame, betweenFragments] {
                    #expect(await client.closedByPeer(within: 10))
                    #expect(client.closeCode == 1008)
                    #expect(client.errorCode == "frameTimeout")
                }
                // bob, idle since his login, is still connected and gets what alice sends.
                try await alice.send(Frame(Message.c2cText(from: "alice", to: "bob", "still here", clientMsgID: "s")))
                #expect(await eventually { bob.chatMessages.count == 1 })
                #expect(bob.channel.isActive && bob.closeCode == nil)
                let stats = try await server.stats().get()
                #expect(stats.closedByError == ["frameTimeout": 2])
                await alice.close()
                await bob.close()
            }
        }
    }

    /// A WebSocket client that stops reading while a TCP client floods it is dropped as a slow
    /// consumer once its queue passes the outbound cap; the flooder gets every ack, and another
    /// WebSocket client keeps receiving. (The flood is one sender's: without `--peer-rate`, whose
    /// default would refuse it long before the cap, the check left is the one on the connection.)
    @Test func aWebSocketClientThatStopsReadingIsDroppedAsASlowConsumer() async throws {
        try await withClientGroup { group in
            try await withWebSocketRelay({
                $0.maxOutboundBytes = 512 << 10; $0.peerRate = 0
            }) { server in
                let sloth = try await RawWebSocketClient.connect(to: server, group: group, receiveBuffer: 4096)
                try await sloth.login("sloth")
                try await sloth.channel.setOption(.autoRead, value: false).get()
                let bystander = try await RawWebSocketClient.connect(to: server, group: group)
                try await bystander.login("bystander")
                let flooder = try await TestClient.connect(to: server, as: "flooder", group: group)
                let text = String(repeating: "z", count: 4000)
                let count = 3000
                for k in 0..<count {
                    let to = k % 100 == 0 ? "bystander" : "sloth"
                    let frame = Frame(Message.c2cText(from: "flooder", to: to, text, clientMsgID: "f-\(k)"))
                    if k % 100 == 99 {
                        try await flooder.channel.writeAndFlush(frame).get()
                    } else {
                        flooder.channel.write(frame, promise: nil)
                    }
                }
                let dropped = await eventually(30) {
                    (try? server.stats().wait())?.closedByError["slowConsumer"] == 1
                }
                #expect(dropped)
                #expect(await eventually(30) { flooder.collector.acks.count == count })
                // The sloth reads again: it drains what reached it and then sees the connection end.
                try await sloth.channel.setOption(.autoRead, value: true).get()
                #expect(await sloth.closedByPeer(within: 30))
                #expect(await eventually(30) { bystander.chatMessages.count == count / 100 })
                let expected = stride(from: 0, to: count, by: 100).map { "f-\($0)" }
                #expect(bystander.chatMessages.map(\.clientMsgID) == expected)
                #expect(bystander.channel.isActive && flooder.channel.isActive)
                let stats = try await server.stats().get()
                #expect(stats.closedByError == ["slowConsumer": 1])
                await bystander.close()
                await flooder.close()
            }
        }
    }

    // One scenario, read top to bottom: kept as one function (over 80 lines).
    /// An oversize message, a text message, bad frame bytes and a ping flood, each from its own
    /// client: each closes that client only, with its close code, while alice (TCP) keeps sending to
    /// bob (WebSocket) and dave (TCP), who receive every message, in order.
    @Test func faultsCloseOnlyTheFaultyClient() async throws {
        let maxFrameSize = 16 << 10
        try await withClientGroup { group in
            try await withWebSocketRelay({
                $0.codec = FrameCodecOptions(maxFrameSize: maxFrameSize)
                // A window long enough that the flood below always falls in one.
                $0.webSocket = WebSocketFrameLimits(maxPings: 32, pingWindow: .minutes(10))
            }) { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group)
                let dave = try await TestClient.connect(to: server, as: "dave", group: group)
                let bob = try await RawWebSocketClient.connect(to: server, group: group)
                try await bob.login("bob")
                var sent = 0
                func traffic(_ count: Int) async throws {
                    for _ in 0..<count {
                        sent += 1
                        for peer in ["bob", "dave"] {
                            let id = "\(peer.prefix(1))\(sent)"
                            try await alice.send(Frame(Message.c2cText(from: "alice", to: peer, id, clientMsgID: id)))
                        }
                    }
                }

                struct Fault {
                    let name: String
                    let closeCode: UInt16
                    let errorCodes: Set<String>
                    let send: @Sendable (RawWebSocketClient) async throws -> Void
                }
                let faults = [
                    Fault(name: "oversize message", closeCode: 1009, errorCodes: ["tooLarge"]) { client in
                        let payload = [UInt8](repeating: 0x0A, count: maxFrameSize + 1)
                        try await client.send(opcode: WSOpcode.binary, payload: payload)
                    },
                    Fault(name: "oversize fragments", closeCode: 1009, errorCodes: ["tooLarge"]) { client in
                        let half = [UInt8](repeating: 0x0A, count: maxFrameSize / 2 + 1)
                        try await client.send(opcode: WSOpcode.binary, payload: half, fin: false)
                        try await client.send(opcode: WSOpcode.continuation, payload: half)
                    },
                    Fault(name: "text message", closeCode: 1003, errorCodes: ["textMessage"]) { client in
                        try await client.send(opcode: WSOpcode.text, payload: Array("{\"message\": {}}".utf8))
                    },
                    Fault(name: "bad frame bytes", closeCode: 1007, errorCodes: ["malformed", "truncated"]) { client in
                        // Field number 0, then a length running past the end.
                        try await client.send(opcode: WSOpcode.binary, payload: [0x00, 0x52, 0xFF, 0x01])
                    },
                    Fault(name: "ping flood", closeCode: 1008, errorCodes: ["pingFlood"]) { client in
                        var flood: [UInt8] = []
                        for i in 0..<500 {
                            flood += webSocketFrameBytes(opcode: WSOpcode.ping, payload: [UInt8(i & 0xFF)])
                        }
                        try await client.write(flood)
                    },
                ]
                try await traffic(5)
                for (index, fault) in faults.enumerated() {
                    let client = try await RawWebSocketClient.connect(to: server, group: group)
                    try await client.login("mallory\(index)")
                    try await fault.send(client)
                    try await traffic(5)
                    #expect(await client.closedByPeer(within: 10), "\(fault.name): not closed")
                    let closeCode = client.closeCode.map { "\($0)" } ?? "none"
                    #expect(client.closeCode == fault.closeCode, "\(fault.name): close code \(closeCode)")
                    let errorCode = client.errorCode ?? "no notice"
                    #expect(fault.errorCodes.contains(errorCode), "\(fault.name): \(errorCode)")
                    if fault.name == "ping flood" {
                        // Every ping within the limit was answered; none after it.
                        #expect(client.frames.filter { $0.opcode == WSOpcode.pong }.count == 32)
                    }
                }
                try await traffic(5)
                let total = sent
                #expect(
                    await eventually(30) {
                        bob.chatMessages.count == total && dave.collector.messages.count == total
                    }
                )
                #expect(bob.chatMessages.map { $0.firstText ?? "" } == (1...total).map { "b\($0)" })
                #expect(dave.collector.messages.map { $0.firstText ?? "" } == (1...total).map { "d\($0)" })
                #expect(bob.chatMessages.map(\.seq) == (1...total).map { UInt64($0) })
                #expect(await eventually { alice.collector.acks.count == 2 * total })
                #expect(alice.collector.acks.allSatisfy { $0.errorCode == 0 })
                #expect(bob.channel.isActive && alice.channel.isActive && dave.channel.isActive)
                #expect(bob.closeCode == nil && bob.errorCode == nil)
                let stats = try await server.stats().get()
                #expect(stats.closedByError.values.reduce(0, +) == faults.count, "\(stats.closedByError)")
                #expect(stats.closedByError["tooLarge"] == 2 && stats.closedByError["textMessage"] == 1)
                #expect(stats.closedByError["pingFlood"] == 1)
                #expect(stats.usersOnline == 3)
                await bob.close()
                await alice.close()
                await dave.close()
            }
        }
    }
}
#endif
