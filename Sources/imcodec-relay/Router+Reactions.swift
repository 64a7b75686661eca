#if Tools
import IMCodec
import NIOCore

/// Reactions (events.proto ReactionEvent: "The server forwards it to the conversation with summary
/// filled in"; message.proto `reactions`): the relay keeps who reacted with which emoji to each kept
/// message, in the message's change record (``Router/messageChanges``, every user per emoji), and
/// serves the summaries from it: on each reaction event it forwards, and on the message in history
/// and the conversation list, with `reacted_by_me` for the user who reads them (a reaction event
/// goes to each user who has a reaction on the message as a frame of its own). What a client writes
/// in `summary` is replaced.
extension Router {
    /// The most different emoji on one message (a documented limit; Slack allows 23, Telegram 11).
    static let maxReactionEmoji = 50
    /// The most users a served summary lists (message.proto ReactionSummary: "at most 10").
    static let maxSummaryUsers = 10

    /// The summaries of `reactions` (every user per emoji, in the order they reacted) as a device
    /// gets them: most used first (ties in the order each emoji was first used), the first 10 users,
    /// and `reacted_by_me` for `reader` (`nil`: a frame every receiver shares, where it stays false).
    static func served(_ reactions: [ReactionSummary], for reader: String? = nil) -> [ReactionSummary] {
        reactions.enumerated()
            .sorted {
                $0.element.userIDs.count != $1.element.userIDs.count
                    ? $0.element.userIDs.count > $1.element.userIDs.count : $0.offset < $1.offset
            }
            .map { _, kept in
                ReactionSummary.with {
                    $0.emoji = kept.emoji
                    $0.count = UInt32(clamping: kept.userIDs.count)
                    $0.userIDs = Array(kept.userIDs.prefix(maxSummaryUsers))
                    $0.reactedByMe = reader.map { kept.userIDs.contains($0) } ?? false
                }
            }
    }

    /// What a device's reaction is remembered by for resends (``Router/resendKeys(_:user:)``): the
    /// event without its summary and with `user_id` set, the same for the client's bytes and for the
    /// copy the relay rewrote and keeps, which is all a restart finds.
    static func reactionKey(_ frame: Frame, _ reaction: ReactionEvent, user: String) -> [UInt8] {
        var event = reaction
        var key = frame
        event.summary = []
        event.userID = user
        key.payload = .reaction(event)
        return key.serializedBytes()
    }

    /// What a reaction event does.
    enum Reacted {
        /// Refused (answered).
        case refused
        /// It changes nothing the relay keeps (the user's reaction is there already, or was not):
        /// answered, and kept by no one, so a resend is applied once even after a restart.
        case unchanged
        /// The event frame receivers get (`reacted_by_me` false everywhere), and the frames the users
        /// who have a reaction on the message get: their own `reacted_by_me` (message.proto:
        /// "Whether the user receiving this summary is among them"), one frame for the users who
        /// reacted with the same emoji.
        case changed(ByteBuffer, own: [(users: Set<String>, body: ByteBuffer)])
    }

    /// Applies `reaction` by `user` to kept message `seq` of `key` (`nil`: a message the relay does
    /// not keep, which gets no summary): the event frame receivers get is `decoded` with the
    /// message's summaries after the change and `user_id` set.
    func reacted(
        _ decoded: Frame,
        _ reaction: ReactionEvent,
        seq: UInt64?,
        in key: ConversationKey,
        session: Session,
        user: String
    ) -> Reacted {
        var event = reaction
        event.userID = user
        event.summary = []
        // One emoji (validate()'s emoji rule), added or removed.
        let issue = Frame(.reaction(event)).validate().first { $0.rule == .reactionEmoji }?.description
        guard issue == nil, reaction.action == .add || reaction.action == .remove else {
            refuse(
                session,
                decoded.requestID,
                RelayProtocol.RequestError.badRequest,
                notice: "badRequest",
                issue ?? "a reaction is added or removed"
            )
            return .refused
        }
        // The message's reactions after the change, kept once the frame is known to fit.
        var changed: [ReactionSummary]?
        if let seq, let kept = conversations[key]?.kept[seq] {
            let before = messageChanges[key]?[seq]?.reactions ?? []
            var reactions = before
            let index = reactions.firstIndex { $0.emoji == reaction.emoji }
            switch reaction.action {
            case .add:
                if let index {
                    if !reactions[index].userIDs.contains(user) { reactions[index].userIDs.append(user) }
                } else {
                    guard reactions.count < Self.maxReactionEmoji else {
                        refuse(
                            session,
                            decoded.requestID,
                            RelayProtocol.RequestError.badRequest,
                            notice: "badRequest",
                            "message seq \(seq) has \(Self.maxReactionEmoji) different emoji, the relay's limit"
                        )
                        return .refused
                    }
                    reactions.append(
                        ReactionSummary.with {
                            $0.emoji = reaction.emoji; $0.userIDs = [user]
                        }
                    )
                }
            case .remove:
                if let index {
                    reactions[index].userIDs.removeAll { $0 == user }
                    if reactions[index].userIDs.isEmpty { reactions.remove(at: index) }
                }
            default:
                break
            }
            guard reactions != before else { return .unchanged }
            let served = Self.served(reactions)
            // History and the conversation list serve the message with its summaries.
            let size = servedSizeBound(of: seq, in: key, sentSize: kept.size, reactions: served)
            let room = deliveryRoom(in: key)
            guard size <= room else {
                refuse(
                    session,
                    decoded.requestID,
                    RelayProtocol.RequestError.tooLargeToDeliver,
                    notice: "tooLargeToDeliver",
                    "the message with these reactions could be \(size) bytes; the relay serves messages of at most "
                        + "\(room) (the frame size limit, less what it adds on delivery)"
                )
                return .refused
            }
            event.summary = served
            changed = reactions
        }
        var frame = decoded
        frame.payload = .reaction(event)
        let bytes = frame.serializedBytes()
        // The frames of the reacting users: the same summaries, with reacted_by_me for the user. Users
        // who reacted with the same emoji share one (one bit per served summary: at most 50).
        var own: [(users: Set<String>, body: ByteBuffer)] = []
        var largest = bytes.count
        if let changed {
            // The first summary of an emoji (one each, unless a damaged store holds two: no trap).
            let position = Dictionary(event.summary.enumerated().map { ($1.emoji, $0) }) { first, _ in first }
            var masks: [String: UInt64] = [:]
            for reaction in changed {
                guard let bit = position[reaction.emoji] else { continue }
                for reactor in reaction.userIDs { masks[reactor, default: 0] |= 1 << UInt64(bit) }
            }
            var mine = event
            for (mask, users) in Dictionary(grouping: masks.keys, by: { masks[$0]! }) {
                mine.summary = event.summary.enumerated().map { index, summary in
                    var summary = summary
                    summary.reactedByMe = mask & (1 << UInt64(index)) != 0
                    return summary
                }
                frame.payload = .reaction(mine)
                let ownBytes = frame.serializedBytes()
                largest = max(largest, ownBytes.count)
                own.append((Set(users), ByteBuffer(bytes: ownBytes)))
            }
            // A user may take back its reaction to a message it no longer reads (from before its
            // join or its clear): its devices learn that it is gone, not who reacts to the message
            // now, which nothing else tells them.
            if let seq, !reads(seq, in: key, user: user) {
                own = own.map { (users: $0.users.subtracting([user]), body: $0.body) }.filter { !$0.users.isEmpty }
                var bare = event
                bare.summary = []
                frame.payload = .reaction(bare)
                own.append(([user], ByteBuffer(bytes: frame.serializedBytes())))
            }
        }
        // With its summaries it must still reach every receiver (as ``deliverable`` checked the client's).
        guard largest <= deliveryRoom(in: key) else {
            refuse(
                session,
                decoded.requestID,
                RelayProtocol.RequestError.tooLargeToDeliver,
                notice: "tooLargeToDeliver",
                "the reaction with the message's summaries would be \(largest) bytes; the relay delivers "
                    + "frames of at most \(deliveryRoom(in: key))"
            )
            return .refused
        }
        if let seq, let changed { noteChange(of: seq, in: key, reactions: changed, timeMs: nowMs()) }
        return .changed(ByteBuffer(bytes: bytes), own: own)
    }
}
#endif
