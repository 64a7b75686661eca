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
/// (`NIOAsyncChannel` does while its consumer is behind). So when a deadline passes while no
/// `read()` went by since the last batch, the rest of the frame may be waiting in the socket: the
/// handler then issues one `read()` itself (``takeHeldRead()``) and gives the frame its whole wait
/// again, rather than wait for the application's. A frame is late only after a whole wait with a
/// `read()` pending: the peer sent nothing. (Trusting the application's `read()` instead let a
/// `channelReadComplete` that no `read()` follows, as an HTTP upgrade that completes asynchronously
/// fires for the bytes it held, make every deadline look held: a stalled peer was never late.)
/// The application's hold thus lets in one more batch of reads per wait, at most.
struct HeldReads {
    /// A batch of reads ended and no `read()` went by since.
    private var awaitingRead = false

    /// At `channelReadComplete`.
    mutating func batchEnded() { awaitingRead = true }

    /// At a `read()`.
    mutating func readGoesBy() { awaitingRead = false }

    /// When a deadline passes: whether reads were held back since the last batch (not the peer's
    /// delay). Then the handler issues the `read()` itself, noted here as gone by.
    mutating func takeHeldRead() -> Bool {
        defer { awaitingRead = false }
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
