#if NIO
import IMCodec
import NIOCore

/// A frame received but not materialized: its bytes exactly as they arrived, plus the routing facts
/// read through a `FrameView` while the frame was validated.
///
/// A router reads ``payloadKind``, ``requestID``, ``route`` (or ``conversationType``, ``targetID`` and
/// ``channelID``) and ``messageFlags`` and forwards ``record`` (prefix and body, byte for byte) without building a `Frame`. The
/// body has been fully decoded once by protobuf-c, so it is known to be a valid frame within the
/// channel's limits; ``decode(with:)`` builds the Swift value when a handler needs it.
public struct InboundFrame: Sendable, Hashable {
    /// The frame as received: the varint length prefix followed by the body, ready to be written to another channel.
    /// It is a slice of the buffer the frame was read into, and keeps that whole buffer alive
    /// (``ownStorage()``).
    public private(set) var record: ByteBuffer
    /// The number of bytes the length prefix takes at the front of ``record``.
    public let prefixSize: Int
    /// The frame's `request_id`, which the answer to it repeats (0: none).
    public let requestID: UInt64
    /// Which payload the frame carries, or `nil` for none.
    public let payloadKind: Frame.Payload.Kind?
    /// The type of the conversation the payload belongs to (`ConversationType.unspecified` when none).
    public let conversationType: ConversationType
    /// The conversation's target: the peer's user id or the group id ("" when none).
    public let targetID: String
    /// The conversation's ultra-group channel id ("" when none).
    public let channelID: String
    /// Where the frame goes (`FrameView.route`): for a receipt or a reaction, for example,
    /// the sender of the message it refers to rather than ``targetID``.
    public let route: FrameRoute
    /// The sender of a message payload ("" for other payloads).
    public let senderID: String
    /// The sending device of a message payload (`Message.sender_device_id`; "" for other payloads),
    /// which a server checks against the connection's device as it checks ``senderID``.
    public let senderDeviceID: String
    /// The client message id of a message or send-ack payload ("" for others).
    public let clientMsgID: String
    /// The flags of a message payload (empty for others).
    public let messageFlags: MessageFlags
    /// A targeted group message's receivers (`Message.target_receivers`; empty for other frames).
    public let targetReceivers: [String]
    /// How a message payload is to be stored (`StoragePolicy.unspecified` for other frames).
    public let storagePolicy: StoragePolicy
    /// The users a group message @-mentions (`Message.at.user_ids`; empty for other frames).
    public let atUserIDs: [String]
    /// Whether a group message @-mentions every member (`Message.at.at_all`).
    public let atAll: Bool
    /// The fields that only a server sets which the sender set (`Message.View.serverAssignedFields`):
    /// of a message payload, or of an edit's `new_message` (receivers take it as the message); empty
    /// for other frames and for a message as it should be sent.
    public let serverAssignedFields: [String]
    /// A disappearing message's `expire_after_s` (0 for other frames), from which a server stamps
    /// its `expire_at_ms` (`ServerStamp.expiry(serverTimeMs:expireAfterS:)`).
    public let expireAfterS: UInt32
    /// Whether a message payload carries a poll (a `PollElement`; false for other frames), whose
    /// votes a server tallies.
    public let carriesPoll: Bool
    /// Whether a message payload is view-once (`Message.view_once`; false for other frames).
    public let isViewOnce: Bool
    /// A message payload's delivery priority (`Message.priority`; unspecified for other frames):
    /// under load a server drops lower priorities first.
    public let priority: Priority
    /// Whether a message payload quotes a message (`Message.quote` or `Message.quote_snapshot` set;
    /// false for other frames), which a server checks against the message it names.
    public let quotes: Bool
    /// The `sender_device_id` of each end-to-end encrypted element (`EncryptedElement`) of a message
    /// payload, or of an edit's `new_message`, in order; empty for other frames. The schema makes it
    /// the device that sealed the element, the sending one: a server checks it against the
    /// connection's device as it checks ``senderDeviceID`` (receivers pick the session that opens
    /// the element by it).
    public let sealingDeviceIDs: [String]

    /// This frame with its ``record`` copied into storage of its own. A decoded frame is a slice of
    /// the buffer it was read into (up to a read's 64 KiB for a frame of a few bytes), which it keeps
    /// alive as long as it lives; a frame kept longer than it takes to route it (held while a login
    /// is checked, queued) should own its bytes, so that what it keeps is what it counts.
    public func ownStorage() -> InboundFrame {
        var frame = self
        frame.record = ByteBuffer(bytes: record.readableBytesView)
        return frame
    }

    /// Creates an inbound frame from its record and routing facts (decoders make these; tests may too).
    public init(
        record: ByteBuffer,
        prefixSize: Int,
        requestID: UInt64 = 0,
        payloadKind: Frame.Payload.Kind?,
        conversationType: ConversationType,
        targetID: String,
        channelID: String = "",
        route: FrameRoute,
        senderID: String,
        senderDeviceID: String = "",
        clientMsgID: String,
        messageFlags: MessageFlags,
        targetReceivers: [String] = [],
        storagePolicy: StoragePolicy = .unspecified,
        atUserIDs: [String] = [],
        atAll: Bool = false,
        serverAssignedFields: [String] = [],
        expireAfterS: UInt32 = 0,
        carriesPoll: Bool = false,
        isViewOnce: Bool = false,
        priority: Priority = .unspecified,
        quotes: Bool = false,
        sealingDeviceIDs: [String] = []
    ) {
        self.record = record
        self.prefixSize = prefixSize
        self.requestID = requestID
        self.payloadKind = payloadKind
        self.conversationType = conversationType
        self.targetID = targetID
        self.channelID = channelID
        self.route = route
        self.senderID = senderID
        self.senderDeviceID = senderDeviceID
        self.clientMsgID = clientMsgID
        self.messageFlags = messageFlags
        self.targetReceivers = targetReceivers
        self.storagePolicy = storagePolicy
        self.atUserIDs = atUserIDs
        self.atAll = atAll
        self.serverAssignedFields = serverAssignedFields
        self.expireAfterS = expireAfterS
        self.carriesPoll = carriesPoll
        self.isViewOnce = isViewOnce
        self.priority = priority
        self.quotes = quotes
        self.sealingDeviceIDs = sealingDeviceIDs
    }

    /// The frame body without its length prefix (a slice of ``record``, no copy).
    public var body: ByteBuffer {
        record.getSlice(at: record.readerIndex + prefixSize, length: record.readableBytes - prefixSize)!
    }

    /// Builds the full `Frame` from ``body``, decoding it again with `decoder`.
    /// - Throws: `IMCodecError` when the body does not decode with `decoder`'s limits.
    public func decode(with decoder: WireDecoder) throws(IMCodecError) -> Frame {
        try decoder.decode(Frame.self, from: body.readableBytesView)
    }

    /// Builds the full `Frame` from ``body`` with `options`.
    /// - Throws: `IMCodecError` when the body does not decode within `options`.
    public func decode(options: DecodingOptions = DecodingOptions()) throws(IMCodecError) -> Frame {
        try Frame(serializedBytes: body.readableBytesView, options: options)
    }
}

extension InboundFrame {
    /// Validates `record`'s body with `decoder` (protobuf-c decodes it once, within the decoder's
    /// limits) and reads its routing facts through a `FrameView`. Both transports make
    /// their inbound frames here: ``InboundFrameDecoder`` and ``WebSocketFrameHandler``.
    init(inspecting record: FrameRecord, with decoder: WireDecoder) throws(IMCodecError) {
        do {
            self = try decoder.withFrameView(record.body.readableBytesView) { view in
                var receivers: [String] = []
                var storagePolicy = StoragePolicy.unspecified
                var atUserIDs: [String] = []
                var atAll = false
                var serverAssignedFields: [String] = []
                var expireAfterS: UInt32 = 0
                var carriesPoll = false
                var isViewOnce = false
                var priority = Priority.unspecified
                var quotes = false
                var senderDeviceID = ""
                var sealingDeviceIDs: [String] = []
                if case .edit(let edit)? = view.payload, let edited = edit.newMessage {
                    serverAssignedFields = edited.serverAssignedFields
                    let elements = edited.elements
                    for index in 0..<elements.count {
                        if case .encrypted(let sealed)? = elements[index].content {
                            sealingDeviceIDs.append(sealed.senderDeviceID.materialize())
                        }
                    }
                }
                if case .message(let message)? = view.payload {
                    storagePolicy = message.storagePolicy
                    senderDeviceID = message.senderDeviceID.materialize()
                    serverAssignedFields = message.serverAssignedFields
                    expireAfterS = message.expireAfterS
                    isViewOnce = message.viewOnce
                    priority = message.priority
                    if case .some = message.quote { quotes = true }
                    if case .some = message.quoteSnapshot { quotes = true }
                    let elements = message.elements
                    for index in 0..<elements.count {
                        switch elements[index].contentKind {
                        case .poll?: carriesPoll = true
                        case .encrypted?:
                            if case .encrypted(let sealed)? = elements[index].content {
                                sealingDeviceIDs.append(sealed.senderDeviceID.materialize())
                            }
                        default: break
                        }
                    }
                    let targets = message.targetReceivers
                    if targets.count > 0 {
                        receivers.reserveCapacity(targets.count)
                        for index in 0..<targets.count { receivers.append(targets[index].materialize()) }
                    }
                    if let at = message.at {
                        atAll = at.atAll
                        let ids = at.userIDs
                        for index in 0..<ids.count { atUserIDs.append(ids[index].materialize()) }
                    }
                }
                return InboundFrame(
                    record: record.record,
                    prefixSize: record.prefixSize,
                    requestID: view.requestID,
                    payloadKind: view.payloadKind,
                    conversationType: view.conversationType,
                    targetID: view.targetID,
                    channelID: view.channelID,
                    route: view.route,
                    senderID: view.senderID,
                    senderDeviceID: senderDeviceID,
                    clientMsgID: view.clientMsgID,
                    messageFlags: view.messageFlags,
                    targetReceivers: receivers,
                    storagePolicy: storagePolicy,
                    atUserIDs: atUserIDs,
                    atAll: atAll,
                    serverAssignedFields: serverAssignedFields,
                    expireAfterS: expireAfterS,
                    carriesPoll: carriesPoll,
                    isViewOnce: isViewOnce,
                    priority: priority,
                    quotes: quotes,
                    sealingDeviceIDs: sealingDeviceIDs
                )
            }
        } catch let error as IMCodecError {
            throw error
        } catch {
            throw IMCodecError(code: .malformed, reason: "frame view failed: \(error)")
        }
    }
}
#endif
