#if Tools
import IMCodec

/// Replies (message.proto `quote`: "The message this one replies to or quotes", and
/// `quote_snapshot`: "The author and a text abstract of a quoted message, as the replying client
/// saw it"). The snapshot is the replying client's, and receivers show it as what the quoted
/// message said, so the relay checks a reply's quote against the message it names before it stamps
/// the reply:
/// - the quoted message is one its sender may read (1009 otherwise): a conversation it is in, a
///   targeted message sent to it, not one from before its join or clear;
/// - who the quote says wrote it (`quote.sender_id`, `quote_snapshot.author_id`) is who did (1009
///   otherwise), and a snapshot's `author_nickname`, which the relay cannot check, comes with its
///   `author_id` (1009 otherwise);
/// - a snapshot comes with the quote it describes (1009 otherwise);
/// - a quote the relay cannot attribute (it names no message the relay keeps, nor by sender and
///   client id one it delivered lately: an unknown id, a message dropped by retention) goes out
///   without its author and text
///   (``QuoteRedaction/attribution``): a reply cannot make anyone the author of a message that
///   was never theirs;
/// - the snapshot of a message that was recalled, deleted for everyone or expired, or that is
///   view-once, goes out without its text (``QuoteRedaction/text``): what those messages said is
///   not served again, not even inside another message.
///
/// The snapshot's text is the replying client's abstract (it may be shortened, or a placeholder for
/// media): the relay holds no message text in memory and does not check it. A receiver that holds
/// the quoted message shows it from its own copy, found by the quote's ids.
///
/// A reply kept with the text of a kept message is remembered (``Router/quotedBy``, a state record
/// per reply), so that a later recall, delete for everyone or expiry of the quoted message takes the
/// text out of the reply in the store too (``StoreBatch/redactedQuotes``). An edit's `new_message`
/// is checked and redacted the same way, with 3003 for what a message gets 1009 for.
extension Router {
    /// What a reply's snapshot loses before it goes out.
    enum QuoteRedaction {
        /// Nothing.
        case none
        /// The text it quoted: the quoted message was recalled, deleted for everyone or expired, or
        /// is view-once.
        case text
        /// Its author and text, and the quote's `sender_id`: no message the relay knows of is the
        /// one quoted.
        case attribution
    }

    /// A reply's quote, as checked.
    struct CheckedQuote {
        /// The kept message whose text the reply, as it goes out, quotes: its recall cuts the reply.
        var quotedText: MessageKey?
        /// The reply with its quote cut, when the check cut something (it goes out re-encoded).
        var redacted: Message?
    }

    /// Checks the quote of `message`, sent by `user` to `key` (the rules above).
    func checkQuote(of message: Message, in key: ConversationKey, user: String) -> Result<CheckedQuote, Refusal> {
        func refusal(_ reason: String) -> Result<CheckedQuote, Refusal> {
            .failure(Refusal(RelayProtocol.AckError.badQuote, "badQuote: " + reason))
        }
        let snapshot = message.quoteSnapshot
        guard let ref = message.quote else {
            return snapshot == nil ? .success(CheckedQuote()) : refusal("a quote_snapshot without a quote")
        }
        if let author = snapshot?.authorID, !author.isEmpty, !ref.senderID.isEmpty, author != ref.senderID {
            return refusal("the quote_snapshot's author_id is not the quote's sender_id")
        }
        // A nickname is a display hint for its author id, never an author of its own.
        if let snapshot, !snapshot.authorNickname.isEmpty, snapshot.authorID.isEmpty {
            return refusal("a quote_snapshot's author_nickname comes with its author_id")
        }
        let unattributed = Result<CheckedQuote, Refusal>.success(Self.cut(message, .attribution, quoting: nil))
        // The quoted message's conversation: the reply's own unless the quote names another (a
        // one-to-one conversation is named from either side).
        var quotedKey = key
        if let named = ref.conversation, named.type != .unspecified, !key.names(named) {
            guard let other = conversationKey(of: ref, user: user) else { return unattributed }
            quotedKey = other
        }
        guard isMember(user, quotedKey) else { return refusal("\(user) is not in the quoted message's conversation") }
        let state = conversations[quotedKey] ?? ConversationState()
        let seq: UInt64
        switch state.resolve(ref) {
        case .conflicting:
            return refusal("the quote's seq \(ref.seq) and its ids name different messages")
        case .unknown:
            // A message delivered without being kept (online-only, in a chatroom) that its sender sent lately.
            let live = recentLiveMessages[ref.senderID]?.first(ref.clientMsgID, in: quotedKey)
            guard !ref.clientMsgID.isEmpty, ref.seq == 0, let live,
                ref.serverMsgUID.isEmpty || ref.serverMsgUID == live.serverMsgUID
            else { return unattributed }
            return .success(CheckedQuote())
        case .kept(let kept):
            seq = kept
        }
        if !state.wasSent(seq, to: user) {
            return refusal("the quoted message seq \(seq) was sent to other members only")
        }
        guard reads(seq, in: quotedKey, user: user) else { return refusal(Self.unreadReason(seq, user: user)) }
        let sender = state.kept[seq]?.sender ?? ""
        if !ref.senderID.isEmpty, ref.senderID != sender {
            return refusal("the quote's sender_id is not the sender of the quoted message seq \(seq)")
        }
        if let author = snapshot?.authorID, !author.isEmpty, author != sender {
            return refusal("the quote_snapshot's author_id is not the sender of the quoted message seq \(seq)")
        }
        let gone = state.removed.contains(seq) || hasExpired(seq, in: quotedKey, at: nowMs())
        let redaction: QuoteRedaction = gone || isViewOnce(seq, in: quotedKey) ? .text : .none
        return .success(Self.cut(message, redaction, quoting: MessageKey(conversation: quotedKey, seq: seq)))
    }

    /// The check's result for `message`, whose quote names kept message `quoted` (if any), once its
    /// quote loses what `redaction` says (``Redaction/quote(_:keepingAuthor:)``).
    private static func cut(
        _ message: Message,
        _ redaction: QuoteRedaction,
        quoting quoted: MessageKey?
    ) -> CheckedQuote {
        var redacted = message
        switch redaction {
        case .none: break
        case .text: Redaction.quote(&redacted, keepingAuthor: true)
        case .attribution: Redaction.quote(&redacted, keepingAuthor: false)
        }
        return CheckedQuote(
            quotedText: redacted.quoteSnapshot?.text.isEmpty == false ? quoted : nil,
            redacted: redacted == message ? nil : redacted
        )
    }

    /// The most messages whose text a kept message's versions (as sent, and each edit's
    /// `new_message`) may quote: each is a link the relay keeps while both are kept.
    static let maxQuotedPerMessage = 8

    /// Remembers that kept message `reply` quotes the text of kept message `quoted`.
    func noteQuote(_ reply: MessageKey, of quoted: MessageKey) {
        // Not one retention dropped as the reply was kept (a reply to the oldest message of its
        // own full conversation).
        guard isKeptSeq(quoted), quoting[reply.conversation]?[reply.seq]?.contains(quoted) != true else { return }
        link(reply, quoting: quoted)
        store.batch.records[.quote(of: quoted, reply: reply)] = [1]
    }

    /// Takes the text of kept message `seq` of `key`, which was recalled, deleted for everyone or
    /// expired, out of the kept replies that quote it, and forgets them.
    func redactQuotes(of seq: UInt64, in key: ConversationKey) {
        let quoted = MessageKey(conversation: key, seq: seq)
        let uid = conversations[key]?.kept[seq]?.serverMsgUID ?? ""
        for reply in unlinkReplies(of: quoted) {
            store.batch.redactedQuotes.append((reply, quotedUID: uid))
            store.batch.records[.quote(of: quoted, reply: reply)] = []
        }
    }

    /// Forgets the replies quoting the messages of `key` with seqs in `trimmed`, and what the replies
    /// among those messages quoted (retention dropped them).
    func forgetQuotes(in key: ConversationKey, trimmed: Range<UInt64>) {
        for old in trimmed.present(in: quotedBy[key]?.keys) {
            let quoted = MessageKey(conversation: key, seq: old)
            for reply in unlinkReplies(of: quoted) { store.batch.records[.quote(of: quoted, reply: reply)] = [] }
        }
        for old in trimmed.present(in: quoting[key]?.keys) { forgetQuoting(of: old, in: key) }
    }

    /// Forgets what kept message `seq` of `key` quoted, as a reply (it was removed, or retention
    /// dropped it): a reply's links went only when the message it quotes went, so replies in one
    /// conversation to a message of another (one's own conversation with oneself, to a quiet group)
    /// made the relay keep a link each for as long as that message was kept.
    func forgetQuoting(of seq: UInt64, in key: ConversationKey) {
        let reply = MessageKey(conversation: key, seq: seq)
        for quoted in Self.take(reply, from: &quoting) ?? [] {
            Self.change(quoted, in: &quotedBy) { $0.remove(reply) }
            store.batch.records[.quote(of: quoted, reply: reply)] = []
        }
    }

    /// Loads a reply of kept message `quoted` from its state record; a record of a reply or a
    /// quoted message retention dropped (left by a relay that did not delete it) is deleted instead.
    func loadQuote(of quoted: MessageKey, reply: MessageKey) {
        guard isKeptSeq(reply), isKeptSeq(quoted) else {
            store.batch.records[.quote(of: quoted, reply: reply)] = []
            return
        }
        link(reply, quoting: quoted)
    }

    /// Whether `message` is not below its conversation's oldest kept seq.
    private func isKeptSeq(_ message: MessageKey) -> Bool {
        guard let state = conversations[message.conversation] else { return false }
        return message.seq >= state.oldestSeq
    }

    private func link(_ reply: MessageKey, quoting quoted: MessageKey) {
        quotedBy[quoted.conversation, default: [:]][quoted.seq, default: []].insert(reply)
        quoting[reply.conversation, default: [:]][reply.seq, default: []].append(quoted)
    }

    /// Takes the replies of `quoted` out of both maps, and returns them.
    private func unlinkReplies(of quoted: MessageKey) -> Set<MessageKey> {
        let replies = Self.take(quoted, from: &quotedBy) ?? []
        for reply in replies { Self.change(reply, in: &quoting) { $0.removeAll { $0 == quoted } } }
        return replies
    }

    /// Takes the entry of `message` out of `links`, with its conversation's map once that is empty.
    private static func take<Links: Collection>(
        _ message: MessageKey,
        from links: inout [ConversationKey: [UInt64: Links]]
    ) -> Links? {
        guard let entry = links[message.conversation]?.removeValue(forKey: message.seq) else { return nil }
        if links[message.conversation]?.isEmpty == true { links[message.conversation] = nil }
        return entry
    }

    /// Applies `change` to the entry of `message` in `links`, which goes once it is empty.
    private static func change<Links: Collection>(
        _ message: MessageKey,
        in links: inout [ConversationKey: [UInt64: Links]],
        _ change: (inout Links) -> Void
    ) {
        guard var entry = take(message, from: &links) else { return }
        change(&entry)
        if !entry.isEmpty { links[message.conversation, default: [:]][message.seq] = entry }
    }
}
#endif
