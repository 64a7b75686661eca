#if Tools
import IMCodec
import IMCodecNIO
import NIOCore

/// Message extensions (events.proto ExtensionUpdate): keys set and removed after sending, each with
/// a version, on messages sent with MESSAGE_FLAG_SUPPORT_EXTENSION.
extension Router {
    /// Errors of extension requests (Tencent's codes where Tencent has one).
    enum ExtensionError {
        /// A key's version is not the one the client saw: another client changed it since
        /// (Tencent 23001). Nothing of the update is applied.
        static let versionConflict: Int32 = 23001
        /// The message was not sent with MESSAGE_FLAG_SUPPORT_EXTENSION, or the relay does not know it.
        static let notExtensible: Int32 = 3008
        /// The update would leave more keys on the message than ``ValidationLimits/maxExtensionKeys``.
        static let tooManyKeys: Int32 = 3009
    }

    /// The most keys, set or removed, one message's extension keeps: twice the keys it may hold at
    /// once. Before, removals of keys never set each kept an entry, without end.
    static let maxExtensionEntries = 2 * ValidationLimits().maxExtensionKeys

    /// A kept message sent with MESSAGE_FLAG_SUPPORT_EXTENSION starts its extension: its own
    /// `expansion` keys, each at version 1. Only in a one-to-one or group conversation: elsewhere no
    /// update could be applied (RongCloud; validate()'s `extensionNotAllowed`). Nor on a view-once
    /// message: its keys would be served again by every fetch and update (3008 for those).
    func startExtension(_ message: Message, seq: UInt64, in key: ConversationKey) {
        guard message.messageFlags.contains(.supportExtension), !message.viewOnce else { return }
        switch key {
        case .direct, .shared(.group, _, _): break
        case .shared: return
        }
        var entries: [String: ExtensionEntry] = [:]
        for (name, value) in message.expansion {
            entries[name] = ExtensionEntry.with {
                $0.key = name; $0.value = value; $0.version = 1
            }
        }
        setExtension(entries, of: seq, in: key)
    }

    private func setExtension(_ entries: [String: ExtensionEntry], of seq: UInt64, in key: ConversationKey) {
        extensions[key, default: [:]][seq] = entries
        let record = MessageExtension.with {
            $0.message = MessageRef.with { $0.seq = seq }
            $0.entries = entries.values.sorted { $0.key < $1.key }
        }
        store.batch.records[.messageExtension(key, seq: seq)] = record.serializedBytes()
    }

    /// The conversation a reference names, as `user` sees it: a one-to-one reference names the
    /// conversation as the message's sender did (by the receiver's id).
    func conversationKey(of ref: MessageRef, user: String) -> ConversationKey? {
        guard let conversation = ref.conversation else { return nil }
        if conversation.type == .oneToOne, conversation.targetID == user, !ref.senderID.isEmpty {
            return ConversationKey(.oneToOne, ref.senderID, user: user)
        }
        return ConversationKey(conversation, user: user)
    }

    // Long on purpose (about 90 lines): one update read top to bottom: checks (request, membership,
    // message, versions, key count), then applying, keeping and answering.
    /// Applies an extension update: every key's version must be the one the client saw, else the
    /// whole update is refused with 23001. The keys as they now are go into the kept copy, which
    /// every member's devices get.
    func updateExtension(_ frame: InboundFrame, from session: Session, user: String) {
        guard !isResentEvent(frame, from: session, user: user) else { return }
        guard var decoded = decoded(frame, session), case .extensionUpdate(var update)? = decoded.payload else {
            return
        }
        let requestID = decoded.requestID
        func refuse(_ code: Int32, _ notice: String, _ reason: String) {
            self.refuse(session, requestID, code, notice: notice, reason)
        }
        if let issue = decoded.validate().first {
            return refuse(RelayProtocol.RequestError.badRequest, "badRequest", issue.description)
        }
        guard let ref = update.message, let key = conversationKey(of: ref, user: user) else {
            return refuse(
                RelayProtocol.RequestError.badRequest,
                "badRequest",
                "an extension update names its message and the message's conversation"
            )
        }
        guard isMember(user, key) else {
            return refuse(RelayProtocol.RequestError.notAMember, "notAMember", "\(user) is not in that conversation")
        }
        // From a user the peer blocked: as its other one-to-one events (routeEvent).
        if case .direct(let a, let b) = key, a != b, hasBlocked(a == user ? b : a, user) {
            return answerBlockedSender(session, requestID, user: user)
        }
        let state = conversations[key] ?? ConversationState()
        // The message as receivers find it (ConversationState.resolve); they get the update with
        // the kept message's own reference, whatever fields the client named it by.
        guard case .kept(let seq) = state.resolve(ref), let kept = state.kept[seq] else {
            return refuse(
                RelayProtocol.RequestError.badRequest,
                "badRequest",
                "the message reference names no message the relay keeps, or its seq and ids disagree"
            )
        }
        var canonical = ref
        canonical.seq = seq
        canonical.serverMsgUID = kept.serverMsgUID
        canonical.senderID = kept.sender
        canonical.clientMsgID = kept.clientMsgID
        update.message = canonical
        if !state.wasSent(seq, to: user) {
            return refuse(RelayProtocol.RequestError.notAMember, "notAMember", "seq \(seq) was sent to others")
        }
        // Nor a message it cannot read (it joined after it, or cleared it): its keys are not its to
        // change, nor to learn of from the answers.
        guard reads(seq, in: key, user: user) else {
            return refuse(RelayProtocol.RequestError.notAMember, "notAMember", Self.unreadReason(seq, user: user))
        }
        if state.removed.contains(seq) || hasExpired(seq, in: key, at: nowMs()) {
            return refuse(RelayProtocol.RequestError.messageRemoved, "messageRemoved", "seq \(seq) was removed")
        }
        guard var entries = extensionKeys(of: seq, in: key) else {
            return refuse(
                ExtensionError.notExtensible,
                "notExtensible",
                "message seq \(seq) was not sent with MESSAGE_FLAG_SUPPORT_EXTENSION, or is view-once"
            )
        }
        for change in update.set + update.remove where change.version != (entries[change.key]?.version ?? 0) {
            return refuse(
                ExtensionError.versionConflict,
                "versionConflict",
                "key \(change.key) is at version \(entries[change.key]?.version ?? 0), not \(change.version)"
            )
        }
        var changed: [ExtensionEntry] = []
        let changes: [(ExtensionEntry, Bool)] = update.set.map { ($0, false) } + update.remove.map { ($0, true) }
        for (change, removes) in changes {
            // A key never set is removed already: no entry is kept for it (each would be kept with
            // the message for as long as the relay keeps it).
            if removes && entries[change.key] == nil { continue }
            let entry = ExtensionEntry.with {
                $0.key = change.key
                $0.value = removes ? "" : change.value
                $0.version = (entries[change.key]?.version ?? 0) + 1
                $0.removed = removes
            }
            entries[change.key] = entry
            changed.append(entry)
        }
        let live = entries.values.filter { !$0.removed }.count
        guard live <= ValidationLimits().maxExtensionKeys else {
            return refuse(ExtensionError.tooManyKeys, "tooManyKeys", "\(live) keys, above the limit")
        }
        // A removed key keeps its version (a later set goes on from it, so clients that keep the
        // newest version of a key take it): the keys a message ever had are bounded too.
        guard entries.count <= Self.maxExtensionEntries else {
            return refuse(
                ExtensionError.tooManyKeys,
                "tooManyKeys",
                "\(entries.count) keys set or removed on this message, above the limit \(Self.maxExtensionEntries)"
            )
        }
        // History and the conversation list serve the message with its keys (`expansion`): it must
        // still reach a device within the frame size limit.
        let size = servedSizeBound(of: seq, in: key, sentSize: kept.size, entries: entries)
        let room = deliveryRoom(in: key)
        guard size <= room else {
            return refuse(
                RelayProtocol.RequestError.tooLargeToDeliver,
                "tooLargeToDeliver",
                "the message with these keys could be \(size) bytes; the relay serves messages of at most \(room) "
                    + "(the frame size limit, less what it adds on delivery)"
            )
        }
        // Only removals of keys never set: nothing changes, nothing is kept or told.
        guard !changed.isEmpty else {
            if requestID != 0 { result(session, requestID) }
            return
        }
        var users = self.users(of: key)
        if let audience = state.audiences[seq] { users = users.filter { audience.contains($0) } }
        users = readers(of: seq, in: key, among: users, sender: user)
        // What it costs its sender's fan-out budget (Router+RateLimits): the users it reaches.
        guard
            spendFanOut(
                users.count,
                by: user,
                to: peerPairs(in: key, from: user),
                session: session,
                requestID: requestID
            )
        else { return }
        setExtension(entries, of: seq, in: key)
        update.entries = changed
        update.userID = user
        update.timeMs = RelayProtocol.nowMs()
        noteChange(of: seq, in: key, timeMs: update.timeMs)
        decoded.payload = .extensionUpdate(update)
        decoded.requestID = 0
        let stamped = decoded.serializedBytes()
        let device = DeviceKey(user: user, device: session.deviceID)
        remember(frame.body.readableBytesView, sentBy: device)
        let deliveries = keep(.event(stamped), for: users, origin: device, expireAtMs: state.expiries[seq] ?? 0)
        if requestID != 0 { result(session, requestID) }
        let body = ByteBuffer(bytes: stamped)
        store.afterCommit {
            self.deliver(body, kind: .extensionUpdate, to: deliveries, except: session)
            self.flush()
        }
    }

    /// The extension keys of kept message `seq` of `key` that updates change and fetches serve:
    /// none of a view-once message (whose keys a relay kept before such a message took none).
    func extensionKeys(of seq: UInt64, in key: ConversationKey) -> [String: ExtensionEntry]? {
        isViewOnce(seq, in: key) ? nil : extensions[key]?[seq]
    }

    /// Answers an extension fetch: the current keys of each requested message the user may read
    /// and the relay knows as extensible, in request order, as many as fit the frame size limit
    /// (the first is served whatever its size; a message's keys fit with the message,
    /// ``updateExtension(_:from:user:)``). A client asks again for those left out.
    func fetchExtensions(_ request: ExtensionFetchRequest, requestID: UInt64, session: Session, user: String) {
        var response = ExtensionFetchResponse()
        // Room for the answer's own fields (request id, tags and lengths), as a history page keeps.
        var left = answerRoom
        let nowMs = self.nowMs()
        for ref in request.messages.prefix(Int(RelayProtocol.maxSyncLimit)) {
            // The message as receivers find it (by server uid, else by sender and client id, else by seq).
            guard let key = conversationKey(of: ref, user: user), isMember(user, key),
                case .kept(let seq)? = conversations[key]?.resolve(ref),
                seq > view(of: key, for: user).info.clearedSeq, !isDeletedForMe(seq, in: key, by: user),
                let entries = extensionKeys(of: seq, in: key), !hasExpired(seq, in: key, at: nowMs)
            else { continue }
            if conversations[key]?.wasSent(seq, to: user) == false { continue }
            let served = MessageExtension.with {
                $0.message = ref
                $0.entries = entries.values.filter { !$0.removed }.sorted { $0.key < $1.key }
            }
            left -= served.serializedBytes().count + 6
            if left < 0, !response.extensions.isEmpty { break }
            response.extensions.append(served)
        }
        store.afterCommit {
            self.answer(RelayProtocol.answer(.extensionFetchResponse(response), requestID: requestID), to: session)
            self.flush()
        }
    }
}
#endif
