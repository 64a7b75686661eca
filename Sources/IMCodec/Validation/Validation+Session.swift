/// `validate()`'s rules for the session layer, the message features of schema version 2 and the
/// read-receipt requests (the rules themselves are documented in ``ValidationIssue/Rule``).
extension Validator {
    // MARK: Times

    /// Times are epoch milliseconds; a value below 10^11 (March 1973) is almost certainly seconds.
    mutating func checkMilliseconds(_ time: Int64, at path: String) {
        if time > 0 && time < 100_000_000_000 {
            report(
                .timeNotMilliseconds,
                path,
                "\(time) looks like seconds; times are epoch milliseconds (Tencent's C2C receipt "
                    + "timestamp is seconds: multiply by 1000)"
            )
        }
    }

    // MARK: Session

    mutating func check(_ login: LoginRequest) {
        for (field, value) in [("userID", login.userID), ("token", login.token), ("deviceID", login.deviceID)]
        where value.isEmpty {
            report(.loginCredentials, "loginRequest.\(field)", "the login has no \(field)")
        }
        if login.platform == .unspecified {
            report(.unspecifiedEnum, "loginRequest.platform", "the login does not say which platform the device is")
        }
        checkSeqs(login.lastSeen, at: "loginRequest.lastSeen")
    }

    mutating func check(_ result: LoginResult) {
        if result.errorCode == 0 && result.sessionID.isEmpty {
            report(.loginResultSession, "loginResult.sessionID", "a successful login opens a session with an id")
        } else if result.errorCode != 0 && !result.sessionID.isEmpty {
            report(
                .loginResultSession,
                "loginResult.sessionID",
                "a failed login (error \(result.errorCode)) opens no session"
            )
        } else if result.errorCode != 0 && result.errorDescription.isEmpty {
            report(
                .loginResultSession,
                "loginResult.errorDescription",
                "a failed login (error \(result.errorCode)) says why"
            )
        }
    }

    mutating func checkConversations(_ conversations: [Conversation], at path: String) {
        checkDistinct(conversations, at: path, field: "")
    }

    mutating func checkSeqs(_ seqs: [ConversationSeq], at path: String) {
        checkDistinct(seqs.map(\.conversation), at: path, field: ".conversation")
    }

    /// Each conversation of a list is valid (`path[i]` + `field`) and listed once (`path[i]`).
    mutating func checkDistinct(_ conversations: [Conversation?], at path: String, field: String) {
        var seen = Set<Conversation>()
        for (i, conversation) in conversations.enumerated() {
            checkConversation(conversation, at: "\(path)[\(i)]\(field)")
            if let conversation, !seen.insert(Self.key(conversation)).inserted {
                report(.duplicateConversation, "\(path)[\(i)]", "the conversation is listed twice")
            }
        }
    }

    /// A conversation without its unknown fields, for comparing.
    static func key(_ conversation: Conversation) -> Conversation {
        Conversation.with {
            $0.type = conversation.type
            $0.targetID = conversation.targetID
            $0.channelID = conversation.channelID
        }
    }

    mutating func check(_ request: SyncRequest) {
        checkConversation(request.conversation, at: "syncRequest.conversation")
        if request.fromSeq == 0 {
            report(.syncRange, "syncRequest.fromSeq", "seqs start at 1")
        } else if request.toSeq != 0 && request.toSeq < request.fromSeq {
            report(.syncRange, "syncRequest.toSeq", "the range \(request.fromSeq)...\(request.toSeq) is empty")
        }
        if request.limit == 0 || Int(request.limit) > limits.maxHistoryPageSize {
            report(
                .historyPageSize,
                "syncRequest.limit",
                "\(request.limit) messages are asked for; 1 to \(limits.maxHistoryPageSize) are allowed"
            )
        }
    }

    mutating func check(_ response: SyncResponse) {
        checkPage(response.conversation, response.messages, at: "syncResponse")
        var previous: UInt64 = 0
        for (i, message) in response.messages.enumerated() {
            if message.seq == 0 || message.seq <= previous || (response.maxSeq != 0 && message.seq > response.maxSeq) {
                report(
                    .syncRange,
                    "syncResponse.messages[\(i)].seq",
                    "seq \(message.seq) is not after \(previous) and within 1...\(response.maxSeq)"
                )
            }
            previous = max(previous, message.seq)
        }
        if response.hasMore && response.nextFromSeq <= previous {
            report(
                .syncRange,
                "syncResponse.nextFromSeq",
                "the page has more but nextFromSeq \(response.nextFromSeq) is not after its last seq \(previous)"
            )
        }
    }

    mutating func check(_ update: PresenceUpdate) {
        requireUser(update.userID, at: "presence.userID", "the presence update does not say whose presence changed")
        switch update.status {
        case .unspecified:
            report(.unspecifiedEnum, "presence.status", "the presence update has no status")
        case .offline, .away:
            if update.lastSeenMs <= 0 {
                report(
                    .presenceLastSeen,
                    "presence.lastSeenMs",
                    "an \(update.status.protoName) user has a last-seen time"
                )
            }
        default:
            break
        }
    }

    mutating func check(_ subscription: PresenceSubscription) {
        if subscription.action == .unspecified {
            report(.unspecifiedEnum, "presenceSubscription.action", "neither subscribe nor unsubscribe")
        }
        if subscription.userIDs.isEmpty || subscription.userIDs.count > limits.maxPresenceUsers {
            report(
                .presenceSubscriptionSize,
                "presenceSubscription.userIDs",
                "\(subscription.userIDs.count) users; 1 to \(limits.maxPresenceUsers) are allowed"
            )
        }
    }

    mutating func check(_ change: MembershipChange) {
        if change.action == .unspecified {
            report(.unspecifiedEnum, "membership.action", "neither join nor leave")
        }
        checkConversation(change.conversation, at: "membership.conversation")
        if let type = change.conversation?.type, type != .unspecified, !Self.isGroupLike(type) {
            report(
                .membershipConversation,
                "membership.conversation",
                "a \(type.protoName) conversation has no members to join or leave"
            )
        }
    }

    // MARK: Receipt requests

    mutating func check(_ request: ReadReceiptRequest) {
        if request.messages.isEmpty {
            report(.readMembersPage, "readReceiptRequest.messages", "the request names no message")
        }
        for (i, ref) in request.messages.enumerated() { checkRef(ref, at: "readReceiptRequest.messages[\(i)]") }
    }

    mutating func check(_ request: GroupReadMembersRequest) {
        checkRef(request.message, at: "groupReadMembersRequest.message")
        if request.filter == .unspecified {
            report(.unspecifiedEnum, "groupReadMembersRequest.filter", "neither read nor unread members are asked for")
        }
        if request.count == 0 || Int(request.count) > limits.maxReadMembersPageSize {
            report(
                .readMembersPage,
                "groupReadMembersRequest.count",
                "\(request.count) members are asked for; 1 to \(limits.maxReadMembersPageSize) are allowed"
            )
        }
    }

    // MARK: Message features

    mutating func checkFeatures(_ message: Message, at path: String) {
        let unknownBits = message.receivedStatus & ~UInt32(15)
        if unknownBits != 0 {
            report(
                .receivedStatusBits,
                Self.join(path, "receivedStatus"),
                "bits \(unknownBits) are not ReceivedStatusFlag values"
            )
        }
        checkSummaries(message.reactions, at: Self.join(path, "reactions"))
        if let root = message.threadRoot { checkRef(root, at: Self.join(path, "threadRoot")) }
        if message.expireAfterS > limits.maxExpireAfterSeconds {
            report(
                .expiry,
                Self.join(path, "expireAfterS"),
                "a timer of \(message.expireAfterS) s; at most \(limits.maxExpireAfterSeconds) s are allowed"
            )
        }
        if message.expireAtMs != 0 {
            let sent = message.serverTimeMs != 0 ? message.serverTimeMs : message.clientTimeMs
            if message.expireAtMs <= sent {
                report(.expiry, Self.join(path, "expireAtMs"), "the message expires at or before it was sent")
            } else if message.expireAfterS != 0, message.serverTimeMs != 0,
                message.expireAtMs != message.serverTimeMs &+ Int64(message.expireAfterS) * 1000
            {
                report(
                    .expiry,
                    Self.join(path, "expireAtMs"),
                    "expireAtMs is not serverTimeMs + expireAfterS × 1000"
                )
            }
        }
        if message.viewOnce {
            let media =
                !message.elements.isEmpty
                && message.elements.allSatisfy {
                    switch $0.content {
                    case .image?, .video?, .sound?: true
                    default: false
                    }
                }
            if !media {
                report(
                    .viewOnceContent,
                    Self.join(path, "viewOnce"),
                    "only images, videos and voice messages are view-once"
                )
            }
        }
    }

    mutating func checkEmoji(_ emoji: String, at path: String) {
        let scalars = emoji.unicodeScalars
        if emoji.isEmpty || scalars.count > limits.maxEmojiScalars || emoji.utf8.count > 32
            || scalars.contains(where: \.isASCII)
        {
            report(
                .reactionEmoji,
                path,
                "\"\(emoji)\" is not one emoji (1 to \(limits.maxEmojiScalars) non-ASCII scalars, at most 32 bytes)"
            )
        }
    }

    mutating func checkSummaries(_ summaries: [ReactionSummary], at path: String) {
        var emojis = Set<String>()
        for (i, summary) in summaries.enumerated() {
            let item = "\(path)[\(i)]"
            checkEmoji(summary.emoji, at: Self.join(item, "emoji"))
            if !emojis.insert(summary.emoji).inserted {
                report(.reactionSummary, item, "\"\(summary.emoji)\" has a summary already")
            }
            if Int(summary.count) < summary.userIDs.count || summary.userIDs.count > 10 {
                report(
                    .reactionSummary,
                    item,
                    "count \(summary.count) with \(summary.userIDs.count) users listed (at most 10, at most count)"
                )
            }
        }
    }

    mutating func check(_ reaction: ReactionEvent) {
        checkRef(reaction.message, at: "reaction.message")
        requireUser(reaction.userID, at: "reaction.userID", "the reaction does not say who reacted")
        checkEmoji(reaction.emoji, at: "reaction.emoji")
        if reaction.action == .unspecified {
            report(.unspecifiedEnum, "reaction.action", "the reaction is neither added nor removed")
        }
        checkSummaries(reaction.summary, at: "reaction.summary")
    }

    mutating func check(_ text: TextElement, at path: String) {
        let units = Array(text.text.utf16)
        for (i, mention) in text.mentions.enumerated() {
            let item = "\(path).mentions[\(i)]"
            let start = Int(mention.offset)
            let (end, overflow) = start.addingReportingOverflow(Int(mention.length))
            if mention.length == 0 || overflow || end > units.count {
                report(
                    .mentionRange,
                    item,
                    "\(mention.offset)+\(mention.length) is not inside the text's \(units.count) UTF-16 code units"
                )
                continue
            }
            // A range may not start or end between the two halves of a surrogate pair.
            if UTF16.isTrailSurrogate(units[start]) || (end < units.count && UTF16.isTrailSurrogate(units[end])) {
                report(.mentionRange, item, "the range splits a surrogate pair")
            }
            if mention.userID.isEmpty == !mention.all {
                report(.mentionRange, item, "a mention names a user or @all, not both or neither")
            }
        }
        for (i, preview) in text.linkPreviews.enumerated() {
            let url = preview.url.lowercased()
            if !(url.hasPrefix("https://") || url.hasPrefix("http://")) || url.count <= 8 {
                report(.linkPreviewURL, "\(path).linkPreviews[\(i)].url", "\"\(preview.url)\" is not an http(s) URL")
            }
        }
    }

    mutating func check(_ poll: PollElement, at path: String) {
        if poll.pollID.isEmpty || poll.question.isEmpty {
            report(.pollOptions, path, "a poll has an id and a question")
        }
        if poll.options.count < 2 || poll.options.count > limits.maxPollOptions {
            report(
                .pollOptions,
                Self.join(path, "options"),
                "\(poll.options.count) options; 2 to \(limits.maxPollOptions) are allowed"
            )
        }
        var ids = Set<UInt32>()
        for (i, option) in poll.options.enumerated() {
            if !ids.insert(option.id).inserted || option.text.isEmpty {
                report(.pollOptions, "\(path).options[\(i)]", "each option has its own id and a text")
            }
        }
    }

    mutating func check(_ vote: PollVoteEvent) {
        checkRef(vote.pollMessage, at: "pollVote.pollMessage")
        if vote.pollID.isEmpty { report(.pollVote, "pollVote.pollID", "the vote names no poll") }
        requireUser(vote.voterID, at: "pollVote.voterID", "the vote does not say who voted")
        if Set(vote.optionIDs).count != vote.optionIDs.count {
            report(.pollVote, "pollVote.optionIDs", "an option is chosen twice")
        }
    }

    mutating func check(_ update: PollUpdate) {
        checkRef(update.pollMessage, at: "pollUpdate.pollMessage")
        if update.pollID.isEmpty { report(.pollVote, "pollUpdate.pollID", "the update names no poll") }
        if update.closed && update.closedBy.isEmpty {
            report(.pollVote, "pollUpdate.closedBy", "a closed poll says who closed it")
        }
        var ids = Set<UInt32>()
        for (i, result) in update.results.enumerated() {
            let item = "pollUpdate.results[\(i)]"
            if !ids.insert(result.optionID).inserted {
                report(.pollVote, item, "option \(result.optionID) is listed twice")
            }
            if Int(result.votes) < result.voterIDs.count || result.votes > update.voterCount {
                report(
                    .pollVote,
                    item,
                    "\(result.votes) votes with \(result.voterIDs.count) voters listed and \(update.voterCount) voters in all"
                )
            }
        }
    }
}
