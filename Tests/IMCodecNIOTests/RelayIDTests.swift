#if Tools
import IMCodec
import IMCodecNIO
import NIOCore
import NIOPosix
import Testing

@testable import imcodec_relay

/// The longest id the relay keeps (``RelayProtocol/maxIDBytes``, 128 bytes): a user, device,
/// group or ultra-group channel id past it names nothing the relay keeps. Before, every id a client
/// made up was kept for as long as the relay ran: a conversation (and its list entries, and a
/// stream for the made-up peer) per peer id, a subscriber entry per watched id, each up to the
/// frame size limit.
@Suite("Relay ids", .timeLimit(.minutes(2)))
struct RelayIDTests {
    private let longest = String(repeating: "i", count: RelayProtocol.maxIDBytes)
    private let tooLong = String(repeating: "i", count: RelayProtocol.maxIDBytes + 1)

    private func ask(_ client: TestClient, _ payload: Frame.Payload, id: UInt64) async throws -> Frame? {
        try await RelayUserStateTests.ask(client, payload, id: id)
    }

    /// A login whose user id has 129 bytes is refused with 2007 and its connection closed; one of
    /// 128 bytes logs in, and messages go both ways between it and bob.
    @Test func aUserIDHoldsAtMost128Bytes() async throws {
        try await withClientGroup { group in
            try await withRelay { server in
                let refused = try await TestClient.connect(to: server, as: nil, group: group)
                try await refused.send(try await TestAuth.login(tooLong))
                #expect(await eventually { !refused.collector.loginResults.isEmpty })
                #expect(refused.collector.loginResults.first?.errorCode == RelayProtocol.LoginError.userIDTooLong)
                #expect(await eventually { !refused.channel.isActive })

                let long = try await TestClient.connect(to: server, as: longest, group: group)
                let bob = try await TestClient.connect(to: server, as: "bob", group: group)
                let toBob = Message.c2cText(from: longest, to: "bob", "hi", clientMsgID: "l1")
                let sent = try await long.ask(RelayProtocol.answer(.message(toBob), requestID: 1))
                #expect(sent?.sendAck?.errorCode == 0)
                let back = Message.c2cText(from: "bob", to: longest, "hello", clientMsgID: "b1")
                #expect(try await bob.ask(RelayProtocol.answer(.message(back), requestID: 2))?.sendAck?.errorCode == 0)
                #expect(await eventually { long.collector.messages.map(\.previewText) == ["hello"] })
                #expect(bob.collector.messages.map(\.previewText) == ["hi"])
                for client in [refused, long, bob] { await client.close() }
            }
        }
    }

    /// Everything that would make the relay keep an id past 128 bytes is refused, with an answer
    /// that does not repeat the id: a first message to such a peer, group or ultra-group channel
    /// (1004), a targeted receiver (1006), a join (3002), a view of the conversation (3001), a
    /// presence subscription and a block (3003); a one-to-one event to such a peer, or about a
    /// message from one, gets an `unroutable` notice (the relay used to assume such a conversation
    /// could always be named). Nothing lands in alice's stream, and her connection stays open.
    @Test func nothingIsKeptUnderAnIDPast128Bytes() async throws {
        try await withClientGroup { group in
            try await withRelay({ $0.groups = ["team": ["alice", "bob"]] }) { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group)
                let bob = try await TestClient.connect(to: server, as: "bob", group: group)
                var requests: UInt64 = 0
                func ack(_ message: Message) async throws -> SendAck? {
                    requests += 1
                    return try await alice.ask(RelayProtocol.answer(.message(message), requestID: requests))?.sendAck
                }
                func code(_ payload: Frame.Payload) async throws -> Int32? {
                    requests += 1
                    return try await ask(alice, payload, id: requests)?.requestResult?.errorCode
                }

                let unsupported = RelayProtocol.AckError.unsupportedConversation
                let toPeer = try await ack(Message.c2cText(from: "alice", to: tooLong, "hi", clientMsgID: "p"))
                #expect(toPeer?.errorCode == unsupported && toPeer?.seq == 0)
                #expect(
                    toPeer.map {
                        $0.errorDescription.contains("at most 128 bytes") && !$0.errorDescription.contains(tooLong)
                    } == true
                )
                #expect(
                    try await ack(Message.c2cText(from: "alice", to: longest, "hi", clientMsgID: "q"))?.errorCode == 0
                )
                let toGroup = Message.groupText(from: "alice", group: tooLong, "hi", clientMsgID: "g")
                #expect(try await ack(toGroup)?.errorCode == unsupported)
                var toChannel = Message.groupText(from: "alice", group: "team", "hi", clientMsgID: "c")
                toChannel.conversation = Conversation.with {
                    $0.type = .ultraGroup; $0.targetID = "team"; $0.channelID = tooLong
                }
                #expect(try await ack(toChannel)?.errorCode == unsupported)
                var targeted = Message.groupText(from: "alice", group: "team", "hi", clientMsgID: "t")
                targeted.targetReceivers = ["bob", tooLong]
                #expect(try await ack(targeted)?.errorCode == RelayProtocol.AckError.targetedOutsideGroup)

                let join = RelayProtocol.membershipFrame(.join, group: tooLong, requestID: 50)
                #expect(
                    try await alice.ask(join)?.requestResult?.errorCode
                        == RelayProtocol.RequestError.unsupportedConversation
                )
                let pin = Frame.Payload.conversationUpdate(
                    .with {
                        $0.conversation = .oneToOne(tooLong); $0.fields = UInt32(ConversationField.pinned.rawValue)
                        $0.pinned = true
                    }
                )
                #expect(try await code(pin) == RelayProtocol.RequestError.notAMember)
                let badRequest = RelayProtocol.RequestError.badRequest
                let watch = PresenceSubscription.with {
                    $0.action = .subscribe; $0.userIDs = ["bob", tooLong]
                }
                #expect(try await code(.presenceSubscription(watch)) == badRequest)
                let block = BlocklistChange.with {
                    $0.action = .block; $0.userIDs = [tooLong]
                }
                #expect(try await code(.blocklistChange(block)) == badRequest)
                let list = try await ask(alice, .blocklistRequest(.init()), id: 60)
                if case .blocklistResponse(let blocked)? = list?.payload {
                    #expect(blocked.userIDs.isEmpty)
                } else {
                    Issue.record("no blocklist_response")
                }

                // One-to-one events: to the peer, and about a message from it (a recall of it
                // names alice's side of the conversation; a reaction to it goes back to it).
                let reference = MessageRef.with {
                    $0.conversation = .oneToOne("alice"); $0.senderID = tooLong; $0.seq = 1
                }
                try await alice.send(
                    Frame(
                        .typing(
                            .with {
                                $0.conversation = .oneToOne(tooLong); $0.state = .started
                            }
                        )
                    )
                )
                try await alice.send(Frame(.recall(.with { $0.message = reference })))
                try await alice.send(
                    Frame(
                        .reaction(
                            .with {
                                $0.message = reference; $0.userID = "alice"; $0.emoji = "👍"; $0.action = .add
                            }
                        )
                    )
                )
                #expect(await eventually { alice.collector.notices.count == 3 })
                #expect(alice.collector.notices.allSatisfy { $0.params["code"] == "unroutable" })
                #expect(!alice.collector.notices.contains { $0.params["reason"]?.contains(tooLong) == true })

                // Kept: the one message to the 128-byte peer, and nothing else (read on alice's
                // other device: a device's stream leaves out what it sent itself).
                let other = try await TestClient.connect(to: server, as: "alice", group: group, deviceID: "2")
                let stream = try await other.streamPage(requestID: 70)
                #expect(
                    stream?.compactMap { if case .message(let m)? = $0.payload { m.clientMsgID } else { nil } } == ["q"]
                )
                #expect(stream?.count == 1)
                #expect(alice.channel.isActive && alice.collector.decodeErrors.isEmpty)
                #expect(bob.collector.messages.isEmpty)
                for client in [alice, bob, other] { await client.close() }
            }
        }
    }
}
#endif
