import IMCodec

// Every field of every IMCodec type, read through the generated views (`Frame.View`, ...) in place
// in the decoder's arena, in the order DigestIMCodec.swift reads the values: the same digest for
// the same bytes, without building a value. A string or bytes field contributes its length and
// first byte, a map its entry count and the same order-independent sum over entries (the corpus is
// canonical, so no key repeats), unknown fields their length and first byte.

extension Digest {
    @inline(__always)
    mutating func add(_ s: StringView) {
        mix(UInt64(s.count))
        mix(UInt64(s.first ?? 0))
    }

    @inline(__always)
    mutating func add(_ b: BytesView) {
        mix(UInt64(b.count))
        mix(UInt64(b.first ?? 0))
    }

    mutating func add(_ strings: StringListView) {
        mix(UInt64(strings.count))
        for i in strings.indices { add(strings[i]) }
    }

    mutating func add(_ map: StringMapView) {
        mix(UInt64(map.count))
        var sum: UInt64 = 0
        for i in map.indices {
            let key = map.key(at: i)
            let value = map.value(at: i)
            sum &+=
                (UInt64(key.count) &* 0x9E37_79B9 &+ UInt64(value.count)) &* 31
                &+ UInt64(key.first ?? 0) &+ UInt64(value.first ?? 0) << 8
        }
        mix(sum)
    }

    /// Unknown fields as the value digest adds them (their bytes' length and first byte); copied
    /// only when there are any.
    mutating func addUnknownFields(_ has: Bool, _ fields: @autoclosure () -> UnknownFields) {
        if has { add(bytes: fields().bytes) } else { mix(0); mix(0) }
    }
}

extension Frame.View {
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
        default:
            // The other payload kinds of schema versions 2 and 3: the corpus holds none; not read here.
            d.add(UInt32(payloadKind?.rawValue ?? 0).addingReportingOverflow(1 << 31).partialValue)
        }
        d.addUnknownFields(hasUnknownFields, unknownFields)
    }
}

extension Conversation.View {
    func digest(into d: inout Digest) {
        d.add(enum: Int(type.rawValue))
        d.add(targetID)
        d.add(channelID)
    }
}

extension MessageRef.View {
    func digest(into d: inout Digest) {
        d.add(clientMsgID)
        d.add(serverMsgUID)
        d.add(seq)
        if let c = conversation { d.add(true); c.digest(into: &d) } else { d.add(false) }
        d.add(senderID)
        d.add(serverTimeMs)
    }
}

extension Message.View {
    func digest(into d: inout Digest) {
        d.add(clientMsgID)
        d.add(serverMsgUID)
        d.add(seq)
        d.add(random)
        d.add(senderID)
        if let c = conversation { d.add(true); c.digest(into: &d) } else { d.add(false) }
        d.add(clientTimeMs)
        d.add(serverTimeMs)
        d.add(enum: Int(priority.rawValue))
        d.add(enum: Int(status.rawValue))
        d.add(flags)
        d.add(targetReceivers)
        if let a = at { d.add(true); d.add(a.userIDs); d.add(a.atAll) } else { d.add(false) }
        if let o = offlinePush {
            d.add(true)
            d.add(o.title); d.add(o.description); d.add(o.ext); d.add(o.iosSound); d.add(o.androidSound);
            d.add(o.disabled)
        } else {
            d.add(false)
        }
        d.add(cloudCustomData)
        d.add(customParams)
        d.add(expansion)
        d.add(enum: Int(storagePolicy.rawValue))
        if let q = quote { d.add(true); q.digest(into: &d) } else { d.add(false) }
        let elements = self.elements
        d.add(UInt64(elements.count))
        for i in elements.indices { elements[i].digest(into: &d) }
        d.add(editVersion)
        d.add(senderNickname)
        d.add(enum: Int(direction.rawValue))
        d.addUnknownFields(hasUnknownFields, unknownFields)
    }
}

extension MessageElement.View {
    func digest(into d: inout Digest) {
        switch content {
        case nil: d.add(UInt32(0))
        case .text(let v)?: d.add(UInt32(1)); d.add(v.text)
        case .custom(let v)?: d.add(UInt32(2)); d.add(v.data); d.add(v.description); d.add(v.ext)
        case .image(let v)?:
            d.add(UInt32(3))
            d.add(enum: Int(v.format.rawValue))
            let images = v.images
            d.add(UInt64(images.count))
            for n in images.indices {
                let i = images[n]
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
        case .face(let v)?: d.add(UInt32(8)); d.add(v.index); d.add(v.data)
        case .groupTips(let v)?:
            d.add(UInt32(9))
            d.add(enum: Int(v.type.rawValue)); d.add(v.groupID); d.add(v.operatorID); d.add(v.memberIDs)
            let groupChanges = v.groupChanges
            d.add(UInt64(groupChanges.count))
            for n in groupChanges.indices {
                let c = groupChanges[n]
                d.add(enum: Int(c.type.rawValue)); d.add(c.value); d.add(c.key); d.add(c.boolValue); d.add(c.intValue)
            }
            let memberChanges = v.memberChanges
            d.add(UInt64(memberChanges.count))
            for n in memberChanges.indices { d.add(memberChanges[n].userID); d.add(memberChanges[n].muteTimeS) }
            d.add(v.memberCount)
            if let p = v.pinnedMessage { d.add(true); p.digest(into: &d) } else { d.add(false) }
        case .merger(let v)?:
            d.add(UInt32(10))
            d.add(v.title); d.add(v.abstracts); d.add(v.compatibleText)
            let messages = v.messages
            d.add(UInt64(messages.count))
            for n in messages.indices { messages[n].digest(into: &d) }
            if let r = v.ref { d.add(true); d.add(r.key); d.add(r.size); d.add(r.sha256) } else { d.add(false) }
            d.add(v.messageCount)
        default:
            // Element kinds the swift-protobuf schemas here do not have; the corpus holds none.
            d.add(UInt32(contentKind?.rawValue ?? 0).addingReportingOverflow(1 << 31).partialValue)
        }
    }
}

extension MessageReceipt.View {
    func digest(into d: inout Digest) {
        d.add(enum: Int(kind.rawValue))
        if let m = message { d.add(true); m.digest(into: &d) } else { d.add(false) }
        d.add(userID); d.add(isPeerRead); d.add(groupID); d.add(readCount); d.add(unreadCount); d.add(timeMs)
    }
}

extension C2CReadReceipt.View {
    func digest(into d: inout Digest) { d.add(userID); d.add(readTimeMs) }
}

extension ReceiptBatch.View {
    func digest(into d: inout Digest) {
        let receipts = self.receipts
        d.add(UInt64(receipts.count))
        for n in receipts.indices { receipts[n].digest(into: &d) }
        let c2c = c2cReadReceipts
        d.add(UInt64(c2c.count))
        for n in c2c.indices { c2c[n].digest(into: &d) }
    }
}

extension GroupReadMembers.View {
    func digest(into d: inout Digest) {
        if let m = message { d.add(true); m.digest(into: &d) } else { d.add(false) }
        d.add(read); d.add(memberIDs); d.add(nextSeq); d.add(finished)
    }
}

extension RecallEvent.View {
    func digest(into d: inout Digest) {
        if let m = message { d.add(true); m.digest(into: &d) } else { d.add(false) }
        d.add(revokerID); d.add(reason); d.add(timeMs)
    }
}

extension EditEvent.View {
    func digest(into d: inout Digest) {
        if let m = message { d.add(true); m.digest(into: &d) } else { d.add(false) }
        if let m = newMessage { d.add(true); m.digest(into: &d) } else { d.add(false) }
        d.add(editorID); d.add(timeMs)
    }
}

extension DeleteEvent.View {
    func digest(into d: inout Digest) {
        let messages = self.messages
        d.add(UInt64(messages.count))
        for n in messages.indices { messages[n].digest(into: &d) }
        d.add(enum: Int(scope.rawValue)); d.add(operatorID); d.add(timeMs)
    }
}

extension TypingEvent.View {
    func digest(into d: inout Digest) {
        if let c = conversation { d.add(true); c.digest(into: &d) } else { d.add(false) }
        d.add(userID); d.add(enum: Int(state.rawValue))
    }
}

extension MarkReadEvent.View {
    func digest(into d: inout Digest) {
        if let c = conversation { d.add(true); c.digest(into: &d) } else { d.add(false) }
        d.add(userID); d.add(readTimeMs); d.add(readSeq); d.add(allConversations)
    }
}

extension SystemNotice.View {
    func digest(into d: inout Digest) { d.add(type); d.add(params); d.add(text); d.add(timeMs) }
}

extension SendAck.View {
    func digest(into d: inout Digest) {
        d.add(clientMsgID); d.add(serverMsgUID); d.add(seq); d.add(serverTimeMs); d.add(errorCode)
        d.add(errorDescription)
        if let c = conversation { d.add(true); c.digest(into: &d) } else { d.add(false) }
    }
}

extension HistoryRequest.View {
    func digest(into d: inout Digest) {
        if let c = conversation { d.add(true); c.digest(into: &d) } else { d.add(false) }
        d.add(count); d.add(cursor); d.add(enum: Int(direction.rawValue))
    }
}

extension HistoryResponse.View {
    func digest(into d: inout Digest) {
        if let c = conversation { d.add(true); c.digest(into: &d) } else { d.add(false) }
        let messages = self.messages
        d.add(UInt64(messages.count))
        for n in messages.indices { messages[n].digest(into: &d) }
        d.add(nextCursor); d.add(finished)
    }
}

extension MergerPayload.View {
    func digest(into d: inout Digest) {
        let messages = self.messages
        d.add(UInt64(messages.count))
        for n in messages.indices { messages[n].digest(into: &d) }
    }
}

// Conversation state (issue 17): the conversation list, message extensions, the blocklist.

extension ConversationListRequest.View {
    func digest(into d: inout Digest) { d.add(afterVersion); d.add(limit); d.add(cursor) }
}

extension ConversationInfo.View {
    func digest(into d: inout Digest) {
        if let c = conversation { d.add(true); c.digest(into: &d) } else { d.add(false) }
        if let m = lastMessage { d.add(true); m.digest(into: &d) } else { d.add(false) }
        d.add(maxSeq); d.add(readSeq); d.add(unreadCount)
        let atMe = self.atMe
        d.add(UInt64(atMe.count))
        for n in atMe.indices { d.add(atMe[n].seq); d.add(enum: Int(atMe[n].kind.rawValue)) }
        d.add(pinned); d.add(enum: Int(receiveOption.rawValue)); d.add(archived); d.add(draftText); d.add(draftTimeMs)
        d.add(clearedSeq); d.add(hidden)
        let horizons = readHorizons
        d.add(UInt64(horizons.count))
        for n in horizons.indices { d.add(horizons[n].userID); d.add(horizons[n].readSeq) }
        d.add(version); d.add(updatedAtMs)
    }
}

extension ConversationList.View {
    func digest(into d: inout Digest) {
        let conversations = self.conversations
        d.add(UInt64(conversations.count))
        for n in conversations.indices { conversations[n].digest(into: &d) }
        d.add(hasMore); d.add(nextAfterVersion); d.add(errorCode); d.add(errorDescription)
        d.add(nextCursor)
    }
}

extension ConversationUpdate.View {
    func digest(into d: inout Digest) {
        if let c = conversation { d.add(true); c.digest(into: &d) } else { d.add(false) }
        d.add(fields); d.add(pinned); d.add(archived); d.add(draftText); d.add(clearedSeq); d.add(hidden)
        d.add(userID); d.add(timeMs)
    }
}

extension Digest {
    mutating func add(_ entries: ExtensionEntry.View.List) {
        mix(UInt64(entries.count))
        for n in entries.indices {
            let e = entries[n]
            add(e.key); add(e.value); add(e.version); add(e.removed)
        }
    }
}

extension ExtensionUpdate.View {
    func digest(into d: inout Digest) {
        if let m = message { d.add(true); m.digest(into: &d) } else { d.add(false) }
        d.add(set); d.add(remove); d.add(entries)
        d.add(userID); d.add(timeMs)
    }
}

extension ExtensionFetchRequest.View {
    func digest(into d: inout Digest) {
        let messages = self.messages
        d.add(UInt64(messages.count))
        for n in messages.indices { messages[n].digest(into: &d) }
    }
}

extension ExtensionFetchResponse.View {
    func digest(into d: inout Digest) {
        let extensions = self.extensions
        d.add(UInt64(extensions.count))
        for n in extensions.indices {
            let e = extensions[n]
            if let m = e.message { d.add(true); m.digest(into: &d) } else { d.add(false) }
            d.add(e.entries)
        }
        d.add(errorCode); d.add(errorDescription)
    }
}

extension BlocklistChange.View {
    func digest(into d: inout Digest) {
        d.add(enum: Int(action.rawValue)); d.add(userIDs); d.add(userID); d.add(timeMs)
    }
}

extension BlocklistResponse.View {
    func digest(into d: inout Digest) { d.add(userIDs); d.add(errorCode); d.add(errorDescription) }
}
