/// `validate()`'s rules for the content of schema version 3 (media metadata, rich text, quote
/// snapshots, stickers, contact cards, calls, bot buttons, streamed messages, the end-to-end
/// envelope) and the seed rules added with it (@ messages, recall window, chatroom history,
/// online-only history, message body size).
extension ValidationIssue.Rule {
    // MARK: Seed rules

    /// An @ message whose content is not text only.
    ///
    /// Source: Tencent ("Currently, only text @ messages are supported", the message guide's
    /// section on group @ messages).
    public static let atNotText = Self(rawValue: "atNotText")
    /// A recall made more than ``ValidationLimits/recallWindowMs`` after the message was sent (the
    /// recall's `timeMs` against the referenced message's `serverTimeMs`, when both are set).
    ///
    /// Source: Tencent ("By default, the sender can recall a message that is sent within 2 minutes.
    /// You can change the time limit", revokeMessage).
    public static let recallWindow = Self(rawValue: "recallWindow")
    /// A history request for a chatroom.
    ///
    /// Source: Tencent ("Messages in an audio-video group (AVChatRoom) do not support local storage
    /// and multi-device roaming. Therefore, the getGroupHistoryMessageList API does not take effect
    /// on an audio-video group").
    public static let chatroomHistory = Self(rawValue: "chatroomHistory")
    /// A history request whose filters cannot match as meant: an empty or repeated user id in
    /// `senderIDs` or `recipientIDs`, more than ``ValidationLimits/maxHistoryFilterUsers`` of them,
    /// a negative `updatedAfterMs`, or a time range that ends before it starts.
    ///
    /// Source: QuickBlox (history search operators: `in` on sender_id and recipient_id, `gt` on
    /// updated_at, `ctn` on message, and `mark_as_read`); IMCodec (events.proto HistoryRequest).
    public static let historyFilter = Self(rawValue: "historyFilter")
    /// A message that is both online-only and saved to history.
    ///
    /// Source: Tencent (online messages, `onlineUserOnly`, "cannot be stored offline" or roamed);
    /// IMCodec (message.proto MessageFlag: with ONLINE_USER_ONLY, SAVE_TO_HISTORY is ignored, so a
    /// sender that sets both asks for something it will not get).
    public static let onlineOnlyWithHistory = Self(rawValue: "onlineOnlyWithHistory")
    /// A message whose content (its elements, encoded, without the inline messages of a merger) is
    /// above ``ValidationLimits/maxMessageBodySize`` bytes. A product rule, separate from the
    /// decoder's resource limits (``DecodingOptions``).
    ///
    /// Source: Tencent's public docs (a message body is at most 12 KB; larger content goes by
    /// reference: a file, or a merger stored separately).
    public static let messageBodyTooLarge = Self(rawValue: "messageBodyTooLarge")

    /// A group kind on a conversation of the wrong type: AVChatRoom on anything but a chatroom,
    /// Work, Public, Meeting or a QuickBlox public dialog on anything but a group, Community on
    /// anything but a group or an ultra group.
    ///
    /// Source: Tencent (group types Work, Public, Meeting, AVChatRoom and Community; AVChatRoom is the
    /// audio-video group, whose members come and go); QuickBlox (public dialogs are group dialogs
    /// anyone may join); IMCodec (common.proto GroupKind).
    public static let groupKind = Self(rawValue: "groupKind")
    /// A message marked offline that is online-only or status-only (never stored, so never
    /// delivered offline), or that the holder sent.
    ///
    /// Source: RongCloud (RCMessage `isOffLine`: whether it is an offline message, reported to the
    /// receiver); IMCodec (message.proto MessageFlag: online-only messages are never stored).
    public static let offlineMessage = Self(rawValue: "offlineMessage")
    /// A file whose QuickBlox attachment type is image, video or audio, which have their own
    /// elements.
    ///
    /// Source: QuickBlox (QBChatAttachment `type`, "image" in its example); IMCodec (message.proto
    /// FileElement.attachment_type).
    public static let attachmentType = Self(rawValue: "attachmentType")
    /// Group tips whose member profiles are not its member ids, in order, or whose operator profile
    /// names another user than the operator.
    ///
    /// Source: Tencent (V2TIMGroupTipsElem: `memberList` holds the members the tip is about,
    /// `opMember` the operator).
    public static let groupTipsProfiles = Self(rawValue: "groupTipsProfiles")
    /// A key publish without a device, kind or bundle, or a fetch without a user or kind; a fetch
    /// answer with bundles of another user or with more than one one-time key each.
    ///
    /// Source: IMCodec (session.proto KeyBundle: a fetch hands out at most one one-time key per
    /// device), after Signal's prekey service.
    public static let keyBundle = Self(rawValue: "keyBundle")

    // MARK: Content of schema version 3

    /// A style range outside its text, empty, splitting a surrogate pair or `UNSPECIFIED`; a link
    /// without an http(s) url, or a url on a range that is not a link.
    ///
    /// Source: IMCodec (message.proto StyleRange: UTF-16 code units, as MentionRange); Telegram's
    /// MessageEntity and Signal's BodyRange count the same units.
    public static let styleRange = Self(rawValue: "styleRange")
    /// A SHA-256 that is not 32 bytes, or a media key without its algorithm or key.
    ///
    /// Source: IMCodec (message.proto MediaKey, media metadata); Signal's attachment pointers carry
    /// a key and a SHA-256 digest of the ciphertext.
    public static let mediaMetadata = Self(rawValue: "mediaMetadata")
    /// A quote snapshot on a message that quotes nothing, or without an author.
    ///
    /// Source: IMCodec (message.proto QuoteSnapshot: what the quoted message showed).
    public static let quoteSnapshot = Self(rawValue: "quoteSnapshot")
    /// A sticker without its pack or sticker id, or a contact card with neither a user id nor a name.
    ///
    /// Source: IMCodec (message.proto StickerElement: a receiver fetches the sticker by pack);
    /// WhatsApp and Signal contact cards carry a name.
    public static let stickerOrContact = Self(rawValue: "stickerOrContact")
    /// A call signal without a call id, a signal, the user who sent it, or (an invite) invitees and
    /// media; a call log without a call id or outcome, or with a duration for a call that never
    /// connected.
    ///
    /// Source: Tencent TUICallKit signalling (invite, accept, reject, cancel, timeout name the call
    /// and its invitees); IMCodec (events.proto CallEvent, message.proto CallLogElement).
    public static let call = Self(rawValue: "call")
    /// Buttons without rows, a row without buttons, a button without id, label or action, two
    /// buttons with one id, an OPEN_URL button without an http(s) url, or data above 64 bytes.
    ///
    /// Source: Telegram (InlineKeyboardButton: callback_data is 1-64 bytes); IMCodec (message.proto
    /// ButtonsElement).
    public static let buttons = Self(rawValue: "buttons")
    /// A stream element or chunk without a stream id.
    ///
    /// Source: OpenIM (StreamMsgTips names its message); IMCodec (message.proto StreamElement).
    public static let stream = Self(rawValue: "stream")
    /// An encrypted element without algorithm, sending device or ciphertext, or sharing its chain
    /// with other elements.
    ///
    /// Source: IMCodec (message.proto EncryptedElement: the element holds the message's sealed
    /// elements, so it is the only one); Signal's envelopes name the sender device.
    public static let encryptedElement = Self(rawValue: "encryptedElement")
}

extension Validator {
    // MARK: Seed rules

    /// Tencent's rules on @ messages: text only, and at most `maxAtUsers` @, @ALL included.
    mutating func checkAt(_ message: Message, at path: String) {
        guard let at = message.at, !at.userIDs.isEmpty || at.atAll else { return }
        if message.elements.contains(where: { $0.content?.kind != .text }) {
            report(.atNotText, Self.join(path, "elements"), "an @ message holds text elements only")
        }
        let count = at.userIDs.count + (at.atAll ? 1 : 0)
        if count > limits.maxAtUsers {
            report(
                .atListTooLong,
                Self.join(path, "at"),
                "\(count) @ (@ALL counts as one); at most \(limits.maxAtUsers) are allowed"
            )
        }
    }

    mutating func checkBody(_ message: Message, at path: String) {
        let flags = MessageFlags(rawValue: message.flags)
        if flags.contains(.onlineUserOnly) && flags.contains(.saveToHistory) {
            report(
                .onlineOnlyWithHistory,
                Self.join(path, "flags"),
                "an online-only message is never stored, so it cannot be saved to history"
            )
        }
        // The body is the content as sent; a merger's inline messages are not counted (Tencent
        // stores a combined message's messages apart from the message that shows it).
        var body = MessagePlaintext()
        body.elements = message.elements.map { element in
            guard case .merger(var merger)? = element.content, !merger.messages.isEmpty else { return element }
            merger.messages = []
            var copy = element
            copy.content = .merger(merger)
            return copy
        }
        let size = body.serializedBytes().count
        if size > limits.maxMessageBodySize {
            report(
                .messageBodyTooLarge,
                Self.join(path, "elements"),
                "the content is \(size) bytes; at most \(limits.maxMessageBodySize) are allowed (send it by reference)"
            )
        }
        checkOffline(message, at: path)
        if let snapshot = message.quoteSnapshot {
            if message.quote == nil {
                report(.quoteSnapshot, Self.join(path, "quoteSnapshot"), "a quote snapshot without a quote")
            }
            if snapshot.authorID.isEmpty {
                report(.quoteSnapshot, Self.join(path, "quoteSnapshot.authorID"), "the snapshot names no author")
            }
        }
    }

    mutating func checkRecallWindow(_ recall: RecallEvent) {
        guard let sent = recall.message?.serverTimeMs, sent != 0, recall.timeMs != 0 else { return }
        let (elapsed, overflow) = recall.timeMs.subtractingReportingOverflow(sent)
        if overflow || elapsed > limits.recallWindowMs {
            report(
                .recallWindow,
                "recall.timeMs",
                "recalled \(overflow ? "long" : "\(elapsed) ms") after it was sent; "
                    + "the window is \(limits.recallWindowMs) ms"
            )
        }
    }

    mutating func checkHistoryConversation(_ request: HistoryRequest) {
        if request.conversation?.type == .chatroom {
            report(
                .chatroomHistory,
                "historyRequest.conversation",
                "a chatroom keeps no history: the request does not take effect"
            )
        }
    }

    mutating func checkHistoryFilters(_ request: HistoryRequest) {
        for (name, ids) in [("senderIDs", request.senderIDs), ("recipientIDs", request.recipientIDs)] {
            let path = "historyRequest.\(name)"
            if ids.count > limits.maxHistoryFilterUsers {
                report(
                    .historyFilter,
                    path,
                    "\(ids.count) users are named; at most \(limits.maxHistoryFilterUsers) are allowed"
                )
            }
            var seen = Set<String>()
            for (i, id) in ids.enumerated() where id.isEmpty || !seen.insert(id).inserted {
                report(.historyFilter, "\(path)[\(i)]", id.isEmpty ? "the user id is empty" : "\(id) is named twice")
            }
        }
        if request.updatedAfterMs < 0 {
            report(.historyFilter, "historyRequest.updatedAfterMs", "\(request.updatedAfterMs) is before 1970")
        }
        if request.startTimeMs != 0, request.endTimeMs != 0, request.endTimeMs < request.startTimeMs {
            report(
                .historyFilter,
                "historyRequest.endTimeMs",
                "the time range ends (\(request.endTimeMs)) before it starts (\(request.startTimeMs))"
            )
        }
    }

    mutating func checkGroupKind(_ conversation: Conversation?, at path: String) {
        guard let conversation, conversation.groupKind != .unspecified else { return }
        let allowed: Set<ConversationType>
        switch conversation.groupKind {
        case .avChatRoom: allowed = [.chatroom]
        case .community: allowed = [.group, .ultraGroup]
        default: allowed = [.group]
        }
        if !allowed.contains(conversation.type) {
            report(
                .groupKind,
                Self.join(path, "groupKind"),
                "a \(conversation.groupKind.protoName) group is not a \(conversation.type.protoName) conversation"
            )
        }
    }

    mutating func checkOffline(_ message: Message, at path: String) {
        guard message.isOffline else { return }
        let flags = MessageFlags(rawValue: message.flags)
        if flags.contains(.onlineUserOnly) || message.storagePolicy == .statusOnly {
            report(
                .offlineMessage,
                Self.join(path, "isOffline"),
                "an online-only or status-only message is never stored, so never delivered offline"
            )
        }
        if message.direction == .sent {
            report(.offlineMessage, Self.join(path, "isOffline"), "only a received message is delivered offline")
        }
    }

    mutating func checkProfiles(_ tips: GroupTipsElement, at path: String) {
        if !tips.memberProfiles.isEmpty && tips.memberProfiles.map(\.userID) != tips.memberIDs {
            report(
                .groupTipsProfiles,
                Self.join(path, "memberProfiles"),
                "the member profiles are not the tip's member ids, in the same order"
            )
        }
        if let op = tips.operatorProfile, op.userID != tips.operatorID {
            report(.groupTipsProfiles, Self.join(path, "operatorProfile"), "the operator profile is another user's")
        }
    }

    // MARK: Elements

    mutating func checkStyles(_ text: TextElement, at path: String) {
        let units = Array(text.text.utf16)
        for (i, range) in text.styles.enumerated() {
            let item = "\(path).styles[\(i)]"
            let start = Int(range.offset)
            let (end, overflow) = start.addingReportingOverflow(Int(range.length))
            if range.length == 0 || overflow || end > units.count {
                report(
                    .styleRange,
                    item,
                    "\(range.offset)+\(range.length) is not inside the text's \(units.count) UTF-16 code units"
                )
                continue
            }
            if UTF16.isTrailSurrogate(units[start]) || (end < units.count && UTF16.isTrailSurrogate(units[end])) {
                report(.styleRange, item, "the range splits a surrogate pair")
            }
            if range.style == .unspecified {
                report(.styleRange, item, "the range has no style")
            }
            if range.style == .link {
                if !Self.isHTTPURL(range.url) {
                    report(.styleRange, item + ".url", "a link's url \"\(range.url)\" is not an http(s) URL")
                }
            } else if !range.url.isEmpty {
                report(.styleRange, item + ".url", "only a link has a url")
            }
        }
    }

    static func isHTTPURL(_ url: String) -> Bool {
        let lower = url.lowercased()
        return (lower.hasPrefix("https://") || lower.hasPrefix("http://")) && lower.count > 8
    }

    mutating func checkMedia(sha256: [UInt8], key: MediaKey?, at path: String) {
        if !sha256.isEmpty && sha256.count != 32 {
            report(.mediaMetadata, Self.join(path, "sha256"), "a SHA-256 is 32 bytes, not \(sha256.count)")
        }
        guard let key else { return }
        if key.algorithm.isEmpty || key.key.isEmpty {
            report(.mediaMetadata, Self.join(path, "mediaKey"), "a media key names its algorithm and holds a key")
        }
        if !key.ciphertextSha256.isEmpty && key.ciphertextSha256.count != 32 {
            report(
                .mediaMetadata,
                Self.join(path, "mediaKey.ciphertextSha256"),
                "a SHA-256 is 32 bytes, not \(key.ciphertextSha256.count)"
            )
        }
    }

    /// The rules for the element kinds of schema version 3 and the media metadata of version 3.
    mutating func checkContent(_ content: MessageElement.Content, chainLength: Int, at path: String) {
        switch content {
        case .image(let image): checkMedia(sha256: image.sha256, key: image.mediaKey, at: path + ".image")
        case .video(let video): checkMedia(sha256: video.sha256, key: video.mediaKey, at: path + ".video")
        case .sound(let sound): checkMedia(sha256: sound.sha256, key: sound.mediaKey, at: path + ".sound")
        case .file(let file):
            checkMedia(sha256: file.sha256, key: file.mediaKey, at: path + ".file")
            if ["image", "video", "audio"].contains(file.attachmentType.lowercased()) {
                report(
                    .attachmentType,
                    path + ".file.attachmentType",
                    "a QuickBlox \"\(file.attachmentType)\" attachment is an image, video or sound element"
                )
            }
        case .text(let text): checkStyles(text, at: path + ".text")
        case .sticker(let sticker):
            if sticker.packID.isEmpty || sticker.stickerID.isEmpty {
                report(.stickerOrContact, path + ".sticker", "a sticker names its pack and its id in the pack")
            }
        case .contactCard(let card):
            if card.userID.isEmpty && card.displayName.isEmpty {
                report(.stickerOrContact, path + ".contactCard", "a contact card names a user or a person")
            }
        case .callLog(let log):
            if log.callID.isEmpty || log.outcome == .unspecified {
                report(.call, path + ".callLog", "a call log names its call and how it ended")
            }
            if log.durationS != 0 && log.outcome != .completed {
                report(.call, path + ".callLog.durationS", "only a completed call has a duration")
            }
        case .buttons(let buttons): check(buttons, at: path + ".buttons")
        case .stream(let stream):
            if stream.streamID.isEmpty { report(.stream, path + ".stream", "the stream has no id") }
        case .encrypted(let sealed):
            if sealed.algorithm.isEmpty || sealed.senderDeviceID.isEmpty || sealed.ciphertext.isEmpty {
                report(
                    .encryptedElement,
                    path + ".encrypted",
                    "an encrypted element names its algorithm and sending device and holds ciphertext"
                )
            }
            if chainLength > 1 {
                report(.encryptedElement, path, "an encrypted element is the only element of its message")
            }
        case .custom, .location, .face, .groupTips, .merger, .poll:
            break
        }
    }

    mutating func check(_ buttons: ButtonsElement, at path: String) {
        if buttons.rows.isEmpty { report(.buttons, path, "no rows of buttons") }
        var ids = Set<String>()
        for (r, row) in buttons.rows.enumerated() {
            if row.buttons.isEmpty { report(.buttons, "\(path).rows[\(r)]", "a row without buttons") }
            for (b, button) in row.buttons.enumerated() {
                let item = "\(path).rows[\(r)].buttons[\(b)]"
                if button.id.isEmpty || button.label.isEmpty || button.action == .unspecified {
                    report(.buttons, item, "a button has an id, a label and an action")
                }
                if !button.id.isEmpty && !ids.insert(button.id).inserted {
                    report(.buttons, item + ".id", "another button has the id \"\(button.id)\"")
                }
                if button.action == .openURL && !Self.isHTTPURL(button.url) {
                    report(.buttons, item + ".url", "\"\(button.url)\" is not an http(s) URL")
                }
                if button.data.count > 64 {
                    report(.buttons, item + ".data", "\(button.data.count) bytes of data; at most 64 are allowed")
                }
            }
        }
    }

    // MARK: Events

    mutating func check(_ call: CallEvent) {
        if call.callID.isEmpty { report(.call, "call.callID", "the signal names no call") }
        if call.signal == .unspecified { report(.unspecifiedEnum, "call.signal", "the call signal is not set") }
        requireUser(call.userID, at: "call.userID", "the signal does not say who sent it")
        checkConversation(call.conversation, at: "call.conversation")
        if call.signal == .invite {
            if call.inviteeIDs.isEmpty { report(.call, "call.inviteeIDs", "an invite invites nobody") }
            if call.media == .unspecified { report(.call, "call.media", "an invite says audio or video") }
        }
        checkMilliseconds(call.timeMs, at: "call.timeMs")
    }

    mutating func check(_ publish: KeyPublish) {
        guard let bundle = publish.bundle else {
            report(.keyBundle, "keyPublish.bundle", "the publish holds no bundle")
            return
        }
        if bundle.deviceID.isEmpty || bundle.kind == .unspecified || bundle.bundle.isEmpty {
            report(.keyBundle, "keyPublish.bundle", "a published bundle names its device and kind and holds keys")
        }
    }

    mutating func check(_ request: KeyFetchRequest) {
        if request.userID.isEmpty || request.kind == .unspecified {
            report(.keyBundle, "keyFetchRequest", "a key fetch names the user and the kind of keys")
        }
    }

    mutating func check(_ response: KeyFetchResponse) {
        for (i, bundle) in response.bundles.enumerated() {
            if bundle.userID != response.userID || bundle.oneTimeKeys.count > 1 {
                report(
                    .keyBundle,
                    "keyFetchResponse.bundles[\(i)]",
                    "a fetched bundle is the user's, with at most one one-time key"
                )
            }
        }
        if response.errorCode != 0 && !response.bundles.isEmpty {
            report(.keyBundle, "keyFetchResponse.bundles", "a failed fetch returns no bundles")
        }
    }

    mutating func check(_ chunk: StreamChunk) {
        checkRef(chunk.message, at: "streamChunk.message")
        if chunk.streamID.isEmpty { report(.stream, "streamChunk.streamID", "the chunk names no stream") }
        checkMilliseconds(chunk.timeMs, at: "streamChunk.timeMs")
    }
}
