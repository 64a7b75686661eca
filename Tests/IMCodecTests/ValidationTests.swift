import Foundation
import IMCodec
import IMCodecTestSupport
import Testing

@Suite("Product rules")
struct ValidationTests {
    func rules(_ frame: Frame, limits: ValidationLimits = ValidationLimits()) -> Set<ValidationIssue.Rule> {
        Set(frame.validate(limits: limits).map(\.rule))
    }

    /// Every finding as `rule @ path`, sorted.
    func found(_ frame: Frame, limits: ValidationLimits = ValidationLimits()) -> [String] {
        frame.validate(limits: limits).map { "\($0.rule) @ \($0.path)" }.sorted()
    }

    func merger(depth: Int) -> Message {
        var message = Message.c2cText(from: "a", to: "b", "leaf")
        for layer in 0..<depth {
            message = Message.merger(from: "a", in: .oneToOne("b"), title: "layer \(layer)", messages: [message])
        }
        return message
    }

    @Test("well-formed messages pass")
    func valid() {
        #expect(Frame(Message.c2cText(from: "a", to: "b", "hi")).validate().isEmpty)
        #expect(Frame(Message.groupText(from: "a", group: "g", "hi", atUserIDs: ["b"], atAll: true)).validate().isEmpty)
        #expect(Frame(merger(depth: 3)).validate().isEmpty)
    }

    @Test("a merger of more than 300 messages is reported")
    func mergerSize() {
        let messages = (0..<301).map { Message.c2cText(from: "a", to: "b", "m\($0)") }
        #expect(
            rules(Frame(Message.merger(from: "a", in: .oneToOne("b"), title: "t", messages: messages))) == [
                .mergerTooManyMessages
            ]
        )
        let ok = Array(messages.prefix(300))
        #expect(Frame(Message.merger(from: "a", in: .oneToOne("b"), title: "t", messages: ok)).validate().isEmpty)
    }

    @Test("mergers nested deeper than 100 layers are reported")
    func mergerDepth() {
        #expect(Frame(merger(depth: 100)).validate().isEmpty)
        #expect(rules(Frame(merger(depth: 101))) == [.mergerTooDeep])
        var limits = ValidationLimits()
        limits.maxMergerDepth = 2
        #expect(rules(Frame(merger(depth: 3)), limits: limits) == [.mergerTooDeep])
    }

    @Test("@ lists: at most 30 users, and only in group conversations")
    func atRules() {
        let many = (0..<31).map { "u\($0)" }
        #expect(rules(Frame(Message.groupText(from: "a", group: "g", "hi", atUserIDs: many))) == [.atListTooLong])
        var c2c = Message.c2cText(from: "a", to: "b", "hi")
        c2c.at = AtInfo.with { $0.atAll = true }
        #expect(rules(Frame(c2c)) == [.atOutsideGroup])
    }

    @Test("targeted receivers only in groups")
    func targeted() {
        var c2c = Message.c2cText(from: "a", to: "b", "hi")
        c2c.targetReceivers = ["c"]
        #expect(rules(Frame(c2c)) == [.targetedReceiversOutsideGroup])
        var group = Message.groupText(from: "a", group: "g", "hi")
        group.targetReceivers = ["c"]
        #expect(Frame(group).validate().isEmpty)
    }

    @Test("files above 100 MB and locations off Earth are reported")
    func sizesAndRanges() {
        let big = Message(
            from: "a",
            in: .oneToOne("b"),
            elements: [.file(uuid: "f", name: "x", size: 104_857_601, url: "u")]
        )
        #expect(rules(Frame(big)) == [.fileTooLarge])
        let limit = Message(
            from: "a",
            in: .oneToOne("b"),
            elements: [.file(uuid: "f", name: "x", size: 104_857_600, url: "u")]
        )
        #expect(Frame(limit).validate().isEmpty)
        for (lat, lon) in [(91.0, 0.0), (0.0, -180.5), (Double.nan, 0.0)] {
            let place = Message(from: "a", in: .oneToOne("b"), elements: [.location(latitude: lat, longitude: lon)])
            #expect(rules(Frame(place)) == [.locationOutOfRange])
        }
    }

    @Test(
        "chain rules: merger, group tips stand alone, sound, video and file with text only; no empty chains or elements"
    )
    func chainRules() {
        let file = MessageElement.file(uuid: "f", name: "x", size: 1, url: "u")
        // QuickBlox sends text together with an attachment.
        #expect(rules(Frame(Message(from: "a", in: .oneToOne("b"), elements: [.text("see"), file]))).isEmpty)
        #expect(
            rules(Frame(Message(from: "a", in: .oneToOne("b"), elements: [.face(index: 1), file]))) == [
                .elementMustBeAlone
            ]
        )
        #expect(rules(Frame(Message(from: "a", in: .oneToOne("b"), elements: []))) == [.emptyElementChain])
        #expect(rules(Frame(Message(from: "a", in: .oneToOne("b"), elements: [MessageElement()]))) == [.emptyElement])
        let rich = Message(
            from: "a",
            in: .oneToOne("b"),
            elements: [.text("a"), .face(index: 1), .location(latitude: 1, longitude: 2), .text("b")]
        )
        #expect(Frame(rich).validate().isEmpty)
    }

    @Test("group tips belong to groups and cannot be forwarded in a merger")
    func groupTips() {
        let tips = MessageElement.with { $0.content = .groupTips(GroupTipsElement.with { $0.type = .join }) }
        #expect(rules(Frame(Message(from: "a", in: .oneToOne("b"), elements: [tips]))) == [.groupTipsOutsideGroup])
        let inGroup = Message(from: "a", in: .group("g"), elements: [tips])
        #expect(Frame(inGroup).validate().isEmpty)
        #expect(
            rules(Frame(Message.merger(from: "a", in: .group("g"), title: "t", messages: [inGroup]))) == [
                .mergerContainsGroupTips
            ]
        )
    }

    @Test("every violation is reported, with a path")
    func everyViolation() {
        var message = Message.c2cText(from: "a", to: "b", "hi")
        message.at = AtInfo.with { $0.userIDs = (0..<40).map { "u\($0)" } }
        message.targetReceivers = ["c"]
        message.elements.append(.file(uuid: "f", name: "x", size: 200_000_000, url: "u"))
        message.elements.append(.file(uuid: "g", name: "y", size: 1, url: "u"))
        let issues = Frame(message).validate()
        #expect(
            Set(issues.map(\.rule)) == [
                .atOutsideGroup, .atListTooLong, .atNotText, .targetedReceiversOutsideGroup, .elementMustBeAlone,
                .fileTooLarge,
            ]
        )
        #expect(issues.contains { $0.path == "message.elements[1].file" })
    }

    // MARK: - Every payload kind

    @Test("a valid example of every payload kind passes", arguments: ValidFrames.frames.keys.sorted())
    func validPayloads(_ name: String) {
        #expect(found(ValidFrames.frames[name]!) == [], "\(name)")
    }

    @Test("a frame without a payload is reported: empty, versions only, or a payload this version does not know")
    func missingPayload() throws {
        #expect(found(Frame()) == ["missingPayload @ "])
        var versionsOnly = Frame()
        versionsOnly.schemaVersion = 1
        versionsOnly.minReaderVersion = 1
        #expect(found(versionsOnly) == ["missingPayload @ "])
        let future = try Frame(
            serializedBytes: try FixtureFiles.bytes(
                FixtureFiles.valid.appendingPathComponent("unknown_payload_future_event.binpb")
            )
        )
        #expect(found(future) == ["missingPayload @ "])
        #expect(future.validate().first?.message.contains("unknown fields") == true)
    }

    @Test("message references: missing, or identifying no message")
    func messageRefs() {
        #expect(
            found(Frame(.recall(RecallEvent())))
                == ["missingMessageRef @ recall.message", "missingUserID @ recall.revokerID"]
        )
        #expect(
            found(Frame(.recall(changed(ValidFrames.recall) { $0.message = nil })))
                == ["missingMessageRef @ recall.message"]
        )
        // A server id alone is enough; so are sender and client id together; either alone is not.
        let serverOnly = MessageRef.with { $0.serverMsgUID = "s-1" }
        #expect(found(Frame(.recall(changed(ValidFrames.recall) { $0.message = serverOnly }))) == [])
        let clientOnly = MessageRef.with {
            $0.clientMsgID = "c-1"; $0.seq = 3; $0.conversation = ValidFrames.group
        }
        #expect(
            found(Frame(.recall(changed(ValidFrames.recall) { $0.message = clientOnly })))
                == ["missingMessageRef @ recall.message"]
        )
        #expect(
            found(Frame(.receipt(changed(ValidFrames.receipt) { $0.message = nil })))
                == ["missingMessageRef @ receipt.message"]
        )
        #expect(
            found(Frame(.groupReadMembers(changed(ValidFrames.groupReadMembers) { $0.message = MessageRef() })))
                == ["missingMessageRef @ groupReadMembers.message"]
        )
        let senderOnly = MessageRef.with { $0.senderID = "user_10010" }
        #expect(
            found(Frame(.edit(changed(ValidFrames.edit) { $0.message = senderOnly })))
                == ["missingMessageRef @ edit.message"]
        )
        #expect(
            found(Frame(.delete(changed(ValidFrames.delete) { $0.messages[1].senderID = "" })))
                == ["missingMessageRef @ delete.messages[1]"]
        )
        #expect(
            found(Frame(.delete(changed(ValidFrames.delete) { $0.messages = [] })))
                == ["missingMessageRef @ delete.messages"]
        )
    }

    @Test("receipts: a kind, a message, and a user or a group; batches are not empty")
    func receipts() {
        #expect(
            found(Frame(.receipt(MessageReceipt())))
                == [
                    "missingMessageRef @ receipt.message", "receiptSubject @ receipt",
                    "unspecifiedEnum @ receipt.kind",
                ]
        )
        #expect(
            found(Frame(.receipt(changed(ValidFrames.receipt) { $0.kind = .unspecified })))
                == ["unspecifiedEnum @ receipt.kind"]
        )
        // A kind a later schema version adds is not "unspecified".
        #expect(found(Frame(.receipt(changed(ValidFrames.receipt) { $0.kind = ReceiptKind(rawValue: 3) }))) == [])
        #expect(found(Frame(.receipt(changed(ValidFrames.receipt) { $0.userID = "" }))) == ["receiptSubject @ receipt"])
        #expect(
            found(Frame(.receipt(changed(ValidFrames.groupReceipt) { $0.groupID = "" })))
                == ["receiptSubject @ receipt"]
        )
        #expect(
            found(
                Frame(
                    .receipt(
                        changed(ValidFrames.groupReceipt) {
                            $0.groupID = ""; $0.userID = "user_10086"
                        }
                    )
                )
            )
                == ["receiptSubject @ receipt.groupID"]
        )
        #expect(found(Frame(.receipts(ReceiptBatch()))) == ["emptyReceiptBatch @ receipts"])
        #expect(
            found(Frame(.receipts(changed(ValidFrames.receipts) { $0.receipts[1].kind = .unspecified })))
                == ["unspecifiedEnum @ receipts.receipts[1].kind"]
        )
        #expect(
            found(Frame(.receipts(changed(ValidFrames.receipts) { $0.c2cReadReceipts[0].userID = "" })))
                == ["missingUserID @ receipts.c2cReadReceipts[0].userID"]
        )
    }

    @Test("C2C read receipts name the reader and the time read up to")
    func c2cReadReceipt() {
        #expect(
            found(Frame(.c2cReadReceipt(C2CReadReceipt())))
                == ["missingReadPosition @ c2cReadReceipt.readTimeMs", "missingUserID @ c2cReadReceipt.userID"]
        )
        #expect(
            found(Frame(.c2cReadReceipt(changed(ValidFrames.c2cReadReceipt) { $0.readTimeMs = -5 })))
                == ["missingReadPosition @ c2cReadReceipt.readTimeMs"]
        )
    }

    @Test("pages that are not the last carry the cursor of the next one")
    func pagingCursors() {
        #expect(
            found(Frame(.groupReadMembers(changed(ValidFrames.groupReadMembers) { $0.nextSeq = 0 })))
                == ["missingNextCursor @ groupReadMembers.nextSeq"]
        )
        let lastPage = changed(ValidFrames.groupReadMembers) {
            $0.nextSeq = 0; $0.finished = true
        }
        #expect(
            found(Frame(.groupReadMembers(lastPage)))
                == []
        )
        #expect(
            found(Frame(.historyResponse(changed(ValidFrames.historyResponse) { $0.nextCursor = "" })))
                == ["missingNextCursor @ historyResponse.nextCursor"]
        )
        let lastHistoryPage = changed(ValidFrames.historyResponse) {
            $0.nextCursor = ""; $0.finished = true
        }
        #expect(
            found(Frame(.historyResponse(lastHistoryPage)))
                == []
        )
    }

    @Test("recalls, edits and deletes say who acted")
    func actors() {
        #expect(
            found(Frame(.recall(changed(ValidFrames.recall) { $0.revokerID = "" })))
                == ["missingUserID @ recall.revokerID"]
        )
        #expect(
            found(Frame(.edit(changed(ValidFrames.edit) { $0.editorID = "" })))
                == ["missingUserID @ edit.editorID"]
        )
        #expect(
            found(Frame(.delete(changed(ValidFrames.delete) { $0.operatorID = "" })))
                == ["missingUserID @ delete.operatorID"]
        )
        #expect(
            found(Frame(.delete(changed(ValidFrames.delete) { $0.scope = .unspecified })))
                == ["unspecifiedEnum @ delete.scope"]
        )
        #expect(found(Frame(.delete(changed(ValidFrames.delete) { $0.scope = .onlyMe }))) == [])
    }

    @Test("an edit carries the same message, edited, with an edit version")
    func edits() {
        #expect(
            found(Frame(.edit(changed(ValidFrames.edit) { $0.newMessage = nil })))
                == ["missingEditedMessage @ edit.newMessage"]
        )
        #expect(
            found(Frame(.edit(changed(ValidFrames.edit) { $0.newMessage!.editVersion = 0 })))
                == ["editedMessageMismatch @ edit.newMessage.editVersion"]
        )
        #expect(
            found(Frame(.edit(changed(ValidFrames.edit) { $0.newMessage!.serverMsgUID = "another" })))
                == ["editedMessageMismatch @ edit.newMessage"]
        )
        #expect(
            found(Frame(.edit(changed(ValidFrames.edit) { $0.newMessage!.conversation = .group("other") })))
                == ["editedMessageMismatch @ edit.newMessage"]
        )
        // The new message is checked like any message.
        #expect(
            found(Frame(.edit(changed(ValidFrames.edit) { $0.newMessage!.elements = [] })))
                == ["emptyElementChain @ edit.newMessage.elements"]
        )
    }

    @Test("typing indicators: a conversation, a user and a state")
    func typing() {
        #expect(
            found(Frame(.typing(TypingEvent())))
                == [
                    "missingConversation @ typing.conversation", "missingUserID @ typing.userID",
                    "unspecifiedEnum @ typing.state",
                ]
        )
        #expect(
            found(Frame(.typing(changed(ValidFrames.typing) { $0.conversation = .oneToOne("") })))
                == ["missingConversation @ typing.conversation"]
        )
        #expect(found(Frame(.typing(changed(ValidFrames.typing) { $0.state = .stopped }))) == [])
    }

    @Test("mark-read: one conversation or all of them, a user, and a time or sequence number")
    func markRead() {
        #expect(
            found(Frame(.markRead(changed(ValidFrames.markReadAll) { $0.conversation = ValidFrames.group })))
                == ["markReadScope @ markRead.conversation"]
        )
        #expect(
            found(Frame(.markRead(changed(ValidFrames.markRead) { $0.conversation = nil })))
                == ["markReadScope @ markRead"]
        )
        #expect(
            found(Frame(.markRead(changed(ValidFrames.markRead) { $0.userID = "" })))
                == ["missingUserID @ markRead.userID"]
        )
        #expect(
            found(
                Frame(
                    .markRead(
                        changed(ValidFrames.markRead) {
                            $0.readTimeMs = 0; $0.readSeq = 0
                        }
                    )
                )
            )
                == ["missingReadPosition @ markRead"]
        )
        #expect(found(Frame(.markRead(changed(ValidFrames.markRead) { $0.readTimeMs = 0 }))) == [])
        #expect(
            found(Frame(.markRead(changed(ValidFrames.markRead) { $0.conversation = Conversation() })))
                == ["missingConversation @ markRead.conversation"]
        )
    }

    @Test("system notices have a machine-readable type")
    func systemNotice() {
        #expect(
            found(Frame(.systemNotice(changed(ValidFrames.systemNotice) { $0.type = "" })))
                == ["missingNoticeType @ systemNotice.type"]
        )
        #expect(found(Frame(.systemNotice(SystemNotice.with { $0.type = "maintenance" }))) == [])
    }

    @Test("send acks name the sent message; only successful sends have a server id")
    func sendAcks() {
        #expect(
            found(Frame(.sendAck(changed(ValidFrames.sendAck) { $0.clientMsgID = "" })))
                == ["missingClientMsgID @ sendAck.clientMsgID"]
        )
        #expect(
            found(Frame(.sendAck(changed(ValidFrames.sendAck) { $0.serverMsgUID = "" })))
                == ["sendAckServerUID @ sendAck.serverMsgUID"]
        )
        #expect(
            found(Frame(.sendAck(changed(ValidFrames.sendAckFailed) { $0.serverMsgUID = "s-1" })))
                == ["sendAckServerUID @ sendAck.serverMsgUID"]
        )
        #expect(
            found(Frame(.sendAck(SendAck())))
                == ["missingClientMsgID @ sendAck.clientMsgID", "sendAckServerUID @ sendAck.serverMsgUID"]
        )
    }

    @Test("history: a conversation, 1 to 100 messages a page, every message from the page's conversation")
    func history() {
        #expect(
            found(Frame(.historyRequest(changed(ValidFrames.historyRequest) { $0.count = 0 })))
                == ["historyPageSize @ historyRequest.count"]
        )
        #expect(
            found(Frame(.historyRequest(changed(ValidFrames.historyRequest) { $0.count = 101 })))
                == ["historyPageSize @ historyRequest.count"]
        )
        #expect(found(Frame(.historyRequest(changed(ValidFrames.historyRequest) { $0.count = 100 }))) == [])
        #expect(
            found(Frame(.historyRequest(changed(ValidFrames.historyRequest) { $0.conversation = nil })))
                == ["missingConversation @ historyRequest.conversation"]
        )
        let many = (0..<101).map { ValidFrames.message(in: ValidFrames.group, "m\($0)") }
        #expect(
            found(Frame(.historyResponse(changed(ValidFrames.historyResponse) { $0.messages = many })))
                == ["historyPageSize @ historyResponse.messages"]
        )
        let full = changed(ValidFrames.historyResponse) { $0.messages = Array(many.prefix(100)) }
        #expect(
            found(Frame(.historyResponse(full)))
                == []
        )
        #expect(
            found(Frame(.historyResponse(changed(ValidFrames.historyResponse) { $0.conversation = nil })))
                == ["missingConversation @ historyResponse.conversation"]
        )
        let mixed = changed(ValidFrames.historyResponse) { $0.messages[1].conversation = .group("g2") }
        #expect(
            found(Frame(.historyResponse(mixed)))
                == ["historyConversationMismatch @ historyResponse.messages[1].conversation"]
        )
        // One-to-one: the page's peer is the target of what I sent and the sender of what I received.
        let sent = Message.c2cText(from: "me", to: "peer", "hi")
        let received = Message.c2cText(from: "peer", to: "me", "hello")
        let stranger = Message.c2cText(from: "someone", to: "me", "spam")
        let page = HistoryResponse.with {
            $0.conversation = .oneToOne("peer"); $0.finished = true
        }
        #expect(found(Frame(.historyResponse(changed(page) { $0.messages = [sent, received] }))) == [])
        #expect(
            found(Frame(.historyResponse(changed(page) { $0.messages = [sent, stranger] })))
                == ["historyConversationMismatch @ historyResponse.messages[1].conversation"]
        )
    }

    @Test("stored merger bodies: 1 to 300 messages; merger elements: a title, abstracts and the right count")
    func mergerPayloadAndCounts() {
        #expect(found(Frame(.mergerPayload(MergerPayload()))) == ["mergerBody @ mergerPayload.messages"])
        let many = (0..<301).map { ValidFrames.message(in: ValidFrames.c2c, "m\($0)") }
        #expect(
            found(Frame(.mergerPayload(MergerPayload.with { $0.messages = many })))
                == ["mergerTooManyMessages @ mergerPayload.messages"]
        )
        #expect(found(Frame(.mergerPayload(MergerPayload.with { $0.messages = Array(many.prefix(300)) }))) == [])

        func mergerFrame(_ change: (inout MergerElement) -> Void) -> Frame {
            var message = ValidFrames.merger(layers: 1, leaf: ValidFrames.message(in: ValidFrames.c2c))
            guard case .merger(let merger)? = message.elements[0].content else { return Frame() }
            message.elements[0].content = .merger(changed(merger, change))
            return Frame(message)
        }
        #expect(found(mergerFrame { _ in }) == [])
        #expect(
            found(mergerFrame { $0.messageCount = 5 })
                == ["mergerMessageCount @ message.elements[0].merger.messageCount"]
        )
        #expect(found(mergerFrame { $0.title = "" }) == ["mergerDisplay @ message.elements[0].merger"])
        #expect(found(mergerFrame { $0.abstracts = [] }) == ["mergerDisplay @ message.elements[0].merger"])
        let stored = MergerRef.with {
            $0.key = "merger/1"; $0.size = 1_048_576; $0.sha256 = Array(repeating: 7, count: 32)
        }
        #expect(
            found(
                mergerFrame {
                    $0.messages = []; $0.ref = stored; $0.messageCount = 300
                }
            ) == []
        )
        #expect(
            found(
                mergerFrame {
                    $0.messages = []; $0.ref = stored; $0.messageCount = 0
                }
            )
                == ["mergerMessageCount @ message.elements[0].merger.messageCount"]
        )
        #expect(
            found(
                mergerFrame {
                    $0.messages = []; $0.ref = stored; $0.messageCount = 301
                }
            )
                == ["mergerTooManyMessages @ message.elements[0].merger.messageCount"]
        )
    }

    // MARK: - Fixtures and decodability

    /// The valid fixtures that break product rules on purpose (they test decoding, not the
    /// product), with the rules they break. Every other valid fixture validates clean.
    static let fixturesWithFindings: [String: Set<String>] = [
        "duplicate_scalar_last_wins": ["missingConversation"],
        "element_oneof_other_member_replaces": ["elementMustBeAlone", "mergerBody", "mergerDisplay"],
        "empty": ["missingPayload"],
        "empty_submessages": [
            "missingConversation", "atOutsideGroup", "emptyElement", "elementMustBeAlone", "mergerBody",
            "mergerDisplay",
        ],
        "explicit_defaults": ["missingConversation", "missingUserID", "unspecifiedEnum"],
        "flags_each_bit": ["missingConversation"],
        "flags_all_bits": ["onlineOnlyWithHistory"],
        // U+0000 in map keys and values, as Google keeps them: `expansion` without
        // MESSAGE_FLAG_SUPPORT_EXTENSION (a decoding case, not a product frame).
        "nul_in_custom_params_key_and_expansion_value": ["extensionNotAllowed"],
        "nul_in_expansion_key": ["extensionNotAllowed"],
        "frame_no_payload": ["missingPayload"],
        "int_limits": ["elementMustBeAlone", "fileTooLarge", "onlineOnlyWithHistory"],
        "location_extremes": ["locationOutOfRange"],
        "merger_nested_100_layers": ["mergerDisplay", "missingConversation"],
        "merger_nested_3_levels": ["missingConversation"],
        "merger_nested_duplicates": ["mergerBody", "mergerDisplay", "missingConversation"],
        "message_status_each": ["missingConversation", "emptyElementChain"],
        "nesting_depth_100": ["missingConversation", "mergerDisplay", "mergerMessageCount", "mergerBody"],
        "unknown_enum_values": ["elementMustBeAlone", "groupTipsOutsideGroup"],
        "unknown_fields_future_message": ["emptyElement"],
        "unknown_payload_future_event": ["missingPayload"],
        "wire_type_mismatch_message_varint": ["missingPayload"],
        "wire_type_mismatch_schema_version_len": ["missingPayload"],
        "wire_type_mismatch_seq_fixed64": ["missingConversation", "emptyElementChain"],
    ]

    @Test("valid fixtures: the realistic ones validate clean, the decoding edge cases break the rules listed")
    func fixtures() throws {
        for name in FixtureFiles.validNames {
            let url = FixtureFiles.valid.appendingPathComponent(name + ".binpb")
            let frame = try Frame(serializedBytes: try FixtureFiles.bytes(url))
            let rules = Set(frame.validate().map(\.rule.rawValue))
            #expect(rules == Self.fixturesWithFindings[name] ?? [], "\(name): \(frame.validate())")
        }
    }

    @Test("a value whose encoding decoding refuses is reported as notDecodable")
    func notDecodable() {
        // Too large: one byte above maxInputSize (16 MiB), in an otherwise valid message.
        let limit = DecodingOptions().maxInputSize
        let big = ValidFrames.frame(encodedSize: limit + 1)
        #expect(big.serializedBytes().count == limit + 1)
        let issues = big.validate()
        #expect(issues.map(\.rule) == [.notDecodable])
        #expect(issues.first?.path == "" && issues.first?.message.contains("tooLarge") == true)
        // Message.validate() judges the message's own encoding (9 bytes shorter than its frame's:
        // the versions, the payload's tag and length).
        guard case .message(let message)? = ValidFrames.frame(encodedSize: limit + 10).payload else { return }
        #expect(message.serializedBytes().count == limit + 1)
        #expect(message.validate().map(\.rule) == [.notDecodable])
        #expect(ValidFrames.frame(encodedSize: limit).validate().isEmpty)

        // Too deep: 110 merger layers are allowed by the limits below, but nest 334 levels (the
        // innermost message at 2 + 3 × 110, its text 2 more); 105 nest 319.
        var limits = ValidationLimits()
        limits.maxMergerDepth = 200
        let deep = Frame(ValidFrames.merger(layers: 110, leaf: ValidFrames.message(in: ValidFrames.c2c)))
        #expect(deep.validate(limits: limits).map(\.rule) == [.notDecodable])
        #expect(Set(deep.validate().map(\.rule)) == [.mergerTooDeep, .notDecodable])
        let decodes = ValidFrames.merger(layers: 105, leaf: ValidFrames.message(in: ValidFrames.c2c))
        #expect(Frame(decodes).validate(limits: limits).isEmpty)
    }

    // MARK: - Depth: 100 merger layers and the decoder's limit

    /// The deepest value `validate()` accepts: 100 merger layers (the 100th layer cannot hold a
    /// merger, not even a stored one) whose innermost message is an image, in an edit (Frame,
    /// EditEvent, then the message: one level more than a message frame).
    ///
    ///     Frame 1, EditEvent 2, edited Message 3 (layer 0)
    ///     layer k: MessageElement 3k+1, MergerElement 3k+2, Message 3k+3   (k = 1...100)
    ///     innermost Message 303, MessageElement 304, ImageElement 305, ImageInfo 306
    @Test("a 100-layer merger validates, nests exactly as computed, and round-trips with the default options")
    func hundredLayers() throws {
        let merger = ValidFrames.merger(layers: 100, leaf: ValidFrames.deepestLeaf)
        var edited = merger
        edited.editVersion = 1
        let cases: [(String, Frame, Int)] = [
            ("message", Frame(merger), 305),
            (
                "edit",
                Frame(
                    .edit(
                        EditEvent.with {
                            $0.message = merger.reference; $0.newMessage = edited; $0.editorID = "user_10010";
                            $0.timeMs = 1
                        }
                    )
                ), 306
            ),
            (
                "history page",
                Frame(
                    .historyResponse(
                        HistoryResponse.with {
                            $0.conversation = ValidFrames.c2c; $0.messages = [merger]; $0.finished = true
                        }
                    )
                ), 306
            ),
            (
                "merger payload",
                Frame(
                    .mergerPayload(
                        MergerPayload.with {
                            // A stored body is layer 1 itself: it holds 99 more.
                            $0.messages = [ValidFrames.merger(layers: 99, leaf: ValidFrames.deepestLeaf)]
                        }
                    )
                ), 303
            ),
        ]
        for (name, frame, depth) in cases {
            #expect(frame.validate().isEmpty, "\(name): \(frame.validate().prefix(3))")
            let bytes = frame.serializedBytes()
            #expect(try Frame(serializedBytes: bytes) == frame, "\(name)")
            #expect(throws: Never.self, "\(name) nests \(depth) levels") {
                try Frame(serializedBytes: bytes, options: DecodingOptions(maxDepth: depth))
            }
            #expect(decodeError(bytes, maxDepth: depth - 1) == .tooDeep, "\(name) nests more than \(depth - 1) levels")
            #expect(depth <= DecodingOptions().maxDepth)
        }
        // One layer more is a product-rule violation (and still decodes: the default leaves room).
        let tooMany = Frame(ValidFrames.merger(layers: 101, leaf: ValidFrames.deepestLeaf))
        #expect(tooMany.validate().map(\.rule) == [.mergerTooDeep])
    }

    func decodeError(_ bytes: [UInt8], maxDepth: Int) -> IMCodecError.Code? {
        do {
            _ = try Frame(serializedBytes: bytes, options: DecodingOptions(maxDepth: maxDepth))
            return nil
        } catch {
            return error.code
        }
    }

    // MARK: - Property: what validate() accepts, decoding accepts

    @Test("validate() empty implies decode(encode(value)) succeeds with the default options and equals the value")
    func acceptedValuesDecode() throws {
        var values: [Frame] = Array(ValidFrames.frames.values)
        var random = RandomMessages(seed: 10)
        for _ in 0..<300 { values.append(Frame(random.message(depth: 3))) }
        var frames = RandomFrames(seed: 11)
        for _ in 0..<600 { values.append(frames.frame()) }
        // Edge values: merger depth around both limits, sizes around maxInputSize.
        for layers in [99, 100, 101, 105, 106, 107, 110] {
            values.append(Frame(ValidFrames.merger(layers: layers, leaf: ValidFrames.deepestLeaf)))
        }
        let limit = DecodingOptions().maxInputSize
        for size in [limit - 1, limit, limit + 1] { values.append(ValidFrames.frame(encodedSize: size)) }
        var accepted = 0
        var refused = 0
        for limits in [ValidationLimits(), Self.generous] {
            for value in values {
                let issues = value.validate(limits: limits)
                let decoded = Result { () throws(IMCodecError) in try Frame(serializedBytes: value.serializedBytes()) }
                switch decoded {
                case .success(let frame):
                    if issues.isEmpty {
                        accepted += 1
                        #expect(frame == value)
                    }
                    #expect(!issues.contains { $0.rule == .notDecodable }, "\(issues)")
                case .failure(let error):
                    refused += 1
                    #expect(issues.contains { $0.rule == .notDecodable }, "decoding refused it (\(error.code))")
                }
            }
        }
        // The generators reach both sides of both rules.
        #expect(accepted > 300, "only \(accepted) values were valid")
        #expect(refused >= 4, "only \(refused) values were refused by decoding")
    }

    /// Limits that accept deeper mergers than decoding does, so that only notDecodable guards them.
    static let generous: ValidationLimits = {
        var limits = ValidationLimits()
        limits.maxMergerDepth = 1_000
        return limits
    }()
}

extension ValidationTests {
    /// Tencent (seed 000, "Sending Targeted Group Messages"): "The targeted group message feature is
    /// not available for Community and AVChatRoom groups"; targeted receivers stay allowed in groups
    /// and ultra groups (RongCloud's `directedUserIds`, seed 003).
    @Test("targeted receivers are refused in chatrooms")
    func targetedInChatroom() {
        let room = Conversation.with {
            $0.type = .chatroom; $0.targetID = "lobby"
        }
        var message = Message(from: "a", in: room, elements: [.text("hi")])
        message.targetReceivers = ["c"]
        #expect(rules(Frame(message)) == [.targetedReceiversOutsideGroup])
        let channel = Conversation.with {
            $0.type = .ultraGroup; $0.targetID = "ug"; $0.channelID = "c1"
        }
        var ultra = Message(from: "a", in: channel, elements: [.text("hi")])
        ultra.targetReceivers = ["c"]
        #expect(Frame(ultra).validate().isEmpty)
    }
}
