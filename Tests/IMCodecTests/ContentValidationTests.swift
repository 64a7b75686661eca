import IMCodec
import Testing

/// validate()'s rules for schema version 3 content (media metadata, rich text, quote snapshots,
/// stickers, contact cards, calls, buttons, streams, the encryption envelope) and the seed rules
/// added with it: each test starts from a valid frame and breaks one rule.
@Suite("Product rules: schema version 3 content and the seeds' remaining rules")
struct ContentValidationTests {
    /// Every finding as `rule @ path`, sorted.
    func found(_ frame: Frame, limits: ValidationLimits = ValidationLimits()) -> [String] {
        frame.validate(limits: limits).map { "\($0.rule) @ \($0.path)" }.sorted()
    }

    func rules(_ message: Message, limits: ValidationLimits = ValidationLimits()) -> Set<String> {
        Set(Frame(message).validate(limits: limits).map(\.rule.rawValue))
    }

    func changed<T>(_ value: T, _ change: (inout T) -> Void) -> T {
        var copy = value
        change(&copy)
        return copy
    }

    static let group = ValidFrames.group

    // MARK: Seed rules

    @Test("Tencent: only text @ messages (an @ with an image is refused)")
    func atNotText() {
        let at = Message.groupText(from: "a", group: "g", "look", atUserIDs: ["b"])
        #expect(rules(at).isEmpty)
        let withImage = changed(at) { $0.elements.append(.with { $0.content = .image(ImageElement()) }) }
        #expect(rules(withImage) == ["atNotText"])
    }

    @Test("Tencent: at most 30 @, @ALL counted as one")
    func atLimitCountsAll() {
        let thirty = Message.groupText(from: "a", group: "g", "hi", atUserIDs: (1...30).map { "u\($0)" })
        #expect(rules(thirty).isEmpty)
        let withAll = changed(thirty) { $0.at?.atAll = true }
        #expect(found(Frame(withAll)) == ["atListTooLong @ message.at"])
        let twentyNinePlusAll = changed(withAll) { $0.at?.userIDs.removeLast() }
        #expect(rules(twentyNinePlusAll).isEmpty)
    }

    @Test("Tencent: a recall within 2 minutes by default, the window configurable")
    func recallWindow() {
        let recall = changed(ValidFrames.recall) { $0.timeMs = $0.message!.serverTimeMs + 120_000 }
        #expect(found(Frame(.recall(recall))).isEmpty)
        let late = changed(recall) { $0.timeMs += 1 }
        #expect(found(Frame(.recall(late))) == ["recallWindow @ recall.timeMs"])
        var limits = ValidationLimits()
        limits.recallWindowMs = 24 * 3600 * 1000
        #expect(found(Frame(.recall(late)), limits: limits).isEmpty)
    }

    @Test("Tencent: history requests do not take effect in an AVChatRoom (chatroom)")
    func chatroomHistory() {
        let request = changed(ValidFrames.historyRequest) {
            $0.conversation = Conversation.with {
                $0.type = .chatroom; $0.targetID = "room-1"
            }
        }
        #expect(found(Frame(.historyRequest(request))) == ["chatroomHistory @ historyRequest.conversation"])
    }

    @Test("online-only together with save-to-history is refused")
    func onlineOnlyWithHistory() {
        var message = ValidFrames.message()
        message.flags = MessageFlags([.onlineUserOnly]).rawValue
        #expect(rules(message).isEmpty)
        message.flags = MessageFlags([.onlineUserOnly, .saveToHistory]).rawValue
        #expect(rules(message) == ["onlineOnlyWithHistory"])
    }

    @Test("Tencent: a message body of at most 12 KB, a product rule apart from the decoder's limits")
    func messageBody() {
        let big = ValidFrames.message(in: Self.group, String(repeating: "a", count: 12 * 1024))
        #expect(rules(big) == ["messageBodyTooLarge"])
        // The decoder itself accepts it: the limit is the product's, not a resource limit.
        #expect(throws: Never.self) { try Frame(serializedBytes: Frame(big).serializedBytes()) }
        var limits = ValidationLimits()
        limits.maxMessageBodySize = 64 * 1024
        #expect(rules(big, limits: limits).isEmpty)
    }

    @Test("QuickBlox: text together with an attachment is accepted; two attachments are not")
    func textWithAttachment() {
        var message = ValidFrames.message(in: .oneToOne("b"), "Image attachment")
        message.elements.append(
            .with {
                $0.content = .file(
                    .with {
                        $0.name = "a.pdf"; $0.size = 10
                    }
                )
            }
        )
        #expect(rules(message).isEmpty)
        message.elements.append(.with { $0.content = .sound(.with { $0.durationS = 1 }) })
        #expect(rules(message) == ["elementMustBeAlone"])
    }

    // MARK: Content

    @Test("the valid content frames validate clean")
    func validContent() {
        for name in ["call", "streamChunk", "richContent", "encrypted", "buttons"] {
            #expect(found(ValidFrames.frames[name]!).isEmpty, "\(name)")
        }
    }

    @Test("style ranges: inside the text, whole surrogate pairs, a style, links with http(s) urls")
    func styleRanges() {
        let base = ValidFrames.richContent
        func styled(_ change: @escaping (inout StyleRange) -> Void) -> Message {
            changed(base) {
                guard case .text(var text)? = $0.elements[0].content else { return }
                change(&text.styles[0])
                $0.elements[0].content = .text(text)
            }
        }
        #expect(rules(styled { $0.length = 100 }) == ["styleRange"])
        #expect(
            rules(
                styled {
                    $0.offset = 1; $0.length = 2
                }
            ) == ["styleRange"],
            "splits 👍"
        )
        #expect(rules(styled { $0.style = .unspecified }) == ["styleRange"])
        #expect(rules(styled { $0.url = "https://x.example" }) == ["styleRange"], "a url on code")
        #expect(
            rules(
                styled {
                    $0.style = .link; $0.url = "javascript:alert(1)"
                }
            ) == ["styleRange"]
        )
    }

    @Test("media metadata: 32-byte SHA-256s, a media key with its algorithm and key")
    func mediaMetadata() {
        func image(_ change: @escaping (inout ImageElement) -> Void) -> Message {
            changed(ValidFrames.richContent) {
                guard case .image(var image)? = $0.elements[1].content else { return }
                change(&image)
                $0.elements[1].content = .image(image)
            }
        }
        #expect(rules(image { $0.sha256 = [1, 2] }) == ["mediaMetadata"])
        #expect(rules(image { $0.mediaKey?.key = [] }) == ["mediaMetadata"])
        #expect(rules(image { $0.mediaKey?.ciphertextSha256 = [1] }) == ["mediaMetadata"])
    }

    @Test("a quote snapshot needs the quote and an author")
    func quoteSnapshot() {
        #expect(rules(changed(ValidFrames.richContent) { $0.quote = nil }) == ["quoteSnapshot"])
        #expect(rules(changed(ValidFrames.richContent) { $0.quoteSnapshot?.authorID = "" }) == ["quoteSnapshot"])
    }

    @Test("a sticker names its pack and id; a contact card a user or a name")
    func stickerAndContact() {
        let sticker = ValidFrames.message(in: Self.group)
        let good = changed(sticker) {
            $0.elements = [
                .with {
                    $0.content = .sticker(
                        .with {
                            $0.packID = "p"; $0.stickerID = "7"
                        }
                    )
                }
            ]
        }
        #expect(rules(good).isEmpty)
        #expect(
            rules(changed(good) { $0.elements = [.with { $0.content = .sticker(.with { $0.packID = "p" }) }] }) == [
                "stickerOrContact"
            ]
        )
        let card = changed(sticker) { $0.elements = [.with { $0.content = .contactCard(.with { $0.vcard = "x" }) }] }
        #expect(rules(card) == ["stickerOrContact"])
    }

    @Test("call signals and call logs name their call; invites name invitees and media")
    func calls() {
        let invite = ValidFrames.callInvite
        #expect(found(Frame(.call(changed(invite) { $0.inviteeIDs = [] }))) == ["call @ call.inviteeIDs"])
        #expect(found(Frame(.call(changed(invite) { $0.media = .unspecified }))) == ["call @ call.media"])
        #expect(found(Frame(.call(changed(invite) { $0.callID = "" }))) == ["call @ call.callID"])
        #expect(found(Frame(.call(changed(invite) { $0.signal = .unspecified }))) == ["unspecifiedEnum @ call.signal"])
        let hangUp = changed(invite) {
            $0.signal = .hangUp; $0.inviteeIDs = []
        }
        #expect(found(Frame(.call(hangUp))).isEmpty)
        let log = changed(ValidFrames.message(in: Self.group)) {
            $0.elements = [
                .with {
                    $0.content = .callLog(
                        .with {
                            $0.callID = "c"; $0.outcome = .missed
                        }
                    )
                }
            ]
        }
        #expect(rules(log).isEmpty)
        let missedWithDuration = changed(log) {
            $0.elements = [
                .with {
                    $0.content = .callLog(
                        .with {
                            $0.callID = "c"; $0.outcome = .missed; $0.durationS = 5
                        }
                    )
                }
            ]
        }
        #expect(rules(missedWithDuration) == ["call"])
        #expect(rules(changed(log) { $0.elements.append(.text("and")) }) == ["elementMustBeAlone"])
    }

    @Test("buttons: rows, ids, labels, actions, http(s) urls, at most 64 bytes of data")
    func buttons() {
        func button(_ change: @escaping (inout Button) -> Void) -> Message {
            changed(ValidFrames.buttons) {
                guard case .buttons(var buttons)? = $0.elements[1].content else { return }
                change(&buttons.rows[0].buttons[0])
                $0.elements[1].content = .buttons(buttons)
            }
        }
        #expect(rules(button { $0.data = Array(repeating: 0, count: 65) }) == ["buttons"])
        #expect(rules(button { $0.id = "docs" }) == ["buttons"], "two buttons with one id")
        #expect(rules(button { $0.action = .unspecified }) == ["buttons"])
        #expect(
            rules(
                button {
                    $0.action = .openURL; $0.url = "ftp://x"
                }
            ) == ["buttons"]
        )
        let noRows = changed(ValidFrames.buttons) { $0.elements[1].content = .buttons(ButtonsElement()) }
        #expect(rules(noRows) == ["buttons"])
    }

    @Test("streams: a stream id on the element and the chunk, and a chunk names its message")
    func streams() {
        #expect(
            found(Frame(.streamChunk(changed(ValidFrames.streamChunk) { $0.streamID = "" })))
                == ["stream @ streamChunk.streamID"]
        )
        #expect(
            found(Frame(.streamChunk(changed(ValidFrames.streamChunk) { $0.message = nil })))
                == ["missingMessageRef @ streamChunk.message"]
        )
        let element = changed(ValidFrames.message(in: Self.group)) {
            $0.elements = [.with { $0.content = .stream(.with { $0.text = "The" }) }]
        }
        #expect(rules(element) == ["stream"])
    }

    @Test("an encrypted element names algorithm and device, holds ciphertext, and is alone")
    func encrypted() {
        func sealed(_ change: @escaping (inout EncryptedElement) -> Void) -> Message {
            changed(ValidFrames.encrypted) {
                guard case .encrypted(var element)? = $0.elements[0].content else { return }
                change(&element)
                $0.elements[0].content = .encrypted(element)
            }
        }
        #expect(rules(sealed { $0.algorithm = "" }) == ["encryptedElement"])
        #expect(rules(sealed { $0.senderDeviceID = "" }) == ["encryptedElement"])
        #expect(rules(sealed { $0.ciphertext = [] }) == ["encryptedElement"])
        #expect(rules(changed(ValidFrames.encrypted) { $0.elements.append(.text("leak")) }) == ["encryptedElement"])
    }

    // MARK: Seed gaps: group kinds, offline messages, attachment types, group tips profiles

    @Test("group kinds: AVChatRoom is a chatroom, Community a group or ultra group, the others groups")
    func groupKinds() {
        func message(_ type: ConversationType, _ kind: GroupKind) -> Message {
            changed(ValidFrames.message(in: Self.group)) {
                $0.conversation = .with {
                    $0.type = type; $0.targetID = "g-1"; $0.groupKind = kind
                }
            }
        }
        #expect(rules(message(.chatroom, .avChatRoom)).isEmpty)
        #expect(rules(message(.group, .avChatRoom)) == ["groupKind"])
        #expect(rules(message(.ultraGroup, .community)).isEmpty)
        #expect(rules(message(.chatroom, .work)) == ["groupKind"])
        #expect(rules(message(.oneToOne, .publicDialog)) == ["groupKind"])
        // Tencent: no targeted messages in Community groups.
        let targeted = changed(message(.group, .community)) { $0.targetReceivers = ["user_20001"] }
        #expect(rules(targeted) == ["targetedReceiversOutsideGroup"])
        var inWork = targeted
        inWork.conversation?.groupKind = .work
        #expect(rules(inWork).isEmpty)
    }

    @Test("RongCloud isOffLine: only on a received message that was stored")
    func offlineMessages() {
        let received = changed(ValidFrames.message(in: Self.group)) {
            $0.isOffline = true; $0.direction = .received
        }
        #expect(rules(received).isEmpty)
        #expect(rules(changed(received) { $0.direction = .sent }) == ["offlineMessage"])
        #expect(rules(changed(received) { $0.storagePolicy = .statusOnly }) == ["offlineMessage"])
        #expect(rules(changed(received) { $0.flags = MessageFlags.onlineUserOnly.rawValue }) == ["offlineMessage"])
    }

    @Test("QuickBlox attachment types: a file may carry the app's own, not image, video or audio")
    func attachmentTypes() {
        let file = changed(ValidFrames.message(in: Self.group)) {
            $0.elements = [
                .with {
                    $0.content = .file(
                        .with {
                            $0.name = "a.pdf"; $0.attachmentType = "document"
                        }
                    )
                }
            ]
        }
        #expect(rules(file).isEmpty)
        let image = changed(file) {
            $0.elements = [
                .with {
                    $0.content = .file(
                        .with {
                            $0.name = "a.png"; $0.attachmentType = "image"
                        }
                    )
                }
            ]
        }
        #expect(rules(image) == ["attachmentType"])
    }

    @Test("group tips profiles: the members' in member order, the operator's")
    func groupTipsProfiles() {
        let tips = changed(ValidFrames.message(in: Self.group)) {
            $0.elements = [
                .with {
                    $0.content = .groupTips(
                        .with {
                            $0.type = .invite; $0.groupID = "g"; $0.operatorID = "a"; $0.memberIDs = ["b", "c"]
                            $0.memberProfiles = [
                                .with {
                                    $0.userID = "b"; $0.nameCard = "B"
                                }, .with { $0.userID = "c" },
                            ]
                            $0.operatorProfile = .with {
                                $0.userID = "a"; $0.nickname = "A"
                            }
                        }
                    )
                }
            ]
        }
        #expect(rules(tips).isEmpty)
        func tipsChanged(_ change: @escaping (inout GroupTipsElement) -> Void) -> Message {
            changed(tips) {
                guard case .groupTips(var element)? = $0.elements[0].content else { return }
                change(&element)
                $0.elements[0].content = .groupTips(element)
            }
        }
        #expect(rules(tipsChanged { $0.memberProfiles.reverse() }) == ["groupTipsProfiles"])
        #expect(rules(tipsChanged { $0.operatorProfile?.userID = "b" }) == ["groupTipsProfiles"])
    }

    @Test("key bundles: a publish names device and kind and holds keys; a fetch answer one one-time key each")
    func keyBundles() {
        let bundle = ValidFrames.keyBundle
        #expect(
            found(Frame(.keyPublish(.with { $0.bundle = changed(bundle) { $0.deviceID = "" } }))) == [
                "keyBundle @ keyPublish.bundle"
            ]
        )
        #expect(found(Frame(.keyPublish(KeyPublish()))) == ["keyBundle @ keyPublish.bundle"])
        #expect(found(Frame(.keyFetchRequest(.with { $0.userID = "u" }))) == ["keyBundle @ keyFetchRequest"])
        let twoKeys = changed(bundle) { $0.oneTimeKeys.append(.with { $0.key = [9] }) }
        #expect(
            found(
                Frame(
                    .keyFetchResponse(
                        .with {
                            $0.userID = bundle.userID; $0.bundles = [twoKeys]
                        }
                    )
                )
            )
                == ["keyBundle @ keyFetchResponse.bundles[0]"]
        )
        #expect(
            found(
                Frame(
                    .keyFetchResponse(
                        .with {
                            $0.userID = "other"; $0.bundles = [bundle]
                        }
                    )
                )
            )
                == ["keyBundle @ keyFetchResponse.bundles[0]"]
        )
    }
}
