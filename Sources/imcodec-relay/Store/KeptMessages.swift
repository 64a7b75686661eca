#if Tools
/// What the router holds of a kept message, by seq (``KeptMessages``): what identifies it, when it
/// was stamped and the size of its stamped frame. The frame itself stays in the store.
///
/// Held for every kept message of every conversation, so its layout is kept small (64 bytes): the
/// uid packed in 16 bytes, the size in 32 bits, the sender a string its conversation shares
/// between messages (``ConversationState``).
struct KeptMessage: Equatable, Sendable {
    /// The sender's user id.
    var sender: String
    /// The sender's `client_msg_id` (empty: none).
    var clientMsgID: String
    /// The `server_msg_uid` (``PackedUID``).
    var uid: PackedUID
    /// The stamped frame's size in bytes; 0 once the message was erased (it expired).
    private var frameSize: UInt32
    /// The `server_time_ms`.
    var serverTimeMs: Int64

    init(sender: String, clientMsgID: String, serverMsgUID: String, serverTimeMs: Int64, size: Int) {
        self.sender = sender
        self.clientMsgID = clientMsgID
        self.uid = PackedUID(serverMsgUID)
        // A stamped frame is at most --max-frame-size (an Int32 flag); a larger one is no frame
        // the relay sent, and counts as the largest.
        self.frameSize = UInt32(clamping: size)
        self.serverTimeMs = serverTimeMs
    }

    /// The `server_msg_uid`, as stamped.
    var serverMsgUID: String { uid.string }

    /// The stamped frame's size in bytes; 0 once the message was erased.
    var size: Int { Int(frameSize) }
}

/// A `server_msg_uid` in the space it needs: the 32 lowercase hex digits the relay writes
/// (``ServerIDs``) as 16 bytes; any other text (a store of an earlier relay) as it is.
enum PackedUID: Hashable, Sendable {
    /// 32 lowercase hex digits, as two 64-bit halves.
    case hex(UInt64, UInt64)
    /// Any other uid.
    case text(String)

    init(_ uid: String) {
        var high: UInt64 = 0
        var low: UInt64 = 0
        var digits = 0
        for byte in uid.utf8 {
            let nibble: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): nibble = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): nibble = byte - UInt8(ascii: "a") + 10
            default:
                self = .text(uid)
                return
            }
            guard digits < 32 else {
                self = .text(uid)
                return
            }
            if digits < 16 {
                high = high << 4 | UInt64(nibble)
            } else {
                low = low << 4 | UInt64(nibble)
            }
            digits += 1
        }
        self = digits == 32 ? .hex(high, low) : .text(uid)
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)

    /// The uid as it was given.
    var string: String {
        switch self {
        case .text(let text): return text
        case .hex(let high, let low):
            return String(unsafeUninitializedCapacity: 32) { out in
                for index in 0..<16 {
                    out[index] = Self.hexDigits[Int(high >> (60 - 4 * UInt64(index)) & 0xf)]
                    out[16 + index] = Self.hexDigits[Int(low >> (60 - 4 * UInt64(index)) & 0xf)]
                }
                return 32
            }
        }
    }
}

/// A conversation's kept messages by seq: an array from its oldest kept seq, since kept seqs are
/// consecutive (retention drops the oldest; a seq is given to kept messages only). A seq in the
/// range with no message (a row the store could not read at start) is a hole. Dropping the oldest
/// moves a start index; the array is compacted when that index passes half of it.
struct KeptMessages: Sendable {
    private var entries: [KeptMessage?] = []
    /// The index in `entries` of seq `first`.
    private var head = 0
    /// The seq at `entries[head]`.
    private var first: UInt64 = 0
    /// The messages held (holes not counted).
    private(set) var count = 0

    var isEmpty: Bool { count == 0 }

    /// The number of seqs from `first` that `entries` covers.
    private var span: Int { entries.count - head }

    subscript(seq: UInt64) -> KeptMessage? {
        guard seq >= first, seq - first < UInt64(span) else { return nil }
        return entries[head + Int(seq - first)]
    }

    /// The messages held, with their seqs, oldest first (tests).
    var all: [(seq: UInt64, message: KeptMessage)] {
        entries[head...].enumerated().compactMap { offset, message in
            message.map { (first + UInt64(offset), $0) }
        }
    }

    /// Holds `message` as seq `seq`, replacing any held there. Seqs come in order (the router's next
    /// seq, or the store's rows oldest first); one before the first held is put in front.
    mutating func insert(_ message: KeptMessage, at seq: UInt64) {
        if span == 0 {
            entries.removeAll(keepingCapacity: true)
            head = 0
            first = seq
        }
        if seq < first {
            entries.replaceSubrange(head..<head, with: repeatElement(nil, count: Int(first - seq)))
            first = seq
        }
        let offset = Int(seq - first)
        if offset >= span { entries.append(contentsOf: repeatElement(nil, count: offset - span + 1)) }
        if entries[head + offset] == nil { count += 1 }
        entries[head + offset] = message
    }

    /// Drops the message at `seq` and returns it; dropping the oldest frees its place.
    @discardableResult
    mutating func removeValue(at seq: UInt64) -> KeptMessage? {
        guard let message = self[seq] else { return nil }
        entries[head + Int(seq - first)] = nil
        count -= 1
        while head < entries.count, entries[head] == nil {
            head += 1
            first += 1
        }
        if head == entries.count {
            entries.removeAll(keepingCapacity: true)
            head = 0
        } else if head >= 64, head * 2 >= entries.count {
            entries.removeFirst(head)
            head = 0
        }
        return message
    }
}

/// Seqs by a key (a message's uid, or its sender and `client_msg_id`), held as a map from the key's
/// hash to the seq: 16 bytes an entry, where a map from the key itself held the key's strings.
///
/// The lookups stay exact: a hit is checked against the kept message's own key (`keyOf`), and a key
/// whose hash another kept key already holds goes to a map by the key itself (`collided`), which a
/// lookup reads when the hash misses.
struct DigestIndex<Key: Hashable & Sendable>: Sendable {
    private var byDigest: [Int: UInt64] = [:]
    private var collided: [Key: UInt64] = [:]

    /// The seq held for `key`; `keyOf` gives the key of the message kept at a seq.
    func seq(of key: Key, keyOf: (UInt64) -> Key?) -> UInt64? {
        if let seq = byDigest[key.hashValue], keyOf(seq) == key { return seq }
        return collided.isEmpty ? nil : collided[key]
    }

    /// Holds `seq` for `key` (a later seq for the same key replaces the earlier one).
    mutating func insert(_ key: Key, seq: UInt64, keyOf: (UInt64) -> Key?) {
        let digest = key.hashValue
        if let held = byDigest[digest], held != seq, let heldKey = keyOf(held), heldKey != key {
            collided[key] = seq
        } else {
            byDigest[digest] = seq
            if !collided.isEmpty { collided[key] = nil }
        }
    }

    /// Forgets `key` if it is held for `seq` (it may have been replaced since).
    mutating func remove(_ key: Key, seq: UInt64) {
        let digest = key.hashValue
        if byDigest[digest] == seq {
            byDigest[digest] = nil
        } else if collided[key] == seq {
            collided[key] = nil
        }
    }

    /// The number of keys held in the map by the key itself (tests).
    var collisions: Int { collided.count }
}
#endif
