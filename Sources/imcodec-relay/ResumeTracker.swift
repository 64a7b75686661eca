#if Tools
import IMCodec

/// The client side of resuming (session.proto): what a client holds per conversation, the sync
/// requests that fill the gap a reconnect left, and the order in which messages are handed on.
///
/// - Log in with ``lastSeen`` (the highest seq delivered per conversation).
/// - Give the `login_result` to ``loggedIn(_:limit:)``: it returns a sync request (from the last seq
///   delivered + 1 to the relay's max seq at login) for every conversation with a gap.
/// - Give every live message to ``received(_:)``, every sync response to ``synced(_:limit:)``: they
///   return the messages to hand on, each exactly once and in seq order. A live message for a
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
        var requests: [SyncRequest] = []
        for max in result.maxSeqs {
            guard let conversation = max.conversation else { continue }
            let id = Self.id(conversation)
            conversations[id] = conversation
            var have = delivered[id] ?? 0
            if max.seq < have {
                // The relay has fewer messages than this client holds: it restarted and lost its store
                // (it keeps messages in memory only). What it has now is new: start from its seq 1.
                have = 0
                delivered[id] = 0
            }
            guard max.seq > have else { continue }
            syncing[id] = max.seq
            requests.append(SyncRequest.with {
                $0.conversation = conversation
                $0.fromSeq = have + 1
                $0.toSeq = max.seq
                $0.limit = limit
            })
        }
        return requests
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

    /// A sync response: the messages to hand on, and the next request while the sync is not done.
    mutating func synced(_ response: SyncResponse, limit: UInt32 = 0) -> (messages: [Message], next: SyncRequest?) {
        guard let conversation = response.conversation else { return ([], nil) }
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
            return (out, next)
        }
        // Done: what arrived live meanwhile follows, in seq order, without what the sync returned.
        syncing[id] = nil
        for message in (held.removeValue(forKey: id) ?? []).sorted(by: { $0.seq < $1.seq })
        where message.seq > delivered[id] ?? 0 {
            delivered[id] = message.seq
            out.append(message)
        }
        return (out, nil)
    }
}
#endif
