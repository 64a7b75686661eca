#if Tools
import Foundation
import IMCodec
import IMCodecNIO
import NIOCore
import NIOPosix
import Testing

@testable import imcodec_relay

/// Schema version 3's user state through the relay: the conversation list (unread counts, @ of the
/// user, read horizons, pinned, archived, draft, cleared history, receive option), message
/// extensions with per-key versions, and the blocklist in both of Tencent's behaviours. Each is
/// kept in the store: the tests that restart the relay run on SQLite and on PostgreSQL
/// (``StoreBackend``; PostgreSQL through `Scripts/with-postgres`).
@Suite("Relay: conversation list, message extensions, blocklist", .timeLimit(.minutes(2)))
struct RelayUserStateTests {
    static func list(_ client: TestClient, after version: UInt64 = 0, id: UInt64) async throws -> ConversationList {
        var request = Frame(.conversationListRequest(.with { $0.afterVersion = version }))
        request.requestID = id
        guard case .conversationList(let list)? = try await client.ask(request)?.payload else {
            Issue.record("no conversation list")
            return ConversationList()
        }
        #expect(Frame(.conversationList(list)).validate().isEmpty, "\(Frame(.conversationList(list)).validate())")
        return list
    }

    static func entry(_ list: ConversationList, _ conversation: Conversation) -> ConversationInfo? {
        list.conversations.first { $0.conversation == conversation }
    }

    static func ask(_ client: TestClient, _ payload: Frame.Payload, id: UInt64) async throws -> Frame? {
        var frame = Frame(payload)
        frame.requestID = id
        return try await client.ask(frame)
    }

    static func groupMessage(_ text: String, id: String, at: [String] = [], atAll: Bool = false) -> Message {
        var message = Message.groupText(from: "alice", group: "team", text, clientMsgID: id)
        if !at.isEmpty || atAll {
            message.at = AtInfo.with {
                $0.userIDs = at; $0.atAll = atAll
            }
        }
        return message
    }

    /// Tencent (seed 000): a conversation's unread count leaves out messages flagged
    /// isExcludedFromUnreadCount; its groupAtInfoList has the kinds AT_ME, AT_ALL and AT_ALL_AT_ME;
    /// marking read (markGroupMessageAsRead) clears them and changes the conversation
    /// (onConversationChanged). The list syncs incrementally: after a version, only what changed.
    @Test func unreadCountsAtMeAndReadHorizonsFollowMessagesAndMarkReads() async throws {
        try await withClientGroup { group in
            try await withRelay({ $0.groups = ["team": ["alice", "bob", "carol"]] }) { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group, deviceID: "a")
                let bob = try await TestClient.connect(to: server, as: "bob", group: group, deviceID: "b")
                try await alice.send(Frame(Self.groupMessage("hello", id: "m1")))
                try await alice.send(Frame(Self.groupMessage("@bob look", id: "m2", at: ["bob"])))
                try await alice.send(Frame(Self.groupMessage("@all meeting", id: "m3", atAll: true)))
                try await alice.send(Frame(Self.groupMessage("@all @bob you lead", id: "m4", at: ["bob"], atAll: true)))
                var tip = Self.groupMessage("carol's status changed", id: "m5")
                tip.flags = MessageFlags.excludedFromUnreadCount.rawValue
                try await alice.send(Frame(tip))
                try await alice.send(
                    Frame(Message(from: "alice", in: .oneToOne("bob"), elements: [.text("psst")], clientMsgID: "d1"))
                )
                #expect(await eventually { bob.collector.messages.count == 6 })

                let first = try await Self.list(bob, id: 1)
                #expect(!first.hasMore && first.conversations.count == 2)
                let team = try #require(Self.entry(first, .group("team")))
                #expect(team.maxSeq == 5 && team.readSeq == 0)
                #expect(team.unreadCount == 4, "m5 is excluded from the unread count")
                #expect(team.atMe.map(\.kind) == [.atMe, .atAll, .atAllAtMe])
                #expect(team.atMe.map(\.seq) == [2, 3, 4])
                #expect(team.lastMessage?.seq == 5 && team.lastMessage?.direction == .received)
                #expect(team.lastMessage?.previewText == "carol's status changed")
                let direct = try #require(Self.entry(first, .oneToOne("alice")))
                #expect(direct.unreadCount == 1 && direct.lastMessage?.previewText == "psst")
                #expect(direct.version > team.version, "oldest change first")
                let aliceView = try #require(Self.entry(try await Self.list(alice, id: 2), .group("team")))
                #expect(aliceView.unreadCount == 0 && aliceView.lastMessage?.direction == .sent)

                // bob reads the team up to seq 3 (from another device: the state is the user's).
                let laptop = try await TestClient.connect(to: server, as: "bob", group: group, deviceID: "laptop")
                let read = MarkReadEvent.with {
                    $0.conversation = .group("team"); $0.userID = "bob"; $0.readSeq = 3
                    $0.readTimeMs = RelayProtocol.nowMs()
                }
                #expect(try await Self.ask(laptop, .markRead(read), id: 3).flatMap(\.requestResult)?.errorCode == 0)
                let changed = try await Self.list(bob, after: first.nextAfterVersion, id: 4)
                #expect(changed.conversations.map(\.conversation) == [.group("team")], "only what changed")
                let teamNow = try #require(changed.conversations.first)
                #expect(teamNow.readSeq == 3 && teamNow.unreadCount == 1)
                #expect(teamNow.atMe.map(\.kind) == [.atAllAtMe])
                // alice sees bob's read horizon (read marks).
                let horizons = try #require(Self.entry(try await Self.list(alice, id: 5), .group("team"))).readHorizons
                #expect(horizons.map(\.userID) == ["bob"] && horizons.first?.readSeq == 3)
                #expect(try await Self.list(bob, after: changed.nextAfterVersion, id: 6).conversations.isEmpty)
                for client in [alice, bob, laptop] { await client.close() }
            }
        }
    }

    /// Pin, archive, draft, clear history and hide are the user's own: shared with its other
    /// devices through its stream, kept across a restart of the relay, refused when malformed
    /// (validate()) or about a conversation the user is not in. A receive option (mute) is kept too.
    @Test(arguments: StoreBackend.allCases)
    func conversationUpdatesReachTheUsersDevicesAndSurviveARestart(_ backend: StoreBackend) async throws {
        let database = try await TestStore(backend)
        defer { database.remove() }
        let configure: (inout RelayConfiguration) -> Void = {
            $0.store = database.location; $0.groups = ["team": ["alice", "bob"]]
        }
        try await withClientGroup { group in
            try await withRelay(configure) { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group, deviceID: "a")
                let phone = try await TestClient.connect(to: server, as: "bob", group: group, deviceID: "phone")
                let laptop = try await TestClient.connect(to: server, as: "bob", group: group, deviceID: "laptop")
                for index in 1...3 { try await alice.send(Frame(Self.groupMessage("m\(index)", id: "m\(index)"))) }
                #expect(await eventually { phone.collector.messages.count == 3 })
                let fields: [ConversationField] = [.pinned, .draft, .clearedSeq, .archived]
                let update = ConversationUpdate.with {
                    $0.conversation = .group("team")
                    $0.fields = fields.reduce(0) { $0 | UInt32($1.rawValue) }
                    $0.pinned = true; $0.archived = true; $0.draftText = "see you at"; $0.clearedSeq = 2
                }
                #expect(
                    try await Self.ask(phone, .conversationUpdate(update), id: 1).flatMap(\.requestResult)?.errorCode
                        == 0
                )
                #expect(
                    await eventually { laptop.collector.frames.contains { $0.payload?.kind == .conversationUpdate } }
                )
                let synced = try #require(laptop.collector.frames.first { $0.payload?.kind == .conversationUpdate })
                guard case .conversationUpdate(let stamped)? = synced.payload else { return }
                #expect(stamped.userID == "bob" && stamped.timeMs > 0 && synced.streamPosition > 0)
                let mute = ReceiveOptionChange.with {
                    $0.conversation = .group("team"); $0.option = .receiveNotNotify
                }
                #expect(
                    try await Self.ask(laptop, .receiveOption(mute), id: 2).flatMap(\.requestResult)?.errorCode == 0
                )

                // Refused: no field, and a conversation bob is not in.
                let empty = ConversationUpdate.with { $0.conversation = .group("team") }
                let refused = try await Self.ask(phone, .conversationUpdate(empty), id: 3).flatMap(\.requestResult)
                #expect(refused?.errorCode == RelayProtocol.RequestError.badRequest)
                #expect(refused?.errorDescription.contains("conversationUpdate") == true)
                var foreign = update
                foreign.conversation = .group("board")
                let notMine = try await Self.ask(phone, .conversationUpdate(foreign), id: 4).flatMap(\.requestResult)
                #expect(notMine?.errorCode == RelayProtocol.RequestError.notAMember)
                for client in [alice, phone, laptop] { await client.close() }
            }
            // Restarted on the same database: the list is as it was.
            try await withRelay(configure) { server in
                let bob = try await TestClient.connect(to: server, as: "bob", group: group, deviceID: "phone")
                let team = try #require(Self.entry(try await Self.list(bob, id: 5), .group("team")))
                #expect(team.pinned && team.archived && team.draftText == "see you at" && team.draftTimeMs > 0)
                #expect(team.clearedSeq == 2 && team.unreadCount == 1, "m1 and m2 were cleared")
                #expect(team.receiveOption == .receiveNotNotify)
                #expect(team.lastMessage?.previewText == "m3")
                await bob.close()
            }
        }
    }

    /// A clear goes up to the newest seq, never past it (as a mark-read): the messages still to
    /// come are not hidden, and the update kept and sent to the user's other devices says the seq
    /// it cleared. Before, a clear up to the largest seq was kept as it came, and bob's next sync or
    /// history of the group overflowed and stopped the relay.
    @Test func aClearPastTheNewestSeqClearsUpToIt() async throws {
        try await withClientGroup { group in
            try await withRelay({ $0.groups = ["team": ["alice", "bob"]] }) { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group, deviceID: "a")
                let phone = try await TestClient.connect(to: server, as: "bob", group: group, deviceID: "phone")
                let laptop = try await TestClient.connect(to: server, as: "bob", group: group, deviceID: "laptop")
                for index in 1...2 { try await alice.send(Frame(Self.groupMessage("m\(index)", id: "m\(index)"))) }
                #expect(await eventually { phone.collector.messages.count == 2 })
                let clear = ConversationUpdate.with {
                    $0.conversation = .group("team"); $0.fields = UInt32(ConversationField.clearedSeq.rawValue)
                    $0.clearedSeq = .max
                }
                let result = try await Self.ask(phone, .conversationUpdate(clear), id: 1).flatMap(\.requestResult)
                #expect(result?.errorCode == 0)
                #expect(
                    await eventually { laptop.collector.frames.contains { $0.payload?.kind == .conversationUpdate } }
                )
                let synced = laptop.collector.frames.first { $0.payload?.kind == .conversationUpdate }
                guard case .conversationUpdate(let kept)? = synced?.payload else {
                    Issue.record("the laptop got no conversation update")
                    return
                }
                #expect(kept.clearedSeq == 2, "the laptop is told the seq cleared")

                try await alice.send(Frame(Self.groupMessage("m3", id: "m3")))
                #expect(await eventually { phone.collector.messages.count == 3 })
                let team = try #require(Self.entry(try await Self.list(phone, id: 2), .group("team")))
                #expect(team.clearedSeq == 2 && team.unreadCount == 1 && team.lastMessage?.previewText == "m3")
                let sync = try await Self.ask(phone, .syncRequest(.with { $0.conversation = .group("team") }), id: 3)
                guard case .syncResponse(let page)? = sync?.payload else {
                    Issue.record("no sync_response: \(String(describing: sync))")
                    return
                }
                #expect(page.messages.map(\.seq) == [3])
                let older = try await RelayHistoryTests.page(phone, id: 4) { $0.conversation = .group("team") }
                #expect(older?.messages.map(\.seq) == [3])
                for client in [alice, phone, laptop] { await client.close() }
            }
        }
    }

    /// A view an earlier relay kept with the largest `cleared_seq` (before clears went no higher
    /// than the newest seq) reads nothing and stops nothing: the sync and the history it asks for
    /// are answered, empty.
    @Test func aViewKeptWithTheLargestClearedSeqReadsNothing() async throws {
        let database = try await TestStore(.sqlite)
        defer { database.remove() }
        let configure: (inout RelayConfiguration) -> Void = {
            $0.store = database.location; $0.groups = ["team": ["alice", "bob"]]
        }
        try await withClientGroup { group in
            try await withRelay(configure) { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group)
                try await alice.send(Frame(Self.groupMessage("m1", id: "m1")))
                #expect(await eventually { alice.collector.acks.count == 1 })
                await alice.close()
            }
            do {
                let store = try database.open()
                defer { store.close() }
                var view = UserConversation()
                view.info.clearedSeq = .max
                var batch = StoreBatch()
                batch.records[.conversation(user: "bob", .shared(.group, "team", ""))] = view.bytes
                try store.commit(batch)
            }
            try await withRelay(configure) { server in
                let bob = try await TestClient.connect(to: server, as: "bob", group: group)
                let sync = try await Self.ask(bob, .syncRequest(.with { $0.conversation = .group("team") }), id: 1)
                guard case .syncResponse(let page)? = sync?.payload else {
                    Issue.record("no sync_response: \(String(describing: sync))")
                    return
                }
                #expect(page.errorCode == 0 && page.messages.isEmpty && page.maxSeq == 1)
                let older = try await RelayHistoryTests.page(bob, id: 2) { $0.conversation = .group("team") }
                #expect(older?.messages.isEmpty == true)
                await bob.close()
            }
        }
    }

    /// A message's extension holds at most 300 keys at once and 600 ever set (a removed key keeps
    /// its version, so that a later set goes on from it): past either, 3009. Removing a key never
    /// set keeps nothing. Before, each such removal kept an entry with the message, without end.
    @Test func anExtensionKeepsAtMostSixHundredKeysEverSet() async throws {
        try await withClientGroup { group in
            try await withRelay({ $0.groups = ["team": ["alice", "bob"]] }) { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group)
                let bob = try await TestClient.connect(to: server, as: "bob", group: group)
                var message = Self.groupMessage("keys", id: "k")
                message.flags = MessageFlags.supportExtension.rawValue
                try await alice.send(Frame(message))
                #expect(await eventually { bob.collector.messages.count == 1 })
                let reference = try #require(bob.collector.messages.first?.reference)
                var id: UInt64 = 0
                func update(set: [(String, UInt64)] = [], remove: [(String, UInt64)] = []) async throws -> Int32? {
                    let update = ExtensionUpdate.with {
                        $0.message = reference
                        $0.set = set.map { key, version in
                            .with {
                                $0.key = key; $0.value = "1"; $0.version = version
                            }
                        }
                        $0.remove = remove.map { key, version in
                            .with {
                                $0.key = key; $0.version = version
                            }
                        }
                    }
                    id += 1
                    return try await Self.ask(bob, .extensionUpdate(update), id: id).flatMap(\.requestResult)?.errorCode
                }
                let tooMany = Router.ExtensionError.tooManyKeys
                for batch in [0..<300, 300..<600, 600..<700] {
                    #expect(try await update(remove: batch.map { ("never-\($0)", 0) }) == 0)
                }
                // Nothing changed: no update reached alice (a round trip of hers after them).
                #expect(try await alice.ask(RelayProtocol.answer(.ping(.init()), requestID: 1))?.payload?.kind == .pong)
                #expect(!alice.collector.frames.contains { $0.payload?.kind == .extensionUpdate })
                #expect(try await update(set: (0..<300).map { ("k\($0)", 0) }) == 0)
                #expect(try await update(remove: (0..<300).map { ("k\($0)", 1) }) == 0)
                #expect(
                    try await update(set: (0..<300).map { ("j\($0)", 0) }) == 0,
                    "the removals of never-set keys kept nothing"
                )
                #expect(try await update(set: [("one more", 0)]) == tooMany, "301 keys at once")
                #expect(try await update(remove: [("j0", 1)]) == 0)
                #expect(try await update(set: [("one more", 0)]) == tooMany, "601 keys ever set")
                #expect(try await update(set: [("k0", 2)]) == 0, "a removed key is set again from its version")
                let fetched = try await Self.ask(
                    bob,
                    .extensionFetchRequest(.with { $0.messages = [reference] }),
                    id: 100
                )
                guard case .extensionFetchResponse(let response)? = fetched?.payload else {
                    Issue.record("no extension fetch answer")
                    return
                }
                let entries = response.extensions.first?.entries ?? []
                #expect(entries.count == 300 && entries.first { $0.key == "k0" }?.version == 3)
                for client in [alice, bob] { await client.close() }
            }
        }
    }

    /// RongCloud (seed 003: canIncludeExpansion, expansionDic) and Tencent (message extensions):
    /// keys change after sending, each with a version; an update from a stale version is refused
    /// with 23001 and changes nothing; a message sent without the flag takes no extension. The keys
    /// survive a restart.
    @Test(arguments: StoreBackend.allCases)
    func extensionUpdatesCarryVersionsAndAStaleOneIsAConflict(_ backend: StoreBackend) async throws {
        let database = try await TestStore(backend)
        defer { database.remove() }
        let configure: (inout RelayConfiguration) -> Void = {
            $0.store = database.location; $0.groups = ["team": ["alice", "bob", "carol"]]
        }
        try await withClientGroup { group in
            var reference = MessageRef()
            try await withRelay(configure) { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group, deviceID: "a")
                let bob = try await TestClient.connect(to: server, as: "bob", group: group, deviceID: "b")
                let carol = try await TestClient.connect(to: server, as: "carol", group: group, deviceID: "c")
                var poll = Self.groupMessage("lunch?", id: "x1")
                poll.flags = MessageFlags.supportExtension.rawValue
                poll.expansion = ["pizza": "0", "sushi": "0"]
                try await alice.send(Frame(poll))
                try await alice.send(Frame(Self.groupMessage("plain", id: "x2")))
                #expect(await eventually { carol.collector.messages.count == 2 })
                reference = try #require(carol.collector.messages.first?.reference)
                func update(_ set: [(String, String, UInt64)], remove: [(String, UInt64)] = []) -> Frame.Payload {
                    .extensionUpdate(
                        .with {
                            $0.message = reference
                            $0.set = set.map { k, v, n in
                                .with {
                                    $0.key = k; $0.value = v; $0.version = n
                                }
                            }
                            $0.remove = remove.map { k, n in
                                .with {
                                    $0.key = k; $0.version = n
                                }
                            }
                        }
                    )
                }
                #expect(
                    try await Self.ask(bob, update([("pizza", "1", 1)]), id: 1).flatMap(\.requestResult)?.errorCode == 0
                )
                // carol still saw version 1: refused, nothing applied.
                let stale = try await Self.ask(carol, update([("pizza", "1", 1), ("sushi", "1", 1)]), id: 2)
                #expect(stale.flatMap(\.requestResult)?.errorCode == 23001)
                #expect(
                    try await Self.ask(carol, update([("sushi", "1", 1)], remove: [("pizza", 2)]), id: 3)
                        .flatMap(\.requestResult)?.errorCode == 0
                )
                // Everyone got both kept updates, with the keys as they became.
                #expect(
                    await eventually {
                        alice.collector.frames.filter { $0.payload?.kind == .extensionUpdate }.count == 2
                    }
                )
                let last = alice.collector.frames.last { $0.payload?.kind == .extensionUpdate }
                guard case .extensionUpdate(let delivered)? = last?.payload else { return }
                #expect(delivered.userID == "carol")
                #expect(
                    delivered.entries.map { "\($0.key)=\($0.value)@\($0.version)\($0.removed ? "-" : "")" } == [
                        "sushi=1@2", "pizza=@3-",
                    ]
                )
                // A message sent without MESSAGE_FLAG_SUPPORT_EXTENSION.
                var plain = reference
                plain.seq = 2; plain.clientMsgID = "x2"; plain.serverMsgUID = ""
                let refused = try await Self.ask(
                    bob,
                    .extensionUpdate(
                        .with {
                            $0.message = plain; $0.set = [.with { $0.key = "k" }]
                        }
                    ),
                    id: 4
                )
                #expect(refused.flatMap(\.requestResult)?.errorCode == Router.ExtensionError.notExtensible)
                // The poll's seq with the plain message's ids: refused (receivers would match the ids).
                var mixed = reference
                mixed.clientMsgID = "x2"; mixed.serverMsgUID = ""
                let conflicting = try await Self.ask(
                    bob,
                    .extensionUpdate(
                        .with {
                            $0.message = mixed; $0.set = [.with { $0.key = "k" }]
                        }
                    ),
                    id: 7
                )
                #expect(conflicting.flatMap(\.requestResult)?.errorCode == RelayProtocol.RequestError.badRequest)
                // Named by its uid alone: applied, and delivered with the message's whole reference.
                let byUID = MessageRef.with {
                    $0.serverMsgUID = reference.serverMsgUID; $0.conversation = reference.conversation
                }
                let applied = try await Self.ask(
                    bob,
                    .extensionUpdate(
                        .with {
                            $0.message = byUID;
                            $0.set = [
                                .with {
                                    $0.key = "k"; $0.value = "v"
                                }
                            ]
                        }
                    ),
                    id: 8
                )
                #expect(applied.flatMap(\.requestResult)?.errorCode == 0)
                #expect(
                    await eventually {
                        alice.collector.frames.filter { $0.payload?.kind == .extensionUpdate }.count == 3
                    }
                )
                if case .extensionUpdate(let third)? = alice.collector.frames.last(where: {
                    $0.payload?.kind == .extensionUpdate
                })?.payload {
                    #expect(third.message?.seq == reference.seq && third.message?.clientMsgID == "x1")
                }
                for client in [alice, bob, carol] { await client.close() }
            }
            try await withRelay(configure) { server in
                let bob = try await TestClient.connect(to: server, as: "bob", group: group, deviceID: "b")
                let answer = try await Self.ask(bob, .extensionFetchRequest(.with { $0.messages = [reference] }), id: 5)
                guard case .extensionFetchResponse(let fetched)? = answer?.payload else {
                    Issue.record("no extension fetch answer")
                    return
                }
                #expect(fetched.extensions.count == 1)
                #expect(
                    fetched.extensions.first?.entries.map { "\($0.key)=\($0.value)@\($0.version)" } == [
                        "k=v@1", "sushi=1@2",
                    ]
                )
                // Found as events find it: by its server uid alone (before, by seq only: none); a
                // reference whose seq names another message finds nothing.
                let byUID = MessageRef.with {
                    $0.serverMsgUID = reference.serverMsgUID; $0.conversation = reference.conversation
                }
                var conflicting = reference
                conflicting.seq += 1
                let byIdentity = try await Self.ask(
                    bob,
                    .extensionFetchRequest(.with { $0.messages = [byUID, conflicting] }),
                    id: 60
                )
                guard case .extensionFetchResponse(let found)? = byIdentity?.payload else {
                    Issue.record("no extension fetch answer")
                    return
                }
                #expect(found.extensions.map(\.message) == [byUID])
                // The versions go on after the restart: pizza was removed at version 3.
                let again = ExtensionUpdate.with {
                    $0.message = reference;
                    $0.set = [
                        .with {
                            $0.key = "pizza"; $0.value = "2"; $0.version = 3
                        }
                    ]
                }
                #expect(
                    try await Self.ask(bob, .extensionUpdate(again), id: 6).flatMap(\.requestResult)?.errorCode == 0
                )
                await bob.close()
            }
        }
    }

    /// Tencent (seed 000, addToBlackList): by default a blocked sender still sees "sent
    /// successfully" and the recipient gets nothing; with the other setting the sender gets error
    /// 20007. The list is shared with the user's other devices and kept across a restart.
    @Test(arguments: StoreBackend.allCases, Router.BlockedSenders.allCases)
    func aBlockedSenderIsSilencedOrRefused(_ backend: StoreBackend, _ behaviour: Router.BlockedSenders) async throws {
        let database = try await TestStore(backend)
        defer { database.remove() }
        let configure: (inout RelayConfiguration) -> Void = {
            $0.store = database.location; $0.blockedSenders = behaviour
        }
        try await withClientGroup { group in
            try await withRelay(configure) { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group, deviceID: "a")
                let aliceTablet = try await TestClient.connect(to: server, as: "alice", group: group, deviceID: "t")
                let bob = try await TestClient.connect(to: server, as: "bob", group: group, deviceID: "phone")
                let bobLaptop = try await TestClient.connect(to: server, as: "bob", group: group, deviceID: "laptop")
                let block = BlocklistChange.with {
                    $0.action = .block; $0.userIDs = ["alice", "mallory"]
                }
                #expect(
                    try await Self.ask(bob, .blocklistChange(block), id: 1).flatMap(\.requestResult)?.errorCode == 0
                )
                #expect(
                    await eventually { bobLaptop.collector.frames.contains { $0.payload?.kind == .blocklistChange } }
                )
                try await alice.send(
                    Frame(Message(from: "alice", in: .oneToOne("bob"), elements: [.text("hi?")], clientMsgID: "b1"))
                )
                #expect(await eventually { alice.collector.acks.count == 1 })
                let ack = try #require(alice.collector.acks.first)
                switch behaviour {
                case .silent:
                    #expect(ack.errorCode == 0 && ack.seq == 1, "the sender sees it sent")
                    #expect(
                        await eventually { aliceTablet.collector.messages.count == 1 },
                        "the sender's devices have it"
                    )
                case .error:
                    #expect(ack.errorCode == 20007)
                }
                try await bob.roundTrip(90)
                #expect(bob.collector.messages.isEmpty && bobLaptop.collector.messages.isEmpty)
                let sync = try await bob.ask(RelayProtocol.syncFrame(.oneToOne("alice"), from: 1, requestID: 2))
                guard case .syncResponse(let page)? = sync?.payload else { return }
                #expect(page.messages.isEmpty, "nor does bob sync it")
                #expect(
                    try await Self.list(bob, id: 3).conversations.allSatisfy { $0.conversation != .oneToOne("alice") }
                )
                // Events too (before, they reached bob): a timer is refused, or answered and applied to
                // nothing; typing is dropped.
                let timer = try await RelayDisappearingTests.setTimer(
                    alice,
                    by: "alice",
                    in: .oneToOne("bob"),
                    60,
                    id: 20
                )
                #expect(timer == (behaviour == .silent ? 0 : Router.blockedByPeer))
                let typing = TypingEvent.with {
                    $0.conversation = .oneToOne("bob"); $0.userID = "alice"; $0.state = .started
                }
                try await alice.send(Frame(.typing(typing)))
                // A system notice too (before, it reached bob).
                let notice = SystemNotice.with {
                    $0.type = "friendRequest"; $0.recipientID = "bob"
                }
                let noticed = try await Self.ask(alice, .systemNotice(notice), id: 24)?.requestResult?.errorCode
                #expect(noticed == (behaviour == .silent ? 0 : Router.blockedByPeer))
                // An extension update of bob's own message (bob may still write to alice) too.
                var poll = Message(from: "bob", in: .oneToOne("alice"), elements: [.text("vote?")], clientMsgID: "p1")
                poll.flags = MessageFlags.supportExtension.rawValue
                poll.expansion = ["yes": "0"]
                try await bob.send(Frame(poll))
                #expect(await eventually { alice.collector.messages.contains { $0.clientMsgID == "p1" } })
                let reference = try #require(alice.collector.messages.first { $0.clientMsgID == "p1" }?.reference)
                let update = ExtensionUpdate.with {
                    $0.message = reference
                    $0.set = [
                        .with {
                            $0.key = "yes"; $0.value = "1"; $0.version = 1
                        }
                    ]
                }
                let updated = try await Self.ask(alice, .extensionUpdate(update), id: 22)?.requestResult?.errorCode
                #expect(updated == (behaviour == .silent ? 0 : Router.blockedByPeer))
                try await alice.roundTrip(21)
                try await bob.roundTrip(91)
                #expect(
                    !bob.collector.frames.contains {
                        [.disappearingTimer, .typing, .extensionUpdate, .systemNotice].contains($0.payload?.kind)
                    }
                )
                let fetched = try await Self.ask(
                    bob,
                    .extensionFetchRequest(.with { $0.messages = [reference] }),
                    id: 23
                )
                guard case .extensionFetchResponse(let keys)? = fetched?.payload else { return }
                #expect(
                    keys.extensions.first?.entries.map { "\($0.key)=\($0.value)" } == ["yes=0"],
                    "applied to nothing"
                )
                for client in [alice, aliceTablet, bob, bobLaptop] { await client.close() }
            }
            try await withRelay(configure) { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group, deviceID: "a")
                let bob = try await TestClient.connect(to: server, as: "bob", group: group, deviceID: "phone")
                let answer = try await Self.ask(bob, .blocklistRequest(BlocklistRequest()), id: 4)
                guard case .blocklistResponse(let list)? = answer?.payload else { return }
                #expect(list.userIDs == ["alice", "mallory"], "kept across the restart, in order")
                let unblock = BlocklistChange.with {
                    $0.action = .unblock; $0.userIDs = ["alice"]
                }
                #expect(
                    try await Self.ask(bob, .blocklistChange(unblock), id: 5).flatMap(\.requestResult)?.errorCode == 0
                )
                try await alice.send(
                    Frame(Message(from: "alice", in: .oneToOne("bob"), elements: [.text("now?")], clientMsgID: "b2"))
                )
                #expect(await eventually { bob.collector.messages.count == 1 })
                #expect(bob.collector.messages.first?.previewText == "now?")
                #expect(bob.collector.messages.first?.expireAfterS == 0, "the blocked timer was applied to nothing")
                await alice.close()
                await bob.close()
            }
        }
    }

    /// A message held back by a block (`--blocked-senders silent`: its sender sees it sent) is not
    /// shown read: bob blocks alice, alice's next message is kept for her alone, and bob's mark-read
    /// past it (his own later message is the newest) moves his horizon over its seq. Before, alice's
    /// read receipt pull said bob read it and her list showed his horizon past it: read marks on a
    /// message bob never got. While the block holds, alice sees bob's horizon below it (his reads of
    /// what she sent before still show); once bob unblocks her, his horizon as it is (past it), and
    /// her pull still says the held-back message is not read.
    @Test func aMessageHeldBackByABlockIsNotShownRead() async throws {
        try await withClientGroup { group in
            try await withRelay { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group, deviceID: "a")
                let bob = try await TestClient.connect(to: server, as: "bob", group: group, deviceID: "phone")
                func send(
                    _ client: TestClient,
                    _ user: String,
                    _ text: String,
                    to peer: String,
                    id: String
                ) async throws {
                    let before = client.collector.acks.count
                    try await client.send(
                        Frame(Message(from: user, in: .oneToOne(peer), elements: [.text(text)], clientMsgID: id))
                    )
                    #expect(await eventually { client.collector.acks.count == before + 1 })
                }
                func change(_ action: BlockAction, id: UInt64) async throws {
                    let change = BlocklistChange.with {
                        $0.action = action; $0.userIDs = ["alice"]
                    }
                    #expect(
                        try await Self.ask(bob, .blocklistChange(change), id: id).flatMap(\.requestResult)?.errorCode
                            == 0
                    )
                }
                func horizon(id: UInt64) async throws -> [UInt64] {
                    let entry = Self.entry(try await Self.list(alice, id: id), .oneToOne("bob"))
                    return entry?.readHorizons.map(\.readSeq) ?? []
                }
                let refs = (1...2).map { seq in
                    MessageRef.with {
                        $0.conversation = .oneToOne("bob"); $0.seq = UInt64(seq)
                    }
                }
                try await send(alice, "alice", "before", to: "bob", id: "m1")  // seq 1
                try await change(.block, id: 1)
                try await send(alice, "alice", "held back", to: "bob", id: "m2")  // seq 2, kept for alice alone
                #expect(alice.collector.acks.last?.errorCode == 0 && alice.collector.acks.last?.seq == 2)
                try await send(bob, "bob", "later", to: "alice", id: "m3")  // seq 3
                let read = MarkReadEvent.with {
                    $0.conversation = .oneToOne("alice"); $0.userID = "bob"; $0.readTimeMs = RelayProtocol.nowMs()
                }
                #expect(try await Self.ask(bob, .markRead(read), id: 2).flatMap(\.requestResult)?.errorCode == 0)
                #expect(bob.collector.messages.map(\.clientMsgID) == ["m1"], "bob never got m2")

                let pulled = try await RelayReceiptTests.pull(alice, refs, id: 3)
                #expect(pulled == ["1: bob@  0/0 peer read", "2: bob@  0/0"], "\(pulled)")
                #expect(try await horizon(id: 4) == [1], "below the held-back message while the block holds")

                try await change(.unblock, id: 5)
                #expect(try await horizon(id: 6) == [3], "bob's own horizon once he unblocks alice")
                let again = try await RelayReceiptTests.pull(alice, refs, id: 7)
                #expect(again == ["1: bob@  0/0 peer read", "2: bob@  0/0"], "\(again)")
                await alice.close()
                await bob.close()
            }
        }
    }

    /// A blocklist holds at most 1,000 users, and its `blocklist_response` fits one frame: a block
    /// past either is refused with 3012 and changes nothing; blocking users already blocked, or
    /// after an unblock, still works. Before, a blocklist grew by up to 100 users a change without
    /// bound: at a 4,096-byte limit, 90 ids of 41 bytes made a response the user's devices could not
    /// read (each lost its connection at each request for it).
    @Test func aBlocklistHoldsAtMostAThousandUsersAndFitsOneFrame() async throws {
        func block(
            _ client: TestClient,
            _ ids: [String],
            _ action: BlockAction = .block,
            id: UInt64
        )
            async throws -> Int32?
        {
            let change = BlocklistChange.with {
                $0.action = action; $0.userIDs = ids
            }
            return try await Self.ask(client, .blocklistChange(change), id: id).flatMap(\.requestResult)?.errorCode
        }
        func blocklist(_ client: TestClient, id: UInt64) async throws -> [String]? {
            guard
                case .blocklistResponse(let list)? = try await Self.ask(client, .blocklistRequest(.init()), id: id)?
                    .payload
            else { return nil }
            return list.userIDs
        }
        let full = RelayProtocol.RequestError.listFull
        try await withClientGroup { group in
            try await withRelay { server in
                let bob = try await TestClient.connect(to: server, as: "bob", group: group, deviceID: "b")
                for batch in 0..<10 {
                    let ids = (0..<100).map { "u\(batch * 100 + $0)" }
                    #expect(try await block(bob, ids, id: UInt64(batch + 1)) == 0)
                }
                #expect(try await block(bob, ["u1000"], id: 20) == full)
                #expect(try await block(bob, ["u5", "u6"], id: 21) == 0, "already blocked: no one is added")
                #expect(try await block(bob, ["u0"], .unblock, id: 22) == 0)
                #expect(try await block(bob, ["u1000", "u1001"], id: 23) == full, "one place for two users")
                #expect(try await block(bob, ["u1000"], id: 24) == 0)
                let list = try #require(try await blocklist(bob, id: 25))
                #expect(list.count == 1_000 && list.last == "u1000" && !list.contains("u0") && !list.contains("u1001"))
                await bob.close()
            }
            let codec = FrameCodecOptions(maxFrameSize: 4096)
            try await withRelay({ $0.codec = codec }) { server in
                let bob = try await TestClient.connect(to: server, as: "bob", group: group, deviceID: "b", codec: codec)
                // 47 bytes each in the response: 76 fit the 3,584 bytes of room.
                let ids = (0..<90).map { "u" + String(repeating: "x", count: 36) + "\(1000 + $0)" }
                #expect(try await block(bob, Array(ids[..<45]), id: 1) == 0)
                #expect(try await block(bob, Array(ids[45...]), id: 2) == full)
                #expect(try await blocklist(bob, id: 3) == Array(ids[..<45]), "nothing was applied")
                #expect(try await block(bob, Array(ids[45..<75]), id: 4) == 0)
                #expect(try await blocklist(bob, id: 5) == Array(ids[..<75]))
                await bob.close()
            }
        }
    }

    /// A blocklist and key bundles kept by a relay with a larger `--max-frame-size` are served
    /// within the smaller limit of the relay that loads them: the blocklist's first users, the
    /// bundles that fit. Before the bounds, each answer held everything, and the devices that asked
    /// lost their connection.
    @Test func stateKeptUnderALargerFrameLimitIsServedWithinASmallerOne() async throws {
        let database = try await TestStore(.sqlite)
        defer { database.remove() }
        let ids = (0..<90).map { "u" + String(repeating: "x", count: 36) + "\(1000 + $0)" }
        func publish(_ client: TestClient, id: UInt64) async throws -> Int32? {
            let keys = KeyPublish.with {
                $0.bundle = .with {
                    $0.kind = .signalPrekeys; $0.bundle = Array(repeating: 7, count: 2000)
                }
            }
            return try await Self.ask(client, .keyPublish(keys), id: id)?.requestResult?.errorCode
        }
        try await withClientGroup { group in
            try await withRelay({ $0.store = database.location }) { server in
                let phone = try await TestClient.connect(to: server, as: "bob", group: group, deviceID: "phone")
                let laptop = try await TestClient.connect(to: server, as: "bob", group: group, deviceID: "laptop")
                for (index, part) in [ids[..<45], ids[45...]].enumerated() {
                    let change = BlocklistChange.with {
                        $0.action = .block; $0.userIDs = Array(part)
                    }
                    #expect(
                        try await Self.ask(phone, .blocklistChange(change), id: UInt64(index + 1))?.requestResult?
                            .errorCode == 0
                    )
                }
                #expect(try await publish(phone, id: 3) == 0)
                #expect(try await publish(laptop, id: 4) == 0)
                for client in [phone, laptop] { await client.close() }
            }
            let codec = FrameCodecOptions(maxFrameSize: 4096)
            try await withRelay({
                $0.store = database.location; $0.codec = codec
            }) { server in
                let bob = try await TestClient.connect(
                    to: server,
                    as: "bob",
                    group: group,
                    deviceID: "phone",
                    codec: codec
                )
                let alice = try await TestClient.connect(
                    to: server,
                    as: "alice",
                    group: group,
                    deviceID: "a",
                    codec: codec
                )
                guard
                    case .blocklistResponse(let list)? = try await Self.ask(bob, .blocklistRequest(.init()), id: 1)?
                        .payload
                else {
                    Issue.record("no blocklist_response")
                    return
                }
                #expect(
                    list.userIDs.count > 40 && list.userIDs.count < 90
                        && list.userIDs == Array(ids.prefix(list.userIDs.count))
                )
                let fetch = KeyFetchRequest.with {
                    $0.userID = "bob"; $0.kind = .signalPrekeys
                }
                guard
                    case .keyFetchResponse(let keys)? = try await Self.ask(alice, .keyFetchRequest(fetch), id: 2)?
                        .payload
                else {
                    Issue.record("no key_fetch_response")
                    return
                }
                #expect(keys.bundles.map(\.deviceID) == ["laptop"])
                #expect(bob.channel.isActive && bob.collector.decodeErrors.isEmpty)
                #expect(alice.channel.isActive && alice.collector.decodeErrors.isEmpty)
                for client in [bob, alice] { await client.close() }
            }
        }
    }

    /// RongCloud: message expansion is for one-to-one and group conversations only. A chatroom
    /// message sent with MESSAGE_FLAG_SUPPORT_EXTENSION starts no extension (no update to it could
    /// pass validate()): fetching its extension finds none, while a group message's is there.
    @Test func anExtensionStartsOnlyInOneToOneAndGroupConversations() async throws {
        try await withClientGroup { group in
            try await withRelay({ $0.groups = ["team": ["alice", "bob"]] }) { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group, deviceID: "a")
                let bob = try await TestClient.connect(to: server, as: "bob", group: group, deviceID: "b")
                let room = Conversation.with {
                    $0.type = .chatroom; $0.targetID = "lobby"
                }
                for (index, client) in [alice, bob].enumerated() {
                    let join = MembershipChange.with {
                        $0.action = .join; $0.conversation = room
                    }
                    #expect(
                        try await Self.ask(client, .membership(join), id: UInt64(index + 1))?.requestResult?.errorCode
                            == 0
                    )
                }
                var inRoom = Message(from: "alice", in: room, elements: [.text("vote here")], clientMsgID: "e1")
                inRoom.flags = MessageFlags.supportExtension.rawValue
                inRoom.expansion = ["yes": "0"]
                var inGroup = Self.groupMessage("vote here too", id: "e2")
                inGroup.flags = MessageFlags.supportExtension.rawValue
                inGroup.expansion = ["yes": "0"]
                try await alice.send(Frame(inRoom))
                try await alice.send(Frame(inGroup))
                #expect(await eventually { bob.collector.messages.count == 2 })
                let refs = bob.collector.messages.map(\.reference)
                let answer = try await Self.ask(bob, .extensionFetchRequest(.with { $0.messages = refs }), id: 3)
                guard case .extensionFetchResponse(let fetched)? = answer?.payload else {
                    Issue.record("no extension fetch answer")
                    return
                }
                #expect(fetched.extensions.map { $0.message?.conversation?.type } == [.group])
                for client in [alice, bob] { await client.close() }
            }
        }
    }
}

extension Frame {
    /// The request result this frame carries, if any.
    var requestResult: RequestResult? {
        if case .requestResult(let result)? = payload { result } else { nil }
    }

    /// The login result this frame carries, if any.
    var loginResult: LoginResult? {
        if case .loginResult(let result)? = payload { result } else { nil }
    }

    /// The send ack this frame carries, if any.
    var sendAck: SendAck? {
        if case .sendAck(let ack)? = payload { ack } else { nil }
    }
}
#endif
