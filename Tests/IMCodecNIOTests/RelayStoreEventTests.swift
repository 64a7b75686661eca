#if Tools
import Foundation
import GRDB
import IMCodec
import PostgresNIO
import Testing

@testable import imcodec_relay

/// Kept events (``KeptEvent``): an event that reaches many streams (a group edit, poll results, a
/// membership change) is stored once, not once per member, on every store; it is redacted and
/// erased once for all of them, and deleted with the last stream entry that names it. A database
/// of the schema before, which kept an event's bytes in each stream row, is moved to it at start.
@Suite("Relay stores: an event is kept once, however many streams hold it", .serialized, .timeLimit(.minutes(2)))
struct RelayStoreEventTests {
    static let team = ConversationKey.group("team")
    static let users = ["alice", "bob", "carol"]
    /// A stream chunk (which carries content of its message: a recall erases its text).
    static let chunk = Frame(.streamChunk(StreamChunk.with { $0.text = "secret plans" })).serializedBytes()

    /// The store's kept events: how many, and their bytes (a database's; `nil` for the memory store).
    static func keptEvents(
        _ location: TestStore?,
        memory: MemoryRelayStore? = nil
    ) async throws -> (count: Int, bytes: Int?) {
        if let memory { return (memory.keptEventCount, nil) }
        let location = try #require(location)
        switch location.location {
        case .sqlite(let path, _):
            let queue = try DatabaseQueue(path: path)
            defer { try? queue.close() }
            return try await queue.read { db in
                let row = try #require(try Row.fetchOne(db, sql: "SELECT count(*), total(length(frame)) FROM events"))
                return (count: row[0] as Int, bytes: Int(row[1] as Double))
            }
        default:
            return try await #require(location.database).withConnection { connection in
                let rows = try await connection.query(
                    "SELECT count(*)::int, COALESCE(sum(octet_length(frame)), 0)::int FROM events",
                    logger: PostgresTestDatabase.logger
                )
                var counted: (count: Int, bytes: Int?) = (0, 0)
                for try await row in rows {
                    let (count, bytes) = try row.decode((Int, Int).self)
                    counted = (count, bytes)
                }
                return counted
            }
        }
    }

    /// What each of `users` reads at `position` of its stream.
    static func frames(at position: UInt64, of users: [String], in store: any RelayStore) throws -> [[UInt8]] {
        try users.map { user in
            try store.stream(of: user, after: position - 1, through: position, limit: 1).first?.frame ?? [0xFF]
        }
    }

    /// One chunk to three streams and one expiring event to two: two events kept, with the chunk's
    /// bytes once. A recall of the chunk's message redacts it for all three, and an expiry erases
    /// the other for both, each in one row. Retention of two streams keeps the chunk for the third
    /// and deletes the event no entry names; the last entry takes the chunk along.
    func checkEventsAreKeptOnce(_ store: any RelayStore, _ location: TestStore?, memory: MemoryRelayStore?) async throws
    {
        var first = StoreBatch()
        first.messages = [RelayStoreTests.message(Self.team, 1, from: "alice", id: "m1")]
        first.events = [
            KeptEvent(id: 1, frame: Self.chunk, about: MessageKey(conversation: Self.team, seq: 1)),
            KeptEvent(id: 2, frame: [5, 5, 5], expireAtMs: 1_000),
        ]
        first.streamEntries =
            Self.users.map {
                StreamEntry(user: $0, position: 1, originDevice: $0 == "alice" ? "phone" : nil, item: .event(1))
            }
            + ["alice", "bob"].map { StreamEntry(user: $0, position: 2, item: .event(2)) }
        try store.commit(first)
        let kept = try await Self.keptEvents(location, memory: memory)
        #expect(kept.count == 2, "two events, not five rows")
        if let bytes = kept.bytes { #expect(bytes == Self.chunk.count + 3, "the chunk's bytes once") }
        #expect(try Self.frames(at: 1, of: Self.users, in: store) == Array(repeating: Self.chunk, count: 3))
        let expiring = try store.stream(of: "bob", after: 1, through: 2, limit: 1)
        #expect(expiring.map(\.frame) == [[5, 5, 5]] && expiring.map(\.expireAtMs) == [1_000])
        let loaded = try store.load()
        #expect(loaded.lastEventID == 2)
        #expect(loaded.recentEvents[DeviceKey(user: "alice", device: "phone")] == [Self.chunk])

        var second = StoreBatch()
        second.removals = [(Self.team, 1, [7])]
        second.eraseExpiredThrough = 1_000
        try store.commit(second)
        let redacted = Redaction.event(Self.chunk)
        #expect(redacted != Self.chunk && !redacted.isEmpty)
        #expect(try Self.frames(at: 1, of: Self.users, in: store) == Array(repeating: redacted, count: 3))
        #expect(try Self.frames(at: 2, of: ["alice", "bob"], in: store) == [[], []], "expired, for both")
        #expect(try await Self.keptEvents(location, memory: memory).count == 2, "entries still name both")

        var third = StoreBatch()
        third.trimmedStreams = ["alice": 1..<3, "bob": 1..<3]
        try store.commit(third)
        #expect(try await Self.keptEvents(location, memory: memory).count == 1, "no entry names the expired one")
        #expect(try Self.frames(at: 1, of: ["carol"], in: store) == [redacted], "carol's entry keeps the chunk")
        #expect(try store.load().lastEventID == 1, "the largest id kept: 2 went")
        try await checkIDsGivenAgain(store, location, memory: memory)
    }

    /// After ``checkEventsAreKeptOnce(_:_:memory:)``'s first three batches (event 1 kept for carol,
    /// event 2 deleted): an id retention freed is given again (2, about a second message), and
    /// goes with its entry; then three events in one batch whose entries that batch trims: one named
    /// only by trimmed entries (a range of 70 positions, past PostgreSQL's per-key delete), one by
    /// a single trimmed entry, one by an entry kept. A recall of the message the deleted event 2
    /// was about leaves the new event 2 as it is.
    func checkIDsGivenAgain(_ store: any RelayStore, _ location: TestStore?, memory: MemoryRelayStore?) async throws {
        let second = MessageKey(conversation: Self.team, seq: 2)
        var reuse = StoreBatch()
        reuse.messages = [RelayStoreTests.message(Self.team, 2, from: "alice", id: "m2")]
        reuse.events = [KeptEvent(id: 2, frame: Self.chunk, about: second)]
        reuse.streamEntries = [StreamEntry(user: "carol", position: 2, item: .event(2))]
        try store.commit(reuse)
        #expect(try await Self.keptEvents(location, memory: memory).count == 2)
        #expect(try Self.frames(at: 2, of: ["carol"], in: store) == [Self.chunk])

        var fourth = StoreBatch()
        fourth.trimmedStreams = ["carol": 1..<3]
        try store.commit(fourth)
        #expect(try await Self.keptEvents(location, memory: memory).count == 0, "the last entries took them along")
        #expect(try store.load().lastEventID == 0)

        var fifth = StoreBatch()
        fifth.events = [KeptEvent(id: 1, frame: [3]), KeptEvent(id: 2, frame: [4, 4]), KeptEvent(id: 3, frame: [9])]
        fifth.streamEntries =
            [StreamEntry(user: "frank", position: 1, item: .event(1))]
            + [StreamEntry(user: "erin", position: 1, item: .event(2))]
            + (1...70).map { StreamEntry(user: "dave", position: UInt64($0), item: .event(3)) }
        fifth.trimmedStreams = ["frank": 1..<2, "dave": 1..<71]
        try store.commit(fifth)
        #expect(try await Self.keptEvents(location, memory: memory).count == 1, "only erin's entry names one")
        #expect(try store.load().lastEventID == 2)

        var sixth = StoreBatch()
        sixth.removals = [(Self.team, 2, [7])]
        try store.commit(sixth)
        #expect(try Self.frames(at: 1, of: ["erin"], in: store) == [[4, 4]], "not about the recalled message")
    }

    @Test(arguments: StoreBackend.allCases)
    func anEventIsKeptOnceAndGoesWithItsLastEntry(_ backend: StoreBackend) async throws {
        let location = try await TestStore(backend)
        defer { location.remove() }
        let store = try location.open()
        defer { store.close() }
        try await checkEventsAreKeptOnce(store, location, memory: nil)
    }

    @Test func theMemoryStoreKeepsAnEventOnceToo() async throws {
        let memory = MemoryRelayStore()
        try await checkEventsAreKeptOnce(memory, nil, memory: memory)
    }

    // MARK: Through the relay

    /// A 20 KB edit in a group of 30 members, on SQLite: one event of about 20 KB is kept, named by
    /// the 30 members' streams (before, each stream row held the frame: 30 times the bytes); a member
    /// offline when it was sent reads it back by stream sync.
    @Test func aGroupEditIsStoredOnceForAllItsMembers() async throws {
        let database = try await TestStore(.sqlite)
        defer { database.remove() }
        let members = ["alice", "bob"] + (1...28).map { "m\($0)" }
        let text = String(repeating: "edited ", count: 3_000)
        try await withClientGroup { group in
            try await withRelay({
                $0.store = database.location; $0.groups = ["big": Set(members)]
            }) { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group)
                let bob = try await TestClient.connect(to: server, as: "bob", group: group)
                try await alice.send(Frame(Message.groupText(from: "alice", group: "big", "draft", clientMsgID: "d")))
                #expect(await eventually { bob.collector.messages.count == 1 })
                let sent = try #require(bob.collector.messages.first)
                var edited = sent
                edited.elements = [.text(text)]
                let edit = EditEvent.with {
                    $0.message = sent.reference; $0.newMessage = edited; $0.editorID = "alice"
                }
                #expect(
                    try await alice.ask(RelayProtocol.answer(.edit(edit), requestID: 7))?.requestResult?.errorCode == 0
                )
                let m7 = try await TestClient.connect(to: server, as: "m7", group: group)
                let frames = try await m7.streamPage(requestID: 8) ?? []
                #expect(frames.count == 2, "the message and the edit")
                if case .edit(let kept)? = frames.last?.payload {
                    #expect(kept.newMessage?.firstText == text)
                } else {
                    Issue.record("no edit in m7's stream: \(frames)")
                }
            }
        }
        let kept = try await Self.keptEvents(database)
        #expect(kept.count == 1, "one event for 30 streams")
        let bytes = try #require(kept.bytes)
        #expect(bytes > text.utf8.count && bytes < 2 * text.utf8.count, "its bytes once: \(bytes)")
        guard case .sqlite(let path, _) = database.location else { return }
        let queue = try DatabaseQueue(path: path)
        defer { try? queue.close() }
        let naming = try await queue.read { db in
            try Int.fetchOne(db, sql: "SELECT count(*) FROM stream WHERE event IS NOT NULL")
        }
        #expect(naming == members.count, "each member's stream names it")
    }

    // MARK: A database of the schema before

    /// A database of the version before this one (SQLite v6, PostgreSQL 5), whose stream rows hold
    /// their events' bytes: two events with origin devices (one about a message, one expiring), an
    /// erased one and a message entry. At start each event row becomes a kept event of its own:
    /// every stream reads what it read, a recall redacts the event about the message, the expiry
    /// erases the other, the resend window loads the same, and the next event gets the next id.
    @Test(arguments: StoreBackend.allCases)
    func aDatabaseOfTheSchemaBeforeKeepsItsEvents(_ backend: StoreBackend) async throws {
        let location = try await TestStore(backend)
        defer { location.remove() }
        let about = MessageKey(conversation: Self.team, seq: 1).storageID
        // Rows of the schema before: (user, position, origin, frame, expire_at_ms, about).
        let rows: [(String, Int, String?, [UInt8], Int, String?)] = [
            ("alice", 1, "phone", Self.chunk, 0, about),
            ("alice", 2, "phone", [5, 5], 2_000, nil),
            ("bob", 1, nil, [], 0, nil),
        ]
        switch location.location {
        case .sqlite(let path, _):
            let queue = try DatabaseQueue(path: path)
            try SQLiteRelayStore.migrator.migrate(queue, upTo: "v6")
            try await queue.write { db in
                try db.execute(
                    sql: """
                        INSERT INTO messages (conversation, seq, sender, client_msg_id, uid, time_ms, frame)
                        VALUES (?, 1, 'alice', 'm1', 'uid-1', 0, x'010203');
                        INSERT INTO conversations (id, max_seq) VALUES (?, 1);
                        INSERT INTO streams (user, head) VALUES ('alice', 2), ('bob', 2);
                        INSERT INTO stream (user, position, conversation, seq) VALUES ('bob', 2, ?, 1);
                        """,
                    arguments: [Self.team.storageID, Self.team.storageID, Self.team.storageID]
                )
                for (user, position, origin, frame, expiry, about) in rows {
                    try db.execute(
                        sql: """
                            INSERT INTO stream (user, position, origin_device, frame, expire_at_ms, about)
                            VALUES (?, ?, ?, ?, ?, ?)
                            """,
                        arguments: [user, position, origin, Data(frame), expiry, about]
                    )
                }
            }
            try queue.close()
        default:
            let database = try #require(location.database)
            try await database.withConnection { connection in
                let log = PostgresTestDatabase.logger
                _ = try await connection.query(
                    """
                    CREATE TABLE imcodec_schema_migrations (
                        version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())
                    """,
                    logger: log
                )
                for (index, migration) in PostgresRelayStore.migrations.prefix(5).enumerated() {
                    for statement in migration.sql {
                        _ = try await connection.query(PostgresQuery(unsafeSQL: statement), logger: log)
                    }
                    _ = try await connection.query(
                        "INSERT INTO imcodec_schema_migrations (version, name) VALUES (\(Int32(index + 1)), \(migration.name))",
                        logger: log
                    )
                }
                let team = Self.team.storageID
                _ = try await connection.query(
                    """
                    INSERT INTO messages (conversation, seq, sender, client_msg_id, uid, time_ms, frame)
                    VALUES (\(team), 1, 'alice', 'm1', 'uid-1', 0, '\\x010203'::bytea)
                    """,
                    logger: log
                )
                _ = try await connection.query(
                    "INSERT INTO conversations (id, max_seq) VALUES (\(team), 1)",
                    logger: log
                )
                _ = try await connection.query(
                    "INSERT INTO streams (user_id, head) VALUES ('alice', 2), ('bob', 2)",
                    logger: log
                )
                _ = try await connection.query(
                    "INSERT INTO stream (user_id, position, conversation, seq) VALUES ('bob', 2, \(team), 1)",
                    logger: log
                )
                for (user, position, origin, frame, expiry, about) in rows {
                    _ = try await connection.query(
                        """
                        INSERT INTO stream (user_id, position, origin_device, frame, expire_at_ms, about)
                        VALUES (\(user), \(Int64(position)), \(origin), \(ByteBuffer(bytes: frame)), \(Int64(expiry)),
                            \(about))
                        """,
                        logger: log
                    )
                }
            }
        }

        let store = try location.open()
        defer { store.close() }
        #expect(try await Self.keptEvents(location).count == 3, "an event per row")
        let alice = try store.stream(of: "alice", after: 0, through: 2, limit: 10)
        #expect(alice.map(\.frame) == [Self.chunk, [5, 5]] && alice.map(\.expireAtMs) == [0, 2_000])
        #expect(alice.allSatisfy { !$0.isMessage && $0.originDevice == "phone" })
        let bob = try store.stream(of: "bob", after: 0, through: 2, limit: 10)
        #expect(bob.map(\.frame) == [[], [1, 2, 3]] && bob.map(\.isMessage) == [false, true])
        let loaded = try store.load()
        #expect(loaded.lastEventID == 3)
        #expect(loaded.recentEvents[DeviceKey(user: "alice", device: "phone")] == [Self.chunk, [5, 5]])

        var batch = StoreBatch()
        batch.removals = [(Self.team, 1, [7])]
        batch.eraseExpiredThrough = 2_000
        batch.events = [KeptEvent(id: loaded.lastEventID + 1, frame: [6])]
        batch.streamEntries = [StreamEntry(user: "bob", position: 3, item: .event(loaded.lastEventID + 1))]
        try store.commit(batch)
        let after = try store.stream(of: "alice", after: 0, through: 2, limit: 10).map(\.frame)
        #expect(after == [Redaction.event(Self.chunk), []], "redacted and erased as before the move")
        let bobAfter = try store.stream(of: "bob", after: 1, through: 3, limit: 10).map(\.frame)
        #expect(bobAfter == [[7], [6]], "\(bobAfter)")
    }
}
#endif
