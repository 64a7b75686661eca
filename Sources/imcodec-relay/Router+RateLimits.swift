#if Tools
/// What one user may have the relay do for others, per second or per minute (``RateBudget``, by
/// ``RelayConfiguration/silenceClock``; Matrix Synapse's `rc_message` and `rc_joins` are per-user
/// token buckets too):
///
/// - **Live updates** (``RelayConfiguration/liveUpdateRate``): typing events and status updates,
///   which the relay keeps for no one and writes to every online device of a conversation's users or
///   a user's subscribers. Past the budget typing is dropped (a client repeats it while its user
///   types) and a status update refused (3014).
/// - **Fan-out** (``RelayConfiguration/fanOutRate``): every message, kept event, extension update,
///   receipt (or batch), join and system notice costs the users it reaches (a one-to-one message
///   2, a message to a group of 1,000 members 1,000): each costs a stream row or a write per user,
///   charged once the frame's other checks passed (a refused frame, or a reaction or poll event
///   that changes nothing, costs nothing). Past the budget a message is refused with 1012 and
///   anything else with 3014, nothing kept or sent.
/// - **Frames to one peer** (``RelayConfiguration/peerRate``), per sender and receiver: one-to-one
///   messages (kept or not), kept one-to-one events and extension updates, system notices, and
///   receipts (one to each sender they reach). The fan-out budget alone let
///   one user send one other user 10,000 messages a second, until the receiver's outbound buffer
///   overflowed and the relay closed *its* connection as a slow consumer, or the messages pushed
///   everything else out of its stream. Refused as a fan-out past its budget (1012, 3014), taking
///   neither.
/// - **One-time keys** (``RelayConfiguration/keyFetchRate``), a minute, per requesting user and key
///   owner (Signal's prekey limiter is keyed the same way): each key fetch hands out and deletes one
///   one-time key per device it answers for, so without it any user could use up another's keys
///   and leave every later session with them without one. Past it such a fetch is refused (3014);
///   a fetch of bundles without one-time keys costs nothing.
/// - **Joins** (``RelayConfiguration/joinRate``), a minute, per user (Matrix Synapse's `rc_joins`):
///   a join of a group with no members starts it, and what a group kept stays after its members
///   leave until no leaver's stream names its messages (Router+EmptyGroups.swift), so without it
///   one user joining new groups, sending and leaving in a loop had the relay keep a conversation
///   per loop, at the fan-out budget's pace. Past it a join is refused (3014); a leave never is, and a join refused
///   for its fan-out takes no join.
/// - **Logins** (``RelayConfiguration/loginRate``), a minute, per user (Matrix Synapse's `rc_login`
///   per account): each login writes its device's records and, when it is the user's first device
///   online, tells every subscriber of the user's presence, and its close tells them again. So
///   without it one user logging in and out in a loop had the relay write twice to each of its
///   subscribers per loop, charged to no one. Taken once the token passed: another user cannot
///   spend it. Past it a login is refused (2008) and changes nothing.
///
/// Without them one client sending as fast as it could had the relay write as many frames to every
/// member of a group, until their outbound buffers overflowed and the relay closed *them* as slow
/// consumers, and (joining and leaving a large group in a loop) keep a row per member per frame.
/// The budgets are per user, across its devices and connections (a new login refills nothing),
/// and forgotten once full again (the sweep).
extension Router {
    /// Seconds' worth of live updates a full budget holds: a burst of typing in a few conversations.
    static let liveUpdateBurstSeconds = 4
    /// Seconds' worth of fan-out a full budget holds.
    static let fanOutBurstSeconds = 5
    /// Seconds' worth of frames to one peer a full budget holds.
    static let peerBurstSeconds = 5
    /// The largest rate a budget takes (`serve` refuses more); a larger one configured in process
    /// counts as this.
    static let maxRate = 1_000_000_000

    /// Why a frame costing `cost` (the users it reaches) of `user`'s fan-out budget at `nowMs` (the
    /// frame's arrival, ``Session/lastHeardMs``), and one of its budget for each peer of `pairs`,
    /// would be refused; `nil` when every budget covers it. Takes nothing.
    func fanOutRefusal(_ cost: Int, by user: String, to pairs: [UserPair], atMs nowMs: Int64) -> String? {
        if pairs.contains(where: { !peerBudgets.covers(1, by: $0, atMs: nowMs) }) {
            return "tooFrequent: past the frames one user may send one peer (\(configuration.peerRate) a second, "
                + "--peer-rate); send it again later"
        }
        return fanOutBudgets.covers(max(cost, 1), by: user, atMs: nowMs) ? nil : fanOutRefusal(cost)
    }

    /// Takes `cost` from `user`'s fan-out budget at `nowMs` and one from its budget for each peer of
    /// `pairs` (``peerPairs(in:from:)``); or takes nothing and says why when one does not cover it.
    func takeFanOut(_ cost: Int, by user: String, to pairs: [UserPair] = [], atMs nowMs: Int64) -> String? {
        if let refusal = fanOutRefusal(cost, by: user, to: pairs, atMs: nowMs) { return refusal }
        _ = fanOutBudgets.take(max(cost, 1), by: user, atMs: nowMs)
        for pair in pairs { _ = peerBudgets.take(1, by: pair, atMs: nowMs) }
        return nil
    }

    /// Takes `cost` from `user`'s fan-out budget (and one from its budget for each peer of `pairs`)
    /// for request `requestID` of `session`, or refuses the request (3014), takes nothing and returns
    /// `false` when one does not cover it. With `takes` false it only checks (for a frame checked by
    /// applying it, which takes once it changed something). (A message is refused in its `send_ack`
    /// instead: ``takeFanOut(_:by:to:atMs:)``.)
    func spendFanOut(
        _ cost: Int,
        by user: String,
        to pairs: [UserPair] = [],
        session: Session,
        requestID: UInt64,
        takes: Bool = true
    ) -> Bool {
        let nowMs = session.lastHeardMs
        let refusal =
            takes
            ? takeFanOut(cost, by: user, to: pairs, atMs: nowMs) : fanOutRefusal(cost, by: user, to: pairs, atMs: nowMs)
        guard let refusal else { return true }
        refuse(session, requestID, RelayProtocol.RequestError.tooFrequent, notice: "tooFrequent", refusal)
        return false
    }

    /// The budget key of `user`'s frames in `key` when it is a one-to-one conversation with another
    /// user (``peerBudgets``); none for a group, chatroom or channel, for a user's conversation with
    /// itself, or for no conversation.
    func peerPairs(in key: ConversationKey?, from user: String) -> [UserPair] {
        guard case .direct(let a, let b)? = key, a != b else { return [] }
        return [UserPair(from: user, to: a == user ? b : a)]
    }

    /// Why a key fetch past the requester's budget for the owner's one-time keys is refused (the
    /// answer names the owner already: an id near the frame size limit must not be there twice).
    var keyFetchRefusal: String {
        "tooFrequent: it would take more of the user's one-time keys than one user may "
            + "(\(configuration.keyFetchRate) a minute, --key-fetch-rate); fetch again later"
    }

    /// Takes one of `user`'s joins and `fanOut` (the users the join reaches) from its fan-out budget
    /// at the frame's arrival (``Session/lastHeardMs``), or refuses request `requestID` of `session`
    /// (3014), takes nothing and returns `false` when either budget does not cover it: a join refused
    /// for its fan-out leaves the user's joins as they were.
    func spendJoin(fanOut: Int, by user: String, session: Session, requestID: UInt64) -> Bool {
        let nowMs = session.lastHeardMs
        guard joinBudgets.covers(1, by: user, atMs: nowMs) else {
            refuse(
                session,
                requestID,
                RelayProtocol.RequestError.tooFrequent,
                notice: "tooFrequent",
                "tooFrequent: past the joins one user may make (\(configuration.joinRate) a minute, --join-rate); "
                    + "join again later"
            )
            return false
        }
        guard spendFanOut(fanOut, by: user, session: session, requestID: requestID) else { return false }
        // Covered at this time above: it takes.
        _ = joinBudgets.take(1, by: user, atMs: nowMs)
        return true
    }

    /// Why a frame past `user`'s fan-out budget is refused.
    func fanOutRefusal(_ cost: Int) -> String {
        "tooFrequent: it would reach \(cost) users, past what the sender may have the relay deliver "
            + "(\(configuration.fanOutRate) a second, --fan-out-rate); send it again later"
    }

    /// The users a frame to `key` reaches, for its fan-out cost: the conversation's users, or the
    /// receivers a targeted message names with its sender.
    func fanOutCost(in key: ConversationKey, targets: Int = 0) -> Int {
        let users: Int
        switch key {
        case .direct(let a, let b): users = a == b ? 1 : 2
        case .shared: users = members[key]?.count ?? 0
        }
        return targets > 0 ? min(users, targets + 1) : users
    }

    /// Forgets the budgets that are full again (the sweep): a user's entry lasts while it spends.
    func forgetFullBudgets() {
        let nowMs = configuration.silenceClock()
        liveUpdateBudgets.forgetFull(atMs: nowMs)
        fanOutBudgets.forgetFull(atMs: nowMs)
        keyFetchBudgets.forgetFull(atMs: nowMs)
        joinBudgets.forgetFull(atMs: nowMs)
        peerBudgets.forgetFull(atMs: nowMs)
        loginBudgets.forgetFull(atMs: nowMs)
    }
}

/// A budget's key for what one user has the relay do to or take from another: the one-time keys a
/// requester (`from`) takes from an owner's (`to`) devices, the frames a sender has the relay
/// deliver to one peer (Router+RateLimits).
struct UserPair: Hashable {
    let from: String
    let to: String
}
#endif
