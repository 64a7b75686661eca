#if Tools
import IMCodec
import IMCodecNIO
import NIOCore

/// Replies (message.proto `quote`: "The message this one replies to or quotes", and
/// `quote_snapshot`: "The author and a text abstract of a quoted message, as the replying client
/// saw it"). The snapshot is the replying client's, and every receiver of the reply shows it as what
/// the quoted message said, so the relay checks it against the message it names before it stamps
/// the reply:
/// - the quoted message is one its sender may read (1009 otherwise): a conversation it is in, a
///   targeted message sent to it, not one from before its join or clear;
/// - what the quote says of the quoted message's author (`quote.sender_id`,
///   `quote_snapshot.author_id`) is that message's sender (1009 otherwise): no reply puts words
///   in another user's mouth;
/// - a snapshot comes with the quote it describes (1009 otherwise);
/// - the snapshot of a message that was recalled, deleted for everyone or expired, or that is
///   view-once, goes out without its text (``Redaction/quoteSnapshot(_:)``): what those messages
///   said is not served again, not even inside another message.
///
/// A reply kept with the text of a kept message is remembered (``Router/quotedBy``, a state record
/// per quoted message), so that a later recall, delete for everyone or expiry of the quoted message
/// redacts the reply's snapshot in the store too (``StoreBatch/redactedQuotes``). A quote of a
/// message the relay does not keep (online-only, in a chatroom, dropped by retention, or never
/// sent) cannot be checked and goes out as sent. An edit's `new_message` is checked the same way
/// (3003 when not so); one that quotes the text of a message not served again is refused, as an
/// edit is kept as sent.
extension Router {
    /// A reply's quote, as checked: the kept message it names, if any, and whether its snapshot must
    /// go out without its text.
    struct CheckedQuote {
        var quoted: MessageKey?
        var redact: Bool
    }

    /// Checks the quote of `message`, sent by `user` to `key` (the rules above).
    func checkQuote(of message: Message, in key: ConversationKey, user: String) -> Result<CheckedQuote, Refusal> {
        func refusal(_ reason: String) -> Result<CheckedQuote, Refusal> {
            .failure(Refusal(RelayProtocol.AckError.badQuote, "badQuote: " + reason))
        }
        let snapshot = message.quoteSnapshot
        guard let ref = message.quote else {
            return snapshot == nil ? .success(CheckedQuote(redact: false)) : refusal("a quote_snapshot without a quote")
        }
        if let author = snapshot?.authorID, !author.isEmpty, !ref.senderID.isEmpty, author != ref.senderID {
            return refusal("the quote_snapshot's author_id is not the quote's sender_id")
        }
        // The quoted message's conversation: the reply's own unless the quote names another.
        var quotedKey = key
        if let named = ref.conversation, named.type != .unspecified {
            guard let named = conversationKey(of: ref, user: user) else {
                return refusal("the quote names a conversation the relay does not keep")
            }
            quotedKey = named
        }
        guard isMember(user, quotedKey) else { return refusal("\(user) is not in the quoted message's conversation") }
        let state = conversations[quotedKey] ?? ConversationState()
        let seq: UInt64
        switch state.resolve(ref) {
        case .unknown: return .success(CheckedQuote(redact: false))
        case .conflicting: return refusal("the quote's seq \(ref.seq) and its ids name different messages")
        case .kept(let kept): seq = kept
        }
        if let audience = state.audiences[seq], !audience.contains(user) {
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
        let redact = snapshot?.text.isEmpty == false && (gone || isViewOnce(seq, in: quotedKey))
        return .success(CheckedQuote(quoted: MessageKey(conversation: quotedKey, seq: seq), redact: redact))
    }

    /// `frame`'s body with its quote snapshot's text taken out (``Redaction/quoteSnapshot(_:)``).
    static func bodyWithoutQuotedText(_ decoded: Frame) -> ByteBuffer {
        var redacted = decoded
        if case .message(var message)? = decoded.payload, let snapshot = message.quoteSnapshot {
            message.quoteSnapshot = Redaction.quoteSnapshot(snapshot)
            redacted.payload = .message(message)
        }
        return ByteBuffer(bytes: redacted.serializedBytes())
    }

    /// Remembers that kept message `reply` quotes the text of kept message `quoted`.
    func noteQuote(_ reply: MessageKey, of quoted: MessageKey) {
        guard quotedBy[quoted.conversation]?[quoted.seq]?.contains(reply) != true else { return }
        quotedBy[quoted.conversation, default: [:]][quoted.seq, default: []].append(reply)
        storeQuotes(of: quoted.seq, in: quoted.conversation)
    }

    /// Redacts the snapshots of the kept replies quoting kept message `seq` of `key`, which was
    /// recalled, deleted for everyone or expired, and forgets them.
    func redactQuotes(of seq: UInt64, in key: ConversationKey) {
        guard let replies = quotedBy[key]?.removeValue(forKey: seq) else { return }
        if quotedBy[key]?.isEmpty == true { quotedBy[key] = nil }
        store.batch.redactedQuotes.append(contentsOf: replies)
        store.batch.records[.quotedBy(key, seq: seq)] = []
    }

    /// Forgets the replies quoting the messages of `key` below `seq` (retention dropped them).
    func forgetQuotes(in key: ConversationKey, below seq: UInt64) {
        guard let quoted = quotedBy[key], quoted.keys.contains(where: { $0 < seq }) else { return }
        for old in quoted.keys where old < seq {
            quotedBy[key]![old] = nil
            store.batch.records[.quotedBy(key, seq: old)] = []
        }
        if quotedBy[key]?.isEmpty == true { quotedBy[key] = nil }
    }

    /// Loads the replies quoting kept message `seq` of `key` from their state record.
    func loadQuotes(_ bytes: [UInt8], of seq: UInt64, in key: ConversationKey) {
        guard let ids = StringListBytes.strings(bytes[...]) else { return }
        let replies = ids.compactMap(MessageKey.init(storageID:))
        guard !replies.isEmpty else { return }
        quotedBy[key, default: [:]][seq] = replies
    }

    private func storeQuotes(of seq: UInt64, in key: ConversationKey) {
        var bytes: [UInt8] = []
        StringListBytes.append((quotedBy[key]?[seq] ?? []).map(\.storageID), to: &bytes)
        store.batch.records[.quotedBy(key, seq: seq)] = bytes
    }
}
#endif
