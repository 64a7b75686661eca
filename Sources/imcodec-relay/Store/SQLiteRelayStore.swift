#if Tools
import Foundation
import GRDB
#if canImport(GRDBSQLite)
import GRDBSQLite
#elseif canImport(SQLite3)
import SQLite3
#endif
import IMCodec

/// The relay's durable store: one SQLite database (through GRDB) in WAL mode, one transaction per
/// ``StoreBatch``. A committed transaction survives a killed process (WAL); with
/// `synchronous = FULL` (the default) it survives a power loss too.
///
/// Tables (created by versioned migrations at start):
/// - `conversations(id, max_seq)`: each conversation's newest seq, so seqs never go back, even
///   when retention has dropped every message;
/// - `messages(conversation, seq, sender, client_msg_id, uid, time_ms, frame, receivers, removed)`:
///   the stamped frames. Resends are de-duplicated by the router, in memory, from what ``load()``
///   reads (``ConversationState/sent(by:clientMsgID:)``); no index on (conversation, sender, client_msg_id) is kept,
///   since nothing queries it and it cost a B-tree page write per message;
/// - `members(conversation, user)`;
/// - `streams(user, head)` and `stream(user, position, origin_device, conversation, seq, sent, frame,
///   event)`: each user's stream (a message by reference; an event by reference, `event`, since
///   version 7, before it with its bytes in `frame`);
/// - `devices(user, device, position)`: each device's last acknowledged stream position;
/// - `key_bundles(user, device, kind, bundle)` (version 2): each device's end-to-end key bundles,
///   as `KeyBundle` bytes, its one-time keys as they are after the fetches so far;
/// - `records(scope, id, value)` (version 3): the state records (``StateRecordKey``): each user's
///   view of its conversations, blocklists, message extensions;
/// - `messages.expire_at_ms` and `stream.expire_at_ms` (version 4), each with a partial index of
///   the rows that expire: when a disappearing message, or an event about one, expires (0: never);
/// - `stream.about` (version 5), with a partial index: for an event that carries content of one
///   message (an edit, a stream chunk), that message (``MessageKey/storageID``), so a recall or a
///   delete for everyone erases the event's frame with the message's. Version 5 also erases the
///   frames of the messages removed before it.
/// - Version 6 changes no table: from it on, a conversation record's unread seqs may be runs
///   (``SeqRuns``), which an older relay would misread; the version makes it refuse the database.
/// - `events(id, frame, expire_at_ms, about)` and `stream.event` (version 7): each kept event once
///   (``KeptEvent``), named by the stream entries of every user it reaches (a partial index on
///   `stream.event` finds the entries left when retention deletes some, another the entries a
///   device sent, for the resend check at start), with its expiry and the
///   message whose content it carries (partial indexes). Version 7 moves the events kept in stream
///   rows (`stream.frame`, `about`, `expire_at_ms`, and their indexes) into it, one event per row.
final class SQLiteRelayStore: RelayStore {
    /// The database file's path.
    let path: String
    private let queue: DatabaseQueue

    /// Opens (or creates) the database at `path` and migrates it to the current version.
    /// - Parameter synchronous: SQLite's `synchronous` setting: `FULL` (survives a power loss) or
    ///   `NORMAL` (survives a killed process; a power loss may lose the newest commits).
    /// - Throws: ``RelayStoreError`` when the file cannot be opened or is not a healthy database.
    init(path: String, synchronous: String = "FULL") throws {
        self.path = path
        var configuration = Configuration()
        configuration.label = "imcodec-relay"
        configuration.busyMode = .timeout(5)
        configuration.prepareDatabase { db in
            // WAL, set here rather than with GRDB's `journalMode = .wal`: that setting runs after
            // this closure and sets `synchronous = NORMAL` (GRDB's choice for WAL), which would
            // silently undo FULL below; it also writes to the database at every open (it creates
            // and drops a table to make the -wal non-empty), which a refused database must not get.
            guard try String.fetchOne(db, sql: "PRAGMA journal_mode = WAL") == "wal" else {
                throw RelayStoreError(description: "SQLite cannot put it in WAL mode")
            }
            try db.execute(sql: "PRAGMA synchronous = \(synchronous == "NORMAL" ? "NORMAL" : "FULL")")
            // Checkpoint every 10,000 WAL pages (about 40 MB) rather than SQLite's 1,000: a page
            // written by many commits (a conversation's or a stream's newest leaf) is copied back to
            // the database once per checkpoint, and each checkpoint fsyncs both files. A crash
            // loses nothing more (the WAL is replayed at open); recovery reads a longer WAL.
            try db.execute(sql: "PRAGMA wal_autocheckpoint = 10000")
            // A page cache of up to 32 MiB (SQLite's default is 2 MiB) keeps the B-tree pages the
            // commits touch in memory instead of reading them back from the WAL or the database.
            try db.execute(sql: "PRAGMA cache_size = -32768")
        }
        do {
            try Self.check(path)
            queue = try DatabaseQueue(path: path, configuration: configuration)
        } catch let error as RelayStoreError {
            throw RelayStoreError(description: "the database \(path) is damaged: \(error.description)")
        } catch {
            throw RelayStoreError(description: "the database \(path) cannot be used: \(error)")
        }
        do {
            // A database a newer relay migrated holds migrations this one does not know (GRDB would
            // ignore them and write to tables it does not understand): refused, and left as it is.
            let unknown = try queue.read { db in
                try Self.migrator.appliedIdentifiers(db).subtracting(Self.migrator.migrations)
            }
            guard unknown.isEmpty else {
                try? queue.close()
                throw RelayStoreError(
                    description:
                        "the database \(path) was written by a newer relay (it has the migrations "
                        + "\(unknown.sorted().joined(separator: ", ")); this relay knows "
                        + "\(Self.migrator.migrations.joined(separator: ", "))): run the newer relay, or start this one "
                        + "on another data directory"
                )
            }
            try Self.migrator.migrate(queue)
        } catch let error as RelayStoreError {
            throw error
        } catch {
            throw RelayStoreError(description: "the database \(path) cannot be used: \(error)")
        }
    }

    /// The connection's `synchronous` setting, as SQLite reports it: 2 is FULL, 1 NORMAL.
    func synchronousSetting() throws -> Int {
        try queue.read { db in try Int.fetchOne(db, sql: "PRAGMA synchronous") ?? -1 }
    }

    /// Refuses a damaged database before anything writes to it: an existing file is opened
    /// read-only (which neither converts, migrates nor checkpoints it, so its bytes and its -wal stay
    /// as they were) and must pass SQLite's `quick_check`.
    private static func check(_ path: String) throws {
        guard FileManager.default.fileExists(atPath: path) else { return }
        var configuration = Configuration()
        configuration.readonly = true
        configuration.label = "imcodec-relay (check)"
        let result: [String]
        do {
            let reader = try DatabaseQueue(path: path, configuration: configuration)
            result = try reader.read { db in try String.fetchAll(db, sql: "PRAGMA quick_check") }
            try reader.close()
        } catch {
            throw RelayStoreError(description: "\(error)")
        }
        guard result == ["ok"] else { throw RelayStoreError(description: result.prefix(3).joined(separator: "; ")) }
    }

    /// The schema, one migration per version; a database made by an older relay is brought up to date.
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.execute(
                sql: """
                    CREATE TABLE conversations (id TEXT PRIMARY KEY, max_seq INTEGER NOT NULL) WITHOUT ROWID;
                    CREATE TABLE messages (
                        conversation TEXT NOT NULL, seq INTEGER NOT NULL, sender TEXT NOT NULL,
                        client_msg_id TEXT NOT NULL, uid TEXT NOT NULL, time_ms INTEGER NOT NULL,
                        frame BLOB NOT NULL, receivers TEXT, removed INTEGER NOT NULL DEFAULT 0,
                        PRIMARY KEY (conversation, seq)) WITHOUT ROWID;
                    CREATE TABLE members (conversation TEXT NOT NULL, user TEXT NOT NULL,
                        PRIMARY KEY (conversation, user)) WITHOUT ROWID;
                    CREATE TABLE streams (user TEXT PRIMARY KEY, head INTEGER NOT NULL) WITHOUT ROWID;
                    CREATE TABLE stream (
                        user TEXT NOT NULL, position INTEGER NOT NULL, origin_device TEXT,
                        conversation TEXT, seq INTEGER, sent INTEGER NOT NULL DEFAULT 0, frame BLOB,
                        PRIMARY KEY (user, position)) WITHOUT ROWID;
                    CREATE TABLE devices (user TEXT NOT NULL, device TEXT NOT NULL, position INTEGER NOT NULL,
                        PRIMARY KEY (user, device)) WITHOUT ROWID;
                    """
            )
        }
        migrator.registerMigration("v2") { db in
            try db.execute(
                sql: """
                    CREATE TABLE key_bundles (user TEXT NOT NULL, device TEXT NOT NULL, kind INTEGER NOT NULL,
                        bundle BLOB NOT NULL, PRIMARY KEY (user, device, kind)) WITHOUT ROWID;
                    """
            )
        }
        migrator.registerMigration("v3") { db in
            try db.execute(
                sql: """
                    CREATE TABLE records (scope TEXT NOT NULL, id TEXT NOT NULL, value BLOB NOT NULL,
                        PRIMARY KEY (scope, id)) WITHOUT ROWID;
                    """
            )
        }
        migrator.registerMigration("v4") { db in
            try db.execute(
                sql: """
                    ALTER TABLE messages ADD COLUMN expire_at_ms INTEGER NOT NULL DEFAULT 0;
                    ALTER TABLE stream ADD COLUMN expire_at_ms INTEGER NOT NULL DEFAULT 0;
                    CREATE INDEX messages_expiry ON messages (expire_at_ms) WHERE expire_at_ms > 0;
                    CREATE INDEX stream_expiry ON stream (expire_at_ms) WHERE expire_at_ms > 0;
                    """
            )
        }
        migrator.registerMigration("v5") { db in
            try db.execute(
                sql: """
                    ALTER TABLE stream ADD COLUMN about TEXT;
                    CREATE INDEX stream_about ON stream (about) WHERE about IS NOT NULL;
                    UPDATE messages SET frame = x'' WHERE removed = 1;
                    """
            )
        }
        // Conversation records whose unread seqs may be runs: nothing to change, only to record.
        migrator.registerMigration("v6") { _ in }
        // Each event once, not once per stream that holds it; the rows kept so far become an event
        // each, numbered in (user, position) order (the primary key's: both statements number the
        // same rows alike). Each frame is copied once, and each event row rewritten once without it;
        // the indexes are made after the rows.
        migrator.registerMigration("v7") { db in
            try db.execute(
                sql: """
                    CREATE TABLE events (id INTEGER PRIMARY KEY, frame BLOB NOT NULL,
                        expire_at_ms INTEGER NOT NULL DEFAULT 0, about TEXT);
                    INSERT INTO events (id, frame, expire_at_ms, about)
                        SELECT ROW_NUMBER() OVER (ORDER BY user, position), COALESCE(frame, x''), expire_at_ms, about
                        FROM stream WHERE conversation IS NULL;
                    DROP INDEX stream_about;
                    DROP INDEX stream_expiry;
                    ALTER TABLE stream ADD COLUMN event INTEGER;
                    UPDATE stream SET event = numbered.id, frame = NULL, about = NULL, expire_at_ms = 0 FROM (
                        SELECT user AS u, position AS p, ROW_NUMBER() OVER (ORDER BY user, position) AS id
                        FROM stream WHERE conversation IS NULL) AS numbered
                    WHERE stream.user = numbered.u AND stream.position = numbered.p;
                    CREATE INDEX stream_event ON stream (event) WHERE event IS NOT NULL;
                    CREATE INDEX stream_sent_event ON stream (user, origin_device, position, event)
                        WHERE event IS NOT NULL AND origin_device IS NOT NULL;
                    CREATE INDEX events_expiry ON events (expire_at_ms) WHERE expire_at_ms > 0;
                    CREATE INDEX events_about ON events (about) WHERE about IS NOT NULL;
                    """
            )
        }
        return migrator
    }

    func load() throws -> StoredState {
        try readingRows { try loadState() }
    }

    /// Runs `body`, whose rows are read with throwing decodes (GRDB's subscripts stop the process on
    /// a value they cannot convert), and reports a value that could not be read (a negative seq, a
    /// NULL where a value must be) as a damaged database, on one line: GRDB's description less the
    /// rest of the row (user and message ids) and the statement; as well, rows that no relay writes
    /// together (``DamagedState``).
    private func readingRows<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as RowDecodingError {
            let text = "\(error)"
            let value = text.range(of: ", row: ").map { String(text[..<$0.lowerBound]) } ?? text
            let line = value.split(whereSeparator: \.isNewline).joined(separator: " ")
            throw RelayStoreError(description: "the database \(path) is damaged: \(line)")
        } catch let damage as DamagedState {
            throw RelayStoreError(description: "the database \(path) is damaged: \(damage.reason)")
        }
    }

    /// The integer in column `index` of `row`, as `T`: stored as an INTEGER that `T` holds, or the
    /// database is damaged. (GRDB's decode reads what SQLite converts: text that is not a number in
    /// an integer column read as 0.) The error names the column and the value, not the rest of the
    /// row.
    private func integer<T: FixedWidthInteger>(_ row: Row, _ index: Int) throws -> T {
        let value: DatabaseValue = row[index]
        if case .int64(let stored) = value.storage, let converted = T(exactly: stored) { return converted }
        let column = Array(row.columnNames)[index]
        var shown = value.description
        if shown.count > 40 { shown = String(shown.prefix(40)) + "…" }
        throw RelayStoreError(
            description:
                "the database \(path) is damaged: column \"\(column)\" holds \(shown), where a \(T.self) is kept"
        )
    }

    private func loadState() throws -> StoredState {
        try queue.read { db in
            var state = StoredState()
            for row in try Row.fetchAll(db, sql: "SELECT id, max_seq FROM conversations") {
                guard let key = ConversationKey(storageID: try row.decode(atIndex: 0)) else { continue }
                state.conversations[key, default: ConversationState()].maxSeq = try integer(row, 1)
            }
            let messages = try Row.fetchCursor(
                db,
                sql: """
                    SELECT conversation, seq, sender, client_msg_id, uid, time_ms, removed, CAST(receivers AS BLOB),
                        length(frame), expire_at_ms
                    FROM messages ORDER BY conversation, seq
                    """
            )
            while let row = try messages.next() {
                guard let key = ConversationKey(storageID: try row.decode(atIndex: 0)) else { continue }
                state.loadMessage(
                    StoredMessage(
                        conversation: key,
                        seq: try integer(row, 1),
                        senderID: try row.decode(atIndex: 2),
                        clientMsgID: try row.decode(atIndex: 3),
                        serverMsgUID: try row.decode(atIndex: 4),
                        serverTimeMs: try integer(row, 5),
                        frame: [],
                        receivers: Self.receivers(try row.decode(atIndex: 7)),
                        frameSize: try integer(row, 8),
                        expireAtMs: try integer(row, 9)
                    ),
                    removed: (try integer(row, 6) as Int) != 0
                )
            }
            state.finishLoadingMessages()
            for row in try Row.fetchAll(db, sql: "SELECT conversation, user FROM members") {
                guard let key = ConversationKey(storageID: try row.decode(atIndex: 0)) else { continue }
                state.members[key, default: []].insert(try row.decode(atIndex: 1))
            }
            for row in try Row.fetchAll(db, sql: "SELECT user, head FROM streams") {
                let head: UInt64 = try integer(row, 1)
                state.streams[try row.decode(atIndex: 0)] = StreamState(head: head, oldest: head + 1)
            }
            for row in try Row.fetchAll(db, sql: "SELECT user, MIN(position) FROM stream GROUP BY user") {
                try state.loadOldestPosition(try integer(row, 1), of: try row.decode(atIndex: 0))
            }
            for row in try Row.fetchAll(db, sql: "SELECT user, device, position FROM devices") {
                state.devicePositions[DeviceKey(user: try row.decode(atIndex: 0), device: try row.decode(atIndex: 1))] =
                    try integer(row, 2)
            }
            // Each device's newest events, oldest first (the window keeps the load bounded): ranked
            // on the partial index of the entries a device sent (one per event at most), then only
            // the frames kept are read.
            for row in try Row.fetchAll(
                db,
                sql: """
                    SELECT r.user, r.origin_device, e.frame FROM (
                        SELECT user, origin_device, position, event, ROW_NUMBER() OVER (
                            PARTITION BY user, origin_device ORDER BY position DESC) AS newest
                        FROM stream WHERE event IS NOT NULL AND origin_device IS NOT NULL) AS r
                    JOIN events e ON e.id = r.event
                    WHERE r.newest <= ? ORDER BY r.position
                    """,
                arguments: [RecentEvents.capacity]
            ) {
                let frame: Data = try row.decode(atIndex: 2)
                state.recentEvents[
                    DeviceKey(user: try row.decode(atIndex: 0), device: try row.decode(atIndex: 1)),
                    default: []
                ].append(Array(frame))
            }
            if let row = try Row.fetchOne(db, sql: "SELECT max(id) FROM events"), !row.hasNull(atIndex: 0) {
                state.lastEventID = try integer(row, 0)
            }
            for row in try Row.fetchAll(db, sql: "SELECT user, device, kind, bundle FROM key_bundles") {
                let bundle: Data = try row.decode(atIndex: 3)
                state.keyBundles.append(
                    StoredKeyBundle(
                        device: DeviceKey(user: try row.decode(atIndex: 0), device: try row.decode(atIndex: 1)),
                        kind: try integer(row, 2),
                        bytes: Array(bundle)
                    )
                )
            }
            for row in try Row.fetchAll(db, sql: "SELECT scope, id, value FROM records") {
                guard let key = StateRecordKey(scope: try row.decode(atIndex: 0), id: try row.decode(atIndex: 1)) else {
                    continue
                }
                let value: Data = try row.decode(atIndex: 2)
                state.records[key] = Array(value)
            }
            return state
        }
    }

    func commit(_ batch: StoreBatch) throws {
        guard !batch.isEmpty else { return }
        try readingRows {
            try queue.write { db in
                try Self.insertMessages(batch.messages, db)
                try Self.insertEvents(batch.events, db)
                try Self.insertStreamEntries(batch.streamEntries, db)
                try Self.applyRarerChanges(batch, db)
            }
        }
    }

    // The rows written for every message (the message, its stream entries, an event) and the per-batch
    // upserts are bound and stepped through SQLite's C API on GRDB's cached statements
    // (`Statement.sqliteStatement`, see ``RawStatement``): GRDB's `execute(arguments:)` boxes every
    // value into a `DatabaseValue` of a `StatementArguments`, which was a large share of the commit's
    // CPU. So are the state records (``writeRecords(_:_:)``); the rarer writes
    // (``applyRarerChanges(_:_:)``) still go through GRDB.

    /// The batch's messages, and each conversation's new max seq.
    private static func insertMessages(_ messages: [StoredMessage], _ db: Database) throws {
        var maxSeqs: [String: UInt64] = [:]
        let insertMessage = try RawStatement(
            db.cachedStatement(
                sql: """
                    INSERT INTO messages (conversation, seq, sender, client_msg_id, uid, time_ms, frame, receivers,
                        expire_at_ms)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """
            )
        )
        for message in messages {
            let id = message.conversation.storageID
            maxSeqs[id] = max(maxSeqs[id] ?? 0, message.seq)
            try insertMessage.bind(id, at: 1)
            try insertMessage.bind(message.seq, at: 2)
            try insertMessage.bind(message.senderID, at: 3)
            try insertMessage.bind(message.clientMsgID, at: 4)
            try insertMessage.bind(message.serverMsgUID, at: 5)
            try insertMessage.bind(message.serverTimeMs, at: 6)
            try insertMessage.bind(message.expireAtMs, at: 9)
            if message.receivers.isEmpty {
                try insertMessage.bindNull(at: 8)
            } else {
                try insertMessage.bind(Self.joined(message.receivers), at: 8)
            }
            try insertMessage.step(withBlob: message.frame, at: 7)
        }
        let setMaxSeq = try RawStatement(
            db.cachedStatement(
                sql: """
                    INSERT INTO conversations (id, max_seq) VALUES (?, ?)
                    ON CONFLICT (id) DO UPDATE SET max_seq = MAX(max_seq, excluded.max_seq)
                    """
            )
        )
        for (id, seq) in maxSeqs {
            try setMaxSeq.bind(id, at: 1)
            try setMaxSeq.bind(seq, at: 2)
            try setMaxSeq.step()
        }
    }

    /// The batch's events, each once (``KeptEvent``).
    private static func insertEvents(_ events: [KeptEvent], _ db: Database) throws {
        guard !events.isEmpty else { return }
        let insertEvent = try RawStatement(
            db.cachedStatement(sql: "INSERT INTO events (id, frame, expire_at_ms, about) VALUES (?, ?, ?, ?)")
        )
        for event in events {
            try insertEvent.bind(event.id, at: 1)
            try insertEvent.bind(event.expireAtMs, at: 3)
            if let about = event.about {
                try insertEvent.bind(about.storageID, at: 4)
            } else {
                try insertEvent.bindNull(at: 4)
            }
            try insertEvent.step(withBlob: event.frame, at: 2)
        }
    }

    /// The batch's stream entries, and each user's new stream head.
    private static func insertStreamEntries(_ entries: [StreamEntry], _ db: Database) throws {
        var heads: [String: UInt64] = [:]
        let insertEntry = try RawStatement(
            db.cachedStatement(
                sql: """
                    INSERT INTO stream (user, position, origin_device, conversation, seq, sent, event)
                    VALUES (?, ?, ?, ?, ?, ?, ?)
                    """
            )
        )
        for entry in entries {
            heads[entry.user] = max(heads[entry.user] ?? 0, entry.position)
            try insertEntry.bind(entry.user, at: 1)
            try insertEntry.bind(entry.position, at: 2)
            if let device = entry.originDevice {
                try insertEntry.bind(device, at: 3)
            } else {
                try insertEntry.bindNull(at: 3)
            }
            switch entry.item {
            case .message(let key, let seq, let sent):
                try insertEntry.bind(key.storageID, at: 4)
                try insertEntry.bind(seq, at: 5)
                try insertEntry.bind(Int64(sent ? 1 : 0), at: 6)
                try insertEntry.bindNull(at: 7)
            case .event(let id):
                try insertEntry.bindNull(at: 4)
                try insertEntry.bindNull(at: 5)
                try insertEntry.bind(Int64(0), at: 6)
                try insertEntry.bind(id, at: 7)
            }
            try insertEntry.step()
        }
        let setHead = try RawStatement(
            db.cachedStatement(
                sql: """
                    INSERT INTO streams (user, head) VALUES (?, ?)
                    ON CONFLICT (user) DO UPDATE SET head = MAX(head, excluded.head)
                    """
            )
        )
        for (user, head) in heads {
            try setHead.bind(user, at: 1)
            try setHead.bind(head, at: 2)
            try setHead.step()
        }
    }

    /// The batch's state records, written or deleted (an empty value), on cached statements: a
    /// group message rewrites the conversation record of each member it reaches, so these are as
    /// many as its stream entries (GRDB's `execute(sql:arguments:)` compiled each one again).
    private static func writeRecords(_ records: [StateRecordKey: [UInt8]], _ db: Database) throws {
        guard !records.isEmpty else { return }
        let upsert = try RawStatement(
            db.cachedStatement(
                sql: """
                    INSERT INTO records (scope, id, value) VALUES (?, ?, ?)
                    ON CONFLICT (scope, id) DO UPDATE SET value = excluded.value
                    """
            )
        )
        let delete = try RawStatement(db.cachedStatement(sql: "DELETE FROM records WHERE scope = ? AND id = ?"))
        for (key, bytes) in records {
            let statement = bytes.isEmpty ? delete : upsert
            try statement.bind(key.scope, at: 1)
            try statement.bind(key.id, at: 2)
            if bytes.isEmpty {
                try statement.step()
            } else {
                try statement.step(withBlob: bytes, at: 3)
            }
        }
    }

    /// Rewrites with `transform` the frames of the kept events that carry content of kept message
    /// `about` (``KeptEvent/about``), writing back those it changed: once each, however many streams
    /// name it.
    private static func rewriteEvents(
        about: MessageKey,
        _ transform: ([UInt8]) -> [UInt8],
        _ db: Database
    ) throws {
        for row in try Row.fetchAll(
            db,
            sql: "SELECT id, frame FROM events WHERE about = ?",
            arguments: [about.storageID]
        ) {
            let frame = Array(try row.decode(atIndex: 1) as Data)
            let rewritten = transform(frame)
            guard rewritten != frame else { continue }
            try db.execute(
                sql: "UPDATE events SET frame = ? WHERE id = ?",
                // The id as stored, whatever it holds: the row read is the row written.
                arguments: [Data(rewritten), row[0] as DatabaseValue]
            )
        }
    }

    /// Deletes the entries of `user`'s stream at `positions` (retention), and the events that no
    /// entry names any more.
    private static func deleteStreamEntries(of user: String, at positions: Range<UInt64>, _ db: Database) throws {
        let events = try Int64?.fetchAll(
            db.cachedStatement(
                sql: "DELETE FROM stream WHERE user = ? AND position >= ? AND position < ? RETURNING event"
            ),
            arguments: [user, positions.lowerBound, positions.upperBound]
        ).compactMap { $0 }
        guard !events.isEmpty else { return }
        let deleteUnnamed = try RawStatement(
            db.cachedStatement(
                sql: "DELETE FROM events WHERE id = ?1 AND NOT EXISTS (SELECT 1 FROM stream WHERE event = ?1)"
            )
        )
        for id in Set(events) {
            try deleteUnnamed.bind(id, at: 1)
            try deleteUnnamed.step()
        }
    }

    /// Membership changes, removed messages, quotes redacted, device positions, retention, key bundles and state
    /// records.
    private static func applyRarerChanges(_ batch: StoreBatch, _ db: Database) throws {
        for change in batch.memberships {
            if change.joined {
                try db.execute(
                    sql: "INSERT OR IGNORE INTO members (conversation, user) VALUES (?, ?)",
                    arguments: [change.conversation.storageID, change.user]
                )
            } else {
                try db.execute(
                    sql: "DELETE FROM members WHERE conversation = ? AND user = ?",
                    arguments: [change.conversation.storageID, change.user]
                )
            }
        }
        for removal in batch.removals {
            try db.execute(
                sql: "UPDATE messages SET removed = 1, frame = ? WHERE conversation = ? AND seq = ?",
                arguments: [Data(removal.stub), removal.conversation.storageID, removal.seq]
            )
            let about = MessageKey(conversation: removal.conversation, seq: removal.seq)
            try rewriteEvents(about: about, Redaction.event, db)
        }
        for (reply, uid) in batch.redactedQuotes {
            // The reply's frame, and the edits kept about it, without the text they quoted.
            let frame = try Data.fetchOne(
                db,
                sql: "SELECT frame FROM messages WHERE conversation = ? AND seq = ?",
                arguments: [reply.conversation.storageID, reply.seq]
            )
            if let frame, case let redacted = Redaction.quote(Array(frame), quoting: [uid]), redacted != Array(frame) {
                try db.execute(
                    sql: "UPDATE messages SET frame = ? WHERE conversation = ? AND seq = ?",
                    arguments: [Data(redacted), reply.conversation.storageID, reply.seq]
                )
            }
            try rewriteEvents(about: reply, { Redaction.quote($0, quoting: [uid]) }, db)
        }
        for device in batch.forgottenDevices {
            for table in ["devices", "key_bundles"] {
                try db.execute(
                    sql: "DELETE FROM \(table) WHERE user = ? AND device = ?",
                    arguments: [device.user, device.device]
                )
            }
        }
        for (device, position) in batch.devicePositions {
            try db.execute(
                sql: """
                    INSERT INTO devices (user, device, position) VALUES (?, ?, ?)
                    ON CONFLICT (user, device) DO UPDATE SET position = MAX(position, excluded.position)
                    """,
                arguments: [device.user, device.device, position]
            )
        }
        for (key, seqs) in batch.trimmedConversations {
            try db.execute(
                sql: "DELETE FROM messages WHERE conversation = ? AND seq >= ? AND seq < ?",
                arguments: [key.storageID, seqs.lowerBound, seqs.upperBound]
            )
        }
        for (user, positions) in batch.trimmedStreams {
            try deleteStreamEntries(of: user, at: positions, db)
        }
        for bundle in batch.keyBundles {
            try db.execute(
                sql: """
                    INSERT INTO key_bundles (user, device, kind, bundle) VALUES (?, ?, ?, ?)
                    ON CONFLICT (user, device, kind) DO UPDATE SET bundle = excluded.bundle
                    """,
                arguments: [bundle.device.user, bundle.device.device, bundle.kind, Data(bundle.bytes)]
            )
        }
        if let through = batch.eraseExpiredThrough {
            // Through the partial indexes: only rows that expire are looked at.
            for table in ["messages", "events"] {
                try db.execute(
                    sql:
                        "UPDATE \(table) SET frame = x'' WHERE expire_at_ms > 0 AND expire_at_ms <= ? AND length(frame) > 0",
                    arguments: [through]
                )
            }
        }
        try Self.writeRecords(batch.records, db)
    }

    func messages(
        in conversation: ConversationKey,
        from: UInt64,
        through: UInt64,
        limit: Int,
        visibleTo user: String
    ) throws -> [StoredMessage] {
        try readingRows {
            try readMessages(in: conversation, from: from, through: through, limit: limit, visibleTo: user)
        }
    }

    private func readMessages(
        in conversation: ConversationKey,
        from: UInt64,
        through: UInt64,
        limit: Int,
        visibleTo user: String
    ) throws -> [StoredMessage] {
        try queue.read { db in
            let rows = try Row.fetchCursor(
                db,
                sql: """
                    SELECT seq, sender, client_msg_id, uid, time_ms, frame, CAST(receivers AS BLOB), expire_at_ms
                    FROM messages
                    WHERE conversation = ? AND seq >= ? AND seq <= ? ORDER BY seq
                    """,
                arguments: [conversation.storageID, from, through]
            )
            var out: [StoredMessage] = []
            while out.count < limit, let row = try rows.next() {
                let receivers = Self.receivers(try row.decode(atIndex: 6))
                let sender: String = try row.decode(atIndex: 1)
                guard receivers.isEmpty || sender == user || receivers.contains(user) else { continue }
                let frame: Data = try row.decode(atIndex: 5)
                out.append(
                    StoredMessage(
                        conversation: conversation,
                        seq: try integer(row, 0),
                        senderID: sender,
                        clientMsgID: try row.decode(atIndex: 2),
                        serverMsgUID: try row.decode(atIndex: 3),
                        serverTimeMs: try integer(row, 4),
                        frame: Array(frame),
                        receivers: receivers,
                        expireAtMs: try integer(row, 7)
                    )
                )
            }
            return out
        }
    }

    func stream(of user: String, after: UInt64, through: UInt64, limit: Int) throws -> [StreamRow] {
        try readingRows { try readStream(of: user, after: after, through: through, limit: limit) }
    }

    private func readStream(of user: String, after: UInt64, through: UInt64, limit: Int) throws -> [StreamRow] {
        try queue.read { db in
            let rows = try Row.fetchAll(
                db,
                sql: """
                    SELECT s.position, s.origin_device, s.conversation, s.sent, e.frame, m.frame,
                        COALESCE(m.expire_at_ms, e.expire_at_ms, 0)
                    FROM stream s LEFT JOIN messages m ON m.conversation = s.conversation AND m.seq = s.seq
                        LEFT JOIN events e ON e.id = s.event
                    WHERE s.user = ? AND s.position > ? AND s.position <= ? ORDER BY s.position LIMIT ?
                    """,
                arguments: [user, after, through, limit]
            )
            return try rows.map { row in
                let isMessage = (try row.decode(atIndex: 2) as String?) != nil
                let frame: Data? = try isMessage ? row.decode(atIndex: 5) : row.decode(atIndex: 4)
                return StreamRow(
                    position: try integer(row, 0),
                    originDevice: try row.decode(atIndex: 1),
                    frame: frame.map { Array($0) } ?? [],
                    sent: (try integer(row, 3) as Int) != 0,
                    isMessage: isMessage,
                    expireAtMs: try integer(row, 6)
                )
            }
        }
    }

    /// Receiver lists are kept as one text column, ids separated by U+0000 (which no id the relay
    /// keeps contains: ``Router`` refuses such ids).
    private static func joined(_ ids: [String]) -> String { ids.joined(separator: "\u{0}") }

    /// A targeted message's receivers from their column, read as a blob (`CAST(receivers AS
    /// BLOB)`): GRDB reads text up to its first U+0000, which kept only the first receiver.
    private static func receivers(_ joined: Data?) -> [String] {
        guard let joined else { return [] }
        return joined.split(separator: 0, omittingEmptySubsequences: true).map { String(decoding: $0, as: UTF8.self) }
    }
}

/// One of GRDB's prepared statements, bound and stepped through SQLite's C API: GRDB's documented
/// escape hatch (`Statement.sqliteStatement`) for a hot path, with none of GRDB's per-value boxing.
///
/// Only for statements that return no rows (INSERT, UPDATE). Every return code is checked; a failure
/// throws a ``RelayStoreError`` naming SQLite's message, its code and the statement, and leaves the
/// statement reset, so the enclosing GRDB transaction rolls back as with any other error. Text is
/// bound with `SQLITE_TRANSIENT` (SQLite copies it); a blob with `SQLITE_STATIC`, valid only while
/// ``step(withBlob:at:)`` runs, which clears the bindings before it returns.
private struct RawStatement {
    private let handle: SQLiteStatement

    init(_ statement: Statement) {
        handle = statement.sqliteStatement
    }

    /// SQLite copies the bytes before `sqlite3_bind_*` returns.
    private static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

    func bind(_ value: Int64, at index: Int32) throws {
        try check(sqlite3_bind_int64(handle, index, value), "binding parameter \(index)")
    }

    func bind(_ value: UInt64, at index: Int32) throws {
        guard let value = Int64(exactly: value) else {
            throw RelayStoreError(description: "\(value) does not fit an SQLite integer (parameter \(index) of \(sql))")
        }
        try bind(value, at: index)
    }

    func bind(_ text: String, at index: Int32) throws {
        var text = text
        let code = text.withUTF8 { utf8 in
            // An empty buffer may have no address, and a nil pointer would bind NULL, not ''.
            utf8.isEmpty
                ? sqlite3_bind_text(handle, index, "", 0, Self.transient)
                : sqlite3_bind_text(handle, index, utf8.baseAddress, Int32(utf8.count), Self.transient)
        }
        try check(code, "binding parameter \(index)")
    }

    func bindNull(at index: Int32) throws {
        try check(sqlite3_bind_null(handle, index), "binding parameter \(index)")
    }

    /// Runs the statement once and resets it; it must return no row.
    func step() throws {
        let code = sqlite3_step(handle)
        // SQLite's message first: resetting the statement may replace it.
        let error = code == SQLITE_DONE ? nil : failure(code, "executing")
        sqlite3_reset(handle)
        if let error { throw error }
    }

    /// Binds `bytes` as a blob at `index` without copying them (never NULL: an empty array binds an
    /// empty blob), runs the statement once, resets it and clears its bindings.
    func step(withBlob bytes: [UInt8], at index: Int32) throws {
        try bytes.withUnsafeBytes { raw in
            defer { sqlite3_clear_bindings(handle) }
            if let base = raw.baseAddress, !raw.isEmpty {
                try check(sqlite3_bind_blob(handle, index, base, Int32(raw.count), nil), "binding parameter \(index)")
            } else {
                try check(sqlite3_bind_zeroblob(handle, index, 0), "binding parameter \(index)")
            }
            try step()
        }
    }

    private var sql: String { String(cString: sqlite3_sql(handle)) }

    private func check(_ code: Int32, _ what: @autoclosure () -> String) throws {
        guard code == SQLITE_OK else { throw failure(code, what()) }
    }

    private func failure(_ code: Int32, _ what: String) -> RelayStoreError {
        let message = String(cString: sqlite3_errmsg(sqlite3_db_handle(handle)))
        return RelayStoreError(description: "SQLite error \(code) (\(message)) \(what) \(sql)")
    }
}
#endif
