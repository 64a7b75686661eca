#if Tools
import Foundation
import IMCodec
import IMCodecNIO
import NIOCore
import NIOPosix
import Testing

@testable import imcodec_relay

/// The conversation list's rules at their edges: what a mark-read may not do (show a group the
/// user is not in, read past the newest seq), what counts as an unread @, what recalls, deletes and
/// edits do to the entries, and pages that never split the entries one event changed.
@Suite("Relay: conversation list rules at the edges", .timeLimit(.minutes(2)))
struct RelayConversationListRulesTests {
    typealias State = RelayUserStateTests

    static func mark(
        _ client: TestClient,
        _ user: String,
        _ conversation: Conversation?,
        seq: UInt64,
        id: UInt64
    )
        async throws -> Int32?
    {
        let read = MarkReadEvent.with {
            if let conversation { $0.conversation = conversation } else { $0.allConversations = true }
            $0.userID = user; $0.readSeq = seq; $0.readTimeMs = RelayProtocol.nowMs()
        }
        return try await State.ask(client, .markRead(read), id: id)?.requestResult?.errorCode
    }

    /// A mark-read of a group the user is not in makes no entry (it would show the group's newest
    /// seq and its members' read horizons); one past the newest seq reads only up to it, so later
    /// messages still count as unread.
    @Test func aMarkReadNeitherRevealsOtherGroupsNorReadsAhead() async throws {
        try await withClientGroup { group in
            try await withRelay({ $0.groups = ["team": ["alice", "bob"]] }) { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group, deviceID: "a")
                let bob = try await TestClient.connect(to: server, as: "bob", group: group, deviceID: "b")
                let mallory = try await TestClient.connect(to: server, as: "mallory", group: group, deviceID: "m")
                for index in 1...2 { try await alice.send(Frame(State.groupMessage("m\(index)", id: "m\(index)"))) }
                #expect(await eventually { bob.collector.messages.count == 2 })
                #expect(try await Self.mark(bob, "bob", .group("team"), seq: 1, id: 1) == 0)

                _ = try await Self.mark(mallory, "mallory", .group("team"), seq: 2, id: 2)
                _ = try await Self.mark(mallory, "mallory", nil, seq: 0, id: 3)
                let snooped = try await State.list(mallory, id: 4)
                #expect(State.entry(snooped, .group("team")) == nil, "no entry for a group mallory is not in")

                #expect(try await Self.mark(bob, "bob", .group("team"), seq: 100, id: 5) == 0)
                let read = try #require(State.entry(try await State.list(bob, id: 6), .group("team")))
                #expect(read.readSeq == 2 && read.maxSeq == 2, "read up to the newest seq, not past it")
                try await alice.send(Frame(State.groupMessage("m3", id: "m3")))
                #expect(await eventually { bob.collector.messages.count == 3 })
                let later = try #require(State.entry(try await State.list(bob, id: 7), .group("team")))
                #expect(later.unreadCount == 1 && later.maxSeq == 3)
                for client in [alice, bob, mallory] { await client.close() }
            }
        }
    }

    /// An @ counts only in a message that counts as unread: a targeted message (Tencent: excluded
    /// from the unread count) or one flagged EXCLUDED_FROM_UNREAD_COUNT that @-mentions the user adds
    /// no @, so unread_count >= at_me holds and the list validates.
    @Test func anAtCountsOnlyInAMessageThatCountsAsUnread() async throws {
        try await withClientGroup { group in
            try await withRelay({ $0.groups = ["team": ["alice", "bob", "carol"]] }) { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group, deviceID: "a")
                let bob = try await TestClient.connect(to: server, as: "bob", group: group, deviceID: "b")
                var targeted = State.groupMessage("@bob only you", id: "t1", at: ["bob"])
                targeted.targetReceivers = ["bob"]
                try await alice.send(Frame(targeted))
                var quiet = State.groupMessage("@all fyi", id: "t2", atAll: true)
                quiet.flags = MessageFlags.excludedFromUnreadCount.rawValue
                try await alice.send(Frame(quiet))
                #expect(await eventually { bob.collector.messages.count == 2 })
                // State.list checks that the list validates.
                let team = try #require(State.entry(try await State.list(bob, id: 1), .group("team")))
                #expect(team.unreadCount == 0 && team.atMe.isEmpty)
                try await alice.send(Frame(State.groupMessage("@bob now", id: "t3", at: ["bob"])))
                #expect(await eventually { bob.collector.messages.count == 3 })
                let now = try #require(State.entry(try await State.list(bob, id: 2), .group("team")))
                #expect(now.unreadCount == 1 && now.atMe.map(\.seq) == [3])
                for client in [alice, bob] { await client.close() }
            }
        }
    }

    /// A recall takes its message out of every receiver's unread count and @, and the entry's last
    /// message shows it recalled (ids and status, no content); an edit of the last message shows
    /// the edited text. Each reaches the list's incremental sync.
    @Test func recallsAndEditsChangeTheEntries() async throws {
        try await withClientGroup { group in
            try await withRelay({ $0.groups = ["team": ["alice", "bob"]] }) { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group, deviceID: "a")
                let bob = try await TestClient.connect(to: server, as: "bob", group: group, deviceID: "b")
                try await alice.send(Frame(State.groupMessage("first", id: "r1")))
                try await alice.send(Frame(State.groupMessage("@bob oops", id: "r2", at: ["bob"])))
                #expect(await eventually { bob.collector.messages.count == 2 })
                let before = try await State.list(bob, id: 1)
                let unread = try #require(State.entry(before, .group("team")))
                #expect(unread.unreadCount == 2 && unread.atMe.count == 1)

                let recall = RecallEvent.with {
                    $0.message = bob.collector.messages[1].reference; $0.revokerID = "alice"
                    $0.timeMs = RelayProtocol.nowMs()
                }
                #expect(try await State.ask(alice, .recall(recall), id: 2)?.requestResult?.errorCode == 0)
                let changed = try await State.list(bob, after: before.nextAfterVersion, id: 3)
                let recalled = try #require(State.entry(changed, .group("team")), "the recall reaches the sync")
                #expect(recalled.unreadCount == 1 && recalled.atMe.isEmpty)
                #expect(recalled.lastMessage?.status == .recalled && recalled.lastMessage?.elements.isEmpty == true)

                try await alice.send(Frame(State.groupMessage("third", id: "r3")))
                #expect(await eventually { bob.collector.messages.count == 3 })
                let third = try await State.list(bob, id: 4)
                let edit = EditEvent.with {
                    $0.message = bob.collector.messages[2].reference; $0.editorID = "alice"
                    $0.timeMs = RelayProtocol.nowMs(); $0.newMessage = State.groupMessage("third, edited", id: "r3")
                }
                #expect(try await State.ask(alice, .edit(edit), id: 5)?.requestResult?.errorCode == 0)
                let edited = try #require(
                    State.entry(try await State.list(bob, after: third.nextAfterVersion, id: 6), .group("team"))
                )
                #expect(edited.lastMessage?.previewText == "third, edited" && edited.lastMessage?.editVersion == 1)
                for client in [alice, bob] { await client.close() }
            }
        }
    }

    /// A mark-read of all conversations changes every entry at one version; a page with a smaller
    /// limit holds all of them rather than split them (the next page starts after its version).
    /// A sync by seq leaves out what the user cleared, as history does.
    @Test func pagesKeepOneEventsEntriesTogetherAndSyncLeavesClearedHistoryOut() async throws {
        try await withClientGroup { group in
            try await withRelay({ $0.groups = ["team": ["alice", "bob"], "crew": ["alice", "bob"]] }) { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group, deviceID: "a")
                let bob = try await TestClient.connect(to: server, as: "bob", group: group, deviceID: "b")
                try await alice.send(Frame(State.groupMessage("to team", id: "p1")))
                try await alice.send(
                    Frame(Message.groupText(from: "alice", group: "crew", "to crew", clientMsgID: "p2"))
                )
                try await alice.send(
                    Frame(Message(from: "alice", in: .oneToOne("bob"), elements: [.text("hi")], clientMsgID: "p3"))
                )
                #expect(await eventually { bob.collector.messages.count == 3 })
                let before = try await State.list(bob, id: 1)
                #expect(before.conversations.count == 3)
                #expect(try await Self.mark(bob, "bob", nil, seq: 0, id: 2) == 0)
                var request = Frame(
                    .conversationListRequest(
                        .with {
                            $0.afterVersion = before.nextAfterVersion; $0.limit = 2
                        }
                    )
                )
                request.requestID = 3
                guard case .conversationList(let page)? = try await bob.ask(request)?.payload else {
                    Issue.record("no conversation list")
                    return
                }
                #expect(page.conversations.count == 3, "one event's entries are never split")
                #expect(Set(page.conversations.map(\.version)).count == 1 && !page.hasMore)
                #expect(page.conversations.allSatisfy { $0.unreadCount == 0 })
                #expect(try await State.list(bob, after: page.nextAfterVersion, id: 4).conversations.isEmpty)

                try await alice.send(Frame(State.groupMessage("second", id: "p4")))
                #expect(await eventually { bob.collector.messages.count == 4 })
                let clear = ConversationUpdate.with {
                    $0.conversation = .group("team"); $0.fields = UInt32(ConversationField.clearedSeq.rawValue)
                    $0.clearedSeq = 1
                }
                #expect(try await State.ask(bob, .conversationUpdate(clear), id: 5)?.requestResult?.errorCode == 0)
                let sync = try await State.ask(bob, .syncRequest(.with { $0.conversation = .group("team") }), id: 6)
                guard case .syncResponse(let synced)? = sync?.payload else {
                    Issue.record("no sync response")
                    return
                }
                #expect(synced.messages.map(\.seq) == [2], "seq 1 was cleared")
                for client in [alice, bob] { await client.close() }
            }
        }
    }
}
#endif
