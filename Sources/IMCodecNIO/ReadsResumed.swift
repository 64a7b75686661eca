#if NIO
import NIOCore

/// The event a server fires on a channel's pipeline when it turns reading back on after it turned
/// `autoRead` off (for instance to hold a client back while what it forwards the client's frames
/// to is full). ``FrameDeadlineHandler`` and ``WebSocketDeadlineHandler`` then give a frame or
/// message still incomplete its whole wait again: the rest may have waited in the socket while the
/// server did not read, which is not the peer's delay. (While reads are off, a deadline that passes
/// starts again too.)
public struct ReadsResumed: Sendable {
    public init() {}
}

extension Channel {
    /// Whether the server turned reading off (`autoRead` false): bytes a peer sent may then wait in
    /// the socket, so a deadline handler does not count that time against the peer.
    var readsArePaused: Bool {
        (try? syncOptions?.getOption(.autoRead)) == false
    }
}
#endif
