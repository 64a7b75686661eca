#if Tools
import IMCodec
import NIOCore

/// The messages the relay keeps for one conversation, in memory: the stamped records receivers got
/// (length prefix and body, byte for byte), in seq order, at most `capacity` of them. Past the
/// capacity the oldest record is dropped, so a sync from below ``oldestSeq`` starts at the oldest
/// kept one. Also remembers each kept message's (sender, client_msg_id), so that a message sent
/// again (after a reconnect, before its ack arrived) is acknowledged with its first stamp instead of
/// being stored and delivered twice.
final class ConversationLog {
    struct Entry {
        let record: ByteBuffer
        let stamp: ServerStamp
        let dedupeKey: String
    }

    let capacity: Int
    private var entries: [Entry] = []
    private var head = 0
    private var bySender: [String: UInt64] = [:]
    /// The highest seq assigned in the conversation (0: none yet).
    private(set) var maxSeq: UInt64 = 0

    init(capacity: Int) {
        self.capacity = max(1, capacity)
    }

    /// The seq of the oldest message kept (``maxSeq`` + 1 when none is kept).
    var oldestSeq: UInt64 { maxSeq + 1 - UInt64(entries.count - head) }

    /// The number of messages kept.
    var count: Int { entries.count - head }

    /// The next seq to assign.
    var nextSeq: UInt64 { maxSeq + 1 }

    /// The stamp of the kept message `clientMsgID` of `sender`, if any.
    func stamp(sender: String, clientMsgID: String) -> ServerStamp? {
        guard !clientMsgID.isEmpty, let seq = bySender[Self.key(sender, clientMsgID)] else { return nil }
        return entry(seq)?.stamp
    }

    /// Keeps `record`, the stamped message with seq ``nextSeq``.
    func append(_ record: ByteBuffer, stamp: ServerStamp, sender: String, clientMsgID: String) {
        maxSeq += 1
        let key = clientMsgID.isEmpty ? "" : Self.key(sender, clientMsgID)
        entries.append(Entry(record: record, stamp: stamp, dedupeKey: key))
        if !key.isEmpty { bySender[key] = maxSeq }
        if count > capacity {
            let dropped = entries[head]
            if !dropped.dedupeKey.isEmpty, bySender[dropped.dedupeKey] == oldestSeq {
                bySender[dropped.dedupeKey] = nil
            }
            entries[head] = Entry(record: ByteBuffer(), stamp: ServerStamp(), dedupeKey: "")
            head += 1
            if head >= 1024, head * 2 >= entries.count {
                entries.removeFirst(head)
                head = 0
            }
        }
    }

    /// The kept entry with `seq`, if any.
    func entry(_ seq: UInt64) -> Entry? {
        guard seq >= oldestSeq, seq <= maxSeq else { return nil }
        return entries[head + Int(seq - oldestSeq)]
    }

    private static func key(_ sender: String, _ clientMsgID: String) -> String { "\(sender)\u{0}\(clientMsgID)" }
}

/// Where a conversation of the relay is kept, and who may read it.
enum ConversationKey: Hashable {
    /// A one-to-one conversation between two users (`a < b`, or `a == b` for notes to oneself).
    case direct(String, String)
    /// A group, chatroom or ultra-group channel: its conversation with the user-independent fields.
    case shared(ConversationType, String, String)

    /// The key of `conversation` as `user` names it, or `nil` for a type the relay does not keep.
    init?(_ conversation: Conversation, user: String) {
        self.init(conversation.type, conversation.targetID, channelID: conversation.channelID, user: user)
    }

    /// The key of a conversation of `type` with `targetID` (and ultra-group `channelID`) as `user`
    /// names it, or `nil` for a type the relay does not keep or an empty target.
    init?(_ type: ConversationType, _ targetID: String, channelID: String = "", user: String) {
        guard !targetID.isEmpty else { return nil }
        switch type {
        case .oneToOne: self = user <= targetID ? .direct(user, targetID) : .direct(targetID, user)
        case .group, .chatroom: self = .shared(type, targetID, "")
        case .ultraGroup: self = .shared(type, targetID, channelID)
        default: return nil
        }
    }

    /// The key of a group (as the groups file names it).
    static func group(_ id: String) -> ConversationKey { .shared(.group, id, "") }

    /// The conversation as `user` names it (a one-to-one conversation by the other user's id).
    func conversation(for user: String) -> Conversation {
        switch self {
        case .direct(let a, let b):
            return .oneToOne(a == user ? b : a)
        case .shared(let type, let target, let channel):
            return Conversation.with {
                $0.type = type
                $0.targetID = target
                $0.channelID = channel
            }
        }
    }

    /// Whether this is a group, chatroom or ultra-group channel.
    var isShared: Bool {
        if case .shared = self { return true }
        return false
    }
}
#endif
