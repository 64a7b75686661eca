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
    /// limit stops among them with a cursor, and the next page goes on from it (before, the page
    /// held all of them whatever the limit, and so whatever their number and size). A sync by seq
    /// leaves out what the user cleared, as history does.
    @Test func pagesSplitOneEventsEntriesByCursorAndSyncLeavesClearedHistoryOut() async throws {
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
                let first = try #require(
                    try await Self.pages(bob, after: before.nextAfterVersion, limit: 2, firstID: 10, most: 1).first
                )
                #expect(first.conversations.count == 2 && first.hasMore && !first.nextCursor.isEmpty)
                #expect(first.nextAfterVersion == before.nextAfterVersion, "the page completed no version")
                #expect(Set(first.conversations.map(\.version)).count == 1)
                #expect(first.conversations.allSatisfy { $0.unreadCount == 0 })
                // The entry the page left out changes before the next page: it moves to a later
                // version, and comes once, as it now is.
                let all: Set<Conversation?> = [.group("team"), .group("crew"), .oneToOne("alice")]
                let left = try #require(all.subtracting(first.conversations.map(\.conversation)).first ?? nil)
                #expect(left == .group("team"), "entries of one version come by their storage ids")
                try await alice.send(Frame(State.groupMessage("new", id: "p9")))
                #expect(await eventually { bob.collector.messages.count == 4 })
                let rest = try await Self.pages(
                    bob,
                    after: first.nextAfterVersion,
                    cursor: first.nextCursor,
                    limit: 2,
                    firstID: 20
                )
                let read = first.conversations + rest.flatMap(\.conversations)
                #expect(read.count == 3 && Set(read.map(\.conversation)) == all, "\(read.map(\.conversation))")
                #expect(read.last?.conversation == left && read.last?.unreadCount == 1)
                let pages = [first] + rest
                #expect(pages.last?.nextCursor.isEmpty == true && pages.last?.nextAfterVersion == read.last?.version)
                let after = try #require(pages.last).nextAfterVersion
                #expect(try await State.list(bob, after: after, id: 4).conversations.isEmpty)
                // A well-formed cursor the relay did not give only moves the client's own place:
                // past every entry, the page is empty and names no version past the stream's head.
                let far = try #require(
                    try await Self.pages(bob, after: 0, cursor: "999999:1:1:zz", firstID: 40, most: 1).first
                )
                #expect(far.conversations.isEmpty && !far.hasMore && far.nextAfterVersion <= after + 1)
                // A cursor the relay does not give is refused, not guessed at.
                for (index, text) in ["", ":", "7:", "x:1:2:ab", "18446744073709551616:1:1:ab"].enumerated()
                where !text.isEmpty {
                    var bad = Frame(.conversationListRequest(.with { $0.cursor = text }))
                    bad.requestID = 30 + UInt64(index)
                    #expect(
                        try await bob.ask(bad)?.requestResult?.errorCode == RelayProtocol.RequestError.badRequest,
                        "\(text)"
                    )
                }

                try await alice.send(Frame(State.groupMessage("second", id: "p4")))
                #expect(await eventually { bob.collector.messages.count == 5 })
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
                #expect(synced.messages.map(\.seq) == [2, 3], "seq 1 was cleared")
                for client in [alice, bob] { await client.close() }
            }
        }
    }

    /// The pages of `client`'s list after `version` (from `cursor`), `limit` entries a page (0: the
    /// relay's), each asked with the previous page's next version and cursor, until one has no more
    /// or `most` were read; each page validates and holds an entry. Request ids from `firstID`.
    static func pages(
        _ client: TestClient,
        after version: UInt64,
        cursor: String = "",
        limit: UInt32 = 0,
        firstID: UInt64,
        most: Int = 20
    ) async throws -> [ConversationList] {
        var pages: [ConversationList] = []
        var request = ConversationListRequest.with {
            $0.afterVersion = version; $0.cursor = cursor; $0.limit = limit
        }
        while pages.count < most {
            var frame = Frame(.conversationListRequest(request))
            frame.requestID = firstID + UInt64(pages.count)
            guard case .conversationList(let page)? = try await client.ask(frame)?.payload else {
                Issue.record("no conversation list")
                break
            }
            #expect(Frame(.conversationList(page)).validate().isEmpty, "\(Frame(.conversationList(page)).validate())")
            #expect(!page.conversations.isEmpty || !page.hasMore, "a page that has more holds an entry")
            pages.append(page)
            guard page.hasMore else { break }
            request.afterVersion = page.nextAfterVersion
            request.cursor = page.nextCursor
        }
        return pages
    }

    /// A page fits the frame size limit: bob's device decodes with the relay's 4,096 bytes, and five
    /// last messages of 1,500 bytes come in pages of two, whether each entry has its own version or
    /// one mark-read gave them all the same one. Before, a page held up to 100 entries whatever
    /// their size: the answer was about 8 KB and bob's device lost its connection at every request
    /// for its list. Every unread @ past the newest 100 is dropped: before, an entry kept one per
    /// @, and was rewritten whole with every message.
    @Test func aPageFitsTheFrameSizeLimitAndAnEntryKeepsTheNewestHundredAtMe() async throws {
        let codec = FrameCodecOptions(maxFrameSize: 4096)
        let senders = ["carol", "dave", "erin", "frank", "grace"]
        try await withClientGroup { group in
            try await withRelay({
                $0.codec = codec; $0.groups = ["team": ["alice", "bob"]]
            }) { server in
                let bob = try await TestClient.connect(to: server, as: "bob", group: group, deviceID: "b", codec: codec)
                var clients = [bob]
                for sender in senders {
                    let client = try await TestClient.connect(to: server, as: sender, group: group, codec: codec)
                    let text = String(repeating: "x", count: 1500)
                    try await client.send(
                        Frame(Message.c2cText(from: sender, to: "bob", text, clientMsgID: "m-\(sender)"))
                    )
                    clients.append(client)
                }
                #expect(await eventually { bob.collector.messages.count == senders.count })
                let first = try await Self.pages(bob, after: 0, firstID: 1)
                let listed = first.flatMap(\.conversations)
                #expect(first.count == 3 && listed.count == 5, "\(first.map(\.conversations.count))")
                #expect(Set(listed.compactMap(\.conversation?.targetID)) == Set(senders))
                #expect(listed.allSatisfy { $0.lastMessage?.elements.count == 1 && $0.unreadCount == 1 })
                #expect(first.allSatisfy { $0.nextCursor.isEmpty }, "each entry has a version of its own")
                let before = try #require(first.last).nextAfterVersion

                #expect(try await Self.mark(bob, "bob", nil, seq: 0, id: 100) == 0)
                let read = try await Self.pages(bob, after: before, firstID: 200)
                let entries = read.flatMap(\.conversations)
                #expect(read.count == 3 && entries.count == 5, "\(read.map(\.conversations.count))")
                #expect(
                    Set(entries.map(\.version)).count == 1
                        && Set(entries.compactMap(\.conversation?.targetID)) == Set(senders)
                )
                #expect(entries.allSatisfy { $0.readSeq == 1 && $0.unreadCount == 0 && $0.lastMessage != nil })
                #expect(read.dropLast().allSatisfy { !$0.nextCursor.isEmpty && $0.nextAfterVersion == before })

                let alice = try await TestClient.connect(
                    to: server,
                    as: "alice",
                    group: group,
                    deviceID: "a",
                    codec: codec
                )
                clients.append(alice)
                for index in 1...105 {
                    try await alice.send(Frame(State.groupMessage("@bob \(index)", id: "at\(index)", at: ["bob"])))
                }
                #expect(await eventually { bob.collector.messages.count == senders.count + 105 })
                // The five 1,500-byte entries come first: the team's entry is on a later page.
                func teamEntry(_ id: UInt64) async throws -> ConversationInfo? {
                    try await Self.pages(bob, after: 0, firstID: id).flatMap(\.conversations).first {
                        $0.conversation == .group("team")
                    }
                }
                let team = try #require(try await teamEntry(300))
                #expect(team.unreadCount == 105 && team.atMe.map(\.seq) == Array(6...105))
                #expect(try await Self.mark(bob, "bob", .group("team"), seq: 50, id: 350) == 0)
                let half = try #require(try await teamEntry(400))
                #expect(half.unreadCount == 55 && half.atMe.map(\.seq) == Array(51...105))
                for client in clients { await client.close() }
            }
        }
    }

    /// An entry whose last message would not fit one frame with the entry's own fields is served
    /// without it (session.proto: a history request reads it): a message just under what the
    /// relay accepts at a 4,096-byte limit and a 600-byte draft. Before, the page was past the
    /// limit, and bob's device lost its connection at every request for its list.
    @Test func anEntryWhoseLastMessageWouldNotFitComesWithoutIt() async throws {
        let codec = FrameCodecOptions(maxFrameSize: 4096)
        try await withClientGroup { group in
            try await withRelay({ $0.codec = codec }) { server in
                let bob = try await TestClient.connect(to: server, as: "bob", group: group, deviceID: "b", codec: codec)
                let carol = try await TestClient.connect(to: server, as: "carol", group: group, codec: codec)
                let text = String(repeating: "x", count: 3700)
                try await carol.send(Frame(Message.c2cText(from: "carol", to: "bob", text, clientMsgID: "big")))
                #expect(await eventually { bob.collector.messages.count == 1 })
                let draft = ConversationUpdate.with {
                    $0.conversation = .oneToOne("carol"); $0.fields = UInt32(ConversationField.draft.rawValue)
                    $0.draftText = String(repeating: "d", count: 600); $0.timeMs = RelayProtocol.nowMs()
                }
                #expect(try await State.ask(bob, .conversationUpdate(draft), id: 1)?.requestResult?.errorCode == 0)
                let pages = try await Self.pages(bob, after: 0, firstID: 10)
                let entry = try #require(pages.first?.conversations.first)
                #expect(pages.count == 1 && pages[0].conversations.count == 1)
                #expect(entry.lastMessage == nil && entry.maxSeq == 1 && entry.unreadCount == 1)
                #expect(entry.draftText.utf8.count == 600)
                let history = try await RelayHistoryTests.page(bob, id: 20) { $0.conversation = .oneToOne("carol") }
                #expect(history?.messages.map(\.seq) == [1], "history reads the message")
                for client in [bob, carol] { await client.close() }
            }
        }
    }

    /// An entry alone on its page still fits: 60 members with 70-byte ids read a group, and their
    /// read horizons (about 4.6 KB) do not fit bob's 4,096-byte frames, so his entry comes with
    /// fewer of them, the highest, and still its last message. A draft must leave room for the rest of the entry: 3,500 bytes are refused
    /// with 3010, 1,500 taken. Before, the entry came with every horizon, and bob's device lost its
    /// connection at each request for its list; a draft of any size the frame allowed was taken.
    @Test func anEntryWithManyReadHorizonsOrALargeDraftStillFits() async throws {
        let codec = FrameCodecOptions(maxFrameSize: 4096)
        let members = (0..<60).map { "m" + String(repeating: "x", count: 67) + String(10 + $0) }
        try await withClientGroup { group in
            try await withRelay({
                $0.codec = codec; $0.groups = ["team": Set(["alice", "bob"] + members)]
            }) { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group, deviceID: "a")
                let bob = try await TestClient.connect(to: server, as: "bob", group: group, deviceID: "b", codec: codec)
                try await alice.send(Frame(State.groupMessage("read me", id: "r1")))
                #expect(await eventually { bob.collector.messages.count == 1 })
                for (index, member) in members.enumerated() {
                    let client = try await TestClient.connect(to: server, as: member, group: group, deviceID: "d")
                    #expect(try await Self.mark(client, member, .group("team"), seq: 1, id: UInt64(index + 1)) == 0)
                    await client.close()
                }
                func entry(_ id: UInt64) async throws -> ConversationInfo? {
                    try await Self.pages(bob, after: 0, firstID: id).flatMap(\.conversations).first
                }
                let listed = try #require(try await entry(100))
                #expect(
                    listed.readHorizons.count > 10 && listed.readHorizons.count < 60,
                    "\(listed.readHorizons.count)"
                )
                #expect(listed.readHorizons.allSatisfy { $0.readSeq == 1 && members.contains($0.userID) })

                func draft(_ bytes: Int, id: UInt64) async throws -> Int32? {
                    let update = ConversationUpdate.with {
                        $0.conversation = .group("team"); $0.fields = UInt32(ConversationField.draft.rawValue)
                        $0.draftText = String(repeating: "d", count: bytes); $0.timeMs = RelayProtocol.nowMs()
                    }
                    return try await State.ask(bob, .conversationUpdate(update), id: id)?.requestResult?.errorCode
                }
                #expect(try await draft(3500, id: 200) == RelayProtocol.RequestError.tooLargeToDeliver)
                #expect(try await draft(1500, id: 201) == 0)
                let drafted = try #require(try await entry(300))
                #expect(drafted.draftText.utf8.count == 1500 && drafted.readHorizons.count < listed.readHorizons.count)
                #expect(listed.lastMessage != nil && drafted.lastMessage != nil, "horizons go before the last message")
                #expect(bob.channel.isActive && bob.collector.decodeErrors.isEmpty)
                for client in [alice, bob] { await client.close() }
            }
        }
    }
}
#endif
