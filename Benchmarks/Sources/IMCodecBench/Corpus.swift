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
/// typing events. The large corpus holds history pages (20-100 messages) and 300-message mergers.
struct CorpusGenerator {
    private var rng: SeededGenerator
    private let users: [String]
    private let groups: [String]
    private var seq: UInt64 = 1_000_000
    private var clock: Int64 = 1_763_000_000_000  // 2025-11-13, in ms

    init(seed: UInt64) {
        rng = SeededGenerator(seed: seed)
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
        ]
        var counts = [Int](repeating: 0, count: kinds.count)
        var frames: [Frame] = []
        frames.reserveCapacity(count)
        for _ in 0..<count {
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
        let acked = rng.chance(0.85)
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
