#if Tools
import HeapModule
import IMCodec
import IMCodecNIO
import NIOCore

/// A poll of a kept message, as the relay tallies it.
struct PollTally: Equatable, Sendable {
    /// The poll as its message carries it.
    var poll: PollElement
    /// Its results with every voter: one result per option, in the poll's order, each option's
    /// voters in the order they chose it; `voter_count`, `closed`, `closed_by` and `time_ms` (of the
    /// last change).
    var results: PollUpdate

    /// A poll no one voted on yet.
    init(_ poll: PollElement) {
        self.poll = poll
        var seen = Set<UInt32>()
        results = PollUpdate.with { update in
            update.pollID = poll.pollID
            update.results = poll.options.filter { seen.insert($0.id).inserted }.map { option in
                PollOptionResult.with { $0.optionID = option.id }
            }
        }
    }

    init(poll: PollElement, results: PollUpdate) {
        self.poll = poll
        self.results = results
    }

    /// The options `voter` chose now (empty: none).
    func choice(of voter: String) -> [UInt32] {
        results.results.filter { $0.voterIDs.contains(voter) }.map(\.optionID)
    }

    /// Whether votes are over at `nowMs`: closed by its creator, or past its `close_time_ms`.
    func isClosed(at nowMs: Int64) -> Bool {
        results.closed || (poll.closeTimeMs != 0 && nowMs >= poll.closeTimeMs)
    }

    /// Replaces `voter`'s choice with `options` (none: withdraws the vote).
    mutating func record(_ options: [UInt32], by voter: String) {
        for index in results.results.indices {
            results.results[index].voterIDs.removeAll { $0 == voter }
            if options.contains(results.results[index].optionID) { results.results[index].voterIDs.append(voter) }
            results.results[index].votes = UInt32(clamping: results.results[index].voterIDs.count)
        }
        results.voterCount = UInt32(clamping: Set(results.results.flatMap(\.voterIDs)).count)
    }

    /// The state record of a message's polls: each poll's element and results, length-prefixed.
    static func recordBytes(_ tallies: [PollTally]) -> [UInt8] {
        var bytes: [UInt8] = []
        for tally in tallies {
            LengthPrefixedBytes.append(tally.poll.serializedBytes(), to: &bytes)
            LengthPrefixedBytes.append(tally.results.serializedBytes(), to: &bytes)
        }
        return bytes
    }

    /// The polls a state record holds, or `nil` when the bytes are not such a record.
    static func tallies(fromRecord bytes: [UInt8]) -> [PollTally]? {
        var rest = bytes[...]
        var tallies: [PollTally] = []
        while !rest.isEmpty {
            guard let poll = LengthPrefixedBytes.take(from: &rest), let results = LengthPrefixedBytes.take(from: &rest),
                let element = try? PollElement(serializedBytes: poll),
                let update = try? PollUpdate(serializedBytes: results)
            else { return nil }
            tallies.append(PollTally(poll: element, results: update))
        }
        return tallies
    }
}

/// A poll with a `close_time_ms`, by when its votes end (``Router/closingPolls``).
struct ClosingPoll: Comparable {
    var closeTimeMs: Int64
    var conversation: ConversationKey
    var seq: UInt64
    var pollID: String

    static func < (a: ClosingPoll, b: ClosingPoll) -> Bool { a.closeTimeMs < b.closeTimeMs }
}

/// Polls (message.proto PollElement; events.proto PollVoteEvent and PollUpdate: "A poll's results
/// (server to the conversation, after votes), or its closing: the creator sends closed = true, and
/// the server answers everyone with the final results"). The relay keeps each kept message's polls
/// with every vote (``Router/polls``, a state record, so across restarts) and is the only one to
/// send results:
/// - a vote is checked against its poll (an option of it, one unless `multiple_choice`, before
///   the poll closes), replaces the voter's earlier choice, and is kept for the voter's own devices
///   only; every member who reads the poll gets the relay's `PollUpdate` with the results (voters
///   named unless the poll is `anonymous`), at once when no vote on the message's polls sent
///   results within ``RelayConfiguration/pollResultsInterval``, else with the votes since at the end
///   of the interval: a busy poll in a large group costs each member one results frame per interval,
///   not one per vote;
/// - the creator's closing is answered with the final results to everyone, whatever results it
///   carried; at `close_time_ms` the relay closes the poll itself (its creator as `closed_by`);
/// - a vote that changes nothing, or a second closing, is answered and kept by no one.
///
/// A poll of a message the relay does not keep (a chatroom's, an online-only one) is not tallied:
/// its votes are forwarded as they are, and a closing, which names no kept message, is refused
/// (``checkEvent``).
extension Router {
    /// The most voters one served result names (the `votes` count is every voter's).
    static let maxServedVoters = 100

    /// What a poll vote or closing does.
    enum PollOutcome {
        /// Refused (answered).
        case refused
        /// It changes nothing: answered, and kept by no one.
        case unchanged
        /// The message is not one the relay keeps: forwarded as it is.
        case untallied
        /// The relay's results, for every member who reads the poll.
        case changed(PollUpdate)
    }

    /// Starts tallying the polls of kept message `seq` of `key`, when it carries any.
    func startPolls(_ message: Message, seq: UInt64, in key: ConversationKey) {
        var seen = Set<String>()
        let tallies = message.elements.compactMap { element -> PollTally? in
            guard case .poll(let poll)? = element.content, seen.insert(poll.pollID).inserted else { return nil }
            return PollTally(poll)
        }
        guard !tallies.isEmpty else { return }
        setPolls(tallies, of: seq, in: key)
        scheduleClosings(of: tallies, of: seq, in: key)
    }

    /// Loads a message's polls from their state record.
    func loadPolls(_ bytes: [UInt8], of seq: UInt64, in key: ConversationKey) {
        guard let tallies = PollTally.tallies(fromRecord: bytes), !tallies.isEmpty else { return }
        polls[key, default: [:]][seq] = tallies
        scheduleClosings(of: tallies, of: seq, in: key)
    }

    /// Remembers when each open poll of `tallies` with a `close_time_ms` closes (``closeDuePolls(at:)``).
    private func scheduleClosings(of tallies: [PollTally], of seq: UInt64, in key: ConversationKey) {
        for tally in tallies where tally.poll.closeTimeMs != 0 && !tally.results.closed {
            closingPolls.insert(
                ClosingPoll(
                    closeTimeMs: tally.poll.closeTimeMs,
                    conversation: key,
                    seq: seq,
                    pollID: tally.poll.pollID
                ),
                isLive: isDue
            )
        }
    }

    /// Whether `entry` still names an open poll of a kept message (not closed by its creator, nor
    /// recalled or dropped with its message since).
    func isDue(_ entry: ClosingPoll) -> Bool {
        polls[entry.conversation]?[entry.seq]?.contains { $0.poll.pollID == entry.pollID && !$0.results.closed }
            ?? false
    }

    private func setPolls(_ tallies: [PollTally], of seq: UInt64, in key: ConversationKey) {
        polls[key, default: [:]][seq] = tallies
        store.batch.records[.polls(key, seq: seq)] = PollTally.recordBytes(tallies)
    }

    /// Whether `edit` of kept message `seq` of `key` leaves its polls as they were sent (none
    /// added, none changed or removed): votes name them.
    func keepsPolls(_ edit: EditEvent, of seq: UInt64, in key: ConversationKey) -> Bool {
        let edited = (edit.newMessage?.elements ?? []).compactMap { element -> PollElement? in
            if case .poll(let poll)? = element.content { poll } else { nil }
        }
        return edited == (polls[key]?[seq]?.map(\.poll) ?? [])
    }

    /// Forgets the polls of kept message `seq` of `key` (recalled, deleted for everyone, expired).
    func forgetPolls(of seq: UInt64, in key: ConversationKey) {
        if polls[key]?.removeValue(forKey: seq) != nil { store.batch.records[.polls(key, seq: seq)] = [] }
        let message = MessageKey(conversation: key, seq: seq)
        pollResultsSent[message] = nil
        if heldPollResults.removeValue(forKey: message) != nil {
            store.batch.records[.heldPollResults(key, seq: seq)] = []
        }
    }

    /// Forgets the polls of the messages of `key` with seqs in `trimmed` (retention dropped them).
    func forgetPolls(in key: ConversationKey, trimmed: Range<UInt64>) {
        let gone = trimmed.present(in: polls[key]?.keys)
        for old in gone { forgetPolls(of: old, in: key) }
    }

    /// Applies `vote` by `user` to the poll of kept message `seq` of `key` (`nil`: a message the
    /// relay does not keep).
    func voted(
        _ decoded: Frame,
        _ vote: PollVoteEvent,
        seq: UInt64?,
        in key: ConversationKey,
        session: Session,
        user: String
    ) -> PollOutcome {
        guard let seq else { return .untallied }
        // A poll its voter cannot read (it joined after it, or cleared it) is not its to vote on.
        guard reads(seq, in: key, user: user) else {
            refuse(
                session,
                decoded.requestID,
                RelayProtocol.RequestError.notAMember,
                notice: "notAMember",
                Self.unreadReason(seq, user: user)
            )
            return .refused
        }
        let nowMs = nowMs()
        return changePoll(vote.pollID, of: seq, in: key, session: session, requestID: decoded.requestID) { tally in
            let refusal = { (code: Int32, notice: String, reason: String) -> PollOutcome in
                self.refuse(session, decoded.requestID, code, notice: notice, reason)
                return .refused
            }
            guard !tally.isClosed(at: nowMs) else {
                return refusal(RelayProtocol.RequestError.pollClosed, "pollClosed", "poll \"\(vote.pollID)\" is closed")
            }
            let options = Set(tally.poll.options.map(\.id))
            let chosen = vote.optionIDs
            guard Set(chosen).count == chosen.count, chosen.allSatisfy(options.contains) else {
                return refusal(
                    RelayProtocol.RequestError.badRequest,
                    "badRequest",
                    "a vote chooses options of its poll, each once"
                )
            }
            guard chosen.count <= 1 || tally.poll.multipleChoice else {
                return refusal(
                    RelayProtocol.RequestError.badRequest,
                    "badRequest",
                    "poll \"\(vote.pollID)\" is not multiple choice: a vote chooses one option"
                )
            }
            guard Set(tally.choice(of: user)) != Set(chosen) else { return .unchanged }
            tally.record(chosen, by: user)
            return nil
        }
    }

    /// Applies `update` from `user`, the poll's creator (``checkEvent`` checked it): a closing.
    func pollClosed(
        _ decoded: Frame,
        _ update: PollUpdate,
        seq: UInt64?,
        in key: ConversationKey,
        session: Session,
        user: String
    ) -> PollOutcome {
        guard let seq else { return .untallied }
        guard update.closed else {
            refuse(
                session,
                decoded.requestID,
                RelayProtocol.RequestError.badRequest,
                notice: "badRequest",
                "the relay sends a poll's results; its creator's poll update closes it (closed = true)"
            )
            return .refused
        }
        return changePoll(update.pollID, of: seq, in: key, session: session, requestID: decoded.requestID) { tally in
            guard !tally.results.closed else { return .unchanged }
            tally.results.closed = true
            tally.results.closedBy = user
            return nil
        }
    }

    /// Applies `change` to poll `pollID` of kept message `seq` of `key` (refused with 3003 when the
    /// message carries no such poll) and keeps it, unless `change` returns what to answer instead
    /// (refused, unchanged) or the results would be too large to serve.
    private func changePoll(
        _ pollID: String,
        of seq: UInt64,
        in key: ConversationKey,
        session: Session,
        requestID: UInt64,
        _ change: (inout PollTally) -> PollOutcome?
    ) -> PollOutcome {
        guard var tallies = polls[key]?[seq], let index = tallies.firstIndex(where: { $0.poll.pollID == pollID }) else {
            refuse(
                session,
                requestID,
                RelayProtocol.RequestError.badRequest,
                notice: "badRequest",
                "message seq \(seq) carries no poll \"\(pollID)\""
            )
            return .refused
        }
        var tally = tallies[index]
        if let outcome = change(&tally) { return outcome }
        tally.results.timeMs = nowMs()
        guard let served = servable(tally, of: seq, in: key, session: session, requestID: requestID) else {
            return .refused
        }
        tallies[index] = tally
        setPolls(tallies, of: seq, in: key)
        return .changed(served)
    }

    /// The results of `tally` as members get them, or `nil` (refused, answered) when they would not
    /// reach every device within the frame size limit.
    private func servable(
        _ tally: PollTally,
        of seq: UInt64,
        in key: ConversationKey,
        session: Session,
        requestID: UInt64
    ) -> PollUpdate? {
        let served = self.served(tally, of: seq, in: key)
        // As large as its closing will be (closed, by its creator or by the sender of this one).
        var closing = served
        closing.closed = true
        if closing.closedBy.isEmpty { closing.closedBy = served.pollMessage?.senderID ?? "" }
        let size = Frame(.pollUpdate(closing)).serializedBytes().count
        guard size <= deliveryRoom(in: key) else {
            refuse(
                session,
                requestID,
                RelayProtocol.RequestError.tooLargeToDeliver,
                notice: "tooLargeToDeliver",
                "the poll's results would be \(size) bytes; the relay delivers frames of at most \(deliveryRoom(in: key))"
            )
            return nil
        }
        return served
    }

    /// `tally`'s results as members get them: naming the poll's message fully, at most
    /// ``maxServedVoters`` voters per option, none for an anonymous poll.
    func served(_ tally: PollTally, of seq: UInt64, in key: ConversationKey) -> PollUpdate {
        var update = tally.results
        update.pollMessage = fullReference(seq, in: key)
        for index in update.results.indices {
            update.results[index].voterIDs =
                tally.poll.anonymous ? [] : Array(update.results[index].voterIDs.prefix(Self.maxServedVoters))
        }
        return update
    }

    /// Keeps the relay's results `update` about kept message `seq` of `key` for every member who
    /// reads it (not one who joined after it, cleared it or deleted it for itself only), and sends
    /// them once committed.
    func sendPollResults(_ update: PollUpdate, of seq: UInt64, in key: ConversationKey) {
        var users = audience(of: seq, in: key)
        // Nor a member who deleted the poll for itself only: it reads nothing of it.
        if !deletedForMe.isEmpty { users.removeAll { isDeletedForMe(seq, in: key, by: $0) } }
        let body = Frame(.pollUpdate(update)).serializedBytes()
        let deliveries = keep(
            .event(body),
            for: users,
            origin: Self.relayOrigin,
            expireAtMs: expiry(ofEventNaming: [seq], in: key)
        )
        store.afterCommit {
            self.deliver(ByteBuffer(bytes: body), kind: .pollUpdate, to: deliveries, except: nil)
            self.flush()
        }
    }

    /// Closes the polls whose `close_time_ms` passed by `nowMs` and sends their final results, the
    /// poll's creator as `closed_by`.
    func closeDuePolls(at nowMs: Int64) {
        while let next = closingPolls.min, next.closeTimeMs <= nowMs {
            closingPolls.removeMin()
            let (key, seq) = (next.conversation, next.seq)
            guard var tallies = polls[key]?[seq],
                let index = tallies.firstIndex(where: { $0.poll.pollID == next.pollID }),
                !tallies[index].results.closed,
                let message = conversations[key]?.kept[seq]
            else { continue }
            tallies[index].results.closed = true
            tallies[index].results.closedBy = message.sender
            // When it closed, not when the sweep saw it (a relay down at the time closes it at start),
            // and not before the poll was sent (a close time already past when it was).
            tallies[index].results.timeMs = max(next.closeTimeMs, message.serverTimeMs)
            setPolls(tallies, of: seq, in: key)
            // Within the frame size limit: each vote's results were counted closed (``servable``).
            sendPollResults(closing: served(tallies[index], of: seq, in: key), of: seq, in: key)
        }
    }

    // MARK: Holding back results

    /// Sends `update`, the results of a poll of kept message `seq` of `key` after a vote: at once
    /// when no results of the message's polls went out after a vote within
    /// ``RelayConfiguration/pollResultsInterval``; otherwise the poll's results are held back (a
    /// state record, committed with the vote) and the sweep sends them, with every vote until then,
    /// once the interval ended (``sendHeldPollResults()``).
    func sendPollResults(afterVote update: PollUpdate, of seq: UInt64, in key: ConversationKey) {
        let message = MessageKey(conversation: key, seq: seq)
        let now = nowMs()
        let lastSent = pollResultsSent[message]
        if heldPollResults[message] == nil, lastSent.map({ now >= $0 + pollResultsIntervalMs }) ?? true {
            pollResultsSent[message] = now
            sendPollResults(update, of: seq, in: key)
        } else if heldPollResults[message, default: []].insert(update.pollID).inserted {
            keepHeldPollResults(of: message)
        }
    }

    /// Sends `update`, a poll's final results, at once; results of the poll held back are dropped
    /// (these carry every vote).
    func sendPollResults(closing update: PollUpdate, of seq: UInt64, in key: ConversationKey) {
        let message = MessageKey(conversation: key, seq: seq)
        if heldPollResults[message]?.remove(update.pollID) != nil {
            if heldPollResults[message]?.isEmpty == true { heldPollResults[message] = nil }
            keepHeldPollResults(of: message)
        }
        sendPollResults(update, of: seq, in: key)
    }

    /// Sends the results held back whose interval ended, as the polls stand now, and forgets when
    /// results went out for the messages whose interval ended with nothing held back. Run by the
    /// sweep (``sweepExpiredMessages(every:)``), whose first run also sends what a relay that
    /// stopped held back.
    func sendHeldPollResults() {
        guard !pollResultsSent.isEmpty else { return }
        let now = nowMs()
        for (message, sent) in pollResultsSent where now >= sent + pollResultsIntervalMs {
            guard let held = heldPollResults.removeValue(forKey: message) else {
                pollResultsSent[message] = nil
                continue
            }
            keepHeldPollResults(of: message)
            pollResultsSent[message] = now
            let (key, seq) = (message.conversation, message.seq)
            for tally in polls[key]?[seq] ?? [] where held.contains(tally.poll.pollID) && !tally.results.closed {
                // Within the frame size limit: each vote's results were counted closed (``servable``).
                sendPollResults(served(tally, of: seq, in: key), of: seq, in: key)
            }
        }
    }

    /// ``RelayConfiguration/pollResultsInterval`` in milliseconds of the relay's clock.
    private var pollResultsIntervalMs: Int64 { configuration.pollResultsInterval.nanoseconds / 1_000_000 }

    /// Keeps the ids of the polls of `message` whose results are held back, or deletes the record
    /// when none are.
    private func keepHeldPollResults(of message: MessageKey) {
        var bytes: [UInt8] = []
        StringListBytes.append((heldPollResults[message] ?? []).sorted(), to: &bytes)
        store.batch.records[.heldPollResults(message.conversation, seq: message.seq)] = bytes
    }

    /// Loads the polls of a message whose results a relay held back when it stopped: the first
    /// sweep sends them.
    func loadHeldPollResults(_ bytes: [UInt8], of seq: UInt64, in key: ConversationKey) {
        guard let held = StringListBytes.strings(bytes[...]), !held.isEmpty else {
            // Not a record this relay reads: deleted, so that it is not carried forever.
            store.batch.records[.heldPollResults(key, seq: seq)] = []
            return
        }
        let message = MessageKey(conversation: key, seq: seq)
        heldPollResults[message] = Set(held)
        pollResultsSent[message] = 0
    }
}
#endif
