/// `validate()`'s rules for the user state of schema version 3: the conversation list, message
/// extensions and the blocklist.
extension ValidationIssue.Rule {
    /// A conversation update that changes nothing or names an unknown field bit; a cleared seq or a
    /// draft sent without its field bit.
    ///
    /// Source: IMCodec (session.proto ConversationUpdate: only the fields whose bits are set change).
    public static let conversationUpdate = Self(rawValue: "conversationUpdate")
    /// A conversation-list entry whose counts contradict each other: a read horizon above the
    /// newest seq, fewer unread messages than unread @, an @ at or below the read horizon, out of
    /// order or of no kind; a recalled or deleted last message that carries content; a page that
    /// says it has more without where to go on (a next version or a cursor), or gives a cursor but
    /// says it has no more.
    ///
    /// Source: Tencent (V2TIMConversation `unreadCount`, `groupAtInfoList`: the unread @ of the
    /// user, with kinds AT_ME, AT_ALL and AT_ALL_AT_ME).
    public static let conversationList = Self(rawValue: "conversationList")
    /// An extension key that is empty, longer than ``ValidationLimits/maxExtensionKeyBytes``, or set
    /// or removed twice in one update; a value longer than ``ValidationLimits/maxExtensionValueBytes``;
    /// more than ``ValidationLimits/maxExtensionKeys`` keys; an update that changes nothing.
    ///
    /// Source: Tencent's public docs (message extensions: a key is at most 100 bytes, a value at
    /// most 1 KB, at most 300 keys per message); RongCloud (message expansion: a key at most 32
    /// characters, a value at most 4,096 characters; set `maxExtensionKeyBytes` and
    /// `maxExtensionValueBytes` to those for RongCloud's rules).
    public static let extensionLimits = Self(rawValue: "extensionLimits")
    /// An extension on a message that does not allow one (no `MESSAGE_FLAG_SUPPORT_EXTENSION`), or an
    /// extension update of a message outside a one-to-one or group conversation.
    ///
    /// Source: RongCloud (`canIncludeExpansion` must be set for `expansionDic` to be sent; message
    /// expansion is for one-to-one and group conversations only).
    public static let extensionNotAllowed = Self(rawValue: "extensionNotAllowed")
    /// A blocklist change without an action or users, with an empty or repeated user id, or naming
    /// more than ``ValidationLimits/maxBlocklistChangeUsers``; a blocklist with an empty or repeated id.
    ///
    /// Source: Tencent (addToBlackList and deleteFromBlackList take a list of user ids).
    public static let blocklist = Self(rawValue: "blocklist")
}

extension Validator {
    // MARK: Conversation list

    mutating func check(_ update: ConversationUpdate) {
        checkConversation(update.conversation, at: "conversationUpdate.conversation")
        let known: UInt32 = ConversationField.allCases.reduce(0) { $0 | UInt32($1.rawValue) }
        if update.fields == 0 {
            report(.conversationUpdate, "conversationUpdate.fields", "the update changes no field")
        } else if update.fields & ~known != 0 {
            report(.conversationUpdate, "conversationUpdate.fields", "unknown field bits \(update.fields & ~known)")
        }
        if update.clearedSeq != 0 && update.fields & UInt32(ConversationField.clearedSeq.rawValue) == 0 {
            report(.conversationUpdate, "conversationUpdate.clearedSeq", "a cleared seq without its field bit")
        }
        if !update.draftText.isEmpty && update.fields & UInt32(ConversationField.draft.rawValue) == 0 {
            report(.conversationUpdate, "conversationUpdate.draftText", "a draft without its field bit")
        }
        checkMilliseconds(update.timeMs, at: "conversationUpdate.timeMs")
    }

    mutating func check(_ request: ConversationListRequest) {
        if Int(request.limit) > limits.maxHistoryPageSize {
            report(
                .historyPageSize,
                "conversationListRequest.limit",
                "\(request.limit) conversations, above the page limit \(limits.maxHistoryPageSize)"
            )
        }
    }

    mutating func check(_ list: ConversationList) {
        // A page that stops inside the first version's conversations goes on from its cursor alone.
        if list.hasMore && list.nextAfterVersion == 0 && list.nextCursor.isEmpty {
            report(.conversationList, "conversationList.nextAfterVersion", "more pages but no next version or cursor")
        }
        if !list.nextCursor.isEmpty && !list.hasMore {
            report(.conversationList, "conversationList.nextCursor", "a cursor but no more pages")
        }
        // Each entry's conversation is checked by check(info) below; here only that none repeats.
        var seen = Set<Conversation>()
        for (index, info) in list.conversations.enumerated() {
            if let conversation = info.conversation, !seen.insert(Self.key(conversation)).inserted {
                report(
                    .duplicateConversation,
                    "conversationList.conversations[\(index)].conversation",
                    "the conversation is listed twice"
                )
            }
        }
        for (index, info) in list.conversations.enumerated() {
            check(info, at: "conversationList.conversations[\(index)]")
        }
    }

    private mutating func check(_ info: ConversationInfo, at path: String) {
        checkConversation(info.conversation, at: Self.join(path, "conversation"))
        if info.readSeq > info.maxSeq {
            report(
                .conversationList,
                Self.join(path, "readSeq"),
                "read up to \(info.readSeq), above max seq \(info.maxSeq)"
            )
        }
        if Int(info.unreadCount) < info.atMe.count {
            report(.conversationList, Self.join(path, "unreadCount"), "fewer unread messages than unread @")
        }
        var previous = max(info.readSeq, info.clearedSeq)
        for (index, at) in info.atMe.enumerated() {
            let atPath = Self.join(path, "atMe[\(index)]")
            if at.kind == .unspecified { report(.unspecifiedEnum, Self.join(atPath, "kind"), "the @ has no kind") }
            if at.seq <= previous || at.seq > info.maxSeq {
                report(
                    .conversationList,
                    Self.join(atPath, "seq"),
                    "an unread @ must be read-horizon < seq <= maxSeq, in order"
                )
            }
            previous = max(previous, at.seq)
        }
        if let last = info.lastMessage {
            if last.status == .recalled || last.status == .deleted {
                // Removed: its ids and status only (session.proto ConversationInfo.last_message).
                if !last.elements.isEmpty {
                    report(
                        .conversationList,
                        Self.join(path, "lastMessage.elements"),
                        "a recalled or deleted last message carries content"
                    )
                }
            } else {
                check(last, at: Self.join(path, "lastMessage"), mergerDepth: 0)
            }
        }
        for (index, horizon) in info.readHorizons.enumerated() {
            requireUser(
                horizon.userID,
                at: Self.join(path, "readHorizons[\(index)].userID"),
                "a read horizon names no user"
            )
        }
        checkMilliseconds(info.draftTimeMs, at: Self.join(path, "draftTimeMs"))
        checkMilliseconds(info.updatedAtMs, at: Self.join(path, "updatedAtMs"))
    }

    // MARK: Extensions

    /// The extension a message is sent with (`Message.expansion`): allowed only with
    /// `MESSAGE_FLAG_SUPPORT_EXTENSION`, and within the key and value limits.
    mutating func checkExpansion(_ message: Message, at path: String) {
        guard !message.expansion.isEmpty else { return }
        let expansionPath = Self.join(path, "expansion")
        if message.flags & UInt32(MessageFlag.supportExtension.rawValue) == 0 {
            report(
                .extensionNotAllowed,
                expansionPath,
                "an extension on a message without MESSAGE_FLAG_SUPPORT_EXTENSION"
            )
        }
        if message.expansion.count > limits.maxExtensionKeys {
            report(
                .extensionLimits,
                expansionPath,
                "\(message.expansion.count) keys, above \(limits.maxExtensionKeys)"
            )
        }
        for (key, value) in message.expansion.sorted(by: { $0.key < $1.key }) {
            checkExtensionEntry(key: key, value: value, at: Self.join(expansionPath, key))
        }
    }

    private mutating func checkExtensionEntry(key: String, value: String, at path: String) {
        if key.isEmpty {
            report(.extensionLimits, path, "an empty extension key")
        } else if key.utf8.count > limits.maxExtensionKeyBytes {
            report(.extensionLimits, path, "a key of \(key.utf8.count) bytes, above \(limits.maxExtensionKeyBytes)")
        }
        if value.utf8.count > limits.maxExtensionValueBytes {
            report(
                .extensionLimits,
                path,
                "a value of \(value.utf8.count) bytes, above \(limits.maxExtensionValueBytes)"
            )
        }
    }

    mutating func check(_ update: ExtensionUpdate) {
        checkRef(update.message, at: "extensionUpdate.message")
        if let type = update.message?.conversation?.type, type != .oneToOne && type != .group {
            report(
                .extensionNotAllowed,
                "extensionUpdate.message.conversation",
                "extensions are for one-to-one and group messages, not \(type.protoName)"
            )
        }
        if update.set.isEmpty && update.remove.isEmpty && update.entries.isEmpty {
            report(.extensionLimits, "extensionUpdate", "the update sets and removes no key")
        }
        if update.set.count + update.remove.count > limits.maxExtensionKeys {
            report(
                .extensionLimits,
                "extensionUpdate",
                "\(update.set.count + update.remove.count) keys, above \(limits.maxExtensionKeys)"
            )
        }
        var seen = Set<String>()
        for (field, entries) in [("set", update.set), ("remove", update.remove)] {
            for (index, entry) in entries.enumerated() {
                let path = "extensionUpdate.\(field)[\(index)]"
                checkExtensionEntry(key: entry.key, value: entry.value, at: path)
                if !entry.key.isEmpty && !seen.insert(entry.key).inserted {
                    report(.extensionLimits, path, "the key \(entry.key) is changed twice in one update")
                }
            }
        }
        checkEntries(update.entries, at: "extensionUpdate.entries")
        checkMilliseconds(update.timeMs, at: "extensionUpdate.timeMs")
    }

    mutating func check(_ request: ExtensionFetchRequest) {
        if request.messages.isEmpty {
            report(.missingMessageRef, "extensionFetchRequest.messages", "no message to fetch the extension of")
        } else if request.messages.count > limits.maxHistoryPageSize {
            report(
                .historyPageSize,
                "extensionFetchRequest.messages",
                "\(request.messages.count) messages, above the page limit \(limits.maxHistoryPageSize)"
            )
        }
        for (index, ref) in request.messages.enumerated() {
            checkRef(ref, at: "extensionFetchRequest.messages[\(index)]")
        }
    }

    mutating func check(_ response: ExtensionFetchResponse) {
        for (index, extensionOfMessage) in response.extensions.enumerated() {
            let path = "extensionFetchResponse.extensions[\(index)]"
            checkRef(extensionOfMessage.message, at: Self.join(path, "message"))
            checkEntries(extensionOfMessage.entries, at: Self.join(path, "entries"))
        }
    }

    /// Keys as a server reports them: each once, with a version.
    private mutating func checkEntries(_ entries: [ExtensionEntry], at path: String) {
        var seen = Set<String>()
        for (index, entry) in entries.enumerated() {
            let entryPath = "\(path)[\(index)]"
            checkExtensionEntry(key: entry.key, value: entry.value, at: entryPath)
            if entry.version == 0 {
                report(.extensionLimits, Self.join(entryPath, "version"), "a server's extension key has no version")
            }
            if !seen.insert(entry.key).inserted {
                report(.extensionLimits, entryPath, "the key \(entry.key) is listed twice")
            }
        }
    }

    // MARK: Blocklist

    mutating func check(_ change: BlocklistChange) {
        if change.action == .unspecified {
            report(.unspecifiedEnum, "blocklistChange.action", "neither block nor unblock")
        }
        if change.userIDs.isEmpty {
            report(.blocklist, "blocklistChange.userIDs", "no user to block or unblock")
        } else if change.userIDs.count > limits.maxBlocklistChangeUsers {
            report(
                .blocklist,
                "blocklistChange.userIDs",
                "\(change.userIDs.count) users, above \(limits.maxBlocklistChangeUsers)"
            )
        }
        checkUserIDs(change.userIDs, at: "blocklistChange.userIDs")
        checkMilliseconds(change.timeMs, at: "blocklistChange.timeMs")
    }

    mutating func check(_ response: BlocklistResponse) {
        checkUserIDs(response.userIDs, at: "blocklistResponse.userIDs")
    }

    private mutating func checkUserIDs(_ ids: [String], at path: String) {
        var seen = Set<String>()
        for (index, id) in ids.enumerated() {
            if id.isEmpty {
                report(.blocklist, "\(path)[\(index)]", "an empty user id")
            } else if !seen.insert(id).inserted {
                report(.blocklist, "\(path)[\(index)]", "\(id) is listed twice")
            }
        }
    }
}
