import IMCodec
import Testing

/// One frame and where ``FrameView/route`` must send it.
struct RouteCase: Sendable, CustomTestStringConvertible {
    let name: String
    let frame: Frame
    let route: FrameRoute
    var testDescription: String { name }
}

enum RouteCases {
    static let chatroom = Conversation.with {
        $0.type = .chatroom; $0.targetID = "room-7"
    }
    static let ultraGroup = Conversation.with {
        $0.type = .ultraGroup; $0.targetID = "ug-1"; $0.channelID = "news"
    }
    static let system = Conversation.with { $0.type = .system }

    /// Bob's one-to-one message to Alice, and his group message, as the server stamped them.
    static let toAlice = changed(Message.c2cText(from: "bob", to: "alice", "hi", clientMsgID: "b-1")) {
        $0.serverMsgUID = "s-1"; $0.seq = 1
    }
    static let toTeam = changed(Message.groupText(from: "bob", group: "team", "hi all", clientMsgID: "b-2")) {
        $0.serverMsgUID = "s-2"; $0.seq = 2
    }
    static let fromCarol = Message.groupText(from: "carol", group: "team", "me too", clientMsgID: "c-1")

    static func message(in conversation: Conversation?) -> Frame {
        Frame(changed(Message.c2cText(from: "alice", to: "bob", "x")) { $0.conversation = conversation })
    }

    static func receipt(for message: Message, by reader: String) -> MessageReceipt {
        MessageReceipt.with {
            $0.kind = .read; $0.message = message.reference; $0.userID = reader
        }
    }

    static func delete(_ scope: DeleteScope) -> Frame {
        Frame(
            .delete(
                DeleteEvent.with {
                    $0.messages = [toTeam.reference]; $0.scope = scope; $0.operatorID = "bob"
                }
            )
        )
    }

    static let c2cRead = C2CReadReceipt.with {
        $0.userID = "alice"; $0.readTimeMs = 1
    }

    /// At least one case for every payload kind, and the cases where a kind has no route.
    static let all: [RouteCase] = [
        RouteCase(name: "message, one-to-one: the peer", frame: Frame(toAlice), route: .user("alice")),
        RouteCase(name: "message, group: the group", frame: Frame(toTeam), route: .group("team")),
        RouteCase(name: "message, chatroom", frame: message(in: chatroom), route: .chatroom("room-7")),
        RouteCase(
            name: "message, ultra group channel",
            frame: message(in: ultraGroup),
            route: .ultraGroup("ug-1", channelID: "news")
        ),
        RouteCase(name: "message, system conversation", frame: message(in: system), route: .system("")),
        RouteCase(name: "message without a conversation", frame: message(in: nil), route: .unroutable),
        RouteCase(name: "message to a group with no id", frame: message(in: .group("")), route: .unroutable),
        RouteCase(
            name: "read receipt: back to the sender, not the reader",
            frame: Frame.readReceipt(for: toAlice.reference, by: "alice"),
            route: .referencedSender("bob")
        ),
        RouteCase(
            name: "group read receipt: back to the sender",
            frame: Frame(.receipt(changed(receipt(for: toTeam, by: "carol")) { $0.groupID = "team" })),
            route: .referencedSender("bob")
        ),
        RouteCase(
            name: "receipt for a message with no sender",
            frame: Frame(.receipt(MessageReceipt.with { $0.message = MessageRef.with { $0.seq = 1 } })),
            route: .unroutable
        ),
        RouteCase(
            name: "receipt batch to one sender",
            frame: Frame(
                .receipts(
                    ReceiptBatch.with {
                        $0.receipts = [receipt(for: toAlice, by: "alice"), receipt(for: toTeam, by: "alice")]
                    }
                )
            ),
            route: .referencedSender("bob")
        ),
        RouteCase(
            name: "receipt batch to two senders: each its own",
            frame: Frame(
                .receipts(
                    ReceiptBatch.with {
                        $0.receipts = [receipt(for: toTeam, by: "alice"), receipt(for: fromCarol, by: "alice")]
                    }
                )
            ),
            route: .eachReferencedSender
        ),
        RouteCase(
            name: "receipt batch with C2C read receipts too",
            frame: Frame(
                .receipts(
                    ReceiptBatch.with {
                        $0.receipts = [receipt(for: toTeam, by: "alice")]; $0.c2cReadReceipts = [c2cRead]
                    }
                )
            ),
            route: .eachReferencedSender
        ),
        RouteCase(
            name: "receipt batch of C2C read receipts only",
            frame: Frame(.receipts(ReceiptBatch.with { $0.c2cReadReceipts = [c2cRead] })),
            route: .client
        ),
        RouteCase(
            name: "C2C read receipt: written by the server",
            frame: Frame(.c2cReadReceipt(c2cRead)),
            route: .client
        ),
        RouteCase(
            name: "group read-member page: the client that asked",
            frame: Frame(
                .groupReadMembers(
                    GroupReadMembers.with {
                        $0.message = toTeam.reference; $0.read = true; $0.memberIDs = ["carol"]
                    }
                )
            ),
            route: .client
        ),
        RouteCase(
            name: "recall: the message's conversation",
            frame: Frame.recall(toTeam.reference, by: "bob"),
            route: .group("team")
        ),
        RouteCase(
            name: "edit: the message's conversation",
            frame: Frame(
                .edit(
                    EditEvent.with {
                        $0.message = toAlice.reference; $0.newMessage = toAlice; $0.editorID = "bob"
                    }
                )
            ),
            route: .user("alice")
        ),
        RouteCase(name: "delete for everyone: the conversation", frame: delete(.everyone), route: .group("team")),
        RouteCase(name: "delete for me only: my devices", frame: delete(.onlyMe), route: .ownDevices("bob")),
        RouteCase(name: "delete with no scope: my devices", frame: delete(.unspecified), route: .ownDevices("bob")),
        RouteCase(
            name: "typing: the conversation",
            frame: Frame(
                .typing(
                    TypingEvent.with {
                        $0.conversation = .oneToOne("bob"); $0.userID = "alice"; $0.state = .started
                    }
                )
            ),
            route: .user("bob")
        ),
        RouteCase(
            name: "mark read: my devices",
            frame: Frame(
                .markRead(
                    MarkReadEvent.with {
                        $0.conversation = .oneToOne("bob"); $0.userID = "alice"; $0.readSeq = 4
                    }
                )
            ),
            route: .ownDevices("alice")
        ),
        RouteCase(
            name: "system notice: the server",
            frame: Frame(
                .systemNotice(
                    SystemNotice.with {
                        $0.type = "login"; $0.params = ["user_id": "a"]
                    }
                )
            ),
            route: .server
        ),
        RouteCase(
            name: "send ack: the client that sent",
            frame: Frame(
                .sendAck(
                    SendAck.with {
                        $0.clientMsgID = "b-1"; $0.conversation = .oneToOne("alice")
                    }
                )
            ),
            route: .client
        ),
        RouteCase(
            name: "history request: the server",
            frame: Frame(
                .historyRequest(
                    HistoryRequest.with {
                        $0.conversation = .group("team"); $0.count = 20
                    }
                )
            ),
            route: .server
        ),
        RouteCase(
            name: "history response: the client that asked",
            frame: Frame(
                .historyResponse(
                    HistoryResponse.with {
                        $0.conversation = .group("team"); $0.messages = [toTeam]; $0.finished = true
                    }
                )
            ),
            route: .client
        ),
        RouteCase(
            name: "stored merger body: the server",
            frame: Frame(.mergerPayload(MergerPayload.with { $0.messages = [toTeam] })),
            route: .server
        ),
        RouteCase(
            name: "read receipt request: the server",
            frame: Frame(.readReceiptRequest(ReadReceiptRequest.with { $0.messages = [toTeam.reference] })),
            route: .server
        ),
        RouteCase(
            name: "group read members request: the server",
            frame: Frame(
                .groupReadMembersRequest(
                    GroupReadMembersRequest.with {
                        $0.message = toTeam.reference; $0.filter = .read; $0.count = 100
                    }
                )
            ),
            route: .server
        ),
        // Session layer: requests go to the server, answers to the client that asked.
        RouteCase(
            name: "login request: the server",
            frame: Frame(
                .loginRequest(
                    LoginRequest.with {
                        $0.userID = "alice"; $0.token = "t"; $0.deviceID = "d"
                    }
                )
            ),
            route: .server
        ),
        RouteCase(
            name: "login result: the client",
            frame: Frame(.loginResult(LoginResult.with { $0.sessionID = "s" })),
            route: .client
        ),
        RouteCase(name: "ping: the peer (server)", frame: Frame(.ping(Ping.with { $0.id = 1 })), route: .server),
        RouteCase(name: "pong: the client", frame: Frame(.pong(Pong.with { $0.id = 1 })), route: .client),
        RouteCase(name: "logout: the server", frame: Frame(.logout(Logout())), route: .server),
        RouteCase(
            name: "kicked offline: the client",
            frame: Frame(.kickedOffline(KickedOffline.with { $0.reason = .loggedInElsewhere })),
            route: .client
        ),
        RouteCase(
            name: "max seq request: the server",
            frame: Frame(.maxSeqRequest(MaxSeqRequest.with { $0.conversations = [.group("team")] })),
            route: .server
        ),
        RouteCase(
            name: "max seq response: the client",
            frame: Frame(
                .maxSeqResponse(
                    MaxSeqResponse.with {
                        $0.maxSeqs = [
                            ConversationSeq.with {
                                $0.conversation = .group("team"); $0.seq = 9
                            }
                        ]
                    }
                )
            ),
            route: .client
        ),
        RouteCase(
            name: "sync request: the server",
            frame: Frame(
                .syncRequest(
                    SyncRequest.with {
                        $0.conversation = .group("team"); $0.fromSeq = 3; $0.limit = 50
                    }
                )
            ),
            route: .server
        ),
        RouteCase(
            name: "sync response: the client",
            frame: Frame(
                .syncResponse(
                    SyncResponse.with {
                        $0.conversation = .group("team"); $0.messages = [toTeam]
                    }
                )
            ),
            route: .client
        ),
        RouteCase(
            name: "presence update: the server (it knows the subscribers)",
            frame: Frame(
                .presence(
                    PresenceUpdate.with {
                        $0.userID = "alice"; $0.status = .online
                    }
                )
            ),
            route: .server
        ),
        RouteCase(
            name: "presence subscription: the server",
            frame: Frame(
                .presenceSubscription(
                    PresenceSubscription.with {
                        $0.action = .subscribe; $0.userIDs = ["bob"]
                    }
                )
            ),
            route: .server
        ),
        RouteCase(
            name: "membership change: the server",
            frame: Frame(
                .membership(
                    MembershipChange.with {
                        $0.action = .join; $0.conversation = .group("team")
                    }
                )
            ),
            route: .server
        ),
        RouteCase(name: "request result: the client", frame: Frame(.requestResult(RequestResult())), route: .client),
        RouteCase(
            name: "stream sync request: the server",
            frame: Frame(.streamSyncRequest(StreamSyncRequest.with { $0.afterPosition = 7 })),
            route: .server
        ),
        RouteCase(
            name: "stream sync response: the client",
            frame: Frame(.streamSyncResponse(StreamSyncResponse.with { $0.nextAfterPosition = 7 })),
            route: .client
        ),
        RouteCase(
            name: "stream ack: the server",
            frame: Frame(.streamAck(StreamAck.with { $0.position = 7 })),
            route: .server
        ),
        // Message features.
        RouteCase(
            name: "reaction in a group: the group",
            frame: Frame(
                .reaction(
                    ReactionEvent.with {
                        $0.message = toTeam.reference; $0.userID = "carol"; $0.emoji = "👍"; $0.action = .add
                    }
                )
            ),
            route: .group("team")
        ),
        RouteCase(
            name: "reaction by the reader of a one-to-one message: its sender",
            frame: Frame(
                .reaction(
                    ReactionEvent.with {
                        $0.message = toAlice.reference; $0.userID = "alice"; $0.emoji = "👍"; $0.action = .add
                    }
                )
            ),
            route: .referencedSender("bob")
        ),
        RouteCase(
            name: "reaction by the sender of a one-to-one message: the peer",
            frame: Frame(
                .reaction(
                    ReactionEvent.with {
                        $0.message = toAlice.reference; $0.userID = "bob"; $0.emoji = "🎉"; $0.action = .add
                    }
                )
            ),
            route: .user("alice")
        ),
        RouteCase(
            name: "pin: the conversation",
            frame: Frame(
                .pin(
                    PinEvent.with {
                        $0.conversation = .group("team"); $0.message = toTeam.reference; $0.pinned = true;
                        $0.operatorID = "carol"
                    }
                )
            ),
            route: .group("team")
        ),
        RouteCase(
            name: "poll vote: the poll's conversation",
            frame: Frame(
                .pollVote(
                    PollVoteEvent.with {
                        $0.pollMessage = toTeam.reference; $0.pollID = "p"; $0.voterID = "carol"; $0.optionIDs = [1]
                    }
                )
            ),
            route: .group("team")
        ),
        RouteCase(
            name: "poll update: the poll's conversation",
            frame: Frame(
                .pollUpdate(
                    PollUpdate.with {
                        $0.pollMessage = toTeam.reference; $0.pollID = "p"; $0.closed = true; $0.closedBy = "bob"
                    }
                )
            ),
            route: .group("team")
        ),
        RouteCase(
            name: "disappearing timer: the conversation",
            frame: Frame(
                .disappearingTimer(
                    DisappearingTimerEvent.with {
                        $0.conversation = chatroom; $0.expireAfterS = 86_400; $0.operatorID = "bob"
                    }
                )
            ),
            route: .chatroom("room-7")
        ),
        RouteCase(
            name: "receive option: the user's own devices",
            frame: Frame(
                .receiveOption(
                    ReceiveOptionChange.with {
                        $0.conversation = .group("team"); $0.option = .receiveNotNotify; $0.userID = "alice"
                    }
                )
            ),
            route: .ownDevices("alice")
        ),
        RouteCase(
            name: "call signal to its conversation",
            frame: Frame(
                .call(
                    CallEvent.with {
                        $0.callID = "c-1"; $0.signal = .invite; $0.conversation = .oneToOne("alice")
                    }
                )
            ),
            route: .user("alice")
        ),
        RouteCase(
            name: "group call signal",
            frame: Frame(
                .call(
                    CallEvent.with {
                        $0.callID = "c-2"; $0.signal = .hangUp; $0.conversation = .group("team")
                    }
                )
            ),
            route: .group("team")
        ),
        RouteCase(
            name: "stream chunk of a group message: to the group",
            frame: Frame(
                .streamChunk(
                    StreamChunk.with {
                        $0.message = toTeam.reference; $0.text = " more"
                    }
                )
            ),
            route: .group("team")
        ),
        RouteCase(
            name: "stream chunk of a one-to-one message: by its sender, to the peer",
            frame: Frame(
                .streamChunk(
                    StreamChunk.with {
                        $0.message = toAlice.reference; $0.final = true
                    }
                )
            ),
            route: .user("alice")
        ),
        RouteCase(
            name: "key publish to the server",
            frame: Frame(.keyPublish(KeyPublish.with { $0.bundle = .with { $0.kind = .mlsKeyPackage } })),
            route: .server
        ),
        RouteCase(
            name: "key fetch to the server",
            frame: Frame(.keyFetchRequest(KeyFetchRequest.with { $0.userID = "bob" })),
            route: .server
        ),
        RouteCase(
            name: "key fetch answer to the client",
            frame: Frame(.keyFetchResponse(KeyFetchResponse.with { $0.userID = "bob" })),
            route: .client
        ),
        RouteCase(
            name: "conversation update to the server",
            frame: Frame(
                .conversationUpdate(
                    ConversationUpdate.with {
                        $0.conversation = .group("team"); $0.fields = 1; $0.pinned = true
                    }
                )
            ),
            route: .server
        ),
        RouteCase(
            name: "conversation update, the server's copy, to the user's own devices",
            frame: Frame(
                .conversationUpdate(
                    ConversationUpdate.with {
                        $0.conversation = .group("team"); $0.fields = 1; $0.userID = "bob"
                    }
                )
            ),
            route: .ownDevices("bob")
        ),
        RouteCase(
            name: "conversation list request to the server",
            frame: Frame(.conversationListRequest(ConversationListRequest.with { $0.afterVersion = 7 })),
            route: .server
        ),
        RouteCase(
            name: "conversation list to the client",
            frame: Frame(.conversationList(ConversationList.with { $0.nextAfterVersion = 9 })),
            route: .client
        ),
        RouteCase(
            name: "extension update of a group message to the group",
            frame: Frame(
                .extensionUpdate(
                    ExtensionUpdate.with {
                        $0.message = toTeam.reference; $0.userID = "carol"
                    }
                )
            ),
            route: .group("team")
        ),
        RouteCase(
            name: "extension update of a one-to-one message by its receiver, back to its sender",
            frame: Frame(
                .extensionUpdate(
                    ExtensionUpdate.with {
                        $0.message = toAlice.reference; $0.userID = "alice"
                    }
                )
            ),
            route: .referencedSender("bob")
        ),
        RouteCase(
            name: "extension fetch to the server",
            frame: Frame(.extensionFetchRequest(ExtensionFetchRequest.with { $0.messages = [toTeam.reference] })),
            route: .server
        ),
        RouteCase(
            name: "extension fetch answer to the client",
            frame: Frame(.extensionFetchResponse(ExtensionFetchResponse.with { $0.errorCode = 3003 })),
            route: .client
        ),
        RouteCase(
            name: "blocklist change to the server",
            frame: Frame(
                .blocklistChange(
                    BlocklistChange.with {
                        $0.action = .block; $0.userIDs = ["mallory"]
                    }
                )
            ),
            route: .server
        ),
        RouteCase(
            name: "blocklist change, the server's copy, to the user's own devices",
            frame: Frame(
                .blocklistChange(
                    BlocklistChange.with {
                        $0.action = .unblock; $0.userIDs = ["mallory"]; $0.userID = "bob"
                    }
                )
            ),
            route: .ownDevices("bob")
        ),
        RouteCase(
            name: "blocklist request to the server",
            frame: Frame(.blocklistRequest(BlocklistRequest())),
            route: .server
        ),
        RouteCase(
            name: "blocklist to the client",
            frame: Frame(.blocklistResponse(BlocklistResponse.with { $0.userIDs = ["mallory"] })),
            route: .client
        ),
        RouteCase(name: "no payload", frame: Frame(), route: .unroutable),
    ]
}

@Suite("FrameView.route: where each payload kind goes")
struct FrameRouteTests {
    @Test("route", arguments: RouteCases.all)
    func route(_ routeCase: RouteCase) throws {
        let route = try WireDecoder().withFrameView(routeCase.frame.serializedBytes()) { $0.route }
        #expect(route == routeCase.route)
    }

    @Test("every payload kind has a route case")
    func everyKindIsCovered() {
        let covered = Set(RouteCases.all.compactMap { $0.frame.payload?.kind })
        #expect(covered == Set(Frame.Payload.Kind.allCases))
    }

    @Test("a read receipt's targetID is the reader; its route is the sender of the message it acknowledges")
    func readReceiptGoesBackToTheSender() throws {
        let bytes = Frame.readReceipt(for: RouteCases.toAlice.reference, by: "alice").serializedBytes()
        let facts = try WireDecoder().withFrameView(bytes) { ($0.targetID, $0.referencedSenderID, $0.route) }
        #expect(facts.0 == "alice")
        #expect(facts.1 == "bob")
        #expect(facts.2 == .referencedSender("bob"))
    }

    @Test("FrameRoute(conversationType:targetID:channelID:) for every conversation type")
    func fromConversation() {
        #expect(FrameRoute(conversationType: .oneToOne, targetID: "bob") == .user("bob"))
        #expect(FrameRoute(conversationType: .group, targetID: "g") == .group("g"))
        #expect(FrameRoute(conversationType: .chatroom, targetID: "r") == .chatroom("r"))
        #expect(
            FrameRoute(conversationType: .ultraGroup, targetID: "u", channelID: "c")
                == .ultraGroup("u", channelID: "c")
        )
        #expect(FrameRoute(conversationType: .ultraGroup, targetID: "u") == .ultraGroup("u", channelID: ""))
        #expect(FrameRoute(conversationType: .system, targetID: "") == .system(""))
        #expect(FrameRoute(conversationType: .unspecified, targetID: "bob") == .unroutable)
        #expect(FrameRoute(conversationType: .unrecognized(42), targetID: "bob") == .unroutable)
        #expect(FrameRoute(conversationType: .oneToOne, targetID: "") == .unroutable)
    }
}
