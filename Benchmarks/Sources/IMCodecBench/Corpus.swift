import IMCodec
import IMCodecTestSupport

/// A set of encoded frames that every path of the benchmark runs over: the same bytes for all.
struct Corpus {
    let name: String
    /// Each frame's wire bytes (canonical IMCodec encoding).
    let frames: [[UInt8]]
    /// How many frames of each kind, in the order the generator names them.
    let mix: [(kind: String, count: Int)]

    var count: Int { frames.count }
    var totalBytes: Int { frames.reduce(0) { $0 + $1.count } }
    var meanBytes: Double { Double(totalBytes) / Double(max(count, 1)) }

    var sizes: (min: Int, median: Int, p90: Int, max: Int) {
        let sorted = frames.map(\.count).sorted()
        guard !sorted.isEmpty else { return (0, 0, 0, 0) }
        return (sorted[0], sorted[sorted.count / 2], sorted[sorted.count * 9 / 10], sorted[sorted.count - 1])
    }

    /// One line of statistics (count, bytes, mean, spread) and one line of the mix.
    var summary: String {
        let s = sizes
        var out = "\(name): \(count) frames, \(totalBytes) bytes, mean \(format(meanBytes, 1)) bytes"
        out += " (min \(s.min), median \(s.median), p90 \(s.p90), max \(s.max))\n"
        out +=
            "  mix: "
            + mix.map { "\($0.kind) \(format(100 * Double($0.count) / Double(max(count, 1)), 1))%" }
            .joined(separator: ", ")
        return out
    }
}

/// Builds realistic IM traffic from a seed: the same frames, byte for byte, on every run.
///
/// The traffic corpus follows issue 5: about 80% text messages with 1-3 elements (of which about
/// 5% of all messages are mergers of 3-10 nested messages), 10% images with 3 renditions, 5% custom
/// signaling, 5% files or locations, 20% of messages with custom parameters, plus receipts and
/// typing events; and (issue 17) 3.55% conversation-state frames: mark-reads, conversation-list
/// requests and pages, conversation updates, message-extension updates and fetches, blocklist
/// requests, answers and changes. The large corpus holds history pages (20-100 messages) and
/// 300-message mergers.
struct CorpusGenerator {
    private var rng: SeededGenerator
    /// The conversation-state frames' own generator: `traffic` draws from it whether a frame is one
    /// and makes it with it (restoring the clock and seq after), so every other frame is, byte for
    /// byte and in order, a frame of the corpus as it was before they were added.
    private var stateRng: SeededGenerator
    /// Set while a conversation-list entry's last message is made: it is always acknowledged.
    private var forceAcked = false
    private let users: [String]
    private let groups: [String]
    private var seq: UInt64 = 1_000_000
    private var clock: Int64 = 1_763_000_000_000  // 2025-11-13, in ms

    init(seed: UInt64) {
        rng = SeededGenerator(seed: seed)
        stateRng = SeededGenerator(seed: seed ^ 0x17C0_57A7_E5EE_D017)
        var users: [String] = []
        for i in 0..<3000 {
            switch i % 10 {
            case 0...6: users.append("u" + rng.digits(10))  // 11 bytes
            case 7: users.append("wx_" + rng.hex(12))  // 15 bytes
            case 8: users.append("ou_" + rng.hex(24))  // 27 bytes (Lark style)
            default:
                users.append(
                    rng.pick(Text.latinNames).lowercased().split(separator: " ").joined(separator: ".")
                        + "@corp-" + rng.digits(4) + ".example"
                )  // ~25 bytes
            }
        }
        var groups: [String] = []
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
        for i in 0..<400 {
            if i % 3 == 0 {
                groups.append("grp_" + rng.hex(16))  // 20 bytes
            } else {
                var id = "@TGS#2"
                for _ in 0..<9 { id.append(alphabet[rng.int(0...(alphabet.count - 1))]) }
                groups.append(id)  // 15 bytes
            }
        }
        self.users = users
        self.groups = groups
    }

    // MARK: Corpora

    /// About `count` frames of everyday traffic.
    mutating func traffic(count: Int) -> (frames: [Frame], mix: [(kind: String, count: Int)]) {
        let kinds = [
            "text", "merger", "image", "custom signaling", "file", "location",
            "receipt", "receipt batch", "c2c read receipt", "typing",
            // Conversation state (issue 17), kinds 10-19: see stateKind().
            "mark read", "conversation list request", "conversation list", "conversation update",
            "extension update", "extension fetch request", "extension fetch response",
            "blocklist request", "blocklist response", "blocklist change",
        ]
        var counts = [Int](repeating: 0, count: kinds.count)
        var frames: [Frame] = []
        frames.reserveCapacity(count)
        for _ in 0..<count {
            if let state = stateKind() {
                counts[state] += 1
                frames.append(stateFrame(state))
                continue
            }
            let r = Double.random(in: 0..<1, using: &rng)
            let kind: Int
            switch r {
            case ..<0.86:
                let m = Double.random(in: 0..<1, using: &rng)
                switch m {
                case ..<0.75: kind = 0
                case ..<0.80: kind = 1
                case ..<0.90: kind = 2
                case ..<0.95: kind = 3
                case ..<0.98: kind = 4
                default: kind = 5
                }
            case ..<0.92: kind = 6
            case ..<0.93: kind = 7
            case ..<0.94: kind = 8
            default: kind = 9
            }
            counts[kind] += 1
            switch kind {
            case 0: frames.append(Frame(.message(textMessage(in: conversation()))))
            case 1: frames.append(Frame(.message(mergerMessage(in: conversation(), count: rng.int(3...10)))))
            case 2: frames.append(Frame(.message(imageMessage(in: conversation()))))
            case 3: frames.append(Frame(.message(signalingMessage(in: conversation()))))
            case 4: frames.append(Frame(.message(fileMessage(in: conversation()))))
            case 5: frames.append(Frame(.message(locationMessage(in: conversation()))))
            case 6: frames.append(Frame(.receipt(receipt())))
            case 7:
                frames.append(
                    Frame(
                        .receipts(
                            ReceiptBatch.with { batch in
                                batch.receipts = (0..<rng.int(2...6)).map { _ in receipt() }
                            }
                        )
                    )
                )
            case 8:
                frames.append(
                    Frame(
                        .c2cReadReceipt(
                            C2CReadReceipt.with {
                                $0.userID = rng.pick(users)
                                $0.readTimeMs = tick()
                            }
                        )
                    )
                )
            default: frames.append(Frame(.typing(typing())))
            }
        }
        return (frames, zip(kinds, counts).map { (kind: $0, count: $1) })
    }

    /// History pages of 20-100 messages and 300-message mergers.
    mutating func large(historyPages: Int, mergers: Int) -> (frames: [Frame], mix: [(kind: String, count: Int)]) {
        var frames: [Frame] = []
        let total = historyPages + mergers
        let step = max(total / max(mergers, 1), 1)
        var made = 0
        for i in 0..<total {
            // Spread the mergers evenly among the pages.
            if made < mergers, i % step == step / 2 || mergers - made >= total - i {
                frames.append(Frame(.message(mergerMessage(in: conversation(), count: 300))))
                made += 1
                continue
            }
            let conversation = conversation()
            frames.append(
                Frame(
                    .historyResponse(
                        HistoryResponse.with { page in
                            page.conversation = conversation
                            page.messages = (0..<rng.int(20...100)).map { _ in
                                let m = Double.random(in: 0..<1, using: &rng)
                                switch m {
                                case ..<0.80: return textMessage(in: conversation)
                                case ..<0.90: return imageMessage(in: conversation)
                                case ..<0.95: return fileMessage(in: conversation)
                                default: return locationMessage(in: conversation)
                                }
                            }
                            page.nextCursor = rng.hex(24)
                            page.finished = false
                        }
                    )
                )
            )
        }
        let mergerCount = frames.filter { if case .message? = $0.payload { true } else { false } }.count
        return (
            frames,
            [
                (kind: "history page", count: frames.count - mergerCount),
                (kind: "300-message merger", count: mergerCount),
            ]
        )
    }

    // MARK: Envelope

    private mutating func tick() -> Int64 {
        clock += Int64(rng.int(5...4000))
        return clock
    }

    private mutating func conversation() -> Conversation {
        let r = Double.random(in: 0..<1, using: &rng)
        switch r {
        case ..<0.55: return .oneToOne(rng.pick(users))
        case ..<0.95: return .group(rng.pick(groups))
        case ..<0.98:
            return Conversation.with {
                $0.type = .chatroom; $0.targetID = "@TGS#a" + rng.digits(9)
            }
        default:
            return Conversation.with {
                $0.type = .ultraGroup
                $0.targetID = rng.pick(groups)
                $0.channelID = "ch_" + rng.digits(6)
            }
        }
    }

    /// A message with every envelope field a real client and server fill in.
    private mutating func envelope(in conversation: Conversation, _ elements: [MessageElement]) -> Message {
        let isGroup = conversation.type != .oneToOne
        let sender = rng.pick(users)
        let clientTime = tick()
        let acked = rng.chance(0.85) || forceAcked
        var message = Message()
        message.clientMsgID = rng.hex(32)
        message.random = UInt32(truncatingIfNeeded: rng.next())
        message.senderID = sender
        message.conversation = conversation
        message.clientTimeMs = clientTime
        if acked {
            seq += UInt64(rng.int(1...40))
            message.seq = seq
            message.serverTimeMs = clientTime + Int64(rng.int(20...800))
            message.serverMsgUID = "\(seq)-\(message.serverTimeMs / 1000)-\(message.random)"
            message.status = .sent
        } else {
            message.status = .sending
        }
        message.priority = rng.chance(0.9) ? .normal : rng.pick([.high, .low])
        var flags: MessageFlags = [.saveToHistory]
        if rng.chance(0.5) { flags.insert(.deliveryReceiptEnabled) }
        if isGroup, rng.chance(0.2) { flags.insert(.needReadReceipt) }
        if rng.chance(0.05) { flags.insert(.supportExtension) }
        message.messageFlags = flags
        message.storagePolicy = .counted
        if rng.chance(0.7) { message.senderNickname = rng.pick(Text.nicknames) }
        if isGroup, rng.chance(0.1) {
            message.at = AtInfo.with { at in
                if rng.chance(0.15) {
                    at.atAll = true
                } else {
                    at.userIDs = (0..<rng.int(1...3)).map { _ in rng.pick(users) }
                }
            }
        }
        if rng.chance(0.2) {
            var params: [String: String] = [:]
            for _ in 0..<rng.int(1...4) {
                let key = rng.pick(Text.paramKeys)
                params[key] = Text.paramValue(key, &rng)
            }
            message.customParams = params
        }
        if rng.chance(0.25) {
            message.offlinePush = OfflinePushInfo.with {
                $0.title = message.senderNickname.isEmpty ? "New message" : message.senderNickname
                $0.description = rng.pick(Text.pushDescriptions)
                if rng.chance(0.3) { $0.ext = "{\"entity\":{\"action\":1,\"chatType\":\(isGroup ? 2 : 1)}}" }
                if rng.chance(0.2) { $0.iosSound = "default" }
            }
        }
        if rng.chance(0.08) {
            message.cloudCustomData = Array(
                "{\"messageFeature\":{\"needTyping\":1,\"version\":\(rng.int(1...3))}}".utf8
            )
        }
        if rng.chance(0.05) {
            message.quote = MessageRef.with {
                $0.clientMsgID = rng.hex(32)
                $0.seq = seq - UInt64(rng.int(1...999))
                $0.serverMsgUID = "\($0.seq)-\(clientTime / 1000 - 600)-\(rng.int(1...999_999_999))"
                $0.senderID = rng.pick(users)
                $0.serverTimeMs = clientTime - Int64(rng.int(1000...3_600_000))
            }
        }
        message.elements = elements
        return message
    }

    // MARK: Messages

    private mutating func text() -> String {
        var s = rng.pick(Text.phrases)
        let extra = rng.chance(0.5) ? rng.int(0...2) : 0
        for _ in 0..<extra { s += " " + rng.pick(Text.phrases) }
        return s
    }

    private mutating func textMessage(in conversation: Conversation) -> Message {
        var elements: [MessageElement] = [.text(text())]
        let r = Double.random(in: 0..<1, using: &rng)
        if r < 0.3 { elements.append(.face(index: Int32(rng.int(1...200)))) }
        if r < 0.1 { elements.append(.text(text())) }
        return envelope(in: conversation, elements)
    }

    private mutating func imageMessage(in conversation: Conversation) -> Message {
        let format = rng.pick([ImageFormat.jpg, .jpg, .jpg, .png, .gif])
        let ext = format == .png ? "png" : format == .gif ? "gif" : "jpg"
        let uuid = rng.hex(32)
        let width = UInt32(rng.int(800...4032))
        let height = UInt32(rng.int(600...3024))
        let size = UInt64(rng.int(200_000...6_000_000))
        let base = "https://im-media.example.com/\(rng.digits(10))/\(uuid)"
        let scale = { (side: UInt32) -> (UInt32, UInt32) in
            let shorter = min(width, height)
            return (width * side / shorter, height * side / shorter)
        }
        let (lw, lh) = scale(720)
        let (tw, th) = scale(198)
        let renditions = [
            ImageInfo(type: .original, uuid: uuid, size: size, width: width, height: height, url: "\(base).\(ext)"),
            ImageInfo(
                type: .large,
                uuid: uuid + "_l",
                size: size / 6,
                width: lw,
                height: lh,
                url: "\(base)_720.\(ext)"
            ),
            ImageInfo(
                type: .thumbnail,
                uuid: uuid + "_t",
                size: size / 40,
                width: tw,
                height: th,
                url: "\(base)_198.\(ext)"
            ),
        ]
        return envelope(in: conversation, [.image(format: format, renditions)])
    }

    private mutating func signalingMessage(in conversation: Conversation) -> Message {
        let callID = rng.hex(16)
        let json =
            "{\"businessID\":\"av_call\",\"version\":4,\"call_type\":\(rng.int(1...2)),"
            + "\"room_id\":\(rng.digits(8)),\"call_id\":\"\(callID)\",\"action\":\(rng.int(1...6)),"
            + "\"timeout\":30,\"invitee\":[\"\(rng.pick(users))\"]}"
        var message = envelope(in: conversation, [.custom(Array(json.utf8), description: "av_call", ext: "")])
        message.messageFlags = [.onlineUserOnly, .excludedFromUnreadCount, .excludedFromLastMessage]
        message.storagePolicy = .statusOnly
        message.offlinePush = nil
        return message
    }

    private mutating func fileMessage(in conversation: Conversation) -> Message {
        let uuid = rng.hex(32)
        let name = rng.pick(Text.fileNames)
        return envelope(
            in: conversation,
            [
                .file(
                    uuid: uuid,
                    name: name,
                    size: UInt64(rng.int(10_000...104_857_600)),
                    url:
                        "https://im-files.example.com/\(rng.digits(10))/\(uuid)/\(name.split(separator: " ").joined(separator: "%20"))"
                )
            ]
        )
    }

    private mutating func locationMessage(in conversation: Conversation) -> Message {
        envelope(
            in: conversation,
            [
                .location(
                    latitude: Double.random(in: 22...40, using: &rng),
                    longitude: Double.random(in: 100...122, using: &rng),
                    description: rng.pick(Text.places)
                )
            ]
        )
    }

    private mutating func mergerMessage(in conversation: Conversation, count: Int) -> Message {
        let inner = Conversation.oneToOne(rng.pick(users))
        var messages: [Message] = []
        messages.reserveCapacity(count)
        for _ in 0..<count {
            let r = Double.random(in: 0..<1, using: &rng)
            messages.append(r < 0.9 ? textMessage(in: inner) : imageMessage(in: inner))
        }
        let a = rng.pick(Text.nicknames)
        let b = rng.pick(Text.nicknames)
        let abstracts = messages.prefix(4).map { m -> String in
            let preview: String
            if case .text(let t)? = m.elements.first?.content {
                preview = String(t.text.prefix(30))
            } else {
                preview = "[Image]"
            }
            return "\(m.senderNickname.isEmpty ? m.senderID : m.senderNickname): \(preview)"
        }
        return envelope(
            in: conversation,
            [
                .merger(
                    title: "Chat history of \(a) and \(b)",
                    abstracts: abstracts,
                    compatibleText: "[Chat History]",
                    messages: messages
                )
            ]
        )
    }

    // MARK: Events

    private mutating func receipt() -> MessageReceipt {
        let conversation = conversation()
        let isGroup = conversation.type != .oneToOne
        let time = tick()
        let ref = MessageRef.with {
            $0.clientMsgID = rng.hex(32)
            $0.seq = seq - UInt64(rng.int(0...500))
            $0.serverMsgUID = "\($0.seq)-\(time / 1000 - 30)-\(rng.int(1...999_999_999))"
            $0.conversation = conversation
            $0.senderID = rng.pick(users)
            $0.serverTimeMs = time - Int64(rng.int(100...100_000))
        }
        return MessageReceipt.with {
            $0.kind = rng.chance(0.7) ? .read : .delivered
            $0.message = ref
            $0.userID = rng.pick(users)
            $0.timeMs = time
            if isGroup {
                $0.groupID = conversation.targetID
                $0.readCount = UInt64(rng.int(1...200))
                $0.unreadCount = UInt64(rng.int(0...300))
            } else {
                $0.isPeerRead = true
            }
        }
    }

    private mutating func typing() -> TypingEvent {
        TypingEvent.with {
            $0.conversation = .oneToOne(rng.pick(users))
            $0.userID = rng.pick(users)
            $0.state = rng.chance(0.7) ? .started : .stopped
        }
    }
}

// MARK: Conversation state (issue 17)

/// The frames a client sees about the state of its conversations rather than their messages
/// (Benchmarks/README.md gives the shares and why): its own mark-reads, the conversation list it
/// pulls after each login or reconnect, its own conversation updates (drafts, pins, hides, cleared
/// history, archive), message-extension updates (sign-ups, poll votes, order cards) and fetches,
/// and the blocklist. A frame the client sends carries a request id (the answer repeats it); one
/// the server keeps and delivers to the user's other devices (or, for an extension update, to every
/// member) carries its stream position and the server's user id and time.
extension CorpusGenerator {
    /// Kinds 10-19 of `traffic`'s list, or nil (96.45%): drawn from `stateRng`.
    mutating func stateKind() -> Int? {
        let r = Double.random(in: 0..<1, using: &stateRng)
        switch r {
        case ..<0.0100: return 10  // mark read
        case ..<0.0140: return 11  // conversation list request
        case ..<0.0180: return 12  // conversation list
        case ..<0.0210: return 13  // conversation update
        case ..<0.0290: return 14  // extension update
        case ..<0.0310: return 15  // extension fetch request
        case ..<0.0330: return 16  // extension fetch response
        case ..<0.0340: return 17  // blocklist request
        case ..<0.0350: return 18  // blocklist response
        case ..<0.0355: return 19  // blocklist change
        default: return nil
        }
    }

    /// One conversation-state frame of `kind`, made with `stateRng`; the clock and seq are as before.
    mutating func stateFrame(_ kind: Int) -> Frame {
        swap(&rng, &stateRng)
        let (savedClock, savedSeq) = (clock, seq)
        defer {
            swap(&rng, &stateRng)
            (clock, seq) = (savedClock, savedSeq)
        }
        switch kind {
        case 10:
            // The user read a conversation (or, rarely, marked all read) on this device or another.
            let all = rng.chance(0.02)
            let conversation = listConversation()
            let event = MarkReadEvent.with {
                if !all { $0.conversation = conversation }
                $0.userID = rng.pick(users)
                $0.readTimeMs = tick()
                $0.readSeq = all ? 0 : seq - UInt64(rng.int(0...40))
                $0.allConversations = all
            }
            return stateFrame(.markRead(event), delivered: rng.chance(0.5))
        case 11:
            // After a login or reconnect: what changed after the newest version the device holds;
            // a first login on a device asks for the whole list (after_version 0).
            let request = ConversationListRequest.with {
                $0.afterVersion = rng.chance(0.9) ? UInt64(rng.int(1_000...2_000_000)) : 0
                $0.limit = 50
            }
            return stateFrame(.conversationListRequest(request), delivered: false)
        case 12: return stateFrame(.conversationList(conversationList()), delivered: false)
        case 13: return stateFrame(.conversationUpdate(conversationUpdate()), delivered: nil)
        case 14: return stateFrame(.extensionUpdate(extensionUpdate()), delivered: nil)
        case 15:
            // Opening a conversation: the current keys of the extensible messages on screen.
            let request = ExtensionFetchRequest.with {
                $0.messages = (0..<rng.int(1...5)).map { _ in extensibleMessageRef() }
            }
            return stateFrame(.extensionFetchRequest(request), delivered: false)
        case 16:
            let response = ExtensionFetchResponse.with {
                $0.extensions = (0..<rng.int(1...5)).map { _ in
                    MessageExtension.with {
                        $0.message = extensibleMessageRef()
                        $0.entries = currentExtension()
                    }
                }
            }
            return stateFrame(.extensionFetchResponse(response), delivered: false)
        case 17: return stateFrame(.blocklistRequest(BlocklistRequest()), delivered: false)
        case 18:
            // Most users block no one or a few.
            let r = Double.random(in: 0..<1, using: &rng)
            let n = r < 0.3 ? 0 : r < 0.8 ? rng.int(1...5) : rng.int(6...30)
            let response = BlocklistResponse.with { $0.userIDs = distinctUsers(n) }
            return stateFrame(.blocklistResponse(response), delivered: false)
        default:
            let delivered = rng.chance(0.6)
            let change = BlocklistChange.with {
                $0.action = rng.chance(0.8) ? .block : .unblock
                $0.userIDs = distinctUsers(rng.chance(0.85) ? 1 : rng.int(2...3))
                if delivered {
                    $0.userID = rng.pick(users)
                    $0.timeMs = tick()
                }
            }
            return stateFrame(.blocklistChange(change), delivered: delivered)
        }
    }

    /// `payload` sent by the client (a request id) or delivered from the user's stream (its
    /// position); nil: the payload says which (its user id is set only when delivered).
    private mutating func stateFrame(_ payload: Frame.Payload, delivered: Bool?) -> Frame {
        var frame = Frame(payload)
        let isDelivered: Bool
        switch payload {
        case .conversationUpdate(let u): isDelivered = delivered ?? !u.userID.isEmpty
        case .extensionUpdate(let u): isDelivered = delivered ?? !u.userID.isEmpty
        default: isDelivered = delivered ?? false
        }
        if isDelivered {
            frame.streamPosition = UInt64(rng.int(1_000...2_000_000))
        } else {
            frame.requestID = UInt64(rng.int(2...5_000))
        }
        return frame
    }

    /// A conversation as the user's list names it: one-to-one by the other user's id, a group,
    /// or an ultra-group channel (chatrooms are not listed: Tencent's AVChatRoom is not).
    private mutating func listConversation() -> Conversation {
        let r = Double.random(in: 0..<1, using: &rng)
        switch r {
        case ..<0.60: return .oneToOne(rng.pick(users))
        case ..<0.97: return .group(rng.pick(groups))
        default:
            return Conversation.with {
                $0.type = .ultraGroup
                $0.targetID = rng.pick(groups)
                $0.channelID = "ch_" + rng.digits(6)
            }
        }
    }

    /// `n` different user ids.
    private mutating func distinctUsers(_ n: Int) -> [String] {
        var seen = Set<String>()
        var ids: [String] = []
        while ids.count < n {
            let id = rng.pick(users)
            if seen.insert(id).inserted { ids.append(id) }
        }
        return ids
    }

    // MARK: The conversation list

    /// A page of the list: after a reconnect the few conversations that changed (1-12); at a
    /// first login the whole list, a page of up to 50 (the client's limit).
    private mutating func conversationList() -> ConversationList {
        let firstLogin = rng.chance(0.1)
        let n = firstLogin ? rng.int(20...50) : rng.int(1...12)
        var version = UInt64(rng.int(1_000...2_000_000))
        var seen = Set<String>()
        var entries: [ConversationInfo] = []
        entries.reserveCapacity(n)
        while entries.count < n {
            let conversation = listConversation()
            guard seen.insert("\(conversation.type.rawValue) \(conversation.targetID)").inserted else { continue }
            version += UInt64(rng.int(1...40))
            entries.append(conversationInfo(conversation, version: version))
        }
        return ConversationList.with {
            $0.conversations = entries
            $0.hasMore = firstLogin && n == 50
            $0.nextAfterVersion = version
        }
    }

    /// One entry as imcodec-relay serves it (session.proto ConversationInfo), with Tencent's shapes:
    /// unread count, unread @ of the user, pinned, muted, draft, read marks.
    private mutating func conversationInfo(_ conversation: Conversation, version: UInt64) -> ConversationInfo {
        let isGroup = conversation.type != .oneToOne
        let last = lastMessage(in: conversation)
        var info = ConversationInfo()
        info.conversation = conversation
        info.lastMessage = last
        info.maxSeq = last.seq
        let unread: UInt32 =
            rng.chance(0.55) ? 0 : rng.chance(0.85) ? UInt32(rng.int(1...9)) : UInt32(rng.int(10...99))
        info.unreadCount = unread
        info.readSeq = last.seq - UInt64(unread)
        if isGroup, unread > 0, rng.chance(0.15) {
            // Unread @ of the user: seqs above the read horizon, oldest first.
            let offsets = Set((0..<min(Int(unread), rng.int(1...2))).map { _ in rng.int(1...Int(unread)) }).sorted()
            info.atMe = offsets.map { offset in
                AtMe.with {
                    $0.seq = info.readSeq + UInt64(offset)
                    let k = Double.random(in: 0..<1, using: &rng)
                    $0.kind = k < 0.7 ? .atMe : k < 0.95 ? .atAll : .atAllAtMe
                }
            }
        }
        if rng.chance(0.08) { info.pinned = true }
        let option = Double.random(in: 0..<1, using: &rng)
        if option < 0.08 {
            info.receiveOption = .receiveNotNotify
        } else if option < 0.10 {
            info.receiveOption = .receive
        }
        if rng.chance(0.02) { info.archived = true }
        if rng.chance(0.05) {
            info.draftText = text()
            info.draftTimeMs = last.serverTimeMs + Int64(rng.int(1_000...600_000))
        }
        if rng.chance(0.04) { info.clearedSeq = info.readSeq - UInt64(rng.int(0...500)) }
        if rng.chance(0.02) { info.hidden = true }
        switch conversation.type {
        case .oneToOne:
            // The peer's read horizon: the read marks on the user's own messages.
            if rng.chance(0.85) {
                info.readHorizons = [
                    ReadHorizon.with {
                        $0.userID = conversation.targetID
                        $0.readSeq = last.seq - UInt64(rng.int(0...3))
                    }
                ]
            }
        case .group:
            // Members who read, highest first (small work groups: 1-8 of them).
            var horizon = last.seq
            info.readHorizons = distinctUsers(rng.int(1...8)).map { user in
                horizon -= UInt64(rng.int(0...5))
                return ReadHorizon.with {
                    $0.userID = user
                    $0.readSeq = horizon
                }
            }
        default: break
        }
        info.version = version
        info.updatedAtMs = last.serverTimeMs + Int64(rng.int(0...60_000))
        return info
    }

    /// The newest message of a listed conversation, acknowledged, as the user's devices got it
    /// (sent or received); 3% recalled (its ids, seq and time, no content); an extensible one with
    /// its extension's current keys.
    private mutating func lastMessage(in conversation: Conversation) -> Message {
        forceAcked = true
        defer { forceAcked = false }
        let r = Double.random(in: 0..<1, using: &rng)
        var message: Message
        switch r {
        case ..<0.75: message = textMessage(in: conversation)
        case ..<0.85: message = imageMessage(in: conversation)
        case ..<0.90: message = fileMessage(in: conversation)
        case ..<0.94: message = locationMessage(in: conversation)
        case ..<0.97: message = mergerMessage(in: conversation, count: rng.int(3...10))
        default:
            let m = textMessage(in: conversation)
            message = Message.with {
                $0.clientMsgID = m.clientMsgID
                $0.serverMsgUID = m.serverMsgUID
                $0.seq = m.seq
                $0.random = m.random
                $0.senderID = m.senderID
                $0.conversation = conversation
                $0.clientTimeMs = m.clientTimeMs
                $0.serverTimeMs = m.serverTimeMs
                $0.status = .recalled
            }
        }
        let received = rng.chance(0.7)
        if received, conversation.type == .oneToOne { message.senderID = conversation.targetID }
        message.direction = received ? .received : .sent
        // A server refuses an @ on anything but text (validate(): atNotText), so none is listed.
        if message.elements.contains(where: { if case .text? = $0.content { false } else { true } }) {
            message.at = nil
        }
        if message.messageFlags.contains(.supportExtension) {
            var expansion: [String: String] = [:]
            for entry in currentExtension() { expansion[entry.key] = entry.value }
            message.expansion = expansion
        }
        return message
    }

    /// A conversation update (session.proto ConversationUpdate) as the user's device sends it or
    /// (60%) as another of its devices gets it: a draft saved or cleared when the user leaves
    /// a chat (Tencent setConversationDraft), a pin, a hide (deleteConversation), a cleared history
    /// (clearC2CHistoryMessage), an archive.
    private mutating func conversationUpdate() -> ConversationUpdate {
        let delivered = rng.chance(0.6)
        var update = ConversationUpdate()
        update.conversation = listConversation()
        let r = Double.random(in: 0..<1, using: &rng)
        switch r {
        case ..<0.5:
            update.fields = UInt32(ConversationField.draft.rawValue)
            if rng.chance(0.8) { update.draftText = text() }
        case ..<0.7:
            update.fields = UInt32(ConversationField.pinned.rawValue)
            update.pinned = rng.chance(0.75)
        case ..<0.8:
            update.fields = UInt32(ConversationField.hidden.rawValue)
            update.hidden = true
        case ..<0.9:
            update.fields = UInt32(ConversationField.clearedSeq.rawValue)
            update.clearedSeq = seq - UInt64(rng.int(0...2_000))
        default:
            update.fields = UInt32(ConversationField.archived.rawValue)
            update.archived = rng.chance(0.85)
        }
        if delivered {
            update.userID = rng.pick(users)
            update.timeMs = tick()
        }
        return update
    }

    // MARK: Message extensions

    /// A message sent with MESSAGE_FLAG_SUPPORT_EXTENSION, as a reference: a sign-up, poll or
    /// order card, mostly in groups.
    private mutating func extensibleMessageRef() -> MessageRef {
        let conversation: Conversation = rng.chance(0.8) ? .group(rng.pick(groups)) : .oneToOne(rng.pick(users))
        let time = clock - Int64(rng.int(1_000...86_400_000))
        return MessageRef.with {
            $0.clientMsgID = rng.hex(32)
            $0.seq = seq - UInt64(rng.int(1...5_000))
            $0.serverMsgUID = "\($0.seq)-\(time / 1000)-\(rng.int(1...999_999_999))"
            $0.conversation = conversation
            $0.senderID = rng.pick(users)
            $0.serverTimeMs = time
        }
    }

    /// A member's change to a message's extension (Tencent setMessageExtensions, RongCloud
    /// updateMessageExpansion): signing up (key: the user's id, value: its entry), voting (value:
    /// the options) or withdrawing a vote (a removed key), or an order card's status. As the client
    /// sends it: the keys with the versions it saw; 75% delivered (the server's copy every other
    /// member gets): also the keys as they now are, the user and the time.
    private mutating func extensionUpdate() -> ExtensionUpdate {
        let delivered = rng.chance(0.75)
        let user = rng.pick(users)
        var update = ExtensionUpdate()
        update.message = extensibleMessageRef()
        let r = Double.random(in: 0..<1, using: &rng)
        switch r {
        case ..<0.5:
            let edit = rng.chance(0.15)
            update.set = [
                ExtensionEntry.with {
                    $0.key = user
                    $0.value = rng.pick(Text.nicknames) + " " + rng.pick(Text.signUps)
                    $0.version = edit ? UInt64(rng.int(1...2)) : 0
                }
            ]
        case ..<0.85:
            if rng.chance(0.15) {
                update.remove = [
                    ExtensionEntry.with {
                        $0.key = user; $0.version = UInt64(rng.int(1...2))
                    }
                ]
            } else {
                update.set = [
                    ExtensionEntry.with {
                        $0.key = user; $0.value = rng.pick(Text.pollChoices)
                    }
                ]
            }
        default:
            let version = UInt64(rng.int(1...5))
            update.set = [
                ExtensionEntry.with {
                    $0.key = "status"
                    $0.value = rng.pick(Text.cardStatuses)
                    $0.version = version
                },
                ExtensionEntry.with {
                    $0.key = "operator"
                    $0.value = user
                    $0.version = version
                },
            ]
        }
        if delivered {
            update.entries =
                update.set.map { entry in
                    ExtensionEntry.with {
                        $0.key = entry.key
                        $0.value = entry.value
                        $0.version = entry.version + 1
                    }
                }
                + update.remove.map { entry in
                    ExtensionEntry.with {
                        $0.key = entry.key
                        $0.version = entry.version + 1
                        $0.removed = true
                    }
                }
            update.userID = user
            update.timeMs = tick()
        }
        return update
    }

    /// A message's extension as the server holds it: a sign-up list (2-30 entries), a poll's votes
    /// (3-40) or an order card's status.
    private mutating func currentExtension() -> [ExtensionEntry] {
        let r = Double.random(in: 0..<1, using: &rng)
        switch r {
        case ..<0.5:
            return distinctUsers(rng.int(2...30)).map { user in
                ExtensionEntry.with {
                    $0.key = user
                    $0.value = rng.pick(Text.nicknames) + " " + rng.pick(Text.signUps)
                    $0.version = rng.chance(0.9) ? 1 : 2
                }
            }
        case ..<0.85:
            return distinctUsers(rng.int(3...40)).map { user in
                ExtensionEntry.with {
                    $0.key = user
                    $0.value = rng.pick(Text.pollChoices)
                    $0.version = rng.chance(0.9) ? 1 : 2
                }
            }
        default:
            let version = UInt64(rng.int(1...5))
            return [
                ExtensionEntry.with {
                    $0.key = "operator"
                    $0.value = rng.pick(users)
                    $0.version = version
                },
                ExtensionEntry.with {
                    $0.key = "status"
                    $0.value = rng.pick(Text.cardStatuses)
                    $0.version = version
                },
            ]
        }
    }
}

/// Word lists for the generator: English, Chinese (3 UTF-8 bytes a character) and emoji.
enum Text {
    static let latinNames = [
        "Alice Wang", "Bob Li", "Carol Chen", "David Zhang", "Emma Liu", "Frank Yang", "Grace Huang", "Henry Zhao",
        "Ivy Wu", "Jack Zhou", "Kate Xu", "Leo Sun", "Mia Ma", "Noah Zhu", "Olivia Hu", "Peter Guo",
    ]
    static let nicknames =
        latinNames + [
            "张伟", "王芳", "李娜", "刘洋", "陈静", "杨磊", "赵敏", "黄晓明", "周杰", "吴婷婷", "🐱 Mia", "小鱼儿🐟",
            "产品-王经理", "Kevin (运营)", "Daisy✨",
        ]
    static let phrases = [
        "ok", "👍", "Thanks!", "On my way", "See you at 3pm in the meeting room",
        "Can you send me the latest version of the design doc?", "lol 😂😂",
        "I pushed the fix, please review when you have a minute", "Happy birthday!!! 🎂🎉",
        "Sounds good to me", "Where are we having dinner tonight?", "The build is green again ✅",
        "好的", "收到", "明天上午十点开会，别忘了带电脑", "我到楼下了，你下来吧", "哈哈哈哈哈😂",
        "这个问题我来跟进一下，稍后回复你", "周末一起去爬山吗？天气预报说是晴天☀️",
        "文件已经发到群里了，大家看一下有没有问题", "辛苦了🙏", "晚安🌙",
        "Please check the attached screenshot, the button overlaps the text on small screens",
        "Let's move the launch to next Tuesday so QA has two more days",
        "Der Termin passt mir gut, bis morgen!", "¿Nos vemos mañana en la oficina?",
    ]
    static let pushDescriptions = [
        "You have a new message", "[Image]", "[File]", "Sent you a message", "你有一条新消息", "[图片]",
        "@你 in the group", "[Location]",
    ]
    static let paramKeys = ["client_version", "platform", "trace_id", "locale", "device", "biz_type", "channel"]
    static func paramValue(_ key: String, _ rng: inout SeededGenerator) -> String {
        switch key {
        case "client_version": return "\(rng.int(5...8)).\(rng.int(0...20)).\(rng.int(0...9))"
        case "platform": return rng.pick(["ios", "android", "web", "mac", "windows"])
        case "trace_id": return rng.hex(32)
        case "locale": return rng.pick(["zh-CN", "en-US", "zh-TW", "ja-JP"])
        case "device": return rng.pick(["iPhone15,2", "Pixel 8", "SM-S9180", "MacBookPro18,3"])
        case "biz_type": return rng.pick(["order", "support", "chat", "notice"])
        default: return rng.pick(["appstore", "huawei", "xiaomi", "web"])
        }
    }
    static let fileNames = [
        "Q3 report.pdf", "design-v7.fig", "合同扫描件.pdf", "meeting notes.docx", "IMG_2041.HEIC", "budget 2026.xlsx",
        "release-notes.md", "产品需求文档v2.3.docx",
    ]
    /// Sign-up ("接龙") entries: what a member writes after its name.
    static let signUps = [
        "+1", "我报名", "+1 带家属", "2人", "Count me in", "I'll bring snacks", "+1 晚到半小时", "参加", "+1 🙋",
        "Me too, plus one guest",
    ]
    /// A poll vote's value: the chosen options' indices.
    static let pollChoices = ["0", "1", "2", "3", "0,2", "1,3", "0,1,2"]
    /// An order or ticket card's status (customer service).
    static let cardStatuses = ["paid", "shipped", "delivered", "refunded", "closed", "processing"]
    static let places = [
        "Shanghai Tower, Lujiazui", "北京市海淀区中关村大街1号", "Starbucks, Nanjing Road", "深圳湾科技生态园",
        "Hangzhou East Railway Station", "广州塔",
    ]
}

/// `value` with `decimals` digits after the point.
func format(_ value: Double, _ decimals: Int) -> String {
    guard value.isFinite else { return "-" }
    var scale = 1.0
    for _ in 0..<decimals { scale *= 10 }
    let rounded = (value * scale).rounded() / scale
    var s = String(rounded)
    if decimals == 0 {
        if let dot = s.firstIndex(of: ".") { s = String(s[..<dot]) }
        return s
    }
    if !s.contains(".") { s += "." }
    let fraction = s.split(separator: ".", omittingEmptySubsequences: false).last?.count ?? 0
    if fraction < decimals { s += String(repeating: "0", count: decimals - fraction) }
    if s.contains("e") { return String(value) }
    return s
}
