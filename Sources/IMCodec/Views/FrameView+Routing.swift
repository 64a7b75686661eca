/// The view of a decoded ``Frame`` that ``WireDecoder/withFrameView(_:_:)-([UInt8],_)`` lends: the
/// generated ``Frame/View`` (every field, in place), with the routing facts a server reads.
public typealias FrameView = Frame.View

// The routing facts of a frame (kind, conversation, sender, ids, flags, element kinds, where it
// goes), read through the generated views: no Swift value is built, and no C is touched here.
extension Frame.View {
    private var messageView: Message.View? {
        @_lifetime(copy self)
        get {
            guard case .message(let message)? = payload else { return nil }
            return message
        }
    }

    private var sendAckView: SendAck.View? {
        @_lifetime(copy self)
        get {
            guard case .sendAck(let ack)? = payload else { return nil }
            return ack
        }
    }

    /// The conversation the payload belongs to: a message's, an event's, an ack's, or that of the
    /// message a receipt, recall or edit refers to (a pin names its own).
    private var conversationView: Conversation.View? {
        @_lifetime(copy self)
        get {
            switch payload {
            case .message(let e)?: return e.conversation
            case .typing(let e)?: return e.conversation
            case .markRead(let e)?: return e.conversation
            case .sendAck(let e)?: return e.conversation
            case .historyRequest(let e)?: return e.conversation
            case .historyResponse(let e)?: return e.conversation
            case .pin(let e)?: return e.conversation
            case .disappearingTimer(let e)?: return e.conversation
            case .receiveOption(let e)?: return e.conversation
            case .membership(let e)?: return e.conversation
            case .syncRequest(let e)?: return e.conversation
            case .syncResponse(let e)?: return e.conversation
            case .call(let e)?: return e.conversation
            case .conversationUpdate(let e)?: return e.conversation
            case .recall?, .edit?, .receipt?, .groupReadMembers?, .groupReadMembersRequest?, .reaction?, .pollVote?,
                .pollUpdate?, .delete?, .streamChunk?, .extensionUpdate?:
                return referenceView?.conversation
            default: return nil
            }
        }
    }

    /// The message a receipt, group read-member page, recall, edit, delete (the first one),
    /// reaction, pin, vote, poll update, stream chunk or extension update refers to.
    private var referenceView: MessageRef.View? {
        @_lifetime(copy self)
        get {
            switch payload {
            case .receipt(let e)?: return e.message
            case .groupReadMembers(let e)?: return e.message
            case .recall(let e)?: return e.message
            case .edit(let e)?: return e.message
            case .groupReadMembersRequest(let e)?: return e.message
            case .reaction(let e)?: return e.message
            case .pin(let e)?: return e.message
            case .pollVote(let e)?: return e.pollMessage
            case .pollUpdate(let e)?: return e.pollMessage
            case .delete(let e)?: return e.messages.first
            case .streamChunk(let e)?: return e.message
            case .extensionUpdate(let e)?: return e.message
            default: return nil
            }
        }
    }

    /// The conversation's type (``ConversationType/unspecified`` when the payload has none).
    public var conversationType: ConversationType { conversationView?.type ?? .unspecified }

    /// The conversation's target: the peer's user id or the group id ("" when none). For a receipt,
    /// recall, edit or delete it is the target of the referenced message's conversation (for a
    /// receipt of a one-to-one message, the reader): ``route`` says where the frame goes.
    public var targetID: String { conversationView?.targetID.materialize() ?? "" }

    /// The conversation's ultra-group channel id ("" when none).
    public var channelID: String { conversationView?.channelID.materialize() ?? "" }

    /// Calls `body` with the target id's UTF-8 bytes, without making a String (for routing tables
    /// keyed by bytes). The buffer is valid only during the call.
    public func withTargetIDBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        guard let conversation = conversationView else { return try body(UnsafeRawBufferPointer(start: nil, count: 0)) }
        return try conversation.targetID.withUnsafeBytes(body)
    }

    /// Calls `body` with the UTF-8 of ``senderID`` (no String, no allocation); valid only during the call.
    public func withSenderIDBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        guard let message = messageView else { return try body(UnsafeRawBufferPointer(start: nil, count: 0)) }
        return try message.senderID.withUnsafeBytes(body)
    }

    /// Calls `body` with the UTF-8 of ``clientMsgID`` (no String, no allocation); valid only during the call.
    public func withClientMsgIDBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        if let message = messageView { return try message.clientMsgID.withUnsafeBytes(body) }
        if let ack = sendAckView { return try ack.clientMsgID.withUnsafeBytes(body) }
        return try body(UnsafeRawBufferPointer(start: nil, count: 0))
    }

    /// Calls `body` with the UTF-8 of ``serverMsgUID`` (no String, no allocation); valid only during the call.
    public func withServerMsgUIDBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        if let message = messageView { return try message.serverMsgUID.withUnsafeBytes(body) }
        if let ack = sendAckView { return try ack.serverMsgUID.withUnsafeBytes(body) }
        return try body(UnsafeRawBufferPointer(start: nil, count: 0))
    }

    /// The whole conversation as a value, or `nil` when the payload has none.
    public var conversation: Conversation? { conversationView?.materialize() }

    /// The sender of a message payload ("" for other payloads).
    public var senderID: String { messageView?.senderID.materialize() ?? "" }

    /// The client message id of a message or send-ack payload ("" for others).
    public var clientMsgID: String {
        if let message = messageView { return message.clientMsgID.materialize() }
        return sendAckView?.clientMsgID.materialize() ?? ""
    }

    /// The server message uid of a message or send-ack payload ("" for others).
    public var serverMsgUID: String {
        if let message = messageView { return message.serverMsgUID.materialize() }
        return sendAckView?.serverMsgUID.materialize() ?? ""
    }

    /// The sequence number of a message payload (0 for others).
    public var seq: UInt64 { messageView?.seq ?? 0 }

    /// The flags of a message payload (empty for others).
    public var messageFlags: MessageFlags { MessageFlags(rawValue: messageView?.flags ?? 0) }

    /// The number of elements in a message payload's chain (0 for others).
    public var elementCount: Int { messageView?.elements.count ?? 0 }

    /// The kind of element `index` of a message payload's chain, or `nil` when out of range or unset.
    public func elementKind(at index: Int) -> MessageElement.Content.Kind? {
        guard let elements = messageView?.elements, elements.indices.contains(index) else { return nil }
        return elements[index].contentKind
    }

    /// The message a receipt, group read-member page, recall, edit or delete refers to (the first
    /// one, for a delete), or `nil` for other payloads.
    public var referencedMessage: MessageRef? { referenceView?.materialize() }

    /// The sender of the message a receipt, recall, edit or delete refers to: who a receipt goes
    /// back to, as ``route`` says (``FrameRoute/referencedSender(_:)``); "" when the payload refers
    /// to no message.
    public var referencedSenderID: String { referenceView?.senderID.materialize() ?? "" }

    /// The number of users a group message @-mentions.
    public var atUserCount: Int { messageView?.at?.userIDs.count ?? 0 }

    /// Whether a group message @-mentions everyone.
    public var atAll: Bool { messageView?.at?.atAll ?? false }

    /// Where the frame goes, for every payload kind (see ``FrameRoute``): a message, recall, edit,
    /// typing event or delete for everyone to its conversation, a receipt back to the sender of the
    /// message it acknowledges (not to ``targetID``, which for a receipt names the reader), a
    /// mark-read or a delete for "only me" to the actor's own devices, and so on.
    public var route: FrameRoute {
        switch payload {
        case .message?, .recall?, .edit?, .typing?, .pin?, .disappearingTimer?, .call?:
            return conversationRoute
        case .streamChunk(let event)?:
            // Only the streamed message's sender sends its chunks: to the conversation.
            return peerRoute(actor: event.message?.senderID.materialize() ?? "")
        case .delete(let event)?:
            if event.scope == .everyone { return conversationRoute }
            return event.operatorID.isEmpty ? .unroutable : .ownDevices(event.operatorID.materialize())
        case .markRead(let event)?:
            return event.userID.isEmpty ? .unroutable : .ownDevices(event.userID.materialize())
        case .receipt?:
            let sender = referencedSenderID
            return sender.isEmpty ? .unroutable : .referencedSender(sender)
        case .receipts(let batch)?:
            var sender: String?
            let receipts = batch.receipts
            for index in receipts.indices {
                let next = receipts[index].message?.senderID.materialize() ?? ""
                if next.isEmpty { return .unroutable }
                if let sender, sender != next { return .eachReferencedSender }
                sender = next
            }
            let c2c = !batch.c2cReadReceipts.isEmpty
            guard let sender else { return c2c ? .client : .unroutable }
            return c2c ? .eachReferencedSender : .referencedSender(sender)
        case .reaction(let event)?:
            return peerRoute(actor: event.userID.materialize())
        case .pollVote(let event)?:
            return peerRoute(actor: event.voterID.materialize())
        case .pollUpdate(let event)?:
            return peerRoute(actor: event.closedBy.materialize())
        case .receiveOption(let event)?:
            return event.userID.isEmpty ? .server : .ownDevices(event.userID.materialize())
        case .conversationUpdate(let event)?:
            return event.userID.isEmpty ? .server : .ownDevices(event.userID.materialize())
        case .blocklistChange(let event)?:
            return event.userID.isEmpty ? .server : .ownDevices(event.userID.materialize())
        case .extensionUpdate(let event)?:
            return peerRoute(actor: event.userID.materialize())
        case .historyRequest?, .mergerPayload?, .systemNotice?, .readReceiptRequest?, .groupReadMembersRequest?,
            .loginRequest?, .ping?, .logout?, .maxSeqRequest?, .syncRequest?, .presence?, .presenceSubscription?,
            .membership?, .streamSyncRequest?, .streamAck?, .keyPublish?, .keyFetchRequest?, .conversationListRequest?,
            .extensionFetchRequest?, .blocklistRequest?:
            return .server
        case .sendAck?, .historyResponse?, .groupReadMembers?, .c2cReadReceipt?, .loginResult?, .pong?,
            .kickedOffline?, .maxSeqResponse?, .syncResponse?, .requestResult?, .streamSyncResponse?,
            .keyFetchResponse?, .conversationList?, .extensionFetchResponse?, .blocklistResponse?:
            return .client
        case nil:
            return .unroutable
        }
    }

    /// Where an event about a referenced message goes (a reaction, a vote, a poll update, a stream
    /// chunk): to the
    /// message's conversation; in a one-to-one conversation to the other party, which is the
    /// message's sender unless the actor is that sender (then the conversation's target).
    private func peerRoute(actor: String) -> FrameRoute {
        guard let reference = referenceView, let conversation = reference.conversation else { return .unroutable }
        guard conversation.type == .oneToOne else { return conversationRoute }
        let sender = reference.senderID.materialize()
        if sender.isEmpty || actor == sender { return conversationRoute }
        return .referencedSender(sender)
    }

    private var conversationRoute: FrameRoute {
        guard let conversation = conversationView else { return .unroutable }
        return FrameRoute(
            conversationType: conversation.type,
            targetID: conversation.targetID.materialize(),
            channelID: conversation.channelID.materialize()
        )
    }
}
