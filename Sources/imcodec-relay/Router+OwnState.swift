#if Tools
import IMCodec
import IMCodecNIO
import NIOCore

/// What a user sets for itself and shares with its own devices: its view of a conversation
/// (`ConversationUpdate`, `ReceiveOptionChange`) and its blocklist (`BlocklistChange`).
extension Router {
    /// What the sender of a one-to-one message to a user who blocked it is told (Tencent's two
    /// behaviours, `serve --blocked-senders`).
    enum BlockedSenders: String, Sendable, CaseIterable {
        /// "Sent successfully": the message is kept for the sender only and reaches no device of the
        /// blocking user (Tencent's default).
        case silent
        /// The send ack carries error 20007 (Tencent: "blocked by the peer") and nothing is kept.
        case error
    }

    /// Tencent's error for a message to a user who blocked its sender.
    static let blockedByPeer: Int32 = 20007

    /// Answers a frame `user` sent to someone who blocked it (`serve --blocked-senders`): a success
    /// that delivers nothing, or 20007. For what is not a message (a message gets its `send_ack`).
    func answerBlockedSender(_ session: Session, _ requestID: UInt64, user: String) {
        guard configuration.blockedSenders == .silent else {
            return refuse(
                session,
                requestID,
                Self.blockedByPeer,
                notice: "blocked",
                "blocked: the receiver blocked \(user)"
            )
        }
        if requestID != 0 { result(session, requestID) }
    }

    /// Whether `peer` blocked `user`.
    func hasBlocked(_ peer: String, _ user: String) -> Bool {
        blocked[peer]?.contains(user) ?? false
    }

    /// `peer`'s read horizon in one-to-one conversation `key` as `user` (the other member) is shown
    /// it in its conversation list: while `peer` blocks `user`, below the first of `user`'s messages
    /// it held back (and did not recall since), so that the read marks show no message `peer` never
    /// got as read (a `mark_read` moves a horizon up to the newest seq, over the held-back
    /// messages' seqs) and tell `user` nothing the block hides. After an unblock, the horizon as it
    /// is (it may pass a held-back message; a read receipt pull still says that one is unread).
    func shownReadSeq(of peer: String, in key: ConversationKey, to user: String) -> UInt64 {
        let readSeq = userConversations[peer]?[key]?.info.readSeq ?? 0
        guard readSeq > 0, hasBlocked(peer, user), let state = conversations[key] else { return readSeq }
        var shown = readSeq
        for seq in state.audiences.keys where seq <= shown && !state.wasSent(seq, to: peer) {
            guard !state.removed.contains(seq) else { continue }
            shown = seq - 1
        }
        return shown
    }

    /// Applies a conversation update, a receive option change or a blocklist change: checked with
    /// `validate()`, stamped with the user and the server's time, kept in the user's own stream,
    /// answered once committed and sent to the user's other devices.
    func changeOwnState(_ frame: InboundFrame, from session: Session, user: String) {
        guard !isResentEvent(frame, from: session, user: user) else { return }
        guard var decoded = decoded(frame, session), let payload = decoded.payload else { return }
        let requestID = decoded.requestID
        func refuse(_ code: Int32, _ notice: String, _ reason: String) {
            self.refuse(session, requestID, code, notice: notice, reason)
        }
        if let issue = decoded.validate().first {
            return refuse(RelayProtocol.RequestError.badRequest, "badRequest", issue.description)
        }
        let now = RelayProtocol.nowMs()
        switch payload {
        case .conversationUpdate(var update):
            guard mayKeepView(of: update.conversation, user: user) else {
                return refuse(RelayProtocol.RequestError.notAMember, "notAMember", "not a conversation of \(user)")
            }
            if let full = startRefusal(of: update.conversation, user: user) {
                return refuse(RelayProtocol.RequestError.listFull, "listFull", full)
            }
            if update.fields & UInt32(ConversationField.draft.rawValue) != 0, let conversation = update.conversation,
                !draftFits(update.draftText, in: conversation, user: user)
            {
                return refuse(
                    RelayProtocol.RequestError.tooLargeToDeliver,
                    "tooLargeToDeliver",
                    "a draft of \(update.draftText.utf8.count) bytes leaves no room for the rest of the "
                        + "conversation's list entry within the frame size limit"
                )
            }
            // Never above the newest seq (as a mark-read): a clear of seqs still to come would hide
            // them when they come. The user's devices get the clear as kept. Before, the largest
            // seq made the user's next sync or history of the conversation overflow and stop the
            // relay, again after every restart.
            if update.fields & UInt32(ConversationField.clearedSeq.rawValue) != 0,
                let conversation = update.conversation,
                let key = ConversationKey(conversation, user: user)
            {
                update.clearedSeq = min(update.clearedSeq, newestSeq(of: key, for: user))
            }
            update.userID = user
            update.timeMs = now
            decoded.payload = .conversationUpdate(update)
        case .receiveOption(var change):
            guard mayKeepView(of: change.conversation, user: user) else {
                return refuse(RelayProtocol.RequestError.notAMember, "notAMember", "not a conversation of \(user)")
            }
            if let full = startRefusal(of: change.conversation, user: user) {
                return refuse(RelayProtocol.RequestError.listFull, "listFull", full)
            }
            change.userID = user
            change.timeMs = now
            decoded.payload = .receiveOption(change)
        case .blocklistChange(var change):
            guard !change.userIDs.contains(user) else {
                return refuse(RelayProtocol.RequestError.badRequest, "badRequest", "a user cannot block itself")
            }
            guard change.action != .block || change.userIDs.allSatisfy(RelayProtocol.isAcceptedID) else {
                return refuse(
                    RelayProtocol.RequestError.badRequest,
                    "badRequest",
                    "a blocked user's id is refused: \(RelayProtocol.idReason)"
                )
            }
            if change.action == .block, let full = blocklistFull(after: change, of: user) {
                return refuse(RelayProtocol.RequestError.listFull, "listFull", full)
            }
            change.userID = user
            change.timeMs = now
            decoded.payload = .blocklistChange(change)
        default:
            return
        }
        decoded.requestID = 0
        let device = DeviceKey(user: user, device: session.deviceID)
        remember(frame.body.readableBytesView, sentBy: device)
        let stamped = decoded.serializedBytes()
        let deliveries = keep(.event(stamped), for: [user], origin: device)
        let position = deliveries.first?.position ?? 0
        if case .blocklistChange(let change)? = decoded.payload {
            applyBlocklist(change, of: user)
        } else {
            conversationChanged(decoded.payload!, by: user, position: position)
        }
        if requestID != 0 { result(session, requestID) }
        let body = ByteBuffer(bytes: stamped)
        let kind = frame.payloadKind
        store.afterCommit {
            self.deliver(body, kind: kind, to: deliveries, except: session)
            self.flush()
        }
    }

    /// The most users one blocklist holds. Without a bound, a blocklist grew by up to 100 users a
    /// change, was rewritten whole with each, and its `blocklist_response` could pass the frame
    /// size limit: the user's devices lost their connection at each request for it.
    static let maxBlocklist = 1_000

    /// Why the block `change` may not be applied to `user`'s blocklist (more than ``maxBlocklist``
    /// users, or a `blocklist_response` past the frame size limit with room for the answer's own
    /// fields, as a history page keeps), or `nil` when it may.
    private func blocklistFull(after change: BlocklistChange, of user: String) -> String? {
        let set = blocked[user] ?? []
        let added = Set(change.userIDs).subtracting(set)
        guard !added.isEmpty else { return nil }
        let count = set.count + added.count
        if count > Self.maxBlocklist {
            return "the blocklist would hold \(count) users; it holds at most \(Self.maxBlocklist)"
        }
        let bytes =
            (blockOrder[user] ?? []).reduce(0) { $0 + Self.blockedIDSize($1) }
            + added.reduce(0) { $0 + Self.blockedIDSize($1) }
        guard bytes <= answerRoom else {
            return "the blocklist would take \(bytes) bytes; one blocklist_response carries at most \(answerRoom)"
        }
        return nil
    }

    /// An id's bytes in a `blocklist_response`: a tag, a length of at most 5 bytes, the id.
    private static func blockedIDSize(_ id: String) -> Int { id.utf8.count + 6 }

    /// Adds or removes users from `user`'s blocklist (kept in the order they were blocked). A user
    /// blocked or unblocked who watches `user`'s presence is told it as it may now see it: offline
    /// and nothing more, or as it is.
    private func applyBlocklist(_ change: BlocklistChange, of user: String) {
        var list = blockOrder[user] ?? []
        var set = blocked[user] ?? []
        var changed: [String] = []
        for id in change.userIDs {
            switch change.action {
            case .block where set.insert(id).inserted:
                list.append(id)
                changed.append(id)
            case .unblock where set.remove(id) != nil:
                list.removeAll { $0 == id }
                changed.append(id)
            default: break
            }
        }
        blockOrder[user] = list.isEmpty ? nil : list
        blocked[user] = set.isEmpty ? nil : set
        store.batch.records[.blocklist(user: user)] =
            list.isEmpty
            ? []
            : BlocklistResponse.with { $0.userIDs = list }
                .serializedBytes()
        // Once the block is committed: a crash before it would leave a watcher told of a block (or
        // an unblock) that never was.
        store.afterCommit {
            for watcher in changed where self.subscribers[user]?.contains(watcher) == true {
                let frame = Frame(.presence(self.presence(of: user, to: watcher)))
                for session in self.sessions[watcher] ?? [] { self.write(frame, to: session) }
            }
            self.flush()
        }
    }

    /// The seqs of `seqs` that `key` still keeps (at or above its oldest kept seq). A user's
    /// deleted-for-me seqs are only these: without the cut, the set grew with every delete for
    /// ever, and was rewritten whole with each.
    private func stillKept(_ seqs: Set<UInt64>, in key: ConversationKey) -> Set<UInt64> {
        let oldest = conversations[key]?.oldestSeq ?? 0
        return seqs.contains { $0 < oldest } ? seqs.filter { $0 >= oldest } : seqs
    }

    /// Whether `user` deleted message `seq` of `key` for itself only.
    func isDeletedForMe(_ seq: UInt64, in key: ConversationKey, by user: String) -> Bool {
        deletedForMe[user]?[key]?.contains(seq) == true
    }

    /// A delete "only for me" (events.proto DeleteEvent, scope ONLY_ME) of `refs` by `user`, kept at
    /// `position` of its stream: each message a reference finds (by its conversation,
    /// ``conversationKey(of:user:)``, then ``ConversationState/resolve(_:)``) is left out of the user's history, sync by
    /// seq and extension fetches from then on, and out of its list entry's unread count, @ and last
    /// message. A reference that names no conversation of the user's, or no kept message, changes
    /// nothing.
    func deletedForMe(_ refs: [MessageRef], by user: String, position: UInt64) {
        var found: [ConversationKey: [UInt64]] = [:]
        for ref in refs {
            guard let key = conversationKey(of: ref, user: user), isMember(user, key),
                case .kept(let seq)? = conversations[key]?.resolve(ref)
            else { continue }
            found[key, default: []].append(seq)
        }
        for (key, seqs) in found {
            let deleted = stillKept((deletedForMe[user]?[key] ?? []).union(seqs), in: key)
            deletedForMe[user, default: [:]][key] = deleted
            var bytes: [UInt8] = []
            SeqListBytes.append(deleted.sorted(), to: &bytes)
            store.batch.records[.deletedForMe(user: user, key)] = bytes
            guard var view = userConversations[user]?[key] else { continue }
            let lastDeleted = deleted.contains(view.lastSeq)
            guard view.drop(Set(seqs)) || lastDeleted else { continue }
            if lastDeleted { view.lastSeq = 0 }
            setView(view, of: key, for: user, version: position)
        }
    }

    /// Why a view of `conversation` may not be kept for `user`: it would start a one-to-one
    /// conversation past ``RelayConfiguration/maxDirectConversations`` (``mayStart(_:user:)``).
    private func startRefusal(of conversation: Conversation?, user: String) -> String? {
        guard let conversation, let key = ConversationKey(conversation, user: user), !mayStart(key, user: user) else {
            return nil
        }
        return conversationLimitReason(of: user)
    }

    /// Answers a blocklist request with the user's whole list.
    func sendBlocklist(requestID: UInt64, session: Session, user: String) {
        // What a block let in fits (blocklistFull(after:of:)); a blocklist kept under a larger
        // --max-frame-size may not, and is cut rather than make an answer no device can read.
        let (ids, cut) = Self.fitting(blockOrder[user] ?? [], room: answerRoom, size: Self.blockedIDSize)
        if cut { logger.warning("the blocklist of \(user) passes the frame size limit: an answer left some out") }
        let response = BlocklistResponse.with { $0.userIDs = ids }
        // After the commit of what came before it (a change just made is in the list).
        store.afterCommit {
            self.answer(RelayProtocol.answer(.blocklistResponse(response), requestID: requestID), to: session)
            self.flush()
        }
    }

    /// The records ``loadRecords(_:)`` leaves to ``Router``'s init: each device's resend window
    /// (once the known devices are), and what the groups file named at the last start (with the
    /// groups file).
    struct LaterRecords {
        var windows: [DeviceKey: [UInt64]] = [:]
        var fileGroups: [String: Set<String>] = [:]
    }

    /// Loads the state records: conversation views, blocklists, message extensions and changes,
    /// disappearing timers; returns those loaded later (``LaterRecords``).
    func loadRecords(_ records: [StateRecordKey: [UInt8]]) -> LaterRecords {
        var readers: [MessageKey: [(place: UInt64, user: String)]] = [:]
        var later = LaterRecords()
        defer { loadReaders(readers) }
        for (key, bytes) in records {
            switch key {
            case .conversation(let user, let conversation):
                if let view = UserConversation(bytes: bytes) {
                    userConversations[user, default: [:]][conversation] = view
                    noteReceiveOption(view.info.receiveOption, of: conversation, for: user)
                }
            case .deletedForMe(let user, let conversation):
                guard let seqs = SeqListBytes.seqs(bytes[...]) else { continue }
                // A record from before the bound holds more.
                deletedForMe[user, default: [:]][conversation] = stillKept(Set(seqs), in: conversation)
            case .blocklist(let user):
                guard let list = try? BlocklistResponse(serializedBytes: bytes), !list.userIDs.isEmpty else { continue }
                blockOrder[user] = list.userIDs
                blocked[user] = Set(list.userIDs)
            case .messageExtension(let conversation, let seq):
                guard let stored = try? MessageExtension(serializedBytes: bytes) else { continue }
                var entries: [String: ExtensionEntry] = [:]
                for entry in stored.entries { entries[entry.key] = entry }
                extensions[conversation, default: [:]][seq] = entries
            case .polls(let conversation, let seq):
                loadPolls(bytes, of: seq, in: conversation)
            case .heldPollResults(let conversation, let seq):
                loadHeldPollResults(bytes, of: seq, in: conversation)
            case .readers(let conversation, let seq):
                loadReaders(bytes, of: seq, in: conversation)
            case .leave(let conversation, let user):
                loadLeave(bytes, of: conversation, by: user)
            case .reader(let message, let user):
                guard let place = SeqListBytes.seqs(bytes[...])?.first else { continue }
                readers[message, default: []].append((place, user))
            case .viewOnce(let conversation):
                loadViewOnce(bytes, in: conversation)
            case .deviceFloor(let device):
                loadDeviceFloor(bytes, of: device)
            case .sentEvents(let device):
                later.windows[device] = SeqListBytes.seqs(bytes[...])
            case .fileGroup(let group):
                later.fileGroups[group] = StringListBytes.strings(bytes[...]).map(Set.init)
            case .quote(let quoted, let reply):
                loadQuote(of: quoted, reply: reply)
            case .messageChange(let conversation, let seq):
                guard let change = try? Message(serializedBytes: bytes) else { continue }
                messageChanges[conversation, default: [:]][seq] = change
            case .disappearingTimer(let conversation):
                guard let event = try? DisappearingTimerEvent(serializedBytes: bytes), event.expireAfterS > 0 else {
                    continue
                }
                disappearingTimers[conversation] = event.expireAfterS
            }
        }
        return later
    }
}
#endif
