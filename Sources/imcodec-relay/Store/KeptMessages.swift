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

    /// What a resend and a reference without a uid find it by.
    var senderKey: ConversationState.SenderKey { .init(sender: sender, clientMsgID: clientMsgID) }

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
/// consecutive (retention drops the oldest; a seq is given to kept messages only). Dropping the
/// oldest moves a start index; the array is compacted when that index passes a quarter of it, so
/// at a conversation's retention limit it holds at most 4/3 of the messages kept (and the spare
/// capacity an array keeps as it grows).
///
/// A store could still hold seqs that are not consecutive (damage, or a hand edit): a seq more than
/// ``maxGap`` from the array's range is held in a dictionary instead of padding the array with
/// empty places, so no seq read from a store makes the array huge.
struct KeptMessages: Sendable {
    /// The most empty places an insert pads the array with.
    static let maxGap = 4_096

    private var entries: [KeptMessage?] = []
    /// The index in `entries` of seq `first`.
    private var head = 0
    /// The seq at `entries[head]`.
    private var first: UInt64 = 0
    /// Messages whose seqs are far from the array's (none in a store the relay wrote).
    private var outliers: [UInt64: KeptMessage] = [:]
    /// The messages held in `entries` (empty places not counted).
    private var inArray = 0

    /// The messages held.
    var count: Int { inArray + outliers.count }

    var isEmpty: Bool { count == 0 }

    /// The number of seqs from `first` that `entries` covers.
    private var span: Int { entries.count - head }

    /// The index in `entries` of `seq`, if the array covers it.
    private func index(of seq: UInt64) -> Int? {
        guard seq >= first, seq - first < UInt64(span) else { return nil }
        return head + Int(seq - first)
    }

    /// A seq is held in the array or among the outliers, never both: an outlier the array grew
    /// over stays an outlier (its place in the array empty) until it is replaced or dropped.
    subscript(seq: UInt64) -> KeptMessage? {
        if let index = index(of: seq), let message = entries[index] { return message }
        return outliers.isEmpty ? nil : outliers[seq]
    }

    /// The messages held, with their seqs, oldest first (tests, and trims across a gap).
    var all: [(seq: UInt64, message: KeptMessage)] {
        let inOrder = entries[head...].enumerated().compactMap { offset, message in
            message.map { (seq: first + UInt64(offset), message: $0) }
        }
        guard !outliers.isEmpty else { return inOrder }
        return (inOrder + outliers.map { (seq: $0.key, message: $0.value) }).sorted { $0.seq < $1.seq }
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
            guard first - seq <= UInt64(Self.maxGap) else {
                outliers[seq] = message
                return
            }
            entries.replaceSubrange(head..<head, with: repeatElement(nil, count: Int(first - seq)))
            first = seq
        } else if seq - first >= UInt64(span) {
            guard seq - first - UInt64(span) < UInt64(Self.maxGap) else {
                outliers[seq] = message
                return
            }
            entries.append(contentsOf: repeatElement(nil, count: Int(seq - first) - span + 1))
        }
        let index = head + Int(seq - first)
        if entries[index] == nil { inArray += 1 }
        entries[index] = message
        if !outliers.isEmpty { outliers[seq] = nil }
    }

    /// Drops the message at `seq` and returns it; dropping the oldest frees its place.
    @discardableResult
    mutating func removeValue(at seq: UInt64) -> KeptMessage? {
        guard let index = index(of: seq), let message = entries[index] else {
            return outliers.isEmpty ? nil : outliers.removeValue(forKey: seq)
        }
        entries[index] = nil
        inArray -= 1
        while head < entries.count, entries[head] == nil {
            head += 1
            first += 1
        }
        if head == entries.count {
            entries.removeAll(keepingCapacity: true)
            head = 0
        } else if head >= 64, head * 4 >= entries.count {
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
