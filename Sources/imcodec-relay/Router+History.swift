#if Tools
import IMCodec
import IMCodecNIO
import NIOCore

/// History pages (events.proto HistoryRequest): a conversation's kept messages as they are now
/// (edits applied, extension keys current; recalled and deleted-for-everyone messages and what the
/// user cleared left out), filtered as QuickBlox's search operators do, and optionally marked read.
///
/// A page reads at most ``RelayProtocol/maxHistoryScan`` kept messages from the store, so a request
/// with filters that match little costs a bounded read: the page may then hold fewer messages than
/// asked for, with `finished` false and a cursor that goes on where the read stopped.
extension Router {
    /// Where a history page goes on: the seq the next read starts beyond (exclusive) and how many
    /// matches it still skips. Written as `SEQ` or `SEQ+SKIP`; opaque to clients.
    struct HistoryCursor: Equatable {
        var seq: UInt64
        var skip: UInt32 = 0

        init(seq: UInt64, skip: UInt32 = 0) {
            self.seq = seq
            self.skip = skip
        }

        init?(_ text: String) {
            let parts = text.split(separator: "+", maxSplits: 1, omittingEmptySubsequences: false)
            guard let seq = UInt64(parts[0]) else { return nil }
            self.seq = seq
            if parts.count == 2 {
                guard let skip = UInt32(parts[1]) else { return nil }
                self.skip = skip
            }
        }

        var text: String { skip == 0 ? "\(seq)" : "\(seq)+\(skip)" }
    }

    // Long on purpose (about 90 lines): one request read top to bottom: checks, the range to read,
    // then filtering, paging and answering once the read is done.
    /// Answers a history request with one page; with `mark_as_read`, marks the page read for the
    /// user afterwards (as the user's own MarkReadEvent would: its other devices hear of it).
    func history(_ request: HistoryRequest, requestID: UInt64, session: Session, user: String) {
        func refuse(_ code: Int32, _ notice: String, _ reason: String) {
            self.refuse(session, requestID, code, notice: notice, reason)
        }
        // validate() finds what cannot be meant (a page size of 0, a repeated or empty user in a
        // filter, a time range that ends before it starts): refused, not guessed at. A count above
        // 100 is capped ("servers cap it", events.proto), not refused.
        if let issue = Frame(.historyRequest(request)).validate().first(where: {
            $0.rule != .chatroomHistory && !($0.rule == .historyPageSize && request.count > 0)
        }) {
            return refuse(RelayProtocol.RequestError.badRequest, "badRequest", issue.description)
        }
        guard let conversation = request.conversation, let key = ConversationKey(conversation, user: user) else {
            return refuse(
                RelayProtocol.RequestError.unsupportedConversation,
                "unsupportedConversation",
                "the relay keeps one-to-one, group, chatroom and ultra-group conversations only, each named by "
                    + "ids of 1 to \(RelayProtocol.maxIDBytes) bytes"
            )
        }
        guard conversation.type != .chatroom else {
            return refuse(
                RelayProtocol.RequestError.unsupportedConversation,
                "unsupportedConversation",
                "a chatroom keeps no history (Tencent: the history API does not take effect on AVChatRoom)"
            )
        }
        guard isMember(user, key) else {
            return refuse(
                RelayProtocol.RequestError.notAMember,
                "notAMember",
                "\(user) is not a member of \(conversation.targetID)"
            )
        }
        var cursor: HistoryCursor?
        if !request.cursor.isEmpty {
            guard let given = HistoryCursor(request.cursor) else {
                return refuse(
                    RelayProtocol.RequestError.badRequest,
                    "badRequest",
                    "the cursor is not one the relay gave"
                )
            }
            cursor = given
        }
        let state = conversations[key] ?? ConversationState()
        // The oldest seq the user may read: kept, and not cleared from its history.
        let floor = max(state.oldestSeq, firstUnclearedSeq(of: key, for: user))
        let newer = request.direction == .newer
        let scan = RelayProtocol.maxHistoryScan
        var from: UInt64
        var through: UInt64
        if newer {
            // A cursor is the client's to send: no seq it names may overflow.
            let after = cursor?.seq ?? 0
            from = max(after == .max ? .max : after + 1, floor)
            through = from > state.maxSeq ? 0 : min(state.maxSeq, from + (scan - 1))
        } else {
            through = min(cursor.map { $0.seq == 0 ? 0 : $0.seq - 1 } ?? state.maxSeq, state.maxSeq)
            from = max(floor, through >= scan ? through - scan + 1 : 0)
        }
        // At most twice a frame's worth of frames read (a page filtered by text could read a
        // thousand frames of up to the frame size limit each: a gigabyte per request).
        if from <= through {
            if newer {
                through = readLimit(in: key, from: from, toward: through)
            } else {
                from = readLimit(in: key, from: through, toward: from)
            }
        }
        let count = Int(min(request.count, RelayProtocol.maxSyncLimit))
        let budget = answerRoom - conversation.serializedBytes().count
        var response = HistoryResponse.with { $0.conversation = conversation }
        guard from <= through else {
            response.nextCursor = cursor?.text ?? HistoryCursor(seq: newer ? state.maxSeq : floor).text
            response.finished = true
            return answer(RelayProtocol.answer(.historyResponse(response), requestID: requestID), to: session)
        }
        let search = request.textContains.isEmpty ? nil : ByteSearch(Array(request.textContains.utf8))
        read(
            for: session,
            requestID: requestID,
            { store in
                try store.messages(in: key, from: from, through: through, limit: Int(scan), visibleTo: user)
            }
        ) { stored in
            var skip = cursor?.skip ?? request.skip
            var left = budget
            var page: [Message] = []
            // Where the next page goes on when this one stops early (full, or out of frame room).
            var stop: HistoryCursor?
            for kept in newer ? stored : stored.reversed() {
                guard let message = self.historyMessage(kept, in: key, for: user, matching: request, search) else {
                    continue
                }
                if skip > 0 {
                    skip -= 1
                    continue
                }
                left -= message.serializedBytes().count + 6
                if left < 0, !page.isEmpty {
                    // This one goes first on the next page.
                    stop = HistoryCursor(seq: newer ? kept.seq - 1 : kept.seq + 1)
                    break
                }
                page.append(message)
                if page.count == count {
                    stop = HistoryCursor(seq: kept.seq)
                    break
                }
            }
            let end = stop ?? HistoryCursor(seq: newer ? through : from, skip: skip)
            response.nextCursor = end.text
            response.finished = stop == nil && (newer ? through >= state.maxSeq : from <= floor)
            switch request.sort {
            case .oldestFirst: page.sort { $0.seq < $1.seq }
            case .newestFirst: page.sort { $0.seq > $1.seq }
            default: break
            }
            response.messages = page
            // The mark first: the answer then waits for the commit that keeps it, as every answer
            // waits for what it reports. Answered first, the page could reach the device with the
            // mark still pending, and a crash then lost the read the device was told of.
            if request.markAsRead, let newest = page.map(\.seq).max(),
                newest > self.view(of: key, for: user).info.readSeq
            {
                self.markRead(conversation, upTo: newest, session: session, user: user)
            }
            self.answer(RelayProtocol.answer(.historyResponse(response), requestID: requestID), to: session)
        }
    }

    /// The most frame bytes one history or sync page reads from the store: twice the frame size
    /// limit (a page answers with at most one frame's worth; the rest is what its filters leave out).
    var maxReadBytes: Int { 2 * configuration.codec.effectiveMaxFrameSize }

    /// How far one read of `key`'s kept messages from seq `start` toward seq `end` (either way) goes
    /// (the index holds each frame's size): `end`, or an earlier seq where a bound stops it. It
    /// stops before the frame that would take the frames read past ``maxReadBytes``, and after
    /// ``RelayProtocol/maxHistoryScan`` seqs (a gap among the seqs of a damaged store is not walked
    /// whole on the event loop). It goes at least to `start`.
    func readLimit(in key: ConversationKey, from start: UInt64, toward end: UInt64) -> UInt64 {
        guard let kept = conversations[key]?.kept else { return end }
        let onward = start <= end
        var (bytes, steps, seq) = (0, UInt64(1), start)
        while true {
            if let message = kept[seq] {
                bytes += message.size
                if bytes > maxReadBytes, seq != start { return onward ? seq - 1 : seq + 1 }
            }
            if seq == end || steps == RelayProtocol.maxHistoryScan { return seq }
            seq = onward ? seq + 1 : seq - 1
            steps += 1
        }
    }

    /// A kept message as `user` reads it in history now, or `nil` when it is removed or a filter
    /// of `request` leaves it out (`search`: its `text_contains`, when it has one).
    private func historyMessage(
        _ kept: StoredMessage,
        in key: ConversationKey,
        for user: String,
        matching request: HistoryRequest,
        _ search: ByteSearch?
    ) -> Message? {
        if conversations[key]?.removed.contains(kept.seq) == true { return nil }
        // Dropped by retention while the store read it (what the user deleted for itself is kept
        // only above it).
        if kept.seq < conversations[key]?.oldestSeq ?? 0 { return nil }
        if isDeletedForMe(kept.seq, in: key, by: user) { return nil }
        if Expiry.passed(kept.expireAtMs, at: nowMs()) { return nil }
        if request.startTimeMs != 0, kept.serverTimeMs < request.startTimeMs { return nil }
        if request.endTimeMs != 0, kept.serverTimeMs > request.endTimeMs { return nil }
        if !request.senderIDs.isEmpty, !request.senderIDs.contains(kept.senderID) { return nil }
        if !request.recipientIDs.isEmpty {
            let recipients: [String]
            switch key {
            case .direct(let a, let b): recipients = [a == kept.senderID ? b : a]
            // A targeted message kept for its sender alone (it named no member, or a blocking user
            // silenced it) is addressed to no one.
            case .shared: recipients = kept.receivers == [kept.senderID] ? [] : kept.receivers
            }
            guard recipients.contains(where: request.recipientIDs.contains) else { return nil }
        }
        let change = messageChanges[key]?[kept.seq]
        if request.updatedAfterMs != 0, max(kept.serverTimeMs, change?.updatedAtMs ?? 0) <= request.updatedAfterMs {
            return nil
        }
        // The frames were decoded once when they arrived; decoding them again cannot fail.
        guard let frame = try? wireDecoder.decode(Frame.self, from: kept.frame),
            case .message(var message)? = frame.payload
        else { return nil }
        applyChanges(to: &message, in: key, for: user)
        if let search {
            let found = message.elements.contains { element in
                guard case .text(let text)? = element.content else { return false }
                return search.occurs(in: text.text.utf8)
            }
            guard found else { return nil }
        }
        // As delivered live: SENT on the sender's devices, RECEIVED elsewhere.
        message.direction = kept.senderID == user ? .sent : .received
        return message
    }

    /// Marks `conversation` read up to `seq` for `user`, as the user's own MarkReadEvent from
    /// `session`'s device would: kept in its stream for its other devices, and its conversation
    /// list's unread count and @ of it follow.
    private func markRead(_ conversation: Conversation, upTo seq: UInt64, session: Session, user: String) {
        let event = MarkReadEvent.with {
            $0.conversation = conversation
            $0.userID = user
            $0.readSeq = seq
            $0.readTimeMs = RelayProtocol.nowMs()
        }
        let frame = InboundFrame(
            record: ByteBuffer(bytes: Frame(.markRead(event)).serializedBytes()),
            prefixSize: 0,
            payloadKind: .markRead,
            conversationType: conversation.type,
            targetID: conversation.targetID,
            channelID: conversation.channelID,
            route: .ownDevices(user),
            senderID: "",
            clientMsgID: "",
            messageFlags: []
        )
        routeEvent(frame, from: session, user: user)
    }

    // MARK: What changed since sending

    /// Applies what changed on kept `message` of `key` since it was sent, as `reader` gets it: the
    /// last edit's content and the number of edits (`edit_version`), the time of the last change
    /// (`updated_at_ms`), its reactions (``served(_:for:)``) and its extension's keys as they now
    /// are (`expansion`). A view-once message comes to a receiver without its content
    /// (``Redaction/viewedOnce(_:)``).
    func applyChanges(to message: inout Message, in key: ConversationKey, for reader: String) {
        defer { if message.viewOnce, message.senderID != reader { message = Redaction.viewedOnce(message) } }
        if let change = messageChanges[key]?[message.seq] {
            if change.editVersion > 0 {
                message.elements = change.elements
                message.editVersion = change.editVersion
            }
            message.updatedAtMs = change.updatedAtMs
            message.reactions = Self.served(change.reactions, for: reader)
        }
        if let entries = extensions[key]?[message.seq] {
            message.expansion = Dictionary(
                entries.values.filter { !$0.removed }.map { ($0.key, $0.value) },
                uniquingKeysWith: { $1 }
            )
        }
    }

    /// At least the size of kept message `seq` of `key` as ``applyChanges(to:in:)`` makes it, once
    /// an edit gives it `elements` or an extension update leaves it `entries` (each `nil`: as they
    /// are now): its stamped frame as sent (`sentSize`), plus the content and keys a change puts in
    /// (what they replace is counted twice), plus the edit count and the time of the change (two
    /// varint fields, 12 bytes each at most). Counted from the sizes the router keeps, so no stored
    /// frame is read on the router's loop for it. The price: new content is counted on top of the
    /// old, so a message larger than half the room cannot be edited to the same size.
    func servedSizeBound(
        of seq: UInt64,
        in key: ConversationKey,
        sentSize: Int,
        elements: [MessageElement]? = nil,
        entries: [String: ExtensionEntry]? = nil,
        reactions: [ReactionSummary]? = nil
    ) -> Int {
        let change = messageChanges[key]?[seq]
        let added = Message.with {
            $0.elements = elements ?? (change.map { $0.editVersion > 0 ? $0.elements : [] } ?? [])
            // With reacted_by_me set on each: as some reader gets them.
            $0.reactions = (reactions ?? Self.served(change?.reactions ?? [])).map {
                var summary = $0
                summary.reactedByMe = true
                return summary
            }
            $0.expansion = Dictionary(
                (entries ?? extensions[key]?[seq] ?? [:]).values.filter { !$0.removed }.map { ($0.key, $0.value) },
                uniquingKeysWith: { $1 }
            )
        }
        return sentSize + added.serializedBytes().count + 24
    }

    /// Records a change of kept message `seq` (an edit, with its new content, a reaction, with every
    /// user per emoji, or an extension update) at `timeMs`: history serves the message as it now is,
    /// and `updated_after_ms` finds it.
    func noteChange(
        of seq: UInt64,
        in key: ConversationKey,
        edit: EditEvent? = nil,
        reactions: [ReactionSummary]? = nil,
        timeMs: Int64
    ) {
        var change = messageChanges[key]?[seq] ?? Message()
        if let edit {
            change.elements = edit.newMessage?.elements ?? []
            change.editVersion += 1
        }
        if let reactions { change.reactions = reactions }
        change.updatedAtMs = max(change.updatedAtMs, timeMs)
        messageChanges[key, default: [:]][seq] = change
        store.batch.records[.messageChange(key, seq: seq)] = change.serializedBytes()
    }

    /// Drops the kept messages of `key` below `seq` (retention, or an empty group freed), in memory
    /// and in the store, with what was kept about each.
    func dropMessages(of key: ConversationKey, below seq: UInt64) {
        guard let oldest = conversations[key]?.oldestSeq else { return }
        conversations[key]!.trim(below: seq)
        let dropped = oldest..<conversations[key]!.oldestSeq
        StoreBatch.trim(dropped, of: key, in: &store.batch.trimmedConversations)
        forgetChanges(in: key, trimmed: dropped)
    }

    /// Forgets the changes, extensions, polls, readers, view-once marks and quotes of the messages
    /// of `key` with seqs in `trimmed` (retention dropped them), in memory and in the store: at the
    /// cost of the smaller of the range and each map (``Swift/Range/present(in:)``).
    func forgetChanges(in key: ConversationKey, trimmed: Range<UInt64>) {
        let changed = trimmed.present(in: messageChanges[key]?.keys)
        for old in changed {
            messageChanges[key]![old] = nil
            store.batch.records[.messageChange(key, seq: old)] = []
        }
        let extended = trimmed.present(in: extensions[key]?.keys)
        for old in extended {
            extensions[key]![old] = nil
            store.batch.records[.messageExtension(key, seq: old)] = []
        }
        forgetPolls(in: key, trimmed: trimmed)
        forgetReaders(in: key, trimmed: trimmed)
        forgetViewOnce(in: key, trimmed: trimmed)
        forgetQuotes(in: key, trimmed: trimmed)
    }

    /// Forgets the changes, the extension, the polls and the readers of the kept message `seq` of `key` (it was recalled,
    /// deleted for everyone or expired), in memory and in the store, and redacts what replies quoted of it.
    func forgetChanges(of seq: UInt64, in key: ConversationKey) {
        if messageChanges[key]?.removeValue(forKey: seq) != nil {
            store.batch.records[.messageChange(key, seq: seq)] = []
        }
        if extensions[key]?.removeValue(forKey: seq) != nil {
            store.batch.records[.messageExtension(key, seq: seq)] = []
        }
        forgetPolls(of: seq, in: key)
        forgetReaders(of: seq, in: key)
        redactQuotes(of: seq, in: key)
        forgetQuoting(of: seq, in: key)
    }
}

#endif
