#if Tools
import HeapModule
import IMCodec
import NIOCore

/// A kept disappearing message, by when it expires (message.proto `expire_at_ms`).
struct ExpiringMessage: Comparable {
    var expireAtMs: Int64
    var conversation: ConversationKey
    var seq: UInt64

    static func < (a: ExpiringMessage, b: ExpiringMessage) -> Bool { a.expireAtMs < b.expireAtMs }
}

/// Disappearing messages (message.proto `expire_after_s`, `expire_at_ms`; events.proto
/// `DisappearingTimerEvent`): the relay keeps each conversation's timer and stamps it on the
/// messages sent under it (``disappearingTimer(message:conversation:)``), stamps when each one
/// expires, and from then on serves it to no one, nor the events kept about it:
/// - at once: every read (stream sync, sync by seq, history, the conversation list, extension
///   fetches) leaves out what has expired (``Expiry/passed(_:at:)``), and an event naming it is
///   refused as for a removed message (3005);
/// - within ``RelayConfiguration/expirySweepInterval`` (a second): the message and the events about
///   it are erased from the store (their frames emptied, ``StoreBatch/eraseExpiredThrough``), with
///   its edits and extensions, and it counts as removed: it leaves the unread counts and @ of the
///   conversation list (``conversationsLost(_:in:)``).
///
/// Expiries live in the store (`expire_at_ms` columns), and timers in state records, so a restart
/// or a standby taking over erases what expired while no relay ran, at its first sweep, and goes on
/// stamping each conversation's timer.
extension Router {
    /// Starts the sweeps, the first at once (on the router's loop, until the relay shuts down).
    func sweepExpiredMessages(every interval: TimeAmount) {
        repeatedly(every: interval, initialDelay: .zero) { router in
            let nowMs = router.nowMs()
            router.eraseExpired(at: nowMs)
            router.closeDuePolls(at: nowMs)
            router.sendHeldPollResults()
            router.forgetGroupLoads(before: nowMs)
            router.forgetFullBudgets()
            router.freeEmptyGroups()
        }
    }

    /// The time messages are stamped with and expire by (``RelayConfiguration/clock``).
    func nowMs() -> Int64 { configuration.clock() }

    /// Remembers a kept message that expires, for the sweep.
    func noteExpiry(of message: StoredMessage) {
        guard message.expireAtMs != 0 else { return }
        expiring.insert(
            ExpiringMessage(expireAtMs: message.expireAtMs, conversation: message.conversation, seq: message.seq),
            isLive: isDue
        )
    }

    /// Whether `entry` still names a kept message that expires then (not recalled, deleted for
    /// everyone or dropped by retention since).
    func isDue(_ entry: ExpiringMessage) -> Bool {
        guard let conversation = conversations[entry.conversation] else { return false }
        return conversation.expiries[entry.seq] == entry.expireAtMs && !conversation.removed.contains(entry.seq)
    }

    /// Erases what expired by `nowMs`: each message counts as removed, its edits and extensions are
    /// forgotten, it leaves the conversation list's unread counts and @, and the store empties the
    /// frames of the messages and events that expired.
    func eraseExpired(at nowMs: Int64) {
        guard let first = expiring.min, first.expireAtMs <= nowMs else { return }
        var expired: [ConversationKey: Set<UInt64>] = [:]
        while let next = expiring.min, next.expireAtMs <= nowMs {
            expiring.removeMin()
            let (key, seq) = (next.conversation, next.seq)
            // Gone already when retention dropped it.
            guard conversations[key]?.expiries[seq] == next.expireAtMs else { continue }
            // A recalled one was erased, and left the conversation list, then.
            guard conversations[key]!.removed.insert(seq).inserted else { continue }
            expired[key, default: []].insert(seq)
            forgetChanges(of: seq, in: key)
        }
        for (key, seqs) in expired { conversationsLost(seqs, in: key) }
        store.batch.eraseExpiredThrough = nowMs
    }

    /// Whether the kept message `seq` of `key` has expired at `nowMs`.
    func hasExpired(_ seq: UInt64, in key: ConversationKey, at nowMs: Int64) -> Bool {
        Expiry.passed(conversations[key]?.expiries[seq] ?? 0, at: nowMs)
    }

    // MARK: The conversations' timers

    /// The timer a message sent with `expire_after_s` `message` carries in a conversation whose
    /// timer is `conversation` (0: off), the shorter of the two that are set. The protocol says a
    /// message carries its conversation's timer (message.proto), so a sender that leaves it out, or
    /// asks for longer, does not keep a message longer than its conversation allows; a sender may
    /// ask for less (a message sent just before the timer was lengthened keeps its own).
    static func disappearingTimer(message: UInt32, conversation: UInt32) -> UInt32 {
        guard conversation != 0 else { return message }
        guard message != 0 else { return conversation }
        return min(message, conversation)
    }

    /// Sets `key`'s timer as a kept `DisappearingTimerEvent` says (0 turns it off), for the messages
    /// sent after it, and keeps the event as the conversation's timer record.
    func setDisappearingTimer(_ event: DisappearingTimerEvent, in key: ConversationKey) {
        disappearingTimers[key] = event.expireAfterS == 0 ? nil : event.expireAfterS
        store.batch.records[.disappearingTimer(key)] = event.expireAfterS == 0 ? [] : event.serializedBytes()
    }

    /// When an event naming the kept messages `seqs` of `key` expires: with the last of them when
    /// every one disappears, else never (0).
    func expiry(ofEventNaming seqs: [UInt64], in key: ConversationKey) -> Int64 {
        guard !seqs.isEmpty, let expiries = conversations[key]?.expiries else { return 0 }
        var last: Int64 = 0
        for seq in seqs {
            guard let expiry = expiries[seq] else { return 0 }
            last = max(last, expiry)
        }
        return last
    }
}
#endif
