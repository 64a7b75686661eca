#if Tools
import IMCodec
import IMCodecNIO
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Testing

@testable import imcodec_relay

@Suite("Relay routing", .timeLimit(.minutes(2)))
struct RelayTests {
    @Test func theStampIsAppendedAndDecodes() throws {
        var message = Message.groupText(from: "alice", group: "team", "hi", atUserIDs: ["bob"], clientMsgID: "c-9")
        message.serverMsgUID = "spoofed"
        var frame = Frame(message)
        frame.schemaVersion = 3
        let sent = frame.serializedBytes()
        let body = ByteBuffer(bytes: sent)
        let stamp = ServerStamp(serverMsgUID: "srv-1", seq: 42, serverTimeMs: 1_700_000_000_123)
        let decoder = WireDecoder()
        let stamped = try RelayProtocol.stampedFrame(body: body, stamp: stamp, decoder: decoder)
        // Everything the sender wrote is still there, byte for byte, ahead of the stamp.
        #expect(Array(stamped.prefix(sent.count)) == sent)
        #expect(stamped.count == sent.count + stamp.frame.serializedBytes().count)
        let forwarded = try Frame(serializedBytes: stamped)
        var expected = message
        expected.serverMsgUID = "srv-1"
        expected.seq = 42
        expected.serverTimeMs = 1_700_000_000_123
        var expectedFrame = Frame(expected)
        expectedFrame.schemaVersion = 3
        #expect(forwarded == expectedFrame)
        // A frame without a message is refused; so is one the stamp would push past the frame limit.
        #expect(throws: IMCodecError(code: .payloadMismatch, reason: "")) {
            try RelayProtocol.stampedFrame(
                body: ByteBuffer(bytes: SampleFrames.notice.serializedBytes()),
                stamp: stamp,
                decoder: decoder
            )
        }
        #expect(throws: IMCodecError(code: .tooLarge, reason: "")) {
            try RelayProtocol.stampedFrame(
                body: body,
                stamp: stamp,
                decoder: WireDecoder(options: DecodingOptions(maxInputSize: sent.count))
            )
        }
    }

    @Test func aMessageThatCannotBeStampedIsRefusedInItsAck() async throws {
        let message = Message.c2cText(from: "alice", to: "bob", String(repeating: "x", count: 500), clientMsgID: "big")
        let limit = Frame(message).serializedBytes().count
        try await withClientGroup { group in
            try await withRelay({ $0.codec = FrameCodecOptions(maxFrameSize: limit) }) { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group)
                let bob = try await TestClient.connect(to: server, as: "bob", group: group)
                // The frame fits the relay's limit, but not with the server's fields appended.
                try await alice.send(Frame(message))
                try await alice.send(Frame(Message.c2cText(from: "alice", to: "bob", "small", clientMsgID: "small")))
                #expect(await eventually { alice.collector.acks.count == 2 && bob.collector.messages.count == 1 })
                let acks = alice.collector.acks
                #expect(acks.map(\.errorCode) == [RelayProtocol.AckError.cannotStamp, 0])
                #expect(acks.first?.errorDescription.hasPrefix("tooLarge") == true)
                // The refused message used no sequence number.
                #expect(acks.last?.seq == 1 && bob.collector.messages.map(\.clientMsgID) == ["small"])
                #expect(bob.collector.messages.first?.seq == 1)
            }
        }
    }

    @Test func groupsFilesParse() throws {
        let groups = try parseGroups(
            """
            # teams
            team: alice bob, carol
            ops:dave   # on call

            team: erin
            """
        )
        #expect(groups == ["team": ["alice", "bob", "carol", "erin"], "ops": ["dave"]])
        #expect(throws: (any Error).self) { try parseGroups("no colon here") }
        // An id no client could name (RelayProtocol.maxIDBytes), as the group or as a member.
        let longest = String(repeating: "g", count: RelayProtocol.maxIDBytes)
        #expect(try parseGroups("\(longest): alice").keys.first == longest)
        #expect(throws: (any Error).self) { try parseGroups("\(longest)g: alice") }
        #expect(throws: (any Error).self) { try parseGroups("team: alice \(longest)u") }
    }

    @Test func chatCommandsParse() {
        #expect(ChatCommand.parse("@bob hi there", defaultTarget: nil) == .sendDirect(to: "bob", text: "hi there"))
        #expect(ChatCommand.parse("#team  hello ", defaultTarget: nil) == .sendGroup(group: "team", text: "hello"))
        #expect(ChatCommand.parse("plain", defaultTarget: "#team") == .sendGroup(group: "team", text: "plain"))
        #expect(ChatCommand.parse("plain", defaultTarget: "bob") == .sendDirect(to: "bob", text: "plain"))
        #expect(ChatCommand.parse("plain", defaultTarget: nil) == .help)
        #expect(ChatCommand.parse("/edit new words", defaultTarget: nil) == .edit("new words"))
        #expect(ChatCommand.parse("/recall", defaultTarget: nil) == .recall)
        #expect(ChatCommand.parse("/react 👍", defaultTarget: nil) == .react("👍"))
        #expect(ChatCommand.parse("   ", defaultTarget: nil) == nil)
    }

    @Test func theRelayRefusesNonLoopbackAddresses() async throws {
        var configuration = RelayConfiguration()
        configuration.host = "0.0.0.0"
        configuration.port = 0
        await #expect(throws: IMCodecError.self) { _ = try await RelayServer.start(configuration).get() }
    }

    @Test func oneToOneGroupReceiptsRecallAndEditAreRouted() async throws {
        try await withClientGroup { group in try await routing(group) }
    }

    // One scenario, read top to bottom: kept as one function (over 80 lines).
    private func routing(_ group: MultiThreadedEventLoopGroup) async throws {
        try await withRelay({ $0.groups = ["team": ["alice", "bob"]] }) { server in
            let alice = try await TestClient.connect(to: server, as: "alice", group: group)
            let bob = try await TestClient.connect(to: server, as: "bob", group: group)
            let carol = try await TestClient.connect(to: server, as: "carol", group: group)

            // One-to-one: bob receives alice's message with the server's fields; alice gets the ack.
            var hello = Message.c2cText(from: "alice", to: "bob", "hello", clientMsgID: "a-1")
            hello.messageFlags = [.needReadReceipt, .deliveryReceiptEnabled]
            try await alice.send(Frame(hello))
            #expect(await eventually { bob.collector.messages.count == 1 && alice.collector.acks.count == 1 })
            let ack = alice.collector.acks[0]
            #expect(ack.errorCode == 0 && ack.clientMsgID == "a-1" && ack.seq == 1 && !ack.serverMsgUID.isEmpty)
            #expect(ack.serverTimeMs > 0 && ack.conversation == .oneToOne("bob"))
            let received = bob.collector.messages[0]
            #expect(received.clientMsgID == "a-1" && received.previewText == "hello" && received.senderID == "alice")
            #expect(
                received.seq == 1 && received.serverMsgUID == ack.serverMsgUID
                    && received.serverTimeMs == ack.serverTimeMs
            )

            // Delivery and read receipts go back to the sender.
            try await bob.send(
                Frame(
                    .receipt(
                        MessageReceipt.with {
                            $0.kind = .delivered; $0.message = received.reference; $0.userID = "bob"
                        }
                    )
                )
            )
            try await bob.send(Frame.readReceipt(for: received.reference, by: "bob"))
            #expect(await eventually { alice.collector.frames.filter { $0.payload?.kind == .receipt }.count == 2 })

            // Group: config membership; the groups file's group is closed to carol (RelayGroupAccessTests
            // has open groups); the sender is not echoed.
            try await alice.send(Frame(Message.groupText(from: "alice", group: "team", "team 1", clientMsgID: "a-2")))
            try await carol.send(RelayProtocol.membershipFrame(.join, group: "team", requestID: 7))
            #expect(await eventually { carol.collector.result(of: 7) != nil })
            #expect(carol.collector.result(of: 7)?.errorCode == RelayProtocol.RequestError.notAMember)
            try await alice.send(Frame(Message.groupText(from: "alice", group: "team", "team 2", clientMsgID: "a-3")))
            #expect(await eventually { bob.collector.messages.count == 3 })
            #expect(bob.collector.messages.map(\.seq) == [1, 1, 2])
            #expect(bob.collector.messages.map(\.previewText).suffix(2) == ["team 1", "team 2"])
            #expect(carol.collector.messages.isEmpty)
            #expect(alice.collector.messages.isEmpty)

            // An edit and a recall reach the peer unchanged (an edit after the recall would be refused).
            var edited = received
            edited.elements = [.text("hello (edited)")]
            try await alice.send(
                Frame(
                    .edit(
                        EditEvent.with {
                            $0.message = received.reference; $0.newMessage = edited; $0.editorID = "alice"
                        }
                    )
                )
            )
            try await alice.send(Frame.recall(received.reference, by: "alice"))
            #expect(
                await eventually {
                    bob.collector.frames.contains { $0.payload?.kind == .recall }
                        && bob.collector.frames.contains { $0.payload?.kind == .edit }
                }
            )

            // Errors that keep the connection: wrong sender, not a member. A message to a user who is
            // not online is accepted (stored for sync).
            try await carol.send(Frame(Message.c2cText(from: "mallory", to: "bob", "x", clientMsgID: "c-1")))
            try await carol.send(Frame(Message.c2cText(from: "carol", to: "nobody", "x", clientMsgID: "c-2")))
            try await carol.send(Frame(Message.groupText(from: "carol", group: "ops", "x", clientMsgID: "c-3")))
            #expect(await eventually { carol.collector.acks.count == 3 })
            #expect(
                carol.collector.acks.map(\.errorCode) == [
                    RelayProtocol.AckError.senderMismatch, 0, RelayProtocol.AckError.notAGroupMember,
                ]
            )
            #expect(carol.collector.acks[1].seq == 1)
            #expect(carol.channel.isActive)

            // A second login of the same user and device (no device id) replaces the first connection.
            let bob2 = try await TestClient.connect(to: server, as: "bob", group: group)
            #expect(await eventually { !bob.channel.isActive })
            let kicked = bob.collector.frames.compactMap {
                if case .kickedOffline(let k)? = $0.payload { k } else { nil }
            }
            #expect(kicked.count == 1)
            #expect(kicked.first?.reason == .loggedInElsewhere && kicked.first?.otherDeviceID == "")
            try await alice.send(Frame(Message.c2cText(from: "alice", to: "bob", "again", clientMsgID: "a-4")))
            #expect(await eventually { bob2.collector.messages.count == 1 })
            #expect(bob2.collector.messages.first?.seq == 2)

            for client in [alice, bob, bob2, carol] { await client.close() }
        }
    }

    @Test func theFirstFrameMustBeALogin() async throws {
        try await withClientGroup { group in try await login(group) }
    }

    private func login(_ group: MultiThreadedEventLoopGroup) async throws {
        // A generous login timeout here, so that even a slow machine (or ThreadSanitizer) writes
        // the first frame before the timeout could fire: this relay must close for notLoggedIn.
        try await withRelay({ $0.loginTimeout = .seconds(30) }) { server in
            let eager = try await RawClient.connect(to: server, group: group)
            try await eager.write(frame: Frame(Message.c2cText(from: "x", to: "y", "hi")))
            #expect(await eager.closedByPeer(within: 20))
            #expect(eager.collector.errorCode == "notLoggedIn")
        }
        try await withRelay({ $0.loginTimeout = .milliseconds(300) }) { server in
            let silent = try await RawClient.connect(to: server, group: group)
            #expect(await silent.closedByPeer(within: 20))
            #expect(silent.collector.errorCode == "loginTimeout")
        }
    }

    /// The relay forwards a message as its sender wrote it, so it refuses a length prefix that
    /// Google's C++ parser refuses (over 5 bytes), though the codec reads one of up to 10 as upb does.
    @Test func aLengthPrefixPaddedPastFiveBytesIsRefused() async throws {
        try await withClientGroup { group in
            try await withRelay { server in
                let body = Message.c2cText(from: "x", to: "y", "hi").serializedBytes()
                for (size, code) in [(5, "notLoggedIn"), (6, "malformed")] {
                    // Frame.message (field 10) behind a length prefix padded to `size` bytes.
                    var prefix = WireFormat.varint(UInt64(body.count))
                    prefix[prefix.count - 1] |= 0x80
                    prefix += [UInt8](repeating: 0x80, count: size - prefix.count - 1) + [0x00]
                    let frame: [UInt8] = [0x52] + prefix + body
                    let client = try await RawClient.connect(to: server, group: group)
                    try await client.write(ByteBuffer(bytes: WireFormat.varint(UInt64(frame.count)) + frame))
                    #expect(await client.closedByPeer(within: 20))
                    #expect(client.collector.errorCode == code, "a prefix of \(size) bytes")
                }
            }
        }
    }

    @Test func theChatClientTalksToTheRelay() async throws {
        let lines = NIOLockedLines()
        try await withRelay({ $0.groups = ["team": ["alice", "bob"]] }) { server in
            let bob = try await ChatClient.connect(
                host: "127.0.0.1",
                port: server.port,
                user: "bob",
                token: try await TestAuth.token("bob"),
                deviceID: "bob-chat",
                joins: [],
                output: { lines.append("bob", $0) }
            )
            let alice = try await ChatClient.connect(
                host: "127.0.0.1",
                port: server.port,
                user: "alice",
                token: try await TestAuth.token("alice"),
                deviceID: "alice-chat",
                joins: [],
                output: { lines.append("alice", $0) }
            )
            // alice recalls her one-to-one message; bob then reacts to her group message.
            #expect(await alice.perform(.sendDirect(to: "bob", text: "hi bob")))
            #expect(await alice.perform(.recall))
            #expect(await alice.perform(.sendGroup(group: "team", text: "hi team")))
            #expect(await !alice.perform(.quit))
            #expect(
                await eventually {
                    lines.all.contains("bob: [alice] hi bob  (seq 1)")
                        && lines.all.contains("bob: [alice in #team] hi team  (seq 1)")
                        && lines.all.contains { $0.hasPrefix("bob: * alice recalled a message") }
                        && lines.all.contains { $0.hasPrefix("alice: ✓✓ bob read your message") }
                },
                "\(lines.all)"
            )
            // bob reacts to the last message he received (alice's group message): alice sees it.
            #expect(await bob.perform(.react("👍")))
            #expect(await eventually { lines.all.contains("alice: * bob reacted 👍 (seq 1)") }, "\(lines.all)")
            #expect(lines.all.contains("bob: * reacted 👍 to: hi team"))
            await alice.close()
            await bob.close()
        }
    }
}

extension RelayTests {
    /// A chat client whose connection ends comes back with what it had shown (last_seen): it shows
    /// what it missed once, in order, and nothing twice; then live messages follow.
    @Test func theChatClientResumesWhereItLeftOff() async throws {
        let lines = NIOLockedLines()
        try await withClientGroup { group in
            try await withRelay { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group)
                func send(_ k: Int) async throws {
                    try await alice.send(
                        Frame(Message.c2cText(from: "alice", to: "bob", "m\(k)", clientMsgID: "m-\(k)"))
                    )
                }
                let bob = try await ChatClient.connect(
                    host: "127.0.0.1",
                    port: server.port,
                    user: "bob",
                    token: try await TestAuth.token("bob"),
                    deviceID: "bob-chat",
                    joins: [],
                    output: { lines.append("bob", $0) }
                )
                for k in 1...3 { try await send(k) }
                #expect(await eventually { lines.all.contains("bob: [alice] m3  (seq 3)") })
                let state = await bob.resumeState()
                await bob.close()
                #expect(await eventually { (try? server.stats().wait().usersOnline) == 1 })
                for k in 4...6 { try await send(k) }
                #expect(await eventually { alice.collector.acks.count == 6 })
                // connect completes once the sync is done: m4...m6 are shown by then.
                let again = try await ChatClient.connect(
                    host: "127.0.0.1",
                    port: server.port,
                    user: "bob",
                    token: try await TestAuth.token("bob"),
                    deviceID: "bob-chat",
                    joins: [],
                    resume: state,
                    output: { lines.append("bob2", $0) }
                )
                let shown = { lines.all.filter { $0.hasPrefix("bob2: [alice]") } }
                #expect(shown() == (4...6).map { "bob2: [alice] m\($0)  (seq \($0))" })
                try await send(7)
                #expect(await eventually { shown().count == 4 })
                #expect(shown().last == "bob2: [alice] m7  (seq 7)")
                await again.close()
                await alice.close()
            }
        }
    }
}

/// Output lines of several chat clients, tagged by user.
final class NIOLockedLines: Sendable {
    private let box = NIOLockedValueBox<[String]>([])
    func append(_ user: String, _ line: String) { box.withLockedValue { $0.append("\(user): \(line)") } }
    var all: [String] { box.withLockedValue { $0 } }
}
#endif
