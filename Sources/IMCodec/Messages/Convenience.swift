#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Helpers for what apps build most: texts, @ messages, signaling, images, chains, mergers,
/// receipts, recalls.
extension Frame {
    /// The schema version this library implements: it writes it as `schema_version`, and decoding
    /// refuses frames whose `min_reader_version` is higher (``IMCodecError/Code/unsupportedVersion``).
    ///
    /// Version 1 is the message model; version 2 adds the session layer, reactions, pins, threads,
    /// polls, link previews, disappearing and view-once messages, mention ranges, multi-device and
    /// the vendor details (the SchemaVersions article lists them).
    public static let currentSchemaVersion: UInt32 = 2

    /// A frame carrying `payload`, stamped with the current schema version and the lowest reader
    /// version that can act on it (``requiredReaderVersion(for:)``).
    public init(_ payload: Payload) {
        self.init()
        schemaVersion = Frame.currentSchemaVersion
        minReaderVersion = Frame.requiredReaderVersion(for: payload)
        self.payload = payload
    }

    /// The lowest schema version whose readers act correctly on `payload`: 2 for a message (or an
    /// edit's new content) that is view-once or disappearing, because a version-1 reader would
    /// ignore those fields and keep what the sender wanted gone; 1 otherwise. Fields an old reader
    /// can safely ignore (reactions, link previews, thread summaries...) need no newer reader.
    public static func requiredReaderVersion(for payload: Payload?) -> UInt32 {
        func mustBeHonoured(_ message: Message) -> Bool {
            message.viewOnce || message.expireAfterS != 0 || message.expireAtMs != 0
        }
        switch payload {
        case .message(let message)?: return mustBeHonoured(message) ? 2 : 1
        case .edit(let edit)?: return edit.newMessage.map(mustBeHonoured) == true ? 2 : 1
        default: return 1
        }
    }

    /// A frame carrying a message.
    public init(_ message: Message) { self.init(.message(message)) }
}

extension C2CReadReceipt {
    /// A one-to-one read receipt from Tencent's timestamp, which is in seconds (the schema's times
    /// are milliseconds). Seconds beyond what milliseconds can hold are clamped.
    public init(userID: String, tencentTimestamp seconds: Int64) {
        self.init()
        self.userID = userID
        let (ms, overflow) = seconds.multipliedReportingOverflow(by: 1000)
        readTimeMs = overflow ? (seconds < 0 ? .min : .max) : ms
    }

    /// The read time in seconds, as Tencent's C2C receipt gives it (rounded down).
    public var tencentTimestamp: Int64 {
        let (seconds, rest) = readTimeMs.quotientAndRemainder(dividingBy: 1000)
        return rest < 0 ? seconds - 1 : seconds
    }
}

extension MessageElement {
    /// A text element.
    public static func text(_ text: String) -> MessageElement {
        MessageElement.with { $0.content = .text(TextElement.with { $0.text = text }) }
    }

    /// A custom (signaling) element.
    public static func custom(_ data: [UInt8], description: String = "", ext: String = "") -> MessageElement {
        MessageElement.with {
            $0.content = .custom(CustomElement.with { $0.data = data; $0.description = description; $0.ext = ext })
        }
    }

    /// A face (sticker) element.
    public static func face(index: Int32, data: [UInt8] = []) -> MessageElement {
        MessageElement.with { $0.content = .face(FaceElement.with { $0.index = index; $0.data = data }) }
    }

    /// A location element.
    public static func location(latitude: Double, longitude: Double, description: String = "") -> MessageElement {
        MessageElement.with {
            $0.content = .location(LocationElement.with {
                $0.latitude = latitude; $0.longitude = longitude; $0.description = description
            })
        }
    }

    /// An image element with its renditions (original, large, thumbnail).
    public static func image(format: ImageFormat, _ renditions: [ImageInfo]) -> MessageElement {
        MessageElement.with { $0.content = .image(ImageElement.with { $0.format = format; $0.images = renditions }) }
    }

    /// A file element.
    public static func file(uuid: String, name: String, size: UInt64, url: String) -> MessageElement {
        MessageElement.with {
            $0.content = .file(FileElement.with { $0.uuid = uuid; $0.name = name; $0.size = size; $0.url = url })
        }
    }

    /// A merger (combined-forward) element holding `messages` inline.
    public static func merger(title: String, abstracts: [String], compatibleText: String, messages: [Message])
    -> MessageElement {
        MessageElement.with {
            $0.content = .merger(MergerElement.with {
                $0.title = title
                $0.abstracts = abstracts
                $0.compatibleText = compatibleText
                $0.messages = messages
                $0.messageCount = UInt32(clamping: messages.count)
            })
        }
    }
}

extension ImageInfo {
    /// One rendition of an image.
    public init(type: ImageType, uuid: String, size: UInt64, width: UInt32, height: UInt32, url: String) {
        self.init()
        self.type = type
        self.uuid = uuid
        self.size = size
        self.width = width
        self.height = height
        self.url = url
    }
}

extension Conversation {
    /// A one-to-one conversation with `userID`.
    public static func oneToOne(_ userID: String) -> Conversation {
        Conversation.with { $0.type = .oneToOne; $0.targetID = userID }
    }

    /// A group conversation.
    public static func group(_ groupID: String) -> Conversation {
        Conversation.with { $0.type = .group; $0.targetID = groupID }
    }
}

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
        from sender: String, in conversation: Conversation, elements: [MessageElement],
        clientMsgID: String? = nil, clientTimeMs: Int64? = nil, flags: MessageFlags = .saveToHistory
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
    public static func c2cText(from sender: String, to receiver: String, _ text: String, clientMsgID: String? = nil)
    -> Message {
        Message(from: sender, in: .oneToOne(receiver), elements: [.text(text)], clientMsgID: clientMsgID)
    }

    /// A group text message that @-mentions `atUserIDs` (and everyone, with `atAll`).
    public static func groupText(
        from sender: String, group: String, _ text: String, atUserIDs: [String] = [], atAll: Bool = false,
        clientMsgID: String? = nil
    ) -> Message {
        var message = Message(from: sender, in: .group(group), elements: [.text(text)], clientMsgID: clientMsgID)
        if !atUserIDs.isEmpty || atAll {
            message.at = AtInfo.with { $0.userIDs = atUserIDs; $0.atAll = atAll }
        }
        return message
    }

    /// A custom signaling message: online users only, not counted as unread, not stored.
    public static func signaling(
        from sender: String, in conversation: Conversation, _ data: [UInt8], description: String = "",
        clientMsgID: String? = nil
    ) -> Message {
        var message = Message(
            from: sender, in: conversation, elements: [.custom(data, description: description)],
            clientMsgID: clientMsgID, flags: [.onlineUserOnly, .excludedFromUnreadCount, .excludedFromLastMessage])
        message.storagePolicy = .statusOnly
        return message
    }

    /// An image message.
    public static func image(
        from sender: String, in conversation: Conversation, format: ImageFormat, renditions: [ImageInfo],
        clientMsgID: String? = nil
    ) -> Message {
        Message(from: sender, in: conversation, elements: [.image(format: format, renditions)], clientMsgID: clientMsgID)
    }

    /// A combined-forward message of `messages` (at most 300), with one abstract line per message
    /// for the first few.
    public static func merger(
        from sender: String, in conversation: Conversation, title: String, messages: [Message],
        clientMsgID: String? = nil
    ) -> Message {
        let abstracts = messages.prefix(4).map { "\($0.senderID): \($0.previewText)" }
        return Message(
            from: sender, in: conversation,
            elements: [.merger(title: title, abstracts: abstracts, compatibleText: "[Chat History]", messages: messages)],
            clientMsgID: clientMsgID)
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

extension Frame {
    /// A read receipt for `message`, sent by `reader`.
    public static func readReceipt(for message: MessageRef, by reader: String, timeMs: Int64? = nil) -> Frame {
        Frame(.receipt(MessageReceipt.with {
            $0.kind = .read
            $0.message = message
            $0.userID = reader
            $0.isPeerRead = true
            $0.timeMs = timeMs ?? Message.nowMs()
        }))
    }

    /// A recall (revoke) of `message` by `revoker`.
    public static func recall(_ message: MessageRef, by revoker: String, reason: String = "", timeMs: Int64? = nil)
    -> Frame {
        Frame(.recall(RecallEvent.with {
            $0.message = message
            $0.revokerID = revoker
            $0.reason = reason
            $0.timeMs = timeMs ?? Message.nowMs()
        }))
    }
}
