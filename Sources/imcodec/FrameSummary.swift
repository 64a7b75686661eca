#if Tools
import IMCodec

/// Renders frames for people: the summary `imcodec inspect` prints and the demo's transcript uses.
enum FrameSummary {
    /// Lines describing `frame` (kind, conversation, sender, element chain with sizes, merger tree,
    /// receipts, events), indented by `indent`.
    static func lines(_ frame: Frame, indent: String = "") -> [String] {
        var out: [String] = []
        let kind = frame.payload?.kind.protoName ?? "no payload"
        out.append("\(indent)frame: \(kind) (schema v\(frame.schemaVersion), readers need v\(frame.minReaderVersion))")
        let i = indent + "  "
        switch frame.payload {
        case .message(let message)?:
            out += messageLines(message, indent: i)
        case .receipt(let receipt)?:
            out += receiptLines(receipt, indent: i)
        case .receipts(let batch)?:
            out.append(
                "\(i)\(batch.receipts.count) message receipt(s), \(batch.c2cReadReceipts.count) C2C read receipt(s)"
            )
            for receipt in batch.receipts { out += receiptLines(receipt, indent: i + "  ") }
            for receipt in batch.c2cReadReceipts {
                out.append("\(i)  C2C read: \(receipt.userID) read everything up to \(receipt.readTimeMs) ms")
            }
        case .c2cReadReceipt(let receipt)?:
            out.append("\(i)C2C read: \(receipt.userID) read everything up to \(receipt.readTimeMs) ms")
        case .groupReadMembers(let page)?:
            out.append(
                "\(i)\(page.read ? "read" : "unread") members of \(ref(page.message)): \(page.memberIDs.joined(separator: ", "))"
                    + (page.finished ? " (last page)" : " (next seq \(page.nextSeq))")
            )
        case .recall(let event)?:
            out.append(
                "\(i)recall of \(ref(event.message)) by \(event.revokerID)"
                    + (event.reason.isEmpty ? "" : ": \(event.reason)")
            )
        case .edit(let event)?:
            out.append("\(i)edit of \(ref(event.message)) by \(event.editorID)")
            if let message = event.newMessage { out += messageLines(message, indent: i + "  ") }
        case .delete(let event)?:
            out.append(
                "\(i)delete (\(event.scope.protoName)) by \(event.operatorID): "
                    + event.messages.map(ref).joined(separator: ", ")
            )
        case .typing(let event)?:
            out.append(
                "\(i)\(event.userID) \(event.state == .started ? "is typing" : "stopped typing") in \(conversation(event.conversation))"
            )
        case .markRead(let event)?:
            out.append(
                "\(i)\(event.userID) marked "
                    + (event.allConversations ? "every conversation" : conversation(event.conversation))
                    + " read up to \(event.readTimeMs) ms / seq \(event.readSeq)"
            )
        case .systemNotice(let notice)?:
            out.append(
                "\(i)system notice \(notice.type): \(notice.text)"
                    + (notice.params.isEmpty
                        ? ""
                        : " "
                            + notice.params.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(
                                separator: " "
                            ))
            )
        case .sendAck(let ack)?:
            out.append(
                "\(i)ack for \(ack.clientMsgID): "
                    + (ack.errorCode == 0
                        ? "accepted as \(ack.serverMsgUID), seq \(ack.seq), at \(ack.serverTimeMs) ms"
                        : "rejected with \(ack.errorCode) (\(ack.errorDescription))")
            )
        case .historyRequest(let request)?:
            out.append(
                "\(i)history request: \(request.count) \(request.direction.protoName) messages of \(conversation(request.conversation))"
                    + (request.cursor.isEmpty ? "" : " from cursor \(request.cursor)")
            )
        case .historyResponse(let page)?:
            out.append(
                "\(i)history page of \(conversation(page.conversation)): \(page.messages.count) message(s)"
                    + (page.finished ? ", last page" : ", next cursor \(page.nextCursor)")
            )
            for message in page.messages { out += messageLines(message, indent: i + "  ") }
        case .mergerPayload(let payload)?:
            out.append("\(i)stored merger payload: \(payload.messages.count) message(s)")
            for message in payload.messages { out += messageLines(message, indent: i + "  ") }
        case .readReceiptRequest(let request)?:
            out.append("\(i)read receipts asked for: " + request.messages.map(ref).joined(separator: ", "))
        case .groupReadMembersRequest(let request)?:
            out.append(
                "\(i)\(name(request.filter.protoName, dropping: "READ_MEMBERS_FILTER_")) "
                    + "members of \(ref(request.message)) asked for: \(request.count) from seq \(request.nextSeq)"
            )
        case nil:
            break
        case let payload?:
            out += sessionLines(payload, indent: i)
        }
        if frame.requestID != 0 { out.append("\(i)request id \(frame.requestID)") }
        if !frame.unknownFields.isEmpty {
            out.append("\(i)\(frame.unknownFields.bytes.count) bytes of fields this schema does not know")
        }
        return out
    }

    static func name(_ protoName: String, dropping prefix: String) -> String {
        protoName.replacingOccurrences(of: prefix, with: "").lowercased().replacingOccurrences(of: "_", with: " ")
    }

    static func seqs(_ seqs: [ConversationSeq]) -> String {
        seqs.map { "\(conversation($0.conversation)) seq \($0.seq)" }.joined(separator: ", ")
    }

    // Long on purpose (over 80 lines): one case per session-layer payload, each a line or two.
    /// The session layer and the events of schema version 2.
    static func sessionLines(_ payload: Frame.Payload, indent i: String) -> [String] {
        switch payload {
        case .loginRequest(let login):
            return [
                "\(i)login of \(login.userID) on \(name(login.platform.protoName, dropping: "PLATFORM_")) device \(login.deviceID)"
                    + (login.clientVersion.isEmpty ? "" : ", client \(login.clientVersion)")
                    + (login.lastSeen.isEmpty ? "" : "; resumes from \(seqs(login.lastSeen))")
            ]
        case .loginResult(let result):
            return [
                result.errorCode == 0
                    ? "\(i)logged in: session \(result.sessionID), heartbeat every \(result.heartbeatIntervalS) s"
                        + (result.maxSeqs.isEmpty ? "" : "; newest \(seqs(result.maxSeqs))")
                    : "\(i)login refused with \(result.errorCode) (\(result.errorDescription))"
            ]
        case .ping(let ping): return ["\(i)ping \(ping.id)"]
        case .pong(let pong): return ["\(i)pong \(pong.id)"]
        case .logout(let logout):
            return ["\(i)logout" + (logout.sessionID.isEmpty ? "" : " of session \(logout.sessionID)")]
        case .kickedOffline(let kicked):
            return [
                "\(i)kicked offline: \(name(kicked.reason.protoName, dropping: "KICK_REASON_"))"
                    + (kicked.description.isEmpty ? "" : " (\(kicked.description))")
            ]
        case .maxSeqRequest(let request):
            return [
                "\(i)newest seqs asked for: "
                    + (request.conversations.isEmpty
                        ? "every conversation" : request.conversations.map { conversation($0) }.joined(separator: ", "))
            ]
        case .maxSeqResponse(let response): return ["\(i)newest seqs: \(seqs(response.maxSeqs))"]
        case .syncRequest(let request):
            return [
                "\(i)sync of \(conversation(request.conversation)) from seq \(request.fromSeq)"
                    + (request.toSeq == 0 ? "" : " to \(request.toSeq)") + ", at most \(request.limit)"
            ]
        case .syncResponse(let response):
            var out = [
                "\(i)sync page of \(conversation(response.conversation)): \(response.messages.count) message(s)"
                    + (response.errorCode != 0 ? ", error \(response.errorCode) (\(response.errorDescription))" : "")
                    + (response.hasMore ? ", more from seq \(response.nextFromSeq)" : ", complete")
                    + " (newest seq \(response.maxSeq))"
            ]
            for message in response.messages { out += messageLines(message, indent: i + "  ") }
            return out
        case .presence(let update):
            return [
                "\(i)\(update.userID) is \(name(update.status.protoName, dropping: "PRESENCE_STATUS_"))"
                    + (update.lastSeenMs == 0 ? "" : ", last seen \(update.lastSeenMs) ms")
                    + (update.customStatus.isEmpty ? "" : ": \(quoted(update.customStatus))")
            ]
        case .presenceSubscription(let subscription):
            return [
                "\(i)presence \(name(subscription.action.protoName, dropping: "SUBSCRIPTION_ACTION_")): "
                    + subscription.userIDs.joined(separator: ", ")
            ]
        case .membership(let change):
            return [
                "\(i)\(change.userID.isEmpty ? "join/leave" : change.userID) "
                    + "\(name(change.action.protoName, dropping: "MEMBERSHIP_ACTION_")) \(conversation(change.conversation))"
            ]
        case .requestResult(let result):
            return [
                result.errorCode == 0
                    ? "\(i)request done" : "\(i)request failed with \(result.errorCode) (\(result.errorDescription))"
            ]
        case .reaction(let reaction):
            return [
                "\(i)\(reaction.userID) \(reaction.action == .remove ? "removed" : "reacted") \(reaction.emoji) on \(ref(reaction.message))"
            ]
        case .pin(let pin):
            return [
                "\(i)\(pin.operatorID) \(pin.pinned ? "pinned" : "unpinned") \(ref(pin.message)) in \(conversation(pin.conversation))"
            ]
        case .pollVote(let vote):
            return [
                "\(i)\(vote.voterID) voted \(vote.optionIDs.map { String($0) }.joined(separator: ", ")) in poll \(vote.pollID)"
            ]
        case .pollUpdate(let update):
            return [
                "\(i)poll \(update.pollID)\(update.closed ? " closed" : ""): "
                    + update.results.map { "option \($0.optionID) \($0.votes)" }.joined(separator: ", ")
                    + ", \(update.voterCount) voter(s)"
            ]
        case .disappearingTimer(let timer):
            return [
                "\(i)\(timer.operatorID) set disappearing messages in \(conversation(timer.conversation)) to "
                    + (timer.expireAfterS == 0 ? "off" : "\(timer.expireAfterS) s")
            ]
        case .receiveOption(let change):
            return [
                "\(i)\(conversation(change.conversation)): \(name(change.option.protoName, dropping: "RECEIVE_OPTION_"))"
            ]
        case .call(let call):
            return [
                "\(i)call \(call.callID) \(name(call.signal.protoName, dropping: "CALL_SIGNAL_")) by \(call.userID)"
                    + (call.media == .unspecified ? "" : " (\(name(call.media.protoName, dropping: "CALL_MEDIA_")))")
                    + (call.inviteeIDs.isEmpty ? "" : " inviting \(call.inviteeIDs.joined(separator: ", "))")
                    + " in \(conversation(call.conversation))"
            ]
        case .keyPublish(let publish):
            let bundle = publish.bundle ?? KeyBundle()
            return [
                "\(i)\(name(bundle.kind.protoName, dropping: "KEY_BUNDLE_KIND_")) keys of device \(bundle.deviceID): "
                    + "\(bundle.bundle.count) B, \(bundle.oneTimeKeys.count) one-time key(s)"
            ]
        case .keyFetchRequest(let request):
            return ["\(i)\(name(request.kind.protoName, dropping: "KEY_BUNDLE_KIND_")) keys of \(request.userID)"]
        case .keyFetchResponse(let response):
            return [
                "\(i)keys of \(response.userID): \(response.bundles.count) device(s)"
                    + (response.errorCode == 0 ? "" : ", error \(response.errorCode)")
            ]
        case .streamChunk(let chunk):
            return [
                "\(i)stream \(chunk.streamID) chunk \(chunk.position)\(chunk.final ? " (final)" : ""): "
                    + quoted(chunk.text)
            ]
        default:
            return userStateLines(payload, indent: i)
        }
    }

    /// The conversation list, message extensions and the blocklist (schema version 3).
    static func userStateLines(_ payload: Frame.Payload, indent i: String) -> [String] {
        switch payload {
        case .conversationListRequest(let request):
            return ["\(i)conversation list after version \(request.afterVersion)"]
        case .conversationList(let list):
            return ["\(i)conversation list: \(list.conversations.count) conversation(s)\(list.hasMore ? ", more" : "")"]
                + list.conversations.map { info in
                    "\(i)  \(conversation(info.conversation)): \(info.unreadCount) unread"
                        + (info.atMe.isEmpty
                            ? ""
                            : ", @ "
                                + info.atMe.map { name($0.kind.protoName, dropping: "AT_ME_KIND_") }.joined(
                                    separator: ", "
                                ))
                        + (info.pinned ? ", pinned" : "") + ", last seq \(info.lastMessage?.seq ?? 0)"
                }
        case .conversationUpdate(let update):
            var changes: [String] = []
            let fields = update.fields
            if fields & UInt32(ConversationField.pinned.rawValue) != 0 {
                changes.append(update.pinned ? "pinned" : "unpinned")
            }
            if fields & UInt32(ConversationField.archived.rawValue) != 0 {
                changes.append(update.archived ? "archived" : "unarchived")
            }
            if fields & UInt32(ConversationField.draft.rawValue) != 0 {
                changes.append("draft \(quoted(update.draftText))")
            }
            if fields & UInt32(ConversationField.clearedSeq.rawValue) != 0 {
                changes.append("cleared to seq \(update.clearedSeq)")
            }
            if fields & UInt32(ConversationField.hidden.rawValue) != 0 {
                changes.append(update.hidden ? "hidden" : "shown")
            }
            return ["\(i)\(conversation(update.conversation)): " + changes.joined(separator: ", ")]
        case .extensionUpdate(let update):
            let keys = (update.entries.isEmpty ? update.set : update.entries).map {
                "\($0.key)=\($0.removed ? "(removed)" : quoted($0.value))" + ($0.version == 0 ? "" : " v\($0.version)")
            }
            return [
                "\(i)extension of \(ref(update.message))\(update.userID.isEmpty ? "" : " by \(update.userID)"): "
                    + keys.joined(separator: ", ")
            ]
        case .extensionFetchRequest(let request):
            return ["\(i)extensions of \(request.messages.count) message(s)"]
        case .extensionFetchResponse(let response):
            return ["\(i)extensions of \(response.extensions.count) message(s)"]
        case .blocklistChange(let change):
            return ["\(i)\(change.action == .unblock ? "unblock" : "block") \(change.userIDs.joined(separator: ", "))"]
        case .blocklistRequest:
            return ["\(i)blocklist"]
        case .blocklistResponse(let response):
            return ["\(i)blocklist: \(response.userIDs.joined(separator: ", "))"]
        default:
            return []
        }
    }

    /// `route` as ``FrameView/route`` gives it, in Swift's spelling: `.user("bob")`,
    /// `.referencedSender("alice")`, `.server`.
    static func route(_ route: FrameRoute) -> String {
        "." + String(describing: route)
    }

    static func conversation(_ conversation: Conversation?) -> String {
        guard let conversation else { return "(no conversation)" }
        let type: String
        switch conversation.type {
        case .oneToOne: type = "C2C"
        case .group: type = "group"
        case .chatroom: type = "chatroom"
        case .ultraGroup: type = "ultra group"
        case .system: type = "system"
        case .unspecified: type = "unspecified"
        case .unrecognized(let number): type = "type \(number)"
        }
        return "\(type) \(conversation.targetID)" + (conversation.channelID.isEmpty ? "" : "#\(conversation.channelID)")
    }

    static func ref(_ ref: MessageRef?) -> String {
        guard let ref else { return "(no message)" }
        return ref.serverMsgUID.isEmpty ? "message \(ref.clientMsgID)" : "message \(ref.serverMsgUID)"
    }

    static func receiptLines(_ receipt: MessageReceipt, indent: String) -> [String] {
        var line =
            "\(indent)\(receipt.kind.protoName.replacingOccurrences(of: "RECEIPT_KIND_", with: "").lowercased()) receipt"
            + " for \(ref(receipt.message)) from \(receipt.userID)"
        if !receipt.groupID.isEmpty {
            line += " in group \(receipt.groupID): \(receipt.readCount) read, \(receipt.unreadCount) unread"
        } else if receipt.isPeerRead {
            line += " (peer read)"
        }
        return [line]
    }

    static func messageLines(_ message: Message, indent: String) -> [String] {
        var out: [String] = []
        out.append(
            "\(indent)\(message.senderID) → \(conversation(message.conversation))"
                + " [\(message.clientMsgID)\(message.serverMsgUID.isEmpty ? "" : " / \(message.serverMsgUID)")"
                + (message.seq == 0 ? "" : ", seq \(message.seq)") + "]"
        )
        var flags: [String] = []
        let set = message.messageFlags
        if set.contains(.needReadReceipt) { flags.append("needs read receipt") }
        if set.contains(.excludedFromUnreadCount) { flags.append("not counted unread") }
        if set.contains(.excludedFromLastMessage) { flags.append("not last message") }
        if set.contains(.onlineUserOnly) { flags.append("online users only") }
        if set.contains(.saveToHistory) { flags.append("saved to history") }
        if set.contains(.deliveryReceiptEnabled) { flags.append("delivery receipts") }
        if set.contains(.supportExtension) { flags.append("extensible") }
        if !flags.isEmpty { out.append("\(indent)  flags: \(flags.joined(separator: ", "))") }
        if let at = message.at {
            out.append("\(indent)  @ " + (at.atAll ? ["all"] + at.userIDs : at.userIDs).joined(separator: ", @"))
        }
        if !message.targetReceivers.isEmpty {
            out.append("\(indent)  only for: \(message.targetReceivers.joined(separator: ", "))")
        }
        var features: [String] = []
        if message.viewOnce { features.append("view once") }
        if message.expireAfterS != 0 { features.append("disappears after \(message.expireAfterS) s") }
        if message.forwardScore != 0 {
            features.append(message.forwardScore >= 5 ? "forwarded many times" : "forwarded")
        }
        if let root = message.threadRoot { features.append("in the thread of \(ref(root))") }
        if let thread = message.thread { features.append("\(thread.replyCount) thread replies") }
        if !message.senderDeviceID.isEmpty { features.append("from device \(message.senderDeviceID)") }
        if !features.isEmpty { out.append("\(indent)  \(features.joined(separator: ", "))") }
        if !message.reactions.isEmpty {
            out.append(
                "\(indent)  reactions: " + message.reactions.map { "\($0.emoji) \($0.count)" }.joined(separator: "  ")
            )
        }
        if let quote = message.quote { out.append("\(indent)  replying to \(ref(quote))") }
        if !message.customParams.isEmpty {
            out.append(
                "\(indent)  params: "
                    + message.customParams.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(
                        separator: " "
                    )
            )
        }
        out.append("\(indent)  elements (\(message.elements.count)):")
        for (n, element) in message.elements.enumerated() {
            out += elementLines(element, number: n, indent: indent + "    ")
        }
        return out
    }

    static func elementLines(_ element: MessageElement, number: Int, indent: String) -> [String] {
        let size = element.serializedBytes().count
        let head = "\(indent)[\(number)] "
        switch element.content {
        case .text(let text)?:
            return [head + "text, \(size) B: \(quoted(text.text))"]
        case .custom(let custom)?:
            return [
                head + "custom, \(size) B: \(custom.data.count) bytes of data"
                    + (custom.description.isEmpty ? "" : ", \(quoted(custom.description))")
            ]
        case .image(let image)?:
            let renditions = image.images.map { info in
                "\(info.type.protoName.replacingOccurrences(of: "IMAGE_TYPE_", with: "").lowercased()) \(info.width)×\(info.height) \(info.size) B"
            }
            return [
                head
                    + "image \(image.format.protoName.replacingOccurrences(of: "IMAGE_FORMAT_", with: "").lowercased()), \(size) B: "
                    + renditions.joined(separator: "; ")
            ]
        case .video(let video)?:
            return [
                head
                    + "video, \(size) B: \(video.durationS) s, \(video.videoSize) B \(video.videoType); snapshot \(video.snapshotWidth)×\(video.snapshotHeight)"
            ]
        case .sound(let sound)?:
            return [head + "voice, \(size) B: \(sound.durationS) s, \(sound.size) B"]
        case .file(let file)?:
            return [head + "file, \(size) B: \(quoted(file.name)), \(file.size) B"]
        case .location(let location)?:
            return [
                head
                    + "location, \(size) B: \(location.latitude), \(location.longitude) \(quoted(location.description))"
            ]
        case .face(let face)?:
            return [head + "face #\(face.index), \(size) B"]
        case .groupTips(let tips)?:
            return [
                head
                    + "group tips \(tips.type.protoName.replacingOccurrences(of: "GROUP_TIPS_TYPE_", with: "").lowercased()), \(size) B: "
                    + "by \(tips.operatorID)"
                    + (tips.memberIDs.isEmpty ? "" : " on \(tips.memberIDs.joined(separator: ", "))")
                    + (tips.memberCount == 0 ? "" : ", \(tips.memberCount) members")
            ]
        case .merger(let merger)?:
            var out = [
                head + "merger \(quoted(merger.title)), \(size) B: "
                    + (merger.ref.map { "\(merger.messageCount) messages stored at \($0.key)" }
                        ?? "\(merger.messages.count) messages")
            ]
            for (n, message) in merger.messages.enumerated() {
                let branch = n == merger.messages.count - 1 ? "└─ " : "├─ "
                let lines = messageLines(message, indent: "")
                out.append(indent + "    " + branch + (lines.first ?? ""))
                let continuation = n == merger.messages.count - 1 ? "   " : "│  "
                out += lines.dropFirst().map { indent + "    " + continuation + $0 }
            }
            return out
        case .poll(let poll)?:
            return [
                head + "poll \(quoted(poll.question)), \(size) B: "
                    + poll.options.map { quoted($0.text) }.joined(separator: " / ")
                    + (poll.multipleChoice ? " (several choices)" : "")
            ]
        case .sticker(let sticker)?:
            return [head + "sticker \(sticker.emoji) \(sticker.packTitle)/\(sticker.stickerID), \(size) B"]
        case .contactCard(let card)?:
            return [head + "contact card \(quoted(card.displayName)), \(size) B"]
        case .callLog(let log)?:
            return [
                head + "call log \(log.callID), \(size) B: "
                    + "\(log.media.protoName.replacingOccurrences(of: "CALL_MEDIA_", with: "").lowercased()) "
                    + "\(log.outcome.protoName.replacingOccurrences(of: "CALL_OUTCOME_", with: "").lowercased())"
                    + (log.durationS == 0 ? "" : ", \(log.durationS) s")
            ]
        case .buttons(let buttons)?:
            return [
                head + "buttons, \(size) B: "
                    + buttons.rows.map { $0.buttons.map { quoted($0.label) }.joined(separator: " | ") }
                    .joined(separator: " / ")
            ]
        case .stream(let stream)?:
            return [
                head + "stream \(stream.streamID), \(size) B: \(stream.chunkCount) chunks"
                    + (stream.final ? " (final)" : "") + ", \(quoted(stream.text))"
            ]
        case .encrypted(let sealed)?:
            return [
                head + "encrypted (\(sealed.algorithm)), \(size) B: \(sealed.ciphertext.count) B of ciphertext "
                    + "from device \(sealed.senderDeviceID)"
            ]
        case nil:
            return [head + "empty element"]
        }
    }

    static func quoted(_ text: String) -> String {
        var escaped = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\n": escaped += "\\n"
            case "\"": escaped += "\\\""
            case "\\": escaped += "\\\\"
            case _ where scalar.value < 0x20: escaped += "\\u{\(String(scalar.value, radix: 16))}"
            default: escaped.unicodeScalars.append(scalar)
            }
        }
        return "\"\(escaped)\""
    }
}
#endif
