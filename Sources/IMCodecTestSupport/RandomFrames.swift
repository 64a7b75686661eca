// Seeded random values for the tests: Swift values of every payload kind, made reproducible by
// ``SeededGenerator``. Test-only, like the rest of IMCodecTestSupport.
import IMCodec

/// Seeded random frames of every payload kind, most of them valid (realistic ids, conversations and
/// times, edge strings and numbers), some with one field cleared or set out of range: the values
/// the property "what validate() accepts, decoding accepts and returns equal" is checked on.
public struct RandomFrames {
    public var random: RandomMessages

    public init(seed: UInt64) { random = RandomMessages(seed: seed) }

    public mutating func pick<T>(_ values: [T]) -> T { values.randomElement(using: &random.rng)! }

    public mutating func id() -> String {
        random.chance(85) ? "user_\(Int.random(in: 0..<100_000, using: &random.rng))" : random.string(allowNUL: false)
    }

    public mutating func conversation() -> Conversation {
        switch Int.random(in: 0..<10, using: &random.rng) {
        case 0:
            return Conversation.with {
                $0.type = .ultraGroup; $0.targetID = "ug-1"; $0.channelID = "announcements"
            }
        case 1:
            return Conversation.with {
                $0.type = .chatroom; $0.targetID = "@TGS#aRoom"
            }
        case 2: return Conversation.with { $0.type = .system }
        case 3: return random.conversation()
        case 4, 5, 6: return .group(random.chance(90) ? "@TGS#2J4SZEAEL" : random.string())
        default: return .oneToOne(id())
        }
    }

    public mutating func element() -> MessageElement {
        switch Int.random(in: 0..<8, using: &random.rng) {
        case 0: return .custom(random.bytes(), description: random.string(), ext: random.string())
        case 1: return .face(index: Int32.random(in: Int32.min...Int32.max, using: &random.rng), data: random.bytes())
        case 2:
            let latitude = pick([-90, 0, 22.5431, 90, random.double()])
            let longitude = pick([-180, 0, 114.0579, 180, random.double()])
            return .location(latitude: latitude, longitude: longitude, description: random.string())
        case 3:
            return .image(
                format: random.enumValue(ImageFormat.self),
                [
                    ImageInfo(
                        type: .original,
                        uuid: random.string(),
                        size: random.u64(),
                        width: 4032,
                        height: 3024,
                        url: random.string()
                    )
                ]
            )
        default: return .text(random.string())
        }
    }

    public mutating func message(in conversation: Conversation? = nil, mergerLayers: Int = 0) -> Message {
        let conversation = conversation ?? self.conversation()
        var elements = (0..<Int.random(in: 1...3, using: &random.rng)).map { _ in element() }
        if mergerLayers > 0 && random.chance(30) {
            let count = Int.random(in: 1...3, using: &random.rng)
            let inner = (0..<count).map { _ in message(mergerLayers: mergerLayers - 1) }
            elements = [
                .merger(
                    title: random.string(),
                    abstracts: [random.string()],
                    compatibleText: "[Chat History]",
                    messages: inner
                )
            ]
        } else if random.chance(10) {
            let size = pick([0, 1, 104_857_600, 104_857_601, random.u64()])
            let file = MessageElement.file(
                uuid: random.string(),
                name: random.string(),
                size: size,
                url: random.string()
            )
            let voice = SoundElement.with {
                $0.uuid = "s"; $0.durationS = 9
            }
            let sound = MessageElement.with { $0.content = .sound(voice) }
            elements = [pick([file, sound])]
        }
        var result = Message(
            from: id(),
            in: conversation,
            elements: elements,
            clientMsgID: random.string(allowNUL: false),
            clientTimeMs: random.i64()
        )
        result.serverMsgUID = random.string()
        result.seq = random.u64()
        result.serverTimeMs = random.i64()
        result.status = random.enumValue(MessageStatus.self)
        result.flags = UInt32.random(in: 0...UInt32.max, using: &random.rng)
        result.customParams = random.chance(30) ? random.map() : [:]
        result.cloudCustomData = random.chance(30) ? random.bytes() : []
        if random.chance(20) { result.quote = ref() }
        if conversation.type == .group && random.chance(30) {
            let count = pick([1, 2, 30, 31])
            result.at = AtInfo.with {
                $0.userIDs = (0..<count).map { "u\($0)" }; $0.atAll = count == 2
            }
        }
        return result
    }

    public mutating func ref() -> MessageRef {
        MessageRef.with {
            $0.serverMsgUID = random.chance(70) ? "144115233874815003-\(random.u64())" : ""
            $0.clientMsgID = random.chance(80) ? "cli-\(random.u64())" : ""
            $0.senderID = random.chance(80) ? id() : ""
            $0.seq = random.u64()
            $0.conversation = random.chance(80) ? conversation() : nil
            $0.serverTimeMs = random.i64()
        }
    }

    public mutating func time() -> Int64 {
        random.chance(90) ? Int64.random(in: 1...1_900_000_000_000, using: &random.rng) : random.i64()
    }

    // Long on purpose (over 80 lines): one case per payload kind, each a few lines.
    public mutating func frame() -> Frame {
        switch Int.random(in: 0..<16, using: &random.rng) {
        case 0: return Frame(message(mergerLayers: 3))
        case 1: return Frame(.receipt(receipt()))
        case 2:
            return Frame(
                .receipts(
                    ReceiptBatch.with {
                        $0.receipts = (0..<Int.random(in: 0...3, using: &random.rng)).map { _ in receipt() }
                        $0.c2cReadReceipts = (0..<Int.random(in: 0...2, using: &random.rng)).map { _ in c2cReadReceipt()
                        }
                    }
                )
            )
        case 3: return Frame(.c2cReadReceipt(c2cReadReceipt()))
        case 4:
            return Frame(
                .groupReadMembers(
                    GroupReadMembers.with {
                        $0.message = ref(); $0.read = random.chance(50)
                        $0.memberIDs = (0..<Int.random(in: 0...5, using: &random.rng)).map { _ in id() }
                        $0.finished = random.chance(50); $0.nextSeq = random.chance(80) ? random.u64() : 0
                    }
                )
            )
        case 5:
            return Frame(
                .recall(
                    RecallEvent.with {
                        $0.message = ref(); $0.revokerID = random.chance(90) ? id() : ""; $0.reason = random.string()
                        $0.timeMs = time()
                    }
                )
            )
        case 6:
            var edited = message()
            let ref = random.chance(85) ? edited.reference : ref()
            edited.editVersion = pick([0, 1, 2, 7])
            return Frame(
                .edit(
                    EditEvent.with {
                        $0.message = ref; $0.newMessage = random.chance(95) ? edited : nil; $0.editorID = id()
                        $0.timeMs = time()
                    }
                )
            )
        case 7:
            return Frame(
                .delete(
                    DeleteEvent.with {
                        $0.messages = (0..<Int.random(in: 0...3, using: &random.rng)).map { _ in ref() }
                        $0.scope = random.enumValue(DeleteScope.self); $0.operatorID = random.chance(90) ? id() : ""
                        $0.timeMs = time()
                    }
                )
            )
        case 8:
            return Frame(
                .typing(
                    TypingEvent.with {
                        $0.conversation = random.chance(90) ? conversation() : nil; $0.userID = id()
                        $0.state = random.enumValue(TypingState.self)
                    }
                )
            )
        case 9:
            let all = random.chance(30)
            return Frame(
                .markRead(
                    MarkReadEvent.with {
                        $0.conversation = all == random.chance(90) ? nil : conversation(); $0.userID = id()
                        $0.readTimeMs = random.chance(80) ? time() : 0;
                        $0.readSeq = random.chance(50) ? random.u64() : 0
                        $0.allConversations = all
                    }
                )
            )
        case 10:
            return Frame(
                .systemNotice(
                    SystemNotice.with {
                        $0.type = random.chance(90) ? "kicked_offline" : ""; $0.params = random.map();
                        $0.text = random.string()
                        $0.timeMs = time()
                    }
                )
            )
        case 11:
            let failed = random.chance(40)
            return Frame(
                .sendAck(
                    SendAck.with {
                        $0.clientMsgID = random.chance(95) ? "cli-\(random.u64())" : ""
                        $0.serverMsgUID = failed == random.chance(90) ? "" : "144115233874815003-\(random.u64())"
                        $0.errorCode = failed ? pick([80001, 20007, 20009, Int32.min, Int32.max]) : 0
                        $0.errorDescription = failed ? random.string() : ""; $0.seq = random.u64();
                        $0.serverTimeMs = time()
                        $0.conversation = random.chance(80) ? conversation() : nil
                    }
                )
            )
        case 12:
            return Frame(
                .historyRequest(
                    HistoryRequest.with {
                        $0.conversation = random.chance(95) ? conversation() : nil
                        $0.count = pick([0, 1, 20, 100, 101, UInt32.max])
                        $0.cursor = random.string(); $0.direction = random.enumValue(HistoryDirection.self)
                    }
                )
            )
        case 13:
            let conversation = random.chance(90) ? Conversation.group("@TGS#2J4SZEAEL") : self.conversation()
            return Frame(
                .historyResponse(
                    HistoryResponse.with {
                        $0.conversation = conversation
                        let count = Int.random(in: 0...4, using: &random.rng)
                        $0.messages = (0..<count).map { _ in message(in: conversation, mergerLayers: 1) }
                        $0.finished = random.chance(50);
                        $0.nextCursor = random.chance(80) ? "cursor-\(random.u64())" : ""
                    }
                )
            )
        case 14:
            return Frame(
                .mergerPayload(
                    MergerPayload.with {
                        $0.messages = (0..<Int.random(in: 0...4, using: &random.rng)).map { _ in
                            message(mergerLayers: 2)
                        }
                    }
                )
            )
        default: return random.chance(50) ? Frame() : Frame(message())
        }
    }

    public mutating func receipt() -> MessageReceipt {
        let group = random.chance(40)
        return MessageReceipt.with {
            $0.kind = random.enumValue(ReceiptKind.self); $0.message = ref(); $0.timeMs = time()
            $0.userID = group && random.chance(70) ? "" : id(); $0.isPeerRead = !group && random.chance(50)
            $0.groupID = group ? "@TGS#2J4SZEAEL" : ""
            $0.readCount = group || random.chance(5) ? random.u64() : 0; $0.unreadCount = group ? random.u64() : 0
        }
    }

    public mutating func c2cReadReceipt() -> C2CReadReceipt {
        C2CReadReceipt.with {
            $0.userID = random.chance(90) ? id() : ""; $0.readTimeMs = time()
        }
    }
}
