#if Tools
import Foundation
import IMCodec
import IMCodecNIO
import NIOCore
import NIOPosix
import Testing

@testable import imcodec_relay

/// Disappearing messages and the conversation they are sent in: the relay keeps each conversation's
/// timer (events.proto `DisappearingTimerEvent`) and stamps it on the messages sent under it, and a
/// message that expired unread leaves the conversation list's unread count and @. Both across a
/// restart, on both durable stores (the timer and the list are state records).
@Suite("Relay: disappearing timers and expired unread messages", .timeLimit(.minutes(2)))
struct RelayDisappearingTests {
    static func setTimer(
        _ client: TestClient,
        by user: String,
        in conversation: Conversation,
        _ seconds: UInt32,
        id: UInt64
    ) async throws -> Int32? {
        let event = DisappearingTimerEvent.with {
            $0.conversation = conversation; $0.expireAfterS = seconds; $0.operatorID = user
            $0.timeMs = RelayProtocol.nowMs()
        }
        return try await RelayUserStateTests.ask(client, .disappearingTimer(event), id: id)?.requestResult?.errorCode
    }

    /// A one-to-one text from alice to bob with the timer `seconds` (0: none).
    static func text(_ text: String, id: String, timer seconds: UInt32 = 0) -> Message {
        var message = Message.c2cText(from: "alice", to: "bob", text, clientMsgID: id)
        message.expireAfterS = seconds
        return message
    }

    /// The timer each message got and how long it lives: `[(expire_after_s, expire_at_ms -
    /// server_time_ms)]`.
    static func lifetimes(_ messages: [Message]) -> [[Int64]] {
        messages.map { [Int64($0.expireAfterS), $0.expireAtMs == 0 ? 0 : $0.expireAtMs - $0.serverTimeMs] }
    }

    /// message.proto: a message carries its conversation's timer, "copied from the conversation's
    /// timer (DisappearingTimerEvent) when the message is sent". A sender that leaves it out, or asks
    /// for longer, gets the conversation's (the receivers and the sender's other devices read it,
    /// with `expire_at_ms` to match); one that asks for less keeps its own. The timer is kept
    /// across a restart, the peer turns it off, and a group's member sets the group's. Before, the
    /// relay kept no timer: a message sent without one lived forever in a conversation whose
    /// members had set one.
    @Test(arguments: StoreBackend.allCases)
    func aConversationsTimerIsStampedOnTheMessagesSentUnderIt(_ backend: StoreBackend) async throws {
        let database = try await TestStore(backend)
        defer { database.remove() }
        let configure: (inout RelayConfiguration) -> Void = {
            $0.store = database.location; $0.groups = ["team": ["alice", "bob", "carol"]]
        }
        try await withClientGroup { group in
            try await withRelay(configure) { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group, deviceID: "a")
                let laptop = try await TestClient.connect(to: server, as: "alice", group: group, deviceID: "a2")
                let bob = try await TestClient.connect(to: server, as: "bob", group: group, deviceID: "b")
                // Without a timer a message has none.
                try await alice.send(Frame(Self.text("before", id: "t-0")))
                #expect(try await Self.setTimer(alice, by: "alice", in: .oneToOne("bob"), 3600, id: 1) == 0)
                for (index, timer) in [UInt32(0), 7200, 60].enumerated() {
                    try await alice.send(Frame(Self.text("m\(index)", id: "t-\(index + 1)", timer: timer)))
                }
                #expect(
                    await eventually {
                        bob.collector.messages.count == 4 && laptop.collector.messages.count == 4
                            && alice.collector.acks.count == 4
                    }
                )
                #expect(alice.collector.acks.allSatisfy { $0.errorCode == 0 })
                for client in [bob, laptop] {
                    #expect(
                        Self.lifetimes(client.collector.messages)
                            == [[0, 0], [3600, 3_600_000], [3600, 3_600_000], [60, 60_000]]
                    )
                }
                for client in [alice, laptop, bob] { await client.close() }
            }
            try await withRelay(configure) { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group, deviceID: "a")
                let bob = try await TestClient.connect(to: server, as: "bob", group: group, deviceID: "b")
                let carol = try await TestClient.connect(to: server, as: "carol", group: group, deviceID: "c")
                try await alice.send(Frame(Self.text("after a restart", id: "t-4")))
                #expect(await eventually { bob.collector.messages.count == 1 })
                // The peer turns it off: a message keeps its own timer, or none.
                #expect(try await Self.setTimer(bob, by: "bob", in: .oneToOne("alice"), 0, id: 2) == 0)
                try await alice.send(Frame(Self.text("off", id: "t-5")))
                try await alice.send(Frame(Self.text("own", id: "t-6", timer: 120)))
                // A member sets the group's timer.
                #expect(try await Self.setTimer(carol, by: "carol", in: .group("team"), 600, id: 3) == 0)
                try await alice.send(
                    Frame(Message.groupText(from: "alice", group: "team", "to the team", clientMsgID: "g-1"))
                )
                #expect(await eventually { bob.collector.messages.count == 4 && carol.collector.messages.count == 1 })
                #expect(
                    Self.lifetimes(bob.collector.messages)
                        == [[3600, 3_600_000], [0, 0], [120, 120_000], [600, 600_000]]
                )
                #expect(Self.lifetimes(carol.collector.messages) == [[600, 600_000]])
                // What the store keeps is what was delivered: a new device reads the same by sync.
                let tablet = try await TestClient.connect(to: server, as: "bob", group: group, deviceID: "tablet")
                let synced = try #require(try await tablet.streamPage(requestID: 4)).compactMap(\.messagePayload)
                #expect(
                    Self.lifetimes(synced).suffix(4) == [[3600, 3_600_000], [0, 0], [120, 120_000], [600, 600_000]]
                )
                for client in [alice, bob, carol, tablet] { await client.close() }
            }
        }
    }

    /// Asks `client`'s conversation list after `version` until `done` holds for it (the sweep that
    /// erases expired messages runs on its own schedule); gives up after 500 asks.
    static func list(
        _ client: TestClient,
        after version: UInt64,
        ids: inout UInt64,
        until done: (ConversationList) -> Bool
    ) async throws -> ConversationList {
        var list = ConversationList()
        for _ in 0..<500 {
            ids += 1
            list = try await RelayUserStateTests.list(client, after: version, id: ids)
            if done(list) { break }
            try await Task.sleep(nanoseconds: 20_000_000)
        }
        return list
    }

    /// A disappearing message that expired unread leaves the unread count and the @ of everyone it
    /// reached, and a conversation whose last message expired shows none: the changed entries come
    /// in the list's next incremental sync, once the sweep erased the message, and nothing new is
    /// served by stream sync. Also for a message that expired while no relay ran (the first sweep
    /// at start). Before, the list counted an expired message as unread forever.
    @Test(arguments: StoreBackend.allCases)
    func anExpiredUnreadMessageLeavesTheUnreadCountAndTheNextListSyncHasIt(_ backend: StoreBackend) async throws {
        let database = try await TestStore(backend)
        defer { database.remove() }
        let clock = TestClock()
        let configure: (inout RelayConfiguration) -> Void = {
            $0.store = database.location; $0.clock = clock.now; $0.groups = ["team": ["alice", "bob", "carol"]]
            $0.expirySweepInterval = .milliseconds(20)
        }
        func fleeting(_ text: String, id: String) -> Message {
            var message = RelayUserStateTests.groupMessage(text, id: id, at: ["bob"])
            message.expireAfterS = 3600
            return message
        }
        let team = Conversation.group("team")
        var ids: UInt64 = 0
        var version: UInt64 = 0
        var lastExpiry: Int64 = 0
        try await withClientGroup { group in
            try await withRelay(configure) { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group, deviceID: "a")
                let bob = try await TestClient.connect(to: server, as: "bob", group: group, deviceID: "b")
                try await alice.send(Frame(fleeting("@bob secret", id: "f-1")))
                try await alice.send(Frame(RelayUserStateTests.groupMessage("stays", id: "f-2")))
                // The last message of alice's conversation with bob disappears.
                try await alice.send(Frame(RelayDisappearingTests.text("bye", id: "f-3", timer: 3600)))
                #expect(await eventually { bob.collector.messages.count == 3 && alice.collector.acks.count == 3 })
                lastExpiry = alice.collector.acks[2].serverTimeMs + 3_600_000
                ids += 1
                let before = try await RelayUserStateTests.list(bob, id: ids)
                let teamBefore = RelayUserStateTests.entry(before, team)
                #expect(teamBefore?.unreadCount == 2 && teamBefore?.atMe.map(\.seq) == [1])
                let direct = RelayUserStateTests.entry(before, .oneToOne("alice"))
                #expect(direct?.unreadCount == 1 && direct?.lastMessage?.firstText == "bye")
                version = before.nextAfterVersion
                let beforeExpiry = try #require(try await bob.streamPage(requestID: 100)).count

                clock.advance(past: lastExpiry)
                let after = try await Self.list(bob, after: version, ids: &ids) { $0.conversations.count == 2 }
                let teamAfter = RelayUserStateTests.entry(after, team)
                #expect(teamAfter?.unreadCount == 1 && teamAfter?.atMe.isEmpty == true)
                #expect(teamAfter?.lastMessage?.firstText == "stays" && teamAfter?.maxSeq == 2)
                let directAfter = RelayUserStateTests.entry(after, .oneToOne("alice"))
                #expect(directAfter?.unreadCount == 0 && directAfter?.lastMessage == nil)
                #expect(after.nextAfterVersion > version)
                // The positions the change took serve nothing (the sweep emptied the messages' own).
                let synced = try #require(try await bob.streamPage(requestID: 101))
                #expect(beforeExpiry == 3 && synced.compactMap(\.messagePayload).map(\.firstText) == ["stays"])
                version = after.nextAfterVersion

                // Another one, which expires while no relay runs.
                try await alice.send(Frame(fleeting("@bob again", id: "f-4")))
                #expect(await eventually { bob.collector.messages.count == 4 && alice.collector.acks.count == 4 })
                lastExpiry = alice.collector.acks[3].serverTimeMs + 3_600_000
                ids += 1
                let unread = try await RelayUserStateTests.list(bob, after: version, id: ids)
                #expect(RelayUserStateTests.entry(unread, team)?.unreadCount == 2)
                version = unread.nextAfterVersion
                for client in [alice, bob] { await client.close() }
            }
            clock.advance(past: lastExpiry)
            try await withRelay(configure) { server in
                let bob = try await TestClient.connect(to: server, as: "bob", group: group, deviceID: "b")
                let after = try await Self.list(bob, after: version, ids: &ids) { !$0.conversations.isEmpty }
                let teamAfter = RelayUserStateTests.entry(after, team)
                #expect(teamAfter?.unreadCount == 1 && teamAfter?.atMe.isEmpty == true)
                #expect(after.conversations.count == 1)
                let carol = try await TestClient.connect(to: server, as: "carol", group: group, deviceID: "c")
                ids += 1
                let carols = try await RelayUserStateTests.list(carol, id: ids)
                #expect(RelayUserStateTests.entry(carols, team)?.unreadCount == 1)
                for client in [bob, carol] { await client.close() }
            }
        }
    }

    /// The disappearing messages retention dropped (or a recall removed) before their time leave
    /// the relay's list of what to erase at the next pruning, not at their time: 250 messages that
    /// expire in an hour, in a conversation that keeps 10, leave at most 23 entries (the list,
    /// pruned here from 16 entries on rather than the relay's 1,024 so that the test stays short
    /// under ThreadSanitizer, keeps the 11 entries still due, and is pruned again past twice
    /// that), and the 10 kept, with one sent before them elsewhere, are still erased when their
    /// hour comes. Before, every message sent with a timer left an entry for as long as its timer ran.
    @Test func disappearingMessagesDroppedBeforeTheirTimeAreForgotten() async throws {
        let clock = FrozenClock()
        try await withClientGroup { group in
            try await withRelay({
                $0.maxMessagesPerConversation = 10; $0.clock = clock.now
            }) { server in
                try await server.withRouter { $0.expiring = PrunedHeap(minimumPruneAt: 16) }.get()
                let alice = try await TestClient.connect(to: server, as: "alice", group: group)
                // One to carol first: kept, and due, through every pruning.
                var first = Message.c2cText(from: "alice", to: "carol", "first", clientMsgID: "c-1")
                first.expireAfterS = 3600
                try await alice.send(Frame(first))
                for index in 0..<250 { try await alice.send(Frame(Self.text("m", id: "e-\(index)", timer: 3600))) }
                #expect(await eventually { alice.collector.acks.count == 251 })
                #expect(alice.collector.acks.allSatisfy { $0.errorCode == 0 })
                let due = try await server.withRouter { router in
                    (router.expiring.count, router.expiring.heap.unordered.filter(router.isDue).map(\.seq).sorted())
                }.get()
                #expect(due.0 <= 23, "\(due.0) entries")
                #expect(due.1 == [1] + Array(241...250))
                clock.advance(by: 3_600_000)
                // The sweep, as it runs every second, without waiting for it.
                let after = try await server.withRouter { router in
                    router.eraseExpired(at: router.nowMs())
                    return (router.expiring.count, router.conversations.values.map(\.removed.count).reduce(0, +))
                }.get()
                #expect(after == (0, 11))
                await alice.close()
            }
        }
    }
}
#endif
