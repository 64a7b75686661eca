import IMCodec
import Testing

/// validate()'s rules for schema version 3's user state (the conversation list, message
/// extensions, the blocklist) and QuickBlox's history search: each rule broken by a frame that
/// differs from a valid one in one place, and found there alone.
@Suite("Product rules: conversation list, extensions, blocklist, history search")
struct UserStateValidationTests {
    /// Every finding as `rule @ path`, sorted.
    func found(_ frame: Frame, limits: ValidationLimits = ValidationLimits()) -> [String] {
        frame.validate(limits: limits).map { "\($0.rule) @ \($0.path)" }.sorted()
    }

    func changed<T>(_ value: T, _ change: (inout T) -> Void) -> T {
        var copy = value
        change(&copy)
        return copy
    }

    @Test("conversationUpdate: only the fields whose bits are set change, and some must be")
    func conversationUpdate() {
        let valid = ConversationUpdate.with {
            $0.conversation = .group("team"); $0.fields = UInt32(ConversationField.pinned.rawValue); $0.pinned = true
        }
        func update(_ change: (inout ConversationUpdate) -> Void) -> [String] {
            found(Frame(.conversationUpdate(changed(valid, change))))
        }
        #expect(update { _ in }.isEmpty)
        #expect(update { $0.fields = 0 } == ["conversationUpdate @ conversationUpdate.fields"], "changes nothing")
        #expect(update { $0.fields |= 64 } == ["conversationUpdate @ conversationUpdate.fields"], "an unknown bit")
        #expect(update { $0.clearedSeq = 5 } == ["conversationUpdate @ conversationUpdate.clearedSeq"])
        #expect(update { $0.draftText = "see you" } == ["conversationUpdate @ conversationUpdate.draftText"])
        #expect(
            update {
                $0.fields |= UInt32(ConversationField.draft.rawValue); $0.draftText = "see you"
            }.isEmpty
        )
    }

    @Test("conversationList: an entry's counts agree with each other; a page with more says where to go on")
    func conversationList() {
        let valid = ValidFrames.conversationList
        func list(_ change: (inout ConversationInfo) -> Void) -> [String] {
            found(Frame(.conversationList(changed(valid) { change(&$0.conversations[0]) })))
        }
        let entry = "conversationList.conversations[0]"
        #expect(list { _ in }.isEmpty)
        #expect(list { $0.readSeq = 141 }.contains("conversationList @ \(entry).readSeq"), "read past the newest seq")
        #expect(list { $0.unreadCount = 0 } == ["conversationList @ \(entry).unreadCount"], "fewer unread than @")
        #expect(list { $0.atMe[0].seq = 138 } == ["conversationList @ \(entry).atMe[0].seq"], "an @ already read")
        #expect(list { $0.atMe[0].seq = 141 } == ["conversationList @ \(entry).atMe[0].seq"], "an @ past the newest")
        #expect(list { $0.atMe[0].kind = .unspecified } == ["unspecifiedEnum @ \(entry).atMe[0].kind"])
        // A recalled last message carries its ids and status only.
        let recalled = Message.with {
            $0.seq = 140; $0.serverMsgUID = "uid-140"; $0.senderID = "user_10010"; $0.status = .recalled
        }
        #expect(list { $0.lastMessage = recalled }.isEmpty)
        #expect(
            list { $0.lastMessage = changed(recalled) { $0.elements = [.text("still here")] } }
                == ["conversationList @ \(entry).lastMessage.elements"]
        )
        let more = changed(valid) {
            $0.hasMore = true; $0.nextAfterVersion = 0
        }
        #expect(found(Frame(.conversationList(more))) == ["conversationList @ conversationList.nextAfterVersion"])
        let cursor = changed(valid) {
            $0.hasMore = false; $0.nextCursor = "7:c:bob"
        }
        #expect(found(Frame(.conversationList(cursor))) == ["conversationList @ conversationList.nextCursor"])
        // The first page may stop inside the first version's conversations: only a cursor follows.
        let inside = changed(valid) {
            $0.hasMore = true; $0.nextAfterVersion = 0; $0.nextCursor = "7:c:bob"
        }
        #expect(found(Frame(.conversationList(inside))).isEmpty)
        let twice = changed(valid) { $0.conversations.append($0.conversations[0]) }
        #expect(
            found(Frame(.conversationList(twice)))
                == ["duplicateConversation @ conversationList.conversations[1].conversation"]
        )
    }

    @Test("extensionLimits: Tencent's key, value and key-count limits, RongCloud's by configuration")
    func extensionLimits() {
        let valid = ValidFrames.extensionUpdate
        func update(
            limits: ValidationLimits = ValidationLimits(),
            _ change: (inout ExtensionUpdate) -> Void
        )
            -> [String]
        {
            found(Frame(.extensionUpdate(changed(valid, change))), limits: limits)
        }
        #expect(update { _ in }.isEmpty)
        #expect(update { $0.set[0].key = "" } == ["extensionLimits @ extensionUpdate.set[0]"])
        let key100 = String(repeating: "k", count: 100)
        #expect(update { $0.set[0].key = key100 }.isEmpty, "100 bytes is Tencent's limit")
        #expect(update { $0.set[0].key = key100 + "k" } == ["extensionLimits @ extensionUpdate.set[0]"])
        #expect(update { $0.set[0].value = String(repeating: "v", count: 1024) }.isEmpty)
        #expect(
            update { $0.set[0].value = String(repeating: "v", count: 1025) }
                == ["extensionLimits @ extensionUpdate.set[0]"]
        )
        #expect(update { $0.remove = [$0.set[0]] } == ["extensionLimits @ extensionUpdate.remove[0]"], "twice")
        #expect(update { $0.set = [] }.map { $0.hasPrefix("extensionLimits") } == [true], "changes nothing")
        var rongCloud = ValidationLimits()
        rongCloud.maxExtensionKeyBytes = 32
        rongCloud.maxExtensionValueBytes = 4096
        #expect(
            update(limits: rongCloud) { $0.set[0].key = String(repeating: "k", count: 33) }
                == ["extensionLimits @ extensionUpdate.set[0]"]
        )
        #expect(update(limits: rongCloud) { $0.set[0].value = String(repeating: "v", count: 4096) }.isEmpty)
        let many = (0...300).map { index in
            ExtensionEntry.with {
                $0.key = "k\(index)"; $0.value = "v"
            }
        }
        #expect(update { $0.set = many }.contains { $0.hasPrefix("extensionLimits @ extensionUpdate") }, "301 keys")
    }

    @Test("extensionNotAllowed: only with MESSAGE_FLAG_SUPPORT_EXTENSION, only one-to-one and group messages")
    func extensionNotAllowed() {
        let room = Conversation.with {
            $0.type = .chatroom; $0.targetID = "lobby"
        }
        let inRoom = changed(ValidFrames.extensionUpdate) { $0.message?.conversation = room }
        #expect(
            found(Frame(.extensionUpdate(inRoom))) == ["extensionNotAllowed @ extensionUpdate.message.conversation"]
        )
        var message = Message.groupText(from: "alice", group: "team", "lunch?", clientMsgID: "m-1")
        message.expansion = ["pizza": "0"]
        #expect(found(Frame(message)) == ["extensionNotAllowed @ message.expansion"])
        message.flags = MessageFlags.supportExtension.rawValue
        #expect(found(Frame(message)).isEmpty)
    }

    @Test("blocklist: an action and users, each once, at most maxBlocklistChangeUsers")
    func blocklist() {
        let valid = BlocklistChange.with {
            $0.action = .block; $0.userIDs = ["spam_1", "spam_2"]
        }
        func change(
            limits: ValidationLimits = ValidationLimits(),
            _ edit: (inout BlocklistChange) -> Void
        )
            -> [String]
        {
            found(Frame(.blocklistChange(changed(valid, edit))), limits: limits)
        }
        #expect(change { _ in }.isEmpty)
        #expect(change { $0.userIDs = [] } == ["blocklist @ blocklistChange.userIDs"])
        #expect(change { $0.userIDs[1] = "" } == ["blocklist @ blocklistChange.userIDs[1]"])
        #expect(change { $0.userIDs[1] = "spam_1" } == ["blocklist @ blocklistChange.userIDs[1]"])
        #expect(change { $0.action = .unspecified } == ["unspecifiedEnum @ blocklistChange.action"])
        var one = ValidationLimits()
        one.maxBlocklistChangeUsers = 1
        #expect(change(limits: one) { _ in } == ["blocklist @ blocklistChange.userIDs"])
        let list = BlocklistResponse.with { $0.userIDs = ["spam_1", "spam_1"] }
        #expect(found(Frame(.blocklistResponse(list))) == ["blocklist @ blocklistResponse.userIDs[1]"])
    }

    @Test("historyFilter: QuickBlox's operators name each user once, at most maxHistoryFilterUsers, and a range")
    func historyFilter() {
        let valid = HistoryRequest.with {
            $0.conversation = .group("team"); $0.count = 50; $0.senderIDs = ["bob", "carol"]
            $0.recipientIDs = ["dave"]; $0.updatedAfterMs = 1_732_186_920_000; $0.textContains = "invoice"
            $0.startTimeMs = 1_732_000_000_000; $0.endTimeMs = 1_732_100_000_000; $0.markAsRead = true
        }
        func request(
            limits: ValidationLimits = ValidationLimits(),
            _ change: (inout HistoryRequest) -> Void
        )
            -> [String]
        {
            found(Frame(.historyRequest(changed(valid, change))), limits: limits)
        }
        #expect(request { _ in }.isEmpty)
        #expect(request { $0.senderIDs[1] = "bob" } == ["historyFilter @ historyRequest.senderIDs[1]"])
        #expect(request { $0.recipientIDs[0] = "" } == ["historyFilter @ historyRequest.recipientIDs[0]"])
        var one = ValidationLimits()
        one.maxHistoryFilterUsers = 1
        #expect(request(limits: one) { _ in } == ["historyFilter @ historyRequest.senderIDs"])
        #expect(request { $0.updatedAfterMs = -1 } == ["historyFilter @ historyRequest.updatedAfterMs"])
        #expect(request { $0.endTimeMs = $0.startTimeMs - 1 } == ["historyFilter @ historyRequest.endTimeMs"])
        #expect(request { $0.endTimeMs = 0 }.isEmpty, "an open end")
    }
}
