#if Tools
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import ArgumentParser
import IMCodec
import IMCodecNIO
import NIOConcurrencyHelpers
import NIOCore

/// `imcodec-relay`: a loopback relay server for IMCodec frames and a chat client for it.
///
/// ```
/// imcodec-relay serve --port 7070 [--groups groups.txt]
/// imcodec-relay chat --port 7070 --user alice [--join team] [--to bob] [--send "@bob hi"]...
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
        subcommands: [Serve.self, Chat.self]
    )
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
        groups[group, default: []].formUnion(members.map(String.init))
    }
    return groups
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
        static let configuration = CommandConfiguration(abstract: "Run the relay server on loopback.")

        @Option(help: "The loopback address to listen on.")
        var host = "127.0.0.1"

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

        @Option(help: "The heartbeat interval, in seconds, the login result asks clients to ping at.")
        var heartbeatInterval: UInt32 = 30

        @Option(help: "The most messages kept per conversation for sync (the oldest are dropped past it).")
        var maxStoredMessages = 10_000

        @Flag(help: "Do not log connections and logins.")
        var quiet = false

        func validate() throws {
            guard RelayServer.isLoopback(host) else { throw ValidationError("the relay listens on loopback only") }
            guard maxStoredMessages > 0 else { throw ValidationError("--max-stored-messages must be positive") }
            if let websocketPort, websocketPort != 0, websocketPort == port {
                throw ValidationError("--websocket-port must differ from --port")
            }
        }

        func run() throws {
            var configuration = RelayConfiguration()
            configuration.host = host
            configuration.port = port
            configuration.webSocketPort = websocketPort
            configuration.codec = FrameCodecOptions(maxFrameSize: maxFrameSize)
            configuration.maxFrameWait = .milliseconds(Int64(frameWaitMs))
            configuration.loginTimeout = .milliseconds(Int64(loginTimeoutMs))
            configuration.maxOutboundBytes = maxOutboundBytes
            configuration.heartbeatIntervalS = heartbeatInterval
            configuration.maxMessagesPerConversation = maxStoredMessages
            if let groups { configuration.groups = try parseGroups(try readTextFile(groups)) }
            if !quiet { configuration.log = { emit("relay: \($0)") } }
            let server = try RelayServer.start(configuration).wait()
            let groupList = configuration.groups.keys.sorted().map { "#\($0)" }.joined(separator: " ")
            emit("relay listening on \(host):\(server.port)" + (groupList.isEmpty ? "" : "; groups \(groupList)"))
            if let webSocketPort = server.webSocketPort {
                let authority = host.contains(":") ? "[\(host)]:\(webSocketPort)" : "\(host):\(webSocketPort)"
                emit("relay accepting WebSocket on ws://\(authority)/")
            }
            try server.closeFuture.wait()
        }
    }

    /// `imcodec-relay chat`.
    struct Chat: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Log in to a relay, print what arrives, and send what you type.",
            discussion: ChatCommand.usage + """

                Exit status: 0; 1 when the relay refused a message sent (its ack carries an error code) \
                or cannot be reached (one line on standard error says why).
                """)

        @Option(help: "The relay's loopback address.")
        var host = "127.0.0.1"

        @Option(help: "The relay's port.")
        var port = 7070

        @Option(help: "The user id to log in as.")
        var user: String

        @Option(help: "A group to join after logging in (repeatable).")
        var join: [String] = []

        @Option(help: "Where a line without @PEER or #GROUP goes: a user id, or #GROUP.")
        var to: String?

        @Option(help: "A command to run instead of reading standard input (repeatable), e.g. \"@bob hi\".")
        var send: [String] = []

        @Option(help: "Seconds to keep printing after the last command before exiting.")
        var linger: Double = 1

        func validate() throws {
            guard RelayServer.isLoopback(host) else { throw ValidationError("the relay is on loopback only") }
            guard !user.isEmpty else { throw ValidationError("--user must not be empty") }
        }

        func run() throws {
            let client: ChatClient
            do {
                client = try ChatClient.connect(host: host, port: port, user: user, joins: join, output: { emit($0) })
                    .wait()
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
                keepGoing = try client.perform(command).wait()
            }
            if linger > 0 { usleep(useconds_t(min(linger, 3600) * 1_000_000)) }
            let refused = (try? client.refusedSends().wait()) ?? 0
            quitting.set()
            client.closeAndWait()
            if refused > 0 {
                emitError("imcodec-relay: the relay refused \(refused) of the messages sent")
                throw ExitCode.failure
            }
        }
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
        let message = Array("imcodec-relay was built without the Tools trait; build it with swift build --traits Tools\n".utf8)
        _ = message.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
        exit(2)
    }
}
#endif
