#if Tools
import Foundation
import IMCodec
import PostgresNIO
import Testing

@testable import imcodec_relay

/// The store protocol itself, on both durable stores: what a batch writes, what ``RelayStore/load()``
/// and the reads give back, and that a batch that fails writes nothing. PostgreSQL must keep and
/// read exactly what SQLite (the reference) does.
@Suite("Relay stores: SQLite and PostgreSQL keep and read the same", .serialized, .timeLimit(.minutes(2)))
struct RelayStoreTests {
    static let direct = ConversationKey.direct("alice", "bob")
    static let team = ConversationKey.group("team")
    /// A group whose only message retention drops: nothing of it is kept but its seq.
    static let gone = ConversationKey.group("gone")

    static func message(
        _ conversation: ConversationKey,
        _ seq: UInt64,
        from sender: String,
        id: String,
        to receivers: [String] = []
    ) -> StoredMessage {
        StoredMessage(
            conversation: conversation,
            seq: seq,
            senderID: sender,
            clientMsgID: id,
            serverMsgUID: "uid-\(seq)-\(sender)",
            serverTimeMs: 1_700_000_000_000 + Int64(seq),
            frame: Array("\(sender) \(seq) \(id)".utf8),
            receivers: receivers
        )
    }

    static func entry(_ user: String, _ position: UInt64, origin: String? = nil, _ item: StreamItem) -> StreamEntry {
        StreamEntry(user: user, position: position, originDevice: origin, item: item)
    }

    /// Every kind of write: messages (one targeted, one without a client id), stream entries (messages
    /// and events, with and without an origin device), a join and a leave in one batch, device
    /// positions, a key bundle written twice, state records.
    static var first: StoreBatch {
        var batch = StoreBatch()
        batch.messages = [
            message(direct, 1, from: "alice", id: "c1"),
            message(direct, 2, from: "bob", id: ""),
            message(team, 1, from: "alice", id: "g1", to: ["bob", "dave"]),
            message(team, 2, from: "carol", id: "g2"),
            message(team, 3, from: "alice", id: "g3"),
            message(gone, 1, from: "carol", id: "x1"),
        ]
        batch.events = [KeptEvent(id: 1, frame: [9, 9, 9]), KeptEvent(id: 2, frame: [8])]
        batch.streamEntries = [
            entry("alice", 1, origin: "phone", .message(direct, seq: 1, sent: true)),
            entry("bob", 1, .message(direct, seq: 1, sent: false)),
            entry("bob", 2, origin: "laptop", .message(direct, seq: 2, sent: true)),
            entry("alice", 2, .message(direct, seq: 2, sent: false)),
            entry("bob", 3, .message(team, seq: 1, sent: false)),
            entry("alice", 3, origin: "phone", .message(team, seq: 1, sent: true)),
            entry("alice", 4, origin: "phone", .event(1)),
            entry("bob", 4, .event(2)),
            entry("carol", 1, origin: "desk", .message(team, seq: 2, sent: true)),
        ]
        batch.memberships = [
            (team, "alice", true), (team, "bob", true), (team, "carol", true), (team, "dave", true),
            (team, "dave", false), (gone, "erin", true),
        ]
        batch.devicePositions = [
            DeviceKey(user: "alice", device: "phone"): 2, DeviceKey(user: "bob", device: "laptop"): 3,
            desk: 1,
        ]
        let phone = DeviceKey(user: "bob", device: "phone")
        batch.keyBundles = [
            StoredKeyBundle(device: phone, kind: 1, bytes: [1, 2, 3]),
            StoredKeyBundle(device: phone, kind: 1, bytes: [1, 2]),
            StoredKeyBundle(device: phone, kind: 2, bytes: [4]),
            StoredKeyBundle(device: desk, kind: 1, bytes: [6]),
        ]
        batch.records = [
            .blocklist(user: "bob"): [5, 5],
            .conversation(user: "alice", team): [7],
            .messageExtension(team, seq: 1): [3],
        ]
        return batch
    }

    /// A device the second batch forgets (its position and key bundle go).
    static let desk = DeviceKey(user: "carol", device: "desk")

    /// Removal, retention, a device position that must not go back, a record deleted and one
    /// replaced, two leaves (one by a group's only member), a new message, two devices forgotten (one of them, bob's laptop, back in
    /// the same batch at a lower position than it had, which is kept: a store deletes before it
    /// writes).
    static var second: StoreBatch {
        var batch = StoreBatch()
        batch.messages = [message(direct, 3, from: "alice", id: "c3")]
        batch.streamEntries = [
            entry("alice", 5, origin: "tablet", .message(direct, seq: 3, sent: true)),
            entry("bob", 5, .message(direct, seq: 3, sent: false)),
        ]
        batch.removals = [(direct, 1, [7, 7])]
        batch.devicePositions = [
            DeviceKey(user: "alice", device: "phone"): 1, DeviceKey(user: "bob", device: "laptop"): 2,
        ]
        batch.forgottenDevices = [desk, DeviceKey(user: "bob", device: "laptop")]
        batch.trimmedConversations = [team: 1..<2, gone: 1..<2]
        batch.trimmedStreams = ["bob": 1..<2]
        batch.records = [.conversation(user: "alice", team): [], .blocklist(user: "bob"): [6]]
        batch.memberships = [(team, "carol", false), (gone, "erin", false)]
        return batch
    }

    // MARK: A failed batch

    /// A batch whose last rows conflict with what is kept (a stream position given twice) fails as
    /// a whole: its message, written first, is not kept either, and neither are its seq and stream
    /// heads; the store goes on with the next batch, and a store opened again reads the same.
    @Test(arguments: StoreBackend.allCases)
    func aBatchThatFailsWritesNothing(_ backend: StoreBackend) async throws {
        let location = try await TestStore(backend)
        defer { location.remove() }
        var store: (any RelayStore)? = try location.open()
        defer { store?.close() }
        try store?.commit(Self.first)
        var failing = StoreBatch()
        failing.messages = [Self.message(Self.direct, 3, from: "alice", id: "lost")]
        failing.streamEntries = [
            Self.entry("alice", 5, .message(Self.direct, seq: 3, sent: true)),
            Self.entry("bob", 2, .message(Self.direct, seq: 3, sent: false)),
        ]
        failing.records = [.blocklist(user: "alice"): [1]]
        #expect(throws: RelayStoreError.self) { try store?.commit(failing) }
        let after = try #require(try store?.load())
        #expect(after.conversations[Self.direct]?.maxSeq == 2, "the failed batch's seq is not kept")
        #expect(after.conversations[Self.direct]?.sent(by: "alice", clientMsgID: "lost") == nil)
        #expect(after.streams["alice"]?.head == 4, "nor its stream head")
        #expect(after.records[.blocklist(user: "alice")] == nil, "nor its records")
        #expect(
            try store?.messages(in: Self.direct, from: 3, through: 3, limit: 10, visibleTo: "alice").isEmpty == true
        )
        #expect(try store?.stream(of: "alice", after: 4, through: 10, limit: 10).isEmpty == true)

        // The next batch is kept.
        try store?.commit(Self.second)
        let expected = Self.fingerprint(try #require(try store?.load()))
        #expect(expected.contains("conversation \(Self.direct.storageID) max 3 oldest 1 removed [1]"), "\(expected)")
        store?.close()
        store = nil
        let reopened = try location.open()
        defer { reopened.close() }
        #expect(Self.fingerprint(try reopened.load()) == expected, "a store opened again reads what was committed")
    }

    /// The SQLite store runs with the `synchronous` setting it is given (`serve --synchronous`):
    /// FULL by default, which survives a power loss, or NORMAL; and in WAL mode. (GRDB's own WAL
    /// setting had silently turned FULL into NORMAL.)
    @Test func theSQLiteStoreKeepsTheSynchronousSettingItIsGiven() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("imcodec-sync-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("relay.sqlite").path
        for (setting, expected) in [("FULL", 2), ("NORMAL", 1)] {
            let store = try SQLiteRelayStore(path: path, synchronous: setting)
            #expect(try store.synchronousSetting() == expected, "synchronous = \(setting)")
            if setting == "FULL" { try store.commit(Self.first) }
        }
        #expect(try SQLiteRelayStore(path: path).synchronousSetting() == 2, "FULL by default")
        let header = try #require(FileManager.default.contents(atPath: path))
        #expect(header.count > 100 && header[18] == 2 && header[19] == 2, "WAL (the file format numbers are 2)")
    }

    /// A PostgreSQL store released without ``RelayStore/close()`` (a path that threw) closes its
    /// connection on its own, which releases the database's lock: the next store opens.
    @Test func aPostgresStoreReleasedWithoutClosingLetsTheNextOneOpen() async throws {
        let location = try await TestStore(.postgresql)
        defer { location.remove() }
        var first: (any RelayStore)? = try location.open()
        try first?.commit(Self.first)
        first = nil
        let second = try location.open()
        defer { second.close() }
        #expect(try second.load().conversations[Self.team]?.maxSeq == 3)
    }

    // MARK: The same on both

    // One scenario, read top to bottom: kept as one function (over 80 lines).
    /// ``first`` and ``second`` committed to a SQLite store and to a PostgreSQL store: after each,
    /// both load the same state and answer every read the same way; and that state is the one the
    /// batches describe.
    @Test func postgresKeepsAndReadsWhatSQLiteDoes() async throws {
        let sqlite = try await TestStore(.sqlite)
        defer { sqlite.remove() }
        let postgres = try await TestStore(.postgresql)
        defer { postgres.remove() }
        let stores = [try sqlite.open(), try postgres.open()]
        defer { for store in stores { store.close() } }
        // The memory store keeps the state as the router changes it while it runs, so the stores
        // load at start what the router had before it stopped.
        let memory = MemoryRelayStore()

        for (number, batch) in [Self.first, Self.second].enumerated() {
            for store in stores { try store.commit(batch) }
            try memory.commit(batch)
            let loaded = try stores.map { Self.fingerprint(try $0.load()) }
            #expect(
                loaded[1] == loaded[0],
                "after batch \(number + 1): PostgreSQL loads\n\(loaded[1])\nSQLite\n\(loaded[0])"
            )
            let kept = Self.fingerprint(try memory.load())
            #expect(loaded[0] == kept, "after batch \(number + 1): SQLite loads\n\(loaded[0])\nthe router had\n\(kept)")
            for (conversation, users) in [(Self.direct, ["alice", "bob"]), (Self.team, ["alice", "bob", "carol"])] {
                for user in users {
                    for (from, limit) in [(UInt64(1), 10), (2, 1), (1, 2)] {
                        let reads = try stores.map {
                            try $0.messages(in: conversation, from: from, through: 10, limit: limit, visibleTo: user)
                                .map(Self.describe)
                        }
                        #expect(reads[1] == reads[0], "messages of \(conversation) from \(from) for \(user)")
                    }
                }
            }
            for user in ["alice", "bob", "carol", "nobody"] {
                for (after, through, limit) in [(UInt64(0), UInt64(10), 10), (1, 4, 2), (3, 3, 5)] {
                    let reads = try stores.map {
                        try $0.stream(of: user, after: after, through: through, limit: limit).map(Self.describe)
                    }
                    #expect(reads[1] == reads[0], "stream of \(user) after \(after) through \(through)")
                }
            }
        }

        // PostgreSQL reads the messages page by page, past a row it cannot read (a conversation id
        // no relay writes; skipped, as SQLite skips it): pages of one row, of two, of three (the
        // last page full, the next empty), and of none (taken as one).
        let reference = Self.fingerprint(try stores[0].load())
        try await #require(postgres.database).withConnection { connection in
            _ = try await connection.query(
                """
                INSERT INTO messages (conversation, seq, sender, client_msg_id, uid, time_ms, frame)
                VALUES ('not a conversation id', 1, 'x', '', '', 0, ''::bytea)
                """,
                logger: PostgresTestDatabase.logger
            )
        }
        let paged = try #require(stores[1] as? PostgresRelayStore)
        for rows in [1, 2, 3, 0] {
            paged.loadPageRows = rows
            #expect(Self.fingerprint(try paged.load()) == reference, "pages of \(rows) rows")
        }
        paged.loadPageRows = 20_000

        // What the batches say, read from PostgreSQL.
        let store = stores[1]
        let state = try store.load()
        let direct = try #require(state.conversations[Self.direct])
        #expect(direct.maxSeq == 3 && direct.oldestSeq == 1 && direct.removed == [1])
        #expect(direct.sent(by: "alice", clientMsgID: "c1")?.seq == 1)
        #expect(direct.kept[2]?.clientMsgID == "", "kept without a client id")
        let team = try #require(state.conversations[Self.team])
        #expect(team.maxSeq == 3 && team.oldestSeq == 2)
        #expect(team.audiences.isEmpty, "the targeted message was trimmed")
        let gone = try #require(state.conversations[Self.gone])
        #expect(gone.maxSeq == 1 && gone.oldestSeq == 2 && gone.kept.isEmpty, "retention kept none of it")
        #expect(state.members[Self.team] == ["alice", "bob"], "dave joined and left; carol left later")
        #expect(state.members[Self.gone] == nil, "its only member left")
        #expect(state.streams["bob"]?.head == 5 && state.streams["bob"]?.oldest == 2)
        #expect(state.devicePositions[DeviceKey(user: "alice", device: "phone")] == 2, "a position never goes back")
        #expect(
            state.devicePositions[DeviceKey(user: "bob", device: "laptop")] == 2,
            "forgotten (its 3 deleted first), then back at 2"
        )
        #expect(state.devicePositions[Self.desk] == nil, "forgotten")
        #expect(state.recentEvents[DeviceKey(user: "alice", device: "phone")] == [[9, 9, 9]])
        #expect(state.recentEvents.count == 1, "an event without an origin device is nobody's resend")
        let bundles = state.keyBundles.sorted { $0.kind < $1.kind }.map { "\($0.device.device) \($0.kind) \($0.bytes)" }
        #expect(
            bundles == ["phone 1 [1, 2]", "phone 2 [4]"],
            "the later bundle of a batch wins; the forgotten desk's is gone"
        )
        #expect(state.records == [.blocklist(user: "bob"): [6], .messageExtension(Self.team, seq: 1): [3]])

        let teamForCarol = try store.messages(in: Self.team, from: 1, through: 10, limit: 10, visibleTo: "carol")
        #expect(teamForCarol.map(\.seq) == [2, 3], "seq 1 was trimmed")
        let bobStream = try store.stream(of: "bob", after: 0, through: 10, limit: 10)
        #expect(bobStream.map(\.position) == [2, 3, 4, 5])
        #expect(bobStream.map(\.isMessage) == [true, true, false, true])
        #expect(bobStream[1].frame.isEmpty, "its message was dropped by retention")
        #expect(bobStream[0].sent && bobStream[0].originDevice == "laptop")
        #expect(bobStream[2].frame == [8])
        #expect(bobStream[3].frame == Self.message(Self.direct, 3, from: "alice", id: "c3").frame)
    }

    /// Retention's ranges of one batch join into one per conversation or stream, whatever order
    /// they come in; an empty one changes nothing.
    @Test func theRetentionRangesOfABatchJoin() {
        var trims: [String: Range<UInt64>] = [:]
        StoreBatch.trim(3..<5, of: "bob", in: &trims)
        StoreBatch.trim(5..<6, of: "bob", in: &trims)
        StoreBatch.trim(1..<3, of: "bob", in: &trims)
        StoreBatch.trim(7..<7, of: "bob", in: &trims)
        StoreBatch.trim(7..<7, of: "carol", in: &trims)
        StoreBatch.trim(2..<4, of: "alice", in: &trims)
        #expect(trims == ["bob": 1..<6, "alice": 2..<4])
    }

    /// A targeted message is read only by its sender and its receivers: all of them (SQLite keeps
    /// them as one text, separated by U+0000, which GRDB's text decode cut at the first: before,
    /// only the first receiver read it from a SQLite store, and after a restart).
    @Test(arguments: StoreBackend.allCases)
    func aTargetedMessageIsReadOnlyByItsSenderAndReceivers(_ backend: StoreBackend) async throws {
        let location = try await TestStore(backend)
        defer { location.remove() }
        let store = try location.open()
        defer { store.close() }
        try store.commit(Self.first)
        func seqs(_ user: String) throws -> [UInt64] {
            try store.messages(in: Self.team, from: 1, through: 3, limit: 10, visibleTo: user).map(\.seq)
        }
        #expect(try seqs("alice") == [1, 2, 3])
        #expect(try seqs("bob") == [1, 2, 3])
        #expect(try seqs("carol") == [2, 3])
        #expect(try seqs("dave") == [1, 2, 3])
        #expect(try store.messages(in: Self.team, from: 1, through: 3, limit: 1, visibleTo: "carol").map(\.seq) == [2])
        let targeted = try store.messages(in: Self.team, from: 1, through: 1, limit: 1, visibleTo: "bob")
        #expect(targeted.first?.receivers == ["bob", "dave"])
        #expect(try store.load().conversations[Self.team]?.audiences[1] == ["alice", "bob", "dave"])
        #expect(targeted.first?.frame == Self.message(Self.team, 1, from: "alice", id: "g1").frame)
    }

    // MARK: Comparing

    /// A store's state as sorted lines (``StoredState`` holds dictionaries and sets).
    static func fingerprint(_ state: StoredState) -> [String] {
        var lines: [String] = []
        for (key, conversation) in state.conversations.sorted(by: { $0.key.storageID < $1.key.storageID }) {
            lines.append(
                "conversation \(key.storageID) max \(conversation.maxSeq) oldest \(conversation.oldestSeq) "
                    + "removed \(conversation.removed.sorted())"
            )
            for (seq, kept) in conversation.kept.all {
                let audience = conversation.audiences[seq]?.sorted() ?? []
                lines.append("  kept \(seq) \(kept.sender) '\(kept.clientMsgID)' audience \(audience)")
                // What a resend and a reference find, by both ids.
                if let sent = conversation.sent(by: kept.sender, clientMsgID: kept.clientMsgID) {
                    lines.append(
                        "  sent \(kept.sender) \(kept.clientMsgID) \(sent.seq) \(sent.serverMsgUID) \(sent.serverTimeMs)"
                    )
                }
                let byUID = conversation.resolve(MessageRef.with { $0.serverMsgUID = kept.serverMsgUID })
                lines.append("  uid \(kept.serverMsgUID) \(byUID)")
            }
        }
        for (key, members) in state.members.sorted(by: { $0.key.storageID < $1.key.storageID }) {
            lines.append("members \(key.storageID) \(members.sorted())")
        }
        for (user, stream) in state.streams.sorted(by: { $0.key < $1.key }) {
            lines.append("stream \(user) head \(stream.head) oldest \(stream.oldest)")
        }
        for (device, position) in state.devicePositions.sorted(by: { "\($0.key)" < "\($1.key)" }) {
            lines.append("device \(device.user)/\(device.device) \(position)")
        }
        for (device, events) in state.recentEvents.sorted(by: { "\($0.key)" < "\($1.key)" }) {
            lines.append("events \(device.user)/\(device.device) \(events)")
        }
        lines.append("last event \(state.lastEventID)")
        for bundle in state.keyBundles {
            lines.append("bundle \(bundle.device.user)/\(bundle.device.device) \(bundle.kind) \(bundle.bytes)")
        }
        for (key, value) in state.records {
            lines.append("record \(key.scope) \(key.id) \(value)")
        }
        return lines.sorted()
    }

    static func describe(_ message: StoredMessage) -> String {
        "\(message.conversation.storageID) \(message.seq) \(message.senderID) '\(message.clientMsgID)' "
            + "\(message.serverMsgUID) \(message.serverTimeMs) \(message.frame) \(message.receivers)"
    }

    static func describe(_ row: StreamRow) -> String {
        "\(row.position) \(row.originDevice ?? "-") \(row.frame) \(row.sent) \(row.isMessage)"
    }
}
#endif
