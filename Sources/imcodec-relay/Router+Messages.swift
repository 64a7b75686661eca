#if Tools
import IMCodec
import IMCodecNIO
import NIOCore

extension Router {
    /// Whether a message is kept (stored, given a seq, synced) or only sent to who is online now:
    /// `MESSAGE_FLAG_ONLINE_USER_ONLY` (Tencent's online messages "cannot be stored offline") and
    /// `STORAGE_POLICY_STATUS_ONLY` (RongCloud's status messages) are not kept; everything else is,
    /// but in a chatroom (``ConversationKey/isChatroom``).
    static func isKept(_ frame: InboundFrame) -> Bool {
        !frame.messageFlags.contains(.onlineUserOnly) && frame.storagePolicy != .statusOnly
    }

    /// Why a message is refused: the ack's error code and description.
    struct Refusal: Error {
        let code: Int32
        let description: String
        init(_ code: Int32, _ description: String) {
            self.code = code
            self.description = description
        }
    }

    // Long on purpose (about 115 lines): the path of one message, in order: admission, resend, block, quote, stamp,
    // live-only delivery or keeping, and the acknowledgement after the commit.
    /// The fast path: routes a message by the facts the decoder read, forwarding its original bytes
    /// with the stamp appended. A kept message is acknowledged and forwarded once it is committed.
    func routeMessage(_ frame: InboundFrame, from session: Session, user: String) {
        let type = frame.conversationType
        let conversation = Conversation.with {
            $0.type = type; $0.targetID = frame.targetID; $0.channelID = frame.channelID
        }
        var ack = SendAck.with {
            $0.clientMsgID = frame.clientMsgID; $0.conversation = conversation
        }
        // The ack answers the message: it repeats the message's request id, as every answer does.
        let requestID = frame.requestID
        func refuse(_ refusal: Refusal) {
            ack.errorCode = refusal.code
            ack.errorDescription = RelayProtocol.described(refusal.description)
            stats.acksSent += 1
            metrics.ack(code: refusal.code)
            answer(RelayProtocol.answer(.sendAck(ack), requestID: requestID), to: session)
        }
        let key: ConversationKey
        switch admit(frame, in: conversation, user: user, device: session.deviceID) {
        case .success(let admitted): key = admitted
        case .failure(let refusal): return refuse(refusal)
        }
        if let first = firstCopy(of: frame, in: key, user: user) {
            // Sent again (its ack was lost with a connection): acknowledged as the first time, not routed again.
            ack.serverMsgUID = first.serverMsgUID
            ack.seq = first.seq
            ack.serverTimeMs = first.serverTimeMs
            stats.acksSent += 1
            metrics.ack(code: 0)
            answer(RelayProtocol.answer(.sendAck(ack), requestID: requestID), to: session)
            return
        }
        // Kept with the message, in memory, to find a resend (and for the newest messages kept
        // nowhere): 10,000 kept messages with ids near the frame size limit held gigabytes. After
        // the resend lookup, which keeps nothing: a message kept before the bound still gets its
        // first ack. Stored as text, which holds no U+0000 (RelayProtocol.holdsNUL).
        guard RelayProtocol.fitsIDBound(frame.clientMsgID), !RelayProtocol.holdsNUL(frame.clientMsgID) else {
            return refuse(
                Refusal(
                    RelayProtocol.AckError.clientMsgIDRefused,
                    "a client_msg_id holds at most \(RelayProtocol.maxIDBytes) bytes, and no U+0000"
                )
            )
        }
        // A one-to-one message to a user who blocked the sender (Tencent addToBlackList).
        var silentlyBlocked = false
        if case .direct(let a, let b) = key, hasBlocked(a == user ? b : a, user) {
            guard configuration.blockedSenders == .silent else {
                return refuse(Refusal(Self.blockedByPeer, "blocked: the receiver blocked \(user)"))
            }
            silentlyBlocked = true
        }
        // What the content says beyond the routing facts (a quote, an extension, polls): decoded once.
        var content: Message?
        var sentBody = frame.body
        var quote = CheckedQuote()
        if frame.quotes || frame.messageFlags.contains(.supportExtension) || frame.carriesPoll {
            guard var decoded = decoded(frame, session), case .message(let message)? = decoded.payload else { return }
            content = message
            // A reply's quote, checked against the message it names (Router+Quotes); re-encoded only
            // when its snapshot loses something.
            if frame.quotes {
                switch checkQuote(of: message, in: key, user: user) {
                case .success(let checked): quote = checked
                case .failure(let refusal): return refuse(refusal)
                }
                if let redacted = quote.redacted {
                    content = redacted
                    decoded.payload = .message(redacted)
                    sentBody = ByteBuffer(bytes: decoded.serializedBytes())
                }
            }
        }
        let serverTimeMs = nowMs()
        // PRIORITY_LOW to a busy group: "Under load, lower priorities are dropped first" (Router+Priority).
        if let refusal = busyRefusal(frame, in: key, atMs: serverTimeMs) { return refuse(refusal) }
        let maxSeq = conversations[key]?.maxSeq ?? 0
        // A chatroom keeps no history: its messages go to the members online, as online-only ones do.
        let kept = Self.isKept(frame) && !key.isChatroom
        // A first message to a new peer starts a one-to-one conversation the relay keeps (for both).
        // (maxSeq 0: no message kept yet, so no conversation: the one lookup the message already made.)
        if kept, maxSeq == 0, !mayStart(key, user: user) {
            return refuse(
                Refusal(
                    RelayProtocol.AckError.conversationLimit,
                    "conversationLimit: \(conversationLimitReason(of: user))"
                )
            )
        }
        // The conversation's disappearing timer, stamped over the sender's when they differ.
        let expireAfterS = Self.disappearingTimer(
            message: frame.expireAfterS,
            conversation: disappearingTimers[key] ?? 0
        )
        let stamp = ServerStamp(
            serverMsgUID: ids.nextMessageUID(),
            seq: kept ? maxSeq + 1 : nil,
            serverTimeMs: serverTimeMs,
            expireAfterS: expireAfterS == frame.expireAfterS ? nil : expireAfterS,
            expireAtMs: ServerStamp.expiry(serverTimeMs: serverTimeMs, expireAfterS: expireAfterS)
        )
        // Stamped once for every receiver and for the store: the sender's bytes with the server's fields appended.
        let stamped: [UInt8]
        do {
            stamped = try RelayProtocol.stampedFrame(body: sentBody, stamp: stamp, decoder: wireDecoder)
        } catch {
            return refuse(Refusal(RelayProtocol.AckError.cannotStamp, "\(error.code): \(error.reason)"))
        }
        let room = deliveryRoom(in: key)
        guard stamped.count <= room else {
            return refuse(
                Refusal(
                    RelayProtocol.AckError.cannotStamp,
                    "tooLarge: the stamped frame would be \(stamped.count) bytes; the relay keeps and forwards "
                        + "frames of at most \(room) (the frame size limit, less what it adds on delivery)"
                )
            )
        }
        // What it costs its sender's fan-out budget (Router+RateLimits): the users it reaches.
        let cost = fanOutCost(in: key, targets: frame.targetReceivers.count)
        if let refusal = takeFanOut(cost, by: user, to: peerPairs(in: key, from: user), atMs: session.lastHeardMs) {
            return refuse(Refusal(RelayProtocol.AckError.tooFrequent, refusal))
        }
        countCarried(in: key, atMs: serverTimeMs)
        ack = stamp.sendAck(clientMsgID: frame.clientMsgID, conversation: conversation)
        stats.messagesRouted += 1
        let body = ByteBuffer(bytes: stamped)
        var users = self.users(of: key)
        var receivers = frame.targetReceivers
        if !receivers.isEmpty {
            let targets = Set(receivers)
            users = users.filter { $0 == user || targets.contains($0) }
            // Its receivers as kept (its readers with the sender): the members it names. A name that
            // is no member's reads nothing, and was kept with every message, thousands a message
            // (the frame still carries the names as sent). None: the sender alone, as for a
            // silently blocked message (an empty list would make it everyone's).
            receivers = users.filter { $0 != user || targets.contains(user) }
            if receivers.isEmpty { receivers = [user] }
        } else if silentlyBlocked {
            // Kept for the sender only: the blocking user's devices neither get it nor sync it.
            users = [user]
            receivers = [user]
        }
        // RECEIVE_OPTION_NOT_RECEIVE: "nothing, online or offline" (kept in the conversation, so
        // history and sync by seq still serve it; its sender's own devices still get it).
        if !notReceiving.isEmpty, let muted = notReceiving[key] { users.removeAll { $0 != user && muted.contains($0) } }
        guard kept else {
            if !frame.clientMsgID.isEmpty {
                recentLiveMessages[user, default: RecentLiveMessages()].insert(
                    frame.clientMsgID,
                    in: key,
                    ConversationState.Sent(seq: 0, serverMsgUID: ack.serverMsgUID, serverTimeMs: ack.serverTimeMs)
                )
            }
            store.afterCommit {
                self.stats.acksSent += 1
                self.metrics.ack(code: 0)
                self.write(RelayProtocol.answer(.sendAck(ack), requestID: requestID), to: session)
                self.deliverLive(body, kind: .message, sender: user, to: users, except: session)
                self.flush()
            }
            return
        }
        let message = StoredMessage(
            conversation: key,
            seq: maxSeq + 1,
            senderID: user,
            clientMsgID: frame.clientMsgID,
            serverMsgUID: stamp.serverMsgUID ?? "",
            serverTimeMs: stamp.serverTimeMs ?? 0,
            frame: stamped,
            receivers: receivers,
            expireAtMs: stamp.expireAtMs ?? 0
        )
        addKept(message)
        let deliveries = keep(
            .message(key, seq: message.seq),
            for: users,
            origin: DeviceKey(user: user, device: session.deviceID)
        )
        conversationsSaw(frame, seq: message.seq, in: key, deliveries: deliveries)
        // What the content starts: an extension, poll tallies, a quote a recall may redact.
        if let content {
            if frame.messageFlags.contains(.supportExtension) || frame.carriesPoll {
                startExtension(content, seq: message.seq, in: key)
                startPolls(content, seq: message.seq, in: key)
            }
            if let quoted = quote.quotedText { noteQuote(MessageKey(conversation: key, seq: message.seq), of: quoted) }
        }
        startReadReceipts(frame, seq: message.seq, in: key)
        noteViewOnce(frame, seq: message.seq, in: key)
        store.afterCommit {
            self.stats.acksSent += 1
            self.metrics.ack(code: 0)
            self.write(RelayProtocol.answer(.sendAck(ack), requestID: requestID), to: session)
            self.deliver(body, kind: .message, to: deliveries, except: session, viewOnce: frame.isViewOnce)
            self.flush()
        }
    }

    /// The conversation a message from `user` on `device` goes to, or why it cannot go anywhere: a
    /// sender (or sending device) that is not the logged-in one, a conversation that cannot be
    /// routed, a non-member, targeted receivers outside a group.
    private func admit(
        _ frame: InboundFrame,
        in conversation: Conversation,
        user: String,
        device: String
    ) -> Result<ConversationKey, Refusal> {
        let type = frame.conversationType
        guard RelayProtocol.sameID(frame.senderID, user) else {
            return .failure(
                Refusal(
                    RelayProtocol.AckError.senderMismatch,
                    "sender_id \"\(frame.senderID)\" is not the logged-in user \(user)"
                )
            )
        }
        // Receivers take sender_device_id for the device that sent it (message.proto): it is this
        // connection's device or empty, as sender_id is this connection's user.
        guard frame.senderDeviceID.isEmpty || RelayProtocol.sameID(frame.senderDeviceID, device) else {
            return .failure(
                Refusal(
                    RelayProtocol.AckError.senderMismatch,
                    "sender_device_id \"\(frame.senderDeviceID)\" is not this connection's device \"\(device)\""
                )
            )
        }
        // An encrypted element is sealed by the sending device (message.proto): receivers pick the
        // session that opens it by its sender_device_id, which no other device may claim either.
        if let other = frame.sealingDeviceIDs.first(where: { !RelayProtocol.sameID($0, device) }) {
            return .failure(
                Refusal(
                    RelayProtocol.AckError.senderMismatch,
                    "an encrypted element's sender_device_id \"\(other)\" is not this connection's device \"\(device)\""
                )
            )
        }
        guard frame.serverAssignedFields.isEmpty else {
            return .failure(
                Refusal(
                    RelayProtocol.AckError.serverAssignedField,
                    "serverAssignedField: only the server sets "
                        + frame.serverAssignedFields.joined(separator: ", ")
                        + "; send the message without them"
                )
            )
        }
        guard let key = ConversationKey(conversation, user: user) else {
            return .failure(
                Refusal(
                    RelayProtocol.AckError.unsupportedConversation,
                    ConversationKey.namesRefusedID(type, frame.targetID, channelID: frame.channelID)
                        ? RelayProtocol.idReason
                        : "conversation type \(type) with target \"\(frame.targetID)\" cannot be routed"
                )
            )
        }
        guard isMember(user, key) else {
            return .failure(
                Refusal(RelayProtocol.AckError.notAGroupMember, "\(user) is not a member of \(frame.targetID)")
            )
        }
        // Targeted messages (Tencent: "sent only to specified members"; RongCloud's directedUserIds)
        // exist in groups and ultra groups only, as `validate()` says.
        guard !frame.targetReceivers.isEmpty else { return .success(key) }
        switch key {
        case .shared(.group, _, _), .shared(.ultraGroup, _, _): break
        default:
            return .failure(
                Refusal(
                    RelayProtocol.AckError.targetedOutsideGroup,
                    "target_receivers is for group and ultra-group conversations only, not \(type.protoName)"
                )
            )
        }
        guard frame.targetReceivers.allSatisfy(RelayProtocol.isAcceptedID) else {
            return .failure(
                Refusal(
                    RelayProtocol.AckError.targetedOutsideGroup,
                    "a target receiver's id is refused: \(RelayProtocol.idReason)"
                )
            )
        }
        return .success(key)
    }

    /// The first copy of a message sent again with the same `client_msg_id`, if any: a kept one, or
    /// one of the newest the relay delivered without keeping (``RecentLiveMessages``).
    private func firstCopy(of frame: InboundFrame, in key: ConversationKey, user: String) -> ConversationState.Sent? {
        guard !frame.clientMsgID.isEmpty else { return nil }
        return conversations[key]?.sent(by: user, clientMsgID: frame.clientMsgID)
            ?? recentLiveMessages[user]?.first(frame.clientMsgID, in: key)
    }

    /// Adds a kept message to its conversation (trimming it to the retention limit) and to the
    /// store's next batch.
    private func addKept(_ message: StoredMessage) {
        let key = message.conversation
        if conversations[key] == nil, case .direct(let a, let b) = key {
            belongs[a, default: []].insert(key)
            belongs[b, default: []].insert(key)
            // One more for each side that had no view of it (mayStart).
            for user in Set([a, b]) where userConversations[user]?[key] == nil {
                directConversationCounts[user, default: 0] += 1
            }
        }
        // Changed in place: a copy of the conversation's indexes per message would cost O(kept messages).
        conversations[key, default: ConversationState()].add(message)
        if conversations[key]!.count > configuration.maxMessagesPerConversation {
            dropMessages(of: key, below: message.seq + 1 - UInt64(configuration.maxMessagesPerConversation))
        }
        store.batch.messages.append(message)
        noteExpiry(of: message)
    }

    /// Recall, edit, delete, typing, reaction, pin, poll vote and update, disappearing timer, mark
    /// read: kept in the stream of every user of their conversation (typing is sent live only), and
    /// forwarded to their live devices once committed. `FrameView.route` says where each goes.
    func routeEvent(_ frame: InboundFrame, from session: Session, user: String) {
        let route = frame.route
        // No conversation has such an id (ConversationKey): the event names none the relay keeps.
        func refuseLongID() {
            refuse(
                session,
                frame.requestID,
                RelayProtocol.RequestError.unsupportedConversation,
                notice: "unroutable",
                "the event names its conversation by an empty id or by one longer than "
                    + "\(RelayProtocol.maxIDBytes) bytes"
            )
        }
        var users: [String]
        var key: ConversationKey?
        switch route {
        case .user(let peer) where peer == user:
            // A reference names its one-to-one conversation as the message's sender did (by the
            // receiver): a recall, edit or delete of a message received from `sender` is in the
            // conversation with `sender` (and is then refused when `user` is not the sender).
            guard let sender = referencedSender(frame, session), sender != user else {
                if !session.closing {
                    notice(session, code: "unroutable", reason: "a one-to-one event must name the peer as its target")
                }
                return
            }
            guard let direct = ConversationKey(.oneToOne, sender, user: user) else {
                return refuseLongID()
            }
            key = direct
            users = self.users(of: direct)
        case .user(let peer), .referencedSender(let peer):
            guard let direct = ConversationKey(.oneToOne, peer, user: user) else {
                return refuseLongID()
            }
            key = direct
            users = self.users(of: direct)
        case .group(let id), .chatroom(let id), .ultraGroup(let id, _):
            let type: ConversationType
            let channel: String
            switch route {
            case .chatroom: (type, channel) = (.chatroom, "")
            case .ultraGroup(_, let channelID): (type, channel) = (.ultraGroup, channelID)
            default: (type, channel) = (.group, "")
            }
            guard let shared = ConversationKey(type, id, channelID: channel, user: user) else {
                return refuseLongID()
            }
            guard isMember(user, shared) else {
                return refuse(
                    session,
                    frame.requestID,
                    RelayProtocol.RequestError.notAMember,
                    notice: "unroutable",
                    "\(user) is not a member of \(id)"
                )
            }
            key = shared
            users = self.users(of: shared)
        case .ownDevices:
            users = [user]
        default:
            notice(
                session,
                code: "unroutable",
                reason: "the \(frame.payloadKind?.protoName ?? "empty") frame names no receiver"
            )
            return
        }
        // An event speaks for its sender only, as a message's sender_id does.
        guard let event = decoded(frame, session) else { return }
        if let actor = Self.actor(of: event.payload), !actor.value.isEmpty, !RelayProtocol.sameID(actor.value, user) {
            refuse(
                session,
                event.requestID,
                RelayProtocol.RequestError.badRequest,
                notice: "badRequest",
                "\(actor.field) \"\(actor.value)\" is not the logged-in user \(user)"
            )
            return
        }
        // A call signal's device_id tells the caller's other devices which one answered (an ACCEPT
        // stops the others ringing): this connection's device, or empty.
        if case .call(let call)? = event.payload, !call.deviceID.isEmpty,
            !RelayProtocol.sameID(call.deviceID, session.deviceID)
        {
            refuse(
                session,
                event.requestID,
                RelayProtocol.RequestError.badRequest,
                notice: "badRequest",
                "device_id \"\(call.deviceID)\" is not this connection's device \"\(session.deviceID)\""
            )
            return
        }
        // A one-to-one event from a user the peer blocked reaches the peer no more than a message does
        // (Tencent addToBlackList): typing is dropped; anything else is refused with 20007, or with
        // `--blocked-senders silent` answered and applied to nothing. A recall or a delete still
        // removes the sender's own message.
        if case .direct(let a, let b)? = key, a != b, hasBlocked(a == user ? b : a, user),
            frame.payloadKind != .recall, frame.payloadKind != .delete
        {
            guard frame.payloadKind != .typing else { return }
            return answerBlockedSender(session, event.requestID, user: user)
        }
        if frame.payloadKind == .typing {
            // Past the user's budget (`serve --live-update-rate`) it is dropped, as typing to a
            // peer who blocked the sender is: a client repeats typing while the user types.
            guard liveUpdateBudgets.take(1, by: user, atMs: session.lastHeardMs) else { return }
            deliverLive(frame.body, kind: .typing, sender: user, to: users.filter { $0 != user }, except: session)
            return
        }
        guard !isResentEvent(frame, from: session, user: user) else { return }
        // A kept event in a one-to-one conversation the user has neither messages in nor a view of
        // (a call to a new peer, a timer set before the first message) starts it, as a first
        // message does: within --max-direct-conversations, and the user gets a view of it (an
        // entry of its list), so that it counts. Otherwise each event to a made-up id made the
        // relay keep a stream for it.
        let starts =
            key.map { startsConversation($0, for: user) } ?? false
        var requestID: UInt64 = 0
        // The kept messages the event names.
        var named: [UInt64] = []
        // The frame kept and sent instead of the client's: an edit whose quote lost something.
        var rewrittenBody: ByteBuffer?
        // An edit's change to its message, and the messages a recall or a delete for everyone
        // removes: applied once the event passed every check and its cost.
        var edited: (seq: UInt64, edit: EditEvent, quotedText: MessageKey?)?
        var removes = false
        if let key {
            guard let accepted = checkEvent(frame, event, in: key, from: session, user: user) else { return }
            requestID = accepted.requestID
            // A view-once message's content is shown once: nothing shows it again (Router+ViewOnce).
            if frame.payloadKind == .edit || frame.payloadKind == .streamChunk, let seq = accepted.seqs.first,
                isViewOnce(seq, in: key)
            {
                refuse(
                    session,
                    requestID,
                    RelayProtocol.RequestError.badRequest,
                    notice: "badRequest",
                    "message seq \(seq) is view-once: its content is not edited or grown"
                )
                return
            }
            if case .edit(var edit)? = event.payload,
                let seq = accepted.seqs.first
            {
                // The votes name the polls as sent (Router+Polls).
                guard keepsPolls(edit, of: seq, in: key) else {
                    refuse(
                        session,
                        requestID,
                        RelayProtocol.RequestError.badRequest,
                        notice: "badRequest",
                        "an edit leaves the message's polls as they were sent (close a poll and send a new one)"
                    )
                    return
                }
                // Its quote says what is so and loses what a reply's would (Router+Quotes), with 3003
                // for what a message gets 1009 for.
                var quote = CheckedQuote()
                if let edited = edit.newMessage, edited.quote != nil || edited.quoteSnapshot != nil {
                    switch checkQuote(of: edited, in: key, user: user) {
                    case .success(let checked):
                        quote = checked
                    case .failure(let refusal):
                        refuse(
                            session,
                            requestID,
                            RelayProtocol.RequestError.badRequest,
                            notice: "badQuote",
                            refusal.description
                        )
                        return
                    }
                    // Each message whose text a kept version of the reply quotes is a link, kept
                    // until the reply or that message goes (a recall cuts its text out of every
                    // version): without a bound, edits that each quoted another message held
                    // links (and state records) by the million.
                    if let quoted = quote.quotedText,
                        let links = quoting[key]?[seq], !links.contains(quoted),
                        links.count >= Self.maxQuotedPerMessage
                    {
                        refuse(
                            session,
                            requestID,
                            RelayProtocol.RequestError.badRequest,
                            notice: "badQuote",
                            "the versions of this message quote the text of \(links.count) messages already, the most "
                                + "the relay keeps; an edit may quote one of those, or none"
                        )
                        return
                    }
                    if let redacted = quote.redacted {
                        edit.newMessage = redacted
                        var rewritten = event
                        rewritten.payload = .edit(edit)
                        rewrittenBody = ByteBuffer(bytes: rewritten.serializedBytes())
                    }
                }
                edited = (seq, edit, quote.quotedText)
            }
            named = accepted.seqs
            removes = accepted.removes
            // An event about a targeted message reaches only that message's receivers and sender.
            if let audience = accepted.audience { users = users.filter { audience.contains($0) } }
            if let newest = named.max() { users = readers(of: newest, in: key, among: users, sender: user) }
        } else {
            // To the user's own devices (a delete for "only me", a mark-read): answered too.
            requestID = event.requestID
        }
        // After the event's own checks (a malformed one gets their answer), before anything changes.
        if starts, let key, !mayStart(key, user: user) {
            refuse(
                session,
                event.requestID,
                RelayProtocol.RequestError.listFull,
                notice: "listFull",
                conversationLimitReason(of: user)
            )
            return
        }
        // What it costs its sender's fan-out budget (Router+RateLimits): the users it reaches, once
        // its checks passed (a refused event costs nothing) and before anything changes. A reaction
        // or a poll event is checked by applying it: its cost is checked now and taken once it
        // changed something (one that changes nothing costs nothing).
        let cost = (users: users.count, pairs: peerPairs(in: key, from: user))
        let appliedToCheck = [.reaction, .pollVote, .pollUpdate].contains(frame.payloadKind)
        guard
            spendFanOut(
                cost.users,
                by: user,
                to: cost.pairs,
                session: session,
                requestID: event.requestID,
                takes: !appliedToCheck
            )
        else { return }
        if let key, removes { remove(named, in: key, recalled: frame.payloadKind == .recall) }
        if let key, let edited {
            noteChange(of: edited.seq, in: key, edit: edited.edit, timeMs: RelayProtocol.nowMs())
            if let quoted = edited.quotedText { noteQuote(MessageKey(conversation: key, seq: edited.seq), of: quoted) }
        }
        // A reaction goes out with the message's summaries as the relay keeps them (Router+Reactions).
        var body = rewrittenBody ?? frame.body
        // Frames of their own for some users (a reaction's reacted_by_me), instead of `body`.
        var own: [(users: Set<String>, body: ByteBuffer)] = []
        if let key, case .reaction(let reaction)? = event.payload {
            switch reacted(event, reaction, seq: named.first, in: key, session: session, user: user) {
            case .refused:
                return
            case .unchanged:
                if requestID != 0 { result(session, requestID) }
                return
            case .changed(let served, let ownServed):
                body = served
                own = ownServed
            }
        }
        // A frame kept rewritten is remembered by its keys too, so a resend of the client's bytes is
        // found (``isResentEvent``).
        if body != frame.body {
            let device = DeviceKey(user: user, device: session.deviceID)
            for key in Self.resendKeys(event, user: user) { remember(key, sentBy: device) }
        }
        // A poll's votes and closing are the relay's to tally (Router+Polls): a vote is kept for the
        // voter's own devices only, a closing for no one, and the relay's results reach every member.
        var pollResults: PollUpdate?
        if let key, frame.payloadKind == .pollVote || frame.payloadKind == .pollUpdate {
            let outcome: PollOutcome
            switch event.payload {
            case .pollVote(let vote)?:
                outcome = voted(event, vote, seq: named.first, in: key, session: session, user: user)
            case .pollUpdate(let update)?:
                outcome = pollClosed(event, update, seq: named.first, in: key, session: session, user: user)
            default: outcome = .untallied
            }
            switch outcome {
            case .refused:
                return
            case .unchanged:
                if requestID != 0 { result(session, requestID) }
                return
            case .untallied:
                break
            case .changed(let results):
                pollResults = results
                users = frame.payloadKind == .pollVote ? [user] : []
            }
        }
        // Checked above at this time: it takes.
        if appliedToCheck { _ = takeFanOut(cost.users, by: user, to: cost.pairs, atMs: session.lastHeardMs) }
        // A chatroom keeps no history: its events go to the members online, as its messages do.
        if let key, key.isChatroom {
            if requestID != 0 { result(session, requestID) }
            let kind = frame.payloadKind
            store.afterCommit {
                self.deliverLive(body, kind: kind, sender: user, to: users, except: session)
                self.flush()
            }
            return
        }
        // An edit or a stream chunk carries content of its message: erased with it (a recall).
        var about: MessageKey?
        if let key, named.count == 1, frame.payloadKind == .edit || frame.payloadKind == .streamChunk {
            about = MessageKey(conversation: key, seq: named[0])
        }
        let origin = DeviceKey(user: user, device: session.deviceID)
        let expireAtMs = key.map { expiry(ofEventNaming: named, in: $0) } ?? 0
        // Each user gets one frame: the shared one, or its group's own (a reaction's reacted_by_me).
        var frames: [(body: ByteBuffer, users: [String])] = [(body, users)]
        if !own.isEmpty {
            var groupOf: [String: Int] = [:]
            for (index, group) in own.enumerated() { for member in group.users { groupOf[member] = index + 1 } }
            frames = [(body, [])] + own.map { ($0.body, []) }
            for receiver in users { frames[groupOf[receiver] ?? 0].users.append(receiver) }
        }
        var deliveries: [Delivery] = []
        var framed: [(body: ByteBuffer, deliveries: [Delivery])] = []
        for (frameBody, receivers) in frames where !receivers.isEmpty {
            let kept = keep(
                .event(Array(buffer: frameBody)),
                for: receivers,
                origin: origin,
                expireAtMs: expireAtMs,
                about: about
            )
            framed.append((frameBody, kept))
            deliveries += kept
        }
        if starts, let key, let own = deliveries.first(where: { $0.user == user }) {
            setView(view(of: key, for: user), of: key, for: user, version: own.position)
        }
        if case .markRead(let read)? = event.payload, let own = deliveries.first(where: { $0.user == user }) {
            conversationsRead(read, by: user, position: own.position)
        }
        if key == nil, case .delete(let delete)? = event.payload, delete.scope == .onlyMe,
            let own = deliveries.first(where: { $0.user == user })
        {
            deletedForMe(delete.messages, by: user, position: own.position)
        }
        if let key, case .disappearingTimer(let timer)? = event.payload { setDisappearingTimer(timer, in: key) }
        if let key, [.recall, .delete, .edit, .reaction].contains(frame.payloadKind), let payload = event.payload {
            conversationsChanged(by: payload, naming: named, in: key, deliveries: deliveries)
        }
        // Answered once the event is committed, like a message's ack.
        if requestID != 0 { result(session, requestID) }
        let kind = frame.payloadKind
        store.afterCommit {
            for (frameBody, kept) in framed { self.deliver(frameBody, kind: kind, to: kept, except: session) }
            self.flush()
        }
        // After the vote, in the stream and on the wire: a device takes frames in stream order.
        if let key, let pollResults, let seq = named.first {
            if frame.payloadKind == .pollVote {
                sendPollResults(afterVote: pollResults, of: seq, in: key)
            } else {
                sendPollResults(closing: pollResults, of: seq, in: key)
            }
        }
    }

    /// The field of an event that names who did it, and its value (`nil`: the event has none).
    static func actor(of payload: Frame.Payload?) -> (field: String, value: String)? {
        switch payload {
        case .recall(let event)?: return ("revoker_id", event.revokerID)
        case .edit(let event)?: return ("editor_id", event.editorID)
        case .delete(let event)?: return ("operator_id", event.operatorID)
        case .typing(let event)?: return ("user_id", event.userID)
        case .markRead(let event)?: return ("user_id", event.userID)
        case .reaction(let event)?: return ("user_id", event.userID)
        case .pin(let event)?: return ("operator_id", event.operatorID)
        case .pollVote(let event)?: return ("voter_id", event.voterID)
        case .pollUpdate(let event)?: return ("closed_by", event.closedBy)
        case .disappearingTimer(let event)?: return ("operator_id", event.operatorID)
        case .call(let event)?: return ("user_id", event.userID)
        default: return nil
        }
    }

    /// The sender of the message a recall, edit or delete refers to (`nil` for other payloads, or
    /// when the frame does not decode, which closes the session).
    private func referencedSender(_ frame: InboundFrame, _ session: Session) -> String? {
        guard let decoded = decoded(frame, session) else { return nil }
        switch decoded.payload {
        case .recall(let event)?: return event.message?.senderID
        case .edit(let event)?: return event.message?.senderID
        case .delete(let event)?: return event.messages.first?.senderID
        default: return nil
        }
    }

    /// Applies the rules of events that name a message: a recall or an edit comes from the
    /// message's sender; nothing edits or reacts to a message recalled or deleted for everyone; a
    /// recall and a delete for everyone mark their messages removed. Refuses the event otherwise.
    /// An event about a targeted message may come only from one of its receivers or its sender.
    /// Messages are found as receivers find them (``ConversationState/resolve(_:)``): an event that
    /// names a message by its server uid, or by its sender and client id, is checked on that
    /// message, and one whose seq and ids disagree is refused. A recall, an edit, a delete for
    /// everyone or a stream chunk that names no kept message is refused (whose message it was cannot
    /// be checked).
    /// - Returns: The event's request id (0: none), the seqs of the kept messages it names and, for
    ///   an event about a targeted message, who may see it, when it is accepted; `nil` when it was
    ///   refused.
    private func checkEvent(
        _ frame: InboundFrame,
        _ decoded: Frame,
        in key: ConversationKey,
        from session: Session,
        user: String
    )
        -> (requestID: UInt64, seqs: [UInt64], audience: Set<String>?, removes: Bool)?
    {
        switch frame.payloadKind {
        case .recall?, .edit?, .reaction?, .delete?, .pin?, .pollVote?, .pollUpdate?, .disappearingTimer?,
            .streamChunk?:
            break
        default: return (0, [], nil, false)
        }
        let requestID = decoded.requestID
        var refs: [MessageRef] = []
        var removes = false
        var mustBeSender = false
        var mustRead = false
        switch decoded.payload {
        case .recall(let event)?: refs = event.message.map { [$0] } ?? []; removes = true; mustBeSender = true
        case .edit(let event)?: refs = event.message.map { [$0] } ?? []; mustBeSender = true
        // Adding a reaction or a pin needs a message its actor reads; taking its own back does not.
        case .reaction(let event)?: refs = event.message.map { [$0] } ?? []; mustRead = event.action != .remove
        case .delete(let event)?: refs = event.messages; removes = event.scope == .everyone; mustBeSender = removes
        case .pin(let event)?: refs = event.message.map { [$0] } ?? []; mustRead = event.pinned
        case .pollVote(let event)?: refs = event.pollMessage.map { [$0] } ?? []
        // Only the poll's creator closes it (events.proto, PollUpdate).
        case .pollUpdate(let event)?: refs = event.pollMessage.map { [$0] } ?? []; mustBeSender = true
        // Only a streamed message's sender grows it.
        case .streamChunk(let event)?: refs = event.message.map { [$0] } ?? []; mustBeSender = true
        default: return (requestID, [], nil, false)
        }
        let state = conversations[key] ?? ConversationState()
        var audience: Set<String>?
        var seqs: [UInt64] = []
        for ref in refs {
            // A reference that names a conversation names the event's own: receivers look the
            // message up in the conversation the reference names (a pin names its conversation and
            // its message apart, and a delete's later references are not what routes it).
            if let named = ref.conversation, named.type != .unspecified, !key.names(named) {
                refuse(
                    session,
                    requestID,
                    RelayProtocol.RequestError.badRequest,
                    notice: "badRequest",
                    "the message reference names another conversation than the event's"
                )
                return nil
            }
            // The message as receivers find it (by server uid, else by sender and client id): the
            // one the rules are checked on.
            let seq: UInt64
            switch state.resolve(ref) {
            case .kept(let kept):
                seq = kept
            case .conflicting:
                refuse(
                    session,
                    requestID,
                    RelayProtocol.RequestError.badRequest,
                    notice: "badRequest",
                    "the message reference's seq \(ref.seq) and its ids name different messages"
                )
                return nil
            case .unknown:
                // Whose message it is cannot be checked: only its sender may recall, edit, delete it
                // for everyone or grow it, so such an event is refused; others name what they like.
                guard !mustBeSender else {
                    refuse(
                        session,
                        requestID,
                        RelayProtocol.RequestError.badRequest,
                        notice: "badRequest",
                        "the message reference names no message the relay keeps in this conversation"
                    )
                    return nil
                }
                continue
            }
            seqs.append(seq)
            if let targeted = state.audiences[seq] {
                guard targeted.contains(user) else {
                    refuse(
                        session,
                        requestID,
                        RelayProtocol.RequestError.notAMember,
                        notice: "notAMember",
                        "message seq \(seq) was sent to other members only"
                    )
                    return nil
                }
                audience = audience.map { $0.intersection(targeted) } ?? targeted
            }
            // A message its actor cannot read (it joined after it, or cleared it) is not its to
            // react to or pin, as a poll vote (3001): the reactions the relay fills in would show
            // it who reacted. It may still take back its reaction or unpin it; its sender still
            // recalls, edits or deletes it; anyone deletes what it likes for itself.
            if mustRead, !reads(seq, in: key, user: user) {
                refuse(
                    session,
                    requestID,
                    RelayProtocol.RequestError.notAMember,
                    notice: "notAMember",
                    Self.unreadReason(seq, user: user)
                )
                return nil
            }
            if state.removed.contains(seq) || hasExpired(seq, in: key, at: nowMs()), !removes {
                refuse(
                    session,
                    requestID,
                    RelayProtocol.RequestError.messageRemoved,
                    notice: "messageRemoved",
                    "message seq \(seq) was recalled, deleted or expired"
                )
                return nil
            }
            if mustBeSender, let sender = state.kept[seq]?.sender, sender != user {
                refuse(
                    session,
                    requestID,
                    RelayProtocol.RequestError.notTheSender,
                    notice: "notTheSender",
                    "message seq \(seq) was sent by another user"
                )
                return nil
            }
        }
        // An edit's new_message is the message after the edit: what it says of who sent it, where
        // and under which ids must be what the edited message says (receivers take it as the
        // message), else a sender could rewrite their message into another's or another chat's.
        if case .edit(let event)? = decoded.payload, let edited = event.newMessage, let seq = seqs.first,
            let kept = state.kept[seq]
        {
            // The fields only the server sets, as on a message (1007): an edit could otherwise show
            // receivers a read list, reactions or an edit count that never happened. A device that
            // edits its copy of the message may repeat what the server gave it, nothing else.
            let forged = frame.serverAssignedFields.filter {
                !Self.repeatsTheServer(
                    $0,
                    edited,
                    kept: kept,
                    expireAtMs: state.expiries[seq] ?? 0,
                    change: messageChanges[key]?[seq]
                )
            }
            guard forged.isEmpty else {
                refuse(
                    session,
                    requestID,
                    RelayProtocol.RequestError.badRequest,
                    notice: "badRequest",
                    "the edit's new_message sets fields only the server sets, to values it did not give: "
                        + forged.joined(separator: ", ") + "; send it without them"
                )
                return nil
            }
            // Nor may it name another sending device than the editing one (a message's must be its
            // sender's, 1001): receivers would take the message for one another device sent. The
            // relay does not keep which device sent a message, so the editing device is the one it
            // can vouch for; empty names none.
            if !edited.senderDeviceID.isEmpty, !RelayProtocol.sameID(edited.senderDeviceID, session.deviceID) {
                refuse(
                    session,
                    requestID,
                    RelayProtocol.RequestError.badRequest,
                    notice: "badRequest",
                    "the edit's new_message has sender_device_id \"\(edited.senderDeviceID)\", which is not this "
                        + "connection's device \"\(session.deviceID)\"; send it empty"
                )
                return nil
            }
            // The new content is sealed by the editing device, as a message's by its sender's.
            if let other = frame.sealingDeviceIDs.first(where: { !RelayProtocol.sameID($0, session.deviceID) }) {
                refuse(
                    session,
                    requestID,
                    RelayProtocol.RequestError.badRequest,
                    notice: "badRequest",
                    "the edit's new_message has an encrypted element whose sender_device_id \"\(other)\" is not "
                        + "this connection's device \"\(session.deviceID)\""
                )
                return nil
            }
            let differs: String? =
                if !edited.senderID.isEmpty, !RelayProtocol.sameID(edited.senderID, kept.sender) {
                    "sender_id"
                } else if edited.seq != 0, edited.seq != seq {
                    "seq"
                } else if !edited.serverMsgUID.isEmpty, edited.serverMsgUID != kept.serverMsgUID {
                    "server_msg_uid"
                } else if !edited.clientMsgID.isEmpty, edited.clientMsgID != kept.clientMsgID {
                    "client_msg_id"
                } else if let conversation = edited.conversation, conversation.type != .unspecified,
                    !key.names(conversation)
                {
                    "conversation"
                } else {
                    nil
                }
            if let differs {
                refuse(
                    session,
                    requestID,
                    RelayProtocol.RequestError.badRequest,
                    notice: "badRequest",
                    "the edit's new_message has another \(differs) than the message it edits"
                )
                return nil
            }
            // History and the conversation list serve the message with the new content: it must
            // still reach a device within the frame size limit.
            let size = servedSizeBound(of: seq, in: key, sentSize: kept.size, elements: edited.elements)
            let room = deliveryRoom(in: key)
            guard size <= room else {
                refuse(
                    session,
                    requestID,
                    RelayProtocol.RequestError.tooLargeToDeliver,
                    notice: "tooLargeToDeliver",
                    "the message after the edit could be \(size) bytes; the relay serves messages of at most \(room) "
                        + "(the frame size limit, less what it adds on delivery)"
                )
                return nil
            }
        }
        return (requestID, seqs, audience, removes)
    }

    /// Removes the kept messages `seqs` of `key` that a recall or a delete for everyone names, once
    /// the event passed its checks and its cost: what each said is erased (the store keeps a stub in
    /// place of its frame and redacts the edits and stream chunks kept about it, Redaction), and its
    /// edits and extension are forgotten.
    private func remove(_ seqs: [UInt64], in key: ConversationKey, recalled: Bool) {
        for seq in seqs where conversations[key]?.removed.insert(seq).inserted == true {
            let kept = conversations[key]?.kept[seq]
            let stub = Redaction.message(
                in: key,
                seq: seq,
                sender: kept?.sender ?? "",
                clientMsgID: kept?.clientMsgID ?? "",
                serverMsgUID: kept?.serverMsgUID ?? "",
                serverTimeMs: kept?.serverTimeMs ?? 0,
                status: recalled ? .recalled : .deleted
            )
            store.batch.removals.append((key, seq, stub))
            forgetChanges(of: seq, in: key)
        }
    }

    /// Whether the field `name` (of ``Message/serverAssignedFieldNames``) of an edit's new_message
    /// says what the server set on the edited message: its uid and seq (compared with the other ids
    /// in `checkEvent`), its server time, its expiry, an edit count and update time history served it
    /// with (`change`: now, or before a later edit or extension update), reaction summaries whose
    /// users are still among those who reacted (without the reader's own `reacted_by_me`), and
    /// `is_offline` (how the editing device got its copy). The relay sets no other such field on a
    /// message, so any other one set is forged.
    static func repeatsTheServer(
        _ name: String,
        _ edited: Message,
        kept: KeptMessage,
        expireAtMs: Int64,
        change: Message?
    ) -> Bool {
        switch name {
        case "server_msg_uid", "seq", "is_offline": return true
        case "server_time_ms": return edited.serverTimeMs == kept.serverTimeMs
        case "expire_at_ms": return edited.expireAtMs == expireAtMs
        case "edit_version": return edited.editVersion <= change?.editVersion ?? 0
        case "updated_at_ms": return edited.updatedAtMs <= change?.updatedAtMs ?? 0
        // Summaries a device was served: each emoji's users among those who reacted with it now.
        case "reactions":
            let now = change?.reactions ?? []
            return edited.reactions.allSatisfy { summary in
                // reacted_by_me is the reader's own: an edit would show every receiver the editor's.
                guard !summary.reactedByMe, let kept = now.first(where: { $0.emoji == summary.emoji }) else {
                    return false
                }
                return summary.count <= kept.userIDs.count && Set(summary.userIDs).isSubset(of: kept.userIDs)
            }
        default: return false
        }
    }

    /// A system notice with a `recipient_id` goes to that user's online devices (QuickBlox system
    /// messages); it is not kept. Without a recipient it is refused; from a user the recipient
    /// blocked it is dropped as a one-to-one message would be. The relay appends
    /// `Frame{system_notice{params{"sender_id": USER}}}` (protobuf merges it into the notice, and a
    /// map keeps the last value of a key), so the recipient sees who sent it whatever the sender
    /// wrote there; the type `error` is the relay's own and is refused.
    func routeNotice(_ frame: InboundFrame, from session: Session, user: String) {
        guard let decoded = decoded(frame, session), case .systemNotice(let notice)? = decoded.payload else { return }
        guard !notice.recipientID.isEmpty else {
            refuse(
                session,
                decoded.requestID,
                RelayProtocol.RequestError.unsupported,
                notice: "unsupported",
                "the relay routes a system_notice only to its recipient_id"
            )
            return
        }
        // The recipient's sessions are found by canonical equivalence: a decomposed id would reach
        // the NFC user's devices.
        guard RelayProtocol.isAcceptedID(notice.recipientID) else {
            refuse(
                session,
                decoded.requestID,
                RelayProtocol.RequestError.badRequest,
                notice: "badRequest",
                "the recipient's id is refused: \(RelayProtocol.idReason)"
            )
            return
        }
        guard notice.type != RelayProtocol.error else {
            refuse(
                session,
                decoded.requestID,
                RelayProtocol.RequestError.badRequest,
                notice: "badRequest",
                "the system_notice type \"\(RelayProtocol.error)\" is the relay's own"
            )
            return
        }
        // From a user the recipient blocked: as its one-to-one messages and events (`serve
        // --blocked-senders`): answered and dropped, or refused with 20007.
        if hasBlocked(notice.recipientID, user) { return answerBlockedSender(session, decoded.requestID, user: user) }
        let body = frame.body
        let senderSuffix = Frame(.systemNotice(SystemNotice.with { $0.params = [RelayProtocol.noticeSenderKey: user] }))
            .serializedBytes()
        // The recipient gets it with the sender's id appended. Checked before the budgets are
        // spent: a refused notice costs nothing.
        guard deliverable(frame, from: session, adding: senderSuffix.count) else { return }
        let pairs = notice.recipientID == user ? [] : [UserPair(from: user, to: notice.recipientID)]
        guard spendFanOut(1, by: user, to: pairs, session: session, requestID: decoded.requestID) else { return }
        store.afterCommit {
            self.deliverLive(
                body,
                kind: .systemNotice,
                sender: user,
                to: [notice.recipientID],
                except: session,
                suffix: senderSuffix
            )
            if decoded.requestID != 0 { self.result(session, decoded.requestID) }
            self.flush()
        }
    }
}
#endif
