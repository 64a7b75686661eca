#if Tools
import Foundation
import IMCodec
import IMCodecNIO
import NIOCore
import NIOPosix
import Testing

@testable import imcodec_relay

/// Replies (message.proto `quote`, `quote_snapshot`): the relay checks a reply's quote against the
/// message it names, and what the snapshot quoted of a message that is recalled, deleted for
/// everyone, expired or view-once is not served again.
@Suite("Relay: quotes", .timeLimit(.minutes(2)))
struct RelayQuoteTests {
    static let badQuote = RelayProtocol.AckError.badQuote

    /// A reply from `user` in `conversation` quoting `quoted` (as a receiver got it) with a snapshot
    /// of `text` by `author` (the quoted message's sender when `nil`), changed by `change`.
    static func reply(
        from user: String,
        in conversation: Conversation,
        to quoted: Message,
        quoting text: String,
        author: String? = nil,
        id: String,
        _ change: (inout Message) -> Void = { _ in }
    ) -> Message {
        var reply = Message(from: user, in: conversation, elements: [.text("re: \(text)")], clientMsgID: id)
        reply.quote = quoted.reference
        reply.quoteSnapshot = QuoteSnapshot.with {
            $0.authorID = author ?? quoted.senderID; $0.text = text; $0.elementKind = "text"
        }
        change(&reply)
        return reply
    }

    /// bob's edit of his `reply` to `text`, its new_message the reply as received otherwise, changed
    /// by `change`.
    static func edit(
        _ reply: Message,
        to text: String,
        requestID: UInt64,
        _ change: (inout Message) -> Void = { _ in }
    ) -> Frame {
        editFrame(reply, by: "bob", to: [.text(text)], requestID: requestID, change)
    }

    /// The ack of the message `id` that `client` sent.
    static func ack(_ client: TestClient, _ id: String) async -> SendAck? {
        _ = await eventually { client.collector.acks.contains { $0.clientMsgID == id } }
        return client.collector.acks.first { $0.clientMsgID == id }
    }

    /// A relay on `database` whose group `team` (alice, bob) keeps two messages a conversation.
    static func keepingTwo(_ database: TestStore) -> (inout RelayConfiguration) -> Void {
        {
            $0.store = database.location; $0.groups = ["team": ["alice", "bob"]]
            $0.maxMessagesPerConversation = 2
        }
    }

    /// The quote records (``StateRecordKey/quote(of:reply:)``) `database` holds.
    static func quoteRecords(_ database: TestStore) throws -> Int {
        let store = try database.open()
        defer { store.close() }
        return try store.load().records.keys.filter { if case .quote = $0 { true } else { false } }.count
    }

    /// Before, the relay passed a reply's quote on unread: a member could quote a message sent to
    /// others only, one from another conversation, or make another user the author of words they
    /// never wrote. Now each such reply is refused (1009) and reaches no one; a reply that says
    /// what is so passes, in its conversation or in another one its sender reads ("reply privately").
    @Test func aReplyQuotesOnlyWhatItsSenderReadsAndNamesItsRealAuthor() async throws {
        let configure: (inout RelayConfiguration) -> Void = {
            $0.groups = ["team": ["alice", "bob", "carol"], "other": ["dave", "alice"]]
        }
        try await withClientGroup { group in
            try await withRelay(configure) { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group)
                let bob = try await TestClient.connect(to: server, as: "bob", group: group)
                let carol = try await TestClient.connect(to: server, as: "carol", group: group)
                let dave = try await TestClient.connect(to: server, as: "dave", group: group)
                let team = Conversation.group("team")
                try await alice.send(
                    Frame(Message.groupText(from: "alice", group: "team", "hello team", clientMsgID: "h"))
                )
                var forBob = Message.groupText(from: "alice", group: "team", "for bob only", clientMsgID: "t")
                forBob.targetReceivers = ["bob"]
                try await alice.send(Frame(forBob))
                #expect(await eventually { bob.collector.messages.count == 2 && carol.collector.messages.count == 1 })
                let hello = try #require(bob.collector.messages.first)
                let targeted = try #require(bob.collector.messages.last)

                // What is so passes and reaches the group with its snapshot.
                try await bob.send(Frame(Self.reply(from: "bob", in: team, to: hello, quoting: "hello team", id: "q1")))
                #expect(await Self.ack(bob, "q1")?.errorCode == 0)
                #expect(await eventually { carol.collector.messages.count == 2 })
                #expect(carol.collector.messages.last?.quoteSnapshot?.text == "hello team")
                #expect(carol.collector.messages.last?.quote?.seq == hello.seq)
                // An edit's new_message says what is so too (3003 when not).
                let q1 = try #require(carol.collector.messages.last)
                func edit(_ change: (inout Message) -> Void, id: UInt64) async throws -> Int32? {
                    let frame = Self.edit(q1, to: "re: hello team (edited)", requestID: id, change)
                    return try await bob.ask(frame)?.requestResult?.errorCode
                }
                #expect(try await edit({ _ in }, id: 60) == 0)
                #expect(try await edit({ $0.quoteSnapshot?.authorID = "carol" }, id: 61) == 3003)
                #expect(try await edit({ $0.quote?.senderID = "carol" }, id: 62) == 3003)
                // So does a reply in another conversation its sender is in, to a message it reads.
                let privately = Self.reply(
                    from: "carol",
                    in: .oneToOne("alice"),
                    to: hello,
                    quoting: "hello team",
                    id: "q2"
                )
                try await carol.send(Frame(privately))
                #expect(await Self.ack(carol, "q2")?.errorCode == 0)
                // And a quote of a message the relay does not keep: nothing to check it against.
                var unknown = hello
                unknown.seq = 99; unknown.serverMsgUID = ""; unknown.clientMsgID = "never-sent"
                // A quote the relay cannot attribute goes out without author and text: the message
                // it names was never sent, or its uid names none (whatever seq and sender it claims).
                try await carol.send(Frame(Self.reply(from: "carol", in: team, to: unknown, quoting: "?", id: "q3")))
                #expect(await Self.ack(carol, "q3")?.errorCode == 0)
                var bogus = hello
                bogus.serverMsgUID = "no-such-uid"
                try await carol.send(Frame(Self.reply(from: "carol", in: team, to: bogus, quoting: "fired", id: "q4")))
                #expect(await Self.ack(carol, "q4")?.errorCode == 0)
                #expect(await eventually { alice.collector.messages.count == 4 })
                for id in ["q3", "q4"] {
                    let got = alice.collector.messages.first { $0.clientMsgID == id }
                    #expect(got?.quoteSnapshot?.authorID == "" && got?.quoteSnapshot?.text == "", "\(id)")
                    #expect(got?.quote?.senderID == "" && got?.quoteSnapshot?.elementKind == "text", "\(id)")
                }
                // An online-only message is attributed by its sender and client id, not by its uid alone.
                var live = Message.groupText(from: "alice", group: "team", "now only", clientMsgID: "o")
                live.flags = MessageFlags.onlineUserOnly.rawValue
                try await alice.send(Frame(live))
                #expect(await eventually { carol.collector.messages.contains { $0.clientMsgID == "o" } })
                let online = try #require(carol.collector.messages.first { $0.clientMsgID == "o" })
                try await carol.send(
                    Frame(Self.reply(from: "carol", in: team, to: online, quoting: "now only", id: "q6"))
                )
                let byUID = Self.reply(from: "carol", in: team, to: online, quoting: "now only", id: "q7") {
                    $0.quote!.senderID = ""; $0.quote!.clientMsgID = ""; $0.quoteSnapshot!.authorID = ""
                }
                try await carol.send(Frame(byUID))
                #expect(await eventually { alice.collector.messages.count == 6 })
                let attributed = alice.collector.messages.first { $0.clientMsgID == "q6" }
                #expect(attributed?.quoteSnapshot?.authorID == "alice" && attributed?.quoteSnapshot?.text == "now only")
                #expect(alice.collector.messages.first { $0.clientMsgID == "q7" }?.quoteSnapshot?.text == "")
                // A one-to-one quote named from the receiver's side, by uid only, is found and kept whole.
                try await alice.send(Frame(Message.c2cText(from: "alice", to: "bob", "psst", clientMsgID: "p")))
                #expect(await eventually { bob.collector.messages.contains { $0.clientMsgID == "p" } })
                let psst = try #require(bob.collector.messages.first { $0.clientMsgID == "p" })
                let whisper = Self.reply(from: "bob", in: .oneToOne("alice"), to: psst, quoting: "psst", id: "q5") {
                    $0.quote!.senderID = ""; $0.quote!.clientMsgID = ""; $0.quoteSnapshot!.authorID = ""
                }
                try await bob.send(Frame(whisper))
                #expect(await Self.ack(bob, "q5")?.errorCode == 0)
                #expect(await eventually { alice.collector.messages.contains { $0.clientMsgID == "q5" } })
                #expect(alice.collector.messages.first { $0.clientMsgID == "q5" }?.quoteSnapshot?.text == "psst")

                // A group erin joins after alice wrote in it: erin does not read what came before.
                let club = Conversation.group("club")
                let erin = try await TestClient.connect(to: server, as: "erin", group: group)
                _ = try await alice.ask(RelayProtocol.membershipFrame(.join, club, requestID: 50))
                try await alice.send(
                    Frame(Message.groupText(from: "alice", group: "club", "before erin", clientMsgID: "c"))
                )
                let old = try #require(await Self.ack(alice, "c"))
                _ = try await erin.ask(RelayProtocol.membershipFrame(.join, club, requestID: 51))
                #expect(alice.collector.result(of: 50)?.errorCode == 0 && erin.collector.result(of: 51)?.errorCode == 0)
                var beforeErin = Message.groupText(from: "alice", group: "club", "before erin", clientMsgID: "c")
                beforeErin.seq = old.seq

                // What is not so is refused.
                let refused: [(TestClient, Message)] = [
                    // Words put in bob's mouth: the snapshot's author is not the quoted message's sender
                    // (the quote names it by its uid only).
                    (
                        carol,
                        Self.reply(from: "carol", in: team, to: hello, quoting: "I owe you", author: "bob", id: "r1") {
                            $0.quote!.senderID = ""
                        }
                    ),
                    // The same where the relay does not keep the message: the snapshot's author is not
                    // the quote's sender.
                    (carol, Self.reply(from: "carol", in: team, to: unknown, quoting: "?", author: "bob", id: "r7")),
                    // The quote's sender_id names bob; the message (by its uid) is alice's.
                    (
                        carol,
                        Self.reply(from: "carol", in: team, to: hello, quoting: "hello team", author: "", id: "r2") {
                            $0.quote!.senderID = "bob"
                        }
                    ),
                    // A message sent to bob only.
                    (carol, Self.reply(from: "carol", in: team, to: targeted, quoting: "for bob only", id: "r3")),
                    // A conversation dave is not in, from a conversation he is in.
                    (dave, Self.reply(from: "dave", in: .group("other"), to: hello, quoting: "hello team", id: "r4")),
                    // A message from before its sender joined.
                    (erin, Self.reply(from: "erin", in: club, to: beforeErin, quoting: "before erin", id: "r8")),
                    // A nickname with no author id: a name the relay cannot check.
                    (
                        carol,
                        Self.reply(from: "carol", in: team, to: hello, quoting: "hello team", author: "", id: "r9") {
                            $0.quote!.senderID = ""; $0.quoteSnapshot!.authorNickname = "Bob"
                        }
                    ),
                    // A snapshot that describes no quote.
                    (
                        carol,
                        Self.reply(from: "carol", in: team, to: hello, quoting: "hello team", id: "r5") {
                            $0.quote = nil
                        }
                    ),
                    // The quote's seq and its uid name two messages.
                    (
                        carol,
                        Self.reply(from: "carol", in: team, to: hello, quoting: "hello team", id: "r6") {
                            $0.quote!.seq = targeted.seq
                        }
                    ),
                ]
                for (client, reply) in refused {
                    try await client.send(Frame(reply))
                    let ack = await Self.ack(client, reply.clientMsgID)
                    #expect(ack?.errorCode == Self.badQuote, "\(reply.clientMsgID): \(String(describing: ack))")
                    #expect(ack?.seq == 0 && ack?.serverMsgUID.isEmpty == true)
                }
                // None of them reached anyone.
                try await alice.roundTrip(90)
                try await bob.roundTrip(91)
                #expect(alice.collector.messages.map(\.clientMsgID) == ["q1", "q2", "q3", "q4", "q6", "q7", "q5"])
                #expect(bob.collector.messages.map(\.clientMsgID) == ["h", "t", "q3", "q4", "o", "q6", "q7", "p"])
                for client in [alice, bob, carol, dave, erin] { await client.close() }
            }
        }
    }

    /// Before, a recall erased the recalled message, but every reply that quoted it still showed
    /// its text in its `quote_snapshot`, to every member and in every read, forever. Now the
    /// replies kept with its text lose that text in the store (their author and element kind stay),
    /// and so do the edits kept about them; this holds for a reply kept under an earlier start of
    /// the relay. A reply sent after the recall goes out without the text. A reply to a view-once
    /// message goes out without the text too.
    @Test(arguments: StoreBackend.allCases)
    func aRecallTakesTheQuotedTextOutOfEveryReply(_ backend: StoreBackend) async throws {
        let database = try await TestStore(backend)
        defer { database.remove() }
        let configure: (inout RelayConfiguration) -> Void = {
            $0.store = database.location; $0.groups = ["team": ["alice", "bob", "carol"]]
        }
        let team = Conversation.group("team")
        var secret = Message()
        try await withClientGroup { group in
            try await withRelay(configure) { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group)
                let bob = try await TestClient.connect(to: server, as: "bob", group: group)
                try await alice.send(
                    Frame(Message.groupText(from: "alice", group: "team", "the plan", clientMsgID: "s"))
                )
                #expect(await eventually { bob.collector.messages.count == 1 })
                secret = try #require(bob.collector.messages.first)
                try await bob.send(Frame(Self.reply(from: "bob", in: team, to: secret, quoting: "the plan", id: "q1")))
                #expect(await eventually { alice.collector.messages.count == 1 })
                // bob edits his reply; the edit carries the snapshot too.
                let reply = try #require(alice.collector.messages.last)
                let edit = Self.edit(reply, to: "re: the plan (edited)", requestID: 1)
                #expect(try await bob.ask(edit)?.requestResult?.errorCode == 0)
                for client in [alice, bob] { await client.close() }
            }
            // The reply is a state record of its own, naming the message it quotes.
            let quotes = try database.open().load().records.keys.compactMap {
                if case .quote(let quoted, let reply) = $0 { [quoted.seq, reply.seq] } else { nil }
            }
            #expect(quotes == [[secret.seq, secret.seq + 1]])
            try await withRelay(configure) { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group)
                let bob = try await TestClient.connect(to: server, as: "bob", group: group)
                let carol = try await TestClient.connect(to: server, as: "carol", group: group)
                // Before the recall, carol reads the quoted text.
                let before = try #require(try await carol.streamPage(requestID: 1))
                #expect(before.compactMap(\.messagePayload).last { $0.quote != nil }?.quoteSnapshot?.text == "the plan")
                let recall = RecallEvent.with {
                    $0.message = secret.reference; $0.revokerID = "alice"
                }
                #expect(
                    try await alice.ask(RelayProtocol.answer(.recall(recall), requestID: 2))?.requestResult?.errorCode
                        == 0
                )

                // Every read serves the reply and its edit without the text, with its author.
                let synced = try #require(try await carol.streamPage(requestID: 3))
                let replies = synced.compactMap(\.messagePayload).filter { $0.quote != nil }
                #expect(replies.count == 1 && replies.allSatisfy { $0.quoteSnapshot?.text == "" })
                #expect(replies.first?.quoteSnapshot?.authorID == "alice" && replies.first?.firstText == "re: the plan")
                let edits = synced.compactMap { if case .edit(let e)? = $0.payload { e } else { nil } }
                #expect(edits.count == 1 && edits.first?.newMessage?.quoteSnapshot?.text == "")
                #expect(edits.first?.newMessage?.firstText == "re: the plan (edited)")
                let history = try await RelayHistoryTests.page(carol, id: 4) { $0.conversation = team }
                let kept = history?.messages.first { $0.clientMsgID == "q1" }
                #expect(kept?.quoteSnapshot?.text == "" && kept?.quoteSnapshot?.authorID == "alice")
                #expect(kept?.quoteSnapshot?.elementKind == "text" && kept?.quote?.seq == secret.seq)

                // A reply sent now, to the recalled message, goes out without the text.
                try await carol.send(
                    Frame(Self.reply(from: "carol", in: team, to: secret, quoting: "the plan", id: "q2"))
                )
                #expect(await Self.ack(carol, "q2")?.errorCode == 0)
                #expect(await eventually { bob.collector.messages.contains { $0.clientMsgID == "q2" } })
                let late = bob.collector.messages.first { $0.clientMsgID == "q2" }
                #expect(late?.quoteSnapshot?.text == "" && late?.quoteSnapshot?.authorID == "alice")
                // So does an edit of bob's reply made from his old copy; sent again (a lost answer),
                // it is answered and not applied twice.
                let reply = try #require(carol.collector.messages.first { $0.clientMsgID == "q1" } ?? replies.first)
                let edit = Self.edit(reply, to: "re: the plan (again)", requestID: 6) {
                    $0.quoteSnapshot?.text = "the plan"
                }
                #expect(try await bob.ask(edit)?.requestResult?.errorCode == 0)
                #expect(await eventually { carol.collector.frames.contains { $0.payload?.kind == .edit } })
                let edited = carol.collector.frames.compactMap { if case .edit(let e)? = $0.payload { e } else { nil } }
                #expect(edited.count == 1 && edited.first?.newMessage?.quoteSnapshot?.text == "")
                #expect(edited.first?.newMessage?.quoteSnapshot?.authorID == "alice")
                try await bob.send(edit)
                try await bob.roundTrip(7)
                try await carol.roundTrip(8)
                #expect(
                    bob.collector.frames.filter { $0.requestID == 6 && $0.requestResult?.errorCode == 0 }.count == 2
                )
                #expect(carol.collector.frames.filter { $0.payload?.kind == .edit }.count == 1)

                // A reply to a view-once photo goes out without its text, and is kept so.
                var photo = RelayViewOnceTests.photo
                photo.conversation = team; photo.clientMsgID = "v"
                try await alice.send(Frame(photo))
                #expect(await eventually { bob.collector.messages.contains { $0.clientMsgID == "v" } })
                let viewOnce = try #require(bob.collector.messages.first { $0.clientMsgID == "v" })
                let answer = Self.reply(from: "bob", in: team, to: viewOnce, quoting: "meet me at 9", id: "q3")
                try await bob.send(Frame(answer))
                #expect(await Self.ack(bob, "q3")?.errorCode == 0)
                #expect(await eventually { carol.collector.messages.contains { $0.clientMsgID == "q3" } })
                #expect(carol.collector.messages.first { $0.clientMsgID == "q3" }?.quoteSnapshot?.text == "")
                let after = try await RelayHistoryTests.page(carol, id: 5) { $0.conversation = team }
                let keptAnswer = after?.messages.first { $0.clientMsgID == "q3" }
                #expect(keptAnswer?.quoteSnapshot?.text == "" && keptAnswer?.quoteSnapshot?.authorID == "alice")
                for client in [alice, bob, carol] { await client.close() }
            }
            // The recall dropped the reply's record; the replies that went out cut left none.
            let state = try database.open().load()
            #expect(!state.records.keys.contains { if case .quote = $0 { true } else { false } })
        }
    }

    /// Retention that drops a quoted message drops the records of the replies that quote it.
    @Test func retentionForgetsTheRepliesOfADroppedMessage() async throws {
        let database = try await TestStore(.sqlite)
        defer { database.remove() }
        let configure = Self.keepingTwo(database)
        let team = Conversation.group("team")
        try await withClientGroup { group in
            try await withRelay(configure) { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group)
                let bob = try await TestClient.connect(to: server, as: "bob", group: group)
                try await alice.send(Frame(Message.groupText(from: "alice", group: "team", "first", clientMsgID: "a")))
                #expect(await eventually { bob.collector.messages.count == 1 })
                let first = try #require(bob.collector.messages.first)
                try await bob.send(Frame(Self.reply(from: "bob", in: team, to: first, quoting: "first", id: "q")))
                #expect(await Self.ack(bob, "q")?.errorCode == 0)
                #expect(try Self.quoteRecords(database) > 0)
                // A third message: the conversation keeps two, so the first goes.
                try await alice.send(Frame(Message.groupText(from: "alice", group: "team", "third", clientMsgID: "c")))
                #expect(await Self.ack(alice, "c")?.errorCode == 0)
                // A reply to the oldest message kept (third, after fourth): keeping the reply drops
                // it, and no link is made.
                try await alice.send(Frame(Message.groupText(from: "alice", group: "team", "fourth", clientMsgID: "d")))
                #expect(await eventually { bob.collector.messages.count == 3 })
                let oldest = bob.collector.messages[1]
                try await bob.send(Frame(Self.reply(from: "bob", in: team, to: oldest, quoting: "third", id: "q2")))
                #expect(await Self.ack(bob, "q2")?.errorCode == 0)
                #expect(try await server.withRouter { $0.quotedBy.isEmpty && $0.quoting.isEmpty }.get())
                for client in [alice, bob] { await client.close() }
            }
            #expect(try Self.quoteRecords(database) == 0)
        }
    }

    /// A reply in one conversation to a message of another takes its link along when retention
    /// drops the reply, not only when it drops the quoted message: before, replies in a one-to-one
    /// conversation (or one's conversation with oneself) to a message of a quiet group made the relay
    /// keep a link each, in memory and in the store, for as long as the group kept that message, and
    /// each new reply walked them all. A link an earlier relay left behind (its reply dropped) is
    /// deleted at start.
    @Test func aReplyRetentionDropsTakesItsQuoteLinkAlong() async throws {
        let database = try await TestStore(.sqlite)
        defer { database.remove() }
        let configure = Self.keepingTwo(database)
        let team = ConversationKey.group("team")
        let direct = try #require(ConversationKey(.oneToOne("alice"), user: "bob"))
        func links(_ server: RelayServer) async throws -> [Int] {
            try await server.withRouter { router in
                [
                    router.quotedBy[team]?.values.reduce(0) { $0 + $1.count } ?? 0,
                    router.quoting[direct]?.count ?? 0,
                ]
            }.get()
        }
        try await withClientGroup { group in
            try await withRelay(configure) { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group)
                let bob = try await TestClient.connect(to: server, as: "bob", group: group)
                try await alice.send(Frame(Message.groupText(from: "alice", group: "team", "first", clientMsgID: "a")))
                #expect(await eventually { bob.collector.messages.count == 1 })
                let first = try #require(bob.collector.messages.first)
                // Two replies to alice, in their one-to-one conversation, quoting the group's message.
                for id in ["q1", "q2"] {
                    let reply = Self.reply(from: "bob", in: .oneToOne("alice"), to: first, quoting: "first", id: id)
                    try await bob.send(Frame(reply))
                    #expect(await Self.ack(bob, id)?.errorCode == 0)
                }
                #expect(try await links(server) == [2, 2])
                #expect(try Self.quoteRecords(database) == 2)
                // Two more one-to-one messages: the conversation keeps two, so both replies go.
                for id in ["p1", "p2"] {
                    try await bob.send(Frame(Message.c2cText(from: "bob", to: "alice", "plain", clientMsgID: id)))
                    #expect(await Self.ack(bob, id)?.errorCode == 0)
                }
                #expect(try await links(server) == [0, 0])
                for client in [alice, bob] { await client.close() }
            }
            #expect(try Self.quoteRecords(database) == 0)
            // As a relay before this one left it: the link of a reply retention dropped (seq 1).
            do {
                let store = try database.open()
                defer { store.close() }
                let quoted = MessageKey(conversation: team, seq: 1)
                try store.commit(
                    StoreBatch(records: [.quote(of: quoted, reply: MessageKey(conversation: direct, seq: 1)): [1]])
                )
            }
            #expect(try Self.quoteRecords(database) == 1)
            try await withRelay(configure) { server in
                #expect(try await links(server) == [0, 0])
                let alice = try await TestClient.connect(to: server, as: "alice", group: group)
                try await alice.send(Frame(Message.c2cText(from: "alice", to: "bob", "later", clientMsgID: "l")))
                #expect(await Self.ack(alice, "l")?.errorCode == 0)
                await alice.close()
            }
            #expect(try Self.quoteRecords(database) == 0)
        }
    }

    /// A message's versions (as sent, and each edit's `new_message`) quote the text of at most
    /// ``Router/maxQuotedPerMessage`` messages: the relay keeps a link (and a state record) for
    /// each while both are kept, so that a recall cuts the text out of every version. An edit that
    /// would quote another past the bound is refused (3003); one quoting a message already quoted,
    /// or nothing, passes. Before, every edit that quoted another message added a link: a user
    /// editing one message in a loop made the relay keep links and records without bound.
    @Test func aMessageQuotesTheTextOfAtMostEightMessagesAcrossItsEdits() async throws {
        let database = try await TestStore(.sqlite)
        defer { database.remove() }
        let configure: (inout RelayConfiguration) -> Void = {
            $0.store = database.location; $0.groups = ["team": ["alice", "bob"]]
        }
        let team = ConversationKey.group("team")
        try await withClientGroup { group in
            try await withRelay(configure) { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group)
                let bob = try await TestClient.connect(to: server, as: "bob", group: group)
                for index in 1...10 {
                    let text = "m\(index)"
                    try await alice.send(
                        Frame(Message.groupText(from: "alice", group: "team", text, clientMsgID: text))
                    )
                }
                #expect(await eventually { bob.collector.messages.count == 10 })
                let quoted = bob.collector.messages
                try await bob.send(
                    Frame(Self.reply(from: "bob", in: .group("team"), to: quoted[0], quoting: "m1", id: "r"))
                )
                #expect(await Self.ack(bob, "r")?.errorCode == 0)
                #expect(await eventually { alice.collector.messages.count == 1 })
                let reply = try #require(alice.collector.messages.first)
                func edit(quoting index: Int?, requestID: UInt64) async throws -> Int32? {
                    let frame = Self.edit(reply, to: "re, edited", requestID: requestID) { message in
                        if let index {
                            message.quote = quoted[index].reference
                            message.quoteSnapshot = QuoteSnapshot.with {
                                $0.authorID = "alice"; $0.text = "m\(index + 1)"; $0.elementKind = "text"
                            }
                        } else {
                            message.quote = nil
                            message.quoteSnapshot = nil
                        }
                    }
                    return try await bob.ask(frame)?.requestResult?.errorCode
                }
                // Seven edits, each quoting another message: eight in all with the first.
                for index in 1...7 { #expect(try await edit(quoting: index, requestID: UInt64(index)) == 0) }
                #expect(try await edit(quoting: 8, requestID: 8) == RelayProtocol.RequestError.badRequest)
                #expect(try await edit(quoting: 0, requestID: 9) == 0, "one it quoted already")
                #expect(try await edit(quoting: nil, requestID: 10) == 0, "no quote")
                let links = try await server.withRouter { $0.quoting[team]?[reply.seq]?.count ?? 0 }.get()
                #expect(links == Router.maxQuotedPerMessage)
                try await bob.roundTrip(11)
                #expect(await eventually { alice.collector.frames.filter { $0.payload?.kind == .edit }.count == 9 })
                for client in [alice, bob] { await client.close() }
            }
            #expect(try Self.quoteRecords(database) == Router.maxQuotedPerMessage)
        }
    }

    /// The same for a disappearing message: once it expires, the replies that quoted it no longer
    /// serve its text.
    @Test func anExpiredMessageLeavesNoTextInTheRepliesThatQuoteIt() async throws {
        let clock = TestClock()
        let configure: (inout RelayConfiguration) -> Void = {
            $0.clock = clock.now; $0.groups = ["team": ["alice", "bob"]]
            $0.expirySweepInterval = .milliseconds(20)
        }
        let team = Conversation.group("team")
        try await withClientGroup { group in
            try await withRelay(configure) { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group)
                let bob = try await TestClient.connect(to: server, as: "bob", group: group)
                var fleeting = Message.groupText(from: "alice", group: "team", "gone soon", clientMsgID: "f")
                fleeting.expireAfterS = 60
                try await alice.send(Frame(fleeting))
                #expect(await eventually { bob.collector.messages.count == 1 })
                let quoted = try #require(bob.collector.messages.first)
                try await bob.send(Frame(Self.reply(from: "bob", in: team, to: quoted, quoting: "gone soon", id: "q")))
                #expect(await Self.ack(bob, "q")?.errorCode == 0)
                let before = try await RelayHistoryTests.page(alice, id: 1) { $0.conversation = team }
                let reply = try #require(before?.messages.first { $0.clientMsgID == "q" })
                #expect(reply.quoteSnapshot?.text == "gone soon")
                // bob edits his reply; the edit quotes the text too.
                let edit = Self.edit(reply, to: "re: gone soon (edited)", requestID: 9)
                #expect(try await bob.ask(edit)?.requestResult?.errorCode == 0)

                clock.advance(past: quoted.expireAtMs)
                // The sweep runs every 20 ms; the stream is asked again until it ran
                // (``TestClient/streamed(_:until:firstRequestID:)``), so a slow machine only waits longer.
                let cut = try await alice.streamed(
                    { frames in
                        (
                            reply: frames.compactMap(\.messagePayload).first { $0.clientMsgID == "q" }?
                                .quoteSnapshot?.text,
                            edits: frames.compactMap { if case .edit(let e)? = $0.payload { e } else { nil } }
                        )
                    },
                    until: { $0.reply == "" && $0.edits.first?.newMessage?.quoteSnapshot?.text == "" },
                    firstRequestID: 2
                )
                #expect(cut.reply == "")
                // The edit kept in alice's stream lost it too.
                #expect(cut.edits.count == 1 && cut.edits.first?.newMessage?.quoteSnapshot?.text == "")
                // And history serves the reply without it.
                let after = try await RelayHistoryTests.page(alice, id: 1_000_000) { $0.conversation = team }
                #expect(after?.messages.first { $0.clientMsgID == "q" }?.quoteSnapshot?.text == "")
                for client in [alice, bob] { await client.close() }
            }
        }
    }
}
#endif
