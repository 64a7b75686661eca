#if Tools
import IMCodec

/// What a state record is about: the relay's per-user and per-message state besides messages and
/// streams, kept by the store as opaque bytes under a key (``StoreBatch/records``).
///
/// - a user's view of a conversation (``UserConversation``: unread count, @ of the user, pinned,
///   archived, draft, cleared history...);
/// - a user's blocklist (a `BlocklistResponse`'s bytes);
/// - a message's extension (a `MessageExtension`'s bytes, each key with its version);
/// - what changed on a message since it was sent (a `Message` with the last edit's content and
///   `edit_version`, and `updated_at_ms`);
/// - a conversation's disappearing-message timer (the `DisappearingTimerEvent` that set it);
/// - the messages a user deleted for itself only in a conversation (their seqs, as
///   ``SeqListBytes`` writes them);
/// - a message's polls with their votes (``PollTally/recordBytes(_:)``), and the ones whose results
///   after a vote the relay has not sent yet (their ids, as ``StringListBytes`` writes them);
/// - that a message was sent with `MESSAGE_FLAG_NEED_READ_RECEIPT` (``Router/messageReaders``: a
///   leading 1; a record from before per-reader records holds the readers after it, as
///   ``StringListBytes`` writes them), and each user who read it (its place in the order they read
///   it, as ``SeqListBytes`` writes it);
/// - a conversation's view-once messages (their seqs, as ``SeqListBytes`` writes them);
/// - a device's record: where its stream began for view-once messages (``Router/deviceFloors``),
///   then when the relay last saw it (a counter per user, moved at each login and disconnection,
///   Router+Devices.swift) and at what time (ms since 1970, its user's `last_seen_ms` after a
///   restart), as ``SeqListBytes`` writes them (a record from before the second holds the first
///   only, one from before the third the first two);
/// - the digests a device's newest events were remembered by (``RecentEvents``, as ``SeqListBytes``
///   writes them), so that a resend is found after a restart as before it.
///
/// A store keeps each record in one row, `(scope, id) → value`, so a new kind of state needs no
/// new table.
enum StateRecordKey: Hashable, Sendable {
    case conversation(user: String, ConversationKey)
    case blocklist(user: String)
    case messageExtension(ConversationKey, seq: UInt64)
    /// What changed on a kept message since it was sent (``Router/messageChanges``): a `Message`'s bytes.
    case messageChange(ConversationKey, seq: UInt64)
    /// A conversation's disappearing-message timer (``Router/disappearingTimers``): the bytes of the
    /// `DisappearingTimerEvent` that set it.
    case disappearingTimer(ConversationKey)
    /// The seqs of the messages of a conversation a user deleted for itself only
    /// (``Router/deletedForMe``).
    case deletedForMe(user: String, ConversationKey)
    /// The polls of a kept message with every vote (``Router/polls``).
    case polls(ConversationKey, seq: UInt64)
    /// The polls of a kept message whose results after a vote are held back, not sent yet
    /// (``Router/heldPollResults``).
    case heldPollResults(ConversationKey, seq: UInt64)
    /// That a kept message was sent with `MESSAGE_FLAG_NEED_READ_RECEIPT` (``Router/messageReaders``),
    /// written once when it is kept (or, from earlier relays, with every reader).
    case readers(ConversationKey, seq: UInt64)
    /// A user who read a kept message sent with `MESSAGE_FLAG_NEED_READ_RECEIPT`: its place in the
    /// order they read it. One record per reader, written once, so a read writes one name where a
    /// record of every reader was rewritten whole at each read (for one message that all 1,000
    /// members of a group read, 500,500 names).
    case reader(MessageKey, user: String)
    /// A user who left a group, chatroom or channel: its stream head then (``Router/leavePositions``,
    /// as ``SeqListBytes`` writes it).
    case leave(ConversationKey, user: String)
    /// A conversation's kept view-once messages (``Router/viewOnceMessages``).
    case viewOnce(ConversationKey)
    /// A device's record: the user's stream head when the relay first saw it log in
    /// (``Router/deviceFloors``), then when it was last seen (Router+Devices.swift).
    case deviceFloor(DeviceKey)
    /// The digests a device's newest events were remembered by (``RecentEvents``, oldest first, as
    /// ``SeqListBytes`` writes them): the window that finds a resend, as it was, after a restart.
    case sentEvents(DeviceKey)
    /// The members a group of the groups file named at the last start (``StringListBytes``): a
    /// start takes out of the group only those the file named then and names no more.
    case fileGroup(String)
    /// A kept reply whose `quote_snapshot` quotes the text of a kept message (``Router/quotedBy``):
    /// one byte, 1.
    case quote(of: MessageKey, reply: MessageKey)

    /// The record's kind, as stored.
    var scope: String {
        switch self {
        case .conversation: return "conversation"
        case .blocklist: return "blocklist"
        case .messageExtension: return "extension"
        case .messageChange: return "change"
        case .disappearingTimer: return "timer"
        case .deletedForMe: return "deleted"
        case .polls: return "poll"
        case .heldPollResults: return "pollheld"
        case .readers: return "read"
        case .reader: return "reader"
        case .leave: return "leave"
        case .viewOnce: return "viewonce"
        case .deviceFloor: return "devicefloor"
        case .sentEvents: return "sent"
        case .fileGroup: return "filegroup"
        case .quote: return "quote"
        }
    }

    /// The record's id within its scope, as stored: `LEN:USER` + the conversation's
    /// ``ConversationKey/storageID`` (a user's view, a user's deleted messages, its leave) or + the device id
    /// (a device's floor), the user, `SEQ:` + the conversation's storage id, the conversation's
    /// storage id, `LEN:QUOTED` + the reply (both ``MessageKey/storageID``s, a quote), or
    /// `LEN:MESSAGE` + the user (a reader).
    var id: String {
        switch self {
        case .conversation(let user, let key), .deletedForMe(let user, let key), .leave(let key, let user):
            return "\(user.utf8.count):\(user)\(key.storageID)"
        case .blocklist(let user): return user
        case .fileGroup(let group): return group
        case .messageExtension(let key, let seq), .messageChange(let key, let seq), .polls(let key, let seq),
            .heldPollResults(let key, let seq), .readers(let key, let seq):
            return "\(seq):\(key.storageID)"
        case .disappearingTimer(let key), .viewOnce(let key): return key.storageID
        case .deviceFloor(let device), .sentEvents(let device):
            return "\(device.user.utf8.count):\(device.user)\(device.device)"
        case .quote(let quoted, let reply):
            return "\(quoted.storageID.utf8.count):\(quoted.storageID)\(reply.storageID)"
        case .reader(let message, let user):
            return "\(message.storageID.utf8.count):\(message.storageID)\(user)"
        }
    }

    /// The key stored as `scope` and `id`, or `nil` for a pair no key gives.
    init?(scope: String, id: String) {
        switch scope {
        case "blocklist":
            self = .blocklist(user: id)
        case "filegroup":
            self = .fileGroup(id)
        case "conversation", "deleted", "leave":
            guard let (user, rest) = Self.split(id), let key = ConversationKey(storageID: rest) else { return nil }
            switch scope {
            case "conversation": self = .conversation(user: user, key)
            case "deleted": self = .deletedForMe(user: user, key)
            default: self = .leave(key, user: user)
            }
        case "devicefloor", "sent":
            guard let (user, device) = Self.split(id) else { return nil }
            let key = DeviceKey(user: user, device: device)
            self = scope == "sent" ? .sentEvents(key) : .deviceFloor(key)
        case "timer", "viewonce":
            guard let key = ConversationKey(storageID: id) else { return nil }
            self = scope == "timer" ? .disappearingTimer(key) : .viewOnce(key)
        case "quote":
            guard let (quoted, reply) = Self.split(id), let quotedKey = MessageKey(storageID: quoted),
                let replyKey = MessageKey(storageID: reply)
            else { return nil }
            self = .quote(of: quotedKey, reply: replyKey)
        case "reader":
            guard let (message, user) = Self.split(id), let messageKey = MessageKey(storageID: message) else {
                return nil
            }
            self = .reader(messageKey, user: user)
        case "extension", "change", "poll", "pollheld", "read":
            guard let message = MessageKey(storageID: id) else { return nil }
            let (key, seq) = (message.conversation, message.seq)
            switch scope {
            case "extension": self = .messageExtension(key, seq: seq)
            case "change": self = .messageChange(key, seq: seq)
            case "poll": self = .polls(key, seq: seq)
            case "pollheld": self = .heldPollResults(key, seq: seq)
            default: self = .readers(key, seq: seq)
            }
        default:
            return nil
        }
    }
}

extension StateRecordKey {
    /// The part an id `LEN:PART...` starts with (a user, a quoted message), and what follows it.
    private static func split(_ id: String) -> (first: String, rest: String)? {
        let utf8 = Array(id.utf8)
        guard let colon = utf8.firstIndex(of: UInt8(ascii: ":")),
            let length = Int(String(decoding: utf8[..<colon], as: UTF8.self)),
            length >= 0, length <= utf8.count - colon - 1
        else { return nil }
        return (
            String(decoding: utf8[(colon + 1)..<(colon + 1 + length)], as: UTF8.self),
            String(decoding: utf8[(colon + 1 + length)...], as: UTF8.self)
        )
    }
}

/// The form a state record gives a part of its own length: a 4-byte little-endian length, then the
/// part.
enum LengthPrefixedBytes {
    /// Appends `part` with its length to `bytes`.
    static func append(_ part: [UInt8], to bytes: inout [UInt8]) {
        withUnsafeBytes(of: UInt32(part.count).littleEndian) { bytes.append(contentsOf: $0) }
        bytes.append(contentsOf: part)
    }

    /// The part at the front of `bytes`, which then start after it; `nil` when they hold no whole
    /// part.
    static func take(from bytes: inout ArraySlice<UInt8>) -> ArraySlice<UInt8>? {
        guard bytes.count >= 4 else { return nil }
        let length = bytes.prefix(4).reversed().reduce(0) { $0 << 8 | Int($1) }
        guard length <= bytes.count - 4 else { return nil }
        let part = bytes.dropFirst(4).prefix(length)
        bytes = bytes.dropFirst(4 + length)
        return part
    }
}

/// The form a state record gives a list of strings (who read a message, the polls whose results are
/// held back): each as ``LengthPrefixedBytes`` writes it, nothing around them.
enum StringListBytes {
    /// Appends `strings` to `bytes`.
    static func append(_ strings: [String], to bytes: inout [UInt8]) {
        for string in strings { LengthPrefixedBytes.append(Array(string.utf8), to: &bytes) }
    }

    /// The strings `bytes` hold, or `nil` when they are not such a list.
    static func strings(_ bytes: ArraySlice<UInt8>) -> [String]? {
        var rest = bytes
        var strings: [String] = []
        while !rest.isEmpty {
            guard let part = LengthPrefixedBytes.take(from: &rest) else { return nil }
            strings.append(String(decoding: part, as: UTF8.self))
        }
        return strings
    }
}

/// The form a state record gives a list of seqs (a user's unread seqs, the messages it deleted for
/// itself): 8 bytes each, little-endian, nothing around them.
enum SeqListBytes {
    /// Appends `seqs` to `bytes`.
    static func append(_ seqs: [UInt64], to bytes: inout [UInt8]) {
        #if _endian(little)
        seqs.withUnsafeBytes { bytes.append(contentsOf: $0) }
        #else
        for seq in seqs { withUnsafeBytes(of: seq.littleEndian) { bytes.append(contentsOf: $0) } }
        #endif
    }

    /// `seqs` as a record holds them.
    static func bytes(_ seqs: [UInt64]) -> [UInt8] {
        var bytes: [UInt8] = []
        append(seqs, to: &bytes)
        return bytes
    }

    /// The seqs `bytes` hold, or `nil` when they are not such a list (a length not a multiple of 8).
    static func seqs(_ bytes: ArraySlice<UInt8>) -> [UInt64]? {
        guard bytes.count % 8 == 0 else { return nil }
        return bytes.withUnsafeBytes { raw in
            (0..<(raw.count / 8)).map {
                UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: 8 * $0, as: UInt64.self))
            }
        }
    }
}
#endif
