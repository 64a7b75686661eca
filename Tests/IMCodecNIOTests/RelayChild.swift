#if Tools
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import IMCodec
import IMCodecTestSupport
import NIOConcurrencyHelpers
import Testing

@testable import imcodec_relay

/// A temporary folder holding a data directory, the auth secret (``TestAuth/secret``) and a groups
/// file; and the store of the relays started on it: SQLite in the data directory, or a PostgreSQL
/// database of its own (``database``).
struct TemporaryFolder {
    let path: String
    /// The database the relays keep their store in, or `nil` for SQLite in ``dataDir``.
    let database: PostgresTestDatabase?
    var dataDir: String { path + "/data" }
    var secretFile: String { path + "/auth-secret" }
    var groupsFile: String { path + "/groups.txt" }
    /// The `serve` arguments that choose the store.
    var storeArguments: [String] { database?.serveArguments ?? [] }

    init(_ name: String, database: PostgresTestDatabase? = nil) throws {
        path =
            FileManager.default.temporaryDirectory
            .appendingPathComponent("imcodec-relay-\(name)-\(getpid())-\(UUID().uuidString.prefix(8))").path
        self.database = database
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        try writeFile(secretFile, TestAuth.secret + "\n")
        try writeFile(groupsFile, "crew: u0 u1 u2 u3 u4\n")
    }

    /// A folder whose relays keep their store on `backend` (a new PostgreSQL database for `.postgresql`).
    init(_ name: String, store backend: StoreBackend) async throws {
        switch backend {
        case .sqlite: try self.init(name)
        case .postgresql: try self.init("\(name)-pg", database: try await PostgresTestDatabase())
        }
    }

    /// Deletes the folder, and drops the database.
    func remove() {
        try? FileManager.default.removeItem(atPath: path)
        database?.drop()
    }
}

/// `imcodec-relay serve --port 0 --data-dir DIR --auth-secret-file FILE --quiet` as a child process;
/// its stdout and stderr go to files. Killed with SIGKILL by ``forceKill()`` (called by a `defer` on
/// every path), when released, and, where util-linux's `setpriv --pdeathsig` works (Linux), when
/// the test process ends; elsewhere a relay started directly can outlive a test process that
/// crashed.
final class RelayChild {
    /// util-linux's `setpriv`, which sets the parent-death signal before it runs the relay (Linux).
    static let setpriv = "/usr/bin/setpriv"

    /// Whether `setpriv --pdeathsig` runs here: a `setpriv` older than util-linux 2.33 has no such
    /// option, and every relay started through it would fail to start. Checked once.
    static let setprivSetsParentDeathSignal: Bool = {
        guard FileManager.default.isExecutableFile(atPath: setpriv),
            let probe = try? ChildProcess(setpriv, ["--pdeathsig", "KILL", "--", "/bin/true"])
        else { return false }
        for _ in 0..<5_000 where probe.isRunning { usleep(1_000) }
        return probe.termination == .exited(0)
    }()
    /// The relay (or `setpriv`, which runs it).
    let process: ChildProcess
    private let outFile: URL
    private let errFile: URL

    /// Starts the relay; does not wait for it.
    init(folder: TemporaryFolder, extra: [String] = []) throws {
        let executable = try #require(
            RelayExecutable.url,
            "the imcodec-relay executable was not built next to the tests"
        )
        let id = UUID().uuidString.prefix(8)
        outFile = URL(fileURLWithPath: folder.path + "/relay-\(id).out")
        errFile = URL(fileURLWithPath: folder.path + "/relay-\(id).err")
        _ = FileManager.default.createFile(atPath: outFile.path, contents: nil)
        _ = FileManager.default.createFile(atPath: errFile.path, contents: nil)
        let arguments =
            [
                "serve", "--port", "0", "--data-dir", folder.dataDir, "--auth-secret-file", folder.secretFile,
                "--quiet", "--heartbeat-interval", "3600",
                // The loads send one peer as fast as acks come: what the relay keeps, not what one
                // sender may send one peer (`--peer-rate`).
                "--peer-rate", "0",
            ] + folder.storeArguments + extra
        var command = [executable.path] + arguments
        if Self.setprivSetsParentDeathSignal {
            // The relay gets SIGKILL when the thread that spawned it ends, which is when the test
            // process ends (see runWithNoSignalsBlocked): none outlives a crashed test process.
            command = [Self.setpriv, "--pdeathsig", "KILL", "--"] + command
        }
        let (output, error) = (outFile.path, errFile.path)
        process = try runWithNoSignalsBlocked { [command] in
            try ChildProcess(command[0], Array(command.dropFirst()), output: output, error: error)
        }
    }

    /// Starts the relay and waits until it prints its port.
    static func start(folder: TemporaryFolder, extra: [String] = []) async throws -> RelayChild {
        let child = try RelayChild(folder: folder, extra: extra)
        let started = await eventually(30) { child.listeningPort != nil || !child.process.isRunning }
        guard started, child.listeningPort != nil else {
            child.forceKill()
            throw RelayChildError(description: "the relay did not start: \(child.stdout)\(child.stderr)")
        }
        return child
    }

    /// Starts the relay with `--standby` on a database another relay serves, and waits until it
    /// says it is waiting (``standbyLine``).
    static func startStandby(folder: TemporaryFolder, extra: [String] = []) async throws -> RelayChild {
        let child = try RelayChild(folder: folder, extra: ["--standby"] + extra)
        let waiting = await eventually(30) { child.standbyLine != nil || !child.process.isRunning }
        guard waiting, child.standbyLine != nil, child.listeningPort == nil else {
            child.forceKill()
            throw RelayChildError(description: "the relay did not stand by: \(child.stdout)\(child.stderr)")
        }
        return child
    }

    /// Starts a relay node (`--node-port 0`) on a PostgreSQL database, and waits until it routes
    /// (it prints its listening line) or forwards to the node that does (its link is up).
    static func startNode(folder: TemporaryFolder, extra: [String] = []) async throws -> RelayChild {
        let child = try RelayChild(folder: folder, extra: ["--node-port", "0"] + extra)
        let ready = await eventually(30) {
            child.listeningPort != nil || child.forwardingLinks > 0 || !child.process.isRunning
        }
        guard ready, child.process.isRunning else {
            child.forceKill()
            throw RelayChildError(description: "the relay node did not start: \(child.stdout)\(child.stderr)")
        }
        return child
    }

    /// Starts two relay nodes on `folder`'s PostgreSQL database, the first routing and the second
    /// forwarding to it, and checks that they do; the caller kills both.
    static func startTwoNodes(
        folder: TemporaryFolder,
        extra: [String] = []
    ) async throws -> (routing: RelayChild, forwarding: RelayChild) {
        let routing = try await startNode(folder: folder, extra: extra)
        let forwarding: RelayChild
        do {
            forwarding = try await startNode(folder: folder, extra: extra)
        } catch {
            routing.forceKill()
            throw error
        }
        guard routing.listeningPort != nil, forwarding.listeningPort == nil, forwarding.forwardingLinks == 1 else {
            routing.forceKill()
            forwarding.forceKill()
            throw RelayChildError(description: "two nodes: \(routing.stdout) / \(forwarding.stdout)")
        }
        return (routing, forwarding)
    }

    /// How many times a forwarding node linked to a routing node (`relay node: forwarding clients ...`).
    var forwardingLinks: Int {
        stdout.split(separator: "\n").count { $0.hasPrefix("relay node: forwarding clients to the relay that routes") }
    }

    /// The metrics port of a forwarding node started with `--metrics-port` (`relay node: metrics on
    /// http://127.0.0.1:PORT/metrics`).
    var nodeMetricsPort: Int? {
        let marker = "relay node: metrics on http://127.0.0.1:"
        guard let line = stdout.split(separator: "\n").first(where: { $0.hasPrefix(marker) }) else { return nil }
        return Int(line.dropFirst(marker.count).prefix { $0.isNumber })
    }

    /// The metrics port of a routing relay started with `--metrics-port` (`relay metrics on
    /// http://127.0.0.1:PORT/metrics`).
    var metricsPort: Int? {
        let marker = "relay metrics on http://127.0.0.1:"
        guard let line = stdout.split(separator: "\n").first(where: { $0.hasPrefix(marker) }) else { return nil }
        return Int(line.dropFirst(marker.count).prefix { $0.isNumber })
    }

    /// The node port a forwarding node last linked to (its last `relay node: forwarding clients to
    /// the relay that routes, at 127.0.0.1:PORT`).
    var forwardingTarget: Int? {
        let marker = "relay node: forwarding clients to the relay that routes, at 127.0.0.1:"
        guard let line = stdout.split(separator: "\n").last(where: { $0.hasPrefix(marker) }) else { return nil }
        return Int(line.dropFirst(marker.count).prefix { $0.isNumber })
    }

    /// The node port of a routing node (`relay routing for the relay nodes ...; they link to 127.0.0.1:PORT`).
    var routingNodePort: Int? {
        let marker = "they link to 127.0.0.1:"
        guard let line = stdout.split(separator: "\n").last(where: { $0.hasPrefix("relay routing for") }),
            let range = line.range(of: marker)
        else { return nil }
        return Int(line[range.upperBound...].prefix { $0.isNumber })
    }

    /// The port of a forwarding node's `relay node: listening on 127.0.0.1:PORT`, once printed.
    var nodeListeningPort: Int? {
        let prefix = "relay node: listening on 127.0.0.1:"
        guard let line = stdout.split(separator: "\n").first(where: { $0.hasPrefix(prefix) }) else { return nil }
        return Int(line.dropFirst(prefix.count).prefix { $0.isNumber })
    }

    /// The line a standby prints while another relay serves the database, once printed.
    var standbyLine: String? {
        stdout.split(separator: "\n").first { $0.hasPrefix("relay standby: another relay serves") }.map(String.init)
    }

    /// Waits until a standby took over and prints its port; throws when it stopped instead.
    func waitUntilListening() async throws {
        let started = await eventually(30) { listeningPort != nil || !process.isRunning }
        guard started, listeningPort != nil else {
            throw RelayChildError(description: "the standby did not take over: \(stdout)\(stderr)")
        }
    }

    var stdout: String { (try? String(contentsOf: outFile, encoding: .utf8)) ?? "" }
    var stderr: String { (try? String(contentsOf: errFile, encoding: .utf8)) ?? "" }

    /// The port of `relay listening on 127.0.0.1:PORT`, once printed.
    var listeningPort: Int? {
        guard let line = stdout.split(separator: "\n").first(where: { $0.hasPrefix("relay listening on 127.0.0.1:") })
        else { return nil }
        return Int(line.dropFirst("relay listening on 127.0.0.1:".count).prefix { $0.isNumber })
    }

    /// Where clients connect: where it routes, or where it forwards from (a node routes on the port
    /// it forwarded on).
    var port: Int { listeningPort ?? nodeListeningPort ?? 0 }

    /// Sends `signal` to the relay if it still runs.
    func signal(_ signal: Int32) {
        process.signal(signal)
    }

    /// Whether the relay is stopped (a SIGSTOP took effect: state `T` in `/proc/PID/stat`, Linux).
    /// A signal is sent at once but acted on when the kernel next runs the process, which a loaded
    /// machine may put off.
    var isStopped: Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(process.pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return false }
        return stat[stat.index(after: close)...].split(separator: " ").first == "T"
    }

    /// Waits (while anything makes progress, see ``eventually(_:_:)``, at most 20 s of silence) until the relay exited.
    func waitForExit() async -> Bool {
        await eventually(20) { !process.isRunning }
    }

    /// The exit status, if the relay exited normally.
    var exitStatus: Int32? {
        if case .exited(let status)? = process.termination { status } else { nil }
    }

    /// The signal that ended the relay, if one did.
    var terminatedBySignal: Int32? {
        if case .signalled(let signal)? = process.termination { signal } else { nil }
    }

    /// Kills the relay with SIGKILL if it still runs, and waits (a few seconds at most) until it is
    /// gone. (Not with `waitUntilExit()`, which leaks a weak reference's side table, which
    /// LeakSanitizer reports.)
    func forceKill() {
        guard process.isRunning else { return }
        process.signal(SIGKILL)
        for _ in 0..<5_000 where process.isRunning { usleep(1_000) }
    }

    deinit { forceKill() }
}

/// Starts `process` from one thread that blocks no signal and lives as long as the test process.
///
/// - A child inherits the signal mask of the thread that spawns it, and the threads async tests run
///   on (libdispatch's workers) block nearly every signal: a relay started from one of them never
///   receives SIGTERM.
/// - A child started through `setpriv --pdeathsig KILL` (``RelayChild``) gets SIGKILL when the
///   thread that spawned it ends. This thread ends only with the test process, so a test process
///   that crashes or is killed leaves no relay running behind it.
func runWithNoSignalsBlocked(_ start: @escaping @Sendable () throws -> ChildProcess) throws -> ChildProcess {
    try ChildSpawner.shared.run(start)
}

/// The thread behind ``runWithNoSignalsBlocked(_:)``: it starts one child at a time, for any
/// caller, and never exits.
private final class ChildSpawner: @unchecked Sendable {
    static let shared = ChildSpawner()

    private struct Request {
        let start: @Sendable () throws -> ChildProcess
        let finished: (Result<ChildProcess, any Error>) -> Void
    }

    private let lock = NSLock()
    private var requests: [Request] = []
    private let pending = DispatchSemaphore(value: 0)

    private init() {
        let thread = Thread { [self] in
            var none = sigset_t()
            sigemptyset(&none)
            pthread_sigmask(SIG_SETMASK, &none, nil)
            while true {
                pending.wait()
                let request = lock.withLock { requests.removeFirst() }
                request.finished(Result { try request.start() })
            }
        }
        thread.name = "child spawner"
        thread.start()
    }

    /// Runs `start` on the spawner thread and waits until the child started (or failed to).
    func run(_ start: @escaping @Sendable () throws -> ChildProcess) throws -> ChildProcess {
        let outcome = NIOLockedValueBox<Result<ChildProcess, any Error>?>(nil)
        let done = DispatchSemaphore(value: 0)
        lock.withLock {
            requests.append(
                Request(start: start) { result in
                    outcome.withLockedValue { $0 = result }
                    done.signal()
                }
            )
        }
        pending.signal()
        done.wait()
        return try outcome.withLockedValue { $0! }.get()
    }
}

extension RelayChild {
    /// One real run on `folder`'s store: the relay starts (with `extra`), alice logs in from `desk`
    /// and sends bob one message ("kept"), acknowledged with error 0, then the relay is stopped with
    /// SIGTERM. Returns the exited relay, for its output and exit status.
    @discardableResult
    static func runOnce(folder: TemporaryFolder, extra: [String] = []) async throws -> RelayChild {
        try await withClientGroup { group in
            let relay = try await start(folder: folder, extra: extra)
            defer { relay.forceKill() }
            let alice = try await TestClient.connect(port: relay.port, as: "alice", group: group, deviceID: "desk")
            try await alice.send(Frame(Message.c2cText(from: "alice", to: "bob", "kept", clientMsgID: "k-1")))
            #expect(await eventually { alice.collector.acks.count == 1 })
            #expect(alice.collector.acks.first?.errorCode == 0)
            await alice.close()
            relay.signal(SIGTERM)
            #expect(await relay.waitForExit())
            return relay
        }
    }
}

struct RelayChildError: Error, CustomStringConvertible {
    let description: String
}
#endif
