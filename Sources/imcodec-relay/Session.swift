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

    /// The client's channel.
    let channel: any Channel
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
    /// Set when the session stopped being its user's current one other than by a newer login
    /// (subscribers learn the user is offline when the connection has closed).
    var wentOffline = false
    /// Set when the relay has decided to close this connection.
    var closing = false
    /// Whether a write awaits a flush.
    var needsFlush = false
    /// `user/device@address` for logs.
    var label: String {
        let address = channel.remoteAddress.map { "\($0.ipAddress ?? "?"):\($0.port ?? 0)" } ?? "?"
        let device = deviceID.isEmpty ? "" : "/\(deviceID)"
        return "\(userID ?? "?")\(device)@\(address)\(transport == .webSocket ? " (ws)" : "")"
    }

    init(channel: any Channel, transport: Transport) {
        self.channel = channel
        self.transport = transport
    }

    /// Tells a WebSocket connection's ``IMCodecNIO/WebSocketFrameHandler`` the close code and reason
    /// of the close that follows (an error the handler raised itself keeps its own code).
    func announceClose(code: String, reason: String) {
        guard transport == .webSocket else { return }
        let request = WebSocketFrameHandler.CloseRequest(
            code: RelayProtocol.webSocketCloseCode(for: code),
            reason: "\(code): \(reason)"
        )
        channel.triggerUserOutboundEvent(request, promise: nil)
    }
}
#endif
