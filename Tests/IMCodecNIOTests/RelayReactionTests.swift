#if Tools
import Foundation
import IMCodec
import IMCodecNIO
import NIOCore
import NIOPosix
import Testing

@testable import imcodec_relay

/// Reactions as the relay keeps them (events.proto ReactionEvent: "The server forwards it to the
/// conversation with summary filled in"; message.proto `reactions`).
@Suite("Relay: reactions", .timeLimit(.minutes(2)))
struct RelayReactionTests {
    static func reaction(_ message: MessageRef, _ emoji: String, _ action: ReactionAction, id: UInt64) -> Frame {
        RelayProtocol.answer(
            .reaction(
                ReactionEvent.with {
                    $0.message = message; $0.emoji = emoji; $0.action = action; $0.timeMs = RelayProtocol.nowMs()
                    // What a client may claim: the relay replaces it.
                    $0.summary = [
                        ReactionSummary.with {
                            $0.emoji = "👍"; $0.count = 100; $0.userIDs = ["mallory"]
                        }
                    ]
                }
            ),
            requestID: id
        )
    }

    /// The summaries a frame of `client` carries: the last reaction event's.
    static func lastSummary(_ client: TestClient) -> [String] {
        let events = client.collector.frames.compactMap { if case .reaction(let r)? = $0.payload { r } else { nil } }
        return events.last.map(Self.describe) ?? ["none"]
    }

    static func describe(_ event: ReactionEvent) -> [String] { describe(event.summary) }

    static func describe(_ summaries: [ReactionSummary]) -> [String] {
        summaries.map { "\($0.emoji)\($0.count):\($0.userIDs.joined(separator: ","))\($0.reactedByMe ? "*" : "")" }
    }

    static func history(_ client: TestClient, id: UInt64) async throws -> [String] {
        let page = try await RelayHistoryTests.page(client, id: id) { $0.conversation = .group("team") }
        return page?.messages.first.map { describe($0.reactions) } ?? ["no message"]
    }

    /// alice, bob (on his phone and his laptop) and carol logged in to `server`, and alice's group
    /// message "lunch?" in `team` as bob's phone got it.
    static func lunch(
        on server: RelayServer,
        group: any EventLoopGroup
    ) async throws -> (TestClient, TestClient, TestClient, TestClient, MessageRef) {
        let alice = try await TestClient.connect(to: server, as: "alice", group: group, deviceID: "a")
        let phone = try await TestClient.connect(to: server, as: "bob", group: group, deviceID: "phone")
        let laptop = try await TestClient.connect(to: server, as: "bob", group: group, deviceID: "laptop")
        let carol = try await TestClient.connect(to: server, as: "carol", group: group, deviceID: "c")
        try await alice.send(Frame(Message.groupText(from: "alice", group: "team", "lunch?", clientMsgID: "m")))
        #expect(await eventually { phone.collector.messages.count == 1 && carol.collector.messages.count == 1 })
        let reference = try #require(phone.collector.messages.first?.reference)
        return (alice, phone, laptop, carol, reference)
    }

    /// message.proto ReactionSummary: "The first users who reacted (at most 10); count holds the
    /// total", and `reacted_by_me` for the reader.
    @Test func aSummaryListsTheFirstTenUsersAndCountsThemAll() {
        let users = (1...12).map { "u\($0)" }
        let kept = [
            ReactionSummary.with {
                $0.emoji = "👍"; $0.userIDs = ["u1"]
            },
            ReactionSummary.with {
                $0.emoji = "🎉"; $0.userIDs = users
            },
        ]
        #expect(Self.describe(Router.served(kept, for: "u12")) == ["🎉12:u1,u2,u3,u4,u5,u6,u7,u8,u9,u10*", "👍1:u1"])
        #expect(Self.describe(Router.served(kept)) == ["🎉12:u1,u2,u3,u4,u5,u6,u7,u8,u9,u10", "👍1:u1"])
    }

    /// Before, the relay forwarded whatever summary the client wrote (a forged 100 👍) and served
    /// messages without reactions. Now every reaction event goes out with the summaries the relay
    /// keeps (counts, the first users, most used first), history serves them with `reacted_by_me`
    /// for the reader, a resend or a reaction that changes nothing is kept by no one, a 51st emoji
    /// and a non-emoji are refused, the summaries survive a restart and go with a recall.
    @Test(arguments: StoreBackend.allCases)
    func theRelayKeepsReactionsAndFillsTheirSummaries(_ backend: StoreBackend) async throws {
        let database = try await TestStore(backend)
        defer { database.remove() }
        let configure: (inout RelayConfiguration) -> Void = {
            $0.store = database.location; $0.groups = ["team": ["alice", "bob", "carol"]]
        }
        try await withClientGroup { group in
            var reference = MessageRef()
            var late = Frame()
            try await withRelay(configure) { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group, deviceID: "a")
                let bob = try await TestClient.connect(to: server, as: "bob", group: group, deviceID: "b")
                let carol = try await TestClient.connect(to: server, as: "carol", group: group, deviceID: "c")
                try await alice.send(
                    Frame(Message.groupText(from: "alice", group: "team", "lunch?", clientMsgID: "r-1"))
                )
                #expect(await eventually { bob.collector.messages.count == 1 && carol.collector.messages.count == 1 })
                reference = try #require(bob.collector.messages.first?.reference)

                let before = try await RelayUserStateTests.list(carol, id: 30).nextAfterVersion
                let thumbs = Self.reaction(reference, "👍", .add, id: 1)
                #expect(try await bob.ask(thumbs)?.requestResult?.errorCode == 0)
                #expect(await eventually { Self.lastSummary(carol) == ["👍1:bob"] })
                // The conversation list's next sync has the entry, its last message with the reaction.
                let changed = try await RelayUserStateTests.list(carol, after: before, id: 31)
                let last = RelayUserStateTests.entry(changed, .group("team"))?.lastMessage
                #expect(last.map { Self.describe($0.reactions) } == ["👍1:bob"])
                // The same bytes again (a lost answer): answered, applied once, sent to no one.
                try await bob.send(thumbs)
                try await bob.roundTrip(7)
                #expect(
                    bob.collector.frames.filter { $0.requestID == 1 && $0.requestResult?.errorCode == 0 }.count == 2
                )
                #expect(try await carol.ask(Self.reaction(reference, "👍", .add, id: 2))?.requestResult?.errorCode == 0)
                #expect(try await carol.ask(Self.reaction(reference, "❤️", .add, id: 3))?.requestResult?.errorCode == 0)
                #expect(await eventually { Self.lastSummary(alice) == ["👍2:bob,carol", "❤️1:carol"] })
                #expect(try await bob.ask(Self.reaction(reference, "👍", .remove, id: 4))?.requestResult?.errorCode == 0)
                #expect(try await bob.ask(Self.reaction(reference, "😂", .add, id: 5))?.requestResult?.errorCode == 0)
                #expect(try await bob.ask(Self.reaction(reference, "😂", .add, id: 6))?.requestResult?.errorCode == 0)
                #expect(await eventually { Self.lastSummary(alice) == ["👍1:carol", "❤️1:carol", "😂1:bob"] })
                // Most used first: 😂 overtakes.
                #expect(try await alice.ask(Self.reaction(reference, "😂", .add, id: 8))?.requestResult?.errorCode == 0)
                #expect(await eventually { Self.lastSummary(carol) == ["😂2:bob,alice", "👍1:carol*", "❤️1:carol*"] })
                try await alice.roundTrip(9)
                let events = alice.collector.frames.filter { $0.payload?.kind == .reaction }
                // Five from bob and carol: bob's second 😂 changes nothing (answered, kept by no one),
                // and alice's own goes to her other devices only.
                #expect(events.count == 5, "\(events.count) reaction events")

                // History: as each reader gets it.
                #expect(try await Self.history(carol, id: 10) == ["😂2:bob,alice", "👍1:carol*", "❤️1:carol*"])
                #expect(try await Self.history(alice, id: 11) == ["😂2:bob,alice*", "👍1:carol", "❤️1:carol"])

                // 50 different emoji at most: 47 more fit, the next is refused.
                for index in 0..<47 {
                    let emoji = String(UnicodeScalar(0x1F400 + UInt32(index))!)
                    let answer = try await alice.ask(Self.reaction(reference, emoji, .add, id: 100 + UInt64(index)))
                    #expect(answer?.requestResult?.errorCode == 0)
                }
                let tooMany = try await alice.ask(Self.reaction(reference, "🦀", .add, id: 200))
                #expect(tooMany?.requestResult?.errorCode == RelayProtocol.RequestError.badRequest)
                // Not one emoji: refused (3003).
                let text = try await alice.ask(Self.reaction(reference, "ok", .add, id: 201))
                #expect(text?.requestResult?.errorCode == RelayProtocol.RequestError.badRequest)
                for index in 0..<47 {
                    let emoji = String(UnicodeScalar(0x1F400 + UInt32(index))!)
                    let answer = try await alice.ask(Self.reaction(reference, emoji, .remove, id: 300 + UInt64(index)))
                    #expect(answer?.requestResult?.errorCode == 0)
                }
                // Added and taken back; its answer "lost": resent after the restart below.
                late = Self.reaction(reference, "🎉", .add, id: 400)
                #expect(try await bob.ask(late)?.requestResult?.errorCode == 0)
                #expect(
                    try await bob.ask(Self.reaction(reference, "🎉", .remove, id: 401))?.requestResult?.errorCode == 0
                )
                for client in [alice, bob, carol] { await client.close() }
            }
            try await withRelay(configure) { server in
                let carol = try await TestClient.connect(to: server, as: "carol", group: group, deviceID: "c2")
                #expect(try await Self.history(carol, id: 20) == ["😂2:bob,alice", "👍1:carol*", "❤️1:carol*"])
                // The resend is found in the window the restart rebuilt from the rewritten copy kept:
                // answered, not applied again.
                let bob = try await TestClient.connect(to: server, as: "bob", group: group, deviceID: "b")
                try await bob.send(late)
                try await bob.roundTrip(24)
                #expect(bob.collector.result(of: 400)?.errorCode == 0)
                #expect(try await Self.history(carol, id: 25) == ["😂2:bob,alice", "👍1:carol*", "❤️1:carol*"])
                #expect(!carol.collector.frames.contains { $0.payload?.kind == .reaction })
                await bob.close()
                let alice = try await TestClient.connect(to: server, as: "alice", group: group, deviceID: "a2")
                var recall = Frame.recall(reference, by: "alice")
                recall.requestID = 21
                #expect(try await alice.ask(recall)?.requestResult?.errorCode == 0)
                #expect(try await Self.history(carol, id: 22) == ["no message"])
                let after = try await carol.ask(Self.reaction(reference, "👍", .add, id: 23))
                #expect(after?.requestResult?.errorCode == RelayProtocol.RequestError.messageRemoved)
                for client in [alice, carol] { await client.close() }
            }
        }
    }

    /// Before, every reaction event went out with `reacted_by_me` false, so a user's other devices
    /// could not tell its own reaction once more than 10 users had reacted with that emoji. Now each
    /// user with a reaction on the message gets the event with its own `reacted_by_me`, live and
    /// from its stream; everyone else gets it false.
    @Test(arguments: StoreBackend.allCases)
    func eachReactingUserGetsItsOwnReactedByMe(_ backend: StoreBackend) async throws {
        let database = try await TestStore(backend)
        defer { database.remove() }
        let configure: (inout RelayConfiguration) -> Void = {
            $0.store = database.location; $0.groups = ["team": ["alice", "bob", "carol"]]
        }
        try await withClientGroup { group in
            try await withRelay(configure) { server in
                let (alice, phone, laptop, carol, reference) = try await Self.lunch(on: server, group: group)

                #expect(try await phone.ask(Self.reaction(reference, "👍", .add, id: 1))?.requestResult?.errorCode == 0)
                #expect(await eventually { Self.lastSummary(laptop) == ["👍1:bob*"] })
                #expect(
                    await eventually { Self.lastSummary(alice) == ["👍1:bob"] && Self.lastSummary(carol) == ["👍1:bob"] }
                )
                #expect(try await carol.ask(Self.reaction(reference, "👍", .add, id: 2))?.requestResult?.errorCode == 0)
                #expect(try await carol.ask(Self.reaction(reference, "🎉", .add, id: 3))?.requestResult?.errorCode == 0)
                #expect(await eventually { Self.lastSummary(phone) == ["👍2:bob,carol*", "🎉1:carol"] })
                #expect(await eventually { Self.lastSummary(laptop) == ["👍2:bob,carol*", "🎉1:carol"] })
                #expect(await eventually { Self.lastSummary(alice) == ["👍2:bob,carol", "🎉1:carol"] })
                // bob takes his back: his devices get it false again.
                #expect(
                    try await laptop.ask(Self.reaction(reference, "👍", .remove, id: 4))?.requestResult?.errorCode == 0
                )
                #expect(await eventually { Self.lastSummary(phone) == ["👍1:carol", "🎉1:carol"] })
                // One frame per event and device, none back to the device that sent it.
                for client in [alice, phone, laptop, carol] { try await client.roundTrip(50) }
                let counts = [alice, phone, laptop, carol].map { client in
                    client.collector.frames.filter { $0.payload?.kind == .reaction }.count
                }
                #expect(counts == [4, 3, 3, 2])

                // carol's other device reads her own frames from the stream.
                let tablet = try await TestClient.connect(to: server, as: "carol", group: group, deviceID: "tablet")
                let synced = try #require(try await tablet.streamPage(requestID: 5))
                let summaries = synced.compactMap {
                    if case .reaction(let r)? = $0.payload { Self.describe(r) } else { nil }
                }
                #expect(
                    summaries == [
                        ["👍1:bob"], ["👍2:bob,carol*"], ["👍2:bob,carol*", "🎉1:carol*"], ["👍1:carol*", "🎉1:carol*"],
                    ]
                )
                for client in [alice, phone, laptop, carol, tablet] { await client.close() }
            }
        }
    }

    /// A user who no longer reads a message (here it cleared its history past it) may still take back
    /// its reaction to it, and its other devices learn that it is gone, but not who reacts to the
    /// message now: their frame carries no summary. Before, it carried every emoji with its
    /// reactors, among them reactions made after the clear.
    @Test func aReactionTakenBackFromAMessageNoLongerReadTellsNoSummary() async throws {
        try await withClientGroup { group in
            try await withRelay({ $0.groups = ["team": ["alice", "bob", "carol"]] }) { server in
                let (alice, phone, laptop, carol, reference) = try await Self.lunch(on: server, group: group)
                #expect(try await phone.ask(Self.reaction(reference, "👍", .add, id: 1))?.requestResult?.errorCode == 0)
                let clear = ConversationUpdate.with {
                    $0.conversation = .group("team"); $0.fields = UInt32(ConversationField.clearedSeq.rawValue)
                    $0.clearedSeq = reference.seq
                }
                let cleared = try await RelayUserStateTests.ask(phone, .conversationUpdate(clear), id: 2)
                #expect(cleared?.requestResult?.errorCode == 0)
                #expect(try await carol.ask(Self.reaction(reference, "🎉", .add, id: 3))?.requestResult?.errorCode == 0)
                #expect(await eventually { Self.lastSummary(alice) == ["👍1:bob", "🎉1:carol"] })
                #expect(
                    try await phone.ask(Self.reaction(reference, "👍", .remove, id: 4))?.requestResult?.errorCode == 0
                )
                let removals = {
                    laptop.collector.frames.compactMap {
                        if case .reaction(let r)? = $0.payload, r.action == .remove { r } else { nil }
                    }
                }
                #expect(await eventually { removals().count == 1 })
                #expect(removals().first?.summary.isEmpty == true, "\(removals().map(Self.describe))")
                #expect(removals().first?.emoji == "👍" && removals().first?.userID == "bob")
                // The message's readers get the summary as it now is.
                #expect(await eventually { Self.lastSummary(alice) == ["🎉1:carol"] })
                #expect(await eventually { Self.lastSummary(carol) == ["🎉1:carol*"] })
                for client in [alice, phone, laptop, carol] { await client.close() }
            }
        }
    }
}
#endif
