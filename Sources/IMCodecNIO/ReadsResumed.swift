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
/// handler then issues one `read()` itself (`deadlinePassed(readsPaused:)`) and gives the frame its whole wait
/// again. Once per hold: if that read's batch is held back too (no `read()` went by since it), the
/// application does hold the reads, and later deadlines only start again until the application's
/// `read()` goes by, which gives the frame its whole wait again. A frame is late after a whole wait with
/// a `read()` pending: the peer sent nothing. (Trusting the application's `read()` alone let a
/// `channelReadComplete` that no `read()` follows, as an HTTP upgrade that completes asynchronously
/// fires for the bytes it held, make every deadline look held: a stalled peer was never late.)
/// So a hold lets in at most one more batch of reads than the application asked for.
struct HeldReads {
    /// A batch of reads ended and no `read()` went by since.
    private var awaitingRead = false
    /// The handler issued a `read()` for this hold, and the application's has not gone by since.
    private var readForTheHold = false

    /// At `channelReadComplete`.
    mutating func batchEnded() { awaitingRead = true }

    /// At a `read()` of the application's (or the channel's own, with `autoRead`); returns whether
    /// it ends a hold a deadline passed in (the handler read for it): the frame then gets its whole
    /// wait again, as the rest may have waited in the socket.
    mutating func readGoesBy() -> Bool {
        defer {
            awaitingRead = false
            readForTheHold = false
        }
        return readForTheHold
    }

    /// What a handler does when a deadline passes.
    enum Deadline {
        /// The time was the peer's: the frame is late.
        case late
        /// Reads are off (`autoRead`), or held back and read for already: it waits again.
        case waitAgain
        /// Reads are held back since the last batch: it waits again, and issues one `read()` (after
        /// arming, as the read may deliver bytes at once), noted here.
        case readAndWaitAgain
    }

    /// When a deadline passes; `readsPaused` is whether the channel's `autoRead` is off.
    mutating func deadlinePassed(readsPaused: Bool) -> Deadline {
        if readsPaused { return .waitAgain }
        guard awaitingRead else { return .late }
        guard !readForTheHold else { return .waitAgain }
        awaitingRead = false
        readForTheHold = true
        return .readAndWaitAgain
    }
}

extension HeldReads.Deadline {
    /// Acts on it for a deadline handler: `false` when the frame is late; else `arm`s the deadline
    /// again and, for a hold, then `read`s once.
    func waitsAgain(arm: () -> Void, read: () -> Void) -> Bool {
        switch self {
        case .late:
            return false
        case .waitAgain:
            arm()
        case .readAndWaitAgain:
            arm()
            read()
        }
        return true
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
