import CIMCodecRuntime
import CIMCodecSchemas
import CProtobufC

/// A reusable decoder for servers: decodes into one arena that it resets between inputs, so a
/// decode costs no `malloc` per field, and lets a router read a frame's routing facts through a
/// ``FrameView`` without building the Swift value.
///
/// ```swift
/// let decoder = WireDecoder()
/// let route = try decoder.withFrameView(bytes) { frame in
///     (frame.payloadKind, frame.conversationType, frame.targetID, frame.messageFlags)
/// }
/// ```
///
/// A decoder is not thread-safe: use one per connection or per thread. The values it returns are
/// ordinary Swift values that share nothing with it.
public final class WireDecoder {
    /// The limits every input is checked against.
    public let options: DecodingOptions
    private let firstBlockSize: Int
    private var arena: _Arena?

    /// Creates a decoder.
    /// - Parameters:
    ///   - options: Limits for hostile input.
    ///   - arenaBlockSize: Bytes the arena keeps between inputs; larger inputs borrow more and give
    ///     it back after each call.
    public init(options: DecodingOptions = DecodingOptions(), arenaBlockSize: Int = 64 << 10) {
        self.options = options
        self.firstBlockSize = max(arenaBlockSize, 1 << 10)
    }

    // The entry points below are @inlinable so that the conversion to `M` (or the call of `body`)
    // is specialized in the caller's module; they decode through _DecodePipeline, in the arena
    // this decoder reuses.

    /// Implementation detail: the arena this decoder reuses (made by the first decode).
    @usableFromInline
    func _arena() throws(IMCodecError) -> _Arena {
        if let arena { return arena }
        let made = try _DecodePipeline.reusableArena(blockSize: firstBlockSize)
        arena = made
        return made
    }

    /// Checks and unpacks `buffer` as a ``Frame`` exactly as ``withFrameView(_:_:)-([UInt8],_)`` does, and
    /// passes `body` the view and the number of fields the pre-scan counted (for ``ServerStamp``,
    /// which must know how many fields the input holds to keep the stamped frame within the limits).
    func withCheckedFrame<R>(
        _ buffer: UnsafeRawBufferPointer, _ body: (borrowing FrameView, _ fieldCount: Int) -> R
    ) throws(IMCodecError) -> R {
        try _DecodePipeline.withUnpacked(Frame._protobufCDescriptor, buffer, options: options, arena: _arena()) {
            body(FrameView(_message: $0.message), $0.scan.field_count)
        }
    }

    /// Decodes one message of type `type`.
    /// - Throws: ``IMCodecError`` with the code of the first problem and its byte offset.
    @inlinable
    public func decode<M: IMCodecMessage>(_ type: M.Type = M.self, from bytes: [UInt8]) throws(IMCodecError) -> M {
        try _DecodePipeline.decode(M.self, bytes, options: options, arena: _arena())
    }

    /// Decodes one message of type `type` from raw memory (a NIO `ByteBuffer`'s readable bytes).
    /// - Throws: ``IMCodecError`` with the code of the first problem and its byte offset.
    @inlinable
    public func decode<M: IMCodecMessage>(_ type: M.Type = M.self, from buffer: UnsafeRawBufferPointer)
    throws(IMCodecError) -> M {
        try _DecodePipeline.decode(M.self, buffer, options: options, arena: _arena())
    }

    /// Decodes one message of type `type` from any collection of bytes.
    /// - Throws: ``IMCodecError`` with the code of the first problem and its byte offset.
    @inlinable
    public func decode<M: IMCodecMessage, Bytes: Collection>(_ type: M.Type = M.self, from bytes: Bytes)
    throws(IMCodecError) -> M where Bytes.Element == UInt8 {
        try _DecodePipeline.decode(M.self, bytes, options: options, arena: _arena())
    }

    /// Decodes a ``Frame`` and passes a read-only view of it to `body`, without building Swift values
    /// for the parts `body` does not read. The view cannot leave `body` (it is non-copyable and
    /// borrowed), so nothing can reach the arena after the call.
    /// - Throws: ``IMCodecError`` when the bytes do not decode, or whatever `body` throws.
    @inlinable
    public func withFrameView<R>(_ bytes: [UInt8], _ body: (borrowing FrameView) throws -> R) throws -> R {
        try _DecodePipeline.withMessage(Frame._protobufCDescriptor, bytes, options: options, arena: _arena()) { message in
            Result { try body(FrameView(_message: message)) }
        }.get()
    }

    /// ``withFrameView(_:_:)-([UInt8],_)`` over raw memory (a NIO `ByteBuffer`'s readable bytes).
    @inlinable
    public func withFrameView<R>(_ buffer: UnsafeRawBufferPointer, _ body: (borrowing FrameView) throws -> R) throws -> R {
        try _DecodePipeline.withMessage(Frame._protobufCDescriptor, buffer, options: options, arena: _arena()) { message in
            Result { try body(FrameView(_message: message)) }
        }.get()
    }

    /// ``withFrameView(_:_:)-([UInt8],_)`` over any collection of bytes.
    @inlinable
    public func withFrameView<Bytes: Collection, R>(_ bytes: Bytes, _ body: (borrowing FrameView) throws -> R) throws -> R
    where Bytes.Element == UInt8 {
        try _DecodePipeline.withMessage(Frame._protobufCDescriptor, bytes, options: options, arena: _arena()) { message in
            Result { try body(FrameView(_message: message)) }
        }.get()
    }
}

@available(*, unavailable, message: "a WireDecoder reuses one arena; give each thread its own")
extension WireDecoder: Sendable {}

/// A read-only view of a decoded ``Frame`` in a ``WireDecoder``'s arena: the routing facts of a frame
/// (kind, conversation, sender, ids, flags, element kinds) read straight from protobuf-c's structs.
/// ``materialize()`` builds the full Swift value when it is needed.
///
/// It exists only inside ``WireDecoder/withFrameView(_:_:)-([UInt8],_)``.
public struct FrameView: ~Copyable {
    @usableFromInline let frame: UnsafePointer<Imcodec__V1__Frame>
    private let depth: Int

    /// Implementation detail: a view of a frame unpacked by a ``WireDecoder``.
    @usableFromInline
    init(_message message: _ProtobufCMessage) {
        frame = message.pointer(to: Imcodec__V1__Frame.self)
        depth = message.depth
    }

    @inline(__always)
    private func withBytes<R>(_ data: ProtobufCBinaryData?, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        guard let data, data.len > 0, let base = data.data else {
            return try body(UnsafeRawBufferPointer(start: nil, count: 0))
        }
        return try body(UnsafeRawBufferPointer(start: base, count: data.len))
    }

    /// The writer's schema version.
    public var schemaVersion: UInt32 { frame.pointee.schema_version }

    /// The lowest schema version a reader needs.
    public var minReaderVersion: UInt32 { frame.pointee.min_reader_version }

    /// Which payload the frame carries, or `nil` for none (or one this schema does not know).
    public var payloadKind: Frame.Payload.Kind? {
        Frame.Payload.Kind(rawValue: Int32(bitPattern: frame.pointee.payload_case.rawValue))
    }

    private var message: UnsafePointer<Imcodec__V1__Message>? {
        payloadKind == .message ? UnsafePointer(frame.pointee.message) : nil
    }

    /// The conversation the payload belongs to: a message's, an event's, an ack's, or that of the
    /// message a receipt, recall or edit refers to.
    private var conversationPointer: UnsafePointer<Imcodec__V1__Conversation>? {
        let f = frame.pointee
        let pointer: UnsafeMutablePointer<Imcodec__V1__Conversation>?
        switch payloadKind {
        case .message?: pointer = f.message?.pointee.conversation
        case .typing?: pointer = f.typing?.pointee.conversation
        case .markRead?: pointer = f.mark_read?.pointee.conversation
        case .sendAck?: pointer = f.send_ack?.pointee.conversation
        case .historyRequest?: pointer = f.history_request?.pointee.conversation
        case .historyResponse?: pointer = f.history_response?.pointee.conversation
        case .recall?: pointer = f.recall?.pointee.message?.pointee.conversation
        case .edit?: pointer = f.edit?.pointee.message?.pointee.conversation
        case .receipt?: pointer = f.receipt?.pointee.message?.pointee.conversation
        case .groupReadMembers?: pointer = f.group_read_members?.pointee.message?.pointee.conversation
        case .groupReadMembersRequest?: pointer = f.group_read_members_request?.pointee.message?.pointee.conversation
        case .reaction?: pointer = f.reaction?.pointee.message?.pointee.conversation
        case .pollVote?: pointer = f.poll_vote?.pointee.poll_message?.pointee.conversation
        case .pollUpdate?: pointer = f.poll_update?.pointee.poll_message?.pointee.conversation
        case .pin?: pointer = f.pin?.pointee.conversation
        case .disappearingTimer?: pointer = f.disappearing_timer?.pointee.conversation
        case .receiveOption?: pointer = f.receive_option?.pointee.conversation
        case .membership?: pointer = f.membership?.pointee.conversation
        case .syncRequest?: pointer = f.sync_request?.pointee.conversation
        case .syncResponse?: pointer = f.sync_response?.pointee.conversation
        case .delete?:
            if let event = f.delete_, event.pointee.n_messages > 0, let first = event.pointee.messages[0] {
                pointer = first.pointee.conversation
            } else {
                pointer = nil
            }
        default: pointer = nil
        }
        return pointer.map { UnsafePointer($0) }
    }

    /// The conversation's type (``ConversationType/unspecified`` when the payload has none).
    public var conversationType: ConversationType {
        guard let c = conversationPointer else { return .unspecified }
        return ConversationType(rawValue: Int32(bitPattern: c.pointee.type.rawValue))
    }

    /// The conversation's target: the peer's user id or the group id ("" when none). For a receipt,
    /// recall, edit or delete it is the target of the referenced message's conversation (for a
    /// receipt of a one-to-one message, the reader): ``route`` says where the frame goes.
    public var targetID: String { conversationPointer.map { _CRead.string($0.pointee.target_id) } ?? "" }

    /// The conversation's ultra-group channel id ("" when none).
    public var channelID: String { conversationPointer.map { _CRead.string($0.pointee.channel_id) } ?? "" }

    /// Calls `body` with the target id's UTF-8 bytes, without making a String (for routing tables
    /// keyed by bytes). The buffer is valid only during the call.
    public func withTargetIDBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try withBytes(conversationPointer?.pointee.target_id, body)
    }

    /// Calls `body` with the UTF-8 of ``senderID`` (no String, no allocation); valid only during the call.
    public func withSenderIDBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try withBytes(message?.pointee.sender_id, body)
    }

    /// Calls `body` with the UTF-8 of ``clientMsgID`` (no String, no allocation); valid only during the call.
    public func withClientMsgIDBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        if let m = message { return try withBytes(m.pointee.client_msg_id, body) }
        if payloadKind == .sendAck, let ack = frame.pointee.send_ack { return try withBytes(ack.pointee.client_msg_id, body) }
        return try withBytes(nil, body)
    }

    /// Calls `body` with the UTF-8 of ``serverMsgUID`` (no String, no allocation); valid only during the call.
    public func withServerMsgUIDBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        if let m = message { return try withBytes(m.pointee.server_msg_uid, body) }
        if payloadKind == .sendAck, let ack = frame.pointee.send_ack { return try withBytes(ack.pointee.server_msg_uid, body) }
        return try withBytes(nil, body)
    }

    /// The whole conversation as a value, or `nil` when the payload has none.
    public var conversation: Conversation? { conversationPointer.map { Conversation(_c: $0) } }

    /// The sender of a message payload ("" for other payloads).
    public var senderID: String { message.map { _CRead.string($0.pointee.sender_id) } ?? "" }

    /// The client message id of a message or send-ack payload ("" for others).
    public var clientMsgID: String {
        if let m = message { return _CRead.string(m.pointee.client_msg_id) }
        if payloadKind == .sendAck, let ack = frame.pointee.send_ack { return _CRead.string(ack.pointee.client_msg_id) }
        return ""
    }

    /// The server message uid of a message or send-ack payload ("" for others).
    public var serverMsgUID: String {
        if let m = message { return _CRead.string(m.pointee.server_msg_uid) }
        if payloadKind == .sendAck, let ack = frame.pointee.send_ack { return _CRead.string(ack.pointee.server_msg_uid) }
        return ""
    }

    /// The sequence number of a message payload (0 for others).
    public var seq: UInt64 { message?.pointee.seq ?? 0 }

    /// The flags of a message payload (empty for others).
    public var messageFlags: MessageFlags { MessageFlags(rawValue: message?.pointee.flags ?? 0) }

    /// The number of elements in a message payload's chain (0 for others).
    public var elementCount: Int { message?.pointee.n_elements ?? 0 }

    /// The kind of element `index` of a message payload's chain, or `nil` when out of range or unset.
    public func elementKind(at index: Int) -> MessageElement.Content.Kind? {
        guard let m = message, index >= 0, index < m.pointee.n_elements, let element = m.pointee.elements[index] else {
            return nil
        }
        return MessageElement.Content.Kind(rawValue: Int32(bitPattern: element.pointee.content_case.rawValue))
    }

    /// The message a receipt, group read-member page, recall, edit or delete refers to (the first
    /// one, for a delete), or `nil` for other payloads.
    private var referencePointer: UnsafePointer<Imcodec__V1__MessageRef>? {
        let f = frame.pointee
        let pointer: UnsafeMutablePointer<Imcodec__V1__MessageRef>?
        switch payloadKind {
        case .receipt?: pointer = f.receipt?.pointee.message
        case .groupReadMembers?: pointer = f.group_read_members?.pointee.message
        case .recall?: pointer = f.recall?.pointee.message
        case .edit?: pointer = f.edit?.pointee.message
        case .groupReadMembersRequest?: pointer = f.group_read_members_request?.pointee.message
        case .reaction?: pointer = f.reaction?.pointee.message
        case .pin?: pointer = f.pin?.pointee.message
        case .pollVote?: pointer = f.poll_vote?.pointee.poll_message
        case .pollUpdate?: pointer = f.poll_update?.pointee.poll_message
        case .delete?:
            if let event = f.delete_, event.pointee.n_messages > 0 { pointer = event.pointee.messages[0] } else { pointer = nil }
        default: pointer = nil
        }
        return pointer.map { UnsafePointer($0) }
    }

    /// The message a receipt, group read-member page, recall, edit or delete refers to (the first
    /// one, for a delete), or `nil` for other payloads.
    public var referencedMessage: MessageRef? { referencePointer.map { MessageRef(_c: $0) } }

    /// The sender of the message a receipt, recall, edit or delete refers to: who a receipt goes
    /// back to, as ``route`` says (``FrameRoute/referencedSender(_:)``); "" when the payload refers
    /// to no message.
    public var referencedSenderID: String { referencePointer.map { _CRead.string($0.pointee.sender_id) } ?? "" }

    /// Where the frame goes, for every payload kind (see ``FrameRoute``): a message, recall, edit,
    /// typing event or delete for everyone to its conversation, a receipt back to the sender of the
    /// message it acknowledges (not to ``targetID``, which for a receipt names the reader), a
    /// mark-read or a delete for "only me" to the actor's own devices, and so on.
    public var route: FrameRoute {
        let f = frame.pointee
        switch payloadKind {
        case .message?, .recall?, .edit?, .typing?:
            return conversationRoute
        case .delete?:
            guard let event = f.delete_ else { return .unroutable }
            if event.pointee.scope == IMCODEC__V1__DELETE_SCOPE__DELETE_SCOPE_EVERYONE { return conversationRoute }
            let operatorID = _CRead.string(event.pointee.operator_id)
            return operatorID.isEmpty ? .unroutable : .ownDevices(operatorID)
        case .markRead?:
            let user = f.mark_read.map { _CRead.string($0.pointee.user_id) } ?? ""
            return user.isEmpty ? .unroutable : .ownDevices(user)
        case .receipt?:
            let sender = referencedSenderID
            return sender.isEmpty ? .unroutable : .referencedSender(sender)
        case .receipts?:
            guard let batch = f.receipts?.pointee else { return .unroutable }
            var sender: String?
            for index in 0..<batch.n_receipts {
                let next = batch.receipts[index]?.pointee.message.map { _CRead.string($0.pointee.sender_id) } ?? ""
                if next.isEmpty { return .unroutable }
                if let sender, sender != next { return .eachReferencedSender }
                sender = next
            }
            guard let sender else { return batch.n_c2c_read_receipts > 0 ? .client : .unroutable }
            return batch.n_c2c_read_receipts > 0 ? .eachReferencedSender : .referencedSender(sender)
        case .pin?, .disappearingTimer?:
            return conversationRoute
        case .reaction?:
            return peerRoute(actor: f.reaction.map { _CRead.string($0.pointee.user_id) } ?? "")
        case .pollVote?:
            return peerRoute(actor: f.poll_vote.map { _CRead.string($0.pointee.voter_id) } ?? "")
        case .pollUpdate?:
            return peerRoute(actor: f.poll_update.map { _CRead.string($0.pointee.closed_by) } ?? "")
        case .receiveOption?:
            let user = f.receive_option.map { _CRead.string($0.pointee.user_id) } ?? ""
            return user.isEmpty ? .server : .ownDevices(user)
        case .historyRequest?, .mergerPayload?, .systemNotice?, .readReceiptRequest?, .groupReadMembersRequest?,
            .loginRequest?, .ping?, .logout?, .maxSeqRequest?, .syncRequest?, .presence?, .presenceSubscription?,
            .membership?:
            return .server
        case .sendAck?, .historyResponse?, .groupReadMembers?, .c2cReadReceipt?, .loginResult?, .pong?,
            .kickedOffline?, .maxSeqResponse?, .syncResponse?, .requestResult?:
            return .client
        case nil:
            return .unroutable
        }
    }

    /// Where an event about a referenced message goes (a reaction, a vote, a poll update): to the
    /// message's conversation; in a one-to-one conversation to the other party, which is the
    /// message's sender unless the actor is that sender (then the conversation's target).
    private func peerRoute(actor: String) -> FrameRoute {
        guard let ref = referencePointer, let c = ref.pointee.conversation else { return .unroutable }
        guard c.pointee.type == IMCODEC__V1__CONVERSATION_TYPE__CONVERSATION_TYPE_ONE_TO_ONE else { return conversationRoute }
        let sender = _CRead.string(ref.pointee.sender_id)
        if sender.isEmpty || actor == sender { return conversationRoute }
        return .referencedSender(sender)
    }

    private var conversationRoute: FrameRoute {
        guard let c = conversationPointer else { return .unroutable }
        return FrameRoute(
            conversationType: ConversationType(rawValue: Int32(bitPattern: c.pointee.type.rawValue)),
            targetID: _CRead.string(c.pointee.target_id), channelID: _CRead.string(c.pointee.channel_id))
    }

    /// The number of users a group message @-mentions.
    public var atUserCount: Int { message?.pointee.at?.pointee.n_user_ids ?? 0 }

    /// Whether a group message @-mentions everyone.
    public var atAll: Bool { (message?.pointee.at?.pointee.at_all ?? 0) != 0 }

    /// The full Swift value of the frame.
    public func materialize() -> Frame {
        // Deep frames are converted where the stack allows (see _DecodeStack); if no thread with
        // such a stack can be started, the conversion runs here.
        (try? _DecodeStack.run(depth: depth) { Frame(_c: frame) }) ?? Frame(_c: frame)
    }
}
