#if Tools
import IMCodec
import IMCodecNIO
import IMCodecTestSupport
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import NIOSSL
import Testing

@testable import imcodec_relay

/// The login tokens of the tests: JWTs signed with one test secret (``secret``), as the relay's
/// ``RelayAuthenticator`` checks them.
enum TestAuth {
    /// The secret every in-process test relay checks tokens with.
    static let secret = "imcodec-relay-tests-secret-0123456789abcdef"

    /// An authenticator for ``secret``.
    static func authenticator() async throws -> RelayAuthenticator {
        try await RelayAuthenticator(secret: secret)
    }

    /// A token for `user`, valid for `ttl` seconds.
    static func token(_ user: String, ttl: Double = 3600) async throws -> String {
        try await authenticator().mint(user: user, ttl: ttl)
    }

    /// The login frame of `user` with a valid token.
    static func login(
        _ user: String,
        deviceID: String = "",
        lastSeen: [ConversationSeq] = [],
        streamResume: Bool = false,
        streamPosition: UInt64 = 0,
        requestID: UInt64 = 0
    ) async throws -> Frame {
        RelayProtocol.loginFrame(
            user,
            token: try await token(user),
            deviceID: deviceID,
            lastSeen: lastSeen,
            streamResume: streamResume,
            streamPosition: streamPosition,
            requestID: requestID
        )
    }
}

/// Starts a relay on 127.0.0.1 and an ephemeral port (in-memory store, ``TestAuth``'s secret),
/// runs `body`, and shuts the relay down.
/// A relay clock a test moves forward instead of waiting (``RelayConfiguration/clock``): the real
/// time plus an offset.
final class TestClock: Sendable {
    private let offset = NIOLockedValueBox<Int64>(0)

    /// The clock to give the relay.
    var now: @Sendable () -> Int64 {
        { [offset] in RelayProtocol.nowMs() + offset.withLockedValue { $0 } }
    }

    /// Moves the clock forward until it reads past `ms`.
    func advance(past ms: Int64) {
        offset.withLockedValue { $0 += max(0, ms + 1 - (RelayProtocol.nowMs() + $0)) }
    }
}

/// A clock that moves only when told: for the relay's silence clock, where real time passing while a
/// loaded machine connects the clients must not count as silence (``TestClock`` reads real time
/// plus an offset; under ThreadSanitizer, beside the crash tests, connecting two more clients took
/// over 10 s, and the first was closed as silent before the test's first ping).
final class FrozenClock: Sendable {
    private let ms = NIOLockedValueBox<Int64>(1_000_000)

    /// The clock to give the relay.
    var now: @Sendable () -> Int64 {
        { [ms] in ms.withLockedValue { $0 } }
    }

    /// Moves the clock forward by `ms` milliseconds.
    func advance(by delta: Int64) {
        ms.withLockedValue { $0 += delta }
    }
}

extension RelayConfiguration {
    /// A relay on a free loopback port that knows the tests' signing key, with deadlines no loaded
    /// machine reaches.
    static func forTests() async throws -> RelayConfiguration {
        var configuration = RelayConfiguration()
        configuration.host = "127.0.0.1"
        configuration.port = 0
        configuration.authenticator = try await TestAuth.authenticator()
        // Test clients do not ping: a loaded machine must not close them as silent (3 intervals);
        // RelayGroupAccessTests moves the relay's silence clock to test that.
        configuration.heartbeatIntervalS = 3600
        // Nor close a connection whose login or frame a starved relay reads late (a suite run
        // beside a release build stalled some for over 10 s; a fresh-clone CI run beside a debug
        // build, two at once); the tests of these timeouts set short ones.
        configuration.loginTimeout = .seconds(120)
        configuration.maxFrameWait = .seconds(120)
        return configuration
    }
}

func withRelay<R>(
    _ configure: (inout RelayConfiguration) -> Void = { _ in },
    _ body: (RelayServer) async throws -> R
) async throws -> R {
    var configuration = try await RelayConfiguration.forTests()
    configure(&configuration)
    let server = try await RelayServer.start(configuration).get()
    do {
        let result = try await body(server)
        try await server.shutdown()
        return result
    } catch {
        try? await server.shutdown()
        throw error
    }
}

/// A client that reads ``Frame``s (decoded by ``FrameDecoder``) and keeps all of them.
final class FrameCollector: ChannelInboundHandler, Sendable {
    typealias InboundIn = Frame

    private let box = NIOLockedValueBox<[Frame]>([])
    private let errors = NIOLockedValueBox<[String]>([])

    var frames: [Frame] { box.withLockedValue { $0 } }
    var decodeErrors: [String] { errors.withLockedValue { $0 } }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = Self.unwrapInboundIn(data)
        box.withLockedValue { $0.append(frame) }
        testClientReads.withLockedValue { $0 += 1 }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        errors.withLockedValue { $0.append("\(error)") }
        context.close(promise: nil)
    }

    /// The system notices received.
    var notices: [SystemNotice] {
        frames.compactMap { if case .systemNotice(let n)? = $0.payload { n } else { nil } }
    }

    /// The login results received.
    var loginResults: [LoginResult] {
        frames.compactMap { if case .loginResult(let r)? = $0.payload { r } else { nil } }
    }

    /// The frame answering request `requestID`, if it arrived.
    func answer(to requestID: UInt64) -> Frame? {
        frames.first { $0.requestID == requestID }
    }

    /// The request result answering `requestID`, if it arrived.
    func result(of requestID: UInt64) -> RequestResult? {
        if case .requestResult(let r)? = answer(to: requestID)?.payload { r } else { nil }
    }

    /// The presence updates received.
    var presences: [PresenceUpdate] {
        frames.compactMap { if case .presence(let p)? = $0.payload { p } else { nil } }
    }

    /// The payload kinds received, in order.
    var kinds: [Frame.Payload.Kind?] { frames.map { $0.payload?.kind } }

    /// The send acks received.
    var acks: [SendAck] {
        frames.compactMap { if case .sendAck(let a)? = $0.payload { a } else { nil } }
    }

    /// The messages received.
    var messages: [Message] {
        frames.compactMap { if case .message(let m)? = $0.payload { m } else { nil } }
    }
}

/// A test client speaking frames to the relay.
struct TestClient: Sendable {
    let channel: any Channel
    let collector: FrameCollector

    /// Connects to `server`; logs in as `user` (with `deviceID`, `lastSeen` and the stream
    /// position) unless `user` is `nil`.
    static func connect(
        to server: RelayServer,
        as user: String?,
        group: any EventLoopGroup,
        deviceID: String = "",
        lastSeen: [ConversationSeq] = [],
        streamResume: Bool = false,
        streamPosition: UInt64 = 0,
        codec: FrameCodecOptions = FrameCodecOptions()
    ) async throws -> TestClient {
        try await connect(
            port: server.port,
            as: user,
            group: group,
            deviceID: deviceID,
            lastSeen: lastSeen,
            streamResume: streamResume,
            streamPosition: streamPosition,
            codec: codec
        )
    }

    /// Connects to a relay on 127.0.0.1:`port` (see ``connect(to:as:group:deviceID:lastSeen:streamResume:streamPosition:codec:)``).
    /// With `tls`, the connection is TLS, checking the relay's certificate for `localhost`. `codec`
    /// holds the client's own limits (a frame above its `maxFrameSize` is a decode error).
    static func connect(
        port: Int,
        as user: String?,
        group: any EventLoopGroup,
        deviceID: String = "",
        lastSeen: [ConversationSeq] = [],
        streamResume: Bool = false,
        streamPosition: UInt64 = 0,
        tls: NIOSSLContext? = nil,
        codec: FrameCodecOptions = FrameCodecOptions()
    ) async throws -> TestClient {
        guard let user else { return try await connect(port: port, sending: nil, group: group, tls: tls, codec: codec) }
        let login = try await TestAuth.login(
            user,
            deviceID: deviceID,
            lastSeen: lastSeen,
            streamResume: streamResume,
            streamPosition: streamPosition
        )
        let client = try await connect(port: port, sending: login, group: group, tls: tls, codec: codec)
        let ok = await eventually { client.collector.loginResults.contains { $0.errorCode == 0 } }
        #expect(ok, "\(user) was not logged in")
        return client
    }

    /// Connects to `server` and sends `first` (a login, made beforehand) as soon as the connection
    /// is up; does not wait for an answer.
    static func connect(
        to server: RelayServer,
        sending first: Frame,
        group: any EventLoopGroup
    ) async throws -> TestClient {
        try await connect(port: server.port, sending: first, group: group)
    }

    /// Connects to 127.0.0.1:`port` and writes `first`, if any, on the connection's event loop as
    /// soon as it is connected, as a client does. (Written from the test's task instead, a login
    /// waited for a thread of the concurrency pool, which tests running beside it could hold past
    /// the relay's login timeout: the relay then closed the connection before the login came.)
    static func connect(
        port: Int,
        sending first: Frame?,
        group: any EventLoopGroup,
        tls: NIOSSLContext? = nil,
        codec: FrameCodecOptions = FrameCodecOptions()
    ) async throws -> TestClient {
        let collector = FrameCollector()
        let channel = try await ClientBootstrap(group: group)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    if let tls {
                        try channel.pipeline.syncOperations.addHandler(
                            NIOSSLClientHandler(context: tls, serverHostname: "localhost")
                        )
                    }
                    try channel.pipeline.syncOperations.addFrameCodec(options: codec)
                    try channel.pipeline.syncOperations.addHandler(collector)
                }
            }
            .connect(host: "127.0.0.1", port: port)
            .flatMap { channel in
                guard let first else { return channel.eventLoop.makeSucceededFuture(channel) }
                return channel.writeAndFlush(first).map { channel }
            }
            .get()
        return TestClient(channel: channel, collector: collector)
    }

    func send(_ frame: Frame) async throws {
        try await channel.writeAndFlush(frame).get()
    }

    /// Sends `frame` (with a request id) and waits for the frame answering it.
    func ask(_ frame: Frame) async throws -> Frame? {
        try await send(frame)
        _ = await eventually { collector.answer(to: frame.requestID) != nil }
        return collector.answer(to: frame.requestID)
    }

    /// Sends `message` with request id `requestID` and returns its send ack, or `nil` when none came.
    func ack(of message: Message, requestID: UInt64) async throws -> SendAck? {
        try await ask(RelayProtocol.answer(.message(message), requestID: requestID))?.sendAck
    }

    /// Asks for one page of this device's stream after `position` (a `stream_sync_request` with id
    /// `requestID`) and returns its frames decoded, or `nil` when no `stream_sync_response` answers.
    func streamPage(after position: UInt64 = 0, requestID: UInt64) async throws -> [Frame]? {
        let request = RelayProtocol.answer(
            .streamSyncRequest(StreamSyncRequest.with { $0.afterPosition = position }),
            requestID: requestID
        )
        guard case .streamSyncResponse(let page)? = try await ask(request)?.payload else { return nil }
        return try page.frames.map { try Frame(serializedBytes: $0.frame) }
    }

    /// Reads the user's stream from its start until `done` holds for what `read` makes of the frames,
    /// asking again every 20 ms until a 60 s deadline (a minute's room for a loaded machine, as
    /// `eventually` gives); returns what it read last. For what a relay's sweep writes, which no
    /// frame of the client's waits for.
    func streamed<T>(
        _ read: ([Frame]) -> T,
        until done: (T) -> Bool,
        firstRequestID: UInt64
    ) async throws -> T {
        var requestID = firstRequestID
        let deadline = NIODeadline.now() + .seconds(60)
        var result = read(try await streamPage(requestID: requestID) ?? [])
        while !done(result), NIODeadline.now() < deadline {
            try await Task.sleep(nanoseconds: 20_000_000)
            requestID += 1
            result = read(try await streamPage(requestID: requestID) ?? [])
        }
        return result
    }

    /// Waits for a pong: everything the relay wrote to this client before it has arrived.
    func roundTrip(_ requestID: UInt64) async throws {
        let pong = try await ask(RelayProtocol.answer(.ping(Ping.with { $0.id = requestID }), requestID: requestID))
        #expect(pong != nil, "no pong for \(requestID)")
    }

    func close() async {
        try? await channel.close().get()
    }
}

/// A client that writes raw bytes and keeps every byte it receives.
final class RawCollector: ChannelInboundHandler, Sendable {
    typealias InboundIn = ByteBuffer

    private let box = NIOLockedValueBox(ByteBuffer())

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var buffer = Self.unwrapInboundIn(data)
        box.withLockedValue { _ = $0.writeBuffer(&buffer) }
        testClientReads.withLockedValue { $0 += 1 }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }

    /// The frames in the bytes received so far.
    var frames: [Frame] {
        var bytes = box.withLockedValue { $0 }
        var frames: [Frame] = []
        while let frame = try? bytes.readFrame() { frames.append(frame) }
        return frames
    }

    /// The `code` of the first error notice (or refused login) received, if any.
    var errorCode: String? { relayErrorCode(in: frames) }
}

/// The code the relay closed a connection with, from `frames`: an error notice's `code`, or the
/// code before the first colon of a refused login's description (`notLoggedIn: ...`).
func relayErrorCode(in frames: [Frame]) -> String? {
    for frame in frames {
        switch frame.payload {
        case .systemNotice(let notice)? where notice.type == RelayProtocol.error:
            return notice.params["code"]
        case .loginResult(let result)? where result.errorCode != 0:
            return result.errorDescription.split(separator: ":").first.map(String.init)
        default:
            continue
        }
    }
    return nil
}

/// A raw-bytes client.
struct RawClient: Sendable {
    let channel: any Channel
    let collector: RawCollector

    static func connect(
        to server: RelayServer,
        group: any EventLoopGroup,
        receiveBuffer: Int? = nil,
        autoRead: Bool = true
    ) async throws -> RawClient {
        let collector = RawCollector()
        var bootstrap = ClientBootstrap(group: group).channelOption(.autoRead, value: autoRead)
        if let receiveBuffer {
            bootstrap = bootstrap.channelOption(.socketOption(.so_rcvbuf), value: SocketOptionValue(receiveBuffer))
        }
        let channel =
            try await bootstrap
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(collector) }
            }
            .connect(host: "127.0.0.1", port: server.port).get()
        return RawClient(channel: channel, collector: collector)
    }

    func write(_ bytes: ByteBuffer) async throws {
        try await channel.writeAndFlush(bytes).get()
    }

    func write(frame: Frame) async throws {
        var buffer = ByteBuffer()
        buffer.writeFrame(frame)
        try await write(buffer)
    }

    /// Waits until the relay closes the connection; returns whether it did within `seconds`.
    func closedByPeer(within seconds: Double) async -> Bool {
        await eventually(seconds) { !channel.isActive }
    }
}
#endif

#if Tools
import Foundation

/// `editor`'s edit of `message` (as a device holds it): its new_message is the message with
/// `elements`, then changed by `change` (a forgery, a quote...).
func editFrame(
    _ message: Message,
    by editor: String,
    to elements: [MessageElement],
    requestID: UInt64,
    _ change: (inout Message) -> Void = { _ in }
) -> Frame {
    var edited = message
    edited.elements = elements
    change(&edited)
    let event = EditEvent.with {
        $0.message = message.reference; $0.newMessage = edited; $0.editorID = editor
    }
    return RelayProtocol.answer(.edit(event), requestID: requestID)
}

/// Writes `text` to the file at `path` (a secret file, a groups file), replacing it.
func writeFile(_ path: String, _ text: String) throws {
    try Data(text.utf8).write(to: URL(fileURLWithPath: path))
}

/// Runs the built `imcodec-relay` executable (it sits next to the test bundle) and collects its output.
enum RelayExecutable {
    struct Result {
        let status: Int32
        let stdout: String
        let stderr: String
    }

    static let url: URL? = {
        // Next to the test bundle; Bundle.allBundles only when that fails (swift-corelibs-foundation
        // leaks the array it copies, which LeakSanitizer reports).
        func relay(in folder: URL) -> URL? {
            let url = folder.appendingPathComponent("imcodec-relay")
            return FileManager.default.isExecutableFile(atPath: url.path) ? url : nil
        }
        if let url = relay(in: URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()) {
            return url
        }
        return Bundle.allBundles.lazy.compactMap { relay(in: $0.bundleURL.deletingLastPathComponent()) }.first
    }()

    /// Runs it to its end on a thread of its own: waiting on the tests' cooperative pool (two
    /// threads on two cores) held every other test off it for as long as a benchmark ran, two
    /// minutes under the full suite, and tests that watch a process from their task lost sight of it.
    static func run(_ arguments: [String]) async throws -> Result {
        let executable = try #require(url, "the imcodec-relay executable was not built next to the tests")
        let (termination, stdout, stderr) = try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread {
                continuation.resume(with: Swift.Result { try ChildProcess.run(executable.path, arguments) })
            }
        }
        return Result(
            status: termination.status,
            stdout: String(decoding: stdout, as: UTF8.self),
            stderr: String(decoding: stderr, as: UTF8.self)
        )
    }
}
#endif
