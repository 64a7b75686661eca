#if Tools
import IMCodec
import IMCodecNIO
import NIOCore

/// A user's view of one conversation, as the router keeps it (session.proto: the conversation list).
struct UserConversation {
    /// The entry as the list shows it, without its conversation, last message and read horizons
    /// (filled in when it is listed); `unreadCount` and `atMe` follow ``unread``.
    var info = ConversationInfo()
    /// The seqs of the messages that count as unread, above the read horizon.
    var unread = SeqRuns()
    /// The seq of the last message the user sees (0: none).
    var lastSeq: UInt64 = 0

    /// The most unread @ an entry keeps: the newest (session.proto ConversationInfo.at_me). Without
    /// a bound, a user who never reads a group that @-mentions everyone had an entry, rewritten
    /// with every message, that grew by one @ per message.
    static let maxAtMe = 100

    /// Adds an unread @ of message `seq`, dropping the oldest past ``maxAtMe``.
    mutating func addAtMe(_ seq: UInt64, kind: AtMeKind) {
        info.atMe.append(
            AtMe.with {
                $0.seq = seq; $0.kind = kind
            }
        )
        keepNewestAtMe()
    }

    /// Drops the unread @ past the newest ``maxAtMe``.
    private mutating func keepNewestAtMe() {
        if info.atMe.count > Self.maxAtMe { info.atMe.removeFirst(info.atMe.count - Self.maxAtMe) }
    }

    /// The most runs an entry's unread seqs keep: messages that count alternating with ones that
    /// do not (flagged EXCLUDED_FROM_UNREAD_COUNT, the user's own, targeted at others) made a run
    /// each, in a record rewritten at every message the user receives, so a user who never reads
    /// such a group cost every later message more. Past it the oldest runs join, and the unread
    /// count includes the messages between them.
    static let maxUnreadRuns = 64

    /// Counts message `seq` as unread.
    mutating func addUnread(_ seq: UInt64) {
        unread.insert(seq)
        unread.joinOldestRuns(keepingAtMost: Self.maxUnreadRuns)
    }

    /// Drops what the user has read (or cleared): unread seqs and @ at or below `seq`.
    mutating func read(upTo seq: UInt64) {
        unread.removeAll(through: seq)
        info.atMe.removeAll { $0.seq <= seq }
        info.unreadCount = UInt32(clamping: unread.count)
    }

    /// Takes the messages `removed` (recalled, deleted for everyone, expired) out of the unread
    /// seqs and @; whether the entry changed, which it also does when its last message is one of them.
    mutating func drop(_ removed: Set<UInt64>) -> Bool {
        let atMeBefore = info.atMe.count
        let unreadChanged = unread.remove(removed)
        unread.joinOldestRuns(keepingAtMost: Self.maxUnreadRuns)
        info.atMe.removeAll { removed.contains($0.seq) }
        return unreadChanged || info.atMe.count != atMeBefore || removed.contains(lastSeq)
    }

    /// The record's bytes: the entry (its last message's seq in an otherwise empty `last_message`),
    /// then the unread seqs, as runs (``SeqRuns/append(to:)``).
    var bytes: [UInt8] {
        var stored = info
        stored.lastMessage = lastSeq == 0 ? nil : Message.with { $0.seq = lastSeq }
        let entry = stored.serializedBytes()
        var out: [UInt8] = []
        out.reserveCapacity(4 + entry.count + 16 * unread.runs.count)
        LengthPrefixedBytes.append(entry, to: &out)
        // Rewritten on every message the user receives: runs keep it short for a user who does not
        // read (a list of every unread seq made each message cost the whole list, in memory and in
        // the store).
        unread.append(to: &out)
        return out
    }

    /// The view a record's ``bytes`` hold, or `nil` when they are not such a record.
    init?(bytes: [UInt8]) {
        var rest = bytes[...]
        guard let entry = LengthPrefixedBytes.take(from: &rest), let unread = SeqRuns(bytes: rest),
            var stored = try? ConversationInfo(serializedBytes: entry)
        else { return nil }
        lastSeq = stored.lastMessage?.seq ?? 0
        stored.lastMessage = nil
        info = stored
        self.unread = unread
        // A record kept before the bounds holds more.
        keepNewestAtMe()
        self.unread.joinOldestRuns(keepingAtMost: Self.maxUnreadRuns)
        info.unreadCount = UInt32(clamping: self.unread.count)
    }

    init() {}
}

extension Router {
    // MARK: Keeping the views

    /// The view `user` has of `key`.
    func view(of key: ConversationKey, for user: String) -> UserConversation {
        userConversations[user]?[key] ?? UserConversation()
    }

    /// Replaces `user`'s view of `key`, at stream position `version`, and adds it to the store's batch.
    func setView(_ view: UserConversation, of key: ConversationKey, for user: String, version: UInt64) {
        var view = view
        if startsConversation(key, for: user) {
            directConversationCounts[user, default: 0] += 1  // A view alone starts it (mayStart).
        }
        view.info.version = max(view.info.version, version)
        view.info.updatedAtMs = RelayProtocol.nowMs()
        view.info.unreadCount = UInt32(clamping: view.unread.count)
        if key.isShared, view.info.clearedSeq != userConversations[user]?[key]?.info.clearedSeq ?? 0 {
            audienceChanged(key)  // Who reads the messages it cleared changed (Router+Receipts).
        }
        userConversations[user, default: [:]][key] = view
        store.batch.records[.conversation(user: user, key)] = view.bytes
    }

    /// A kept message changes the view of everyone it reaches: its newest seq and last message, and
    /// for its receivers the unread count and the @ of them. A message counts as unread unless it is
    /// flagged EXCLUDED_FROM_UNREAD_COUNT, stored as PERSISTED (RongCloud: stored, not counted) or
    /// targeted (Tencent: "By default, targeted group messages are excluded from the unread count").
    func conversationsSaw(_ frame: InboundFrame, seq: UInt64, in key: ConversationKey, deliveries: [Delivery]) {
        let counts =
            !frame.messageFlags.contains(.excludedFromUnreadCount) && frame.storagePolicy != .persisted
            && frame.targetReceivers.isEmpty
        let isLast = !frame.messageFlags.contains(.excludedFromLastMessage)
        let mentioned = Set(frame.atUserIDs)
        for delivery in deliveries {
            var view = view(of: key, for: delivery.user)
            guard seq > view.info.clearedSeq else { continue }
            view.info.maxSeq = max(view.info.maxSeq, seq)
            if isLast { view.lastSeq = seq }
            view.info.hidden = false
            if !delivery.sent {
                if counts && seq > view.info.readSeq { view.addUnread(seq) }
                // Only a message that counts as unread may be an unread @ (unread_count >= at_me).
                let atMe = mentioned.contains(delivery.user)
                if counts, frame.atAll || atMe, seq > view.info.readSeq {
                    let kind: AtMeKind = frame.atAll ? (atMe ? .atAllAtMe : .atAll) : .atMe
                    view.addAtMe(seq, kind: kind)
                }
            }
            setView(view, of: key, for: delivery.user, version: delivery.position)
        }
    }

    /// A mark-read moves `user`'s read horizon in one conversation, or in all of them: its unread
    /// messages and @ at or below it are read. `read_seq` 0 reads everything up to the newest seq.
    func conversationsRead(_ event: MarkReadEvent, by user: String, position: UInt64) {
        var keys: [ConversationKey] = []
        if event.allConversations {
            keys = userConversations[user].map { Array($0.keys) } ?? []
        } else if let conversation = event.conversation, let key = ConversationKey(conversation, user: user) {
            keys = [key]
        }
        // Only a conversation the user is in: a mark-read of another group must not make the user an
        // entry that shows that group's newest seq and its members' read horizons.
        for key in keys where isMember(user, key) {
            var view = view(of: key, for: user)
            let newest = newestSeq(of: key, for: user)
            // Never above the newest seq: the messages still to come would not count as unread.
            let seq = event.readSeq == 0 ? newest : min(event.readSeq, newest)
            guard seq > view.info.readSeq else { continue }
            view.info.readSeq = seq
            view.info.maxSeq = max(view.info.maxSeq, seq)
            view.read(upTo: seq)
            setView(view, of: key, for: user, version: position)
        }
    }

    /// Applies a conversation update or a receive option change `user` made, kept at `position`.
    func conversationChanged(_ payload: Frame.Payload, by user: String, position: UInt64) {
        switch payload {
        case .conversationUpdate(let update):
            guard let conversation = update.conversation, let key = ConversationKey(conversation, user: user) else {
                return
            }
            var view = view(of: key, for: user)
            let fields = update.fields
            func has(_ field: ConversationField) -> Bool { fields & UInt32(field.rawValue) != 0 }
            if has(.pinned) { view.info.pinned = update.pinned }
            if has(.archived) { view.info.archived = update.archived }
            if has(.hidden) { view.info.hidden = update.hidden }
            if has(.draft) {
                view.info.draftText = update.draftText
                view.info.draftTimeMs = update.draftText.isEmpty ? 0 : update.timeMs
            }
            if has(.clearedSeq), update.clearedSeq > view.info.clearedSeq {
                view.info.clearedSeq = update.clearedSeq
                view.read(upTo: update.clearedSeq)
                if view.lastSeq <= update.clearedSeq { view.lastSeq = 0 }
            }
            setView(view, of: key, for: user, version: position)
        case .receiveOption(let change):
            guard let conversation = change.conversation, let key = ConversationKey(conversation, user: user) else {
                return
            }
            var view = view(of: key, for: user)
            view.info.receiveOption = change.option
            setView(view, of: key, for: user, version: position)
            noteReceiveOption(change.option, of: key, for: user)
        default:
            return
        }
    }

    /// The users of `users` who read `seq` of `key`, and `sender`: an event about a message at or
    /// below a user's `cleared_seq` (what it cleared, or what was kept before it joined) does not
    /// reach it.
    func readers(of seq: UInt64, in key: ConversationKey, among users: [String], sender: String) -> [String] {
        users.filter { $0 == sender || reads(seq, in: key, user: $0) }
    }

    /// Whether `user` reads `seq` of `key`: it is past the user's `cleared_seq` (what it cleared, or
    /// what was kept before it joined).
    func reads(_ seq: UInt64, in key: ConversationKey, user: String) -> Bool {
        seq > view(of: key, for: user).info.clearedSeq
    }

    /// The oldest seq of `key` that `user` reads as far as its `cleared_seq` goes: the one after it
    /// (a clear is never above the newest seq, but a store written before that rule may hold
    /// the largest seq, after which nothing is read).
    func firstUnclearedSeq(of key: ConversationKey, for user: String) -> UInt64 {
        let cleared = view(of: key, for: user).info.clearedSeq
        return cleared == .max ? .max : cleared + 1
    }

    /// The newest seq of `key` as `user` knows it: the conversation's, or the user's entry's when
    /// it is newer (a conversation whose messages retention dropped). A mark-read or a clear goes
    /// no higher: the messages still to come must count as unread, and be read.
    func newestSeq(of key: ConversationKey, for user: String) -> UInt64 {
        max(view(of: key, for: user).info.maxSeq, conversations[key]?.maxSeq ?? 0)
    }

    /// Why `user` may not act on `seq` of `key` (vote on its poll, acknowledge it), when it does not
    /// read it.
    static func unreadReason(_ seq: UInt64, user: String) -> String {
        "message seq \(seq) is before what \(user) reads of this conversation (its join or its clear)"
    }

    /// Who reads kept message `seq` of `key`: its receivers and sender (a targeted message) or the
    /// conversation's users, less those who joined after it or cleared it (its sender too, while
    /// it is one of the conversation's users).
    func audience(of seq: UInt64, in key: ConversationKey) -> [String] {
        var users = self.users(of: key)
        if let targeted = conversations[key]?.audiences[seq] { users = users.filter { targeted.contains($0) } }
        return readers(of: seq, in: key, among: users, sender: conversations[key]?.kept[seq]?.sender ?? "")
    }

    /// Keeps ``notReceiving`` up to date with `user`'s receive option for `key`.
    func noteReceiveOption(_ option: ReceiveOption, of key: ConversationKey, for user: String) {
        if option == .notReceive {
            notReceiving[key, default: []].insert(user)
        } else if notReceiving[key]?.remove(user) != nil, notReceiving[key]?.isEmpty == true {
            notReceiving[key] = nil
        }
    }

    /// Whether `conversation` names a conversation `user` may keep a view of: one of its one-to-one
    /// conversations, or a group, chatroom or ultra-group channel it is a member of.
    func mayKeepView(of conversation: Conversation?, user: String) -> Bool {
        guard let conversation, let key = ConversationKey(conversation, user: user) else { return false }
        return isMember(user, key)
    }

    /// Whether what `user` does in `key` would start it: a one-to-one conversation the relay kept
    /// no message of and the user has no view of (``mayStart(_:user:)``).
    func startsConversation(_ key: ConversationKey, for user: String) -> Bool {
        !key.isShared && conversations[key] == nil && userConversations[user]?[key] == nil
    }

    /// Whether `user` may start `key` if it is new (``startsConversation(_:for:)``): only while the
    /// user has fewer than ``RelayConfiguration/maxDirectConversations`` one-to-one conversations
    /// (with messages, or a view alone); any other conversation, or one it has, always passes. One
    /// started with the user by others counts, and is never refused.
    func mayStart(_ key: ConversationKey, user: String) -> Bool {
        !startsConversation(key, for: user)
            || directConversationCounts[user] ?? 0 < configuration.maxDirectConversations
    }

    /// Counts each user's one-to-one conversations (with messages, or a view alone) once the store
    /// is loaded (``directConversationCounts``; kept up to date by `addKept` and ``setView(_:of:for:version:)``).
    func countDirectConversations() {
        for (user, keys) in belongs {
            directConversationCounts[user] = keys.lazy.filter { !$0.isShared }.count
        }
        for (user, views) in userConversations {
            let viewsOnly = views.keys.lazy.filter { !$0.isShared && self.conversations[$0] == nil }.count
            if viewsOnly > 0 { directConversationCounts[user, default: 0] += viewsOnly }
        }
    }

    /// Why `user` may not start another one-to-one conversation (``mayStart(_:user:)``).
    func conversationLimitReason(of user: String) -> String {
        "\(user) has \(configuration.maxDirectConversations) one-to-one conversations, the most it may have to "
            + "start another"
    }

    /// Recalls and deletes for everyone take their messages out of everyone's unread count and @,
    /// and an edit of a conversation's last message changes its entry; each changed entry moves to
    /// the event's position in its user's stream, so the list's next sync has it. `seqs`: the kept
    /// messages the event names (``ConversationState/resolve(_:)``).
    func conversationsChanged(
        by event: Frame.Payload,
        naming seqs: [UInt64],
        in key: ConversationKey,
        deliveries: [Delivery]
    ) {
        var removed: Set<UInt64> = []
        var edited: UInt64 = 0
        switch event {
        case .recall: removed = Set(seqs)
        case .delete(let delete) where delete.scope == .everyone: removed = Set(seqs)
        // A reaction changes the last message's `reactions` as the list serves it.
        case .edit, .reaction: edited = seqs.first ?? 0
        default: return
        }
        removed.remove(0)
        guard !removed.isEmpty || edited != 0 else { return }
        for delivery in deliveries {
            guard var view = userConversations[delivery.user]?[key] else { continue }
            let changed = view.drop(removed) || (edited != 0 && edited == view.lastSeq)
            guard changed else { continue }
            setView(view, of: key, for: delivery.user, version: delivery.position)
        }
    }

    /// Disappearing messages that expired (`seqs` of `key`) leave every member's unread count and
    /// @, and an entry whose last message expired changes too. Each changed entry moves to a new
    /// position of its user's stream, so the list's next sync has it: an entry with no frame, which
    /// no sync serves (as an expired message's own entries), since no event says a message expired.
    func conversationsLost(_ seqs: Set<UInt64>, in key: ConversationKey) {
        var changed: [(user: String, view: UserConversation)] = []
        for user in users(of: key) {
            guard var view = userConversations[user]?[key], view.drop(seqs) else { continue }
            changed.append((user, view))
        }
        guard !changed.isEmpty else { return }
        let deliveries = keep(.event([]), for: changed.map(\.user), origin: Self.relayOrigin)
        for (entry, delivery) in zip(changed, deliveries) {
            setView(entry.view, of: key, for: entry.user, version: delivery.position)
        }
    }
}
#endif
