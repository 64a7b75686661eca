import IMCodec

// Every field of every IMCodec type, in field-number order (see Digest).

extension Frame {
    func digest(into d: inout Digest) {
        d.add(schemaVersion)
        d.add(minReaderVersion)
        d.add(requestID)
        d.add(streamPosition)
        switch payload {
        case nil: d.add(UInt32(0))
        case .message(let v)?: d.add(UInt32(10)); v.digest(into: &d)
        case .receipt(let v)?: d.add(UInt32(11)); v.digest(into: &d)
        case .receipts(let v)?: d.add(UInt32(12)); v.digest(into: &d)
        case .c2cReadReceipt(let v)?: d.add(UInt32(13)); v.digest(into: &d)
        case .groupReadMembers(let v)?: d.add(UInt32(14)); v.digest(into: &d)
        case .recall(let v)?: d.add(UInt32(20)); v.digest(into: &d)
        case .edit(let v)?: d.add(UInt32(21)); v.digest(into: &d)
        case .delete(let v)?: d.add(UInt32(22)); v.digest(into: &d)
        case .typing(let v)?: d.add(UInt32(23)); v.digest(into: &d)
        case .markRead(let v)?: d.add(UInt32(24)); v.digest(into: &d)
        case .systemNotice(let v)?: d.add(UInt32(25)); v.digest(into: &d)
        case .sendAck(let v)?: d.add(UInt32(30)); v.digest(into: &d)
        case .historyRequest(let v)?: d.add(UInt32(31)); v.digest(into: &d)
        case .historyResponse(let v)?: d.add(UInt32(32)); v.digest(into: &d)
        case .mergerPayload(let v)?: d.add(UInt32(33)); v.digest(into: &d)
        case .conversationListRequest(let v)?: d.add(UInt32(85)); v.digest(into: &d)
        case .conversationList(let v)?: d.add(UInt32(86)); v.digest(into: &d)
        case .conversationUpdate(let v)?: d.add(UInt32(87)); v.digest(into: &d)
        case .extensionUpdate(let v)?: d.add(UInt32(88)); v.digest(into: &d)
        case .extensionFetchRequest(let v)?: d.add(UInt32(89)); v.digest(into: &d)
        case .extensionFetchResponse(let v)?: d.add(UInt32(90)); v.digest(into: &d)
        case .blocklistChange(let v)?: d.add(UInt32(91)); v.digest(into: &d)
        case .blocklistRequest?: d.add(UInt32(92))
        case .blocklistResponse(let v)?: d.add(UInt32(93)); v.digest(into: &d)
        case let other?:
            // The other payload kinds of schema versions 2 and 3: the corpus holds none; not read here.
            d.add(UInt32(other.kind.rawValue).addingReportingOverflow(1 << 31).partialValue)
        }
        d.add(bytes: unknownFields.bytes)
    }
}

@inline(__always)
private func digestOptional<M>(_ m: M?, _ d: inout Digest, _ body: (M, inout Digest) -> Void) {
    if let m { d.add(true); body(m, &d) } else { d.add(false) }
}

extension Conversation {
    func digest(into d: inout Digest) {
        d.add(enum: Int(type.rawValue))
        d.add(targetID)
        d.add(channelID)
    }
}

extension MessageRef {
    func digest(into d: inout Digest) {
        d.add(clientMsgID)
        d.add(serverMsgUID)
        d.add(seq)
        digestOptional(conversation, &d) { $0.digest(into: &$1) }
        d.add(senderID)
        d.add(serverTimeMs)
    }
}

extension AtInfo {
    func digest(into d: inout Digest) {
        d.add(userIDs)
        d.add(atAll)
    }
}

extension OfflinePushInfo {
    func digest(into d: inout Digest) {
        d.add(title)
        d.add(description)
        d.add(ext)
        d.add(iosSound)
        d.add(androidSound)
        d.add(disabled)
    }
}

extension Message {
    func digest(into d: inout Digest) {
        d.add(clientMsgID)
        d.add(serverMsgUID)
        d.add(seq)
        d.add(random)
        d.add(senderID)
        digestOptional(conversation, &d) { $0.digest(into: &$1) }
        d.add(clientTimeMs)
        d.add(serverTimeMs)
        d.add(enum: Int(priority.rawValue))
        d.add(enum: Int(status.rawValue))
        d.add(flags)
        d.add(targetReceivers)
        digestOptional(at, &d) { $0.digest(into: &$1) }
        digestOptional(offlinePush, &d) { $0.digest(into: &$1) }
        d.add(bytes: cloudCustomData)
        d.add(customParams)
        d.add(expansion)
        d.add(enum: Int(storagePolicy.rawValue))
        digestOptional(quote, &d) { $0.digest(into: &$1) }
        d.add(UInt64(elements.count))
        for element in elements { element.digest(into: &d) }
        d.add(editVersion)
        d.add(senderNickname)
        d.add(enum: Int(direction.rawValue))
        d.add(bytes: unknownFields.bytes)
    }
}

extension MessageElement {
    func digest(into d: inout Digest) {
        switch content {
        case nil: d.add(UInt32(0))
        case .text(let v)?: d.add(UInt32(1)); d.add(v.text)
        case .custom(let v)?: d.add(UInt32(2)); d.add(bytes: v.data); d.add(v.description); d.add(v.ext)
        case .image(let v)?:
            d.add(UInt32(3))
            d.add(enum: Int(v.format.rawValue))
            d.add(UInt64(v.images.count))
            for i in v.images {
                d.add(i.uuid); d.add(enum: Int(i.type.rawValue)); d.add(i.size); d.add(i.width); d.add(i.height);
                d.add(i.url)
            }
        case .video(let v)?:
            d.add(UInt32(4))
            d.add(v.videoUUID); d.add(v.videoType); d.add(v.videoSize); d.add(v.durationS); d.add(v.videoURL)
            d.add(v.snapshotUUID); d.add(v.snapshotType); d.add(v.snapshotSize); d.add(v.snapshotWidth)
            d.add(v.snapshotHeight); d.add(v.snapshotURL)
        case .sound(let v)?: d.add(UInt32(5)); d.add(v.uuid); d.add(v.size); d.add(v.durationS); d.add(v.url)
        case .file(let v)?: d.add(UInt32(6)); d.add(v.uuid); d.add(v.name); d.add(v.size); d.add(v.url)
        case .location(let v)?: d.add(UInt32(7)); d.add(v.description); d.add(v.longitude); d.add(v.latitude)
        case .face(let v)?: d.add(UInt32(8)); d.add(v.index); d.add(bytes: v.data)
        case .groupTips(let v)?:
            d.add(UInt32(9))
            d.add(enum: Int(v.type.rawValue)); d.add(v.groupID); d.add(v.operatorID); d.add(v.memberIDs)
            d.add(UInt64(v.groupChanges.count))
            for c in v.groupChanges {
                d.add(enum: Int(c.type.rawValue)); d.add(c.value); d.add(c.key); d.add(c.boolValue); d.add(c.intValue)
            }
            d.add(UInt64(v.memberChanges.count))
            for c in v.memberChanges { d.add(c.userID); d.add(c.muteTimeS) }
            d.add(v.memberCount)
            digestOptional(v.pinnedMessage, &d) { $0.digest(into: &$1) }
        case .merger(let v)?:
            d.add(UInt32(10))
            d.add(v.title); d.add(v.abstracts); d.add(v.compatibleText)
            d.add(UInt64(v.messages.count))
            for m in v.messages { m.digest(into: &d) }
            digestOptional(v.ref, &d) { r, d in
                d.add(r.key); d.add(r.size); d.add(bytes: r.sha256)
            }
            d.add(v.messageCount)
        case let other?:
            // Element kinds of schema versions 2 and 3: the corpus holds none; not read here.
            d.add(UInt32(other.kind.rawValue).addingReportingOverflow(1 << 31).partialValue)
        }
    }
}

extension MessageReceipt {
    func digest(into d: inout Digest) {
        d.add(enum: Int(kind.rawValue))
        digestOptional(message, &d) { $0.digest(into: &$1) }
        d.add(userID); d.add(isPeerRead); d.add(groupID); d.add(readCount); d.add(unreadCount); d.add(timeMs)
    }
}

extension C2CReadReceipt {
    func digest(into d: inout Digest) { d.add(userID); d.add(readTimeMs) }
}

extension ReceiptBatch {
    func digest(into d: inout Digest) {
        d.add(UInt64(receipts.count))
        for r in receipts { r.digest(into: &d) }
        d.add(UInt64(c2cReadReceipts.count))
        for r in c2cReadReceipts { r.digest(into: &d) }
    }
}

extension GroupReadMembers {
    func digest(into d: inout Digest) {
        digestOptional(message, &d) { $0.digest(into: &$1) }
        d.add(read); d.add(memberIDs); d.add(nextSeq); d.add(finished)
    }
}

extension RecallEvent {
    func digest(into d: inout Digest) {
        digestOptional(message, &d) { $0.digest(into: &$1) }
        d.add(revokerID); d.add(reason); d.add(timeMs)
    }
}

extension EditEvent {
    func digest(into d: inout Digest) {
        digestOptional(message, &d) { $0.digest(into: &$1) }
        digestOptional(newMessage, &d) { $0.digest(into: &$1) }
        d.add(editorID); d.add(timeMs)
    }
}

extension DeleteEvent {
    func digest(into d: inout Digest) {
        d.add(UInt64(messages.count))
        for m in messages { m.digest(into: &d) }
        d.add(enum: Int(scope.rawValue)); d.add(operatorID); d.add(timeMs)
    }
}

extension TypingEvent {
    func digest(into d: inout Digest) {
        digestOptional(conversation, &d) { $0.digest(into: &$1) }
        d.add(userID); d.add(enum: Int(state.rawValue))
    }
}

extension MarkReadEvent {
    func digest(into d: inout Digest) {
        digestOptional(conversation, &d) { $0.digest(into: &$1) }
        d.add(userID); d.add(readTimeMs); d.add(readSeq); d.add(allConversations)
    }
}

extension SystemNotice {
    func digest(into d: inout Digest) { d.add(type); d.add(params); d.add(text); d.add(timeMs) }
}

extension SendAck {
    func digest(into d: inout Digest) {
        d.add(clientMsgID); d.add(serverMsgUID); d.add(seq); d.add(serverTimeMs); d.add(errorCode)
        d.add(errorDescription)
        digestOptional(conversation, &d) { $0.digest(into: &$1) }
    }
}

extension HistoryRequest {
    func digest(into d: inout Digest) {
        digestOptional(conversation, &d) { $0.digest(into: &$1) }
        d.add(count); d.add(cursor); d.add(enum: Int(direction.rawValue))
    }
}

extension HistoryResponse {
    func digest(into d: inout Digest) {
        digestOptional(conversation, &d) { $0.digest(into: &$1) }
        d.add(UInt64(messages.count))
        for m in messages { m.digest(into: &d) }
        d.add(nextCursor); d.add(finished)
    }
}

extension MergerPayload {
    func digest(into d: inout Digest) {
        d.add(UInt64(messages.count))
        for m in messages { m.digest(into: &d) }
    }
}

// Conversation state (issue 17): the conversation list, message extensions, the blocklist.

extension ConversationListRequest {
    func digest(into d: inout Digest) { d.add(afterVersion); d.add(limit); d.add(cursor) }
}

extension ConversationInfo {
    func digest(into d: inout Digest) {
        digestOptional(conversation, &d) { $0.digest(into: &$1) }
        digestOptional(lastMessage, &d) { $0.digest(into: &$1) }
        d.add(maxSeq); d.add(readSeq); d.add(unreadCount)
        d.add(UInt64(atMe.count))
        for a in atMe { d.add(a.seq); d.add(enum: Int(a.kind.rawValue)) }
        d.add(pinned); d.add(enum: Int(receiveOption.rawValue)); d.add(archived); d.add(draftText); d.add(draftTimeMs)
        d.add(clearedSeq); d.add(hidden)
        d.add(UInt64(readHorizons.count))
        for h in readHorizons { d.add(h.userID); d.add(h.readSeq) }
        d.add(version); d.add(updatedAtMs)
    }
}

extension ConversationList {
    func digest(into d: inout Digest) {
        d.add(UInt64(conversations.count))
        for c in conversations { c.digest(into: &d) }
        d.add(hasMore); d.add(nextAfterVersion); d.add(errorCode); d.add(errorDescription)
        d.add(nextCursor)
    }
}

extension ConversationUpdate {
    func digest(into d: inout Digest) {
        digestOptional(conversation, &d) { $0.digest(into: &$1) }
        d.add(fields); d.add(pinned); d.add(archived); d.add(draftText); d.add(clearedSeq); d.add(hidden)
        d.add(userID); d.add(timeMs)
    }
}

private func digestEntries(_ entries: [ExtensionEntry], _ d: inout Digest) {
    d.add(UInt64(entries.count))
    for e in entries { d.add(e.key); d.add(e.value); d.add(e.version); d.add(e.removed) }
}

extension ExtensionUpdate {
    func digest(into d: inout Digest) {
        digestOptional(message, &d) { $0.digest(into: &$1) }
        digestEntries(set, &d); digestEntries(remove, &d); digestEntries(entries, &d)
        d.add(userID); d.add(timeMs)
    }
}

extension ExtensionFetchRequest {
    func digest(into d: inout Digest) {
        d.add(UInt64(messages.count))
        for m in messages { m.digest(into: &d) }
    }
}

extension ExtensionFetchResponse {
    func digest(into d: inout Digest) {
        d.add(UInt64(extensions.count))
        for e in extensions {
            digestOptional(e.message, &d) { $0.digest(into: &$1) }
            digestEntries(e.entries, &d)
        }
        d.add(errorCode); d.add(errorDescription)
    }
}

extension BlocklistChange {
    func digest(into d: inout Digest) {
        d.add(enum: Int(action.rawValue)); d.add(userIDs); d.add(userID); d.add(timeMs)
    }
}

extension BlocklistResponse {
    func digest(into d: inout Digest) { d.add(userIDs); d.add(errorCode); d.add(errorDescription) }
}
