#if Tools
import IMCodec
import IMCodecNIO
import NIOCore

/// One client connection.
final class Session {
    /// How a client speaks to the relay.
    enum Transport: String, CaseIterable {
        /// Length-prefixed frames on a TCP connection.
        case tcp
        /// One frame per binary WebSocket message.
        case webSocket = "ws"
    }

    /// Where the session is in its login.
    enum State {
        /// No login frame yet.
        case new
        /// The login's token is being checked; frames that arrive meanwhile wait in ``held``.
        case authenticating
        /// Logged in.
        case loggedIn
    }

    /// Where the session's frames go: the client's own channel, or a node link to the relay node
    /// that holds the client's connection (``NodeLink``).
    let connection: any SessionConnection
    /// How the client speaks to the relay.
    let transport: Transport
    /// The decoder's counters for this connection.
    let decoderStats = FrameDecoderStats()
    /// Where the session is in its login.
    var state = State.new
    /// Frames that arrived while the login was checked, handled once it is done.
    var held: [InboundFrame] = []
    /// The logged-in user, once the login was accepted.
    var userID: String?
    /// The device and platform the login named, and the session id the relay gave it.
    var deviceID = ""
    var platform = Platform.unspecified
    var sessionID = ""
    /// Whether kept frames are written to this session as they are committed. A session that logged
    /// in with `stream_resume` becomes live when its last `stream_sync_response` has been written.
    var live = false
    /// Kicks the session when its token expires.
    var expiry: Scheduled<Void>?
    /// Closes the session when no login frame came in time (cancelled at the login).
    var loginTimer: Scheduled<Void>?
    /// Set when the session stopped being its user's current one other than by a newer login
    /// (subscribers learn the user is offline when the connection has closed).
    var wentOffline = false
    /// When the relay last heard a frame from the client (``RelayConfiguration/silenceClock``).
    var lastHeardMs: Int64 = 0
    /// Set when the relay has decided to close this connection.
    var closing = false
    /// Whether a write awaits a flush.
    var needsFlush = false
    /// What is written to the session while its login's answer waits for the commit holding what
    /// the answer counts; the answer goes first (``Router/finishLogin(_:requestID:expiry:_:)``).
    /// `nil` once the answer is written.
    var heldOutput: HeldOutput?
    /// The session's requests that wait for a store read (history, sync, stream sync, the
    /// conversation list), at most ``maxReadsInFlight``.
    var readsInFlight = 0
    /// The most requests of one session that wait for the store at once. Each read's rows (up to a
    /// history scan of whole frames) are held until its answer goes: without a bound, a client that
    /// sends requests faster than the store reads made the relay hold them all.
    static let maxReadsInFlight = 8
    /// `user/device@address` for logs.
    var label: String {
        let device = deviceID.isEmpty ? "" : "/\(deviceID)"
        return "\(userID ?? "?")\(device)@\(connection.address)\(transport == .webSocket ? " (ws)" : "")"
    }

    init(connection: any SessionConnection, transport: Transport) {
        self.connection = connection
        self.transport = transport
    }

    /// A session on a client's own channel.
    convenience init(channel: any Channel, transport: Transport) {
        self.init(connection: ChannelConnection(channel: channel, transport: transport), transport: transport)
    }
}

/// Where a session's frames go. The router writes, flushes and closes through it, whether the client
/// is connected to this relay (``ChannelConnection``) or to another relay node that forwards its
/// frames (``NodeLink``).
protocol SessionConnection: AnyObject {
    /// Whether the connection is open.
    var isActive: Bool { get }
    /// Whether it takes more bytes: false past the high-water mark (a slow consumer).
    var isWritable: Bool { get }
    /// The bytes queued for the client and not yet written, when known.
    var bufferedBytes: Int? { get }
    /// Completes when the connection is closed.
    var closeFuture: EventLoopFuture<Void> { get }
    /// The client's address, `IP:PORT`, for logs.
    var address: String { get }
    /// Queues a frame (its length prefix included) for the client.
    func write(_ buffer: ByteBuffer)
    /// Writes what was queued.
    func flush()
    /// Closes the connection, after writing and flushing `last` when given (a peer that does not
    /// read cannot hold it open: it is closed after a second). A WebSocket peer is told `code` and
    /// `reason` in its close frame (an error its handler raised itself keeps its own code).
    func close(code: String, reason: String, after last: ByteBuffer?)
}

/// A client connected to this relay: its channel.
final class ChannelConnection: SessionConnection {
    let channel: any Channel
    let transport: Session.Transport

    init(channel: any Channel, transport: Session.Transport) {
        self.channel = channel
        self.transport = transport
    }

    var isActive: Bool { channel.isActive }
    var isWritable: Bool { channel.isWritable }
    var bufferedBytes: Int? { try? channel.syncOptions?.getOption(.bufferedWritableBytes) }
    var closeFuture: EventLoopFuture<Void> { channel.closeFuture }
    var address: String { channel.remoteAddress.map { "\($0.ipAddress ?? "?"):\($0.port ?? 0)" } ?? "?" }

    func write(_ buffer: ByteBuffer) { channel.write(buffer, promise: nil) }
    func flush() { channel.flush() }

    func close(code: String, reason: String, after last: ByteBuffer?) {
        if transport == .webSocket {
            // Tells the WebSocketFrameHandler the close code and reason of the close that follows.
            let request = WebSocketFrameHandler.CloseRequest(
                code: RelayProtocol.webSocketCloseCode(for: code),
                reason: "\(code): \(reason)"
            )
            channel.triggerUserOutboundEvent(request, promise: nil)
        }
        let channel = self.channel
        guard let last, channel.isActive else {
            channel.close(promise: nil)
            return
        }
        channel.writeAndFlush(last).whenComplete { _ in channel.close(promise: nil) }
        channel.eventLoop.scheduleTask(in: .seconds(1)) { channel.close(promise: nil) }
    }
}

/// Frames written to a session before it may have them (``Session/heldOutput``), in order.
struct HeldOutput {
    private(set) var frames: [(buffer: ByteBuffer, kind: Frame.Payload.Kind?)] = []
    /// Their bytes together.
    private(set) var bytes = 0

    mutating func append(_ buffer: ByteBuffer, kind: Frame.Payload.Kind?) {
        frames.append((buffer, kind))
        bytes += buffer.readableBytes
    }
}
#endif
