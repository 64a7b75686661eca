// Seeded random values for the tests: Swift values of every payload kind, made reproducible by
// ``SeededGenerator``. Test-only, like the rest of IMCodecTestSupport.
import IMCodec

/// Seeded random messages: chains of every element kind, nested mergers, maps, unknown enum
/// numbers, edge strings (empty, CJK, emoji, embedded NUL, long), extreme numbers.
public struct RandomMessages {
    public var rng: SeededGenerator

    public init(seed: UInt64) { rng = SeededGenerator(seed: seed) }

    public mutating func chance(_ percent: Int) -> Bool { Int.random(in: 0..<100, using: &rng) < percent }

    public mutating func string(allowNUL: Bool = true) -> String {
        switch Int.random(in: 0..<9, using: &rng) {
        case 0: return ""
        case 1: return "user_\(Int.random(in: 0..<100_000, using: &rng))"
        case 2: return "你好，世界"
        case 3: return "🚀🙂👨‍👩‍👧"
        case 4: return allowNUL ? "nul\u{0}inside" : "no nul"
        case 5: return String(repeating: "long text ", count: Int.random(in: 10..<60, using: &rng))
        case 6: return "mixed ascii é ß 漢字 \u{10FFFF}"
        case 7: return "https://cdn.example.com/\(UInt64.random(in: 0...UInt64.max, using: &rng))"
        default: return "\(Int64.random(in: Int64.min...Int64.max, using: &rng))"
        }
    }

    public mutating func bytes() -> [UInt8] {
        (0..<Int.random(in: 0..<40, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
    }

    public mutating func u64() -> UInt64 {
        [0, 1, 127, 128, UInt64(UInt32.max), .max, UInt64.random(in: 0...UInt64.max, using: &rng)].randomElement(
            using: &rng
        )!
    }

    public mutating func i64() -> Int64 {
        [0, -1, .min, .max, Int64.random(in: Int64.min...Int64.max, using: &rng)].randomElement(using: &rng)!
    }

    public mutating func enumValue<E: RawRepresentable & CaseIterable>(_ type: E.Type) -> E where E.RawValue == Int32 {
        if chance(10) { return E(rawValue: [Int32(-7), 99, 1000, Int32.max].randomElement(using: &rng)!)! }
        return E.allCases.randomElement(using: &rng)!
    }

    public mutating func double() -> Double {
        [
            0.0, -0.0, 1.5, -180, 90, .greatestFiniteMagnitude, .leastNonzeroMagnitude, .infinity, -.infinity,
            Double.random(in: -1e9...1e9, using: &rng),
        ].randomElement(using: &rng)!
    }

    public mutating func map() -> [String: String] {
        var map: [String: String] = [:]
        for _ in 0..<Int.random(in: 0..<4, using: &rng) { map[string(allowNUL: false)] = string(allowNUL: false) }
        return map
    }

    public mutating func conversation() -> Conversation {
        Conversation.with {
            $0.type = enumValue(ConversationType.self); $0.targetID = string();
            $0.channelID = chance(20) ? string() : ""
        }
    }

    public mutating func ref() -> MessageRef {
        MessageRef.with {
            $0.clientMsgID = string(); $0.serverMsgUID = string(); $0.seq = u64()
            $0.conversation = chance(70) ? conversation() : nil; $0.senderID = string(); $0.serverTimeMs = i64()
        }
    }

    // Long on purpose (over 80 lines): one case per element kind, each a few lines.
    public mutating func element(depth: Int) -> MessageElement {
        var e = MessageElement()
        switch Int.random(in: 0..<(depth > 0 ? 11 : 10), using: &rng) {
        case 0: e.content = .text(TextElement.with { $0.text = string() })
        case 1:
            e.content = .custom(
                CustomElement.with {
                    $0.data = bytes(); $0.description = string(); $0.ext = string()
                }
            )
        case 2:
            e.content = .image(
                ImageElement.with {
                    $0.format = enumValue(ImageFormat.self)
                    $0.images = (0..<Int.random(in: 0...3, using: &rng)).map { _ in
                        ImageInfo(
                            type: enumValue(ImageType.self),
                            uuid: string(),
                            size: u64(),
                            width: UInt32.random(in: 0...UInt32.max, using: &rng),
                            height: 198,
                            url: string()
                        )
                    }
                }
            )
        case 3:
            e.content = .video(
                VideoElement.with {
                    $0.videoUUID = string(); $0.videoType = "mp4"; $0.videoSize = u64(); $0.durationS = 3;
                    $0.videoURL = string()
                    $0.snapshotUUID = string(); $0.snapshotSize = u64(); $0.snapshotWidth = 1; $0.snapshotHeight = 2;
                    $0.snapshotURL = string()
                }
            )
        case 4:
            e.content = .sound(
                SoundElement.with {
                    $0.uuid = string(); $0.size = u64(); $0.durationS = 60; $0.url = string()
                }
            )
        case 5:
            e.content = .file(
                FileElement.with {
                    $0.uuid = string(); $0.name = string(); $0.size = u64(); $0.url = string()
                }
            )
        case 6:
            e.content = .location(
                LocationElement.with {
                    $0.description = string(); $0.longitude = double(); $0.latitude = double()
                }
            )
        case 7:
            e.content = .face(
                FaceElement.with {
                    $0.index = Int32.random(in: Int32.min...Int32.max, using: &rng); $0.data = bytes()
                }
            )
        case 8:
            e.content = .groupTips(
                GroupTipsElement.with {
                    $0.type = enumValue(GroupTipsType.self); $0.groupID = string(); $0.operatorID = string()
                    $0.memberIDs = (0..<Int.random(in: 0..<4, using: &rng)).map { _ in string() }
                    $0.groupChanges = [
                        GroupChangeInfo.with {
                            $0.type = enumValue(GroupInfoChangeType.self); $0.value = string();
                            $0.boolValue = chance(50)
                        }
                    ]
                    $0.memberChanges =
                        chance(50)
                        ? [
                            MemberChangeInfo.with {
                                $0.userID = string(); $0.muteTimeS = 60
                            }
                        ] : []
                    $0.memberCount = 12; $0.pinnedMessage = chance(30) ? ref() : nil
                }
            )
        case 9: e.content = chance(10) ? nil : .text(TextElement())
        default:
            e.content = .merger(
                MergerElement.with {
                    $0.title = string(); $0.abstracts = [string(), string()]; $0.compatibleText = string()
                    $0.messages = (0..<Int.random(in: 0..<4, using: &rng)).map { _ in message(depth: depth - 1) }
                    $0.ref =
                        chance(20)
                        ? MergerRef.with {
                            $0.key = string(); $0.size = u64(); $0.sha256 = bytes()
                        } : nil
                    $0.messageCount = UInt32($0.messages.count)
                }
            )
        }
        return e
    }

    public mutating func message(depth: Int = 3) -> Message {
        Message.with {
            $0.clientMsgID = string(); $0.serverMsgUID = string(); $0.seq = u64();
            $0.random = UInt32.random(in: 0...UInt32.max, using: &rng)
            $0.senderID = string(); $0.conversation = chance(90) ? conversation() : nil
            $0.clientTimeMs = i64(); $0.serverTimeMs = i64(); $0.priority = enumValue(Priority.self)
            $0.status = enumValue(MessageStatus.self); $0.flags = UInt32.random(in: 0...UInt32.max, using: &rng)
            $0.targetReceivers = chance(20) ? [string(), string()] : []
            $0.at =
                chance(20)
                ? AtInfo.with {
                    $0.userIDs = [string()]; $0.atAll = chance(50)
                } : nil
            $0.offlinePush =
                chance(20)
                ? OfflinePushInfo.with {
                    $0.title = string(); $0.disabled = chance(50)
                } : nil
            $0.cloudCustomData = chance(30) ? bytes() : []
            $0.customParams = chance(30) ? map() : [:]
            $0.expansion = chance(10) ? map() : [:]
            $0.storagePolicy = enumValue(StoragePolicy.self)
            $0.quote = chance(20) ? ref() : nil
            $0.elements = (0..<Int.random(in: 0...3, using: &rng)).map { _ in element(depth: depth) }
            $0.editVersion = chance(10) ? 3 : 0
            $0.senderNickname = chance(30) ? string() : ""
        }
    }
}

extension RandomMessages {
    /// A random frame: a message in `messagePercent` percent of cases, otherwise another payload
    /// (receipts, events, a send ack, history) or none; random schema versions.
    public mutating func frame(messagePercent: Int = 70) -> Frame {
        var frame = Frame()
        frame.schemaVersion = chance(80) ? 1 : UInt32.random(in: 0...UInt32.max, using: &rng)
        frame.minReaderVersion = chance(50) ? 1 : 0
        if chance(messagePercent) {
            frame.payload = .message(message(depth: 2))
            return frame
        }
        switch Int.random(in: 0..<8, using: &rng) {
        case 0:
            frame.payload = .receipt(
                .with {
                    $0.kind = .read; $0.message = ref(); $0.userID = string()
                }
            )
        case 1:
            frame.payload = .receipts(
                .with {
                    $0.receipts = [
                        .with {
                            $0.kind = .delivered; $0.userID = "u"
                        }
                    ]
                }
            )
        case 2:
            frame.payload = .recall(
                .with {
                    $0.message = ref(); $0.revokerID = string()
                }
            )
        case 3:
            frame.payload = .typing(
                .with {
                    $0.conversation = conversation(); $0.userID = string()
                }
            )
        case 4:
            frame.payload = .systemNotice(
                .with {
                    $0.type = string(); $0.params = map(); $0.text = string()
                }
            )
        case 5:
            frame.payload = .sendAck(
                .with {
                    $0.clientMsgID = string(); $0.serverMsgUID = "s"; $0.seq = u64()
                }
            )
        case 6:
            frame.payload = .historyResponse(
                .with {
                    $0.messages = [message(depth: 1)]; $0.finished = chance(50)
                }
            )
        default: frame.payload = nil
        }
        return frame
    }
}
