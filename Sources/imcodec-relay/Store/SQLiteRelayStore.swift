#if Tools
import Foundation
import GRDB
import IMCodec

/// The relay's durable store: one SQLite database (through GRDB) in WAL mode, one transaction per
/// ``StoreBatch``. A committed transaction survives a killed process (WAL); with
/// `synchronous = FULL` (the default) it survives a power loss too.
///
/// Tables (created by versioned migrations at start):
/// - `conversations(id, max_seq)`: each conversation's newest seq, so seqs never go back, even
///   when retention has dropped every message;
/// - `messages(conversation, seq, sender, client_msg_id, uid, time_ms, frame, receivers, removed)`:
///   the stamped frames, unique per (conversation, sender, client_msg_id) for de-duplication;
/// - `members(conversation, user)`;
/// - `streams(user, head)` and `stream(user, position, origin_device, conversation, seq, sent, frame)`:
///   each user's stream (a message by reference, an event with its bytes);
/// - `devices(user, device, position)`: each device's last acknowledged stream position.
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
        configuration.journalMode = .wal
        configuration.busyMode = .timeout(5)
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA synchronous = \(synchronous == "NORMAL" ? "NORMAL" : "FULL")")
        }
        do {
            try Self.check(path)
            queue = try DatabaseQueue(path: path, configuration: configuration)
            try Self.migrator.migrate(queue)
        } catch let error as RelayStoreError {
            throw RelayStoreError(description: "the database \(path) is damaged: \(error.description)")
        } catch {
            throw RelayStoreError(description: "the database \(path) cannot be used: \(error)")
        }
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
    private static var migrator: DatabaseMigrator {
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
                    CREATE UNIQUE INDEX messages_dedupe ON messages (conversation, sender, client_msg_id)
                        WHERE client_msg_id != '';
                    CREATE TABLE members (conversation TEXT NOT NULL, user TEXT NOT NULL,
                        PRIMARY KEY (conversation, user)) WITHOUT ROWID;
                    CREATE TABLE streams (user TEXT PRIMARY KEY, head INTEGER NOT NULL) WITHOUT ROWID;
                    CREATE TABLE stream (
                        user TEXT NOT NULL, position INTEGER NOT NULL, origin_device TEXT,
                        conversation TEXT, seq INTEGER, sent INTEGER NOT NULL DEFAULT 0, frame BLOB,
                        PRIMARY KEY (user, position)) WITHOUT ROWID;
                    CREATE TABLE devices (user TEXT NOT NULL, device TEXT NOT NULL, position INTEGER NOT NULL,
                        PRIMARY KEY (user, device)) WITHOUT ROWID;
                    """)
        }
        return migrator
    }

    func load() throws -> StoredState {
        try queue.read { db in
            var state = StoredState()
            for row in try Row.fetchAll(db, sql: "SELECT id, max_seq FROM conversations") {
                guard let key = ConversationKey(storageID: row[0]) else { continue }
                state.conversations[key, default: ConversationState()].maxSeq = row[1]
            }
            let messages = try Row.fetchCursor(
                db,
                sql: """
                    SELECT conversation, seq, sender, client_msg_id, uid, time_ms, removed, receivers FROM messages
                    ORDER BY conversation, seq
                    """)
            var oldest: [ConversationKey: UInt64] = [:]
            while let row = try messages.next() {
                guard let key = ConversationKey(storageID: row[0]) else { continue }
                let seq: UInt64 = row[1]
                if oldest[key] == nil { oldest[key] = seq }
                var conversation = state.conversations[key, default: ConversationState()]
                conversation.add(StoredMessage(
                    conversation: key, seq: seq, senderID: row[2], clientMsgID: row[3], serverMsgUID: row[4],
                    serverTimeMs: row[5], frame: [], receivers: (row[7] as String?).map(Self.split) ?? []))
                if (row[6] as Int) != 0 { conversation.removed.insert(seq) }
                state.conversations[key] = conversation
            }
            for (key, var conversation) in state.conversations {
                conversation.oldestSeq = oldest[key] ?? conversation.maxSeq + 1
                state.conversations[key] = conversation
            }
            for row in try Row.fetchAll(db, sql: "SELECT conversation, user FROM members") {
                guard let key = ConversationKey(storageID: row[0]) else { continue }
                state.members[key, default: []].insert(row[1])
            }
            for row in try Row.fetchAll(db, sql: "SELECT user, head FROM streams") {
                let head: UInt64 = row[1]
                state.streams[row[0]] = StreamState(head: head, oldest: head + 1)
            }
            for row in try Row.fetchAll(db, sql: "SELECT user, MIN(position) FROM stream GROUP BY user") {
                let user: String = row[0]
                state.streams[user]?.oldest = row[1]
            }
            for row in try Row.fetchAll(db, sql: "SELECT user, device, position FROM devices") {
                state.devicePositions[DeviceKey(user: row[0], device: row[1])] = row[2]
            }
            return state
        }
    }

    func commit(_ batch: StoreBatch) throws {
        guard !batch.isEmpty else { return }
        try queue.write { db in
            var maxSeqs: [String: UInt64] = [:]
            let insertMessage = try db.cachedStatement(
                sql: """
                    INSERT INTO messages (conversation, seq, sender, client_msg_id, uid, time_ms, frame, receivers)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                    """)
            for message in batch.messages {
                let id = message.conversation.storageID
                maxSeqs[id] = max(maxSeqs[id] ?? 0, message.seq)
                try insertMessage.execute(arguments: [
                    id, message.seq, message.senderID, message.clientMsgID, message.serverMsgUID,
                    message.serverTimeMs, Data(message.frame),
                    message.receivers.isEmpty ? nil : Self.joined(message.receivers),
                ])
            }
            let setMaxSeq = try db.cachedStatement(
                sql: """
                    INSERT INTO conversations (id, max_seq) VALUES (?, ?)
                    ON CONFLICT (id) DO UPDATE SET max_seq = MAX(max_seq, excluded.max_seq)
                    """)
            for (id, seq) in maxSeqs { try setMaxSeq.execute(arguments: [id, seq]) }

            var heads: [String: UInt64] = [:]
            let insertEntry = try db.cachedStatement(
                sql: """
                    INSERT INTO stream (user, position, origin_device, conversation, seq, sent, frame)
                    VALUES (?, ?, ?, ?, ?, ?, ?)
                    """)
            for entry in batch.streamEntries {
                heads[entry.user] = max(heads[entry.user] ?? 0, entry.position)
                switch entry.item {
                case .message(let key, let seq, let sent):
                    try insertEntry.execute(arguments: [
                        entry.user, entry.position, entry.originDevice, key.storageID, seq, sent ? 1 : 0, nil,
                    ])
                case .event(let frame):
                    try insertEntry.execute(arguments: [
                        entry.user, entry.position, entry.originDevice, nil, nil, 0, Data(frame),
                    ])
                }
            }
            let setHead = try db.cachedStatement(
                sql: """
                    INSERT INTO streams (user, head) VALUES (?, ?)
                    ON CONFLICT (user) DO UPDATE SET head = MAX(head, excluded.head)
                    """)
            for (user, head) in heads { try setHead.execute(arguments: [user, head]) }

            for change in batch.memberships {
                if change.joined {
                    try db.execute(
                        sql: "INSERT OR IGNORE INTO members (conversation, user) VALUES (?, ?)",
                        arguments: [change.conversation.storageID, change.user])
                } else {
                    try db.execute(
                        sql: "DELETE FROM members WHERE conversation = ? AND user = ?",
                        arguments: [change.conversation.storageID, change.user])
                }
            }
            for removal in batch.removals {
                try db.execute(
                    sql: "UPDATE messages SET removed = 1 WHERE conversation = ? AND seq = ?",
                    arguments: [removal.conversation.storageID, removal.seq])
            }
            for (device, position) in batch.devicePositions {
                try db.execute(
                    sql: """
                        INSERT INTO devices (user, device, position) VALUES (?, ?, ?)
                        ON CONFLICT (user, device) DO UPDATE SET position = MAX(position, excluded.position)
                        """,
                    arguments: [device.user, device.device, position])
            }
            for (key, seq) in batch.trimmedConversations {
                try db.execute(
                    sql: "DELETE FROM messages WHERE conversation = ? AND seq < ?", arguments: [key.storageID, seq])
            }
            for (user, position) in batch.trimmedStreams {
                try db.execute(sql: "DELETE FROM stream WHERE user = ? AND position < ?", arguments: [user, position])
            }
        }
    }

    func messages(
        in conversation: ConversationKey, from: UInt64, through: UInt64, limit: Int, visibleTo user: String
    ) throws -> [StoredMessage] {
        try queue.read { db in
            let rows = try Row.fetchCursor(
                db,
                sql: """
                    SELECT seq, sender, client_msg_id, uid, time_ms, frame, receivers FROM messages
                    WHERE conversation = ? AND seq >= ? AND seq <= ? ORDER BY seq
                    """,
                arguments: [conversation.storageID, from, through])
            var out: [StoredMessage] = []
            while out.count < limit, let row = try rows.next() {
                let receivers = (row[6] as String?).map(Self.split) ?? []
                let sender: String = row[1]
                guard receivers.isEmpty || sender == user || receivers.contains(user) else { continue }
                let frame: Data = row[5]
                out.append(StoredMessage(
                    conversation: conversation, seq: row[0], senderID: sender, clientMsgID: row[2],
                    serverMsgUID: row[3], serverTimeMs: row[4], frame: Array(frame), receivers: receivers))
            }
            return out
        }
    }

    func stream(of user: String, after: UInt64, through: UInt64, limit: Int) throws -> [StreamRow] {
        try queue.read { db in
            let rows = try Row.fetchAll(
                db,
                sql: """
                    SELECT s.position, s.origin_device, s.conversation, s.sent, s.frame, m.frame
                    FROM stream s LEFT JOIN messages m ON m.conversation = s.conversation AND m.seq = s.seq
                    WHERE s.user = ? AND s.position > ? AND s.position <= ? ORDER BY s.position LIMIT ?
                    """,
                arguments: [user, after, through, limit])
            return rows.map { row in
                let isMessage = (row[2] as String?) != nil
                let frame: Data? = isMessage ? row[5] : row[4]
                return StreamRow(
                    position: row[0], originDevice: row[1], frame: frame.map { Array($0) } ?? [],
                    sent: (row[3] as Int) != 0, isMessage: isMessage)
            }
        }
    }

    /// Receiver lists are kept as one text column, ids separated by U+0000 (which no id the relay
    /// keeps contains: ``Router`` refuses such ids).
    private static func joined(_ ids: [String]) -> String { ids.joined(separator: "\u{0}") }
    private static func split(_ text: String) -> [String] { text.split(separator: "\u{0}").map(String.init) }
}
#endif
