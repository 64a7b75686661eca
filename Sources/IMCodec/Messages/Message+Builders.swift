#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Builders for what apps send most: texts, @ messages, signaling, images, mergers.
extension Message {
    /// A message from `sender` in `conversation` with the element chain `elements`.
    /// - Parameters:
    ///   - sender: The sender's user id.
    ///   - conversation: Where the message goes.
    ///   - elements: The content, in display order.
    ///   - clientMsgID: The sender's id for the message; a random one when `nil`.
    ///   - clientTimeMs: The send time; now when `nil`.
    ///   - flags: Defaults to stored in history.
    public init(
        from sender: String,
        in conversation: Conversation,
        elements: [MessageElement],
        clientMsgID: String? = nil,
        clientTimeMs: Int64? = nil,
        flags: MessageFlags = .saveToHistory
    ) {
        self.init()
        self.senderID = sender
        self.conversation = conversation
        self.elements = elements
        self.clientMsgID = clientMsgID ?? Message.randomClientMsgID()
        self.clientTimeMs = clientTimeMs ?? Message.nowMs()
        self.random = UInt32.random(in: .min ... .max)
        self.priority = .normal
        self.messageFlags = flags
        self.storagePolicy = .counted
    }

    /// A one-to-one text message.
    public static func c2cText(
        from sender: String,
        to receiver: String,
        _ text: String,
        clientMsgID: String? = nil
    )
        -> Message
    {
        Message(from: sender, in: .oneToOne(receiver), elements: [.text(text)], clientMsgID: clientMsgID)
    }

    /// A group text message that @-mentions `atUserIDs` (and everyone, with `atAll`).
    public static func groupText(
        from sender: String,
        group: String,
        _ text: String,
        atUserIDs: [String] = [],
        atAll: Bool = false,
        clientMsgID: String? = nil
    ) -> Message {
        var message = Message(from: sender, in: .group(group), elements: [.text(text)], clientMsgID: clientMsgID)
        if !atUserIDs.isEmpty || atAll {
            message.at = AtInfo.with {
                $0.userIDs = atUserIDs; $0.atAll = atAll
            }
        }
        return message
    }

    /// A custom signaling message: online users only, not counted as unread, not stored.
    public static func signaling(
        from sender: String,
        in conversation: Conversation,
        _ data: [UInt8],
        description: String = "",
        clientMsgID: String? = nil
    ) -> Message {
        var message = Message(
            from: sender,
            in: conversation,
            elements: [.custom(data, description: description)],
            clientMsgID: clientMsgID,
            flags: [.onlineUserOnly, .excludedFromUnreadCount, .excludedFromLastMessage]
        )
        message.storagePolicy = .statusOnly
        return message
    }

    /// An image message.
    public static func image(
        from sender: String,
        in conversation: Conversation,
        format: ImageFormat,
        renditions: [ImageInfo],
        clientMsgID: String? = nil
    ) -> Message {
        Message(
            from: sender,
            in: conversation,
            elements: [.image(format: format, renditions)],
            clientMsgID: clientMsgID
        )
    }

    /// A combined-forward message of `messages` (at most 300), with one abstract line per message
    /// for the first few.
    public static func merger(
        from sender: String,
        in conversation: Conversation,
        title: String,
        messages: [Message],
        clientMsgID: String? = nil
    ) -> Message {
        let abstracts = messages.prefix(4).map { "\($0.senderID): \($0.previewText)" }
        return Message(
            from: sender,
            in: conversation,
            elements: [
                .merger(title: title, abstracts: abstracts, compatibleText: "[Chat History]", messages: messages)
            ],
            clientMsgID: clientMsgID
        )
    }

    /// A short plain-text rendering of the chain, for abstracts and notifications.
    public var previewText: String {
        elements.map { element -> String in
            switch element.content {
            case .text(let text)?: text.text
            case .custom?: "[Custom]"
            case .image?: "[Image]"
            case .video?: "[Video]"
            case .sound?: "[Voice]"
            case .file(let file)?: "[File] \(file.name)"
            case .location(let location)?: "[Location] \(location.description)"
            case .face?: "[Sticker]"
            case .groupTips?: "[Group tips]"
            case .merger(let merger)?: "[Chat History] \(merger.title)"
            case .poll(let poll)?: "[Poll] \(poll.question)"
            case .sticker(let sticker)?: sticker.emoji.isEmpty ? "[Sticker]" : "[Sticker] \(sticker.emoji)"
            case .contactCard(let card)?: "[Contact] \(card.displayName)"
            case .callLog(let log)?: log.media == .video ? "[Video call]" : "[Voice call]"
            case .buttons?: ""
            case .stream(let stream)?: stream.text
            case .encrypted?: "[Encrypted message]"
            case nil: ""
            }
        }.joined()
    }

    /// A reference to this message, for receipts, recalls, edits, deletes and quotes.
    public var reference: MessageRef {
        MessageRef.with {
            $0.clientMsgID = clientMsgID
            $0.serverMsgUID = serverMsgUID
            $0.seq = seq
            $0.conversation = conversation
            $0.senderID = senderID
            $0.serverTimeMs = serverTimeMs
        }
    }

    static func randomClientMsgID() -> String {
        var generator = SystemRandomNumberGenerator()
        let high = generator.next() as UInt64
        let low = generator.next() as UInt64
        let hex = String(high, radix: 16) + String(low, radix: 16)
        return String(repeating: "0", count: max(0, 32 - hex.count)) + hex
    }

    static func nowMs() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Int64(now.tv_sec) * 1000 + Int64(now.tv_nsec) / 1_000_000
    }
}
