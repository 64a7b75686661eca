#if Tools
import IMCodec
import IMCodecNIO
import NIOConcurrencyHelpers
import Testing

@testable import imcodec_relay

/// message.proto Priority (Tencent V2TIMMessagePriority): "Under load, lower priorities are dropped
/// first". Before, the relay ignored it. Now a group, chatroom or ultra group that carried
/// `groupMessageRate` messages in the current second refuses its low-priority messages (1008)
/// until the next second; high, normal and unspecified ones always pass.
@Suite("Relay: message priorities", .timeLimit(.minutes(2)))
struct RelayPriorityTests {
    static func message(_ text: String, to group: String, _ priority: Priority) -> Frame {
        message(text, in: .group(group), priority)
    }

    static func message(_ text: String, in conversation: Conversation, _ priority: Priority) -> Frame {
        var message = Message(from: "alice", in: conversation, elements: [.text(text)], clientMsgID: text)
        message.priority = priority
        return Frame(message)
    }

    /// The error code of each of `client`'s acks, by client message id.
    static func codes(_ client: TestClient) -> [String: Int32] {
        Dictionary(client.collector.acks.map { ($0.clientMsgID, $0.errorCode) }) { a, _ in a }
    }

    @Test func aBusyGroupRefusesLowPriorityMessagesUntilTheNextSecond() async throws {
        // A clock that stands still, so that no second ends between two messages by chance.
        let frozen = NIOLockedValueBox<Int64>(1_800_000_000_500)
        try await withClientGroup { group in
            try await withRelay({
                $0.groups = ["team": ["alice", "bob"], "other": ["alice", "bob"]]
                $0.groupMessageRate = 2
                $0.clock = { frozen.withLockedValue { $0 } }
            }) { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group)
                let bob = try await TestClient.connect(to: server, as: "bob", group: group)
                var sent: [(String, Priority)] = [("g1", .normal), ("g2", .unspecified), ("g3", .low), ("g4", .high)]
                sent += [("g5", .normal)]
                for (text, priority) in sent { try await alice.send(Self.message(text, to: "team", priority)) }
                // Not counted with "team": another group, and a one-to-one message.
                try await alice.send(Self.message("o1", to: "other", .low))
                var direct = Message.c2cText(from: "alice", to: "bob", "d1", clientMsgID: "d1")
                direct.priority = .low
                try await alice.send(Frame(direct))
                #expect(await eventually { alice.collector.acks.count == 7 })
                let busy = RelayProtocol.AckError.conversationBusy
                #expect(Self.codes(alice) == ["g1": 0, "g2": 0, "g3": busy, "g4": 0, "g5": 0, "o1": 0, "d1": 0])
                #expect(alice.collector.acks.first { $0.clientMsgID == "g3" }?.seq == 0, "refused: not kept")

                // The next second: low priority passes again.
                frozen.withLockedValue { $0 += 1_000 }
                try await alice.send(Self.message("g6", to: "team", .low))
                #expect(await eventually { alice.collector.acks.count == 8 })
                #expect(alice.collector.acks.last?.errorCode == 0)
                #expect(await eventually { bob.collector.messages.count == 7 })
                #expect(bob.collector.messages.map(\.clientMsgID) == ["g1", "g2", "g4", "g5", "o1", "d1", "g6"])
                #expect(bob.collector.messages.map(\.seq).prefix(4) == [1, 2, 3, 4], "no seq was taken by g3")
                await alice.close()
                await bob.close()
            }
        }
    }

    /// A chatroom is counted as a group is; an ultra group's channels are counted together (the
    /// rate is the ultra group's); a rate of 0 turns the limit off.
    @Test func chatroomsAndUltraGroupsAreCountedAndARateOfZeroTurnsTheLimitOff() async throws {
        let frozen = NIOLockedValueBox<Int64>(1_800_000_000_500)
        let room = Conversation.with {
            $0.type = .chatroom; $0.targetID = "live"
        }
        let channels = ["c1", "c2"].map { channel in
            Conversation.with {
                $0.type = .ultraGroup; $0.targetID = "ug"; $0.channelID = channel
            }
        }
        for rate in [1, 0] {
            try await withClientGroup { group in
                try await withRelay({
                    $0.groupMessageRate = rate
                    $0.clock = { frozen.withLockedValue { $0 } }
                }) { server in
                    let alice = try await TestClient.connect(to: server, as: "alice", group: group)
                    for (index, conversation) in ([room] + channels).enumerated() {
                        let join = RelayProtocol.membershipFrame(.join, conversation, requestID: UInt64(index + 1))
                        #expect(try await alice.ask(join)?.requestResult?.errorCode == 0)
                    }
                    try await alice.send(Self.message("r1", in: room, .normal))
                    try await alice.send(Self.message("r2", in: room, .low))
                    try await alice.send(Self.message("u1", in: channels[0], .normal))
                    try await alice.send(Self.message("u2", in: channels[1], .low))
                    #expect(await eventually { alice.collector.acks.count == 4 })
                    let busy = rate == 0 ? 0 : RelayProtocol.AckError.conversationBusy
                    #expect(Self.codes(alice) == ["r1": 0, "r2": busy, "u1": 0, "u2": busy], "rate \(rate)")
                    await alice.close()
                }
            }
        }
    }
}
#endif
