#if Tools
import IMCodec
import IMCodecNIO

/// Where a conversation list page stopped among the entries that share one version (one event
/// changed them all: a mark-read of every conversation): after the entry of the conversation whose
/// ``ConversationKey/storageID`` is `key`. Its text is `VERSION:KEY`.
struct ConversationListCursor: Equatable {
    var version: UInt64
    var key: String

    var text: String { "\(version):\(key)" }
}

extension ConversationListCursor {
    /// The cursor `text` holds, or `nil` when it is not one the relay gives.
    init?(_ text: String) {
        guard let colon = text.firstIndex(of: ":"), let version = UInt64(text[..<colon]) else { return nil }
        let key = String(text[text.index(after: colon)...])
        guard !key.isEmpty else { return nil }
        self.init(version: version, key: key)
    }
}

extension Router {
    /// The most conversations one list page holds.
    static let maxConversationListLimit: UInt32 = 100
    /// The most read horizons one list entry holds.
    static let maxReadHorizons = 100

    // Long on purpose (about 80 lines): one request read top to bottom: the entries after the
    // request's version or cursor, then, once their last messages are read, the page that fits.
    /// Answers a conversation list request: `user`'s conversations changed after `after_version`
    /// (and after `cursor` among those of its version), oldest change first, each with its last
    /// message read from the store. A page holds at most `limit` entries and fits the frame size
    /// limit; it ends at a version boundary when it can, and when the entries one event changed do
    /// not fit one page, it stops among them and gives a cursor (session.proto ConversationList).
    func listConversations(_ request: ConversationListRequest, requestID: UInt64, session: Session, user: String) {
        var cursor: ConversationListCursor?
        if !request.cursor.isEmpty {
            guard let given = ConversationListCursor(request.cursor) else {
                return refuse(
                    session,
                    requestID,
                    RelayProtocol.RequestError.badRequest,
                    notice: "badRequest",
                    "the cursor is not one the relay gave"
                )
            }
            cursor = given
        }
        let limit = Int(
            request.limit == 0
                ? Self.maxConversationListLimit : min(request.limit, Self.maxConversationListLimit)
        )
        // The entries after the version and cursor, and the first `limit` and one of them (whether
        // the page stops among one version's entries) in order, by (version, conversation's
        // storage id), unique per user: a user in thousands of conversations has them walked, not
        // sorted (``first(_:of:)``).
        let after = (userConversations[user] ?? [:]).filter { key, view in
            let version = view.info.version
            guard version > request.afterVersion else { return false }
            guard let cursor, version <= cursor.version else { return true }
            return version == cursor.version && key.storageID > cursor.key
        }
        let changed = Self.first(limit + 1, of: after)
        let changedCount = after.count
        let entries = changed.prefix(limit).map { key, view, order in
            var info = view.info
            info.conversation = key.conversation(for: user)
            // The members' horizons are a member's to see: a user who left keeps its entry, not
            // a view of who reads the group since.
            info.readHorizons = isMember(user, key) ? readHorizons(of: key, except: user) : []
            let removed = conversations[key]?.removed.contains(view.lastSeq) ?? false
            return (key: key, storageID: order.1, info: info, lastSeq: view.lastSeq, removed: removed)
        }
        read(
            for: session,
            requestID: requestID,
            busy: { code, reason in
                let refused = ConversationList.with {
                    $0.errorCode = code; $0.errorDescription = reason
                }
                self.answer(RelayProtocol.answer(.conversationList(refused), requestID: requestID), to: session)
            },
            { store in
                try entries.map { entry in
                    entry.lastSeq == 0
                        ? nil
                        : try store.messages(
                            in: entry.key,
                            from: entry.lastSeq,
                            through: entry.lastSeq,
                            limit: 1,
                            visibleTo: user
                        )
                        .first
                }
            }
        ) { lastMessages in
            let nowMs = self.nowMs()
            var answer = ConversationList()
            var left = self.answerRoom
            for (index, entry) in entries.enumerated() {
                var info = entry.info
                // Dropped by retention, or a disappearing message that expired: no last message
                // (max_seq still says its seq).
                if let stored = lastMessages[index], !Expiry.passed(stored.expireAtMs, at: nowMs) {
                    info.lastMessage = self.lastMessage(stored, removed: entry.removed, user: user)
                }
                // Its bytes in the page (with its tag and length), and the cursor that would name it
                // should the page stop after it.
                let cursorRoom = Self.cursorRoom(storageID: entry.storageID)
                var size = info.serializedBytes().count + 6
                if size + cursorRoom > left {
                    guard answer.conversations.isEmpty else { break }
                    size = Self.shrink(&info, to: left - cursorRoom)
                }
                left -= size
                answer.conversations.append(info)
            }
            let served = answer.conversations.count
            answer.hasMore = changedCount > served
            // The newest version every earlier page completed: the request's, or the cursor's when
            // this page starts past it.
            // (A cursor is the client's to send: never past the user's stream head.)
            var completed = request.afterVersion
            if let cursor, (changed.first?.order.0 ?? .max) > cursor.version {
                completed = max(completed, min(cursor.version, self.streams[user]?.head ?? 0))
            }
            let lastVersion = served == 0 ? completed : changed[served - 1].order.0
            if answer.hasMore, served > 0, changed[served].order.0 == lastVersion {
                // Stopped among the entries of one version: the next page goes on from the cursor,
                // and a device that stops here keeps the newest version this page completed.
                answer.nextCursor = ConversationListCursor(version: lastVersion, key: changed[served - 1].order.1).text
                answer.nextAfterVersion = changed[..<served].last { $0.order.0 < lastVersion }?.order.0 ?? completed
            } else {
                answer.nextAfterVersion = lastVersion
            }
            self.answer(RelayProtocol.answer(.conversationList(answer), requestID: requestID), to: session)
        }
    }

    /// The first `count` of `entries` by (version, storage id), in that order, each with its order:
    /// from a heap of the `count` first so far, so a user in thousands of conversations has them
    /// walked, not sorted, and a storage id made only for an entry that could be among them.
    static func first(
        _ count: Int,
        of entries: [ConversationKey: UserConversation]
    ) -> [(key: ConversationKey, view: UserConversation, order: (UInt64, String))] {
        var first = SmallestElements<ListEntry>(capacity: count)
        for (key, view) in entries {
            let version = view.info.version
            if let largest = first.largest, version > largest.version { continue }
            first.insert(ListEntry(version: version, id: key.storageID, key: key, view: view))
        }
        return first.sorted.map { (key: $0.key, view: $0.view, order: ($0.version, $0.id)) }
    }

    /// A list entry ordered as pages list them: by version, then by storage id (unique per user).
    struct ListEntry: Comparable {
        let version: UInt64
        let id: String
        let key: ConversationKey
        let view: UserConversation

        static func < (a: Self, b: Self) -> Bool { (a.version, a.id) < (b.version, b.id) }
        static func == (a: Self, b: Self) -> Bool { a.version == b.version && a.id == b.id }
    }

    /// The room a page keeps for a cursor naming the entry of `key`, should it stop after it: the
    /// version's 20 digits, the colon, the key, a tag and a length.
    static func cursorRoom(storageID: String) -> Int { storageID.utf8.count + 32 }

    /// The most bytes an entry's unread @ take (``UserConversation/maxAtMe`` of them, each with its
    /// seq at 10 bytes, its kind, tags and lengths).
    static let maxAtMeBytes = UserConversation.maxAtMe * 16

    /// Makes an entry that is alone on its page and too large fit `room` bytes, with its tag and
    /// length: with fewer read horizons (the lowest go first), then without its last message (a
    /// history request reads it). A draft leaves room for the rest (``draftFits(_:in:user:)``), so
    /// only one kept before that check can make it drop the draft, then the unread @. Returns the
    /// entry's bytes with its tag and length.
    static func shrink(_ info: inout ConversationInfo, to room: Int) -> Int {
        var size: Int { info.serializedBytes().count + 6 }
        while size > room, !info.readHorizons.isEmpty {
            info.readHorizons.removeLast(max(1, info.readHorizons.count / 4))
        }
        if size > room { info.lastMessage = nil }
        if size > room {
            info.draftText = ""
            info.draftTimeMs = 0
        }
        if size > room { info.atMe = [] }
        return size
    }

    /// Whether `draft` leaves room in one list page for the rest of `user`'s entry of
    /// `conversation`: its other fields at their largest (every number at 10 bytes), its unread @ at
    /// their most, and the cursor; its last message and read horizons may be left out
    /// (``shrink(_:to:)``). Without the check, a draft near the frame size limit made an entry no
    /// page could carry.
    func draftFits(_ draft: String, in conversation: Conversation, user: String) -> Bool {
        guard let key = ConversationKey(conversation, user: user) else { return true }
        let entry = ConversationInfo.with {
            $0.conversation = key.conversation(for: user)
            $0.draftText = draft
        }
        // The scalar fields: 11 numbers and flags, each at most 11 bytes with its tag.
        let largest = entry.serializedBytes().count + 11 * 11 + Self.maxAtMeBytes + 6
        return largest + Self.cursorRoom(storageID: key.storageID) <= answerRoom
    }

    /// A stored message as a list entry shows it: as `user`'s devices got it, or only its ids and
    /// status RECALLED or DELETED (the kept stub's; RECALLED for one removed before stubs were kept)
    /// when it was recalled or deleted for everyone. To a user who left the group, as it was sent:
    /// its edits, reactions and keys since are the members' to see (as its read horizons are).
    private func lastMessage(_ stored: StoredMessage, removed: Bool, user: String) -> Message? {
        guard !removed else {
            let stub = try? wireDecoder.decode(Frame.self, from: stored.frame)
            let status: MessageStatus =
                if case .message(let message)? = stub?.payload, message.status == .deleted { .deleted } else {
                    .recalled
                }
            return Message.with {
                $0.seq = stored.seq
                $0.serverMsgUID = stored.serverMsgUID
                $0.clientMsgID = stored.clientMsgID
                $0.senderID = stored.senderID
                $0.serverTimeMs = stored.serverTimeMs
                $0.status = status
            }
        }
        guard let frame = try? wireDecoder.decode(Frame.self, from: stored.frame),
            case .message(var message)? = frame.payload
        else { return nil }
        if isMember(user, stored.conversation) {
            applyChanges(to: &message, in: stored.conversation, for: user)
        } else if message.viewOnce, message.senderID != user {
            message = Redaction.viewedOnce(message)
        }
        message.direction = stored.senderID == user ? .sent : .received
        return message
    }

    /// The other members' read horizons in `key`, highest first, at most ``maxReadHorizons``.
    private func readHorizons(of key: ConversationKey, except user: String) -> [ReadHorizon] {
        // The first ``maxReadHorizons`` from a heap of that many, so a group of thousands has its
        // members walked, not each made a horizon and sorted.
        var first = SmallestElements<Horizon>(capacity: Self.maxReadHorizons)
        for member in users(of: key) where member != user {
            let seq =
                key.isShared
                ? userConversations[member]?[key]?.info.readSeq ?? 0 : shownReadSeq(of: member, in: key, to: user)
            guard seq > 0 else { continue }
            first.insert(Horizon(readSeq: seq, userID: member))
        }
        return first.sorted.map { horizon in
            ReadHorizon.with {
                $0.userID = horizon.userID; $0.readSeq = horizon.readSeq
            }
        }
    }

    /// A member's read horizon ordered as a list entry holds them: the furthest read first, then by user id.
    struct Horizon: Comparable {
        let readSeq: UInt64
        let userID: String

        static func < (a: Self, b: Self) -> Bool { (b.readSeq, a.userID) < (a.readSeq, b.userID) }
    }
}
#endif
