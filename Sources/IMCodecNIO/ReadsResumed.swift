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

/// Whether the application holds back the channel's next `read()`, as a deadline handler sees the
/// reads go by: a channel with `autoRead` on issues the next `read()` right after each batch's
/// `channelReadComplete`, in the same event-loop tick, unless a handler behind holds it back
/// (`NIOAsyncChannel` does while its consumer is behind). So a deadline that passes while no
/// `read()` went by since the last batch passed while the server did not read.
struct HeldReads {
    /// A batch of reads ended and no `read()` went by since.
    private var awaitingRead = false
    /// A deadline passed while so.
    private var passedWhileHeld = false

    /// At `channelReadComplete`.
    mutating func batchEnded() { awaitingRead = true }

    /// At a `read()`; returns whether a deadline passed while it was held back (the wait then
    /// starts again: the rest may have waited in the socket).
    mutating func readGoesBy() -> Bool {
        awaitingRead = false
        defer { passedWhileHeld = false }
        return passedWhileHeld
    }

    /// When a deadline passes; returns whether reads were held back (not the peer's delay).
    mutating func deadlinePassed() -> Bool {
        if awaitingRead { passedWhileHeld = true }
        return awaitingRead
    }
}

extension Channel {
    /// Whether the server turned reading off (`autoRead` false): bytes a peer sent may then wait in
    /// the socket, so a deadline handler does not count that time against the peer.
    var readsArePaused: Bool {
        (try? syncOptions?.getOption(.autoRead)) == false
    }
}
#endif
