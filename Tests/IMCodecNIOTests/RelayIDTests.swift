#if Tools
import IMCodec
import IMCodecNIO
import NIOCore
import NIOPosix
import Testing

@testable import imcodec_relay

/// The longest id the relay keeps (``RelayProtocol/maxIDBytes``, 128 bytes): a user, device,
/// group or ultra-group channel id past it names nothing the relay keeps. Before, every id a client
/// made up was kept for as long as the relay ran: a conversation (and its list entries, and a
/// stream for the made-up peer) per peer id, a subscriber entry per watched id, each up to the
/// frame size limit.
@Suite("Relay ids", .timeLimit(.minutes(2)))
struct RelayIDTests {
    private let longest = String(repeating: "i", count: RelayProtocol.maxIDBytes)
    private let tooLong = String(repeating: "i", count: RelayProtocol.maxIDBytes + 1)

    private func ask(_ client: TestClient, _ payload: Frame.Payload, id: UInt64) async throws -> Frame? {
        try await RelayUserStateTests.ask(client, payload, id: id)
    }

    /// The seq of a message alice sends bob with `client_msg_id` `id`, or `nil` when it is refused.
    private static func seqOfAMessage(from alice: TestClient, id: String) async throws -> UInt64? {
        let message = Message.c2cText(from: "alice", to: "bob", id, clientMsgID: id)
        let ack = try await alice.ask(RelayProtocol.answer(.message(message), requestID: 90))?.sendAck
        return ack?.errorCode == 0 ? ack?.seq : nil
    }

    /// A login whose user id has 129 bytes is refused with 2007 and its connection closed; one of
    /// 128 bytes logs in, and messages go both ways between it and bob.
    @Test func aUserIDHoldsAtMost128Bytes() async throws {
        try await withClientGroup { group in
            try await withRelay { server in
                let refused = try await TestClient.connect(
                    to: server,
                    sending: try await TestAuth.login(tooLong),
                    group: group
                )
                #expect(await eventually { !refused.collector.loginResults.isEmpty })
                #expect(refused.collector.loginResults.first?.errorCode == RelayProtocol.LoginError.userIDTooLong)
                #expect(await eventually { !refused.channel.isActive })

                let long = try await TestClient.connect(to: server, as: longest, group: group)
                let bob = try await TestClient.connect(to: server, as: "bob", group: group)
                let toBob = Message.c2cText(from: longest, to: "bob", "hi", clientMsgID: "l1")
                let sent = try await long.ask(RelayProtocol.answer(.message(toBob), requestID: 1))
                #expect(sent?.sendAck?.errorCode == 0)
                let back = Message.c2cText(from: "bob", to: longest, "hello", clientMsgID: "b1")
                #expect(try await bob.ask(RelayProtocol.answer(.message(back), requestID: 2))?.sendAck?.errorCode == 0)
                #expect(await eventually { long.collector.messages.map(\.previewText) == ["hello"] })
                #expect(bob.collector.messages.map(\.previewText) == ["hi"])
                for client in [refused, long, bob] { await client.close() }
            }
        }
    }

    /// Ids of exactly 128 bytes work on every path the longer ones are refused on: a group and an
    /// ultra-group channel joined and written to, a targeted receiver, a block, a presence
    /// subscription, a client message id; a group message's channel id, which groups ignore, may
    /// be longer. A targeted message keeps as its readers only the members it names (in memory and
    /// in the store): one that names no member reaches no one but its sender, live or in history.
    @Test func idsOf128BytesWorkWhereLongerOnesAreRefused() async throws {
        let database = try await TestStore(.sqlite)
        defer { database.remove() }
        try await withClientGroup { group in
            try await withRelay({
                $0.store = database.location; $0.groups = ["team": ["alice", "bob", "carol"]]
            }) { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group)
                let bob = try await TestClient.connect(to: server, as: "bob", group: group)
                let carol = try await TestClient.connect(to: server, as: "carol", group: group)
                var requests: UInt64 = 0
                func ack(_ message: Message) async throws -> Int32? {
                    requests += 1
                    let frame = RelayProtocol.answer(.message(message), requestID: requests)
                    return try await alice.ask(frame)?.sendAck?.errorCode
                }
                func join(_ client: TestClient, _ conversation: Conversation) async throws -> Int32? {
                    requests += 1
                    let frame = RelayProtocol.membershipFrame(.join, conversation, requestID: requests)
                    return try await client.ask(frame)?.requestResult?.errorCode
                }
                let channel = Conversation.with {
                    $0.type = .ultraGroup; $0.targetID = longest; $0.channelID = longest
                }
                for conversation in [Conversation.group(longest), channel] {
                    #expect(try await join(alice, conversation) == 0)
                    #expect(try await join(bob, conversation) == 0)
                    var message = Message.groupText(from: "alice", group: longest, "hi", clientMsgID: "")
                    message.conversation = conversation
                    message.clientMsgID = "to \(conversation.type.protoName)"
                    #expect(try await ack(message) == 0)
                }
                var ignored = Message.groupText(from: "alice", group: "team", "hi", clientMsgID: "channel ignored")
                ignored.conversation?.channelID = tooLong
                #expect(try await ack(ignored) == 0)
                var targeted = Message.groupText(from: "alice", group: "team", "hi", clientMsgID: "to bob")
                targeted.targetReceivers = ["bob", longest]
                #expect(try await ack(targeted) == 0)
                var noMember = Message.groupText(from: "alice", group: "team", "hi", clientMsgID: "to no member")
                noMember.targetReceivers = [longest]
                #expect(try await ack(noMember) == 0)
                #expect(try await ack(Message.c2cText(from: "alice", to: "bob", "hi", clientMsgID: longest)) == 0)
                #expect(try await ack(Message.groupText(from: "alice", group: "team", "end", clientMsgID: "end")) == 0)

                let toBob = [
                    "to CONVERSATION_TYPE_GROUP", "to CONVERSATION_TYPE_ULTRA_GROUP", "channel ignored", "to bob",
                    longest, "end",
                ]
                #expect(await eventually { bob.collector.messages.map(\.clientMsgID) == toBob })
                #expect(await eventually { carol.collector.messages.last?.clientMsgID == "end" })
                #expect(carol.collector.messages.map(\.clientMsgID) == ["channel ignored", "end"])
                let history = try await ask(
                    bob,
                    .historyRequest(
                        .with {
                            $0.conversation = .group("team"); $0.count = 20
                        }
                    ),
                    id: 100
                )
                if case .historyResponse(let page)? = history?.payload {
                    #expect(Set(page.messages.map(\.clientMsgID)) == ["channel ignored", "to bob", "end"])
                } else {
                    Issue.record("no history_response")
                }

                // Addressed to (recipient_ids): the members a targeted message names, not its
                // sender, nor a name that is no member's.
                for (id, (recipients, expected)) in [
                    (["bob"], ["to bob"]), (["alice"], []), ([longest], []),
                ].enumerated() {
                    let filtered = try await ask(
                        alice,
                        .historyRequest(
                            .with {
                                $0.conversation = .group("team"); $0.count = 20; $0.recipientIDs = recipients
                            }
                        ),
                        id: 110 + UInt64(id)
                    )
                    if case .historyResponse(let page)? = filtered?.payload {
                        #expect(page.messages.map(\.clientMsgID) == expected, "recipient_ids \(recipients)")
                    } else {
                        Issue.record("no history_response")
                    }
                }
                let block = BlocklistChange.with {
                    $0.action = .block; $0.userIDs = [longest]
                }
                #expect(try await ask(alice, .blocklistChange(block), id: 101)?.requestResult?.errorCode == 0)
                let watch = PresenceSubscription.with {
                    $0.action = .subscribe; $0.userIDs = [longest]
                }
                #expect(try await ask(alice, .presenceSubscription(watch), id: 102)?.requestResult?.errorCode == 0)
                for client in [alice, bob, carol] { await client.close() }
            }
        }
        // Kept as readers: the members named, and the sender.
        let store = try database.open()
        defer { store.close() }
        let audiences = try store.load().conversations[.group("team")]?.audiences
        #expect(audiences.map { Set($0.values) } == [["alice", "bob"], ["alice"]])
    }

    /// Everything that would make the relay keep an id past 128 bytes is refused, with an answer
    /// that does not repeat the id: a first message to such a peer, group or ultra-group channel
    /// (1004), a targeted receiver (1006), a message with such a client id (1011), a join (3002), a
    /// view of the conversation (3001), a presence subscription and a block (3003); a one-to-one
    /// event to such a peer, or about a message from one, gets 3002 (a notice without a request
    /// id). Nothing lands in alice's stream, and her connection stays open.
    @Test func nothingIsKeptUnderAnIDPast128Bytes() async throws {
        try await withClientGroup { group in
            try await withRelay({ $0.groups = ["team": ["alice", "bob"]] }) { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group)
                let bob = try await TestClient.connect(to: server, as: "bob", group: group)
                var requests: UInt64 = 0
                func ack(_ message: Message) async throws -> SendAck? {
                    requests += 1
                    return try await alice.ack(of: message, requestID: requests)
                }
                func code(_ payload: Frame.Payload) async throws -> Int32? {
                    requests += 1
                    return try await ask(alice, payload, id: requests)?.requestResult?.errorCode
                }

                let unsupported = RelayProtocol.AckError.unsupportedConversation
                let toPeer = try await ack(Message.c2cText(from: "alice", to: tooLong, "hi", clientMsgID: "p"))
                #expect(toPeer?.errorCode == unsupported && toPeer?.seq == 0)
                #expect(
                    toPeer.map {
                        $0.errorDescription.contains("at most 128 bytes") && !$0.errorDescription.contains(tooLong)
                    } == true
                )
                #expect(
                    try await ack(Message.c2cText(from: "alice", to: longest, "hi", clientMsgID: "q"))?.errorCode == 0
                )
                let toGroup = Message.groupText(from: "alice", group: tooLong, "hi", clientMsgID: "g")
                #expect(try await ack(toGroup)?.errorCode == unsupported)
                var toChannel = Message.groupText(from: "alice", group: "team", "hi", clientMsgID: "c")
                toChannel.conversation = Conversation.with {
                    $0.type = .ultraGroup; $0.targetID = "team"; $0.channelID = tooLong
                }
                #expect(try await ack(toChannel)?.errorCode == unsupported)
                var targeted = Message.groupText(from: "alice", group: "team", "hi", clientMsgID: "t")
                targeted.targetReceivers = ["bob", tooLong]
                #expect(try await ack(targeted)?.errorCode == RelayProtocol.AckError.targetedOutsideGroup)

                let join = RelayProtocol.membershipFrame(.join, group: tooLong, requestID: 50)
                #expect(
                    try await alice.ask(join)?.requestResult?.errorCode
                        == RelayProtocol.RequestError.unsupportedConversation
                )
                let pin = Frame.Payload.conversationUpdate(
                    .with {
                        $0.conversation = .oneToOne(tooLong); $0.fields = UInt32(ConversationField.pinned.rawValue)
                        $0.pinned = true
                    }
                )
                #expect(try await code(pin) == RelayProtocol.RequestError.notAMember)
                let badRequest = RelayProtocol.RequestError.badRequest
                let watch = PresenceSubscription.with {
                    $0.action = .subscribe; $0.userIDs = ["bob", tooLong]
                }
                #expect(try await code(.presenceSubscription(watch)) == badRequest)
                let block = BlocklistChange.with {
                    $0.action = .block; $0.userIDs = [tooLong]
                }
                #expect(try await code(.blocklistChange(block)) == badRequest)
                let list = try await ask(alice, .blocklistRequest(.init()), id: 60)
                if case .blocklistResponse(let blocked)? = list?.payload {
                    #expect(blocked.userIDs.isEmpty)
                } else {
                    Issue.record("no blocklist_response")
                }

                // One-to-one events: to the peer, and about a message from it (a recall of it
                // names alice's side of the conversation; a reaction to it goes back to it). With
                // a request id, a request_result (3002); without, an `unroutable` notice. A recall
                // naming an empty sender is refused so too (the relay used to trap on it).
                let reference = MessageRef.with {
                    $0.conversation = .oneToOne("alice"); $0.senderID = tooLong; $0.seq = 1
                }
                let typing = Frame.Payload.typing(
                    .with {
                        $0.conversation = .oneToOne(tooLong); $0.state = .started
                    }
                )
                let reaction = Frame.Payload.reaction(
                    .with {
                        $0.message = reference; $0.userID = "alice"; $0.emoji = "👍"; $0.action = .add
                    }
                )
                var noSender = reference
                noSender.senderID = ""
                let events: [Frame.Payload] = [
                    typing, .recall(.with { $0.message = reference }), reaction,
                    .recall(.with { $0.message = noSender }),
                ]
                for event in events {
                    #expect(try await code(event) == RelayProtocol.RequestError.unsupportedConversation)
                }
                for event in events { try await alice.send(Frame(event)) }
                #expect(await eventually { alice.collector.notices.count == events.count })
                #expect(alice.collector.notices.allSatisfy { $0.params["code"] == "unroutable" })
                #expect(!alice.collector.notices.contains { $0.params["reason"]?.contains(tooLong) == true })
                // A message with a client id past the bound (1011): the relay keeps the client id
                // with each message it keeps.
                let longClientID = Message.c2cText(from: "alice", to: "bob", "hi", clientMsgID: tooLong)
                #expect(try await ack(longClientID)?.errorCode == RelayProtocol.AckError.clientMsgIDRefused)

                // Kept: the one message to the 128-byte peer, and nothing else (read on alice's
                // other device: a device's stream leaves out what it sent itself).
                let other = try await TestClient.connect(to: server, as: "alice", group: group, deviceID: "2")
                let stream = try await other.streamPage(requestID: 70)
                #expect(
                    stream?.compactMap { if case .message(let m)? = $0.payload { m.clientMsgID } else { nil } } == ["q"]
                )
                #expect(stream?.count == 1)
                #expect(alice.channel.isActive && alice.collector.decodeErrors.isEmpty)
                #expect(bob.collector.messages.isEmpty)
                for client in [alice, bob, other] { await client.close() }
            }
        }
    }

    /// An id not in NFC names no one: logins take NFC ids alone (2009), and the router's tables
    /// compare by canonical equivalence, so "A\u{30A}lice" would have reached the NFC user's devices
    /// while the stores kept it as another user. A message to such a peer or group gets 1004, a
    /// targeted receiver 1006, a join 3002, a presence subscription, a block and a system notice
    /// 3003, and a key fetch finds no keys (alice published some); the NFC forms
    /// work. A groups file with such an id is refused at start.
    @Test func idsNotInNFCNameNoOne() async throws {
        let composed = "\u{C5}lice"
        let decomposed = "A\u{30A}lice"
        try await withClientGroup { group in
            try await withRelay({ $0.groups = ["team": ["bob", composed]] }) { server in
                let bob = try await TestClient.connect(to: server, as: "bob", group: group)
                let alice = try await TestClient.connect(to: server, as: composed, group: group, deviceID: "phone")
                var requests: UInt64 = 0
                func ack(_ message: Message) async throws -> Int32? {
                    requests += 1
                    return try await bob.ask(RelayProtocol.answer(.message(message), requestID: requests))?.sendAck?
                        .errorCode
                }
                func code(_ payload: Frame.Payload) async throws -> Int32? {
                    requests += 1
                    return try await ask(bob, payload, id: requests)?.requestResult?.errorCode
                }
                let unsupported = RelayProtocol.AckError.unsupportedConversation
                #expect(
                    try await ack(Message.c2cText(from: "bob", to: decomposed, "no", clientMsgID: "d")) == unsupported
                )
                let channel = Message.groupText(from: "bob", group: "e\u{301}quipe", "no", clientMsgID: "g")
                #expect(try await ack(channel) == unsupported)
                var targeted = Message.groupText(from: "bob", group: "team", "no", clientMsgID: "t")
                targeted.targetReceivers = [decomposed]
                #expect(try await ack(targeted) == RelayProtocol.AckError.targetedOutsideGroup)
                let join = RelayProtocol.membershipFrame(.join, group: "e\u{301}quipe", requestID: 50)
                #expect(
                    try await bob.ask(join)?.requestResult?.errorCode
                        == RelayProtocol.RequestError.unsupportedConversation
                )
                let badRequest = RelayProtocol.RequestError.badRequest
                let watch = PresenceSubscription.with {
                    $0.action = .subscribe; $0.userIDs = [decomposed]
                }
                #expect(try await code(.presenceSubscription(watch)) == badRequest)
                let block = BlocklistChange.with {
                    $0.action = .block; $0.userIDs = [decomposed]
                }
                #expect(try await code(.blocklistChange(block)) == badRequest)
                let notice = SystemNotice.with {
                    $0.recipientID = decomposed; $0.type = "wave"
                }
                #expect(try await code(.systemNotice(notice)) == badRequest)
                // alice publishes keys: a fetch by the decomposed id finds none (it used to hand out
                // her one-time key), a fetch by her id finds them.
                let publish = KeyPublish.with {
                    $0.bundle = .with {
                        $0.kind = .signalPrekeys; $0.bundle = [7, 7]; $0.oneTimeKeys = [.with { $0.key = [1] }]
                    }
                }
                #expect(try await ask(alice, .keyPublish(publish), id: 90)?.requestResult?.errorCode == 0)
                func keys(of user: String) async throws -> KeyFetchResponse? {
                    requests += 1
                    let fetch = KeyFetchRequest.with {
                        $0.userID = user; $0.kind = .signalPrekeys
                    }
                    guard
                        case .keyFetchResponse(let keys)? = try await ask(bob, .keyFetchRequest(fetch), id: requests)?
                            .payload
                    else { return nil }
                    return keys
                }
                #expect(try await keys(of: decomposed)?.errorCode == RelayProtocol.RequestError.noKeys)
                #expect(try await keys(of: composed)?.bundles.first?.oneTimeKeys.map(\.key) == [[1]])

                // The NFC forms: the message and the targeted one reach alice, and nothing else did.
                #expect(try await ack(Message.c2cText(from: "bob", to: composed, "yes", clientMsgID: "c")) == 0)
                targeted.targetReceivers = [composed]
                targeted.clientMsgID = "t2"
                targeted.elements = Message.groupText(from: "bob", group: "team", "yes too", clientMsgID: "t2").elements
                #expect(try await ack(targeted) == 0)
                #expect(await eventually { alice.collector.messages.count == 2 })
                #expect(alice.collector.messages.map(\.previewText) == ["yes", "yes too"])
                #expect(!alice.collector.kinds.contains(.systemNotice))
                #expect(
                    try await code(
                        .presenceSubscription(
                            .with {
                                $0.action = .subscribe; $0.userIDs = [composed]
                            }
                        )
                    ) == 0
                )
                #expect(bob.channel.isActive && alice.channel.isActive)
                for client in [bob, alice] { await client.close() }
            }
        }
        #expect(throws: (any Error).self) { try parseGroups("team: bob \(decomposed)") }
        #expect(throws: (any Error).self) { try parseGroups("e\u{301}quipe: bob") }
        #expect(try parseGroups("team: bob \(composed)") == ["team": ["bob", composed]])
    }

    /// An id holding U+0000 names no one, and a `client_msg_id` holding one is refused (1011): no
    /// store keeps such text as given. Before, on PostgreSQL, whose `text` refuses the byte, a join
    /// of the open group "g\0x" failed the commit, and a relay whose commit fails stops: any
    /// logged-in user could stop the relay, and every node that took over as the client sent the
    /// join again. The frames below are answered with their codes on both durable stores, use no
    /// seq, and the relay goes on: the next message gets seq 1, and after a restart seq 2.
    @Test(arguments: StoreBackend.allCases)
    func idsHoldingU0000AreRefusedOnEveryStore(_ backend: StoreBackend) async throws {
        let database = try await TestStore(backend)
        defer { database.remove() }
        let store = database.location
        let configure: (inout RelayConfiguration) -> Void = {
            $0.store = store; $0.groups = ["team": ["alice", "bob"]]
        }
        try await withClientGroup { group in
            try await withRelay(configure) { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group, deviceID: "phone")
                var requests: UInt64 = 0
                func ack(_ message: Message) async throws -> Int32? {
                    requests += 1
                    return try await alice.ask(RelayProtocol.answer(.message(message), requestID: requests))?
                        .sendAck?.errorCode
                }
                func code(_ payload: Frame.Payload) async throws -> Int32? {
                    requests += 1
                    return try await ask(alice, payload, id: requests)?.requestResult?.errorCode
                }
                let unsupported = RelayProtocol.AckError.unsupportedConversation
                #expect(
                    try await ack(Message.c2cText(from: "alice", to: "b\u{0}x", "no", clientMsgID: "1")) == unsupported
                )
                #expect(
                    try await ack(Message.groupText(from: "alice", group: "g\u{0}x", "no", clientMsgID: "2"))
                        == unsupported
                )
                #expect(
                    try await ack(Message.c2cText(from: "alice", to: "bob", "no", clientMsgID: "a\u{0}b"))
                        == RelayProtocol.AckError.clientMsgIDRefused
                )
                var targeted = Message.groupText(from: "alice", group: "team", "no", clientMsgID: "3")
                targeted.targetReceivers = ["bob\u{0}"]
                #expect(try await ack(targeted) == RelayProtocol.AckError.targetedOutsideGroup)
                let join = RelayProtocol.membershipFrame(.join, group: "g\u{0}x", requestID: 50)
                #expect(
                    try await alice.ask(join)?.requestResult?.errorCode
                        == RelayProtocol.RequestError.unsupportedConversation
                )
                let badRequest = RelayProtocol.RequestError.badRequest
                #expect(
                    try await code(
                        .blocklistChange(
                            .with {
                                $0.action = .block; $0.userIDs = ["b\u{0}x"]
                            }
                        )
                    ) == badRequest
                )
                #expect(
                    try await code(
                        .presenceSubscription(
                            .with {
                                $0.action = .subscribe; $0.userIDs = ["b\u{0}x"]
                            }
                        )
                    )
                        == badRequest
                )
                #expect(
                    try await code(
                        .systemNotice(
                            .with {
                                $0.recipientID = "b\u{0}x"; $0.type = "wave"
                            }
                        )
                    ) == badRequest
                )
                #expect(try await Self.seqOfAMessage(from: alice, id: "ok-1") == 1)
                await alice.close()
            }
            try await withRelay(configure) { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group, deviceID: "phone")
                #expect(try await Self.seqOfAMessage(from: alice, id: "ok-2") == 2)
                await alice.close()
            }
        }
        #expect(throws: (any Error).self) { try parseGroups("team: bob b\u{0}x") }
    }

    /// The fast path of the NFC check takes no scalar Foundation's normalization would change,
    /// alone or after a starter it might compose with, and ids of such scalars are taken.
    @Test func theNFCFastPathAgreesWithFoundation() {
        let ranges: [ClosedRange<UInt32>] = [
            0...0x2FF, 0x3041...0x3096, 0x30A1...0x30FA, 0x30FC...0x30FC, 0x4E00...0x9FFF, 0xAC00...0xD7A3,
            0xFF01...0xFF5E,
        ]
        for range in ranges {
            for value in range {
                guard let scalar = Unicode.Scalar(value) else { continue }
                #expect(RelayProtocol.isAlwaysComposed(scalar))
            }
        }
        // Every scalar the fast path takes, whether or not the ranges above name it, is in NFC
        // after any neighbour.
        var checked = 0
        for value in UInt32(1)...0x10FFFF {
            guard let scalar = Unicode.Scalar(value), RelayProtocol.isAlwaysComposed(scalar) else { continue }
            for before in ["", "a", "\u{3046}", "\u{1100}"] {
                let id = before + String(scalar)
                #expect(
                    RelayProtocol.sameID(id.precomposedStringWithCanonicalMapping, id),
                    "U+\(String(value, radix: 16))"
                )
            }
            checked += 1
        }
        #expect(checked == 33_202)  // every scalar of the ranges but U+0000, and no other
        #expect(
            RelayProtocol.isNormalized("\u{5F20}\u{4F1F}") && RelayProtocol.isNormalized("\u{AE40}\u{CCA0}\u{C218}")
        )
        #expect(!RelayProtocol.isNormalized("\u{1100}\u{1161}") && !RelayProtocol.isNormalized("\u{304B}\u{3099}"))
    }

    /// A message kept before the bound, with a client id past it, sent again (its ack was lost)
    /// gets its first ack, not 1011: the resend lookup, which keeps nothing, comes first.
    @Test func aResendOfAMessageKeptBeforeTheBoundGetsItsFirstAck() async throws {
        let database = try await TestStore(.sqlite)
        defer { database.remove() }
        let store = try database.open()
        var batch = StoreBatch()
        batch.messages = [RelayStoreTests.message(RelayStoreTests.direct, 1, from: "alice", id: tooLong)]
        try store.commit(batch)
        store.close()
        try await withClientGroup { group in
            try await withRelay({ $0.store = database.location }) { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group)
                let again = Message.c2cText(from: "alice", to: "bob", "hi", clientMsgID: tooLong)
                let ack = try await alice.ask(RelayProtocol.answer(.message(again), requestID: 1))?.sendAck
                #expect(ack?.errorCode == 0 && ack?.seq == 1 && ack?.serverMsgUID == "uid-1-alice")
                let new = Message.c2cText(from: "alice", to: "bob", "hi", clientMsgID: tooLong + "x")
                let refused = try await alice.ask(RelayProtocol.answer(.message(new), requestID: 2))?.sendAck
                #expect(refused?.errorCode == RelayProtocol.AckError.clientMsgIDRefused)
                await alice.close()
            }
        }
    }
}
#endif
