import Foundation
import SwiftProtobuf
import SwiftProtobufSchemas

// Every field of every swift-protobuf type, in the same order as DigestIMCodec.swift (see Digest).
// swift-protobuf keeps a sub-message's presence apart from its value (hasX), so the walk passes `hasX ? x : nil`.

extension Imcodec_V1_Frame {
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
        case .c2CReadReceipt(let v)?: d.add(UInt32(13)); v.digest(into: &d)
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
        case .some:
            // The other payload kinds of schema versions 2 and 3 (session layer, events, calls, keys):
            // the traffic corpus holds none, so this digest does not read them.
            d.add(UInt32(1 << 31))
        }
        d.add(bytes: unknownFields.data)
    }
}

@inline(__always)
private func digestOptional<M>(_ m: M?, _ d: inout Digest, _ body: (M, inout Digest) -> Void) {
    if let m { d.add(true); body(m, &d) } else { d.add(false) }
}

extension Imcodec_V1_Conversation {
    func digest(into d: inout Digest) {
        d.add(enum: type.rawValue)
        d.add(targetID)
        d.add(channelID)
    }
}

extension Imcodec_V1_MessageRef {
    func digest(into d: inout Digest) {
        d.add(clientMsgID)
        d.add(serverMsgUid)
        d.add(seq)
        digestOptional(hasConversation ? conversation : nil, &d) { $0.digest(into: &$1) }
        d.add(senderID)
        d.add(serverTimeMs)
    }
}

extension Imcodec_V1_AtInfo {
    func digest(into d: inout Digest) {
        d.add(userIds)
        d.add(atAll)
    }
}

extension Imcodec_V1_OfflinePushInfo {
    func digest(into d: inout Digest) {
        d.add(title)
        d.add(description_p)
        d.add(ext)
        d.add(iosSound)
        d.add(androidSound)
        d.add(disabled)
    }
}

extension Imcodec_V1_Message {
    func digest(into d: inout Digest) {
        d.add(clientMsgID)
        d.add(serverMsgUid)
        d.add(seq)
        d.add(random)
        d.add(senderID)
        digestOptional(hasConversation ? conversation : nil, &d) { $0.digest(into: &$1) }
        d.add(clientTimeMs)
        d.add(serverTimeMs)
        d.add(enum: priority.rawValue)
        d.add(enum: status.rawValue)
        d.add(flags)
        d.add(targetReceivers)
        digestOptional(hasAt ? at : nil, &d) { $0.digest(into: &$1) }
        digestOptional(hasOfflinePush ? offlinePush : nil, &d) { $0.digest(into: &$1) }
        d.add(bytes: cloudCustomData)
        d.add(customParams)
        d.add(expansion)
        d.add(enum: storagePolicy.rawValue)
        digestOptional(hasQuote ? quote : nil, &d) { $0.digest(into: &$1) }
        d.add(UInt64(elements.count))
        for element in elements { element.digest(into: &d) }
        d.add(editVersion)
        d.add(senderNickname)
        d.add(enum: direction.rawValue)
        d.add(bytes: unknownFields.data)
    }
}

extension Imcodec_V1_MessageElement {
    func digest(into d: inout Digest) {
        switch content {
        case nil: d.add(UInt32(0))
        case .text(let v)?: d.add(UInt32(1)); d.add(v.text)
        case .custom(let v)?: d.add(UInt32(2)); d.add(bytes: v.data); d.add(v.description_p); d.add(v.ext)
        case .image(let v)?:
            d.add(UInt32(3))
            d.add(enum: v.format.rawValue)
            d.add(UInt64(v.images.count))
            for i in v.images {
                d.add(i.uuid); d.add(enum: i.type.rawValue); d.add(i.size); d.add(i.width); d.add(i.height);
                d.add(i.url)
            }
        case .video(let v)?:
            d.add(UInt32(4))
            d.add(v.videoUuid); d.add(v.videoType); d.add(v.videoSize); d.add(v.durationS); d.add(v.videoURL)
            d.add(v.snapshotUuid); d.add(v.snapshotType); d.add(v.snapshotSize); d.add(v.snapshotWidth)
            d.add(v.snapshotHeight); d.add(v.snapshotURL)
        case .sound(let v)?: d.add(UInt32(5)); d.add(v.uuid); d.add(v.size); d.add(v.durationS); d.add(v.url)
        case .file(let v)?: d.add(UInt32(6)); d.add(v.uuid); d.add(v.name); d.add(v.size); d.add(v.url)
        case .location(let v)?: d.add(UInt32(7)); d.add(v.description_p); d.add(v.longitude); d.add(v.latitude)
        case .face(let v)?: d.add(UInt32(8)); d.add(v.index); d.add(bytes: v.data)
        case .groupTips(let v)?:
            d.add(UInt32(9))
            d.add(enum: v.type.rawValue); d.add(v.groupID); d.add(v.operatorID); d.add(v.memberIds)
            d.add(UInt64(v.groupChanges.count))
            for c in v.groupChanges {
                d.add(enum: c.type.rawValue); d.add(c.value); d.add(c.key); d.add(c.boolValue); d.add(c.intValue)
            }
            d.add(UInt64(v.memberChanges.count))
            for c in v.memberChanges { d.add(c.userID); d.add(c.muteTimeS) }
            d.add(v.memberCount)
            digestOptional(v.hasPinnedMessage ? v.pinnedMessage : nil, &d) { $0.digest(into: &$1) }
        case .merger(let v)?:
            d.add(UInt32(10))
            d.add(v.title); d.add(v.abstracts); d.add(v.compatibleText)
            d.add(UInt64(v.messages.count))
            for m in v.messages { m.digest(into: &d) }
            digestOptional(v.hasRef ? v.ref : nil, &d) { r, d in
                d.add(r.key); d.add(r.size); d.add(bytes: r.sha256)
            }
            d.add(v.messageCount)
        case .some:
            // The element kinds of schema versions 2 and 3 (poll, sticker, contact card, call log,
            // buttons, stream, encrypted): the traffic corpus holds none, so this digest does not read them.
            d.add(UInt32(1 << 31))
        }
    }
}

extension Imcodec_V1_MessageReceipt {
    func digest(into d: inout Digest) {
        d.add(enum: kind.rawValue)
        digestOptional(hasMessage ? message : nil, &d) { $0.digest(into: &$1) }
        d.add(userID); d.add(isPeerRead); d.add(groupID); d.add(readCount); d.add(unreadCount); d.add(timeMs)
    }
}

extension Imcodec_V1_C2CReadReceipt {
    func digest(into d: inout Digest) { d.add(userID); d.add(readTimeMs) }
}

extension Imcodec_V1_ReceiptBatch {
    func digest(into d: inout Digest) {
        d.add(UInt64(receipts.count))
        for r in receipts { r.digest(into: &d) }
        d.add(UInt64(c2CReadReceipts.count))
        for r in c2CReadReceipts { r.digest(into: &d) }
    }
}

extension Imcodec_V1_GroupReadMembers {
    func digest(into d: inout Digest) {
        digestOptional(hasMessage ? message : nil, &d) { $0.digest(into: &$1) }
        d.add(read); d.add(memberIds); d.add(nextSeq); d.add(finished)
    }
}

extension Imcodec_V1_RecallEvent {
    func digest(into d: inout Digest) {
        digestOptional(hasMessage ? message : nil, &d) { $0.digest(into: &$1) }
        d.add(revokerID); d.add(reason); d.add(timeMs)
    }
}

extension Imcodec_V1_EditEvent {
    func digest(into d: inout Digest) {
        digestOptional(hasMessage ? message : nil, &d) { $0.digest(into: &$1) }
        digestOptional(hasNewMessage ? newMessage : nil, &d) { $0.digest(into: &$1) }
        d.add(editorID); d.add(timeMs)
    }
}

extension Imcodec_V1_DeleteEvent {
    func digest(into d: inout Digest) {
        d.add(UInt64(messages.count))
        for m in messages { m.digest(into: &d) }
        d.add(enum: scope.rawValue); d.add(operatorID); d.add(timeMs)
    }
}

extension Imcodec_V1_TypingEvent {
    func digest(into d: inout Digest) {
        digestOptional(hasConversation ? conversation : nil, &d) { $0.digest(into: &$1) }
        d.add(userID); d.add(enum: state.rawValue)
    }
}

extension Imcodec_V1_MarkReadEvent {
    func digest(into d: inout Digest) {
        digestOptional(hasConversation ? conversation : nil, &d) { $0.digest(into: &$1) }
        d.add(userID); d.add(readTimeMs); d.add(readSeq); d.add(allConversations)
    }
}

extension Imcodec_V1_SystemNotice {
    func digest(into d: inout Digest) { d.add(type); d.add(params); d.add(text); d.add(timeMs) }
}

extension Imcodec_V1_SendAck {
    func digest(into d: inout Digest) {
        d.add(clientMsgID); d.add(serverMsgUid); d.add(seq); d.add(serverTimeMs); d.add(errorCode)
        d.add(errorDescription)
        digestOptional(hasConversation ? conversation : nil, &d) { $0.digest(into: &$1) }
    }
}

extension Imcodec_V1_HistoryRequest {
    func digest(into d: inout Digest) {
        digestOptional(hasConversation ? conversation : nil, &d) { $0.digest(into: &$1) }
        d.add(count); d.add(cursor); d.add(enum: direction.rawValue)
    }
}

extension Imcodec_V1_HistoryResponse {
    func digest(into d: inout Digest) {
        digestOptional(hasConversation ? conversation : nil, &d) { $0.digest(into: &$1) }
        d.add(UInt64(messages.count))
        for m in messages { m.digest(into: &d) }
        d.add(nextCursor); d.add(finished)
    }
}

extension Imcodec_V1_MergerPayload {
    func digest(into d: inout Digest) {
        d.add(UInt64(messages.count))
        for m in messages { m.digest(into: &d) }
    }
}

// Conversation state (issue 17): the conversation list, message extensions, the blocklist.

extension Imcodec_V1_ConversationListRequest {
    func digest(into d: inout Digest) { d.add(afterVersion); d.add(limit); d.add(cursor) }
}

extension Imcodec_V1_ConversationInfo {
    func digest(into d: inout Digest) {
        digestOptional(hasConversation ? conversation : nil, &d) { $0.digest(into: &$1) }
        digestOptional(hasLastMessage ? lastMessage : nil, &d) { $0.digest(into: &$1) }
        d.add(maxSeq); d.add(readSeq); d.add(unreadCount)
        d.add(UInt64(atMe.count))
        for a in atMe { d.add(a.seq); d.add(enum: a.kind.rawValue) }
        d.add(pinned); d.add(enum: receiveOption.rawValue); d.add(archived); d.add(draftText); d.add(draftTimeMs)
        d.add(clearedSeq); d.add(hidden)
        d.add(UInt64(readHorizons.count))
        for h in readHorizons { d.add(h.userID); d.add(h.readSeq) }
        d.add(version); d.add(updatedAtMs)
    }
}

extension Imcodec_V1_ConversationList {
    func digest(into d: inout Digest) {
        d.add(UInt64(conversations.count))
        for c in conversations { c.digest(into: &d) }
        d.add(hasMore_p); d.add(nextAfterVersion); d.add(errorCode); d.add(errorDescription)
        d.add(nextCursor)
    }
}

extension Imcodec_V1_ConversationUpdate {
    func digest(into d: inout Digest) {
        digestOptional(hasConversation ? conversation : nil, &d) { $0.digest(into: &$1) }
        d.add(fields); d.add(pinned); d.add(archived); d.add(draftText); d.add(clearedSeq); d.add(hidden)
        d.add(userID); d.add(timeMs)
    }
}

private func digestEntries(_ entries: [Imcodec_V1_ExtensionEntry], _ d: inout Digest) {
    d.add(UInt64(entries.count))
    for e in entries { d.add(e.key); d.add(e.value); d.add(e.version); d.add(e.removed) }
}

extension Imcodec_V1_ExtensionUpdate {
    func digest(into d: inout Digest) {
        digestOptional(hasMessage ? message : nil, &d) { $0.digest(into: &$1) }
        digestEntries(set, &d); digestEntries(remove, &d); digestEntries(entries, &d)
        d.add(userID); d.add(timeMs)
    }
}

extension Imcodec_V1_ExtensionFetchRequest {
    func digest(into d: inout Digest) {
        d.add(UInt64(messages.count))
        for m in messages { m.digest(into: &d) }
    }
}

extension Imcodec_V1_ExtensionFetchResponse {
    func digest(into d: inout Digest) {
        d.add(UInt64(extensions.count))
        for e in extensions {
            digestOptional(e.hasMessage ? e.message : nil, &d) { $0.digest(into: &$1) }
            digestEntries(e.entries, &d)
        }
        d.add(errorCode); d.add(errorDescription)
    }
}

extension Imcodec_V1_BlocklistChange {
    func digest(into d: inout Digest) {
        d.add(enum: action.rawValue); d.add(userIds); d.add(userID); d.add(timeMs)
    }
}

extension Imcodec_V1_BlocklistResponse {
    func digest(into d: inout Digest) { d.add(userIds); d.add(errorCode); d.add(errorDescription) }
}
