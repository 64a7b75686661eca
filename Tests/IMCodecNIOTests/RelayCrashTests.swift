#if Tools
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import GRDB
import IMCodec
import IMCodecTestSupport
import IMCodecNIO
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Testing

@testable import imcodec_relay

/// The relay's durability promises, checked on the `imcodec-relay serve` executable run as a child
/// process: killed with SIGKILL in the middle of a load of messages and events from several users
/// and devices, restarted on the same store, started on a damaged database or on a data
/// directory another relay holds. The tests of what a crash or a restart keeps run on both stores,
/// SQLite and PostgreSQL (``StoreBackend``; PostgreSQL through `Scripts/with-postgres`).
@Suite("Relay crashes and damaged databases (the relay as a child process)", .serialized, .timeLimit(.minutes(4)))
struct RelayCrashTests {
    // MARK: SIGKILL in the middle of a load

    /// 6 users, 3 of them with two devices (9 devices), 5 of them in the group `crew`; every device
    /// logs in with stream_resume and runs its own seeded script of one-to-one and group messages,
    /// reactions, edits and recalls of its own messages, mark-reads and read receipts, with up to
    /// 6 frames unanswered. Once 35% of the script's frames are acknowledged the relay is killed
    /// with SIGKILL (right after the windows were refilled, so sends are in flight) and restarted on
    /// the same store; every device logs in again with its last stream position, pages its
    /// stream, resends each message not acknowledged (same client_msg_id) and goes on with its
    /// script. At 70% the same again, then the script runs to its end. Then every device reads its
    /// whole stream again from position 0.
    ///
    /// Checked: every acknowledged message and event reaches every device it should (the
    /// receivers' devices; the sender's other devices, messages with direction SENT) exactly once,
    /// and no device gets a frame it should not (its own, or another conversation's); an event sent
    /// but not acknowledged before the kill (events carry no de-duplication key, so they are not
    /// resent) reaches all its devices or none; stream positions only grow on every device, across
    /// the restart; per conversation, the seqs each device sees only grow, every ack's seq is the
    /// one the receivers see, and no seq names two messages; the stream read again from 0 is
    /// exactly what the device was handed, live and by sync.
    @Test(arguments: StoreBackend.allCases)
    func sigkillInTheMiddleOfALoadLosesAndRepeatsNoAcknowledgedFrame(_ backend: StoreBackend) async throws {
        let folder = try await TemporaryFolder("crash-load", store: backend)
        defer { folder.remove() }
        let run = LoadRun()
        let extra = ["--groups", folder.groupsFile]
        try await withClientGroup(threads: 2) { group in
            let first = try await RelayChild.start(folder: folder, extra: extra)
            try await run.killDuringLoad(group: group, first: [first]) {
                // Restarted on the same store.
                [try await RelayChild.start(folder: folder, extra: extra)]
            }
        }
        run.checkAfterKills()
    }

    // One scenario, read top to bottom: kept as one function (over 80 lines).
    /// Three relays on one PostgreSQL database, one serving and the others started with
    /// `--standby`: the load of ``sigkillInTheMiddleOfALoadLosesAndRepeatsNoAcknowledgedFrame(_:)``,
    /// but at each kill point the serving relay is killed with SIGKILL and a standby, already
    /// running, takes over (it prints its listening line); every device reconnects to it, and
    /// another standby is started. Checked: the same as there (every acknowledged frame reaches
    /// every device it should exactly once, in order; seqs and positions only grow), and that each
    /// standby waited without listening until it took over.
    @Test func aStandbyTakesOverFromAKilledRelayAndNothingAcknowledgedIsLost() async throws {
        let folder = try await TemporaryFolder("failover-load", store: .postgresql)
        defer { folder.remove() }
        let run = LoadRun()
        let extra = ["--groups", folder.groupsFile, "--standby"]
        var relays: [RelayChild] = []
        defer { for relay in relays { relay.forceKill() } }
        try await withClientGroup(threads: 2) { group in
            let first = try await RelayChild.start(folder: folder, extra: extra)
            relays.append(first)
            var standby = try await RelayChild.startStandby(folder: folder, extra: extra)
            relays.append(standby)
            try await run.killDuringLoad(group: group, first: [first]) {
                let serving = standby
                try await serving.waitUntilListening()
                standby = try await RelayChild.startStandby(folder: folder, extra: extra)
                relays.append(standby)
                return [serving]
            }
            // The load's end killed the serving relay: the last standby takes over.
            try await standby.waitUntilListening()
            standby.forceKill()
        }
        #expect(relays.count == 4)
        for (number, relay) in relays.enumerated() {
            // The first served from the start; each of the others stood by first.
            #expect((relay.standbyLine != nil) == (number > 0), "relay \(number): \(relay.stdout)")
        }
        run.checkAfterKills()
    }

    // One scenario, read top to bottom: kept as one function (over 80 lines).
    /// Three relay nodes on one PostgreSQL database (`--node-port`): one routes, two forward their
    /// clients to it. 301 devices of 152 users, spread over the three nodes, run the load of
    /// ``sigkillInTheMiddleOfALoadLosesAndRepeatsNoAcknowledgedFrame(_:)`` (30 frames each); at
    /// each kill point the routing node is killed with SIGKILL, a forwarding node takes over on the
    /// port it forwarded on, the other links to it, a new node is started to make three again, and
    /// every device reconnects, its killed node's devices to another node. Checked: every
    /// acknowledged frame reaches every device it should exactly once, in order; seqs and positions
    /// only grow; each node forwarded before it routed.
    @Test func threeNodesCarryALoadAndAKilledRoutingNodeLosesNothingAcknowledged() async throws {
        let folder = try await TemporaryFolder("nodes-load", store: .postgresql)
        defer { folder.remove() }
        // 30 frames per device (10 under ThreadSanitizer, see `underThreadSanitizer`).
        let run = LoadRun(userCount: 152, opsPerDevice: underThreadSanitizer ? 10 : 30)
        #expect(run.devices.count == 301)
        let nodeSet = NodeSet(folder: folder)
        defer { nodeSet.killAll() }
        try await withClientGroup(threads: 2) { group in
            var nodes = try await nodeSet.startRoutingAndForwarding(3)
            try await run.killDuringLoad(group: group, first: nodes) {
                let survivors = Array(nodes.dropFirst())
                // One survivor takes the lock and routes; the other links to it (whenever it did:
                // its last link names the new routing node's port).
                let settled = await eventually(30) {
                    let routing = survivors.filter { $0.listeningPort != nil }
                    guard routing.count == 1, let nodePort = routing[0].routingNodePort else { return false }
                    return survivors.allSatisfy { $0 === routing[0] || $0.forwardingTarget == nodePort }
                }
                #expect(settled, "no node took over: \(survivors.map(\.stdout))")
                try #require(settled)
                let routing = survivors.first { $0.listeningPort != nil }!
                #expect(routing.port == routing.nodeListeningPort, "it routes on the port it forwarded on")
                nodes = [routing] + survivors.filter { $0 !== routing } + [try await nodeSet.start()]
                return nodes
            }
        }
        let started = nodeSet.started
        #expect(started.count == 5)
        for (number, node) in started.enumerated() {
            // The first routed from the start; every other forwarded first.
            #expect((node.forwardingLinks > 0) == (number > 0), "node \(number): \(node.stdout)")
        }
        #expect(started.filter { $0.listeningPort != nil }.count == 3, "the first and one per kill routed")
        #expect(run.unavailableNotices > 0, "the forwarding nodes told their clients why they dropped them")
        run.checkAfterKills()
    }

    /// A forwarding node killed with SIGKILL, twice, mid-load (three nodes, 57 devices): only its
    /// own devices drop; they log in to the other nodes and resume from their stream positions,
    /// resending what was not acknowledged; every other device, and the routing node, never stop;
    /// every acknowledged frame reaches every device it should exactly once, in order.
    @Test func killedForwardingNodesLoseNothingAcknowledged() async throws {
        let folder = try await TemporaryFolder("nodes-edge-kill", store: .postgresql)
        defer { folder.remove() }
        // 30 frames per device (10 under ThreadSanitizer, see `underThreadSanitizer`).
        let run = LoadRun(userCount: 30, opsPerDevice: underThreadSanitizer ? 10 : 30)
        let nodeSet = NodeSet(folder: folder)
        defer { nodeSet.killAll() }
        try await withClientGroup(threads: 2) { group in
            let nodes = try await nodeSet.startRoutingAndForwarding(3)
            try await run.killForwardingNodesDuringLoad(group: group, nodes: nodes) {
                let node = try await nodeSet.start()
                #expect(node.listeningPort == nil && node.forwardingLinks == 1, "a new node forwards")
                return node
            }
        }
        let started = nodeSet.started
        #expect(started.count == 5)
        #expect(started.filter { $0.listeningPort != nil }.count == 1, "the first node routed throughout")
        #expect(run.routerDeathsMs.isEmpty, "no relay that routed died")
        run.checkAfterKills()
    }

    // MARK: A damaged database

    /// How a database is damaged before the relay is started on it.
    enum Damage: String, CaseIterable, CustomTestStringConvertible, Sendable {
        /// A torn copy: the database file (checkpointed, no -wal) cut to half its size.
        case truncatedToHalf
        /// A torn copy of a database whose newest commits are in its -wal: the main file cut to half
        /// its size, the -wal kept (the -shm, which SQLite rebuilds, left out).
        case truncatedToHalfWithItsWAL
        /// The first 100 bytes (SQLite's header) overwritten with garbage.
        case garbageOverTheHeader
        /// Every page but the first (which holds the schema) overwritten with garbage.
        case garbageOverThePages
        /// A sound file holding a value no relay writes: the message's seq made negative (GRDB's
        /// row subscripts stopped the process on it).
        case aNegativeSeqInAMessageRow
        /// A sound file holding text in an integer column: a message's seq 'five' (SQLite reads it
        /// as 0, which GRDB's decode took, and the relay served).
        case textForASeqInAMessageRow
        /// A sound file whose stream entries lie past their stream's head (the heads set to 0): the
        /// relay counted the entries as `head + 1 - oldest`, which trapped at the user's next frame.
        case streamEntriesPastTheirHead

        var testDescription: String { rawValue }
    }

    // One scenario, read top to bottom: kept as one function (over 80 lines).
    /// A database made by a real run (start, a login, a message, stop) is damaged as `damage` says;
    /// `serve` on it exits with status 1, prints no listening line and one line on stderr naming
    /// the file and saying it is damaged or cannot be used, and leaves the database (and its -wal)
    /// byte for byte as it was.
    @Test(arguments: Damage.allCases)
    func aDamagedDatabaseStopsTheRelayWithAClearMessageAndIsLeftAsItIs(_ damage: Damage) async throws {
        let folder = try TemporaryFolder("damaged-\(damage.rawValue)")
        defer { folder.remove() }
        let database = folder.dataDir + "/relay.sqlite"
        let wal = database + "-wal"
        let shm = database + "-shm"
        // A real run: alice logs in and sends bob a message, then the relay is stopped.
        try await RelayChild.runOnce(folder: folder)
        // Checkpoint: open the database in this process and close it, so that its pages are in the
        // main file and the -wal is gone (what a copy of a quiet database holds).
        do {
            let store = try SQLiteRelayStore(path: database)
            let state = try store.load()
            #expect(state.conversations.values.map(\.maxSeq) == [1], "the real run left its message")
        }
        #expect(!FileManager.default.fileExists(atPath: wal) || fileSize(wal) == 0)
        try? FileManager.default.removeItem(atPath: wal)
        try? FileManager.default.removeItem(atPath: shm)
        #expect(fileSize(database) >= 8 * 4096, "a database of several pages")

        var generator = SeededGenerator(seed: 0xDA3A_6ED0)
        switch damage {
        case .truncatedToHalf:
            #expect(truncate(database, off_t(fileSize(database) / 2)) == 0)
        case .truncatedToHalfWithItsWAL:
            // More commits, then a kill: they are in the -wal only.
            try await withClientGroup { group in
                let relay = try await RelayChild.start(folder: folder)
                defer { relay.forceKill() }
                let bob = try await TestClient.connect(port: relay.port, as: "bob", group: group, deviceID: "phone")
                for k in 1...5 {
                    let message = Message.c2cText(from: "bob", to: "alice", "wal \(k)", clientMsgID: "w-\(k)")
                    try await bob.send(Frame(message))
                }
                #expect(await eventually { bob.collector.acks.count == 5 })
                relay.signal(SIGKILL)
                #expect(await relay.waitForExit())
            }
            #expect(fileSize(wal) > 0, "the newest commits are in the -wal")
            try? FileManager.default.removeItem(atPath: shm)
            #expect(truncate(database, off_t(fileSize(database) / 2)) == 0)
        case .garbageOverTheHeader:
            var bytes = try fileBytes(database)
            for i in 0..<100 { bytes[i] = UInt8.random(in: 0...255, using: &generator) }
            try Data(bytes).write(to: URL(fileURLWithPath: database))
        case .garbageOverThePages:
            var bytes = try fileBytes(database)
            let pageSize = Int(bytes[16]) << 8 | Int(bytes[17])
            #expect(pageSize == 4096)
            for i in pageSize..<bytes.count { bytes[i] = UInt8.random(in: 0...255, using: &generator) }
            try Data(bytes).write(to: URL(fileURLWithPath: database))
        case .aNegativeSeqInAMessageRow, .textForASeqInAMessageRow, .streamEntriesPastTheirHead:
            // Written and checkpointed by SQLite itself (closing the last connection removes the
            // -wal): only the value is wrong.
            do {
                let queue = try DatabaseQueue(path: database)
                let update =
                    switch damage {
                    case .aNegativeSeqInAMessageRow: "UPDATE messages SET seq = -5"
                    case .textForASeqInAMessageRow: "UPDATE messages SET seq = 'five'"
                    default: "UPDATE streams SET head = 0"
                    }
                try await queue.write { try $0.execute(sql: update) }
                try queue.close()
            }
            try? FileManager.default.removeItem(atPath: wal)
            try? FileManager.default.removeItem(atPath: shm)
        }
        let before = try fileBytes(database)
        let walBefore = FileManager.default.fileExists(atPath: wal) ? try fileBytes(wal) : nil

        let refused = try RelayChild(folder: folder)
        defer { refused.forceKill() }
        let exited = await refused.waitForExit()
        // SIGKILL, if it is still running: nothing more is written to the files.
        refused.forceKill()
        #expect(!refused.stdout.contains("relay listening"), "it served the damaged database: \(refused.stdout)")
        if exited {
            #expect(
                refused.exitStatus == 1,
                "status \(String(describing: refused.exitStatus)); stderr: \(refused.stderr)"
            )
            let lines = refused.stderr.split(separator: "\n")
            #expect(lines.count == 1, "one line on stderr, got:\n\(refused.stderr)")
            let line = String(lines.first ?? "")
            #expect(line.hasPrefix("imcodec-relay: the database \(database) "), "\(line)")
            #expect(line.contains(" is damaged") || line.contains(" cannot be used"), "\(line)")
            #expect(line.contains("leaves the file as it is"), "\(line)")
            if damage == .aNegativeSeqInAMessageRow || damage == .textForASeqInAMessageRow {
                // The value and its column, not the rest of the row (ids) or the statement.
                let value = damage == .aNegativeSeqInAMessageRow ? "-5" : "\"five\""
                #expect(line.contains("column \"seq\" holds \(value), where a UInt64 is kept"), "\(line)")
                #expect(!line.contains("row:") && !line.contains("SELECT"), "\(line)")
            }
            if damage == .streamEntriesPastTheirHead {
                #expect(line.contains("from position 1 lie past the stream's head (0)"), "\(line)")
            }
        } else {
            Issue.record(
                "the relay neither stopped nor served on the damaged database (killed); stderr: \(refused.stderr)"
            )
        }
        let after = try fileBytes(database)
        let unchanged = after == before
        #expect(unchanged, "the damaged database was modified: \(differences(before, after))")
        if let walBefore {
            let walAfter = FileManager.default.fileExists(atPath: wal) ? try fileBytes(wal) : []
            let walUnchanged = walAfter == walBefore
            #expect(walUnchanged, "the -wal was modified or removed: \(differences(walBefore, walAfter))")
        }
    }

    /// A database migrated by a newer relay (a migration this relay does not know is recorded in
    /// it) is refused: `serve` exits with status 1 and one line naming the file and both sets of
    /// migrations, serves nothing, and the database is as it was (byte for byte, and its rows);
    /// opening the store in process is refused the same way. (GRDB alone would run the migrations
    /// it knows and ignore the others.)
    @Test func aDatabaseOfANewerRelayIsRefusedAndLeftAsItIs() async throws {
        let folder = try TemporaryFolder("sqlite-newer")
        defer { folder.remove() }
        let database = folder.dataDir + "/relay.sqlite"
        try await RelayChild.runOnce(folder: folder)
        // What a newer relay leaves: one more migration recorded (and checkpointed into the file).
        try Self.recordMigration("v99-from-a-newer-relay", in: database)
        let before = try fileBytes(database)

        let refused = try RelayChild(folder: folder)
        defer { refused.forceKill() }
        #expect(await refused.waitForExit(), "the relay did not stop")
        refused.forceKill()
        #expect(!refused.stdout.contains("relay listening"), "it served a newer relay's database: \(refused.stdout)")
        #expect(refused.exitStatus == 1, "status \(String(describing: refused.exitStatus)): \(refused.stderr)")
        let lines = refused.stderr.split(separator: "\n")
        #expect(lines.count == 1, "one line on stderr, got:\n\(refused.stderr)")
        let line = String(lines.first ?? "")
        #expect(line.hasPrefix("imcodec-relay: the database \(database) was written by a newer relay"), "\(line)")
        #expect(line.contains("v99-from-a-newer-relay") && line.contains("v1, v2, v3, v4, v5"), "\(line)")
        let after = try fileBytes(database)
        let unchanged = after == before
        #expect(unchanged, "the database was modified: \(differences(before, after))")

        #expect(throws: RelayStoreError.self, "opened in process") { _ = try SQLiteRelayStore(path: database) }
        let rows = try Self.migrationsAndMessages(in: database)
        #expect(
            rows.0 == ["v1", "v2", "v3", "v4", "v5", "v6", "v7", "v99-from-a-newer-relay"] && rows.1 == 1,
            "\(rows)"
        )
    }

    /// Records a migration in the SQLite database at `path`, checkpointed into the file (GRDB's
    /// synchronous API, outside any task).
    static func recordMigration(_ identifier: String, in path: String) throws {
        let queue = try DatabaseQueue(path: path)
        try queue.write { db in
            try db.execute(sql: "INSERT INTO grdb_migrations (identifier) VALUES (?)", arguments: [identifier])
        }
        try queue.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)") }
        try queue.close()
    }

    /// The migrations recorded in the SQLite database at `path`, and its message count.
    static func migrationsAndMessages(in path: String) throws -> ([String], Int?) {
        let queue = try DatabaseQueue(path: path)
        defer { try? queue.close() }
        return try queue.read { db in
            (
                try String.fetchAll(db, sql: "SELECT identifier FROM grdb_migrations ORDER BY identifier"),
                try Int.fetchOne(db, sql: "SELECT count(*) FROM messages")
            )
        }
    }

    /// A second `serve` on a data directory a running relay holds exits with status 1 and one line
    /// naming the directory and its lock; the first relay keeps serving.
    @Test func aDataDirectoryHeldByARunningRelayIsRefusedWithAClearMessage() async throws {
        let folder = try TemporaryFolder("locked")
        defer { folder.remove() }
        try await withClientGroup { group in
            let first = try await RelayChild.start(folder: folder)
            defer { first.forceKill() }
            let second = try RelayChild(folder: folder)
            defer { second.forceKill() }
            #expect(await second.waitForExit(), "the second relay did not stop")
            #expect(second.exitStatus == 1, "status \(String(describing: second.exitStatus)): \(second.stderr)")
            #expect(!second.stdout.contains("relay listening"), "\(second.stdout)")
            let dir = folder.dataDir
            #expect(second.stderr == "imcodec-relay: another relay is using \(dir) (\(dir)/relay.lock is locked)\n")
            // The first one still serves.
            let alice = try await TestClient.connect(port: first.port, as: "alice", group: group, deviceID: "desk")
            try await alice.send(Frame(Message.c2cText(from: "alice", to: "bob", "still here", clientMsgID: "s-1")))
            #expect(await eventually { alice.collector.acks.count == 1 })
            #expect(alice.collector.acks.first.map { $0.errorCode == 0 && $0.seq == 1 } == true)
            await alice.close()
            first.signal(SIGKILL)
            _ = await first.waitForExit()
        }
    }

    // MARK: What a restart keeps

    /// How the first relay stops.
    enum Stop: String, CaseIterable, CustomTestStringConvertible, Sendable {
        case sigterm, sigkill
        var signal: Int32 { self == .sigterm ? SIGTERM : SIGKILL }
        var testDescription: String { rawValue.uppercased() }
    }

    /// Bob's phone publishes a key bundle with three one-time keys and alice fetches one (key 1),
    /// each answered, so committed. After SIGKILL and a restart the relay serves the same bundle and
    /// hands out key 2, then key 3: a one-time key handed out before the crash is never handed out
    /// again, and a published bundle is not lost.
    @Test(arguments: StoreBackend.allCases)
    func keyBundlesAndUsedOneTimeKeysSurviveSIGKILL(_ backend: StoreBackend) async throws {
        let folder = try await TemporaryFolder("keys", store: backend)
        defer { folder.remove() }
        try await withClientGroup { group in
            var relay = try await RelayChild.start(folder: folder)
            defer { relay.forceKill() }
            let bob = try await TestClient.connect(port: relay.port, as: "bob", group: group, deviceID: "phone")
            var publish = Frame(
                .keyPublish(
                    .with {
                        $0.bundle = .with {
                            $0.kind = .signalPrekeys; $0.bundle = Array(repeating: 9, count: 32)
                            $0.oneTimeKeys = [[1], [2], [3]].map { key in OneTimeKey.with { $0.key = key } }
                        }
                    }
                )
            )
            publish.requestID = 1
            guard case .requestResult(let published)? = try await bob.ask(publish)?.payload else {
                Issue.record("no answer to the publish")
                return
            }
            #expect(published.errorCode == 0)
            func fetch(_ client: TestClient, _ id: UInt64) async throws -> KeyFetchResponse? {
                var request = Frame(
                    .keyFetchRequest(
                        .with {
                            $0.userID = "bob"; $0.kind = .signalPrekeys
                        }
                    )
                )
                request.requestID = id
                guard case .keyFetchResponse(let response)? = try await client.ask(request)?.payload else { return nil }
                return response
            }
            let alice = try await TestClient.connect(port: relay.port, as: "alice", group: group, deviceID: "desk")
            #expect(try await fetch(alice, 2)?.bundles.first?.oneTimeKeys.map(\.key) == [[1]])

            relay.signal(SIGKILL)
            #expect(await relay.waitForExit())
            #expect(relay.terminatedBySignal == SIGKILL)
            await alice.close()
            await bob.close()

            relay = try await RelayChild.start(folder: folder)
            let alice2 = try await TestClient.connect(port: relay.port, as: "alice", group: group, deviceID: "desk")
            let after = try #require(try await fetch(alice2, 3))
            #expect(after.errorCode == 0)
            let bundle = try #require(after.bundles.first)
            #expect(bundle.userID == "bob" && bundle.deviceID == "phone" && bundle.kind == .signalPrekeys)
            #expect(bundle.bundle == Array(repeating: 9, count: 32))
            #expect(bundle.oneTimeKeys.map(\.key) == [[2]], "key 1 was handed out before the crash")
            #expect(try await fetch(alice2, 4)?.bundles.first?.oneTimeKeys.map(\.key) == [[3]])
            #expect(try await fetch(alice2, 5)?.bundles.first?.oneTimeKeys.isEmpty == true)
            await alice2.close()
            relay.signal(SIGTERM)
            #expect(await relay.waitForExit())
        }
    }

    // One scenario, read top to bottom: kept as one function (over 80 lines).
    /// Before the stop: bob and alice join `club` with membership frames, alice sends bob a-1...a-3
    /// and the club g-1, g-2; bob (device phone, reading his stream) acks the position of the last
    /// one (P); alice sends a-4. After the stop and a restart: alice's login lists club, her seqs go
    /// on (a-5 is seq 5, g-3 seq 3) and a-4 sent again is acknowledged with its first seq, 4; bob
    /// may still write to club; bob's phone, logging in with stream_position 0, resumes from P and
    /// gets a-4, a-5 and g-3, once each, nothing older; the club's log holds g-1, g-2, g-3 and bob's
    /// message at seqs 1...4.
    @Test(arguments: StoreBackend.allCases, Stop.allCases)
    func aRestartKeepsSeqsMembershipAndDevicePositions(_ backend: StoreBackend, _ stop: Stop) async throws {
        let folder = try await TemporaryFolder("restart-\(stop.rawValue)", store: backend)
        defer { folder.remove() }
        try await withClientGroup { group in
            var relay = try await RelayChild.start(folder: folder)
            defer { relay.forceKill() }
            let bob = try await TestClient.connect(
                port: relay.port,
                as: "bob",
                group: group,
                deviceID: "phone",
                streamResume: true
            )
            #expect(try await pageStream(bob, after: 0, firstRequestID: 100).isEmpty)
            let alice = try await TestClient.connect(port: relay.port, as: "alice", group: group, deviceID: "desk")
            for client in [bob, alice] {
                try await client.send(RelayProtocol.membershipFrame(.join, group: "club", requestID: 1))
                #expect(await eventually { client.collector.result(of: 1) != nil })
                #expect(client.collector.result(of: 1)?.errorCode == 0)
            }
            for k in 1...3 {
                try await alice.send(Frame(Message.c2cText(from: "alice", to: "bob", "a-\(k)", clientMsgID: "a-\(k)")))
            }
            for k in 1...2 {
                let message = Message.groupText(from: "alice", group: "club", "g-\(k)", clientMsgID: "g-\(k)")
                try await alice.send(Frame(message))
            }
            #expect(await eventually { alice.collector.acks.count == 5 })
            #expect(alice.collector.acks.map(\.seq) == [1, 2, 3, 1, 2])
            #expect(alice.collector.acks.allSatisfy { $0.errorCode == 0 })
            #expect(await eventually { bob.collector.messages.count == 5 })
            let positions = bob.collector.frames.map(\.streamPosition).filter { $0 != 0 }
            #expect(positions == positions.sorted() && Set(positions).count == positions.count)
            let acked = try #require(positions.last)
            try await bob.send(RelayProtocol.answer(.streamAck(StreamAck.with { $0.position = acked }), requestID: 2))
            #expect(await eventually { bob.collector.result(of: 2) != nil })
            #expect(bob.collector.result(of: 2)?.errorCode == 0)
            try await alice.send(Frame(Message.c2cText(from: "alice", to: "bob", "a-4", clientMsgID: "a-4")))
            #expect(await eventually { alice.collector.acks.count == 6 && bob.collector.messages.count == 6 })
            #expect(alice.collector.acks.last?.seq == 4)
            let a4Position = try #require(bob.collector.frames.last(where: { $0.message != nil })?.streamPosition)
            #expect(a4Position > acked)

            relay.signal(stop.signal)
            #expect(await relay.waitForExit())
            switch stop {
            case .sigterm:
                // A graceful shutdown: every device is told why, the store is closed, the status is 0.
                #expect(relay.exitStatus == 0, "\(relay.stdout)\(relay.stderr)")
                #expect(relay.stdout.contains("relay stopped"), "\(relay.stdout)")
                for client in [alice, bob] {
                    let kicks = client.collector.frames.compactMap { frame -> KickReason? in
                        if case .kickedOffline(let kicked)? = frame.payload { kicked.reason } else { nil }
                    }
                    #expect(kicks == [.serverShutdown], "\(client.collector.frames.map { $0.payload?.kind as Any })")
                }
            case .sigkill:
                #expect(relay.terminatedBySignal == SIGKILL)
            }
            await alice.close()
            await bob.close()

            relay = try await RelayChild.start(folder: folder)
            let alice2 = try await TestClient.connect(port: relay.port, as: "alice", group: group, deviceID: "desk")
            let maxSeqs = Dictionary(
                (alice2.collector.loginResults.first?.maxSeqs ?? []).map { seq in
                    ("\(seq.conversation?.type == .group ? "#" : "@")\(seq.conversation?.targetID ?? "")", seq.seq)
                },
                uniquingKeysWith: { a, _ in a }
            )
            #expect(maxSeqs == ["@bob": 4, "#club": 2], "alice's conversations after the restart")
            try await alice2.send(Frame(Message.c2cText(from: "alice", to: "bob", "a-5", clientMsgID: "a-5")))
            try await alice2.send(Frame(Message.groupText(from: "alice", group: "club", "g-3", clientMsgID: "g-3")))
            // Sent again: acknowledged with its first stamp, not kept twice.
            try await alice2.send(Frame(Message.c2cText(from: "alice", to: "bob", "a-4", clientMsgID: "a-4")))
            #expect(await eventually { alice2.collector.acks.count == 3 })
            #expect(alice2.collector.acks.map(\.seq) == [5, 3, 4], "seqs go on after the restart")
            #expect(alice2.collector.acks.allSatisfy { $0.errorCode == 0 })

            let bob2 = try await TestClient.connect(
                port: relay.port,
                as: "bob",
                group: group,
                deviceID: "phone",
                streamResume: true,
                streamPosition: 0
            )
            let login = try #require(bob2.collector.loginResults.first)
            #expect(login.resumePosition == acked, "bob's phone resumes from its last stream_ack")
            let frames = try await pageStream(bob2, after: login.resumePosition, firstRequestID: 200)
            let texts = frames.compactMap { $0.frame.message.flatMap { $0.firstText } }
            #expect(texts == ["a-4", "a-5", "g-3"], "exactly what came after the acknowledged position")
            #expect(frames.count == 3, "\(frames.map { $0.frame.payload?.kind as Any })")
            #expect(frames.first?.position == a4Position)
            #expect(frames.allSatisfy { $0.position > acked })
            #expect(frames.compactMap { $0.frame.message?.seq } == [4, 5, 3])
            try await bob2.send(Frame(Message.groupText(from: "bob", group: "club", "b-1", clientMsgID: "b-1")))
            #expect(await eventually { bob2.collector.acks.count == 1 })
            #expect(bob2.collector.acks.first.map { "\($0.errorCode) \($0.seq)" } == "0 4", "bob is still in club")
            try await bob2.send(RelayProtocol.syncFrame(.group("club"), from: 1, requestID: 300))
            #expect(await eventually { bob2.collector.answer(to: 300) != nil })
            if case .syncResponse(let sync)? = bob2.collector.answer(to: 300)?.payload {
                #expect(sync.messages.map(\.seq) == [1, 2, 3, 4])
                #expect(sync.messages.compactMap(\.firstText) == ["g-1", "g-2", "g-3", "b-1"])
            } else {
                Issue.record("no sync_response for club")
            }
            await alice2.close()
            await bob2.close()
            relay.signal(SIGKILL)
            _ = await relay.waitForExit()
        }
    }
}

private func fileBytes(_ path: String) throws -> [UInt8] {
    [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
}

private func fileSize(_ path: String) -> Int {
    ((try? FileManager.default.attributesOfItem(atPath: path)[.size]) as? NSNumber)?.intValue ?? 0
}

/// Where two byte strings differ, briefly.
private func differences(_ a: [UInt8], _ b: [UInt8]) -> String {
    var offsets: [Int] = []
    for i in 0..<min(a.count, b.count) where a[i] != b[i] {
        offsets.append(i)
        if offsets.count == 8 { break }
    }
    return "\(a.count) bytes before, \(b.count) after; first differing offsets \(offsets)"
}

/// Pages `client`'s stream after `after` until `has_more` is false; returns the frames with their positions.
private func pageStream(
    _ client: TestClient,
    after: UInt64,
    firstRequestID: UInt64
) async throws
    -> [(position: UInt64, frame: Frame)]
{
    var out: [(position: UInt64, frame: Frame)] = []
    var position = after
    var requestID = firstRequestID
    while true {
        try await client.send(
            RelayProtocol.answer(
                .streamSyncRequest(
                    StreamSyncRequest.with {
                        $0.afterPosition = position
                        $0.limit = 50
                    }
                ),
                requestID: requestID
            )
        )
        let id = requestID
        let answered = await eventually { client.collector.answer(to: id) != nil }
        guard answered,
            case .streamSyncResponse(let page)? = client.collector.answer(to: id)?.payload
        else {
            Issue.record("no stream_sync_response to request \(id)")
            return out
        }
        #expect(page.errorCode == 0 && !page.truncated)
        for frame in page.frames {
            let decoded = try Frame(serializedBytes: frame.frame)
            #expect(decoded.streamPosition == frame.position)
            out.append((frame.position, decoded))
        }
        if !page.hasMore { return out }
        position = page.nextAfterPosition
        requestID += 1
    }
}

extension Frame {
    fileprivate var message: Message? {
        if case .message(let m)? = payload { m } else { nil }
    }
}

// MARK: - The load

/// What a stream frame is: a message (sender/client_msg_id) or an event (its unique id, carried in
/// its time field).
private enum Identity: Hashable, CustomStringConvertible {
    case message(String)
    case event(Int64)

    var description: String {
        switch self {
        case .message(let key): "message \(key)"
        case .event(let id): "event \(id)"
        }
    }
}

/// A conversation named the same way from both sides.
private func conversationKey(_ conversation: Conversation?, sender: String) -> String {
    guard let conversation else { return "?" }
    if conversation.type == .group { return "#\(conversation.targetID)" }
    return [sender, conversation.targetID].sorted().joined(separator: "|")
}

/// A message of the load: who sent it, who should get it, its ack.
private final class SentMessage {
    let message: Message
    let key: String
    let conversation: String
    let origin: Int
    let expected: Set<Int>
    var seq: UInt64?
    var uid: String?
    var acked = false
    var resent = false
    /// A recall of it was sent: no more events name it.
    var recallSent = false

    init(message: Message, origin: Int, expected: Set<Int>) {
        self.message = message
        self.key = "\(message.senderID)/\(message.clientMsgID)"
        self.conversation = conversationKey(message.conversation, sender: message.senderID)
        self.origin = origin
        self.expected = expected
    }
}

/// An event of the load.
private final class SentEvent {
    let id: Int64
    let kind: Frame.Payload.Kind
    let origin: Int
    let expected: Set<Int>
    var acked = false
    /// Sent before the kill and not answered: it may or may not have been kept.
    var uncertain = false

    init(id: Int64, kind: Frame.Payload.Kind, origin: Int, expected: Set<Int>) {
        self.id = id
        self.kind = kind
        self.origin = origin
        self.expected = expected
    }
}

/// What one device was handed from its stream (live or by sync), in order.
private struct Seen {
    let position: UInt64
    let identity: Identity
    let kind: Frame.Payload.Kind?
    let direction: MessageDirection
    let seq: UInt64
    let conversation: String
}

/// Relay nodes (`--node-port 0`) on one folder's database, each with its groups file; every node
/// started is killed by ``killAll()``.
private final class NodeSet {
    let folder: TemporaryFolder
    /// Every node started, in order.
    private(set) var started: [RelayChild] = []

    init(folder: TemporaryFolder) { self.folder = folder }

    func start() async throws -> RelayChild {
        let node = try await RelayChild.startNode(folder: folder, extra: ["--groups", folder.groupsFile])
        started.append(node)
        return node
    }

    /// Starts `count` nodes one after the other: the first must route, the others forward to it.
    func startRoutingAndForwarding(_ count: Int) async throws -> [RelayChild] {
        let first = try await start()
        try #require(first.listeningPort != nil, "the first node routes")
        var nodes = [first]
        for _ in 1..<count { nodes.append(try await start()) }
        #expect(nodes.dropFirst().allSatisfy { $0.listeningPort == nil && $0.forwardingLinks == 1 })
        return nodes
    }

    func killAll() { for relay in started { relay.forceKill() } }
}

/// The whole load: the users, their devices, every message and event sent, and the checks.
private final class LoadRun {
    /// The users (`u0`, `u1`, ...); the first five are the crew, the group of the groups file.
    let users: [String]
    let crew: Set<String> = ["u0", "u1", "u2", "u3", "u4"]
    let opsPerDevice: Int
    static let window = 6

    var devices: [LoadDevice] = []
    var devicesOf: [String: [Int]] = [:]
    var messages: [String: SentMessage] = [:]
    var events: [Int64: SentEvent] = [:]
    var problems: [String] = []
    /// Every seq given, per conversation: the message it names (from acks and from what devices saw).
    var seqOwners: [String: [UInt64: String]] = [:]
    /// When each routing relay killed so far was found dead (`RelayProtocol.nowMs()`, the clock the
    /// relay stamps `server_time_ms` with on this machine): a resent message acknowledged with a
    /// stamp from before it was kept by a relay that died. (A uid tells nothing of the relay that
    /// gave it: uids are enciphered counters.)
    var routerDeathsMs: [Int64] = []
    var acknowledged = 0
    /// At each kill: the acks received so far, the frames unanswered.
    var kills: [(acknowledged: Int, unanswered: Int)] = []
    var resent = 0
    var resentAlreadyKept = 0
    /// `unavailable` notices: a forwarding node dropped the device when the routing node went away.
    var unavailableNotices = 0

    var plannedFrames: Int { devices.count * opsPerDevice }
    /// The relay is killed once this many frames are acknowledged: at 35% of the load, and at 70%.
    var killPoints: [Int] { [plannedFrames * 35 / 100, plannedFrames * 70 / 100] }
    var plannedMessages: Int { messages.count }
    var plannedEvents: Int { events.count }

    /// The load of `userCount` users (at least six), of whom the first three and every user from
    /// the seventh on have two devices, and `opsPerDevice` frames per device.
    init(userCount: Int = 6, opsPerDevice: Int = 80) {
        users = (0..<max(6, userCount)).map { "u\($0)" }
        self.opsPerDevice = opsPerDevice
        var index = 0
        for (number, user) in users.enumerated() {
            let count = number < 3 || number >= 6 ? 2 : 1
            for d in 0..<count {
                devices.append(LoadDevice(index: index, user: user, device: d == 0 ? "a" : "b", run: self))
                devicesOf[user, default: []].append(index)
                index += 1
            }
        }
    }

    func pumpAll(sending: Bool = true) {
        for device in devices { device.pump(sending: sending) }
    }

    // One scenario, read top to bottom: kept as one function (over 80 lines).
    /// Runs the load against the relays `first` (device `i` on relay `i % count`); at each kill
    /// point kills the first of them, the one that routes, with SIGKILL (right after the windows
    /// were refilled, so sends are in flight), waits until every connection is closed (a
    /// forwarding node drops its clients when the routing node goes), and reconnects every device
    /// to the relays `next` gives (restarted on the same store, a standby that took over, or the
    /// nodes left, routing node first); runs the load to its end, then has every device read its
    /// whole stream again from 0, and kills the last relays.
    func killDuringLoad(
        group: any EventLoopGroup,
        first: [RelayChild],
        next: () async throws -> [RelayChild]
    ) async throws {
        var relays = first
        defer { for relay in relays { relay.forceKill() } }
        func connectAll() async throws {
            for device in devices {
                try await device.connect(port: relays[device.index % relays.count].port, group: group)
            }
        }
        try await connectAll()
        for (number, killPoint) in killPoints.enumerated() {
            try await runLoad(until: killPoint, thenKill: relays[0], kill: number + 1)
            // Whatever the relay wrote before it died still arrives; then the connections close.
            let closed = await eventually {
                pumpAll(sending: false)
                return devices.allSatisfy { !$0.isConnected }
            }
            #expect(closed)
            pumpAll(sending: false)
            crashed()
            // Every device resumes from its last position and resends what was not acknowledged.
            relays = try await next()
            try await connectAll()
        }
        try await finishAndAudit(relays)
    }

    // One scenario, read top to bottom: kept as one function (over 80 lines).
    /// Runs the load against `nodes` (device `i` on node `i % count`; the first routes, the others
    /// forward); at each kill point kills one of the first forwarding nodes (the second node at the
    /// first kill point, the third at the next) with SIGKILL, with sends in flight. Only that node's
    /// devices lose their connection: they resume on the other nodes and on the one `spare` starts,
    /// resending what was not acknowledged, while every other device goes on. Then the load runs to
    /// its end, every device reads its whole stream again, and the nodes are killed.
    func killForwardingNodesDuringLoad(
        group: any EventLoopGroup,
        nodes first: [RelayChild],
        spare: () async throws -> RelayChild
    ) async throws {
        var nodes = first
        defer { for node in nodes { node.forceKill() } }
        var nodeOf: [Int: RelayChild] = [:]
        for device in devices {
            nodeOf[device.index] = nodes[device.index % nodes.count]
            try await device.connect(port: nodeOf[device.index]!.port, group: group)
        }
        for (number, killPoint) in killPoints.enumerated() {
            let victim = first[1 + number % (first.count - 1)]
            let dropped = devices.filter { nodeOf[$0.index] === victim }
            try await runLoad(until: killPoint, thenKill: victim, kill: number + 1)
            // Its devices lose their connections; every other device keeps its own and its load goes on.
            let closed = await eventually {
                pumpAll()
                return dropped.allSatisfy { !$0.isConnected }
            }
            #expect(closed)
            #expect(devices.allSatisfy { nodeOf[$0.index] === victim || $0.isConnected }, "only its devices dropped")
            pumpAll(sending: false)
            crashed(dropped)
            nodes.removeAll { $0 === victim }
            nodes.append(try await spare())
            for (i, device) in dropped.enumerated() {
                nodeOf[device.index] = nodes[i % nodes.count]
                try await device.connect(port: nodeOf[device.index]!.port, group: group)
            }
        }
        try await finishAndAudit(nodes)
    }

    /// Runs the load until `killPoint` frames are acknowledged, refills every window (so frames are
    /// in flight when it dies), kills `relay` with SIGKILL and waits until it is gone.
    private func runLoad(until killPoint: Int, thenKill relay: RelayChild, kill number: Int) async throws {
        let reached = await eventually(20) {
            pumpAll()
            guard acknowledged >= killPoint else { return false }
            pumpAll()
            kills.append((acknowledged: acknowledged, unanswered: devices.reduce(0) { $0 + $1.outstanding.count }))
            relay.signal(SIGKILL)
            return true
        }
        #expect(reached, "kill \(number): the load stalled at \(acknowledged) of \(killPoint) acks: \(progress)")
        try #require(reached)
        #expect(await relay.waitForExit(), "the relay did not die after SIGKILL")
        #expect(relay.terminatedBySignal == SIGKILL)
    }

    /// Runs the load to its end on the relays the devices are connected to, has every device read
    /// its whole stream again from position 0, and kills `relays`.
    private func finishAndAudit(_ relays: [RelayChild]) async throws {
        let finished = await eventually(20) {
            pumpAll()
            return devices.allSatisfy(\.isFinished)
        }
        #expect(finished, "the load stalled after the last kill: \(progress)")
        try #require(finished)

        // Every device reads its whole stream again, from position 0.
        for device in devices { device.startAudit() }
        let audited = await eventually(20) {
            pumpAll(sending: false)
            return devices.allSatisfy(\.auditDone)
        }
        #expect(audited, "the stream audit stalled: \(progress)")
        for device in devices { await device.close() }
        for relay in relays {
            relay.signal(SIGKILL)
            _ = await relay.waitForExit()
        }
    }

    /// The checks of a load with kills (``killDuringLoad(group:first:next:)``), and the counts that
    /// say the load did what it claims.
    func checkAfterKills() {
        let report = check()
        print(report.summary)
        for problem in report.problems.prefix(40) {
            Issue.record("\(problem)")
        }
        #expect(report.problems.isEmpty, "\(report.problems.count) problems")
        #expect(kills.count == killPoints.count)
        for (kill, point) in zip(kills, killPoints) {
            #expect(kill.acknowledged >= point && kill.acknowledged < plannedFrames)
            #expect(kill.unanswered > 0, "nothing was in flight when the relay was killed")
        }
        #expect(report.ackedMessages == plannedMessages, "every message is acknowledged in the end")
        #expect(report.ackedEvents + report.uncertainEvents == plannedEvents)
        #expect(resent > 0, "no message was unacknowledged at a kill")
        #expect(report.delivered == report.expectedDeliveries + report.uncertainDelivered)
        #expect(report.sentCopies > 0 && report.groupMessages > 0 && report.directMessages > 0)
    }

    var progress: String {
        devices.map {
            "\($0.name): op \($0.nextOp)/\(opsPerDevice), \($0.outstanding.count) unanswered, "
                + "caught up \($0.caughtUp)"
        }.joined(separator: "; ")
    }

    /// The devices of `users`, but not `origin`.
    func devices(of users: some Sequence<String>, except origin: Int) -> Set<Int> {
        var out = Set<Int>()
        for user in users { for d in devicesOf[user] ?? [] where d != origin { out.insert(d) } }
        return out
    }

    /// Who a conversation reaches: both sides of a one-to-one one, every crew member.
    func users(of conversation: Conversation, sender: String) -> [String] {
        conversation.type == .group ? Array(crew) : [sender, conversation.targetID]
    }

    func recordSeq(_ conversation: String, _ seq: UInt64, _ key: String, _ source: String) {
        if let owner = seqOwners[conversation]?[seq], owner != key {
            problems.append("seq \(seq) of \(conversation) names two messages: \(owner) and \(key) (\(source))")
        } else {
            seqOwners[conversation, default: [:]][seq] = key
        }
    }

    /// After the kill: every message not acknowledged is to be resent; every event not answered is
    /// uncertain. `dropped`: only these devices lost their connection (a forwarding node died; the
    /// relay that routes stays); `nil`: every device did (the routing relay died).
    func crashed(_ dropped: [LoadDevice]? = nil) {
        if dropped == nil { routerDeathsMs.append(RelayProtocol.nowMs()) }
        for device in dropped ?? devices {
            for key in device.outstanding.keys.sorted() {
                switch device.outstanding[key]! {
                case .message(let sent):
                    sent.resent = true
                    device.resend.append(sent)
                    resent += 1
                case .event(let event):
                    event.uncertain = true
                }
            }
            device.outstanding = [:]
            device.resend.sort { $0.message.clientTimeMs < $1.message.clientTimeMs }
        }
    }

    struct Report {
        var problems: [String] = []
        var ackedMessages = 0
        var ackedEvents = 0
        var uncertainEvents = 0
        var uncertainKept = 0
        var resent = 0
        var resentAlreadyKept = 0
        var delivered = 0
        var expectedDeliveries = 0
        var uncertainDelivered = 0
        var sentCopies = 0
        var groupMessages = 0
        var directMessages = 0
        var summary = ""
    }

    // Long on purpose (over 80 lines): every invariant of the load, checked in turn on one set of records.
    func check() -> Report {
        var report = Report()
        // What each device saw, by identity.
        var seenBy: [Int: [Identity: [Seen]]] = [:]
        for device in devices {
            var byIdentity: [Identity: [Seen]] = [:]
            var lastSeq: [String: UInt64] = [:]
            var lastPosition: UInt64 = 0
            for seen in device.seen {
                if seen.position <= lastPosition {
                    report.problems.append("\(device.name): position \(seen.position) after \(lastPosition)")
                }
                lastPosition = seen.position
                byIdentity[seen.identity, default: []].append(seen)
                report.delivered += 1
                if case .message(let key) = seen.identity {
                    if let last = lastSeq[seen.conversation], seen.seq <= last {
                        report.problems.append(
                            "\(device.name): \(key) has seq \(seen.seq) after seq \(last) in \(seen.conversation)"
                        )
                    }
                    lastSeq[seen.conversation] = seen.seq
                    recordSeq(seen.conversation, seen.seq, key, "seen by \(device.name)")
                }
            }
            seenBy[device.index] = byIdentity
            // Nothing the device should not have.
            for (identity, copies) in byIdentity {
                let expected: Set<Int>?
                switch identity {
                case .message(let key): expected = messages[key]?.expected
                case .event(let id): expected = events[id]?.expected
                }
                guard let expected else {
                    report.problems.append("\(device.name) got \(identity), which no device sent")
                    continue
                }
                if !expected.contains(device.index) {
                    report.problems.append("\(device.name) got \(identity), which is not for it")
                }
                if copies.count > 1 {
                    report.problems.append(
                        "\(device.name) got \(identity) \(copies.count) times, at positions \(copies.map(\.position))"
                    )
                }
            }
            // The stream read again from 0 is exactly what the device was handed.
            let handed = device.seen.map { "\($0.position):\($0.identity)" }
            let audit = device.audit.map { "\($0.position):\($0.identity)" }
            if handed != audit {
                let missing = Set(audit).subtracting(handed).sorted().prefix(5)
                let extra = Set(handed).subtracting(audit).sorted().prefix(5)
                report.problems.append(
                    "\(device.name): handed \(handed.count) frames, its stream holds \(audit.count); "
                        + "in the stream only: \(Array(missing)); handed only: \(Array(extra))"
                )
            }
        }
        // Every acknowledged message on every device it should reach, once, with its direction and seq.
        for key in messages.keys.sorted() {
            let sent = messages[key]!
            guard sent.acked, let seq = sent.seq else {
                report.problems.append("\(key) was never acknowledged")
                continue
            }
            report.ackedMessages += 1
            if sent.message.conversation?.type == .group {
                report.groupMessages += 1
            } else {
                report.directMessages += 1
            }
            recordSeq(sent.conversation, seq, key, "ack")
            for d in sent.expected.sorted() {
                report.expectedDeliveries += 1
                let copies = seenBy[d]?[.message(key)] ?? []
                guard let copy = copies.first else {
                    report.problems.append("\(devices[d].name) never got acknowledged \(key) (seq \(seq))")
                    continue
                }
                let direction: MessageDirection = devices[d].user == sent.message.senderID ? .sent : .received
                if direction == .sent { report.sentCopies += 1 }
                if copy.direction != direction {
                    report.problems.append(
                        "\(devices[d].name) got \(key) with direction \(copy.direction), not \(direction)"
                    )
                }
                if copy.seq != seq {
                    report.problems.append("\(devices[d].name) got \(key) with seq \(copy.seq), its ack said \(seq)")
                }
            }
        }
        for id in events.keys.sorted() {
            let event = events[id]!
            let reached = event.expected.filter { seenBy[$0]?[.event(id)]?.isEmpty == false }
            for d in reached {
                if let kind = seenBy[d]?[.event(id)]?.first?.kind, kind != event.kind {
                    report.problems.append(
                        "\(devices[d].name) got event \(id) as \(kind), it was sent as \(event.kind)"
                    )
                }
            }
            if event.acked {
                report.ackedEvents += 1
                report.expectedDeliveries += event.expected.count
                for d in event.expected.subtracting(reached).sorted() {
                    report.problems.append("\(devices[d].name) never got acknowledged \(event.kind) event \(id)")
                }
            } else if event.uncertain {
                report.uncertainEvents += 1
                report.uncertainDelivered += reached.count
                if !reached.isEmpty { report.uncertainKept += 1 }
                // Kept in one commit for all its users, or not at all.
                if !reached.isEmpty && reached != event.expected {
                    report.problems.append(
                        "unacknowledged \(event.kind) event \(id) reached \(reached.count) of its "
                            + "\(event.expected.count) devices"
                    )
                }
            } else {
                report.problems.append("\(event.kind) event \(id) was never answered")
            }
        }
        // What the load recorded as it ran, and the seqs named twice (recordSeq, above), come first.
        report.problems = problems + report.problems
        report.resent = resent
        report.resentAlreadyKept = resentAlreadyKept
        let killLines = kills.map { "SIGKILL after \($0.acknowledged) acks with \($0.unanswered) frames unanswered" }
            .joined(separator: ", then ")
        let points = killPoints.map(String.init).joined(separator: ", ")
        // A resent message's ack tells that it was kept before the kill by its first stamp's time;
        // when only forwarding nodes died, the relay that stamped it is still the one that routes.
        let kept =
            routerDeathsMs.isEmpty
            ? "(the relay that routed never died, so an ack cannot tell which of them it had kept)"
            : "\(resentAlreadyKept) of them already kept (acknowledged with their first stamp)"
        report.summary = """
            relay crash test: \(devices.count) devices of \(users.count) users, \(plannedFrames) frames planned \
            (\(messages.count) messages: \(report.directMessages) one-to-one, \(report.groupMessages) group; \
            \(events.count) events); \(killLines) (kill points \(points)); \
            \(resent) messages resent, \(kept); \(report.uncertainEvents) events unanswered at the \
            kill, \(report.uncertainKept) of them kept; acked \(report.ackedMessages) messages and \
            \(report.ackedEvents) events; delivered \(report.delivered) stream frames (\(report.expectedDeliveries) \
            expected for acked frames, \(report.sentCopies) as SENT copies, plus \(report.uncertainDelivered) of \
            unacknowledged events); \(report.problems.count) problems
            """
        return report
    }
}

/// A frame a device waits to have answered.
private enum Outstanding {
    case message(SentMessage)
    case event(SentEvent)
}

/// One device of the load: its seeded script, its connection, and every stream frame it was handed.
private final class LoadDevice {
    let index: Int
    let user: String
    let device: String
    unowned let run: LoadRun
    var name: String { "\(user)/\(device)" }

    private var generator: SeededGenerator
    private var client: TestClient?
    private var readIndex = 0
    private(set) var caughtUp = false
    private var requestCounter: UInt64 = 0
    private var syncRequestID: UInt64 = 0
    /// The last stream position handed on.
    private(set) var lastPosition: UInt64 = 0
    /// Every stream frame handed on, in order, live or by sync, before and after the restart.
    private(set) var seen: [Seen] = []
    /// The stream read again from 0 at the end.
    private(set) var audit: [Seen] = []
    private var auditRequestID: UInt64 = 0
    private(set) var auditDone = false
    private(set) var nextOp = 0
    /// Unanswered frames: by client_msg_id (messages) or request id (events; "r" + id).
    var outstanding: [String: Outstanding] = [:]
    /// Messages to send again after the restart.
    var resend: [SentMessage] = []
    /// Own messages acknowledged and not recalled: what reactions, edits and recalls name.
    private var own: [SentMessage] = []
    /// Messages received from other users: what receipts name.
    private var received: [Message] = []

    init(index: Int, user: String, device: String, run: LoadRun) {
        self.index = index
        self.user = user
        self.device = device
        self.run = run
        self.generator = SeededGenerator(seed: 0xC0FFEE + UInt64(index) * 7919)
    }

    var isConnected: Bool { client?.channel.isActive == true }
    var isFinished: Bool { nextOp == run.opsPerDevice && outstanding.isEmpty && resend.isEmpty && caughtUp }

    func connect(port: Int, group: any EventLoopGroup) async throws {
        client = try await TestClient.connect(
            port: port,
            as: user,
            group: group,
            deviceID: device,
            streamResume: true,
            streamPosition: lastPosition
        )
        readIndex = 0
        caughtUp = false
        guard let login = client?.collector.loginResults.first else { return }
        if login.resumePosition != lastPosition {
            run.problems.append("\(name): resumes from \(login.resumePosition), it asked for \(lastPosition)")
        }
        requestStreamPage(after: lastPosition)
    }

    func close() async {
        await client?.close()
    }

    private func nextRequestID() -> UInt64 {
        requestCounter += 1
        return requestCounter
    }

    private func requestStreamPage(after position: UInt64) {
        syncRequestID = 1_000_000 + nextRequestID()
        client?.channel.writeAndFlush(
            RelayProtocol.answer(
                .streamSyncRequest(
                    StreamSyncRequest.with {
                        $0.afterPosition = position
                        $0.limit = 40
                    }
                ),
                requestID: syncRequestID
            ),
            promise: nil
        )
    }

    func startAudit() {
        auditDone = false
        audit = []
        requestAuditPage(after: 0)
    }

    private func requestAuditPage(after position: UInt64) {
        auditRequestID = 2_000_000 + nextRequestID()
        client?.channel.writeAndFlush(
            RelayProtocol.answer(
                .streamSyncRequest(
                    StreamSyncRequest.with {
                        $0.afterPosition = position
                        $0.limit = 100
                    }
                ),
                requestID: auditRequestID
            ),
            promise: nil
        )
    }

    /// Reads what arrived, then sends up to the window.
    func pump(sending: Bool) {
        guard let client else { return }
        let frames = client.collector.frames
        while readIndex < frames.count {
            handle(frames[readIndex])
            readIndex += 1
        }
        guard sending, caughtUp, client.channel.isActive else { return }
        var wrote = false
        while outstanding.count < LoadRun.window, !resend.isEmpty {
            let sent = resend.removeFirst()
            outstanding[sent.message.clientMsgID] = .message(sent)
            client.channel.write(Frame(sent.message), promise: nil)
            wrote = true
        }
        while outstanding.count < LoadRun.window, resend.isEmpty, nextOp < run.opsPerDevice {
            for frame in makeOp(nextOp) { client.channel.write(frame, promise: nil) }
            nextOp += 1
            wrote = true
        }
        if wrote { client.channel.flush() }
    }

    // MARK: Receiving

    // Long on purpose (over 80 lines): one case per payload the load's clients receive.
    private func handle(_ frame: Frame) {
        switch frame.payload {
        case .loginResult?:
            break
        case .sendAck(let ack)?:
            guard case .message(let sent)? = outstanding.removeValue(forKey: ack.clientMsgID) else {
                run.problems.append("\(name): an ack for \(ack.clientMsgID), which it is not waiting for")
                return
            }
            guard ack.errorCode == 0 else {
                run.problems.append("\(name): \(sent.key) refused: \(ack.errorCode) \(ack.errorDescription)")
                return
            }
            // Stamped before the last routing relay was found dead: kept by a relay that died (every
            // message the next relay stamps is sent after that).
            if sent.resent, let death = run.routerDeathsMs.last, ack.serverTimeMs < death {
                run.resentAlreadyKept += 1
            }
            if let seq = sent.seq, seq != ack.seq || sent.uid != ack.serverMsgUID {
                run.problems.append("\(name): \(sent.key) acknowledged twice, as seq \(seq) and seq \(ack.seq)")
            }
            sent.seq = ack.seq
            sent.uid = ack.serverMsgUID
            sent.acked = true
            run.acknowledged += 1
            run.recordSeq(sent.conversation, ack.seq, sent.key, "ack to \(name)")
            own.append(sent)
        case .requestResult(let result)?:
            guard case .event(let event)? = outstanding.removeValue(forKey: "r\(frame.requestID)") else {
                run.problems.append("\(name): a request_result for \(frame.requestID), which it is not waiting for")
                return
            }
            if result.errorCode != 0 {
                run.problems.append(
                    "\(name): \(event.kind) event \(event.id) refused: \(result.errorCode) \(result.errorDescription)"
                )
                return
            }
            event.acked = true
            run.acknowledged += 1
        case .pong?:
            // Answers the ping sent after an event that has no answer of its own (mark_read,
            // receipt): the relay answers it once everything before it is committed.
            guard case .event(let event)? = outstanding.removeValue(forKey: "r\(frame.requestID)") else {
                run.problems.append("\(name): a pong for \(frame.requestID), which it is not waiting for")
                return
            }
            event.acked = true
            run.acknowledged += 1
        case .streamSyncResponse(let page)?:
            if frame.requestID == auditRequestID {
                for stream in page.frames {
                    if let decoded = try? Frame(serializedBytes: stream.frame),
                        let seen = describe(decoded, position: stream.position)
                    {
                        audit.append(seen)
                    }
                }
                if page.hasMore { requestAuditPage(after: page.nextAfterPosition) } else { auditDone = true }
                return
            }
            guard frame.requestID == syncRequestID else {
                run.problems.append("\(name): a stream_sync_response to \(frame.requestID), not asked")
                return
            }
            if page.errorCode != 0 || page.truncated {
                run.problems.append("\(name): stream sync error \(page.errorCode) truncated \(page.truncated)")
            }
            for stream in page.frames {
                do {
                    let decoded = try Frame(serializedBytes: stream.frame)
                    if decoded.streamPosition != stream.position {
                        run.problems.append(
                            "\(name): stream frame \(stream.position) carries position \(decoded.streamPosition)"
                        )
                    }
                    handOn(decoded, position: stream.position, how: "by sync")
                } catch {
                    run.problems.append("\(name): stream frame \(stream.position) does not decode: \(error)")
                }
            }
            if page.hasMore {
                requestStreamPage(after: page.nextAfterPosition)
            } else {
                caughtUp = true
            }
        case .systemNotice(let notice)? where frame.streamPosition == 0 && notice.params["code"] == "unavailable":
            // A forwarding node tells its clients why it drops them when the routing node went away.
            run.unavailableNotices += 1
        default:
            if frame.streamPosition != 0 {
                if !caughtUp { run.problems.append("\(name): a live frame before it caught up") }
                handOn(frame, position: frame.streamPosition, how: "live")
            } else {
                run.problems.append("\(name): an unexpected frame \(String(describing: frame.payload?.kind))")
            }
        }
    }

    private func describe(_ frame: Frame, position: UInt64) -> Seen? {
        let kind = frame.payload?.kind
        switch frame.payload {
        case .message(let m)?:
            return Seen(
                position: position,
                identity: .message("\(m.senderID)/\(m.clientMsgID)"),
                kind: kind,
                direction: m.direction,
                seq: m.seq,
                conversation: conversationKey(m.conversation, sender: m.senderID)
            )
        case .reaction(let e)?: return event(e.timeMs)
        case .edit(let e)?: return event(e.timeMs)
        case .recall(let e)?: return event(e.timeMs)
        case .markRead(let e)?: return event(e.readTimeMs)
        case .receipt(let e)?: return event(e.timeMs)
        default:
            run.problems.append("\(name): a kept frame of kind \(String(describing: kind)) at \(position)")
            return nil
        }
        func event(_ id: Int64) -> Seen {
            Seen(
                position: position,
                identity: .event(id),
                kind: kind,
                direction: .unspecified,
                seq: 0,
                conversation: ""
            )
        }
    }

    /// A stream frame handed on to the app: positions only grow.
    private func handOn(_ frame: Frame, position: UInt64, how: String) {
        if position <= lastPosition {
            run.problems.append("\(name): position \(position) (\(how)) after \(lastPosition)")
        }
        lastPosition = max(lastPosition, position)
        guard let seen = describe(frame, position: position) else { return }
        self.seen.append(seen)
        if case .message(let m)? = frame.payload, m.senderID != user {
            received.append(m)
        }
    }

    // MARK: Sending

    /// The frames of op `k` of this device's script: a message, or an event (followed by a ping
    /// when the event has no answer of its own).
    private func makeOp(_ k: Int) -> [Frame] {
        let roll = Int.random(in: 0..<100, using: &generator)
        let eligible = own.filter { !$0.recallSent }
        let eventID = Int64(index + 1) * 1_000_000 + Int64(k)
        switch roll {
        case 0..<12 where !eligible.isEmpty:
            let target = eligible[Int.random(in: 0..<eligible.count, using: &generator)]
            // An emoji of its own (op k of at most 80): every reaction changes what the relay keeps
            // (one that changes nothing is kept by no one), whether an earlier one, uncertain
            // across a kill, was applied or not.
            let emoji = String(UnicodeScalar(0x1F300 + UInt32(k))!)
            return [
                sendEvent(
                    .reaction,
                    id: eventID,
                    about: target,
                    Frame(
                        .reaction(
                            ReactionEvent.with {
                                $0.message = reference(target)
                                $0.userID = user
                                $0.emoji = emoji
                                $0.action = .add
                                $0.timeMs = eventID
                            }
                        )
                    )
                )
            ]
        case 12..<20 where !eligible.isEmpty:
            let target = eligible[Int.random(in: 0..<eligible.count, using: &generator)]
            var edited = target.message
            edited.elements = [.text("edited \(k)")]
            return [
                sendEvent(
                    .edit,
                    id: eventID,
                    about: target,
                    Frame(
                        .edit(
                            EditEvent.with {
                                $0.message = reference(target)
                                $0.newMessage = edited
                                $0.editorID = user
                                $0.timeMs = eventID
                            }
                        )
                    )
                )
            ]
        case 20..<25 where !eligible.isEmpty:
            let target = eligible[Int.random(in: 0..<eligible.count, using: &generator)]
            target.recallSent = true
            let recall = Frame.recall(reference(target), by: user, timeMs: eventID)
            return [sendEvent(.recall, id: eventID, about: target, recall)]
        case 25..<31:
            let markRead = Frame(
                .markRead(
                    MarkReadEvent.with {
                        $0.conversation = .oneToOne(run.users[(index + k) % run.users.count])
                        $0.userID = user
                        $0.readTimeMs = eventID
                        $0.readSeq = UInt64(k)
                    }
                )
            )
            return unanswered(.markRead, id: eventID, users: [user], markRead)
        case 31..<38 where !received.isEmpty:
            let message = received[Int.random(in: 0..<received.count, using: &generator)]
            let receipt = Frame.readReceipt(for: message.reference, by: user, timeMs: eventID)
            return unanswered(.receipt, id: eventID, users: [message.senderID, user], receipt)
        case 38..<62 where run.crew.contains(user):
            return [sendMessage(k, in: .group("crew"), to: Array(run.crew))]
        default:
            var peer = run.users[Int.random(in: 0..<run.users.count, using: &generator)]
            if peer == user { peer = run.users[(run.users.firstIndex(of: user)! + 1) % run.users.count] }
            return [sendMessage(k, in: .oneToOne(peer), to: [user, peer])]
        }
    }

    private func reference(_ sent: SentMessage) -> MessageRef {
        MessageRef.with {
            $0.clientMsgID = sent.message.clientMsgID
            $0.serverMsgUID = sent.uid ?? ""
            $0.seq = sent.seq ?? 0
            $0.conversation = sent.message.conversation ?? Conversation()
            $0.senderID = user
        }
    }

    private func sendMessage(_ k: Int, in conversation: Conversation, to users: [String]) -> Frame {
        var message = Message(
            from: user,
            in: conversation,
            elements: [.text("\(name) #\(k)")],
            clientMsgID: "\(user)-\(device)-\(k)",
            clientTimeMs: 1_700_000_000_000 + Int64(k)
        )
        message.random = UInt32(index * 1000 + k)
        message.senderDeviceID = device
        let sent = SentMessage(message: message, origin: index, expected: run.devices(of: users, except: index))
        run.messages[sent.key] = sent
        outstanding[message.clientMsgID] = .message(sent)
        return Frame(message)
    }

    private func sendEvent(_ kind: Frame.Payload.Kind, id: Int64, about target: SentMessage, _ frame: Frame) -> Frame {
        let users = run.users(of: target.message.conversation ?? Conversation(), sender: user)
        let event = SentEvent(id: id, kind: kind, origin: index, expected: run.devices(of: users, except: index))
        run.events[id] = event
        var frame = frame
        frame.requestID = nextRequestID()
        outstanding["r\(frame.requestID)"] = .event(event)
        return frame
    }

    /// An event the relay does not answer, followed by a ping: its pong comes once the event is committed.
    private func unanswered(_ kind: Frame.Payload.Kind, id: Int64, users: [String], _ frame: Frame) -> [Frame] {
        let event = SentEvent(id: id, kind: kind, origin: index, expected: run.devices(of: users, except: index))
        run.events[id] = event
        let ping = RelayProtocol.answer(.ping(Ping.with { $0.id = UInt64(id) }), requestID: nextRequestID())
        outstanding["r\(ping.requestID)"] = .event(event)
        return [frame, ping]
    }
}
#endif
