#if Tools
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import IMCodec
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import NIOSSL
import PostgresNIO

/// The relay's store on a PostgreSQL server (`serve --store postgresql://...`), through
/// postgres-nio: the same tables, the same batches and the same reads as ``SQLiteRelayStore``, one
/// transaction per ``StoreBatch``.
///
/// One connection, used synchronously from the store's thread (``StoreQueue``): each call sends its
/// statements on postgres-nio's event loop and blocks the calling thread (never an event loop)
/// until they are answered. Every value is a bound parameter; a batch's rows go in one statement
/// per table (`unnest` of arrays), so a commit is a handful of round trips whatever its size.
///
/// Durability: the session runs with `synchronous_commit = on`, so a `COMMIT` returns once its WAL
/// is flushed on the server: a commit the relay acknowledged survives the relay's and the server's
/// crash (given the server's own `fsync = on`). A batch that fails is rolled back whole.
///
/// One relay serves a database at a time: the connection holds a session-level advisory lock
/// (``lockKey``) for the relay's life, the PostgreSQL counterpart of the SQLite data directory's
/// `relay.lock`. The router allocates seqs and stream positions in memory, so a second relay serving
/// the same database would hand out the same ones: it is refused, or, started as a standby
/// (``LockWait/standby(_:)``), waits for the lock and takes over when the serving relay stops, dies
/// or loses its connection (the lock goes with the session). Every commit runs on the session that
/// holds the lock, so a relay that lost it cannot commit anything more; it notices within
/// ``connectionCheckInterval`` plus ``timeout`` and stops (``checkConnection()``), and the server
/// notices a relay that vanished without closing its connection within about 11 s (TCP keepalives
/// set on the session).
///
/// Tables (created by the versioned migrations of ``migrations``, recorded in
/// `imcodec_schema_migrations`):
/// - `conversations(id, max_seq)`: each conversation's newest seq;
/// - `messages(conversation, seq, sender, client_msg_id, uid, time_ms, frame, receivers, removed)`:
///   the stamped frames (`bytea`), a targeted message's receivers as `text[]`;
/// - `members(conversation, user_id)`;
/// - `streams(user_id, head)` and `stream(user_id, position, origin_device, conversation, seq, sent, frame,
///   event)`: each user's stream (a message by reference; an event by reference, `event`, since
///   version 6, before it with its bytes in `frame`);
/// - `devices(user_id, device, position)`: each device's last acknowledged stream position;
/// - `key_bundles(user_id, device, kind, bundle)`: each device's end-to-end key bundles;
/// - `records(scope, id, value)`: the state records (``StateRecordKey``);
/// - `messages.expire_at_ms` and `stream.expire_at_ms` (version 3), each with a partial index of
///   the rows that expire: when a disappearing message, or an event about one, expires (0: never);
/// - `stream.about` (version 4), with a partial index: for an event that carries content of one
///   message (an edit, a stream chunk), that message (``MessageKey/storageID``), so a recall or a
///   delete for everyone erases the event's frame with the message's. Version 4 also erases the
///   frames of the messages removed before it.
/// - Version 5 changes no table: from it on, a conversation record's unread seqs may be runs
///   (``SeqRuns``), which an older relay would misread; the version makes it refuse the database.
/// - `events(id, frame, expire_at_ms, about)` and `stream.event` (version 6): each kept event once
///   (``KeptEvent``), named by the stream entries of every user it reaches (a partial index on
///   `stream.event` finds the entries left when retention deletes some, another the entries a
///   device sent, for the resend check at start), with its expiry and the
///   message whose content it carries (partial indexes). Version 6 moves the events kept in stream
///   rows (`stream.frame`, `about`, `expire_at_ms`, and their indexes) into it, one event per row.
///
/// Made for the multi-node step (SCALING.md) as well: `conversations.max_seq` and `streams.head` are
/// the counters several writers would allocate from (`UPDATE ... SET max_seq = max_seq + n RETURNING`,
/// row-locked until the commit), and the primary keys `(conversation, seq)` and `(user_id, position)`
/// refuse a seq or a position given twice, whoever writes it.
final class PostgresRelayStore: RelayStore {
    /// The server and database (its ``PostgresURL/description`` has no password).
    let url: PostgresURL
    private let connection: PostgresConnection
    private let logger: Logger
    private var isClosed = false
    /// How long each round trip may take: the URL's ``PostgresURL/timeoutSeconds`` (a test shortens
    /// it once the store is open).
    var timeout: TimeAmount
    /// The TLS version of the connection (`TLSv1.3`), or `nil` when it is not encrypted, as the
    /// server reports it (`pg_stat_ssl`).
    private(set) var tlsVersion: String?

    var connectionSummary: String? { tlsVersion.map { "TLS \($0)" } ?? "no TLS" }

    /// The advisory lock a relay holds on its database: PostgreSQL's two-key form, (`IMCD`, 1).
    static let lockKey: (Int32, Int32) = (0x494D_4344, 1)

    /// The schema, one migration per version, in order; version N is `migrations[N - 1]`.
    static let migrations: [(name: String, sql: [String])] = [
        (
            "the relay's tables",
            [
                "CREATE TABLE conversations (id text PRIMARY KEY, max_seq bigint NOT NULL)",
                """
                CREATE TABLE messages (
                    conversation text NOT NULL, seq bigint NOT NULL, sender text NOT NULL,
                    client_msg_id text NOT NULL, uid text NOT NULL, time_ms bigint NOT NULL,
                    frame bytea NOT NULL, receivers text[], removed boolean NOT NULL DEFAULT false,
                    PRIMARY KEY (conversation, seq))
                """,
                """
                CREATE TABLE members (conversation text NOT NULL, user_id text NOT NULL,
                    PRIMARY KEY (conversation, user_id))
                """,
                "CREATE TABLE streams (user_id text PRIMARY KEY, head bigint NOT NULL)",
                """
                CREATE TABLE stream (
                    user_id text NOT NULL, position bigint NOT NULL, origin_device text,
                    conversation text, seq bigint, sent boolean NOT NULL DEFAULT false, frame bytea,
                    PRIMARY KEY (user_id, position))
                """,
                """
                CREATE TABLE devices (user_id text NOT NULL, device text NOT NULL, position bigint NOT NULL,
                    PRIMARY KEY (user_id, device))
                """,
                """
                CREATE TABLE key_bundles (user_id text NOT NULL, device text NOT NULL, kind integer NOT NULL,
                    bundle bytea NOT NULL, PRIMARY KEY (user_id, device, kind))
                """,
                """
                CREATE TABLE records (scope text NOT NULL, id text NOT NULL, value bytea NOT NULL,
                    PRIMARY KEY (scope, id))
                """,
            ]
        ),
        (
            "where the routing relay takes links from the other relay nodes",
            [
                """
                CREATE TABLE router_node (id integer PRIMARY KEY CHECK (id = 1), host text NOT NULL,
                    port integer NOT NULL, secret text NOT NULL, certificate_sha256 text NOT NULL,
                    since timestamptz NOT NULL DEFAULT now())
                """
            ]
        ),
        (
            "when disappearing messages, and events about them, expire",
            [
                "ALTER TABLE messages ADD COLUMN expire_at_ms bigint NOT NULL DEFAULT 0",
                "ALTER TABLE stream ADD COLUMN expire_at_ms bigint NOT NULL DEFAULT 0",
                "CREATE INDEX messages_expiry ON messages (expire_at_ms) WHERE expire_at_ms > 0",
                "CREATE INDEX stream_expiry ON stream (expire_at_ms) WHERE expire_at_ms > 0",
            ]
        ),
        (
            "what recalled and deleted messages said is erased",
            [
                "ALTER TABLE stream ADD COLUMN about text",
                "CREATE INDEX stream_about ON stream (about) WHERE about IS NOT NULL",
                "UPDATE messages SET frame = ''::bytea WHERE removed",
            ]
        ),
        // No table changes: the version says that the conversation records' unread seqs may be
        // runs (``SeqRuns``), which a relay of version 4 would misread; it now refuses the database.
        ("conversation records keep their unread seqs as runs", []),
        (
            "each event is kept once, named by the stream entries that hold it",
            [
                """
                CREATE TABLE events (id bigint PRIMARY KEY, frame bytea NOT NULL,
                    expire_at_ms bigint NOT NULL DEFAULT 0, about text)
                """,
                // Numbered in (user_id, position) order, the primary key's: both statements number
                // the same rows alike. Each frame is copied once, each event row rewritten once.
                """
                INSERT INTO events (id, frame, expire_at_ms, about)
                SELECT row_number() OVER (ORDER BY user_id, position), COALESCE(frame, ''::bytea), expire_at_ms,
                    about
                FROM stream WHERE conversation IS NULL
                """,
                "DROP INDEX stream_about",
                "DROP INDEX stream_expiry",
                "ALTER TABLE stream ADD COLUMN event bigint",
                """
                UPDATE stream SET event = numbered.id, frame = NULL, about = NULL, expire_at_ms = 0 FROM (
                    SELECT user_id AS u, position AS p, row_number() OVER (ORDER BY user_id, position) AS id
                    FROM stream WHERE conversation IS NULL) AS numbered
                WHERE stream.user_id = numbered.u AND stream.position = numbered.p
                """,
                "CREATE INDEX stream_event ON stream (event) WHERE event IS NOT NULL",
                """
                CREATE INDEX stream_sent_event ON stream (user_id, origin_device, position, event)
                WHERE event IS NOT NULL AND origin_device IS NOT NULL
                """,
                "CREATE INDEX events_expiry ON events (expire_at_ms) WHERE expire_at_ms > 0",
                "CREATE INDEX events_about ON events (about) WHERE about IS NOT NULL",
            ]
        ),
    ]

    /// The newest schema version this relay knows.
    static var schemaVersion: Int { migrations.count }

    /// What a relay does while another relay holds the database's lock.
    enum LockWait {
        /// Waits this long, then refuses: a relay killed a moment ago holds the lock until the
        /// server notices its connection is gone.
        case refuse(after: TimeAmount)
        /// Waits until the lock is free, however long: a standby relay.
        case standby(Standby)
    }

    /// What a standby relay (`serve --standby`) is told while it waits for the lock.
    struct Standby: Sendable {
        /// Called once, when the relay finds the lock held, with a line for people.
        var waiting: @Sendable (String) -> Void
        /// Called when the relay took the lock: whether it goes on to route. `false` (a forwarding
        /// node whose shutdown began first) gives the lock back at once.
        var took: @Sendable () -> Bool = { true }
        /// Called before each try of the lock: `false` while the relay shuts down (a forwarding
        /// node draining its clients after a SIGTERM), which then tries no more, so that another
        /// node takes over. The relay's start then never returns: whoever made it `false` must end
        /// the process (`serve`'s stop thread does).
        var mayTake: @Sendable () -> Bool = { true }
        /// Called at every try while the relay waits, with where the relay that holds the lock
        /// takes links from the other nodes (`nil` until it published it): a forwarding node
        /// (``EdgeNode``) follows it.
        var router: (@Sendable (RouterNode?) -> Void)?
    }

    /// How often a serving relay checks its connection (``checkConnection()``).
    static let connectionCheckInterval = TimeAmount.seconds(2)

    var connectionCheckInterval: TimeAmount? { Self.connectionCheckInterval }

    /// Connects, takes the database's relay lock and migrates the schema to ``schemaVersion``.
    /// - Parameters:
    ///   - lockWait: What to do while another relay holds the lock.
    ///   - logger: Where postgres-nio logs.
    /// - Throws: ``RelayStoreError`` when the server cannot be reached or refuses the login, when
    ///   another relay holds the database, when the database was written by a newer relay, or when a
    ///   migration fails; nothing is changed in the database then.
    init(url: PostgresURL, lockWait: LockWait = .refuse(after: .seconds(5)), logger: Logger) throws {
        self.url = url
        self.logger = logger
        self.timeout = .seconds(Int64(url.timeoutSeconds))
        let configuration = try Self.connectionConfiguration(for: url)
        do {
            connection = try PostgresConnection.connect(
                on: MultiThreadedEventLoopGroup.singleton.any(),
                configuration: configuration,
                id: 1,
                logger: logger
            ).wait()
        } catch {
            throw RelayStoreError(description: "cannot connect to PostgreSQL at \(url): \(Self.describe(error))")
        }
        do {
            try run("SET synchronous_commit = on")
            // The server drops the session (and the lock) of a relay whose machine or network went
            // away within 5 + 3 x 2 s, so that a standby can take over.
            try run("SET tcp_keepalives_idle = 5")
            try run("SET tcp_keepalives_interval = 2")
            try run("SET tcp_keepalives_count = 3")
            // And a connection whose sent data goes unacknowledged as long (keepalives probe only
            // an idle one).
            try run("SET tcp_user_timeout = 11000")
            tlsVersion = try run("SELECT version FROM pg_stat_ssl WHERE pid = pg_backend_pid() AND ssl").rows.first?
                .decode(String.self)
            try lock(wait: lockWait)
            try migrate()
        } catch {
            close()
            if let error = error as? RelayStoreError { throw error }
            throw RelayStoreError(description: "the database \(url) cannot be used: \(Self.describe(error))")
        }
    }

    /// How the relay connects to `url` (the store, and the relay benchmark's own connection): its
    /// server, login and database, TLS as ``tls(for:)`` says, the URL's timeout for connecting.
    /// - Throws: ``RelayStoreError`` when the `sslrootcert` file cannot be read.
    static func connectionConfiguration(for url: PostgresURL) throws -> PostgresConnection.Configuration {
        var configuration = PostgresConnection.Configuration(
            host: url.host,
            port: url.port,
            username: url.user,
            password: url.password,
            database: url.database,
            tls: try tls(for: url)
        )
        configuration.options.additionalStartupParameters = [("application_name", "imcodec-relay")]
        configuration.options.connectTimeout = .seconds(Int64(url.timeoutSeconds))
        return configuration
    }

    /// The TLS of a connection to `url`, as its ``PostgresURL/effectiveTLSMode`` says.
    /// - Throws: ``RelayStoreError`` when the `sslrootcert` file cannot be read.
    static func tls(for url: PostgresURL) throws -> PostgresConnection.Configuration.TLS {
        var configuration = TLSConfiguration.makeClientConfiguration()
        switch url.effectiveTLSMode {
        case .disable:
            return .disable
        case .require:
            configuration.certificateVerification = .none
        case .verifyCA:
            configuration.certificateVerification = .noHostnameVerification
        case .verifyFull:
            configuration.certificateVerification = .fullVerification
        }
        do {
            if let file = url.rootCertificateFile {
                configuration.trustRoots = .certificates(try NIOSSLCertificate.fromPEMFile(file))
            }
            return .require(try NIOSSLContext(configuration: configuration))
        } catch {
            throw RelayStoreError(
                description:
                    "cannot use the sslrootcert \(url.rootCertificateFile ?? "(none)") of \(url): \(error)"
            )
        }
    }

    deinit {
        // A store dropped without close() (a test that threw): close without waiting, and keep the
        // connection until it is closed (postgres-nio asserts that a connection is closed before
        // it goes).
        guard !isClosed else { return }
        let connection = connection
        connection.close().whenComplete { _ in withExtendedLifetime(connection) {} }
    }

    /// Closes the connection, which releases the lock.
    func close() {
        guard !isClosed else { return }
        isClosed = true
        try? connection.close().wait()
    }

    // MARK: Start: the lock and the migrations

    /// Takes the relay's advisory lock on the database, waiting as `wait` says.
    private func lock(wait: LockWait) throws {
        let start = NIODeadline.now()
        var announced = false
        let (classID, objectID) = Self.lockKey
        while true {
            if case .standby(let standby) = wait, !standby.mayTake() {
                usleep(Self.lockPoll)
                continue
            }
            let rows = try run("SELECT pg_try_advisory_lock(\(classID), \(objectID))").rows
            if try rows.first?.decode(Bool.self) == true {
                guard case .standby(let standby) = wait, !standby.took() else { return }
                // A shutdown began as the lock was taken: not this relay's to route.
                try run("SELECT pg_advisory_unlock(\(classID), \(objectID))")
                usleep(Self.lockPoll)
                continue
            }
            switch wait {
            case .refuse(let after):
                guard NIODeadline.now() < start + after else {
                    throw RelayStoreError(
                        description:
                            "another relay is using the database \(url) (it holds the relay's PostgreSQL advisory lock"
                            + "\(lockHolder().map { "; it is held by \($0)" } ?? "")); start this relay with "
                            + "--standby to wait and take over when that one stops"
                    )
                }
            case .standby(let standby):
                if let follow = standby.router { follow((try? routerNode()) ?? nil) }
                if !announced {
                    announced = true
                    standby.waiting(
                        "another relay serves the database \(url)"
                            + "\(lockHolder().map { " (its lock is held by \($0))" } ?? ""); waiting to take over"
                    )
                }
            }
            usleep(Self.lockPoll)
        }
    }

    /// Where the relay that holds the lock takes node links, as it published it (``publish(_:)``),
    /// or `nil` when no relay did. A relay that died leaves its row until the next one replaces it:
    /// a link to it fails, and the forwarding node tries again.
    private func routerNode() throws -> RouterNode? {
        let rows = try run("SELECT host, port, secret, certificate_sha256 FROM router_node WHERE id = 1").rows
        guard let row = rows.first else { return nil }
        let (host, port, secret, certificate) = try row.decode((String, Int32, String, String).self)
        return RouterNode(host: host, port: Int(port), secret: secret, certificateSHA256: certificate)
    }

    func publish(_ node: RouterNode) throws {
        _ = try guarded("publishing where this relay takes node links") {
            try run(
                """
                INSERT INTO router_node (id, host, port, secret, certificate_sha256, since)
                VALUES (1, \(node.host), \(Int32(node.port)), \(node.secret), \(node.certificateSHA256), now())
                ON CONFLICT (id) DO UPDATE SET host = excluded.host, port = excluded.port,
                    secret = excluded.secret, certificate_sha256 = excluded.certificate_sha256, since = now()
                """
            )
        }
    }

    /// How often a relay waiting for the lock tries to take it, in microseconds.
    private static let lockPoll: UInt32 = 100_000

    /// The session holding the relay's lock, for people: `server process PID (NAME, from ADDRESS)`.
    private func lockHolder() -> String? {
        let (classID, objectID) = Self.lockKey
        let sessions = try? run(
            """
            SELECT a.pid, COALESCE(a.application_name, ''), COALESCE(host(a.client_addr), 'a local socket')
            FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
            WHERE l.locktype = 'advisory' AND l.granted AND l.database = (SELECT oid FROM pg_database
                WHERE datname = current_database())
                AND l.classid::bigint = \(Int64(classID)) AND l.objid::bigint = \(Int64(objectID)) AND l.objsubid = 2
            """
        ).rows
        guard let row = sessions?.first, let (pid, application, address) = try? row.decode((Int32, String, String).self)
        else { return nil }
        return "server process \(pid) (\(application.isEmpty ? "no name" : application), from \(address))"
    }

    /// The value of a setting of the store's session (`SHOW`), for tests.
    func setting(_ name: String) throws -> String {
        try guarded("reading a setting") {
            try run("SELECT current_setting(\(name))").rows.first?.decode(String.self) ?? ""
        }
    }

    /// Checks that the connection, and with it the lock, is still there: one round trip, bounded by
    /// ``timeout``.
    /// - Throws: ``RelayStoreError`` when the connection is gone or the server does not answer.
    func checkConnection() throws {
        _ = try guarded("checking its connection (which holds the relay's lock)") { try run("SELECT 1") }
    }

    /// Brings the schema to ``schemaVersion`` in one transaction; refuses a database whose schema
    /// is newer, and changes nothing then.
    private func migrate() throws {
        try transaction {
            try run(
                """
                CREATE TABLE IF NOT EXISTS imcodec_schema_migrations (
                    version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())
                """
            )
            let newest = try run("SELECT COALESCE(max(version), 0) FROM imcodec_schema_migrations").rows
            let version = try newest.first?.decode(Int32.self) ?? 0
            guard version >= 0 else {
                throw RelayStoreError(
                    description: "the database \(url) holds a negative schema version (\(version)): it is damaged"
                )
            }
            guard version <= Self.schemaVersion else {
                throw RelayStoreError(
                    description:
                        "the database \(url) was written by a newer relay (schema version \(version); this relay "
                        + "knows versions up to \(Self.schemaVersion)): run the newer relay, or start this one on "
                        + "another database"
                )
            }
            for (index, migration) in Self.migrations.enumerated().dropFirst(Int(version)) {
                for statement in migration.sql { try run(PostgresQuery(unsafeSQL: statement)) }
                let number = Int32(index + 1)
                try run("INSERT INTO imcodec_schema_migrations (version, name) VALUES (\(number), \(migration.name))")
            }
        }
    }

    // MARK: Load

    func load() throws -> StoredState {
        try guarded("loading") {
            do {
                // One snapshot for every table.
                return try transaction("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY") { try loadState() }
            } catch let damage as DamagedState {
                throw RelayStoreError(description: "the database \(url) is damaged: \(damage.reason)")
            }
        }
    }

    // Long on purpose (over 80 lines): one query per part of the state, in the SQLite store's order.
    private func loadState() throws -> StoredState {
        var state = StoredState()
        try forEachRow("SELECT id, max_seq FROM conversations") { row in
            let (id, maxSeq) = try row.decode((String, Int64).self)
            guard let key = ConversationKey(storageID: id) else { return }
            state.conversations[key, default: ConversationState()].maxSeq = try Self.unsigned(maxSeq, "max_seq")
        }
        // Page by page, in key order from after the last row read ('' and -1 come before every key):
        // PostgresNIO holds a statement's whole result in memory, and each statement is bounded by
        // the URL's timeout, which a store of millions of messages read at once would exceed.
        var after = (conversation: "", seq: Int64(-1))
        let pageRows = max(1, loadPageRows)
        var rowsRead = pageRows
        while rowsRead == pageRows {
            rowsRead = 0
            try forEachRow(
                """
                SELECT conversation, seq, sender, client_msg_id, uid, time_ms, removed, receivers,
                    octet_length(frame), expire_at_ms
                FROM messages WHERE (conversation, seq) > (\(after.conversation), \(after.seq))
                ORDER BY conversation, seq LIMIT \(pageRows)
                """
            ) { row in
                rowsRead += 1
                try loadMessageRow(row, into: &state, after: &after)
            }
        }
        state.finishLoadingMessages()
        try forEachRow("SELECT conversation, user_id FROM members") { row in
            let (id, user) = try row.decode((String, String).self)
            guard let key = ConversationKey(storageID: id) else { return }
            state.members[key, default: []].insert(user)
        }
        try forEachRow("SELECT user_id, head FROM streams") { row in
            let (user, storedHead) = try row.decode((String, Int64).self)
            let head = try Self.unsigned(storedHead, "stream head")
            state.streams[user] = StreamState(head: head, oldest: head + 1)
        }
        try forEachRow("SELECT user_id, min(position) FROM stream GROUP BY user_id") { row in
            let (user, oldest) = try row.decode((String, Int64).self)
            try state.loadOldestPosition(try Self.unsigned(oldest, "stream position"), of: user)
        }
        try forEachRow("SELECT user_id, device, position FROM devices") { row in
            let (user, device, position) = try row.decode((String, String, Int64).self)
            state.devicePositions[DeviceKey(user: user, device: device)] = try Self.unsigned(
                position,
                "device position"
            )
        }
        // Each device's newest events, oldest first (the window keeps the load bounded).
        try forEachRow(
            """
            SELECT r.user_id, r.origin_device, e.frame FROM (
                SELECT user_id, origin_device, position, event, row_number() OVER (
                    PARTITION BY user_id, origin_device ORDER BY position DESC) AS newest
                FROM stream WHERE event IS NOT NULL AND origin_device IS NOT NULL) AS r
            JOIN events e ON e.id = r.event
            WHERE r.newest <= \(RecentEvents.capacity) ORDER BY r.position
            """
        ) { row in
            let (user, device, frame) = try row.decode((String, String, ByteBuffer).self)
            state.recentEvents[DeviceKey(user: user, device: device), default: []].append(
                Array(frame.readableBytesView)
            )
        }
        try forEachRow("SELECT max(id) FROM events") { row in
            guard let id = try row.decode(Int64?.self) else { return }
            state.lastEventID = try Self.unsigned(id, "event id")
        }
        try forEachRow("SELECT user_id, device, kind, bundle FROM key_bundles") { row in
            let (user, device, kind, bundle) = try row.decode((String, String, Int32, ByteBuffer).self)
            state.keyBundles.append(
                StoredKeyBundle(
                    device: DeviceKey(user: user, device: device),
                    kind: kind,
                    bytes: Array(bundle.readableBytesView)
                )
            )
        }
        try forEachRow("SELECT scope, id, value FROM records") { row in
            let (scope, id, value) = try row.decode((String, String, ByteBuffer).self)
            guard let key = StateRecordKey(scope: scope, id: id) else { return }
            state.records[key] = Array(value.readableBytesView)
        }
        return state
    }

    /// A table retention deletes from, with its primary key's columns.
    private enum TrimmedTable: String {
        case messages, stream

        var keyColumns: (id: String, number: String) {
            switch self {
            case .messages: ("conversation", "seq")
            case .stream: ("user_id", "position")
            }
        }

        /// What a delete returns of each row: the event a stream entry names (NULL for a message).
        var returning: String {
            switch self {
            case .messages: ""
            case .stream: "RETURNING event"
            }
        }
    }

    /// Retention's deletes of one commit: the rows `trims` name, each a conversation's seqs or a
    /// user's stream positions. Short ranges (every commit's: a row or two per key) go in one
    /// statement by primary key: with a range per key joined to the table, the planner took the
    /// ranges for a tenth of the table and chose a sequential scan of it (220 ms a commit at
    /// 1,000,000 stream rows), where keys read the index. A long range (a retention limit lowered
    /// at a restart) is one statement of its own, a range on one key, which reads the index too.
    /// The events the deleted stream entries named and no entry names any more are deleted after them.
    private func deleteTrimmed(_ trims: [(id: String, range: Range<UInt64>)], from table: TrimmedTable) throws {
        let (idColumn, numberColumn) = table.keyColumns
        var keys = (ids: [String](), numbers: [Int64]())
        var events: Set<Int64> = []
        let noteEvent: (PostgresRow) throws -> Void = { row in
            if let event = try row.decode(Int64?.self) { events.insert(event) }
        }
        for (id, range) in trims {
            if range.count > 64 {
                try forEachRow(
                    """
                    DELETE FROM \(unescaped: table.rawValue) WHERE \(unescaped: idColumn) = \(id)
                    AND \(unescaped: numberColumn) >= \(try Self.bigint(range.lowerBound))
                    AND \(unescaped: numberColumn) < \(try Self.bigint(range.upperBound)) \(unescaped: table.returning)
                    """,
                    noteEvent
                )
                continue
            }
            for number in range {
                keys.ids.append(id)
                keys.numbers.append(try Self.bigint(number))
            }
        }
        if !keys.ids.isEmpty {
            try forEachRow(
                """
                DELETE FROM \(unescaped: table.rawValue) USING unnest(\(keys.ids), \(keys.numbers)) AS t(i, n)
                WHERE \(unescaped: table.rawValue).\(unescaped: idColumn) = t.i
                AND \(unescaped: table.rawValue).\(unescaped: numberColumn) = t.n \(unescaped: table.returning)
                """,
                noteEvent
            )
        }
        guard !events.isEmpty else { return }
        // A statement of its own: one statement does not see the rows its own WITH ... DELETE deleted.
        try run(
            """
            DELETE FROM events WHERE id = ANY(\(Array(events)))
            AND NOT EXISTS (SELECT 1 FROM stream WHERE stream.event = events.id)
            """
        )
    }

    /// The most message rows one statement of ``load()`` reads (a test sets fewer).
    var loadPageRows = 20_000

    /// Adds one row of `messages` to `state`, and moves `after` to its key.
    private func loadMessageRow(
        _ row: PostgresRow,
        into state: inout StoredState,
        after: inout (conversation: String, seq: Int64)
    ) throws {
        let (id, seq, sender, clientMsgID, uid, timeMs, removed, receivers, frameSize, expireAtMs) = try row.decode(
            (String, Int64, String, String, String, Int64, Bool, [String]?, Int32, Int64).self
        )
        after = (id, seq)
        guard let key = ConversationKey(storageID: id) else { return }
        state.loadMessage(
            StoredMessage(
                conversation: key,
                seq: try Self.unsigned(seq, "seq"),
                senderID: sender,
                clientMsgID: clientMsgID,
                serverMsgUID: uid,
                serverTimeMs: timeMs,
                frame: [],
                receivers: receivers ?? [],
                frameSize: Int(frameSize),
                expireAtMs: expireAtMs
            ),
            removed: removed
        )
    }

    // MARK: Commit

    func commit(_ batch: StoreBatch) throws {
        guard !batch.isEmpty else { return }
        try guarded("committing a batch") {
            try transaction {
                try insertMessages(batch.messages)
                try insertEvents(batch.events)
                try insertStreamEntries(batch.streamEntries)
                try applyRarerChanges(batch)
            }
        }
    }

    /// The batch's messages (those without receivers in one statement), and each conversation's new max seq.
    private func insertMessages(_ messages: [StoredMessage]) throws {
        guard !messages.isEmpty else { return }
        var maxSeqs: [String: Int64] = [:]
        var columns = (
            conversation: [String](), seq: [Int64](), sender: [String](), clientMsgID: [String](),
            uid: [String](), timeMs: [Int64](), frame: [ByteBuffer](), expireAtMs: [Int64]()
        )
        for message in messages {
            let id = message.conversation.storageID
            let seq = try Self.bigint(message.seq)
            maxSeqs[id] = max(maxSeqs[id] ?? 0, seq)
            let frame = ByteBuffer(bytes: message.frame)
            guard message.receivers.isEmpty else {
                // A targeted message (rare): its receivers are an array of their own.
                try run(
                    """
                    INSERT INTO messages (conversation, seq, sender, client_msg_id, uid, time_ms, frame, receivers,
                        expire_at_ms)
                    VALUES (\(id), \(seq), \(message.senderID), \(message.clientMsgID), \(message.serverMsgUID),
                        \(message.serverTimeMs), \(frame), \(message.receivers), \(message.expireAtMs))
                    """
                )
                continue
            }
            columns.conversation.append(id)
            columns.seq.append(seq)
            columns.sender.append(message.senderID)
            columns.clientMsgID.append(message.clientMsgID)
            columns.uid.append(message.serverMsgUID)
            columns.timeMs.append(message.serverTimeMs)
            columns.frame.append(frame)
            columns.expireAtMs.append(message.expireAtMs)
        }
        if !columns.seq.isEmpty {
            try run(
                """
                INSERT INTO messages (conversation, seq, sender, client_msg_id, uid, time_ms, frame, expire_at_ms)
                SELECT * FROM unnest(\(columns.conversation), \(columns.seq), \(columns.sender),
                    \(columns.clientMsgID), \(columns.uid), \(columns.timeMs), \(columns.frame), \(columns.expireAtMs))
                """
            )
        }
        try run(
            """
            INSERT INTO conversations (id, max_seq) SELECT * FROM unnest(\(Array(maxSeqs.keys)), \(Array(maxSeqs.values)))
            ON CONFLICT (id) DO UPDATE SET max_seq = GREATEST(conversations.max_seq, excluded.max_seq)
            """
        )
    }

    /// The batch's events, each once (``KeptEvent``), in one statement.
    private func insertEvents(_ events: [KeptEvent]) throws {
        guard !events.isEmpty else { return }
        var columns = (
            id: [Int64](), frame: [ByteBuffer](), expireAtMs: [Int64](), hasAbout: [Bool](), about: [String]()
        )
        for event in events {
            columns.id.append(try Self.bigint(event.id))
            columns.frame.append(ByteBuffer(bytes: event.frame))
            columns.expireAtMs.append(event.expireAtMs)
            columns.hasAbout.append(event.about != nil)
            columns.about.append(event.about?.storageID ?? "")
        }
        // (Arrays cannot hold NULL here: `about` is NULL where hasAbout is false.)
        try run(
            """
            INSERT INTO events (id, frame, expire_at_ms, about)
            SELECT i, f, x, CASE WHEN h THEN a END
            FROM unnest(\(columns.id), \(columns.frame), \(columns.expireAtMs), \(columns.hasAbout),
                \(columns.about)) AS e(i, f, x, h, a)
            """
        )
    }

    /// The batch's stream entries (messages in one statement, events in another), and each user's new stream head.
    private func insertStreamEntries(_ entries: [StreamEntry]) throws {
        guard !entries.isEmpty else { return }
        var heads: [String: Int64] = [:]
        var messages = (
            user: [String](), position: [Int64](), hasOrigin: [Bool](), origin: [String](),
            conversation: [String](), seq: [Int64](), sent: [Bool]()
        )
        var events = (user: [String](), position: [Int64](), hasOrigin: [Bool](), origin: [String](), id: [Int64]())
        for entry in entries {
            let position = try Self.bigint(entry.position)
            heads[entry.user] = max(heads[entry.user] ?? 0, position)
            switch entry.item {
            case .message(let key, let seq, let sent):
                messages.user.append(entry.user)
                messages.position.append(position)
                messages.hasOrigin.append(entry.originDevice != nil)
                messages.origin.append(entry.originDevice ?? "")
                messages.conversation.append(key.storageID)
                messages.seq.append(try Self.bigint(seq))
                messages.sent.append(sent)
            case .event(let id):
                events.user.append(entry.user)
                events.position.append(position)
                events.hasOrigin.append(entry.originDevice != nil)
                events.origin.append(entry.originDevice ?? "")
                events.id.append(try Self.bigint(id))
            }
        }
        // (Arrays cannot hold NULL here: an origin device is NULL where hasOrigin is false.)
        if !messages.user.isEmpty {
            try run(
                """
                INSERT INTO stream (user_id, position, origin_device, conversation, seq, sent)
                SELECT u, p, CASE WHEN h THEN o END, c, s, sent
                FROM unnest(\(messages.user), \(messages.position), \(messages.hasOrigin), \(messages.origin),
                    \(messages.conversation), \(messages.seq), \(messages.sent)) AS e(u, p, h, o, c, s, sent)
                """
            )
        }
        if !events.user.isEmpty {
            try run(
                """
                INSERT INTO stream (user_id, position, origin_device, event)
                SELECT u, p, CASE WHEN h THEN o END, i
                FROM unnest(\(events.user), \(events.position), \(events.hasOrigin), \(events.origin),
                    \(events.id)) AS e(u, p, h, o, i)
                """
            )
        }
        try run(
            """
            INSERT INTO streams (user_id, head) SELECT * FROM unnest(\(Array(heads.keys)), \(Array(heads.values)))
            ON CONFLICT (user_id) DO UPDATE SET head = GREATEST(streams.head, excluded.head)
            """
        )
    }

    /// Redacts the quote snapshots of kept replies whose quoted message is gone
    /// (``StoreBatch/redactedQuotes``, ``Redaction/quote(_:quoting:)``), and of the edits kept about them.
    private func redactQuotes(_ replies: [(reply: MessageKey, quotedUID: String)]) throws {
        let unique = Array(Set(replies.map(\.reply)))
        let ids = unique.map(\.conversation.storageID)
        let seqs = try unique.map { try Self.bigint($0.seq) }
        // A reply may be named twice (it quotes two messages gone in one batch, itself and an edit).
        var quotedUIDs: [String: Set<String>] = [:]
        for (reply, uid) in replies { quotedUIDs[reply.storageID, default: []].insert(uid) }
        var messages = (id: [String](), seq: [Int64](), frame: [ByteBuffer]())
        try forEachRow(
            """
            SELECT m.conversation, m.seq, m.frame FROM messages m JOIN unnest(\(ids), \(seqs)) AS r(c, s)
            ON m.conversation = r.c AND m.seq = r.s
            """
        ) { row in
            let (id, seq, frame) = try row.decode((String, Int64, ByteBuffer).self)
            let bytes = Array(buffer: frame)
            let redacted = Redaction.quote(bytes, quoting: quotedUIDs["\(seq):\(id)"] ?? [])
            guard redacted != bytes else { return }
            messages.id.append(id)
            messages.seq.append(seq)
            messages.frame.append(ByteBuffer(bytes: redacted))
        }
        if !messages.id.isEmpty {
            try run(
                """
                UPDATE messages SET frame = r.f
                FROM unnest(\(messages.id), \(messages.seq), \(messages.frame)) AS r(c, s, f)
                WHERE messages.conversation = r.c AND messages.seq = r.s
                """
            )
        }
        try rewriteEvents(about: Array(quotedUIDs.keys)) { frame, about in
            Redaction.quote(frame, quoting: quotedUIDs[about] ?? [])
        }
    }

    /// Rewrites with `transform` the frames of the kept events that carry content of the kept
    /// messages `about` (their ``MessageKey/storageID``s, ``KeptEvent/about``; the transform gets the
    /// frame and the message it is about), writing back those it changed: once each, however many
    /// streams name it.
    private func rewriteEvents(about: [String], _ transform: ([UInt8], String) -> [UInt8]) throws {
        var changed = (id: [Int64](), frame: [ByteBuffer]())
        try forEachRow("SELECT id, frame, about FROM events WHERE about = ANY(\(about))") { row in
            let (id, frame, message) = try row.decode((Int64, ByteBuffer, String).self)
            let bytes = Array(buffer: frame)
            let rewritten = transform(bytes, message)
            guard rewritten != bytes else { return }
            changed.id.append(id)
            changed.frame.append(ByteBuffer(bytes: rewritten))
        }
        guard !changed.id.isEmpty else { return }
        try run(
            """
            UPDATE events SET frame = r.f FROM unnest(\(changed.id), \(changed.frame)) AS r(i, f)
            WHERE events.id = r.i
            """
        )
    }

    // Long on purpose (over 80 lines): one block per kind of change, in the SQLite store's order.
    /// Membership changes, removed messages, quotes redacted, device positions, retention, key bundles
    /// and state records.
    private func applyRarerChanges(_ batch: StoreBatch) throws {
        // In order: a user may join and leave in one batch.
        for change in batch.memberships {
            let id = change.conversation.storageID
            if change.joined {
                try run(
                    "INSERT INTO members (conversation, user_id) VALUES (\(id), \(change.user)) ON CONFLICT DO NOTHING"
                )
            } else {
                try run("DELETE FROM members WHERE conversation = \(id) AND user_id = \(change.user)")
            }
        }
        if !batch.removals.isEmpty {
            let ids = batch.removals.map(\.conversation.storageID)
            let seqs = try batch.removals.map { try Self.bigint($0.seq) }
            let stubs = batch.removals.map { ByteBuffer(bytes: $0.stub) }
            try run(
                """
                UPDATE messages SET removed = true, frame = r.f FROM unnest(\(ids), \(seqs), \(stubs)) AS r(c, s, f)
                WHERE messages.conversation = r.c AND messages.seq = r.s
                """
            )
            // The events that carried their content, redacted (Redaction.event) and written back.
            try rewriteEvents(
                about: batch.removals.map { MessageKey(conversation: $0.conversation, seq: $0.seq).storageID }
            ) { frame, _ in Redaction.event(frame) }
        }
        if !batch.redactedQuotes.isEmpty { try redactQuotes(batch.redactedQuotes) }
        if !batch.forgottenDevices.isEmpty {
            let users = batch.forgottenDevices.map(\.user)
            let devices = batch.forgottenDevices.map(\.device)
            try run(
                """
                DELETE FROM devices USING unnest(\(users), \(devices)) AS f(u, d)
                WHERE devices.user_id = f.u AND devices.device = f.d
                """
            )
            try run(
                """
                DELETE FROM key_bundles USING unnest(\(users), \(devices)) AS f(u, d)
                WHERE key_bundles.user_id = f.u AND key_bundles.device = f.d
                """
            )
        }
        if !batch.devicePositions.isEmpty {
            let devices = Array(batch.devicePositions)
            let positions = try devices.map { try Self.bigint($0.value) }
            try run(
                """
                INSERT INTO devices (user_id, device, position)
                SELECT * FROM unnest(\(devices.map(\.key.user)), \(devices.map(\.key.device)), \(positions))
                ON CONFLICT (user_id, device) DO UPDATE SET position = GREATEST(devices.position, excluded.position)
                """
            )
        }
        try deleteTrimmed(batch.trimmedConversations.map { ($0.key.storageID, $0.value) }, from: .messages)
        try deleteTrimmed(batch.trimmedStreams.map { ($0.key, $0.value) }, from: .stream)
        // In order: a device's bundle may change twice in one batch (published, then a key fetched).
        for bundle in batch.keyBundles {
            try run(
                """
                INSERT INTO key_bundles (user_id, device, kind, bundle)
                VALUES (\(bundle.device.user), \(bundle.device.device), \(bundle.kind), \(ByteBuffer(bytes: bundle.bytes)))
                ON CONFLICT (user_id, device, kind) DO UPDATE SET bundle = excluded.bundle
                """
            )
        }
        if let through = batch.eraseExpiredThrough {
            // Through the partial indexes: only rows that expire are looked at.
            try run(
                """
                UPDATE messages SET frame = ''::bytea
                WHERE expire_at_ms > 0 AND expire_at_ms <= \(through) AND octet_length(frame) > 0
                """
            )
            try run(
                """
                UPDATE events SET frame = ''::bytea
                WHERE expire_at_ms > 0 AND expire_at_ms <= \(through) AND octet_length(frame) > 0
                """
            )
        }
        let deleted = batch.records.filter { $0.value.isEmpty }.map(\.key)
        if !deleted.isEmpty {
            try run(
                """
                DELETE FROM records USING unnest(\(deleted.map(\.scope)), \(deleted.map(\.id))) AS d(s, i)
                WHERE records.scope = d.s AND records.id = d.i
                """
            )
        }
        let kept = batch.records.filter { !$0.value.isEmpty }
        if !kept.isEmpty {
            let records = Array(kept)
            try run(
                """
                INSERT INTO records (scope, id, value)
                SELECT * FROM unnest(\(records.map(\.key.scope)), \(records.map(\.key.id)),
                    \(records.map { ByteBuffer(bytes: $0.value) }))
                ON CONFLICT (scope, id) DO UPDATE SET value = excluded.value
                """
            )
        }
    }

    // MARK: Reads

    func messages(
        in conversation: ConversationKey,
        from: UInt64,
        through: UInt64,
        limit: Int,
        visibleTo user: String
    ) throws -> [StoredMessage] {
        try guarded("reading messages") {
            var out: [StoredMessage] = []
            try forEachRow(
                """
                SELECT seq, sender, client_msg_id, uid, time_ms, frame, receivers, expire_at_ms FROM messages
                WHERE conversation = \(conversation.storageID) AND seq >= \(try Self.bigint(from))
                    AND seq <= \(try Self.bigint(through))
                    AND (receivers IS NULL OR sender = \(user) OR \(user) = ANY (receivers))
                ORDER BY seq LIMIT \(Int64(limit))
                """
            ) { row in
                let (seq, sender, clientMsgID, uid, timeMs, frame, receivers, expireAtMs) = try row.decode(
                    (Int64, String, String, String, Int64, ByteBuffer, [String]?, Int64).self
                )
                out.append(
                    StoredMessage(
                        conversation: conversation,
                        seq: try Self.unsigned(seq, "seq"),
                        senderID: sender,
                        clientMsgID: clientMsgID,
                        serverMsgUID: uid,
                        serverTimeMs: timeMs,
                        frame: Array(frame.readableBytesView),
                        receivers: receivers ?? [],
                        expireAtMs: expireAtMs
                    )
                )
            }
            return out
        }
    }

    func stream(of user: String, after: UInt64, through: UInt64, limit: Int) throws -> [StreamRow] {
        try guarded("reading a stream") {
            var out: [StreamRow] = []
            try forEachRow(
                """
                SELECT s.position, s.origin_device, s.conversation IS NOT NULL, s.sent,
                    CASE WHEN s.conversation IS NULL THEN e.frame ELSE m.frame END,
                    COALESCE(m.expire_at_ms, e.expire_at_ms, 0)
                FROM stream s LEFT JOIN messages m ON m.conversation = s.conversation AND m.seq = s.seq
                    LEFT JOIN events e ON e.id = s.event
                WHERE s.user_id = \(user) AND s.position > \(try Self.bigint(after))
                    AND s.position <= \(try Self.bigint(through))
                ORDER BY s.position LIMIT \(Int64(limit))
                """
            ) { row in
                let (position, origin, isMessage, sent, frame, expireAtMs) = try row.decode(
                    (Int64, String?, Bool, Bool, ByteBuffer?, Int64).self
                )
                out.append(
                    StreamRow(
                        position: try Self.unsigned(position, "stream position"),
                        originDevice: origin,
                        frame: frame.map { Array($0.readableBytesView) } ?? [],
                        sent: sent,
                        isMessage: isMessage,
                        expireAtMs: expireAtMs
                    )
                )
            }
            return out
        }
    }

    // MARK: Statements

    /// Runs `query` and waits for all its rows, at most ``timeout``: then the connection is closed
    /// (what it was doing is rolled back by the server) and the store fails. The wait ends at the
    /// timeout whatever postgres-nio does with the query (one sent on a connection that is closing
    /// is never answered).
    @discardableResult
    private func run(_ query: PostgresQuery) throws -> PostgresQueryResult {
        guard !connection.isClosed else {
            throw RelayStoreError(description: "the connection to PostgreSQL at \(url) is closed")
        }
        let connection = connection
        let outcome = connection.eventLoop.makePromise(of: PostgresQueryResult.self)
        // Whichever comes first, the answer or the deadline, settles the wait; the other does nothing.
        let settled = NIOLockedValueBox(false)
        let claim: @Sendable () -> Bool = {
            settled.withLockedValue { done in
                let isFirst = !done
                done = true
                return isFirst
            }
        }
        connection.query(query, logger: logger).whenComplete { result in
            if claim() { outcome.completeWith(result) }
        }
        let watchdog = connection.eventLoop.scheduleTask(in: timeout) {
            guard claim() else { return }
            // Closed before the wait ends, so that nothing more is sent on this connection.
            let closing: EventLoopFuture<Void> = connection.close()
            _ = closing
            outcome.fail(TimedOut())
        }
        defer { watchdog.cancel() }
        do {
            return try outcome.futureResult.wait()
        } catch is TimedOut {
            throw RelayStoreError(
                description:
                    "PostgreSQL at \(url) did not answer within \(timeout.nanoseconds / 1_000_000_000) s (the URL's "
                    + "timeout); "
                    + "the connection is closed"
            )
        }
    }

    /// A round trip that outlasted ``timeout``.
    private struct TimedOut: Error {}

    /// Runs `query`, waits for all its rows, then hands each to `body` on this thread.
    private func forEachRow(_ query: PostgresQuery, _ body: (PostgresRow) throws -> Void) throws {
        for row in try run(query).rows { try body(row) }
    }

    /// Runs `body` between `begin` and `COMMIT`; rolls back when it throws.
    private func transaction<T>(_ begin: PostgresQuery = "BEGIN", _ body: () throws -> T) throws -> T {
        try run(begin)
        do {
            let result = try body()
            try run("COMMIT")
            return result
        } catch {
            _ = try? run("ROLLBACK")
            throw error
        }
    }

    /// Runs `body`, turning a failure into a ``RelayStoreError`` that names the database and says
    /// what the store was doing (never the statement's values).
    private func guarded<T>(_ what: String, _ body: () throws -> T) throws -> T {
        guard !isClosed else { throw RelayStoreError(description: "the store of \(url) is closed") }
        do {
            return try body()
        } catch let error as RelayStoreError {
            throw error
        } catch {
            throw RelayStoreError(description: "PostgreSQL at \(url) failed \(what): \(Self.describe(error))")
        }
    }

    /// A seq, a stream position or a count read from a bigint column: a negative one is a damaged
    /// row, refused with an error (`UInt64(_:)` would stop the process).
    private static func unsigned(_ value: Int64, _ what: String) throws -> UInt64 {
        guard let value = UInt64(exactly: value) else {
            throw RelayStoreError(description: "the database holds a negative \(what) (\(value)): it is damaged")
        }
        return value
    }

    /// A seq or a stream position as PostgreSQL's bigint.
    private static func bigint(_ value: UInt64) throws -> Int64 {
        guard let value = Int64(exactly: value) else {
            throw RelayStoreError(description: "\(value) does not fit a PostgreSQL bigint")
        }
        return value
    }

    /// What went wrong, in words: the server's SQLSTATE and message, or why the connection failed.
    /// (A `PSQLError`'s own description is deliberately uninformative; its debug description may
    /// hold a statement's bound values, which this leaves out.)
    static func describe(_ error: any Error) -> String {
        if let error = error as? PSQLError {
            if let server = error.serverInfo {
                var text = "\(server[.message] ?? "an error") (SQLSTATE \(server[.sqlState] ?? "?"))"
                if let detail = server[.detail] { text += ": \(detail)" }
                return text
            }
            switch error.code {
            case .serverClosedConnection, .clientClosedConnection:
                return "the connection was closed"
                    + (error.underlying.map { " (\(ChatClient.connectReason($0)))" } ?? "")
            default:
                return error.underlying.map { ChatClient.connectReason($0) } ?? "\(error.code)"
            }
        }
        if let error = error as? PostgresDecodingError {
            return "column \(error.columnName) is not the type expected (\(error.postgresType))"
        }
        return ChatClient.connectReason(error)
    }
}
#endif
