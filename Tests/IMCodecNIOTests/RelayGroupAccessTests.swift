#if Tools
import Foundation
import IMCodec
import IMCodecNIO
import NIOCore
import NIOPosix
import Testing

@testable import imcodec_relay

/// Who may join a group and what a new member reads (common.proto GroupKind: only a Meeting group
/// lets new members pull history from before they joined), and the heartbeat's promise
/// (session.proto LoginResult: "the server closes a session silent for 3 intervals").
@Suite("Relay: group access and silent sessions", .timeLimit(.minutes(2)))
struct RelayGroupAccessTests {
    /// What `client` reads of `conversation`: history, sync by seq, its list entry's `cleared_seq`,
    /// unread count and last message, and the extensions of `extensible`.
    struct Read: Equatable {
        var history: [String]
        var bySeq: [String]
        var clearedSeq: UInt64
        var unread: UInt32
        var last: String?
        var extensions: Int
    }

    static func read(
        _ client: TestClient,
        _ conversation: Conversation,
        extensible: MessageRef,
        id: UInt64
    ) async throws -> Read {
        let page = try await RelayHistoryTests.page(client, id: id) { $0.conversation = conversation }
        let sync = try await client.ask(RelayProtocol.syncFrame(conversation, from: 1, requestID: id + 1))
        guard case .syncResponse(let bySeq)? = sync?.payload else { throw ReadBackError(description: "no sync page") }
        let list = try await RelayUserStateTests.list(client, id: id + 2)
        let entry = RelayUserStateTests.entry(list, conversation)
        let fetched = try await RelayUserStateTests.ask(
            client,
            .extensionFetchRequest(.with { $0.messages = [extensible] }),
            id: id + 3
        )
        guard case .extensionFetchResponse(let extensions)? = fetched?.payload else {
            throw ReadBackError(description: "no extension fetch answer")
        }
        return Read(
            history: RelayHistoryTests.texts(page),
            bySeq: bySeq.messages.map { $0.firstText ?? "" },
            clearedSeq: entry?.clearedSeq ?? 0,
            unread: entry?.unreadCount ?? 0,
            last: entry?.lastMessage?.firstText,
            extensions: extensions.extensions.count
        )
    }

    static func text(_ text: String, to group: String, id: String, extensible: Bool = false) -> Frame {
        var message = Message.groupText(from: "alice", group: group, text, clientMsgID: id)
        if extensible {
            message.flags = MessageFlags.supportExtension.rawValue
            message.expansion = ["votes": "0"]
        }
        return Frame(message)
    }

    /// Before, anyone could join any group and read everything it kept: history, sync by seq,
    /// extensions, and the events about old messages. Now a group of the groups file refuses users
    /// it does not name (3001), and a new member of an open group reads from its join on (and from
    /// its latest join after a leave), also after a restart; a founding member of the file reads
    /// everything.
    @Test(arguments: StoreBackend.allCases)
    func aNewMemberReadsFromItsJoinOnAndAClosedGroupRefusesStrangers(_ backend: StoreBackend) async throws {
        let database = try await TestStore(backend)
        defer { database.remove() }
        let configure: (inout RelayConfiguration) -> Void = {
            $0.store = database.location; $0.groups = ["team": ["alice", "bob"]]
        }
        let open = Conversation.group("open")
        try await withClientGroup { group in
            var extensible = MessageRef()
            try await withRelay(configure) { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group, deviceID: "a")
                let bob = try await TestClient.connect(to: server, as: "bob", group: group, deviceID: "b")
                let carol = try await TestClient.connect(to: server, as: "carol", group: group, deviceID: "c")
                // The closed group: carol is not in the file.
                try await alice.send(Self.text("team only", to: "team", id: "t-1"))
                #expect(await eventually { bob.collector.messages.count == 1 })
                let refused = try await carol.ask(RelayProtocol.membershipFrame(.join, group: "team", requestID: 1))
                #expect(refused?.requestResult?.errorCode == RelayProtocol.RequestError.notAMember)
                #expect(try await RelayHistoryTests.refusal(carol, id: 2) { $0.conversation = .group("team") } == 3001)
                #expect(bob.collector.frames.allSatisfy { $0.payload?.kind != .membership })
                #expect(
                    try await RelayHistoryTests.texts(
                        RelayHistoryTests.page(bob, id: 3) { $0.conversation = .group("team") }
                    ) == ["team only"]
                )

                // The open group: alice and bob found it, carol joins after two messages.
                for (client, id) in [(alice, UInt64(10)), (bob, 11)] {
                    let joined = try await client.ask(
                        RelayProtocol.membershipFrame(.join, group: "open", requestID: id)
                    )
                    #expect(joined?.requestResult?.errorCode == 0)
                }
                try await alice.send(Self.text("before carol", to: "open", id: "o-1", extensible: true))
                try await alice.send(Self.text("also before", to: "open", id: "o-2"))
                #expect(await eventually { bob.collector.messages.count == 3 })
                extensible = bob.collector.messages[1].reference
                let joined = try await carol.ask(RelayProtocol.membershipFrame(.join, group: "open", requestID: 12))
                #expect(joined?.requestResult?.errorCode == 0)
                let atJoin = try await Self.read(carol, open, extensible: extensible, id: 20)
                #expect(atJoin == Read(history: [], bySeq: [], clearedSeq: 2, unread: 0, last: nil, extensions: 0))
                let founder = try await Self.read(bob, open, extensible: extensible, id: 30)
                #expect(founder.history.sorted() == ["also before", "before carol"] && founder.bySeq.count == 2)
                #expect(founder.clearedSeq == 0 && founder.extensions == 1)

                // An edit of a message from before her join reaches the members of then, not carol.
                let edit = EditEvent.with {
                    $0.message = extensible; $0.editorID = "alice"; $0.timeMs = RelayProtocol.nowMs()
                    $0.newMessage = Message.groupText(from: "alice", group: "open", "edited", clientMsgID: "o-1")
                }
                #expect(try await RelayUserStateTests.ask(alice, .edit(edit), id: 35)?.requestResult?.errorCode == 0)
                try await alice.send(Self.text("after carol", to: "open", id: "o-3"))
                #expect(await eventually { carol.collector.messages.count == 1 })
                #expect(await eventually { bob.collector.frames.contains { $0.payload?.kind == .edit } })
                #expect(!carol.collector.frames.contains { $0.payload?.kind == .edit })
                let after = try await Self.read(carol, open, extensible: extensible, id: 40)
                #expect(
                    after
                        == Read(
                            history: ["after carol"],
                            bySeq: ["after carol"],
                            clearedSeq: 2,
                            unread: 1,
                            last: "after carol",
                            extensions: 0
                        )
                )

                // A leave and a later join: what was sent meanwhile, and before, stays hidden.
                #expect(try await carol.ask(RelayProtocol.membershipFrame(.leave, group: "open", requestID: 50)) != nil)
                try await alice.send(Self.text("while away", to: "open", id: "o-4"))
                #expect(await eventually { alice.collector.acks.count == 5 })
                #expect(try await carol.ask(RelayProtocol.membershipFrame(.join, group: "open", requestID: 51)) != nil)
                let rejoined = try await Self.read(carol, open, extensible: extensible, id: 60)
                #expect(rejoined == Read(history: [], bySeq: [], clearedSeq: 4, unread: 0, last: nil, extensions: 0))
                try await alice.send(Self.text("back", to: "open", id: "o-5"))
                #expect(await eventually { carol.collector.messages.count == 2 })
                for client in [alice, bob, carol] { await client.close() }
            }
            try await withRelay(configure) { server in
                let carol = try await TestClient.connect(to: server, as: "carol", group: group, deviceID: "c2")
                let restarted = try await Self.read(carol, open, extensible: extensible, id: 70)
                #expect(
                    restarted
                        == Read(
                            history: ["back"],
                            bySeq: ["back"],
                            clearedSeq: 4,
                            unread: 1,
                            last: "back",
                            extensions: 0
                        )
                )
                let refused = try await carol.ask(RelayProtocol.membershipFrame(.join, group: "team", requestID: 80))
                #expect(refused?.requestResult?.errorCode == RelayProtocol.RequestError.notAMember)
                await carol.close()
            }
        }
    }

    /// The groups file says who is in its groups: a member the operator took out of it leaves at
    /// the next start, as by a leave. bob, out of "team", finds his leave in his stream, his message
    /// to the group is refused (1003), his join too (3001, a closed group), and alice's next message
    /// reaches carol alone; carol's stream holds bob's leave, once (a second start changes nothing).
    /// His history request of the group is refused (3001), as any leaver's. Before, bob stayed a
    /// member for good. Only those the file named at the last start are taken out: dave, who
    /// joined "club" while it was open, stays in it once the file names it with alice alone.
    @Test(arguments: StoreBackend.allCases)
    func aMemberTakenOutOfTheGroupsFileLeavesAtStart(_ backend: StoreBackend) async throws {
        let database = try await TestStore(backend)
        defer { database.remove() }
        func configure(_ members: Set<String>, club: Set<String>? = nil) -> (inout RelayConfiguration) -> Void {
            {
                $0.store = database.location; $0.groups = ["team": members]
                if let club { $0.groups["club"] = club }
            }
        }
        func leaves(in frames: [Frame]?) -> [String] {
            (frames ?? []).compactMap {
                if case .membership(let change)? = $0.payload, change.action == .leave { change.userID } else { nil }
            }
        }
        try await withClientGroup { group in
            try await withRelay(configure(["alice", "bob", "carol"])) { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group)
                let bob = try await TestClient.connect(to: server, as: "bob", group: group)
                try await alice.send(Self.text("all three", to: "team", id: "t-1"))
                #expect(await eventually { bob.collector.messages.count == 1 })
                let dave = try await TestClient.connect(to: server, as: "dave", group: group)
                let joined = try await dave.ask(RelayProtocol.membershipFrame(.join, group: "club", requestID: 1))
                #expect(joined?.requestResult?.errorCode == 0)
                for client in [alice, bob, dave] { await client.close() }
            }
            for start in 1...2 {
                try await withRelay(configure(["alice", "carol"], club: ["alice"])) { server in
                    let bob = try await TestClient.connect(to: server, as: "bob", group: group, deviceID: "b\(start)")
                    let carol = try await TestClient.connect(
                        to: server,
                        as: "carol",
                        group: group,
                        deviceID: "c\(start)"
                    )
                    #expect(leaves(in: try await bob.streamPage(requestID: 1)) == ["bob"])
                    #expect(leaves(in: try await carol.streamPage(requestID: 1)) == ["bob"])
                    let dave = try await TestClient.connect(to: server, as: "dave", group: group, deviceID: "d\(start)")
                    #expect(leaves(in: try await dave.streamPage(requestID: 1)).isEmpty)
                    let inClub = try await dave.ack(
                        of: Message.groupText(from: "dave", group: "club", "still in", clientMsgID: "d-\(start)"),
                        requestID: 2
                    )
                    #expect(inClub?.errorCode == 0)
                    await dave.close()
                    guard start == 1 else {
                        for client in [bob, carol] { await client.close() }
                        return
                    }
                    let sent = try await bob.ack(
                        of: Message.groupText(from: "bob", group: "team", "still here?", clientMsgID: "b-1"),
                        requestID: 2
                    )
                    #expect(sent?.errorCode == RelayProtocol.AckError.notAGroupMember)
                    let join = try await bob.ask(RelayProtocol.membershipFrame(.join, group: "team", requestID: 3))
                    #expect(join?.requestResult?.errorCode == RelayProtocol.RequestError.notAMember)
                    let alice = try await TestClient.connect(to: server, as: "alice", group: group, deviceID: "a2")
                    let after = try await alice.ack(
                        of: Message.groupText(from: "alice", group: "team", "without bob", clientMsgID: "t-2"),
                        requestID: 4
                    )
                    #expect(after?.errorCode == 0)
                    #expect(await eventually { carol.collector.messages.map(\.previewText) == ["without bob"] })
                    #expect(try await bob.ask(RelayProtocol.answer(.ping(.with { $0.id = 1 }), requestID: 5)) != nil)
                    #expect(bob.collector.messages.isEmpty)
                    #expect(
                        try await RelayHistoryTests.refusal(bob, id: 6) { $0.conversation = .group("team") } == 3001
                    )
                    for client in [alice, bob, carol] { await client.close() }
                }
            }
        }
    }

    /// events.proto ReceiveOption NOT_RECEIVE: "nothing, online or offline". Before, the relay kept
    /// the option and delivered as before. Now the conversation's messages from others reach none of
    /// the user's devices, live or by stream sync, and count in no unread count; history still
    /// serves them; RECEIVE turns delivery back on; the option holds across a restart.
    @Test(arguments: StoreBackend.allCases)
    func notReceiveStopsDeliveryAndHistoryStillServes(_ backend: StoreBackend) async throws {
        let database = try await TestStore(backend)
        defer { database.remove() }
        let configure: (inout RelayConfiguration) -> Void = {
            $0.store = database.location; $0.groups = ["team": ["alice", "bob"]]
        }
        let team = Conversation.group("team")
        func option(_ client: TestClient, _ option: ReceiveOption, id: UInt64) async throws -> Int32? {
            let change = ReceiveOptionChange.with {
                $0.conversation = team; $0.option = option
            }
            return try await RelayUserStateTests.ask(client, .receiveOption(change), id: id)?.requestResult?.errorCode
        }
        /// The texts of the messages a new device of bob's finds in his stream.
        func streamTexts(_ server: RelayServer, _ group: any EventLoopGroup, _ device: String) async throws -> [String]
        {
            let reader = try await TestClient.connect(to: server, as: "bob", group: group, deviceID: device)
            let page = try await reader.streamPage(requestID: 900)
            await reader.close()
            return try #require(page).compactMap { $0.messagePayload?.firstText }
        }
        try await withClientGroup { group in
            try await withRelay(configure) { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group, deviceID: "a")
                let bob = try await TestClient.connect(to: server, as: "bob", group: group, deviceID: "b")
                #expect(try await option(bob, .notReceive, id: 1) == 0)
                try await alice.send(Self.text("muted", to: "team", id: "n-1"))
                try await alice.send(Frame(Message.c2cText(from: "alice", to: "bob", "direct", clientMsgID: "n-2")))
                // Delivered in order: once bob has the direct message, he would have had the group's.
                #expect(await eventually { bob.collector.messages.count == 1 })
                #expect(bob.collector.messages.map { $0.firstText } == ["direct"])
                #expect(try await streamTexts(server, group, "laptop") == ["direct"])
                let list = try await RelayUserStateTests.list(bob, id: 2)
                #expect(RelayUserStateTests.entry(list, team)?.unreadCount ?? 0 == 0)
                #expect(RelayUserStateTests.entry(list, team)?.receiveOption == .notReceive)
                let history = try await RelayHistoryTests.page(bob, id: 3) { $0.conversation = team }
                #expect(RelayHistoryTests.texts(history) == ["muted"])

                #expect(try await option(bob, .receive, id: 4) == 0)
                try await alice.send(Self.text("heard", to: "team", id: "n-3"))
                #expect(await eventually { bob.collector.messages.count == 2 })
                #expect(bob.collector.messages.last?.firstText == "heard")
                #expect(try await option(bob, .notReceive, id: 5) == 0)
                for client in [alice, bob] { await client.close() }
            }
            try await withRelay(configure) { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group, deviceID: "a")
                let bob = try await TestClient.connect(to: server, as: "bob", group: group, deviceID: "b2")
                try await alice.send(Self.text("muted again", to: "team", id: "n-4"))
                try await alice.send(
                    Frame(Message.c2cText(from: "alice", to: "bob", "direct again", clientMsgID: "n-5"))
                )
                #expect(await eventually { bob.collector.messages.count == 1 })
                #expect(bob.collector.messages.map { $0.firstText } == ["direct again"])
                #expect(try await streamTexts(server, group, "tablet") == ["direct", "heard", "direct again"])
                for client in [alice, bob] { await client.close() }
            }
        }
    }

    /// A member who joined after a message reads nothing of it, so it may not vote on its poll,
    /// acknowledge it, react to it, pin it or change its extension keys either (3001): before, its
    /// vote was counted (and named in the results others got), its read receipt reached the sender,
    /// and its reaction was accepted and answered with who else reacted. A member who leaves keeps
    /// its list entry, without the members' read horizons it saw as a member.
    @Test func aNewMemberCannotActOnWhatCameBeforeItsJoin() async throws {
        try await withClientGroup { group in
            try await withRelay { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group)
                let bob = try await TestClient.connect(to: server, as: "bob", group: group)
                let carol = try await TestClient.connect(to: server, as: "carol", group: group)
                for (client, id) in [(alice, UInt64(1)), (bob, 2)] {
                    let joined = try await client.ask(
                        RelayProtocol.membershipFrame(.join, group: "open", requestID: id)
                    )
                    #expect(joined?.requestResult?.errorCode == 0)
                }
                var poll = Message(
                    from: "alice",
                    in: .group("open"),
                    elements: [.poll(id: "q", question: "Q?", options: ["yes", "no"])],
                    clientMsgID: "p-1"
                )
                poll.messageFlags = [.needReadReceipt, .supportExtension]
                poll.expansion = ["votes": "0"]
                try await alice.send(Frame(poll))
                #expect(await eventually { bob.collector.messages.count == 1 })
                let reference = try #require(bob.collector.messages.first?.reference)
                let joined = try await carol.ask(RelayProtocol.membershipFrame(.join, group: "open", requestID: 3))
                #expect(joined?.requestResult?.errorCode == 0)

                let notAMember = RelayProtocol.RequestError.notAMember
                for (client, user, code) in [(carol, "carol", notAMember), (bob, "bob", 0)] {
                    let vote = RelayPollTests.vote(reference, "q", [1], id: 10)
                    #expect(try await client.ask(vote)?.requestResult?.errorCode == code)
                    let read = RelayReceiptTests.read(reference, id: 11)
                    #expect(try await client.ask(read)?.requestResult?.errorCode == code)
                    let react = RelayReactionTests.reaction(reference, "👍", .add, id: 12)
                    #expect(try await client.ask(react)?.requestResult?.errorCode == code, "\(user) reacts")
                    let pin = PinEvent.with {
                        $0.conversation = .group("open"); $0.message = reference; $0.pinned = true
                        $0.operatorID = user
                    }
                    let pinned = try await RelayUserStateTests.ask(client, .pin(pin), id: 13)
                    #expect(pinned?.requestResult?.errorCode == code, "\(user) pins")
                    let keys = ExtensionUpdate.with {
                        $0.message = reference
                        $0.set = [
                            .with {
                                $0.key = user; $0.value = "1"
                            }
                        ]
                    }
                    let updated = try await RelayUserStateTests.ask(client, .extensionUpdate(keys), id: 14)
                    #expect(updated?.requestResult?.errorCode == code, "\(user) sets a key")
                }
                #expect(await eventually { RelayPollTests.results(alice, "q") == "1:1:bob 2:0: n=1" })
                #expect(await eventually { RelayReceiptTests.received(alice) == ["bob@ open 1/0"] })
                // Nothing carol tried reached anyone: after a round trip of bob's, only bob's.
                #expect(
                    try await bob.ask(RelayProtocol.answer(.ping(.init()), requestID: 14_000))?.payload?.kind == .pong
                )
                let reactions = alice.collector.frames.compactMap { frame -> ReactionEvent? in
                    if case .reaction(let event)? = frame.payload { event } else { nil }
                }
                #expect(reactions.map(\.userID) == ["bob"])
                // bob clears the group: he may no longer react to or pin the poll, but may take back
                // his reaction and unpin it.
                let clear = ConversationUpdate.with {
                    $0.conversation = .group("open"); $0.fields = UInt32(ConversationField.clearedSeq.rawValue)
                    $0.clearedSeq = 1
                }
                let cleared = try await RelayUserStateTests.ask(bob, .conversationUpdate(clear), id: 15)
                #expect(cleared?.requestResult?.errorCode == 0)
                let again = RelayReactionTests.reaction(reference, "🎉", .add, id: 16)
                #expect(try await bob.ask(again)?.requestResult?.errorCode == notAMember)
                let takeBack = RelayReactionTests.reaction(reference, "👍", .remove, id: 17)
                #expect(try await bob.ask(takeBack)?.requestResult?.errorCode == 0)
                let unpin = PinEvent.with {
                    $0.conversation = .group("open"); $0.message = reference; $0.pinned = false; $0.operatorID = "bob"
                }
                #expect(try await RelayUserStateTests.ask(bob, .pin(unpin), id: 18)?.requestResult?.errorCode == 0)

                // bob reads the group: carol, a member, sees it in her list; after she leaves, not.
                let read = MarkReadEvent.with {
                    $0.conversation = .group("open"); $0.userID = "bob"; $0.readTimeMs = RelayProtocol.nowMs()
                }
                #expect(try await RelayUserStateTests.ask(bob, .markRead(read), id: 21)?.requestResult?.errorCode == 0)
                func horizons(_ id: UInt64) async throws -> [String]? {
                    let list = try await RelayUserStateTests.list(carol, id: id)
                    return RelayUserStateTests.entry(list, .group("open"))?.readHorizons.map(\.userID)
                }
                #expect(try await horizons(22)?.contains("bob") == true)
                let left = try await carol.ask(RelayProtocol.membershipFrame(.leave, group: "open", requestID: 23))
                #expect(left?.requestResult?.errorCode == 0)
                #expect(try await horizons(24) == [])
                for client in [alice, bob, carol] { await client.close() }
            }
        }
    }

    /// A user who left a group keeps its list entry, and the entry's last message as it was sent:
    /// an edit and a reaction made after the leave are the members' to see, as the members' read
    /// horizons are. Before, the entry served the message as it now is (the edit's text, the
    /// reactors' ids).
    @Test func aLeaverSeesItsLastMessageAsItWasSent() async throws {
        try await withClientGroup { group in
            try await withRelay { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group, deviceID: "a")
                let bob = try await TestClient.connect(to: server, as: "bob", group: group, deviceID: "b")
                for (k, client) in [alice, bob].enumerated() {
                    let joined = try await client.ask(
                        RelayProtocol.membershipFrame(.join, group: "club", requestID: UInt64(1 + k))
                    )
                    #expect(joined?.requestResult?.errorCode == 0)
                }
                try await alice.send(
                    Frame(Message.groupText(from: "alice", group: "club", "first", clientMsgID: "c-1"))
                )
                #expect(await eventually { bob.collector.messages.count == 1 })
                let message = try #require(bob.collector.messages.first)
                let left = try await bob.ask(RelayProtocol.membershipFrame(.leave, group: "club", requestID: 3))
                #expect(left?.requestResult?.errorCode == 0)

                var edited = message
                edited.elements = [.text("changed after bob left")]
                let edit = EditEvent.with {
                    $0.message = message.reference; $0.newMessage = edited; $0.editorID = "alice"
                }
                #expect(try await RelayUserStateTests.ask(alice, .edit(edit), id: 4)?.requestResult?.errorCode == 0)
                let react = RelayReactionTests.reaction(message.reference, "👍", .add, id: 5)
                #expect(try await alice.ask(react)?.requestResult?.errorCode == 0)
                // alice, a member, lists the message as it now is.
                let hers = RelayUserStateTests.entry(try await RelayUserStateTests.list(alice, id: 6), .group("club"))
                #expect(hers?.lastMessage?.previewText == "changed after bob left")
                #expect(hers?.lastMessage?.reactions.map(\.emoji) == ["👍"])
                let his = RelayUserStateTests.entry(try await RelayUserStateTests.list(bob, id: 7), .group("club"))
                #expect(his?.lastMessage?.seq == message.seq)
                #expect(his?.lastMessage?.previewText == "first")
                #expect(his?.lastMessage?.reactions.isEmpty == true && his?.lastMessage?.editVersion == 0)
                for client in [alice, bob] { await client.close() }
            }
        }
    }

    /// Before, the relay asked for a ping every interval and never closed a silent session. Now a
    /// logged-in session that sends nothing for 3 intervals is closed (`heartbeatTimeout`), whatever
    /// frame it sends counts, and a session that pings stays. The test moves the relay's silence
    /// clock, which moves only then (``FrozenClock``); it waits for no interval.
    @Test func aSessionSilentForThreeHeartbeatIntervalsIsClosed() async throws {
        let silence = FrozenClock()
        try await withClientGroup { group in
            try await withRelay({
                $0.heartbeatIntervalS = 10; $0.silenceClock = silence.now; $0.silenceCheckInterval = .milliseconds(20)
            }) { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group, deviceID: "a")
                let bob = try await TestClient.connect(to: server, as: "bob", group: group, deviceID: "b")
                let carol = try await TestClient.connect(to: server, as: "carol", group: group, deviceID: "c")
                // 20 s: nobody is closed yet.
                silence.advance(by: 20_000)
                try await alice.roundTrip(1)
                try await alice.send(Frame(.ping(Ping.with { $0.id = 2 })))
                try await carol.send(Frame(Message.c2cText(from: "carol", to: "alice", "busy", clientMsgID: "b-1")))
                #expect(await eventually { alice.collector.messages.count == 1 && carol.collector.acks.count == 1 })
                #expect(bob.channel.isActive)
                // 31 s after the start: bob was silent for more than 30 s, alice and carol for 11 s.
                silence.advance(by: 11_000)
                #expect(await eventually { !bob.channel.isActive })
                #expect(relayErrorCode(in: bob.collector.frames) == "heartbeatTimeout")
                try await alice.roundTrip(3)
                try await carol.roundTrip(4)
                #expect(alice.channel.isActive && carol.channel.isActive)
                let stats = try await server.stats().get()
                #expect(stats.closedByError == ["heartbeatTimeout": 1])
                for client in [alice, carol] { await client.close() }
            }
        }
    }
}
#endif
