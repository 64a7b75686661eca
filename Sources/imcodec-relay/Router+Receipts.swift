#if Tools
import IMCodec
import IMCodecNIO
import NIOCore

/// Receipts (receipts.proto; Tencent's message read receipts: "the sender specifies that messages
/// require read receipts", `needReadReceipt`). A receipt goes to the sender of the message it names
/// and to the reader's other devices, with the fields only the relay can vouch for set by it:
/// `user_id` (the reader), `device_id` (the reader's device), `is_peer_read` (one-to-one), and for a
/// group message `group_id`, `read_count` and `unread_count`. For each kept message sent with
/// `MESSAGE_FLAG_NEED_READ_RECEIPT` the relay keeps who read it (``Router/messageReaders``, a state
/// record, so across restarts): the counts come from there, a second read receipt of the same
/// reader is answered and kept by no one, and the sender pulls the receipts of its messages
/// (`ReadReceiptRequest`) and the members who did or did not read one (`GroupReadMembersRequest`).
/// Receipts of other messages carry no counts: no one but the relay counts.
extension Router {
    /// The most messages one `ReadReceiptRequest`, or one `ReceiptBatch` a client sends, names.
    static let maxReceiptRequestMessages = 100
    /// The most members one `GroupReadMembers` page holds (receipts.proto: "Tencent allows at most 100").
    static let maxReadMembersPage = 100

    // MARK: Who read what

    /// Starts keeping who reads kept message `seq` of `key`, when it was sent with
    /// `MESSAGE_FLAG_NEED_READ_RECEIPT`.
    func startReadReceipts(_ frame: InboundFrame, seq: UInt64, in key: ConversationKey) {
        guard frame.messageFlags.contains(.needReadReceipt) else { return }
        messageReaders[key, default: [:]][seq] = MessageReaders()
        // One byte, 1, so that a message no one read yet keeps a record (an empty one is a deletion).
        store.batch.records[.readers(key, seq: seq)] = [1]
    }

    /// Keeps `readers` as those of kept message `seq` of `key`: the readers it had and those who
    /// read it since, in order (one record each, with its place in that order), and the counts.
    private func addReaders(_ readers: MessageReaders, of seq: UInt64, in key: ConversationKey) {
        let before = messageReaders[key]?[seq]?.count ?? 0
        messageReaders[key, default: [:]][seq] = readers
        let message = MessageKey(conversation: key, seq: seq)
        for (place, reader) in readers.order.enumerated().dropFirst(before) {
            store.batch.records[.reader(message, user: reader)] = SeqListBytes.bytes([UInt64(place)])
        }
    }

    /// Loads that a message keeps its readers from its state record (with the readers of a record
    /// from before per-reader records, in order).
    func loadReaders(_ bytes: [UInt8], of seq: UInt64, in key: ConversationKey) {
        guard bytes.first == 1, let readers = StringListBytes.strings(bytes.dropFirst()) else { return }
        messageReaders[key, default: [:]][seq, default: MessageReaders()].prepend(readers)
    }

    /// Loads the per-reader records (``StateRecordKey/reader(_:user:)``), after the messages'
    /// records: each message's readers in the order they read it, after those of its earlier record.
    /// A reader of a message that keeps no readers (a record left behind) is not loaded.
    func loadReaders(_ readers: [MessageKey: [(place: UInt64, user: String)]]) {
        for (message, placed) in readers where messageReaders[message.conversation]?[message.seq] != nil {
            for (_, user) in placed.sorted(by: { $0.place < $1.place }) {
                messageReaders[message.conversation]![message.seq]!.append(user)
            }
        }
    }

    /// Forgets who read kept message `seq` of `key` (recalled, deleted for everyone, expired).
    func forgetReaders(of seq: UInt64, in key: ConversationKey) {
        guard let readers = messageReaders[key]?.removeValue(forKey: seq) else { return }
        store.batch.records[.readers(key, seq: seq)] = []
        let message = MessageKey(conversation: key, seq: seq)
        for reader in readers.order { store.batch.records[.reader(message, user: reader)] = [] }
    }

    /// Forgets who read the messages of `key` with seqs in `trimmed` (retention dropped them).
    func forgetReaders(in key: ConversationKey, trimmed: Range<UInt64>) {
        let gone = trimmed.present(in: messageReaders[key]?.keys)
        for old in gone { forgetReaders(of: old, in: key) }
    }

    /// Who may read kept message `seq` of `key` besides its sender (``audience(of:in:)``).
    private func receivers(of seq: UInt64, in key: ConversationKey) -> [String] {
        let sender = conversations[key]?.kept[seq]?.sender ?? ""
        return audience(of: seq, in: key).filter { $0 != sender }
    }

    /// Notes that the audience of `key`'s messages changed (a member joined or left, a user's
    /// `cleared_seq` moved): the read counts counted before are counted again when asked for.
    func audienceChanged(_ key: ConversationKey) {
        guard messageReaders[key] != nil else { return }  // No counts of it are kept.
        lastAudienceEpoch += 1
        audienceEpochs[key] = lastAudienceEpoch
    }

    /// The readers of kept message `seq` of `key`, when it keeps them, with the counts of a group
    /// message current: those kept while the audience has not changed since, or counted again
    /// (walking the audience) and kept with the readers.
    func countedReaders(of seq: UInt64, in key: ConversationKey) -> MessageReaders? {
        guard var readers = messageReaders[key]?[seq] else { return nil }
        let epoch = audienceEpochs[key] ?? 0
        guard key.isShared, readers.counts?.epoch != epoch else { return readers }
        let audience = receivers(of: seq, in: key)
        let read = audience.reduce(0) { readers.contains($1) ? $0 + 1 : $0 }
        readers.counts = ReadCounts(epoch: epoch, read: read, receivers: audience.count)
        messageReaders[key]![seq] = readers
        return readers
    }

    // MARK: Routing receipts

    /// `receipt` without the fields the relay fills (its reader, device, `is_peer_read`, group and
    /// counts): what it sends starts from this, and a resend is found by it.
    static func withoutRelayFields(_ receipt: MessageReceipt) -> MessageReceipt {
        var bare = receipt
        bare.userID = ""
        bare.deviceID = ""
        bare.isPeerRead = false
        bare.groupID = ""
        bare.readCount = 0
        bare.unreadCount = 0
        return bare
    }

    /// What a device's receipt is remembered by for resends (``Router/resendKeys(_:user:)``): the
    /// receipt ``withoutRelayFields(_:)``, the same for the client's bytes and for the relay's copy
    /// kept, which is all a restart finds.
    static func receiptKey(_ receipt: MessageReceipt) -> [UInt8] {
        Frame(.receipt(withoutRelayFields(receipt))).serializedBytes()
    }

    /// `receipt` from `user` on `device` as the message's sender gets it, or `nil` when it changes
    /// nothing (a read the relay counted already). A read it counts goes into `reads`, the readers of
    /// each message after the receipts before it (not yet kept). ``receiptRefusal(_:from:)`` accepted
    /// it.
    private func served(
        _ receipt: MessageReceipt,
        from user: String,
        device: String,
        reads: inout [MessageKey: MessageReaders]
    ) -> MessageReceipt? {
        var served = Self.withoutRelayFields(receipt)
        served.userID = user
        served.deviceID = device
        guard let ref = receipt.message, let key = conversationKey(of: ref, user: user) else { return served }
        let isRead = receipt.kind == .read && ref.senderID != user
        switch key {
        case .direct:
            served.isPeerRead = isRead
        case .shared(_, let target, _):
            served.groupID = target
        }
        guard case .kept(let seq) = conversations[key]?.resolve(ref) else { return served }
        let message = MessageKey(conversation: key, seq: seq)
        // Counted (and kept with the relay's readers, whether or not the batch goes through) before
        // the batch's own readers are added.
        guard var readers = reads[message] ?? countedReaders(of: seq, in: key) else { return served }
        if isRead, !readers.append(user) { return nil }
        if let counts = readers.counts {
            served.readCount = UInt64(counts.read)
            served.unreadCount = UInt64(counts.unread)
        }
        reads[message] = readers
        return served
    }

    /// Receipts go to the sender of the message they refer to (read from the message reference),
    /// and to the reader's other devices, as the relay fills them (``served(_:from:device:reads:)``).
    func routeReceipts(_ frame: InboundFrame, from session: Session, user: String) {
        guard !isResentEvent(frame, from: session, user: user) else { return }
        guard let decoded = decoded(frame, session) else { return }
        let origin = DeviceKey(user: user, device: session.deviceID)
        let receipts: [MessageReceipt]
        switch decoded.payload {
        case .receipt(let receipt)?: receipts = [receipt]
        case .receipts(let batch)?: receipts = batch.receipts
        default: receipts = []
        }
        // A C2CReadReceipt names its reader and no one it goes to, so it cannot be routed; it was
        // answered with success and dropped before. A peer sees what was read in its conversation
        // list's read horizons, which a mark_read moves.
        if case .receipts(let batch)? = decoded.payload, !batch.c2cReadReceipts.isEmpty {
            refuse(
                session,
                decoded.requestID,
                RelayProtocol.RequestError.badRequest,
                notice: "badRequest",
                "c2c_read_receipts name no receiver and are not routed: send a mark_read for the conversation "
                    + "(its peer sees the read horizon in the conversation list)"
            )
            return
        }
        // A batch names at most as many messages as a pull does: each may cost a walk of its
        // group's members (to count its readers), once per change of the group's audience.
        guard Set(receipts.compactMap(\.message)).count <= Self.maxReceiptRequestMessages else {
            refuse(
                session,
                decoded.requestID,
                RelayProtocol.RequestError.badRequest,
                notice: "badRequest",
                "a receipts batch names at most \(Self.maxReceiptRequestMessages) messages: send the rest in another"
            )
            return
        }
        // A batch is refused whole when one of its receipts is.
        for receipt in receipts {
            if let refusal = receiptRefusal(receipt, from: user) {
                refuse(session, decoded.requestID, refusal.code, notice: refusal.notice, refusal.reason)
                return
            }
        }
        // Per sender, in one frame each; a receipt the relay counted already goes to no one, and
        // one the batch holds twice once.
        var byTarget: [String: [MessageReceipt]] = [:]
        var reads: [MessageKey: MessageReaders] = [:]
        var seen: Set<[UInt8]> = []
        for receipt in receipts where seen.insert(Self.receiptKey(receipt)).inserted {
            guard let target = receipt.message?.senderID, !target.isEmpty,
                let served = served(receipt, from: user, device: session.deviceID, reads: &reads)
            else { continue }
            byTarget[target, default: []].append(served)
        }
        let frames = byTarget.sorted { $0.key < $1.key }.map { target, served in
            let payload: Frame.Payload =
                frame.payloadKind == .receipt
                ? .receipt(served[0]) : .receipts(ReceiptBatch.with { $0.receipts = served })
            return (target: target, served: served, bytes: Frame(payload).serializedBytes())
        }
        // With the relay's fields each must still reach every device (as ``deliverable`` checked the client's).
        for (_, served, bytes) in frames {
            let keys = served.compactMap { $0.message.flatMap { conversationKey(of: $0, user: user) } }
            let room = keys.map { deliveryRoom(in: $0) }.min() ?? configuration.codec.effectiveMaxFrameSize
            guard bytes.count <= room else {
                refuse(
                    session,
                    decoded.requestID,
                    RelayProtocol.RequestError.tooLargeToDeliver,
                    notice: "tooLargeToDeliver",
                    "the receipts with the relay's fields would be \(bytes.count) bytes; the relay delivers frames of "
                        + "at most \(room)"
                )
                return
            }
        }
        // What it costs its sender's fan-out budget (Router+RateLimits): the senders it reaches and
        // the reader's own devices. One batch names up to a group's every member.
        let cost = Set(frames.map(\.target) + [user]).count
        // And one of its budget for each other user it reaches (``peerBudgets``): each receipt goes
        // to one sender, and one reader's receipts on distinct messages could flood it.
        let pairs = Set(frames.map(\.target)).subtracting([user]).sorted().map { UserPair(from: user, to: $0) }
        guard spendFanOut(cost, by: user, to: pairs, session: session, requestID: decoded.requestID) else { return }
        // The client's bytes are remembered for resends, and each receipt by its key: what is kept
        // is the relay's copy, which a restart rebuilds the keys from.
        remember(frame.body.readableBytesView, sentBy: origin)
        for key in Self.resendKeys(decoded, user: user) { remember(key, sentBy: origin) }
        for (message, readers) in reads { addReaders(readers, of: message.seq, in: message.conversation) }
        for (target, _, bytes) in frames {
            let deliveries = keep(.event(bytes), for: target == user ? [user] : [target, user], origin: origin)
            let kind = frame.payloadKind
            store.afterCommit {
                self.deliver(ByteBuffer(bytes: bytes), kind: kind, to: deliveries, except: session)
                self.flush()
            }
        }
        // Answered once the receipts are committed, like an event.
        if decoded.requestID != 0 { result(session, decoded.requestID) }
    }

    /// Why `user` may not send `receipt`, or `nil` when it may. A receipt speaks for its reader (its
    /// `user_id`, when set, is `user`), about a message of a conversation `user` belongs to, and
    /// goes to the message's sender (`sender_id`): the sender of the kept message it names (found as
    /// ``ConversationState/resolve(_:)`` finds it), or, for a message the relay does not keep (an
    /// online-only one, or one retention dropped), a user of that conversation. So no one speaks
    /// for another reader, or writes receipts into the stream of a user it shares no conversation with.
    func receiptRefusal(
        _ receipt: MessageReceipt,
        from user: String
    )
        -> (code: Int32, notice: String, reason: String)?
    {
        let badRequest = RelayProtocol.RequestError.badRequest
        guard receipt.userID.isEmpty || receipt.userID == user else {
            return (badRequest, "badRequest", "a receipt's user_id is its reader, \(user)")
        }
        guard let ref = receipt.message, !ref.senderID.isEmpty, let key = conversationKey(of: ref, user: user) else {
            return (badRequest, "badRequest", "a receipt names its message's sender and conversation")
        }
        guard isMember(user, key) else {
            return (RelayProtocol.RequestError.notAMember, "notAMember", "\(user) is not in the receipt's conversation")
        }
        let state = conversations[key] ?? ConversationState()
        switch state.resolve(ref) {
        case .conflicting:
            return (
                badRequest, "badRequest", "the message reference's seq \(ref.seq) and its ids name different messages"
            )
        case .kept(let seq):
            guard state.kept[seq]?.sender == ref.senderID else {
                return (badRequest, "badRequest", "message seq \(seq) was not sent by \(ref.senderID)")
            }
            if !state.wasSent(seq, to: user) {
                return (RelayProtocol.RequestError.notAMember, "notAMember", "message seq \(seq) was sent to others")
            }
            // A message its reader cannot read (it joined after it, or cleared it) is not its to acknowledge.
            guard reads(seq, in: key, user: user) else {
                return (RelayProtocol.RequestError.notAMember, "notAMember", Self.unreadReason(seq, user: user))
            }
        case .unknown:
            // A one-to-one conversation the relay never kept a message of, and the user has no view
            // of, has no message to acknowledge: a receipt there would make the relay keep a
            // stream for any made-up peer (``Router/mayStart(_:user:)`` bounds the others).
            if startsConversation(key, for: user) {
                return (
                    RelayProtocol.RequestError.notAMember, "notAMember",
                    "no message of this one-to-one conversation was kept: nothing to acknowledge"
                )
            }
            guard isMember(ref.senderID, key) else {
                return (
                    RelayProtocol.RequestError.notAMember, "notAMember",
                    "\(ref.senderID) is not in the receipt's conversation"
                )
            }
        }
        return nil
    }

    // MARK: Pulling receipts

    /// The most bytes a whole answer to a pull may take, measured as a frame: the frame size limit,
    /// less room for the varint fields (`next_seq`, `finished`, the answer's tag and length) added
    /// after counting.
    private var measuredAnswerRoom: Int { configuration.codec.effectiveMaxFrameSize - 64 }

    /// Answers a `ReadReceiptRequest` (Tencent getMessageReadReceipts) with a `ReceiptBatch`: for
    /// each message, which must be one the user sent and the relay keeps, a read receipt with
    /// whether the peer read it (one-to-one: a read receipt, or its read horizon past the message)
    /// or the group's read and unread counts (messages sent with `MESSAGE_FLAG_NEED_READ_RECEIPT`).
    func sendReadReceipts(_ request: ReadReceiptRequest, requestID: UInt64, session: Session, user: String) {
        let badRequest = RelayProtocol.RequestError.badRequest
        guard request.messages.count <= Self.maxReceiptRequestMessages else {
            refuse(
                session,
                requestID,
                badRequest,
                notice: "badRequest",
                "a read receipt request names at most \(Self.maxReceiptRequestMessages) messages"
            )
            return
        }
        var batch = ReceiptBatch()
        for ref in request.messages {
            guard let (key, seq) = ownKeptMessage(ref, session: session, requestID: requestID, user: user) else {
                return
            }
            var receipt = MessageReceipt.with {
                $0.kind = .read
                $0.message = fullReference(seq, in: key)
                $0.timeMs = nowMs()
            }
            let readers = countedReaders(of: seq, in: key)
            switch key {
            case .direct(let a, let b):
                let peer = a == user ? b : a
                receipt.userID = peer
                // A message the peer never got (held back by its block) is not read, whatever its horizon.
                receipt.isPeerRead =
                    conversations[key]?.wasSent(seq, to: peer) != false
                    && (readers?.contains(peer) == true || (userConversations[peer]?[key]?.info.readSeq ?? 0) >= seq)
            case .shared(_, let target, _):
                receipt.groupID = target
                if let counts = readers?.counts {
                    receipt.readCount = UInt64(counts.read)
                    receipt.unreadCount = UInt64(counts.unread)
                }
            }
            batch.receipts.append(receipt)
        }
        let answer = RelayProtocol.answer(.receipts(batch), requestID: requestID)
        // The answer names each message fully: it must fit the frame size limit.
        let size = answer.serializedBytes().count
        guard size <= measuredAnswerRoom else {
            refuse(
                session,
                requestID,
                RelayProtocol.RequestError.tooLargeToDeliver,
                notice: "tooLargeToDeliver",
                "the receipts of these messages would be \(size) bytes; the relay answers with frames of at most "
                    + "\(measuredAnswerRoom): ask for fewer messages"
            )
            return
        }
        self.answer(answer, to: session)
    }

    /// Answers a `GroupReadMembersRequest` (Tencent getGroupMessageReadMemberList) with one page of
    /// the members who read (in the order they read) or did not read (by user id) a group message
    /// the user sent with `MESSAGE_FLAG_NEED_READ_RECEIPT`; `next_seq` is where the next page starts,
    /// and no member who reads between two pages is skipped or listed twice.
    func sendReadMembers(_ request: GroupReadMembersRequest, requestID: UInt64, session: Session, user: String) {
        guard let ref = request.message,
            let (key, seq) = ownKeptMessage(ref, session: session, requestID: requestID, user: user)
        else {
            if request.message == nil {
                refuse(
                    session,
                    requestID,
                    RelayProtocol.RequestError.badRequest,
                    notice: "badRequest",
                    "a read members request names its message"
                )
            }
            return
        }
        guard case .shared = key, let readers = messageReaders[key]?[seq] else {
            refuse(
                session,
                requestID,
                RelayProtocol.RequestError.badRequest,
                notice: "badRequest",
                "message seq \(seq) is not a group message sent with MESSAGE_FLAG_NEED_READ_RECEIPT"
            )
            return
        }
        // `next_seq` is a position in a list that reads do not reorder: the readers in the order
        // they read (it only grows), or every receiver by user id (a member who reads between two
        // pages stays where it was). A page lists the ones of its filter from there.
        let audience = receivers(of: seq, in: key)
        let read = request.filter != .unread
        let candidates: [String]
        let listed: Set<String>
        if read {
            candidates = readers.order
            listed = Set(audience)
        } else {
            candidates = audience.sorted()
            listed = Set(audience).filter { !readers.contains($0) }
        }
        var position = min(Int(clamping: request.nextSeq), candidates.count)
        let count = request.count == 0 ? Self.maxReadMembersPage : min(Int(request.count), Self.maxReadMembersPage)
        var answer = GroupReadMembers.with {
            $0.message = fullReference(seq, in: key)
            $0.read = read
        }
        // Within the frame size limit: each member takes its id twice, with tags and lengths.
        var left =
            measuredAnswerRoom
            - RelayProtocol.answer(.groupReadMembers(answer), requestID: requestID).serializedBytes().count
        while position < candidates.count {
            let member = candidates[position]
            if listed.contains(member) {
                left -= 2 * member.utf8.count + 16
                if answer.memberIDs.count == count || (left < 0 && !answer.memberIDs.isEmpty) { break }
                answer.memberIDs.append(member)
                answer.members.append(GroupMemberInfo.with { $0.userID = member })
            }
            position += 1
        }
        answer.finished = position == candidates.count
        answer.nextSeq = answer.finished ? 0 : UInt64(position)
        self.answer(RelayProtocol.answer(.groupReadMembers(answer), requestID: requestID), to: session)
    }

    /// The kept message `ref` names, when `user` sent it; refuses the request otherwise (3003: a
    /// reference that names no conversation of the user's or no kept message; 3006: another user's).
    private func ownKeptMessage(
        _ ref: MessageRef,
        session: Session,
        requestID: UInt64,
        user: String
    ) -> (ConversationKey, UInt64)? {
        guard let key = conversationKey(of: ref, user: user), isMember(user, key),
            case .kept(let seq)? = conversations[key]?.resolve(ref),
            !(conversations[key]?.removed.contains(seq) ?? true), !hasExpired(seq, in: key, at: nowMs())
        else {
            refuse(
                session,
                requestID,
                RelayProtocol.RequestError.badRequest,
                notice: "badRequest",
                "the message reference names no message the relay keeps in a conversation of \(user)'s"
            )
            return nil
        }
        guard conversations[key]?.kept[seq]?.sender == user else {
            refuse(
                session,
                requestID,
                RelayProtocol.RequestError.notTheSender,
                notice: "notTheSender",
                "message seq \(seq) was sent by another user: its sender pulls its receipts"
            )
            return nil
        }
        return (key, seq)
    }

    /// The reference of kept message `seq` of `key` with every field: seq, ids, sender, time, and the
    /// conversation as its sender named it.
    func fullReference(_ seq: UInt64, in key: ConversationKey) -> MessageRef {
        let kept = conversations[key]?.kept[seq]
        return MessageRef.with {
            $0.seq = seq
            $0.serverMsgUID = kept?.serverMsgUID ?? ""
            $0.clientMsgID = kept?.clientMsgID ?? ""
            $0.senderID = kept?.sender ?? ""
            $0.serverTimeMs = kept?.serverTimeMs ?? 0
            $0.conversation = key.conversation(for: kept?.sender ?? "")
        }
    }
}
#endif
