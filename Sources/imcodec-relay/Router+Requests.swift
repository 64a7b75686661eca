#if Tools
import IMCodec
import IMCodecNIO
import NIOCore

extension Router {
    // Long on purpose (over 80 lines): one case per request payload, each a few lines.
    /// The session layer's requests: ping, logout, max seq, sync by seq, stream sync and acks,
    /// presence and membership, key bundles, the conversation list, extensions, the blocklist and
    /// history pages.
    func request(_ frame: InboundFrame, from session: Session, user: String) {
        guard let decoded = decoded(frame, session), let payload = decoded.payload else { return }
        let requestID = decoded.requestID
        switch payload {
        case .loginRequest:
            metrics.loginFailed(code: RelayProtocol.LoginError.alreadyLoggedIn)
            answer(
                RelayProtocol.answer(
                    .loginResult(
                        LoginResult.with {
                            $0.errorCode = RelayProtocol.LoginError.alreadyLoggedIn
                            $0.errorDescription = RelayProtocol.described(
                                "alreadyLoggedIn: this connection is logged in as \(user)"
                            )
                            $0.serverTimeMs = RelayProtocol.nowMs()
                        }
                    ),
                    requestID: requestID
                ),
                to: session
            )
        case .ping(let ping):
            answer(
                RelayProtocol.answer(
                    .pong(
                        Pong.with {
                            $0.id = ping.id
                            $0.timeMs = RelayProtocol.nowMs()
                        }
                    ),
                    requestID: requestID
                ),
                to: session
            )
        case .logout:
            logger.info("\(session.label) logged out")
            unregister(session)
            store.afterCommit {
                guard !session.closing else { return }
                session.closing = true
                let answer = RelayProtocol.answer(
                    .requestResult(
                        RequestResult.with {
                            $0.serverTimeMs = RelayProtocol.nowMs()
                        }
                    ),
                    requestID: requestID
                )
                self.closeAfterWriting(answer, session, code: "logout", reason: "logged out")
            }
        case .maxSeqRequest(let request):
            var answer = MaxSeqResponse.with { $0.serverTimeMs = RelayProtocol.nowMs() }
            if request.conversations.isEmpty {
                (answer.maxSeqs, answer.truncated) = fittingMaxSeqs(
                    mostRecentFirst(of: user).lazy.map { self.maxSeq($0, for: user) }
                )
            } else {
                // A conversation the user may not read is answered with seq 0.
                let seqs = request.conversations.lazy.map { conversation in
                    if let key = ConversationKey(conversation, user: user), self.isMember(user, key) {
                        self.maxSeq(key, for: user)
                    } else {
                        ConversationSeq.with { $0.conversation = conversation }
                    }
                }
                (answer.maxSeqs, answer.truncated) = fittingMaxSeqs(seqs)
            }
            self.answer(RelayProtocol.answer(.maxSeqResponse(answer), requestID: requestID), to: session)
        case .syncRequest(let request):
            metrics.syncRequest(.syncRequest)
            sync(request, requestID: requestID, session: session, user: user)
        case .streamSyncRequest(let request):
            metrics.syncRequest(.streamSyncRequest)
            streamSync(request, requestID: requestID, session: session, user: user)
        case .streamAck(let ack):
            let device = DeviceKey(user: user, device: session.deviceID)
            let position = min(ack.position, streams[user]?.head ?? 0)
            if position > devicePositions[device] ?? 0 {
                devicePositions[device] = position
                store.batch.devicePositions[device] = position
            }
            if requestID != 0 { result(session, requestID) }
        case .presenceSubscription(let subscription):
            subscribe(subscription, requestID: requestID, session: session, user: user)
        case .presence(let update):
            // A client sets its own status (e.g. AWAY): its subscribers are told.
            var update = update
            update.userID = user
            update.deviceID = session.deviceID
            update.platform = session.platform
            update.timeMs = RelayProtocol.nowMs()
            // What the subscribers get, with the relay's fields, must fit the frame size limit: else
            // each of them lost its connection at each update.
            let told = Frame(.presence(update))
            let size = told.serializedBytes().count
            guard size <= configuration.codec.effectiveMaxFrameSize else {
                return refuse(
                    session,
                    requestID,
                    RelayProtocol.RequestError.tooLargeToDeliver,
                    notice: "tooLargeToDeliver",
                    "the presence update would reach its subscribers as \(size) bytes, past the frame size limit "
                        + "\(configuration.codec.effectiveMaxFrameSize)"
                )
            }
            guard liveUpdateBudgets.take(1, by: user, atMs: session.lastHeardMs) else {
                return refuse(
                    session,
                    requestID,
                    RelayProtocol.RequestError.tooFrequent,
                    notice: "tooFrequent",
                    "tooFrequent: the user sent more typing and status updates than "
                        + "\(configuration.liveUpdateRate) a second (--live-update-rate)"
                )
            }
            var buffer = allocator.buffer(capacity: size + 8)
            buffer.writeFrame(told)
            for subscriber in subscribers[user] ?? [] where !hasBlocked(user, subscriber) {
                for other in sessions[subscriber] ?? [] { write(buffer, kind: .presence, to: other) }
            }
            if requestID != 0 { result(session, requestID) }
        case .membership(let change):
            membership(change, requestID: requestID, session: session, user: user)
        case .keyPublish(let publish):
            publishKeys(publish, requestID: requestID, session: session, user: user)
        case .conversationListRequest(let request):
            listConversations(request, requestID: requestID, session: session, user: user)
        case .extensionFetchRequest(let request):
            fetchExtensions(request, requestID: requestID, session: session, user: user)
        case .blocklistRequest:
            sendBlocklist(requestID: requestID, session: session, user: user)
        case .readReceiptRequest(let request):
            sendReadReceipts(request, requestID: requestID, session: session, user: user)
        case .groupReadMembersRequest(let request):
            sendReadMembers(request, requestID: requestID, session: session, user: user)
        case .historyRequest(let request):
            history(request, requestID: requestID, session: session, user: user)
        case .keyFetchRequest(let request):
            fetchKeys(request, requestID: requestID, session: session, user: user)
        default:
            break
        }
    }

    /// Stores a device's key bundle of one kind, replacing the one it published before. The bundle
    /// is the session's own: its user and device are set from the session, whatever the frame said.
    private func publishKeys(_ publish: KeyPublish, requestID: UInt64, session: Session, user: String) {
        // A kind the schema names: each kind is kept apart, per device, so a kind made up (any
        // int32) would be one more bundle kept without bound.
        guard var bundle = publish.bundle, bundle.kind != .unspecified, KeyBundleKind.allCases.contains(bundle.kind),
            !bundle.bundle.isEmpty
        else {
            refuse(
                session,
                requestID,
                RelayProtocol.RequestError.badRequest,
                notice: "badRequest",
                "a key publish holds a bundle of a known kind"
            )
            return
        }
        // The session's own device only: a session without one cannot speak for another device.
        let device = session.deviceID
        guard !device.isEmpty else {
            refuse(
                session,
                requestID,
                RelayProtocol.RequestError.badRequest,
                notice: "badRequest",
                "keys are published per device: log in with a device id"
            )
            return
        }
        bundle.userID = user
        bundle.deviceID = device
        bundle.publishedAtMs = RelayProtocol.nowMs()
        // A fetch of every device's bundle of this kind, this one included, must fit one frame, or
        // the user's contacts could not read it (each lost its connection at each fetch): room for
        // the answer's own fields and the user's id, as a history page keeps.
        let served = (keyBundles[user] ?? [:]).reduce(bundle.largestHandedOutSize) { total, other in
            guard other.key != device, let kept = other.value[bundle.kind] else { return total }
            return total + kept.largestHandedOutSize
        }
        let room = keyFetchRoom(for: user)
        guard served <= room else {
            refuse(
                session,
                requestID,
                RelayProtocol.RequestError.tooLargeToDeliver,
                notice: "tooLargeToDeliver",
                "\(user)'s bundles of this kind would take \(served) bytes in a key_fetch_response, which "
                    + "carries at most \(room)"
            )
            return
        }
        keyBundles[user, default: [:]][device, default: [:]][bundle.kind] = bundle
        keepKeyBundle(bundle, of: DeviceKey(user: user, device: device))
        // Answered once committed (as every answer is): a relay that said it took a bundle keeps it.
        if requestID != 0 { result(session, requestID) }
    }

    /// Adds a device's key bundle, as it now is, to the store's next batch.
    private func keepKeyBundle(_ bundle: KeyBundle, of device: DeviceKey) {
        store.batch.keyBundles.append(
            StoredKeyBundle(device: device, kind: Int32(bundle.kind.rawValue), bytes: bundle.serializedBytes())
        )
    }

    /// Answers a key fetch with the bundles of the user's devices (those named, or all), each with
    /// at most one one-time key, which is deleted from the stored bundle (Signal's prekey rule), within
    /// the requesting user's budget for the owner's one-time keys (`--key-fetch-rate`).
    private func fetchKeys(_ request: KeyFetchRequest, requestID: UInt64, session: Session, user requester: String) {
        var answer = KeyFetchResponse.with { $0.userID = request.userID }
        func reply() { self.answer(RelayProtocol.answer(.keyFetchResponse(answer), requestID: requestID), to: session) }
        let named = Set(request.deviceIDs)
        let user = request.userID
        // No user has an id the relay refuses (RelayProtocol.isAcceptedID): it has no keys. The
        // tables compare by canonical equivalence and the store by bytes, so a decomposed id would
        // have handed out the NFC user's one-time keys, deleted under another id's rows.
        let bundles = RelayProtocol.isAcceptedID(user) ? keyBundles[user] ?? [:] : [:]
        let kept = bundles.filter { named.isEmpty || named.contains($0.key) }
            .compactMap { device, kinds in kinds[request.kind].map { (device: device, bundle: $0) } }
            .sorted { $0.device < $1.device }
        // What a publish let in fits (publishKeys); bundles kept under a larger --max-frame-size may
        // not, and are left out rather than make an answer no device can read.
        let (served, cut) = Self.fitting(kept, room: keyFetchRoom(for: user)) {
            $0.bundle.handedOut.serializedBytes().count + 6
        }
        if cut { logger.warning("the key bundles of \(user) pass the frame size limit: a fetch left some out") }
        // The one-time keys it would hand out, from the requester's budget for this owner: past it
        // nothing is handed out or deleted.
        let oneTimeKeys = served.count { !$0.bundle.oneTimeKeys.isEmpty }
        let pair = UserPair(from: requester, to: user)
        if oneTimeKeys > 0, !keyFetchBudgets.take(oneTimeKeys, by: pair, atMs: session.lastHeardMs) {
            answer.errorCode = RelayProtocol.RequestError.tooFrequent
            answer.errorDescription = keyFetchRefusal
            return reply()
        }
        for (device, stored) in served {
            answer.bundles.append(stored.handedOut)
            guard !stored.oneTimeKeys.isEmpty else { continue }
            var rest = stored
            rest.oneTimeKeys.removeFirst()
            keyBundles[user]?[device]?[request.kind] = rest
            keepKeyBundle(rest, of: DeviceKey(user: user, device: device))
        }
        if answer.bundles.isEmpty {
            answer.errorCode = RelayProtocol.RequestError.noKeys
            // The answer names the user already: an id near the frame size limit must not be there twice.
            answer.errorDescription = "noKeys: the user has published no keys of that kind"
        }
        // Answered once committed (as every answer is): a one-time key handed out is gone from the
        // store first, so no restart hands it out again.
        reply()
    }

    /// Answers a sync request from the kept messages (``RelayConfiguration/maxMessagesPerConversation``),
    /// up to the conversation's newest seq when it was asked.
    private func sync(_ request: SyncRequest, requestID: UInt64, session: Session, user: String) {
        var answer = SyncResponse.with { $0.conversation = request.conversation ?? Conversation() }
        func reply() { self.answer(RelayProtocol.answer(.syncResponse(answer), requestID: requestID), to: session) }
        guard let conversation = request.conversation, let key = ConversationKey(conversation, user: user) else {
            answer.errorCode = RelayProtocol.RequestError.unsupportedConversation
            answer.errorDescription = "not a conversation the relay keeps"
            return reply()
        }
        guard isMember(user, key) else {
            answer.errorCode = RelayProtocol.RequestError.notAMember
            // The answer names the conversation already: an id near the frame size limit must not be
            // there twice.
            answer.errorDescription = "not a member of this conversation"
            return reply()
        }
        let state = conversations[key] ?? ConversationState()
        answer.maxSeq = state.maxSeq
        let limit = Int(
            request.limit == 0 ? RelayProtocol.maxSyncLimit : min(request.limit, RelayProtocol.maxSyncLimit)
        )
        let last = request.toSeq == 0 ? state.maxSeq : min(request.toSeq, state.maxSeq)
        // Below the oldest kept message: from the oldest kept one; nothing the user cleared.
        let first = max(request.fromSeq, state.oldestSeq, firstUnclearedSeq(of: key, for: user))
        guard first <= last else {
            answer.nextFromSeq = max(first, last + 1)
            return reply()
        }
        // The answer must fit the frame size limit: a message takes at most its stamped frame's
        // size, plus its tag and length (6) and the direction and is_offline set here (5), less the
        // stamp's own tag and length (2); the rest waits for the next page.
        let budget = answerRoom - conversation.serializedBytes().count
        // A page reads at most 1,000 seqs and twice a frame's worth of frames (Router+History).
        let read = readLimit(in: key, from: first, toward: last)
        self.read(
            for: session,
            requestID: requestID,
            busy: { code, reason in
                answer.errorCode = code
                answer.errorDescription = reason
                reply()
            },
            { store in
                try store.messages(in: key, from: first, through: read, limit: limit, visibleTo: user)
            }
        ) { messages in
            var left = budget
            // A full page ends at its last message; a short one covers the whole range read.
            var end = messages.count == limit ? messages.last!.seq : read
            let nowMs = self.nowMs()
            let removed = self.conversations[key]?.removed ?? []
            let deleted = self.deletedForMe[user]?[key] ?? []
            // Not one retention dropped while the store read it (what the user deleted for itself
            // is kept only above it).
            let oldest = self.conversations[key]?.oldestSeq ?? 0
            // Not an expired message, nor a removed one (the store erased its frame too), nor one the
            // user deleted for itself.
            for message in messages
            where !Expiry.passed(message.expireAtMs, at: nowMs) && !removed.contains(message.seq)
                && !deleted.contains(message.seq) && message.seq >= oldest
            {
                left -= message.frame.count + 9
                if left < 0, !answer.messages.isEmpty {
                    end = message.seq - 1
                    break
                }
                // The frames were decoded once when they arrived; decoding them again cannot fail.
                if let frame = try? self.wireDecoder.decode(Frame.self, from: message.frame),
                    case .message(var decoded)? = frame.payload
                {
                    // As delivered live: SENT on the sender's devices, RECEIVED elsewhere; and to a
                    // receiver, delivered offline (message.proto is_offline).
                    let received = message.senderID != user
                    decoded.direction = received ? .received : .sent
                    decoded.isOffline = received
                    if received, decoded.viewOnce { decoded = Redaction.viewedOnce(decoded) }
                    answer.messages.append(decoded)
                }
            }
            answer.hasMore = end < last
            answer.nextFromSeq = end + 1
            reply()
        }
    }

    /// Answers a stream sync request: the user's kept frames after `after_position`, up to the
    /// stream's head when it was asked; the last page makes a resuming session live.
    private func streamSync(_ request: StreamSyncRequest, requestID: UInt64, session: Session, user: String) {
        let stream = streams[user] ?? StreamState()
        let head = stream.head
        let after = min(request.afterPosition, head)
        let limit = Int(
            request.limit == 0 ? RelayProtocol.maxSyncLimit : min(request.limit, RelayProtocol.maxSyncLimit)
        )
        let budget = answerRoom
        let device = session.deviceID
        // What this device acknowledged it had, or where its stream began: a view-once message it
        // reads again, or that was kept before the device first logged in, comes without its content.
        let acknowledged = viewedOncePosition(of: DeviceKey(user: user, device: device))
        read(
            for: session,
            requestID: requestID,
            busy: { code, reason in
                let refused = StreamSyncResponse.with {
                    $0.headPosition = head; $0.errorCode = code; $0.errorDescription = reason
                }
                self.answer(RelayProtocol.answer(.streamSyncResponse(refused), requestID: requestID), to: session)
            },
            { store in
                after < head ? try store.stream(of: user, after: after, through: head, limit: limit) : []
            }
        ) { rows in
            // Positions are consecutive, so a first row past `after + 1` (or none before the head)
            // means retention dropped what lay between. Decided from the rows read, not when the
            // request came: the commit before this read may have held retention of the very
            // positions after `after` (frames kept for the user meanwhile), and a device told
            // nothing was cut would go live past them.
            let truncated = after < head && (rows.first?.position ?? head + 1) > after + 1
            var answer = StreamSyncResponse.with {
                $0.headPosition = head
                $0.truncated = truncated
            }
            var left = budget
            var end = rows.count == limit ? rows.last!.position : head
            let nowMs = self.nowMs()
            for row in rows {
                if row.originDevice == device {
                    continue  // This device sent it; its ack answered it.
                }
                // A message dropped by retention, or a disappearing message (or an event about one)
                // that expired.
                guard !row.frame.isEmpty, !Expiry.passed(row.expireAtMs, at: nowMs) else { continue }
                var bytes = row.frame
                if row.isMessage, !row.sent, row.position <= acknowledged { bytes = self.viewedOnce(bytes) }
                if row.isMessage { bytes += row.sent ? self.sentSuffix : self.receivedOfflineSuffix }
                bytes += Self.noRequestSuffix
                bytes += Self.positionSuffix(row.position)
                left -= bytes.count + 16
                if left < 0, !answer.frames.isEmpty {
                    end = row.position - 1
                    break
                }
                answer.frames.append(
                    StreamFrame.with {
                        $0.position = row.position
                        $0.frame = bytes
                    }
                )
            }
            answer.nextAfterPosition = end
            answer.hasMore = end < head
            self.write(RelayProtocol.answer(.streamSyncResponse(answer), requestID: requestID), to: session)
            if !answer.hasMore, !session.live {
                // Caught up: every kept frame after `head` is committed after this answer, so it is written live.
                session.live = true
                self.logger.debug("\(session.label) caught up with its stream at \(head)")
            }
            self.flush()
        }
    }

    /// The most users one user may watch the presence of. Without a bound, 100 more a request, the
    /// subscriptions of one connection (to any id, for as long as the relay runs) grew without end.
    static let maxWatchedUsers = 1_000

    private func subscribe(_ subscription: PresenceSubscription, requestID: UInt64, session: Session, user: String) {
        switch subscription.action {
        case .subscribe:
            // No user has a longer id: each would be kept, up to the frame size limit, for nothing.
            guard subscription.userIDs.allSatisfy(RelayProtocol.isAcceptedID) else {
                return refuse(
                    session,
                    requestID,
                    RelayProtocol.RequestError.badRequest,
                    notice: "badRequest",
                    "a subscribed user's id is refused: \(RelayProtocol.idReason)"
                )
            }
            let watched = watching[user] ?? []
            let added = Set(subscription.userIDs.filter { !$0.isEmpty }).subtracting(watched)
            guard watched.count + added.count <= Self.maxWatchedUsers else {
                return refuse(
                    session,
                    requestID,
                    RelayProtocol.RequestError.listFull,
                    notice: "listFull",
                    "would watch \(watched.count + added.count) users' presence; at most \(Self.maxWatchedUsers): "
                        + "unsubscribe from some first"
                )
            }
            result(session, requestID)
            if !added.isEmpty { watching[user, default: []].formUnion(added) }
            // Each user once, however often the list names it (a list of one id repeated was
            // answered with a presence per listing: a frame of a few bytes for each id's bytes).
            var told = Set<String>()
            for watched in subscription.userIDs where !watched.isEmpty && told.insert(watched).inserted {
                subscribers[watched, default: []].insert(user)
                answer(Frame(.presence(presence(of: watched, to: user))), to: session)
            }
        case .unsubscribe:
            for watched in subscription.userIDs {
                subscribers[watched]?.remove(user)
                if subscribers[watched]?.isEmpty == true { subscribers[watched] = nil }
                watching[user]?.remove(watched)
            }
            if watching[user]?.isEmpty == true { watching[user] = nil }
            result(session, requestID)
        default:
            refuse(
                session,
                requestID,
                RelayProtocol.RequestError.badRequest,
                notice: "badRequest",
                "a presence_subscription must subscribe or unsubscribe"
            )
        }
    }

    /// Whether the groups file names `user` as a member of `key` (it reads everything kept, and it
    /// alone may join such a group).
    private func isFoundingMember(_ user: String, of key: ConversationKey) -> Bool {
        guard case .shared(.group, let group, _) = key else { return false }
        return configuration.groups[group]?.contains(user) == true
    }

    /// A new member reads from its join on: what the conversation kept before is hidden from its
    /// history, sync by seq, extension fetches, the events about it and list entry, as a clear of
    /// its history up to the newest seq hides it (ConversationInfo.cleared_seq, kept at `position`).
    private func joined(_ key: ConversationKey, user: String, position: UInt64) {
        let newest = conversations[key]?.maxSeq ?? 0
        var view = view(of: key, for: user)
        guard newest > view.info.clearedSeq else { return }
        view.info.clearedSeq = newest
        view.info.maxSeq = max(view.info.maxSeq, newest)
        view.read(upTo: newest)
        if view.lastSeq <= newest { view.lastSeq = 0 }
        setView(view, of: key, for: user, version: position)
    }

    private func membership(_ change: MembershipChange, requestID: UInt64, session: Session, user: String) {
        guard let conversation = change.conversation, change.action != .unspecified else {
            refuse(
                session,
                requestID,
                RelayProtocol.RequestError.badRequest,
                notice: "badRequest",
                "a membership change needs an action and a conversation"
            )
            return
        }
        guard let key = ConversationKey(conversation, user: user), key.isShared else {
            refuse(
                session,
                requestID,
                RelayProtocol.RequestError.unsupportedConversation,
                notice: "unsupported",
                ConversationKey.namesRefusedID(
                    conversation.type,
                    conversation.targetID,
                    channelID: conversation.channelID
                )
                    ? RelayProtocol.idReason
                    : "only groups, chatrooms and ultra-group channels are joined and left"
            )
            return
        }
        // A group of the groups file is closed: the file says who is in it.
        if change.action == .join, case .shared(.group, let group, _) = key, configuration.groups[group] != nil,
            !isFoundingMember(user, of: key)
        {
            refuse(
                session,
                requestID,
                RelayProtocol.RequestError.notAMember,
                notice: "notAMember",
                "\(group) is a closed group: the relay's groups file names its members"
            )
            return
        }
        let joining = change.action == .join && !(members[key]?.contains(user) ?? false)
        if joining {
            let joined = (belongs[user] ?? []).lazy.filter(\.isShared).count
            guard joined < configuration.maxJoinedConversations else {
                refuse(
                    session,
                    requestID,
                    RelayProtocol.RequestError.listFull,
                    notice: "listFull",
                    "in \(joined) groups, chatrooms and channels already; a user joins at most "
                        + "\(configuration.maxJoinedConversations): leave one first"
                )
                return
            }
        }
        var told = change
        told.conversation = key.conversation(for: user)
        told.userID = user
        told.timeMs = RelayProtocol.nowMs()
        // Kept for every member with the relay's fields: it must leave the delivery reserve, as every
        // kept frame does (before, a join with a long group id reached the others past the limit).
        // A join that does not fit is refused; a leave never is: it is applied and told to no one.
        let body = ByteBuffer(bytes: Frame(.membership(told)).serializedBytes())
        let fits = body.readableBytes <= deliveryRoom(in: key)
        if joining, !fits {
            refuse(
                session,
                requestID,
                RelayProtocol.RequestError.tooLargeToDeliver,
                notice: "tooLargeToDeliver",
                "the membership change would be \(body.readableBytes) bytes; the relay keeps frames of at most "
                    + "\(deliveryRoom(in: key)) in this conversation"
            )
            return
        }
        // A join costs one of the joiner's joins and its fan-out budget the members it reaches
        // (Router+RateLimits); a leave is never refused (and a loop of joins and leaves stops at the joins).
        if joining, !spendJoin(fanOut: fanOutCost(in: key) + 1, by: user, session: session, requestID: requestID) {
            return
        }
        let changed: Bool
        let reached: [String]
        if change.action == .join {
            changed = members[key, default: []].insert(user).inserted
            belongs[user, default: []].insert(key)
            reached = users(of: key)
        } else {
            reached = users(of: key)
            changed = removeMember(user, from: key)
        }
        logger.info("\(user) \(change.action == .join ? "joined" : "left") \(conversation.targetID)")
        guard changed else {
            result(session, requestID)
            return
        }
        if change.action == .join {
            store.batch.memberships.append((key, user, true))
            audienceChanged(key)
            noteJoin(of: key, by: user)
        }
        guard fits else {
            result(session, requestID)
            return
        }
        // Every member (and, for a leave, the one who left, on its other devices) keeps the change.
        let deliveries = keep(
            .event(Array(buffer: body)),
            for: reached,
            origin: DeviceKey(user: user, device: session.deviceID)
        )
        if change.action == .join, !isFoundingMember(user, of: key),
            let own = deliveries.first(where: { $0.user == user })
        {
            joined(key, user: user, position: own.position)
        }
        result(session, requestID)
        store.afterCommit {
            self.deliver(body, kind: .membership, to: deliveries, except: session)
            self.flush()
        }
    }
}

extension Router {
    /// The bytes of bundles one `key_fetch_response` for `user` carries: the frame size limit less
    /// 512 bytes for the answer's other fields (as a history page keeps) and the user's id.
    func keyFetchRoom(for user: String) -> Int {
        answerRoom - user.utf8.count
    }
}

extension KeyBundle {
    /// The bundle as a fetch hands it out: with at most one of its one-time keys (Signal's prekey
    /// rule; the relay then deletes that key).
    var handedOut: KeyBundle {
        var handed = self
        handed.oneTimeKeys = Array(oneTimeKeys.prefix(1))
        return handed
    }

    /// The most bytes the bundle takes in a fetch answer (with its tag and length), whichever of its
    /// one-time keys it hands out: each fetch hands out the next, and a later one may be larger.
    var largestHandedOutSize: Int {
        var largest = self
        largest.oneTimeKeys = oneTimeKeys.max { $0.key.count < $1.key.count }.map { [$0] } ?? []
        return largest.serializedBytes().count + 6
    }
}
#endif
