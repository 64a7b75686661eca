#if Tools
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import ArgumentParser
import Foundation
import IMCodec
import IMCodecNIO
import Logging
import NIOConcurrencyHelpers
import NIOCore
import ServiceLifecycle

/// `imcodec-relay`: a loopback relay server for IMCodec frames and a chat client for it.
///
/// ```
/// imcodec-relay serve --port 7070 [--data-dir imcodec-relay-data] [--auth-secret-file FILE] [--groups groups.txt]
/// imcodec-relay token --user alice [--ttl 86400] [--data-dir imcodec-relay-data | --auth-secret-file FILE]
/// imcodec-relay chat --port 7070 --user alice [--token JWT] [--join team] [--to bob] [--send "@bob hi"]...
/// ```
///
/// The wire is IMCodec `Frame`s in Google's delimited format (a varint length before each frame).
/// The relay protocol on top of it (the session layer: login, sync, ping, join and leave, presence;
/// acks, error notices) is described on
/// ``RelayProtocol`` and in README.md beside this file.
@main
struct RelayCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "imcodec-relay",
        abstract: "A loopback relay server for IMCodec frames, and a chat client for it.",
        discussion: """
            Exit status: 0 success, 1 failure (a refused send, no relay, a damaged store), \
            2 usage (an unknown command, option or help topic, or a bad option value).
            """,
        version: "imcodec-relay \(IMCodecRelease.version) (IMCodec \(IMCodecRelease.version), schema "
            + "\(IMCodecRelease.schemaPackage), schema_version \(IMCodecRelease.schemaVersion))",
        subcommands: [Serve.self, Token.self, Chat.self, Bench.self, BenchGroup.self]
    )

    /// Exits 2 on a usage error, as `imcodec` does (ArgumentParser's default is 64), and for
    /// `help TOPIC` when TOPIC names no subcommand (ArgumentParser prints the root's help and exits 0).
    static func main() {
        do {
            if let topic = unknownHelpTopic(Array(CommandLine.arguments.dropFirst())) {
                emitError(
                    "imcodec-relay: unknown help topic '\(topic)'; the topics are: "
                        + configuration.subcommands.map { $0._commandName }.joined(separator: ", ")
                )
                Glibc.exit(2)
            }
            var command = try parseAsRoot()
            try command.run()
        } catch {
            guard exitCode(for: error) == .validationFailure else { exit(withError: error) }
            emitError(fullMessage(for: error))
            Glibc.exit(2)
        }
    }
}

extension RelayCommand {
    /// The first word of `help WORD...` that names no subcommand (`nil` when every word names one,
    /// or when `arguments` do not ask for help); as `imcodec` checks its own.
    static func unknownHelpTopic(_ arguments: [String]) -> String? {
        guard arguments.first == "help" else { return nil }
        var command: any ParsableCommand.Type = self
        for word in arguments.dropFirst() where !word.hasPrefix("-") {
            guard
                let next = command.configuration.subcommands.first(where: {
                    $0._commandName == word || $0.configuration.aliases.contains(word)
                })
            else { return word }
            command = next
        }
        return nil
    }
}

/// SIGTERM and SIGINT while a standby relay waits for its database, or loads it once it took the
/// lock, and while a relay node forwards its clients to the node that routes. The relay has written
/// nothing and acknowledged nothing, so the handler only wakes a thread of its own (one `write` to
/// a pipe, async-signal-safe), which runs the stop it was given (a forwarding node's graceful
/// shutdown: ``EdgeNode/shutdown(drainTimeout:timeout:)``), prints its line and exits 0 (the server rolls back
/// what the session had begun and releases the lock). ``restore()`` gives the signals back their
/// default action before swift-service-lifecycle handles them, once the relay serves. (Not with a
/// dispatch signal source: one cancelled before swift-service-lifecycle makes its own leaves SIGTERM
/// to its default action on Linux, and the serving relay would die of it instead of shutting down.)
enum StandbySignals {
    /// The pipe's write end, which the handler writes a byte to; set before the handler is installed.
    nonisolated(unsafe) private static var wake: Int32 = -1

    /// Installs the handler for SIGTERM and SIGINT; `stop` runs on the woken thread, which then exits 0.
    static func install(stop: @escaping @Sendable () -> Void) {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else {
            emitError("imcodec-relay: cannot make a pipe for the stop signals: \(String(cString: strerror(errno)))")
            Glibc.exit(1)
        }
        wake = ends[1]
        let readEnd = ends[0]
        Thread.detachNewThread {
            var byte: UInt8 = 0
            while read(readEnd, &byte, 1) < 0, errno == EINTR {}
            stop()
            _exit(0)
        }
        for number in [SIGTERM, SIGINT] {
            var action = sigaction()
            let handler: @convention(c) (Int32) -> Void = { _ in
                var byte: UInt8 = 1
                _ = write(StandbySignals.wake, &byte, 1)
            }
            #if canImport(Darwin)
            action.__sigaction_u.__sa_handler = handler
            #else
            action.__sigaction_handler.sa_handler = handler
            #endif
            sigemptyset(&action.sa_mask)
            sigaction(number, &action, nil)
        }
    }

    /// Gives SIGTERM and SIGINT back their default action.
    static func restore() {
        signal(SIGTERM, SIG_DFL)
        signal(SIGINT, SIG_DFL)
    }
}

/// Writes a line to standard output at once, with one `write(2)` and no stdio lock (the main
/// thread may be blocked in `readLine()` holding stdin's lock, so `fflush(NULL)` would deadlock).
func emit(_ line: String) {
    let bytes = Array((line + "\n").utf8)
    var offset = 0
    while offset < bytes.count {
        let n = bytes.withUnsafeBytes { write(1, $0.baseAddress! + offset, $0.count - offset) }
        if n <= 0 { break }
        offset += n
    }
}

/// Writes a line to standard error at once (see ``emit(_:)``).
func emitError(_ line: String) {
    let bytes = Array((line + "\n").utf8)
    var offset = 0
    while offset < bytes.count {
        let n = bytes.withUnsafeBytes { write(2, $0.baseAddress! + offset, $0.count - offset) }
        if n <= 0 { break }
        offset += n
    }
}

/// Parses a groups file: one group per line, `GROUP: USER USER ...`; `#` starts a comment.
func parseGroups(_ text: String) throws -> [String: Set<String>] {
    var groups: [String: Set<String>] = [:]
    for (number, rawLine) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
        let line = rawLine.prefix { $0 != "#" }.trimmingSpaces()
        if line.isEmpty { continue }
        guard let colon = line.firstIndex(of: ":") else {
            throw ValidationError("groups file line \(number + 1): expected \"GROUP: USER USER ...\"")
        }
        let group = line[..<colon].trimmingSpaces()
        guard !group.isEmpty else { throw ValidationError("groups file line \(number + 1): empty group id") }
        let members = line[line.index(after: colon)...].split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "," })
            .map(String.init)
        // No client could name the group, or log in as the member (RelayProtocol.isAcceptedID).
        if let refused = ([group] + members).first(where: { !RelayProtocol.isAcceptedID($0) }) {
            let what =
                if !RelayProtocol.fitsIDBound(refused) {
                    "has \(refused.utf8.count) bytes"
                } else if RelayProtocol.holdsNUL(refused) {
                    "holds U+0000"
                } else {
                    "is not in NFC"
                }
            throw ValidationError(
                "groups file line \(number + 1): the id \"\(refused.prefix(16))…\" \(what); " + RelayProtocol.idReason
            )
        }
        groups[group, default: []].formUnion(members)
    }
    return groups
}

/// Raises this process's soft limit on open files to its hard limit (a connection is a file
/// descriptor: the default soft limit, often 1,024, would cap the relay and the benchmarks' clients
/// far below what the machine allows). Children inherit it.
func raiseOpenFileLimit() {
    var limit = rlimit()
    guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur < limit.rlim_max else { return }
    limit.rlim_cur = limit.rlim_max
    _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
}

func readTextFile(_ path: String) throws -> String {
    guard let file = fopen(path, "r") else { throw ValidationError("cannot open \(path)") }
    defer { fclose(file) }
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 4096)
    while true {
        let n = fread(&chunk, 1, chunk.count, file)
        if n <= 0 { break }
        bytes.append(contentsOf: chunk[0..<n])
    }
    return String(decoding: bytes, as: UTF8.self)
}

extension RelayCommand {
    /// `imcodec-relay serve`.
    struct Serve: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Run the relay server (on loopback, or anywhere with TLS)."
        )

        @Option(
            help:
                "The address to listen on. Other than loopback it needs --tls-cert and --tls-key (or --insecure-no-tls)."
        )
        var host = "127.0.0.1"

        @Option(help: "A PEM certificate chain: TLS on the TCP port and wss:// on the WebSocket port (with --tls-key).")
        var tlsCert: String?

        @Option(help: "The PEM private key of --tls-cert.")
        var tlsKey: String?

        @Flag(
            help:
                "Listen on a non-loopback --host without TLS: every frame and login token crosses the network in the clear."
        )
        var insecureNoTls = false

        @Option(help: "The port to listen on (0 picks a free one and prints it).")
        var port = 7070

        @Option(help: "Also accept WebSocket connections on this port, one frame per binary message (0 picks one).")
        var websocketPort: Int?

        @Option(help: "A groups file: lines of \"GROUP: USER USER ...\".")
        var groups: String?

        @Option(help: "The largest frame accepted, in bytes.")
        var maxFrameSize = 1 << 20

        @Option(help: "Milliseconds a frame may stay incomplete before the connection is closed.")
        var frameWaitMs = 10_000

        @Option(help: "Milliseconds a new connection has to log in.")
        var loginTimeoutMs = 10_000

        @Option(help: "The most bytes queued for one client before it is dropped as a slow consumer.")
        var maxOutboundBytes = 8 << 20

        @Option(
            help: """
                Messages a second a group, chatroom or ultra group carries before it is busy: its \
                low-priority messages are then refused (1008) until the next second (0: never busy).
                """
        )
        var groupMessageRate = 40

        @Option(
            help: """
                Typing events and status updates a second one user may have the relay fan out, in \
                bursts of up to four seconds' worth; past it typing is dropped and a status update is \
                refused (3014) (0: no bound; at most 1,000,000,000).
                """
        )
        var liveUpdateRate = 5

        @Option(
            help: """
                Users a second one user's messages, kept events, extension updates, receipts, joins and \
                notices may reach (each costs the users it reaches), in bursts of up to five seconds' \
                worth; past it they are refused (1012, 3014) (0: no bound; at most 1,000,000,000).
                """
        )
        var fanOutRate = 20_000

        @Option(
            help: """
                One-time keys a minute one user's key fetches may take from one user's devices (its own \
                included), in bursts of up to a minute's worth; past it such a fetch is refused (3014) \
                (0: no bound; at most 1,000,000,000).
                """
        )
        var keyFetchRate = 100

        @Option(
            help: """
                Groups, chatrooms and channels a minute one user may join, in bursts of up to a minute's \
                worth; past it a join is refused (3014) (0: no bound; at most 1,000,000,000).
                """
        )
        var joinRate = 10

        @Option(
            help: """
                Logins a minute one user may make, across its devices, in bursts of up to a minute's worth; \
                past it a login is refused (2008) and its connection closed (0: no bound; at most \
                1,000,000,000).
                """
        )
        var loginRate = 60

        @Option(
            help: """
                One-to-one messages, kept one-to-one events and extension updates, system notices and \
                receipts a second one user may send one other user, in bursts of up to five seconds' \
                worth; past it they are refused (1012, 3014) (0: no bound; at most 1,000,000,000).
                """
        )
        var peerRate = 50

        @Option(
            help: """
                The heartbeat interval, in seconds, the login result asks clients to ping at; a session \
                silent for 3 intervals is closed (0: no pings asked for, no session closed).
                """
        )
        var heartbeatInterval: UInt32 = 30

        @Option(help: "The most messages kept per conversation for sync (the oldest are dropped past it).")
        var maxStoredMessages = 10_000

        @Option(help: "The most frames kept in each user's stream (the oldest are dropped past it).")
        var maxStreamEntries = 10_000

        @Option(
            help: """
                The most groups, chatrooms and ultra-group channels a user may be in when it joins one \
                (the groups file may put it in more); a join past it is refused with 3012.
                """
        )
        var maxJoinedGroups = 1_000

        @Option(
            help: """
                The most devices (device ids) the relay keeps per user. A login from a new device past it \
                makes the relay forget the user's least recently seen offline device, or is refused \
                with 2005 when all are online.
                """
        )
        var maxDevicesPerUser = 16

        @Option(
            help: """
                The most one-to-one conversations a user may have when it starts one; a first message \
                to a new peer past it is refused with 1010, a view of one or a kept event (a call) \
                that starts one with 3012.
                """
        )
        var maxDirectConversations = 10_000

        @Option(
            help:
                "The directory of the relay's database (relay.sqlite) and, unless --auth-secret-file is given, its auth secret."
        )
        var dataDir = RelayFiles.defaultDataDirectory

        @Option(
            help: """
                Where the relay keeps what it promises: sqlite (in --data-dir, durable), memory (lost on exit), \
                or postgresql://USER[:PASSWORD]@HOST[:PORT]/DB (a PostgreSQL database one relay routes for at a \
                time; see --standby and --node-port).
                """
        )
        var store = "sqlite"

        @Flag(
            help: """
                With a PostgreSQL --store that another relay serves: wait, without listening, and take over \
                (load the store, then listen) when that relay stops, dies or loses its connection.
                """
        )
        var standby = false

        @Option(
            help: """
                With a PostgreSQL --store: run as one of several relay nodes serving the database. The node \
                that holds the database's lock routes and commits, and takes links from the others on this \
                port (0 picks a free one); every other node accepts clients on its own ports and forwards \
                them to it, and takes over when it stops.
                """
        )
        var nodePort: Int?

        @Option(help: "The address the other nodes reach --node-port at (default: --host).")
        var nodeAddress: String?

        @Option(
            help:
                "SQLite's synchronous setting: FULL (a commit survives a power loss) or NORMAL (it survives a killed process)."
        )
        var synchronous = "FULL"

        @Option(
            help:
                "A file whose first line (at least 32 characters) is the HMAC key login tokens are signed with; default: DATA-DIR/auth-secret, created if missing."
        )
        var authSecretFile: String?

        @Option(
            help:
                "Serve metrics in Prometheus' text format at http://HOST:PORT/metrics (0 picks a free port and prints it); default: no metrics endpoint."
        )
        var metricsPort: Int?

        @Option(
            help:
                "The least severe log level printed: trace, debug, info, notice, warning, error or critical (default info; warning with --quiet)."
        )
        var logLevel: String?

        @Option(
            help:
                "What the sender of a one-to-one message to a user who blocked it is told: silent (\"sent\"; the message reaches no device of that user; Tencent's default) or error (send ack error 20007)."
        )
        var blockedSenders = "silent"

        @Flag(help: "Do not log connections and logins (the same as --log-level warning; --log-level wins).")
        var quiet = false

        /// The level the relay logs at: `--log-level`, else warning with `--quiet`, else info.
        var effectiveLogLevel: Logger.Level {
            logLevel.flatMap(Logger.Level.init(rawValue:)) ?? (quiet ? .warning : .info)
        }

        func validate() throws {
            guard (tlsCert == nil) == (tlsKey == nil) else {
                throw ValidationError("--tls-cert and --tls-key go together")
            }
            guard RelayServer.isLoopback(host) || tlsCert != nil || insecureNoTls else {
                throw ValidationError(
                    "--host \(host) is not loopback: give --tls-cert and --tls-key, or --insecure-no-tls to listen in the clear"
                )
            }
            guard maxStoredMessages > 0 else { throw ValidationError("--max-stored-messages must be positive") }
            guard maxJoinedGroups > 0 else { throw ValidationError("--max-joined-groups must be positive") }
            guard maxDevicesPerUser > 0 else { throw ValidationError("--max-devices-per-user must be positive") }
            guard maxDirectConversations > 0 else {
                throw ValidationError("--max-direct-conversations must be positive")
            }
            guard maxStreamEntries > 0 else { throw ValidationError("--max-stream-entries must be positive") }
            guard groupMessageRate >= 0 else { throw ValidationError("--group-message-rate must not be negative") }
            let rates = [
                ("--live-update-rate", liveUpdateRate), ("--fan-out-rate", fanOutRate),
                ("--key-fetch-rate", keyFetchRate), ("--join-rate", joinRate), ("--login-rate", loginRate),
                ("--peer-rate", peerRate),
            ]
            for (option, rate) in rates where !(0...Router.maxRate).contains(rate) {
                throw ValidationError("\(option) is between 0 and \(Router.maxRate)")
            }
            if PostgresURL.hasScheme(store) {
                do { _ = try PostgresURL(store) } catch { throw ValidationError("--store: \(error)") }
            } else if store != "sqlite" && store != "memory" {
                throw ValidationError("--store is sqlite, memory or postgresql://USER[:PASSWORD]@HOST[:PORT]/DB")
            }
            guard !standby || PostgresURL.hasScheme(store) else {
                throw ValidationError("--standby needs a PostgreSQL --store (a SQLite data directory has one relay)")
            }
            if let nodePort {
                guard PostgresURL.hasScheme(store) else {
                    throw ValidationError("--node-port needs a PostgreSQL --store (the nodes share its database)")
                }
                guard (0...65_535).contains(nodePort) else { throw ValidationError("--node-port is 0...65535") }
                if nodePort != 0, nodePort == port || nodePort == websocketPort || nodePort == metricsPort {
                    throw ValidationError("--node-port must differ from --port, --websocket-port and --metrics-port")
                }
            } else if nodeAddress != nil {
                throw ValidationError("--node-address goes with --node-port")
            }
            guard Router.BlockedSenders(rawValue: blockedSenders) != nil else {
                throw ValidationError("--blocked-senders is silent or error")
            }
            guard synchronous == "FULL" || synchronous == "NORMAL" else {
                throw ValidationError("--synchronous is FULL or NORMAL")
            }
            if let websocketPort, websocketPort != 0, websocketPort == port {
                throw ValidationError("--websocket-port must differ from --port")
            }
            if let metricsPort {
                guard (0...65_535).contains(metricsPort) else { throw ValidationError("--metrics-port is 0...65535") }
                if metricsPort != 0, metricsPort == port || metricsPort == websocketPort {
                    throw ValidationError("--metrics-port must differ from --port and --websocket-port")
                }
            }
            if let logLevel, Logger.Level(rawValue: logLevel) == nil {
                throw ValidationError(
                    "--log-level is one of " + Logger.Level.allCases.map(\.rawValue).joined(separator: ", ")
                )
            }
        }

        /// The relay's configuration from the options (TLS files read, groups parsed, logging
        /// installed); a TLS file that cannot be used stops `serve` with status 1.
        private func makeConfiguration() throws -> RelayConfiguration {
            var configuration = RelayConfiguration()
            configuration.host = host
            configuration.allowsPlaintextOffLoopback = insecureNoTls
            if let tlsCert, let tlsKey {
                do {
                    configuration.tls = try RelayTLS(certificateFile: tlsCert, keyFile: tlsKey)
                } catch {
                    emitError("imcodec-relay: \(error)")
                    throw ExitCode.failure
                }
            }
            configuration.port = port
            configuration.webSocketPort = websocketPort
            configuration.metricsPort = metricsPort
            configuration.codec = RelayConfiguration.codecOptions(maxFrameSize: maxFrameSize)
            configuration.maxFrameWait = .milliseconds(Int64(frameWaitMs))
            configuration.loginTimeout = .milliseconds(Int64(loginTimeoutMs))
            configuration.maxOutboundBytes = maxOutboundBytes
            configuration.groupMessageRate = groupMessageRate
            configuration.liveUpdateRate = liveUpdateRate
            configuration.fanOutRate = fanOutRate
            configuration.keyFetchRate = keyFetchRate
            configuration.joinRate = joinRate
            configuration.loginRate = loginRate
            configuration.peerRate = peerRate
            configuration.heartbeatIntervalS = heartbeatInterval
            configuration.maxMessagesPerConversation = maxStoredMessages
            configuration.maxJoinedConversations = maxJoinedGroups
            configuration.maxDevicesPerUser = maxDevicesPerUser
            configuration.maxDirectConversations = maxDirectConversations
            configuration.maxStreamEntries = maxStreamEntries
            configuration.blockedSenders = Router.BlockedSenders(rawValue: blockedSenders) ?? .silent
            if let groups { configuration.groups = try parseGroups(try readTextFile(groups)) }
            // Every swift-log logger of the process (the relay's, swift-service-lifecycle's) prints
            // through RelayLogHandler; `serve` is the only code that installs it, once.
            LoggingSystem.bootstrap { label in RelayLogHandler(label: label) }
            var logger = Logger(label: "imcodec-relay")
            logger.logLevel = effectiveLogLevel
            configuration.logger = logger
            configuration.onFatal = { reason in
                emitError("imcodec-relay: \(reason); stopping (clients resend what was not acknowledged)")
                Glibc.exit(1)
            }
            return configuration
        }

        func run() throws {
            raiseOpenFileLimit()
            var configuration = try makeConfiguration()
            // A parent that blocked SIGTERM or SIGINT (an async test, a supervisor) passes its mask on:
            // the relay must still stop when told to.
            var stopSignals = sigset_t()
            sigemptyset(&stopSignals)
            sigaddset(&stopSignals, SIGTERM)
            sigaddset(&stopSignals, SIGINT)
            sigprocmask(SIG_UNBLOCK, &stopSignals, nil)
            let files = RelayFiles(dataDirectory: dataDir)
            let secret: String
            do {
                try files.createDataDirectory()
                if store == "sqlite" {
                    try files.lock()
                    configuration.store = .sqlite(path: files.databasePath, synchronous: synchronous)
                } else if PostgresURL.hasScheme(store) {
                    // validate() parsed it; the database's own lock keeps a second relay out.
                    configuration.store = .postgres(try PostgresURL(store))
                }
                let loaded = try RelayAuthenticator.loadOrCreateSecret(
                    at: authSecretFile ?? files.secretPath,
                    create: authSecretFile == nil
                )
                secret = loaded.secret
                if loaded.created { emit("relay: created the auth secret \(files.secretPath) (mode 0600)") }
            } catch {
                emitError("imcodec-relay: \(error)")
                throw ExitCode.failure
            }
            configuration.authenticator = try runAsync { try await RelayAuthenticator(secret: secret) }
            let standbyStopped = "relay standby stopped before it took over; the database is as it was"
            if let nodePort {
                let forwarding = NIOLockedValueBox<EdgeNode?>(nil)
                configuration.node = NodeLink.Options(
                    port: nodePort,
                    advertisedHost: nodeAddress ?? host,
                    announce: { emit("relay node: \($0)") },
                    forwarding: { edge in forwarding.withLockedValue { $0 = edge } }
                )
                // Twice the store's timeout for the routing node's answers (EdgeNode.shutdown).
                let drainTimeout: TimeAmount =
                    if case .postgres(let url) = configuration.store {
                        .seconds(Int64(2 * url.timeoutSeconds))
                    } else {
                        .seconds(Int64(2 * PostgresURL.defaultTimeoutSeconds))
                    }
                StandbySignals.install {
                    guard let edge = forwarding.withLockedValue({ $0 }), edge.shutdown(drainTimeout: drainTimeout)
                    else {
                        return emit(standbyStopped)
                    }
                    emit(
                        "relay node stopped: every client was told kicked_offline (server shutdown); it had "
                            + "acknowledged nothing itself"
                    )
                }
                configuration.standby = PostgresRelayStore.Standby { emit("relay node: \($0)") }
            } else if standby {
                StandbySignals.install { emit(standbyStopped) }
                configuration.standby = PostgresRelayStore.Standby { emit("relay standby: \($0)") }
            }
            let server: RelayServer
            do {
                defer { if configuration.standby != nil { StandbySignals.restore() } }
                server = try RelayServer.start(configuration).wait()
            } catch let error as RelayStoreError {
                if case .postgres = configuration.store {
                    emitError(
                        "imcodec-relay: \(error.description); the relay stops and changes nothing in the database"
                    )
                } else {
                    emitError(
                        "imcodec-relay: \(error.description); the relay stops and leaves the file as it is (restore it from a backup, or move it away to start empty)"
                    )
                }
                throw ExitCode.failure
            }
            announce(server, configuration)
            // Until SIGTERM or SIGINT: then a graceful shutdown (RelayServer.shutdown()), and exit 0.
            // swift-service-lifecycle's own lines (at info and below) only when debugging.
            var lifecycleLogger = Logger(label: "imcodec-relay.lifecycle")
            let level = effectiveLogLevel
            lifecycleLogger.logLevel = level <= .debug ? level : max(level, .warning)
            let services = ServiceGroup(
                services: [RelayService(server: server)],
                gracefulShutdownSignals: [.sigterm, .sigint],
                cancellationSignals: [],
                logger: lifecycleLogger
            )
            try runAsync { try await services.run() }
            emit("relay stopped: every connection was told kicked_offline (server shutdown); the store is closed")
        }

        /// Prints where the relay keeps its store and where it listens.
        private func announce(_ server: RelayServer, _ configuration: RelayConfiguration) {
            emit("relay store: \(server.storeDescription)")
            let groupList = configuration.groups.keys.sorted().map { "#\($0)" }.joined(separator: " ")
            emit(
                "relay listening on \(host):\(server.port)" + (configuration.tls == nil ? "" : " (TLS)")
                    + (groupList.isEmpty ? "" : "; groups \(groupList)")
            )
            func authority(_ port: Int) -> String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
            if let webSocketPort = server.webSocketPort {
                emit(
                    "relay accepting WebSocket on \(configuration.tls == nil ? "ws" : "wss")://\(authority(webSocketPort))/"
                )
            }
            if let metricsPort = server.metricsPort {
                emit("relay metrics on http://\(authority(metricsPort))\(MetricsHTTPHandler.path)")
            }
            if let nodePort = server.nodePort {
                emit("relay routing for the relay nodes of the database; they link to \(authority(nodePort))")
            }
        }
    }

    /// `imcodec-relay chat`.
    struct Chat: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Log in to a relay, print what arrives, and send what you type.",
            discussion: ChatCommand.usage + """

                Exit status: 0; 1 when the relay refused a message sent (its ack carries an error code) \
                or cannot be reached (one line on standard error says why).
                """
        )

        @Option(help: "The relay's loopback address.")
        var host = "127.0.0.1"

        @Option(help: "The relay's port.")
        var port = 7070

        @Option(help: "The user id to log in as.")
        var user: String

        @Option(
            help:
                "The login token (a JWT); default: one minted for --user from the relay's secret (--data-dir or --auth-secret-file)."
        )
        var token: String?

        @Option(help: "The relay's data directory, whose auth secret mints a token when --token is not given.")
        var dataDir = RelayFiles.defaultDataDirectory

        @Option(help: "The relay's auth secret file, to mint a token when --token is not given.")
        var authSecretFile: String?

        @Option(help: "The device id to log in with (default: chat-PID).")
        var device: String?

        @Option(help: "A group to join after logging in (repeatable).")
        var join: [String] = []

        @Option(help: "Where a line without @PEER or #GROUP goes: a user id, or #GROUP.")
        var to: String?

        @Option(help: "A command to run instead of reading standard input (repeatable), e.g. \"@bob hi\".")
        var send: [String] = []

        @Option(help: "Seconds to keep printing after the last command before exiting.")
        var linger: Double = 1

        func validate() throws {
            guard RelayServer.isLoopback(host) else {
                throw ValidationError("chat connects to loopback only (it has no TLS)")
            }
            guard !user.isEmpty else { throw ValidationError("--user must not be empty") }
        }

        func run() throws {
            let token: String
            do {
                token =
                    try self.token
                    ?? mintToken(
                        user: user,
                        ttl: 86_400,
                        secretFile: authSecretFile ?? RelayFiles(dataDirectory: dataDir).secretPath
                    )
            } catch {
                emitError("imcodec-relay: \(error) (give --token, or the relay's --data-dir or --auth-secret-file)")
                throw ExitCode.failure
            }
            let client: ChatClient
            do {
                let (host, port, user, device, join) = (host, port, user, device ?? "chat-\(getpid())", join)
                client = try runAsync {
                    try await ChatClient.connect(
                        host: host,
                        port: port,
                        user: user,
                        token: token,
                        deviceID: device,
                        joins: join,
                        output: { emit($0) }
                    )
                }
            } catch {
                emitError("imcodec-relay: " + ChatClient.connectFailure(error, host: host, port: port))
                throw ExitCode.failure
            }
            let quitting = ManagedAtomicFlag()
            client.channel.closeFuture.whenComplete { _ in
                if !quitting.isSet {
                    emit("* connection closed by the relay")
                    Glibc.exit(0)
                }
            }
            var lines: [String] = send
            var fromStdin = send.isEmpty
            var keepGoing = true
            while keepGoing {
                let line: String
                if !lines.isEmpty {
                    line = lines.removeFirst()
                } else if fromStdin, let typed = readLine() {
                    line = typed
                } else {
                    fromStdin = false
                    break
                }
                guard let command = ChatCommand.parse(line, defaultTarget: to) else { continue }
                keepGoing = try runAsync { await client.perform(command) }
            }
            if linger > 0 { usleep(useconds_t(min(linger, 3600) * 1_000_000)) }
            let refused = (try? runAsync { await client.refusedSends() }) ?? 0
            quitting.set()
            try? runAsync { await client.close() }
            if refused > 0 {
                emitError("imcodec-relay: the relay refused \(refused) of the messages sent")
                throw ExitCode.failure
            }
        }
    }
}

extension RelayCommand {
    /// `imcodec-relay token`.
    struct Token: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print a login token (a JWT, HS256) for a user, signed with the relay's auth secret."
        )

        @Option(help: "The user id the token logs in as (its sub claim).")
        var user: String

        @Option(help: "Seconds until the token expires (its exp claim).")
        var ttl = 86_400

        @Option(help: "The relay's data directory, whose auth-secret file signs the token.")
        var dataDir = RelayFiles.defaultDataDirectory

        @Option(help: "The auth secret file to sign with (instead of DATA-DIR/auth-secret).")
        var authSecretFile: String?

        func validate() throws {
            guard !user.isEmpty else { throw ValidationError("--user must not be empty") }
            guard ttl > 0 else { throw ValidationError("--ttl must be positive") }
        }

        func run() throws {
            do {
                emit(
                    try mintToken(
                        user: user,
                        ttl: TimeInterval(ttl),
                        secretFile: authSecretFile ?? RelayFiles(dataDirectory: dataDir).secretPath
                    )
                )
            } catch {
                emitError("imcodec-relay: \(error)")
                throw ExitCode.failure
            }
        }
    }
}

/// A token for `user`, valid for `ttl` seconds, signed with the secret in `secretFile`.
func mintToken(user: String, ttl: TimeInterval, secretFile: String) throws -> String {
    let secret = try RelayAuthenticator.readSecret(secretFile)
    return try runAsync {
        try await RelayAuthenticator(secret: secret).mint(user: user, ttl: ttl)
    }
}

/// Runs `body` to completion from synchronous code (the commands' `run()`).
func runAsync<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) throws -> T {
    let result = NIOLockedValueBox<Result<T, any Error>?>(nil)
    let done = DispatchSemaphore(value: 0)
    Task {
        let outcome: Result<T, any Error>
        do { outcome = .success(try await body()) } catch { outcome = .failure(error) }
        result.withLockedValue { $0 = outcome }
        done.signal()
    }
    done.wait()
    return try result.withLockedValue { $0! }.get()
}

/// The files of a relay's data directory: its database, its auth secret and its lock.
struct RelayFiles {
    /// `imcodec-relay-data`, in the working directory.
    static let defaultDataDirectory = "imcodec-relay-data"

    let dataDirectory: String
    var databasePath: String { "\(dataDirectory)/relay.sqlite" }
    var secretPath: String { RelayAuthenticator.defaultSecretPath(dataDirectory: dataDirectory) }
    var lockPath: String { "\(dataDirectory)/relay.lock" }

    /// Creates the directory (mode 0700) if it does not exist.
    func createDataDirectory() throws {
        do {
            try FileManager.default.createDirectory(
                atPath: dataDirectory,
                withIntermediateDirectories: true,
                attributes: [.posixPermissions: 0o700]
            )
        } catch {
            throw RelayStoreError(description: "cannot create the data directory \(dataDirectory): \(error)")
        }
    }

    /// Holds an exclusive lock on the directory for the life of the process, so that two relays
    /// never give out the same seqs from one database.
    func lock() throws {
        let fd = open(lockPath, O_RDWR | O_CREAT, 0o600)
        guard fd >= 0, flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            throw RelayStoreError(description: "another relay is using \(dataDirectory) (\(lockPath) is locked)")
        }
        // The descriptor stays open (and locked) until the process exits.
    }
}

/// A flag set once from any thread.
final class ManagedAtomicFlag: Sendable {
    private let lock = NIOLockedValueBox(false)
    /// Whether ``set()`` was called.
    var isSet: Bool { lock.withLockedValue { $0 } }
    /// Sets the flag.
    func set() { lock.withLockedValue { $0 = true } }
}
#else
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Built without the Tools trait (Package.swift): says how to build the real imcodec-relay, exits 2.
@main
enum RelayCommand {
    static func main() {
        let message = Array(
            "imcodec-relay was built without the Tools trait; build it with swift build --traits Tools\n".utf8
        )
        _ = message.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
        exit(2)
    }
}
#endif
