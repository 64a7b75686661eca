#if Tools
import IMCodec

/// The client side of resuming (session.proto): the position this device holds in its user's
/// stream, and what it holds per conversation; the requests that fill the gap a reconnect left, and
/// the order in which frames are handed on.
///
/// The stream (every kept frame: messages and events, each device exactly once):
/// - Log in with `stream_resume` and ``streamPosition``.
/// - Give the `login_result` to ``streamLoggedIn(_:limit:)``: it returns the first stream sync request.
/// - Give every `stream_sync_response` to ``streamSynced(_:limit:)``: it returns the frames to hand
///   on, in position order, and the next request until the device has caught up.
/// - Give every other frame to ``accept(_:)``: a kept frame at or below ``streamPosition`` (one a
///   sync already handed on) is refused; frames that are not kept (no stream position) pass.
/// - Send ``streamAck`` now and then, so that a login without a position resumes where this device was.
///
/// Per conversation (messages only, by seq):
/// - Log in with ``lastSeen`` (the highest seq delivered per conversation).
/// - Give the `login_result` to ``loggedIn(_:limit:)``: it returns the first sync requests (each from
///   the last seq delivered + 1 to the relay's max seq at login), at most ``maxSyncsInFlight`` of
///   them: the relay answers a session's reads past its bound with busy (3013).
/// - Give every live message to ``received(_:)``, every sync response to ``synced(_:limit:)``: they
///   return the messages to hand on, each exactly once and in seq order, and ``synced(_:limit:)`` the
///   requests to send next (a sync's next page, the next conversation's first, or again one the
///   relay answered busy). A live message for a
///   conversation whose sync is under way is held back until the sync is done (it is newer than
///   everything the sync returns), and a message at or below the last seq delivered is dropped.
struct ResumeTracker: Sendable {
    /// The user this client is.
    let user: String
    /// The highest seq handed on per conversation.
    private(set) var delivered: [String: UInt64] = [:]
    private var conversations: [String: Conversation] = [:]
    /// Conversations whose sync is under way: the seq it goes up to.
    private var syncing: [String: UInt64] = [:]
    /// Live messages held back while their conversation syncs.
    private var held: [String: [Message]] = [:]
    /// Sync requests not sent yet: past ``maxSyncsInFlight``, or answered busy.
    private var pending: [SyncRequest] = []
    /// Sync requests sent and not answered yet.
    private var inFlight = 0
    /// The most sync requests under way at once: below the reads the relay lets one session have
    /// waiting (8), so that a login with many conversations behind is not answered busy.
    static let maxSyncsInFlight = 4
    /// The position of the last stream frame handed on.
    private(set) var streamPosition: UInt64 = 0
    /// Whether the stream sync after a login is under way.
    private(set) var isCatchingUp = false
    /// Set when the relay dropped stream frames this device had not read (retention).
    private(set) var missedFrames = false

    init(user: String) {
        self.user = user
    }

    /// Whether some conversation is still syncing.
    var isSyncing: Bool { !syncing.isEmpty }

    /// The `last_seen` of the next login.
    var lastSeen: [ConversationSeq] {
        delivered.keys.sorted().compactMap { id in
            guard let conversation = conversations[id] else { return nil }
            return ConversationSeq.with {
                $0.conversation = conversation
                $0.seq = delivered[id] ?? 0
            }
        }
    }

    /// The conversation `message` belongs to, as this user names it (a one-to-one one by the peer).
    func conversation(of message: Message) -> Conversation {
        var conversation = message.conversation ?? Conversation()
        if conversation.type == .oneToOne, message.senderID != user {
            conversation.targetID = message.senderID
        }
        return conversation
    }

    private static func id(_ conversation: Conversation) -> String {
        "\(conversation.type.rawValue)\u{0}\(conversation.targetID)\u{0}\(conversation.channelID)"
    }

    /// Starts a sync for every conversation of the login result with a gap; returns their first requests.
    mutating func loggedIn(_ result: LoginResult, limit: UInt32 = 0) -> [SyncRequest] {
        syncing = [:]
        held = [:]
        pending = []
        inFlight = 0
        for max in result.maxSeqs {
            guard let conversation = max.conversation else { continue }
            let id = Self.id(conversation)
            conversations[id] = conversation
            var have = delivered[id] ?? 0
            if max.seq < have {
                // The relay has fewer messages than this client holds: it lost its store (a relay
                // run with --store memory restarted). What it has now is new: start from its seq 1.
                have = 0
                delivered[id] = 0
            }
            guard max.seq > have else { continue }
            syncing[id] = max.seq
            pending.append(
                SyncRequest.with {
                    $0.conversation = conversation
                    $0.fromSeq = have + 1
                    $0.toSeq = max.seq
                    $0.limit = limit
                }
            )
        }
        return nextRequests()
    }

    /// The pending sync requests that may be sent now, counted as under way.
    private mutating func nextRequests() -> [SyncRequest] {
        let count = min(pending.count, Self.maxSyncsInFlight - inFlight)
        guard count > 0 else { return [] }
        inFlight += count
        defer { pending.removeFirst(count) }
        return Array(pending.prefix(count))
    }

    /// The stream sync request that starts catching up after `result` (always one: its last answer
    /// makes this device live).
    mutating func streamLoggedIn(_ result: LoginResult, limit: UInt32 = 0) -> StreamSyncRequest {
        // Without a position of its own, the device resumes where the relay last saw it.
        if streamPosition == 0 { streamPosition = result.resumePosition }
        isCatchingUp = true
        return StreamSyncRequest.with {
            $0.afterPosition = streamPosition
            $0.limit = limit
        }
    }

    /// A stream sync response: the frames to hand on, in position order, and the next request
    /// while the device has not caught up.
    mutating func streamSynced(
        _ response: StreamSyncResponse,
        limit: UInt32 = 0
    )
        -> (frames: [Frame], next: StreamSyncRequest?)
    {
        if response.truncated { missedFrames = true }
        if response.errorCode == 0, response.headPosition < streamPosition {
            // The relay's stream is behind this device: it lost its store (a relay run with
            // --store memory restarted). What it has now is new: read it from the start.
            streamPosition = 0
            missedFrames = true
            return ([], StreamSyncRequest.with { $0.limit = limit })
        }
        var frames: [Frame] = []
        for item in response.frames where item.position > streamPosition {
            // The relay sent these bytes itself; a frame that does not decode is skipped.
            guard
                let frame = try? Frame(serializedBytes: item.frame, options: DecodingOptions(acceptsNewerFrames: true))
            else { continue }
            streamPosition = item.position
            noteDelivered(frame)
            frames.append(frame)
        }
        streamPosition = max(streamPosition, response.nextAfterPosition)
        if response.errorCode == RelayProtocol.RequestError.busy {
            // Not read (the session had as many reads waiting as the relay allows): ask again.
            // Ending the catch-up here acked a position the device had not read past.
            return (
                frames,
                StreamSyncRequest.with {
                    $0.afterPosition = streamPosition; $0.limit = limit
                }
            )
        }
        guard response.errorCode == 0, response.hasMore else {
            isCatchingUp = false
            return (frames, nil)
        }
        return (
            frames,
            StreamSyncRequest.with {
                $0.afterPosition = streamPosition
                $0.limit = limit
            }
        )
    }

    /// Whether a frame that arrived live is to be handed on: not when it is a kept frame this
    /// device already has (at or below ``streamPosition``).
    mutating func accept(_ frame: Frame) -> Bool {
        guard frame.streamPosition != 0 else { return true }
        guard frame.streamPosition > streamPosition else { return false }
        streamPosition = frame.streamPosition
        noteDelivered(frame)
        return true
    }

    /// The ack that tells the relay this device's position.
    var streamAck: StreamAck { StreamAck.with { $0.position = streamPosition } }

    /// Keeps the per-conversation seq of a message that came through the stream.
    private mutating func noteDelivered(_ frame: Frame) {
        guard case .message(let message)? = frame.payload, message.seq != 0 else { return }
        let conversation = conversation(of: message)
        let id = Self.id(conversation)
        conversations[id] = conversation
        delivered[id] = max(delivered[id] ?? 0, message.seq)
    }

    /// A live message: the messages to hand on now (none while its conversation syncs, or for a duplicate).
    mutating func received(_ message: Message) -> [Message] {
        let conversation = conversation(of: message)
        let id = Self.id(conversation)
        if syncing[id] != nil {
            held[id, default: []].append(message)
            return []
        }
        conversations[id] = conversation
        guard message.seq > delivered[id] ?? 0 else { return [] }
        delivered[id] = message.seq
        return [message]
    }

    /// A sync response: the messages to hand on, and the requests to send next: the sync's next
    /// page, other conversations' first once this one is done, or this one again when the relay
    /// was busy (it holds its messages back until then).
    mutating func synced(_ response: SyncResponse, limit: UInt32 = 0) -> (messages: [Message], next: [SyncRequest]) {
        guard let conversation = response.conversation else { return ([], []) }
        let id = Self.id(conversation)
        conversations[id] = conversation
        var out: [Message] = []
        for message in response.messages where message.seq > delivered[id] ?? 0 {
            delivered[id] = message.seq
            out.append(message)
        }
        if response.errorCode == 0, response.hasMore, let upTo = syncing[id] {
            let next = SyncRequest.with {
                $0.conversation = conversation
                $0.fromSeq = response.nextFromSeq
                $0.toSeq = upTo
                $0.limit = limit
            }
            return (out, [next])
        }
        // Only an answer to a request of this tracker's (one of a conversation it syncs) frees a place.
        if syncing[id] != nil { inFlight = max(0, inFlight - 1) }
        if response.errorCode == RelayProtocol.RequestError.busy, let upTo = syncing[id] {
            // Not read: asked again first, once another read is answered (at once when none is
            // under way). Ending the sync here handed on the live messages held back and skipped
            // the gap for good (the next login's last_seen was past it).
            pending.insert(
                SyncRequest.with {
                    $0.conversation = conversation
                    $0.fromSeq = (delivered[id] ?? 0) + 1
                    $0.toSeq = upTo
                    $0.limit = limit
                },
                at: 0
            )
            return (out, inFlight == 0 ? nextRequests() : [])
        }
        // Done: what arrived live meanwhile follows, in seq order, without what the sync returned.
        syncing[id] = nil
        for message in (held.removeValue(forKey: id) ?? []).sorted(by: { $0.seq < $1.seq })
        where message.seq > delivered[id] ?? 0 {
            delivered[id] = message.seq
            out.append(message)
        }
        return (out, nextRequests())
    }
}
#endif
