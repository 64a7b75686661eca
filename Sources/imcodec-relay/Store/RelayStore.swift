#if Tools
import IMCodec
import NIOCore

/// Where the relay keeps what it promises: messages, events, seq counters, membership, the resend
/// de-duplication and each device's stream position.
///
/// The router decides everything in memory, on its event loop (seqs, stream positions, who gets
/// what), and hands the store one ``StoreBatch`` per group commit; a frame is acknowledged and
/// forwarded only after the batch that holds it is committed (``StoreQueue``). Reads page through
/// what was committed. A store is used from one thread at a time (the ``StoreQueue``'s), so an
/// implementation needs no lock of its own.
///
/// Three stores exist: ``SQLiteRelayStore`` (the default, durable: WAL, one transaction per batch),
/// ``PostgresRelayStore`` (durable, on a PostgreSQL server: one routing relay per database, others
/// standing by or forwarding their clients to it, ``NodeLink``) and
/// ``MemoryRelayStore`` (for tests and the relay benchmark's baseline). The router does not change.
protocol RelayStore: AnyObject {
    /// Everything the router keeps in memory, read once at start.
    /// - Throws: ``RelayStoreError`` when the store is damaged or unreadable.
    func load() throws -> StoredState

    /// Commits `batch` atomically and durably: once this returns, a crash of the process loses none of it.
    func commit(_ batch: StoreBatch) throws

    /// The kept messages of `conversation` with seqs in `from...through`, in seq order, at most
    /// `limit`, leaving out targeted messages that `user` neither sent nor receives.
    func messages(
        in conversation: ConversationKey,
        from: UInt64,
        through: UInt64,
        limit: Int,
        visibleTo user: String
    ) throws -> [StoredMessage]

    /// The kept entries of `user`'s stream with positions in `after + 1 ... through`, in order, at
    /// most `limit`, each with the bytes of its frame (an entry whose message was dropped by
    /// retention comes with an empty frame).
    func stream(of user: String, after: UInt64, through: UInt64, limit: Int) throws -> [StreamRow]

    /// Releases what the store holds (a server connection, and the lock that keeps a second relay
    /// out), once the last commit is done; nothing is called on the store afterwards.
    func close()

    /// How the relay reaches the store, for people (`TLS TLSv1.3`), when that matters (a server).
    var connectionSummary: String? { get }

    /// How often the relay checks that it still holds the store (``checkConnection()``), or `nil`
    /// when it cannot lose it (a file, memory).
    var connectionCheckInterval: TimeAmount? { get }

    /// Checks that the store is still this relay's: a PostgreSQL store's connection, which holds the
    /// database's lock.
    /// - Throws: ``RelayStoreError`` when it is not; the relay stops.
    func checkConnection() throws

    /// Publishes where this relay, which routes for the database, takes links from the other relay
    /// nodes (``NodeLink``): only a PostgreSQL store has other nodes.
    func publish(_ node: RouterNode) throws
}

extension RelayStore {
    var connectionSummary: String? { nil }
    var connectionCheckInterval: TimeAmount? { nil }
    func checkConnection() throws {}
    func publish(_ node: RouterNode) throws {}

    /// A store that holds nothing to release (SQLite's file lock belongs to the data directory,
    /// ``RelayFiles/lock()``; its database is closed with the store).
    func close() {}
}

/// Why a store cannot be used; the relay stops with this message (it never resets a store).
struct RelayStoreError: Error, CustomStringConvertible {
    let description: String
}

/// What no relay writes, found in a store's rows as they are loaded (``StoredState``); the store
/// names its database around ``reason``.
struct DamagedState: Error {
    let reason: String
}

/// One message as kept: the stamped frame a receiver gets (without its length prefix).
struct StoredMessage: Sendable {
    var conversation: ConversationKey
    var seq: UInt64
    var senderID: String
    var clientMsgID: String
    var serverMsgUID: String
    var serverTimeMs: Int64
    /// The sender's frame with the server's stamp appended (``RelayProtocol/stampedFrame(body:stamp:decoder:)``).
    var frame: [UInt8]
    /// A targeted group message's receivers; empty: every member.
    var receivers: [String] = []
    /// The size of `frame`, for a message loaded without its frame (at start).
    var frameSize: Int? = nil
    /// When a disappearing message expires (`expire_at_ms`; 0: never): it is not served after that
    /// time, and its frame is erased (``StoreBatch/eraseExpiredThrough``).
    var expireAtMs: Int64 = 0
}

/// What an entry of a user's stream holds.
enum StreamItem: Sendable {
    /// A kept message, by its conversation and seq; `sent` on the sender's own stream.
    case message(ConversationKey, seq: UInt64, sent: Bool)
    /// A kept event, by its ``KeptEvent/id``: the entries of every user it reaches name one frame.
    case event(UInt64)
}

/// One entry of a user's stream.
struct StreamEntry: Sendable {
    var user: String
    var position: UInt64
    /// On the sender's own stream, the device that sent it (which does not get it back); `nil` on
    /// everyone else's.
    var originDevice: String?
    var item: StreamItem
}

/// An event frame kept once, however many streams it is in: a group edit reaches every member's
/// stream, and its bytes are stored one time, not once per member. A store keeps it while a stream
/// entry names it, and deletes it with the last such entry (retention).
struct KeptEvent: Sendable {
    /// Given by the router, increasing while it runs (``StoredState/lastEventID``); never one a kept
    /// event has (the id of an event retention deleted may be given again after a restart: no entry
    /// names it any more).
    var id: UInt64
    /// The frame, as sent to each stream's devices (each gets its own position appended).
    var frame: [UInt8]
    /// For an event about disappearing messages (an edit, a reaction...), when the last of them
    /// expires (0: never): the event is not served after that time and its frame is erased with theirs.
    var expireAtMs: Int64 = 0
    /// For an event that carries content of one kept message (an edit's new content, a stream
    /// chunk), that message: the frame is redacted when it is recalled or deleted for everyone
    /// (``StoreBatch/removals``, ``Redaction/event(_:)``).
    var about: MessageKey? = nil
}

/// A kept message, by its conversation and seq.
struct MessageKey: Hashable, Sendable {
    var conversation: ConversationKey
    var seq: UInt64

    /// As a store keeps it: `SEQ:` + the conversation's ``ConversationKey/storageID``.
    var storageID: String { "\(seq):\(conversation.storageID)" }

    init(conversation: ConversationKey, seq: UInt64) {
        self.conversation = conversation
        self.seq = seq
    }

    /// The key a ``storageID`` names, or `nil` for a string no key gives.
    init?(storageID: String) {
        guard let colon = storageID.firstIndex(of: ":"), let seq = UInt64(storageID[..<colon]),
            let conversation = ConversationKey(storageID: String(storageID[storageID.index(after: colon)...]))
        else { return nil }
        self.init(conversation: conversation, seq: seq)
    }
}

/// A stream entry read back, with the bytes of its frame.
struct StreamRow: Sendable {
    var position: UInt64
    /// The device that sent it, on the sender's own stream (see ``StreamEntry/originDevice``).
    var originDevice: String?
    /// The frame: a message's stamped record, or an event. Empty when retention dropped the message.
    var frame: [UInt8]
    /// A message on its sender's stream (delivered with `direction: SENT`).
    var sent: Bool
    /// Whether the entry is a message (else an event).
    var isMessage: Bool
    /// When the message, or an event about disappearing messages, expires (0: never).
    var expireAtMs: Int64 = 0
}

/// The writes of one group commit.
struct StoreBatch: Sendable {
    var messages: [StoredMessage] = []
    /// The events the batch keeps, each named by one or more of `streamEntries` (``KeptEvent``).
    var events: [KeptEvent] = []
    var streamEntries: [StreamEntry] = []
    /// Membership changes in order: joined (true) or left.
    var memberships: [(conversation: ConversationKey, user: String, joined: Bool)] = []
    /// Messages recalled or deleted for everyone: edits and reactions to them are refused, and the
    /// store keeps `stub` (``Redaction/message(in:seq:sender:clientMsgID:serverMsgUID:serverTimeMs:)``)
    /// in place of each one's frame and redacts the events that carried its content
    /// (``KeptEvent/about``, ``Redaction/event(_:)``), so no read serves what they said.
    var removals: [(conversation: ConversationKey, seq: UInt64, stub: [UInt8])] = []
    /// Kept replies whose quoted message (the one with server uid `quotedUID`) was recalled, deleted
    /// for everyone or expired: the store takes the quoted text out of their `quote_snapshot`
    /// (``Redaction/quote(_:quoting:)``), in their frames and in the events kept about them (their
    /// edits, ``KeptEvent/about``), after this batch's messages and removals.
    var redactedQuotes: [(reply: MessageKey, quotedUID: String)] = []
    /// The newest stream position each device acknowledged, keyed by ``DeviceKey``.
    var devicePositions: [DeviceKey: UInt64] = [:]
    /// Devices the relay forgot (Router+Devices.swift): their positions and key bundles are deleted
    /// before the batch's other writes (a device forgotten and back within one batch keeps what it
    /// wrote since). Their records are deleted through ``records``.
    var forgottenDevices: Set<DeviceKey> = []
    /// Retention: the seqs deleted per conversation, from its oldest kept before this batch to its
    /// oldest kept now: exactly the rows to delete, so a store can delete them by key (PostgreSQL
    /// does: its planner read a join on one range per key as a large part of the table).
    var trimmedConversations: [ConversationKey: Range<UInt64>] = [:]
    /// Retention: the positions deleted per user stream, as ``trimmedConversations``; a kept event
    /// that no entry names any more goes with them (``KeptEvent``).
    var trimmedStreams: [String: Range<UInt64>] = [:]
    /// End-to-end key bundles published, or whose one-time keys a fetch used, as they now are:
    /// each replaces the device's stored bundle of its kind.
    var keyBundles: [StoredKeyBundle] = []
    /// State records as they now are (``StateRecordKey``): each replaces the stored one; empty bytes
    /// delete it.
    var records: [StateRecordKey: [UInt8]] = [:]
    /// Disappearing messages, and the events kept about them, that expired at or before this time
    /// (ms since the Unix epoch): their frames are erased (emptied, as retention leaves a message a
    /// stream still names), whichever commit or start finds them.
    var eraseExpiredThrough: Int64? = nil

    /// Notes that retention deleted `deleted` of a conversation or a stream: joined with what this
    /// batch deleted of it before.
    static func trim<Key: Hashable>(_ deleted: Range<UInt64>, of key: Key, in trims: inout [Key: Range<UInt64>]) {
        guard !deleted.isEmpty else { return }
        let earlier = trims[key] ?? deleted
        trims[key] = min(earlier.lowerBound, deleted.lowerBound)..<max(earlier.upperBound, deleted.upperBound)
    }

    var isEmpty: Bool {
        messages.isEmpty && streamEntries.isEmpty && events.isEmpty && memberships.isEmpty && removals.isEmpty
            && redactedQuotes.isEmpty && devicePositions.isEmpty && forgottenDevices.isEmpty
            && trimmedConversations.isEmpty
            && trimmedStreams.isEmpty
            && keyBundles.isEmpty && records.isEmpty && eraseExpiredThrough == nil
    }
}

/// A device's end-to-end key bundle of one kind, as stored: the `KeyBundle` frame's bytes (its user,
/// device and kind are in it too).
struct StoredKeyBundle: Sendable {
    var device: DeviceKey
    var kind: Int32
    var bytes: [UInt8]
}

/// A user's device.
struct DeviceKey: Hashable, Sendable {
    var user: String
    var device: String
}

/// What the router keeps in memory, as loaded at start.
struct StoredState {
    /// Per conversation: its newest seq, its oldest kept seq and the ids of its kept messages.
    var conversations: [ConversationKey: ConversationState] = [:]
    /// Members of each group, chatroom and ultra-group channel.
    var members: [ConversationKey: Set<String>] = [:]
    /// Per user: its stream's newest position and oldest kept position.
    var streams: [String: StreamState] = [:]
    /// The last stream position each device acknowledged.
    var devicePositions: [DeviceKey: UInt64] = [:]
    /// The newest events each device sent (at most ``RecentEvents/capacity``, oldest first), as
    /// kept in its user's stream: a resend of one of them is not applied twice.
    var recentEvents: [DeviceKey: [[UInt8]]] = [:]
    /// The largest ``KeptEvent/id`` kept (0: none): the router gives the next events the ids after it.
    var lastEventID: UInt64 = 0
    /// Every device's end-to-end key bundles, by device and kind.
    var keyBundles: [StoredKeyBundle] = []
    /// Every state record (conversation views, blocklists, message extensions).
    var records: [StateRecordKey: [UInt8]] = [:]

    /// Adds a kept message read from the store at start. Each conversation's messages come oldest
    /// first: the first one read is its oldest kept seq. The conversation is changed in place: a
    /// copy taken out of the dictionary would copy its indexes at every message, which made a
    /// start quadratic in the messages kept per conversation.
    mutating func loadMessage(_ message: StoredMessage, removed: Bool) {
        conversations[message.conversation, default: ConversationState()].addLoaded(message, removed: removed)
    }

    /// Sets the oldest position kept in `user`'s stream (its smallest row in the `stream` table),
    /// once the heads are loaded. Entries past the head, or with no head, are a damaged store: the
    /// relay counted the stream's entries as `head + 1 - oldest` (a trap at the user's next frame)
    /// or gave their positions again (a failed commit).
    mutating func loadOldestPosition(_ oldest: UInt64, of user: String) throws {
        guard let head = streams[user]?.head, oldest <= head else {
            throw DamagedState(
                reason: "stream entries of \(user) from position \(oldest) lie past the stream's head "
                    + "(\(streams[user].map { String($0.head) } ?? "none"))"
            )
        }
        streams[user]?.oldest = oldest
    }

    /// Ends ``loadMessage(_:removed:)``: a conversation none of whose messages is kept (retention
    /// dropped them all) keeps none from `maxSeq + 1` on.
    mutating func finishLoadingMessages() {
        let emptied = conversations.compactMap { $0.value.kept.isEmpty ? $0.key : nil }
        for key in emptied { conversations[key]!.oldestSeq = conversations[key]!.maxSeq + 1 }
    }
}

/// The newest messages a user sent that the relay does not keep (online-only, status-only, in a
/// chatroom), by conversation and `client_msg_id`, with the stamp each was acknowledged with: one
/// sent again (its ack was lost with a connection) is acknowledged as the first time and not
/// delivered again, as a kept one is (``ConversationState/sent(by:clientMsgID:)``). In memory only: after a restart a
/// resend is delivered again.
struct RecentLiveMessages: Sendable {
    /// How many of a user's newest such messages are remembered: more than a client has in flight.
    static let capacity = 64

    private var order: [String] = []
    private var stamps: [String: ConversationState.Sent] = [:]

    private static func key(_ conversation: ConversationKey, _ clientMsgID: String) -> String {
        ConversationState.dedupeKey(scope: conversation.storageID, clientMsgID: clientMsgID)
    }

    /// The stamp the message `clientMsgID` of `conversation` was acknowledged with, if remembered.
    func first(_ clientMsgID: String, in conversation: ConversationKey) -> ConversationState.Sent? {
        stamps[Self.key(conversation, clientMsgID)]
    }

    /// Remembers a message's stamp, forgetting the oldest past ``capacity``.
    mutating func insert(_ clientMsgID: String, in conversation: ConversationKey, _ stamp: ConversationState.Sent) {
        let key = Self.key(conversation, clientMsgID)
        guard stamps.updateValue(stamp, forKey: key) == nil else { return }
        order.append(key)
        if order.count > Self.capacity { stamps[order.removeFirst()] = nil }
    }
}

/// The newest events a device sent, by a digest of their bytes: an event sent again byte for byte
/// (a client resends what was not acknowledged when its connection or the relay went away) is
/// answered as the first time and not applied or delivered again, as a message resent with its
/// `client_msg_id` is.
struct RecentEvents: Sendable {
    /// How many of a device's newest events are remembered.
    static let capacity = 256

    private var order: [UInt64] = []
    private var counts: [UInt64: Int] = [:]

    /// The digests remembered, oldest first (a device's ``StateRecordKey/sentEvents(_:)`` record).
    var digests: [UInt64] { order }

    /// Whether an event with these bytes is among the newest remembered.
    func contains(_ bytes: some Sequence<UInt8>) -> Bool { counts[Self.digest(bytes)] != nil }

    /// Remembers an event, forgetting the oldest past ``capacity``.
    mutating func insert(_ bytes: some Sequence<UInt8>) { insert(digest: Self.digest(bytes)) }

    /// Remembers an event by its digest (``digest(_:)``), forgetting the oldest past ``capacity``.
    mutating func insert(digest: UInt64) {
        order.append(digest)
        counts[digest, default: 0] += 1
        if order.count > Self.capacity {
            let oldest = order.removeFirst()
            counts[oldest]! -= 1
            if counts[oldest] == 0 { counts[oldest] = nil }
        }
    }

    /// FNV-1a, 64 bits: stable across restarts (unlike `Hasher`), so the set rebuilt at start
    /// matches what clients resend.
    static func digest(_ bytes: some Sequence<UInt8>) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        return hash
    }
}

/// A user's stream, as the router tracks it.
struct StreamState: Sendable {
    /// The newest position given (0: none yet). Positions never go back or repeat.
    var head: UInt64 = 0
    /// The oldest position kept (head + 1 when none is kept).
    var oldest: UInt64 = 1
    /// The number of entries kept.
    var count: Int { Int(head + 1 - oldest) }
}

/// When a disappearing message (or an event about one) stops being served.
enum Expiry {
    /// Whether something that expires at `expireAtMs` (0: never) has expired at `nowMs`.
    static func passed(_ expireAtMs: Int64, at nowMs: Int64) -> Bool {
        expireAtMs != 0 && expireAtMs <= nowMs
    }
}

/// A conversation, as the router tracks it: seqs, de-duplication of resends, removed messages.
///
/// It holds every kept message's ids for as long as the message is kept (``KeptMessages``), so its
/// size per message bounds how many messages a relay can keep: the messages in an array by seq,
/// the two lookups (by uid, by sender and `client_msg_id`) as hashes (``DigestIndex``), each
/// sender's id once per conversation.
struct ConversationState: Sendable {
    /// A kept message's server fields, for answering a resend with its first ack.
    struct Sent: Sendable {
        var seq: UInt64
        var serverMsgUID: String
        var serverTimeMs: Int64
    }

    /// A message's sender and `client_msg_id`: what a resend and a reference without a uid name it by.
    struct SenderKey: Hashable, Sendable {
        var sender: String
        var clientMsgID: String
    }

    /// The newest seq given (0: none yet). Seqs never go back or repeat.
    var maxSeq: UInt64 = 0
    /// The oldest seq kept (maxSeq + 1 when none is kept).
    var oldestSeq: UInt64 = 1
    /// The sender, client message id, server uid, server time and stamped frame's size of each kept
    /// message, by seq.
    private(set) var kept = KeptMessages()
    /// Kept messages with a `client_msg_id`, by sender and client message id.
    private var bySender = DigestIndex<SenderKey>()
    /// Kept messages by server uid.
    private var byUID = DigestIndex<PackedUID>()
    /// The senders of kept messages: each message holds its sender's id as this one string. Not
    /// pruned by retention: at most the conversation's distinct senders.
    private var senders: Set<String> = []
    /// Who may see each kept targeted message (its receivers and its sender), by seq: events about
    /// it reach only them.
    var audiences: [UInt64: Set<String>] = [:]

    /// Whether kept message `seq` was sent to `user`: `false` for a targeted message, or one held
    /// back by a block (kept for its sender alone), whose audience leaves `user` out.
    func wasSent(_ seq: UInt64, to user: String) -> Bool {
        audiences[seq]?.contains(user) ?? true
    }
    /// Seqs of messages recalled or deleted for everyone.
    var removed: Set<UInt64> = []
    /// When each kept disappearing message expires, by seq (``StoredMessage/expireAtMs``).
    var expiries: [UInt64: Int64] = [:]

    /// The number of messages kept.
    var count: Int { Int(maxSeq + 1 - oldestSeq) }

    /// The key of `clientMsgID` within `scope`: a conversation's storage id among a user's unkept
    /// messages (``RecentLiveMessages``).
    static func dedupeKey(scope: String, clientMsgID: String) -> String {
        "\(scope.utf8.count):\(scope)\(clientMsgID)"
    }

    /// The kept message `sender` sent with `clientMsgID`, as it was acknowledged.
    func sent(by sender: String, clientMsgID: String) -> Sent? {
        guard
            let seq = bySender.seq(
                of: SenderKey(sender: sender, clientMsgID: clientMsgID),
                keyOf: { kept[$0]?.senderKey }
            ),
            let message = kept[seq]
        else { return nil }
        return Sent(seq: seq, serverMsgUID: message.serverMsgUID, serverTimeMs: message.serverTimeMs)
    }

    /// Records a kept message read from the store at start, oldest first (``StoredState/loadMessage(_:removed:)``).
    mutating func addLoaded(_ message: StoredMessage, removed isRemoved: Bool) {
        if kept.isEmpty { oldestSeq = message.seq }
        add(message)
        if isRemoved { removed.insert(message.seq) }
    }

    /// Records a kept message.
    mutating func add(_ message: StoredMessage) {
        maxSeq = max(maxSeq, message.seq)
        let sender = senders.insert(message.senderID).memberAfterInsert
        let kept = KeptMessage(
            sender: sender,
            clientMsgID: message.clientMsgID,
            serverMsgUID: message.serverMsgUID,
            serverTimeMs: message.serverTimeMs,
            size: message.frameSize ?? message.frame.count
        )
        if let replaced = self.kept[message.seq] { forget(replaced, at: message.seq) }
        self.kept.insert(kept, at: message.seq)
        if !message.receivers.isEmpty { audiences[message.seq] = Set(message.receivers + [message.senderID]) }
        if message.expireAtMs != 0 { expiries[message.seq] = message.expireAtMs }
        // The lookups read the messages through a reference to the array alone: a closure on `self`
        // would take a copy of the whole state, and the index being changed would then be copied on
        // write, at every message.
        let messages = self.kept
        if !message.serverMsgUID.isEmpty { byUID.insert(kept.uid, seq: message.seq) { messages[$0]?.uid } }
        guard !message.clientMsgID.isEmpty else { return }
        bySender.insert(kept.senderKey, seq: message.seq) { messages[$0]?.senderKey }
    }

    /// Takes a message that is no longer kept at `seq` out of the lookups.
    private mutating func forget(_ message: KeptMessage, at seq: UInt64) {
        byUID.remove(message.uid, seq: seq)
        if !message.clientMsgID.isEmpty {
            bySender.remove(message.senderKey, seq: seq)
        }
    }

    /// What a message reference names here (``resolve(_:)``).
    enum Reference: Equatable {
        /// A kept message, by its seq.
        case kept(UInt64)
        /// No kept message: never sent, dropped by retention, or named by nothing.
        case unknown
        /// Its seq and its ids name two different messages.
        case conflicting
    }

    /// The kept message `ref` names, found as its receivers find it (`MessageRef`: by
    /// `server_msg_uid` when present, else by `sender_id` and `client_msg_id`), or by its seq when it
    /// names the message by nothing else. A reference whose seq names another message than its ids
    /// is ``Reference/conflicting``: the relay would check one message and receivers act on the other.
    func resolve(_ ref: MessageRef) -> Reference {
        let byIdentity: UInt64?
        if !ref.serverMsgUID.isEmpty {
            byIdentity = byUID.seq(of: PackedUID(ref.serverMsgUID)) { kept[$0]?.uid }
        } else if !ref.senderID.isEmpty, !ref.clientMsgID.isEmpty {
            byIdentity = bySender.seq(
                of: SenderKey(sender: ref.senderID, clientMsgID: ref.clientMsgID),
                keyOf: { kept[$0]?.senderKey }
            )
        } else {
            return kept[ref.seq] == nil ? .unknown : .kept(ref.seq)
        }
        guard let seq = byIdentity else { return .unknown }
        return ref.seq == 0 || ref.seq == seq ? .kept(seq) : .conflicting
    }

    /// Forgets the messages below `seq` (retention).
    mutating func trim(below seq: UInt64) {
        guard oldestSeq < seq else { return }
        // Seqs a store holds are consecutive, so this walks what it drops; across a gap (a damaged
        // store) it walks what is held instead of every seq of the gap.
        if seq - oldestSeq > UInt64(kept.count + removed.count + 64) {
            for (old, message) in kept.all where old < seq {
                kept.removeValue(at: old)
                forget(message, at: old)
            }
            removed = removed.filter { $0 >= seq }
            audiences = audiences.filter { $0.key >= seq }
            expiries = expiries.filter { $0.key >= seq }
            oldestSeq = seq
            return
        }
        while oldestSeq < seq {
            if let old = kept.removeValue(at: oldestSeq) { forget(old, at: oldestSeq) }
            removed.remove(oldestSeq)
            audiences[oldestSeq] = nil
            expiries[oldestSeq] = nil
            oldestSeq += 1
        }
    }
}

/// Where a conversation of the relay is kept, and who may read it.
enum ConversationKey: Hashable, Sendable {
    /// A one-to-one conversation between two users (`a < b`, or `a == b` for notes to oneself).
    case direct(String, String)
    /// A group, chatroom or ultra-group channel: its conversation with the user-independent fields.
    case shared(ConversationType, String, String)

    /// The key of `conversation` as `user` names it, or `nil` for a type the relay does not keep.
    init?(_ conversation: Conversation, user: String) {
        self.init(conversation.type, conversation.targetID, channelID: conversation.channelID, user: user)
    }

    /// The key of a conversation of `type` with `targetID` (and ultra-group `channelID`) as `user`
    /// names it, or `nil` for a type the relay does not keep, an empty target, or a target or
    /// ultra-group channel id that is not ``RelayProtocol/isAcceptedID(_:)``: longer than
    /// ``RelayProtocol/maxIDBytes`` (the relay keeps no such conversation: nothing could start one,
    /// so nothing made up is kept under a long id) or not in NFC (the router would take it for the
    /// NFC form, the stores for another id). Other types ignore `channelID`.
    init?(_ type: ConversationType, _ targetID: String, channelID: String = "", user: String) {
        guard !targetID.isEmpty, !Self.namesRefusedID(type, targetID, channelID: channelID) else { return nil }
        switch type {
        case .oneToOne: self = user <= targetID ? .direct(user, targetID) : .direct(targetID, user)
        case .group, .chatroom: self = .shared(type, targetID, "")
        case .ultraGroup: self = .shared(type, targetID, channelID)
        default: return nil
        }
    }

    /// Whether `conversation` names an id the relay refuses (``RelayProtocol/isAcceptedID(_:)``):
    /// its target, or an ultra group's channel (``init(_:_:channelID:user:)`` gives no key for it).
    static func namesRefusedID(_ type: ConversationType, _ targetID: String, channelID: String) -> Bool {
        !RelayProtocol.isAcceptedID(targetID) || (type == .ultraGroup && !RelayProtocol.isAcceptedID(channelID))
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

    /// Whether `conversation`, as any of its users may name it, is this one: a one-to-one
    /// conversation by either user's id (a message reference names it as the message's sender did,
    /// by the receiver), a shared one by its type, id and ultra-group channel.
    func names(_ conversation: Conversation) -> Bool {
        switch self {
        case .direct(let a, let b):
            return conversation.type == .oneToOne && (conversation.targetID == a || conversation.targetID == b)
        case .shared(let type, let target, let channel):
            return conversation.type == type && conversation.targetID == target
                && (type != .ultraGroup || conversation.channelID == channel)
        }
    }

    /// Whether this is a group, chatroom or ultra-group channel.
    var isShared: Bool {
        if case .shared = self { return true }
        return false
    }

    /// A chatroom (common.proto: "members come and go, no roaming history"): what is sent in it
    /// reaches the members online at the time and is kept nowhere.
    var isChatroom: Bool {
        if case .shared(.chatroom, _, _) = self { return true }
        return false
    }

    /// The key as one string for a store's index: `TYPE:LEN:FIRST` followed by the second id, where
    /// LEN is the first id's length in UTF-8 bytes, so no two keys share a string whatever the ids hold.
    var storageID: String {
        switch self {
        case .direct(let a, let b): return "1:\(a.utf8.count):\(a)\(b)"
        case .shared(let type, let target, let channel):
            return "\(type.rawValue):\(target.utf8.count):\(target)\(channel)"
        }
    }

    /// The key a ``storageID`` names, or `nil` for a string no key gives.
    init?(storageID: String) {
        let utf8 = Array(storageID.utf8)
        guard let colon1 = utf8.firstIndex(of: UInt8(ascii: ":")),
            let type = Int32(String(decoding: utf8[..<colon1], as: UTF8.self)),
            let colon2 = utf8[(colon1 + 1)...].firstIndex(of: UInt8(ascii: ":")),
            let length = Int(String(decoding: utf8[(colon1 + 1)..<colon2], as: UTF8.self)),
            length >= 0, length <= utf8.count - colon2 - 1
        else { return nil }
        let first = String(decoding: utf8[(colon2 + 1)..<(colon2 + 1 + length)], as: UTF8.self)
        let second = String(decoding: utf8[(colon2 + 1 + length)...], as: UTF8.self)
        let conversationType = ConversationType(rawValue: type)
        switch conversationType {
        case .oneToOne: self = .direct(first, second)
        case .group, .chatroom, .ultraGroup: self = .shared(conversationType, first, second)
        default: return nil
        }
    }
}
#endif
