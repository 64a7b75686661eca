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
            out.append("\(i)\(batch.receipts.count) message receipt(s), \(batch.c2cReadReceipts.count) C2C read receipt(s)")
            for receipt in batch.receipts { out += receiptLines(receipt, indent: i + "  ") }
            for receipt in batch.c2cReadReceipts {
                out.append("\(i)  C2C read: \(receipt.userID) read everything up to \(receipt.readTimeMs) ms")
            }
        case .c2cReadReceipt(let receipt)?:
            out.append("\(i)C2C read: \(receipt.userID) read everything up to \(receipt.readTimeMs) ms")
        case .groupReadMembers(let page)?:
            out.append("\(i)\(page.read ? "read" : "unread") members of \(ref(page.message)): \(page.memberIDs.joined(separator: ", "))"
                + (page.finished ? " (last page)" : " (next seq \(page.nextSeq))"))
        case .recall(let event)?:
            out.append("\(i)recall of \(ref(event.message)) by \(event.revokerID)" + (event.reason.isEmpty ? "" : ": \(event.reason)"))
        case .edit(let event)?:
            out.append("\(i)edit of \(ref(event.message)) by \(event.editorID)")
            if let message = event.newMessage { out += messageLines(message, indent: i + "  ") }
        case .delete(let event)?:
            out.append("\(i)delete (\(event.scope.protoName)) by \(event.operatorID): " + event.messages.map(ref).joined(separator: ", "))
        case .typing(let event)?:
            out.append("\(i)\(event.userID) \(event.state == .started ? "is typing" : "stopped typing") in \(conversation(event.conversation))")
        case .markRead(let event)?:
            out.append("\(i)\(event.userID) marked "
                + (event.allConversations ? "every conversation" : conversation(event.conversation))
                + " read up to \(event.readTimeMs) ms / seq \(event.readSeq)")
        case .systemNotice(let notice)?:
            out.append("\(i)system notice \(notice.type): \(notice.text)"
                + (notice.params.isEmpty ? "" : " " + notice.params.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")))
        case .sendAck(let ack)?:
            out.append("\(i)ack for \(ack.clientMsgID): "
                + (ack.errorCode == 0
                    ? "accepted as \(ack.serverMsgUID), seq \(ack.seq), at \(ack.serverTimeMs) ms"
                    : "rejected with \(ack.errorCode) (\(ack.errorDescription))"))
        case .historyRequest(let request)?:
            out.append("\(i)history request: \(request.count) \(request.direction.protoName) messages of \(conversation(request.conversation))"
                + (request.cursor.isEmpty ? "" : " from cursor \(request.cursor)"))
        case .historyResponse(let page)?:
            out.append("\(i)history page of \(conversation(page.conversation)): \(page.messages.count) message(s)"
                + (page.finished ? ", last page" : ", next cursor \(page.nextCursor)"))
            for message in page.messages { out += messageLines(message, indent: i + "  ") }
        case .mergerPayload(let payload)?:
            out.append("\(i)stored merger payload: \(payload.messages.count) message(s)")
            for message in payload.messages { out += messageLines(message, indent: i + "  ") }
        case nil:
            break
        }
        if !frame.unknownFields.isEmpty {
            out.append("\(i)\(frame.unknownFields.bytes.count) bytes of fields this schema does not know")
        }
        return out
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
        var line = "\(indent)\(receipt.kind.protoName.replacingOccurrences(of: "RECEIPT_KIND_", with: "").lowercased()) receipt"
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
        out.append("\(indent)\(message.senderID) → \(conversation(message.conversation))"
            + " [\(message.clientMsgID)\(message.serverMsgUID.isEmpty ? "" : " / \(message.serverMsgUID)")"
            + (message.seq == 0 ? "" : ", seq \(message.seq)") + "]")
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
        if let quote = message.quote { out.append("\(indent)  replying to \(ref(quote))") }
        if !message.customParams.isEmpty {
            out.append("\(indent)  params: " + message.customParams.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " "))
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
            return [head + "custom, \(size) B: \(custom.data.count) bytes of data" + (custom.description.isEmpty ? "" : ", \(quoted(custom.description))")]
        case .image(let image)?:
            let renditions = image.images.map { info in
                "\(info.type.protoName.replacingOccurrences(of: "IMAGE_TYPE_", with: "").lowercased()) \(info.width)×\(info.height) \(info.size) B"
            }
            return [head + "image \(image.format.protoName.replacingOccurrences(of: "IMAGE_FORMAT_", with: "").lowercased()), \(size) B: " + renditions.joined(separator: "; ")]
        case .video(let video)?:
            return [head + "video, \(size) B: \(video.durationS) s, \(video.videoSize) B \(video.videoType); snapshot \(video.snapshotWidth)×\(video.snapshotHeight)"]
        case .sound(let sound)?:
            return [head + "voice, \(size) B: \(sound.durationS) s, \(sound.size) B"]
        case .file(let file)?:
            return [head + "file, \(size) B: \(quoted(file.name)), \(file.size) B"]
        case .location(let location)?:
            return [head + "location, \(size) B: \(location.latitude), \(location.longitude) \(quoted(location.description))"]
        case .face(let face)?:
            return [head + "face #\(face.index), \(size) B"]
        case .groupTips(let tips)?:
            return [head + "group tips \(tips.type.protoName.replacingOccurrences(of: "GROUP_TIPS_TYPE_", with: "").lowercased()), \(size) B: "
                + "by \(tips.operatorID)" + (tips.memberIDs.isEmpty ? "" : " on \(tips.memberIDs.joined(separator: ", "))")
                + (tips.memberCount == 0 ? "" : ", \(tips.memberCount) members")]
        case .merger(let merger)?:
            var out = [head + "merger \(quoted(merger.title)), \(size) B: "
                + (merger.ref.map { "\(merger.messageCount) messages stored at \($0.key)" } ?? "\(merger.messages.count) messages")]
            for (n, message) in merger.messages.enumerated() {
                let branch = n == merger.messages.count - 1 ? "└─ " : "├─ "
                let lines = messageLines(message, indent: "")
                out.append(indent + "    " + branch + (lines.first ?? ""))
                let continuation = n == merger.messages.count - 1 ? "   " : "│  "
                out += lines.dropFirst().map { indent + "    " + continuation + $0 }
            }
            return out
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
