#if Tools
import Foundation
import IMCodec
import IMCodecNIO
import NIOCore
import NIOPosix
import Testing

@testable import imcodec_relay

/// The relay's delivery rules as the seeds state them (issue 16, item 5): targeted messages,
/// online-only and status-only messages, system notices to one user, and events on removed or
/// foreign messages. Seeds: Tencent IM "Sending and Receiving Messages" (seeds 000-002), RongCloud
/// IMLib "Message Introduction" (seed 003), QuickBlox "Messaging" (seed 004).
@Suite("Relay delivery rules", .timeLimit(.minutes(2)))
struct RelayDeliveryRulesTests {
    // MARK: Helpers

    private func sync(
        _ client: TestClient,
        _ conversation: Conversation,
        _ requestID: UInt64
    ) async throws -> SyncResponse? {
        let frame = try await client.ask(RelayProtocol.syncFrame(conversation, from: 1, requestID: requestID))
        if case .syncResponse(let response)? = frame?.payload { return response }
        return nil
    }

    /// The frames of the user's stream after position 0, as a device that resumes reads them.
    private func streamFrames(_ client: TestClient, _ requestID: UInt64) async throws -> StreamSyncResponse? {
        let frame = try await client.ask(
            RelayProtocol.answer(.streamSyncRequest(StreamSyncRequest()), requestID: requestID)
        )
        if case .streamSyncResponse(let response)? = frame?.payload { return response }
        return nil
    }

    private func join(_ client: TestClient, _ conversation: Conversation, _ requestID: UInt64) async throws {
        _ = try await client.ask(RelayProtocol.membershipFrame(.join, conversation, requestID: requestID))
        #expect(client.collector.result(of: requestID)?.errorCode == 0)
    }

    private func targeted(_ text: String, in conversation: Conversation, to receivers: [String], id: String) -> Frame {
        var message = Message(from: "alice", in: conversation, elements: [.text(text)], clientMsgID: id)
        message.targetReceivers = receivers
        return Frame(message)
    }

    private func texts(_ messages: [Message]) -> [String] { messages.map(\.previewText) }

    // MARK: Targeted messages

    /// Tencent (seed 000, "Sending Targeted Group Messages"): "A targeted group message is a message
    /// sent only to specified members in a group." The sender's other devices get it too (SENT).
    @Test func aTargetedGroupMessageReachesOnlyItsReceiversAndTheSendersOtherDevices() async throws {
        try await withClientGroup { group in
            try await withRelay({ $0.groups = ["team": ["alice", "bob", "carol"]] }) { server in
                let phone = try await TestClient.connect(to: server, as: "alice", group: group, deviceID: "phone")
                let laptop = try await TestClient.connect(to: server, as: "alice", group: group, deviceID: "laptop")
                let bob = try await TestClient.connect(to: server, as: "bob", group: group)
                let carol = try await TestClient.connect(to: server, as: "carol", group: group)
                try await phone.send(targeted("for bob", in: .group("team"), to: ["bob"], id: "t-1"))
                try await phone.send(
                    Frame(Message.groupText(from: "alice", group: "team", "for all", clientMsgID: "t-2"))
                )
                #expect(
                    await eventually {
                        phone.collector.acks.count == 2 && bob.collector.messages.count == 2
                            && laptop.collector.messages.count == 2 && carol.collector.messages.count == 1
                    }
                )
                #expect(phone.collector.acks.map(\.errorCode) == [0, 0] && phone.collector.acks.map(\.seq) == [1, 2])
                #expect(texts(bob.collector.messages) == ["for bob", "for all"])
                #expect(bob.collector.messages.map(\.direction) == [.received, .received])
                #expect(texts(laptop.collector.messages) == ["for bob", "for all"])
                #expect(laptop.collector.messages.map(\.direction) == [.sent, .sent])
                #expect(texts(carol.collector.messages) == ["for all"])
                try await phone.roundTrip(90)
                #expect(phone.collector.messages.isEmpty, "the sending device gets its ack, not the message")
                for client in [phone, laptop, bob, carol] { await client.close() }
            }
        }
    }

    /// Tencent (seed 000): targeted messages go "only to specified members"; issue 16 item 4: "A
    /// targeted message is stored and synced only for its receivers and the sender" (sync_request
    /// and the user stream alike).
    /// An event resent byte for byte by the device that sent it (its answer was lost with a
    /// connection, or with the relay) is answered again but neither applied nor delivered twice,
    /// as a message resent with its client_msg_id is; across a restart of the relay too (on both
    /// durable stores).
    @Test(arguments: StoreBackend.allCases)
    func anEventResentByteForByteIsAnsweredButKeptOnce(_ backend: StoreBackend) async throws {
        let database = try await TestStore(backend)
        defer { database.remove() }
        let store = database.location
        let configure: (inout RelayConfiguration) -> Void = {
            $0.store = store; $0.groups = ["team": ["alice", "bob"]]
        }
        try await withClientGroup { group in
            var reaction = Frame()
            try await withRelay(configure) { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group, deviceID: "phone")
                let bob = try await TestClient.connect(to: server, as: "bob", group: group)
                let message = try await sent(alice, to: bob, "react to me", id: "r-1")
                reaction = react(message, by: "bob", requestID: 21)
                _ = try await bob.ask(reaction)
                // Another reaction (the same one again would change nothing, and be kept by no one).
                _ = try await bob.ask(react(message, by: "bob", "❤️", requestID: 22))
                try await bob.send(reaction)  // the first, byte for byte
                try await bob.roundTrip(90)
                #expect(bob.collector.frames.filter { $0.requestID == 21 }.count == 2, "answered both times")
                #expect(kinds(alice, .reaction) == 2)
                for client in [alice, bob] { await client.close() }
            }
            // Restarted on the same database: the resend is still recognised (a reaction by its key,
            // as the relay keeps it rewritten: Router.reactionKey).
            try await withRelay(configure) { server in
                let bob = try await TestClient.connect(to: server, as: "bob", group: group)
                try await bob.send(reaction)
                try await bob.roundTrip(91)
                #expect(bob.collector.result(of: 21)?.errorCode == 0)
                let alice = try await TestClient.connect(
                    to: server,
                    as: "alice",
                    group: group,
                    deviceID: "phone",
                    streamResume: true
                )
                let page = try #require(try await streamFrames(alice, 92))
                let reactions = try page.frames.map { try Frame(serializedBytes: $0.frame) }.filter {
                    $0.payload?.kind == .reaction
                }
                #expect(reactions.count == 2, "the stream keeps each reaction once: \(reactions.count)")
                for client in [alice, bob] { await client.close() }
            }
        }
    }

    /// A resend after a restart is found whatever became of the kept copy of the event: an edit
    /// whose stream entries retention deleted (streams of 5 entries, pushed out by bob's messages),
    /// an edit of a message recalled since (its kept copy redacted), a pin of the conversation,
    /// which the relay keeps stamped with its own time, and bob's batch of two read receipts. Each
    /// is answered with success and neither applied nor kept again: alice's and bob's stream heads
    /// do not move, bob gets no edit and alice no receipt. Before, the
    /// window a start rebuilt came from the kept copies alone: the first edit was applied again
    /// (its `edit_version` 2), the second refused with 3005, the pin kept twice.
    @Test(arguments: StoreBackend.allCases)
    func aResendAfterARestartIsFoundWhateverBecameOfTheKeptCopy(_ backend: StoreBackend) async throws {
        let database = try await TestStore(backend)
        defer { database.remove() }
        let configure: (inout RelayConfiguration) -> Void = {
            $0.store = database.location; $0.groups = ["team": ["alice", "bob"]]; $0.maxStreamEntries = 5
        }
        try await withClientGroup { group in
            var resends: [Frame] = []
            var read = Frame()
            var (head, bobsHead): (UInt64, UInt64) = (0, 0)
            try await withRelay(configure) { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group, deviceID: "phone")
                let bob = try await TestClient.connect(to: server, as: "bob", group: group)
                let kept = try await sent(alice, to: bob, "keep me", id: "k-1")
                let recalled = try await sent(alice, to: bob, "take me back", id: "k-2")
                let pin = RelayProtocol.answer(
                    .conversationUpdate(
                        .with {
                            $0.conversation = .group("team"); $0.fields = UInt32(ConversationField.pinned.rawValue)
                            $0.pinned = true
                        }
                    ),
                    requestID: 33
                )
                resends = [edit(kept, by: "alice", requestID: 31), edit(recalled, by: "alice", requestID: 32), pin]
                for frame in resends {
                    #expect(try await alice.ask(frame)?.requestResult?.errorCode == 0)
                }
                // bob reads both in one batch: the relay remembers the batch and each receipt in
                // it (its window is written with the commit that keeps them).
                read = RelayProtocol.answer(
                    .receipts(
                        ReceiptBatch.with {
                            $0.receipts = [kept, recalled].map { message in
                                MessageReceipt.with {
                                    $0.kind = .read; $0.timeMs = 1; $0.message = message.reference
                                }
                            }
                        }
                    ),
                    requestID: 35
                )
                #expect(try await bob.ask(read)?.requestResult?.errorCode == 0)
                #expect(await eventually { kinds(alice, .receipts) == 1 })
                let recall = RelayProtocol.answer(
                    .recall(
                        RecallEvent.with {
                            $0.message = recalled.reference; $0.revokerID = "alice"
                        }
                    ),
                    requestID: 34
                )
                #expect(try await alice.ask(recall)?.requestResult?.errorCode == 0)
                for k in 1...6 {
                    let text = Message.c2cText(from: "bob", to: "alice", "push \(k)", clientMsgID: "p-\(k)")
                    #expect(
                        try await bob.ask(RelayProtocol.answer(.message(text), requestID: UInt64(40 + k)))?.sendAck?
                            .errorCode == 0
                    )
                }
                head = try #require(try await streamFrames(alice, 50)).headPosition
                bobsHead = try #require(try await streamFrames(bob, 51)).headPosition
                for client in [alice, bob] { await client.close() }
            }
            try await withRelay(configure) { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group, deviceID: "phone")
                let bob = try await TestClient.connect(to: server, as: "bob", group: group)
                for frame in resends {
                    #expect(try await alice.ask(frame)?.requestResult?.errorCode == 0, "\(frame.requestID)")
                }
                #expect(try await bob.ask(read)?.requestResult?.errorCode == 0)
                #expect(try await streamFrames(alice, 60)?.headPosition == head, "a resend was kept again")
                #expect(try await streamFrames(bob, 62)?.headPosition == bobsHead, "a receipt was kept again")
                try await bob.roundTrip(61)
                #expect(kinds(bob, .edit) == 0 && kinds(alice, .receipts) == 0)
                for client in [alice, bob] { await client.close() }
            }
        }
    }

    /// An event about a targeted message (a reaction, an edit, a recall) reaches only that
    /// message's receivers and sender: the other members do not learn that it exists. A member it
    /// was not sent to cannot name it (3001).
    @Test func eventsAboutATargetedMessageReachOnlyItsAudience() async throws {
        try await withClientGroup { group in
            try await withRelay({ $0.groups = ["team": ["alice", "bob", "carol"]] }) { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group)
                let bob = try await TestClient.connect(to: server, as: "bob", group: group)
                let carol = try await TestClient.connect(to: server, as: "carol", group: group)
                try await alice.send(targeted("for bob", in: .group("team"), to: ["bob"], id: "t-1"))
                #expect(await eventually { bob.collector.messages.count == 1 })
                let message = try #require(bob.collector.messages.first)
                // bob reacts; alice edits and recalls: carol gets none of it.
                _ = try await bob.ask(react(message, by: "bob", requestID: 11))
                #expect(bob.collector.result(of: 11)?.errorCode == 0)
                _ = try await alice.ask(edit(message, by: "alice", requestID: 12))
                #expect(alice.collector.result(of: 12)?.errorCode == 0)
                // carol names the message by its seq: refused, and nothing reaches anyone.
                _ = try await carol.ask(react(message, by: "carol", requestID: 13))
                #expect(carol.collector.result(of: 13)?.errorCode == RelayProtocol.RequestError.notAMember)
                try await alice.send(
                    RelayProtocol.answer(
                        .recall(
                            RecallEvent.with {
                                $0.message = message.reference; $0.revokerID = "alice"
                            }
                        ),
                        requestID: 14
                    )
                )
                #expect(await eventually { alice.collector.result(of: 14) != nil && kinds(bob, .recall) == 1 })
                #expect(kinds(alice, .reaction) == 1 && kinds(bob, .edit) == 1)
                try await carol.roundTrip(90)
                #expect(
                    kinds(carol, .reaction) + kinds(carol, .edit) + kinds(carol, .recall) + kinds(carol, .message) == 0
                )
                let carolsStream = try #require(try await streamFrames(carol, 91))
                #expect(carolsStream.frames.isEmpty, "\(carolsStream.frames.count) frames in carol's stream")
                for client in [alice, bob, carol] { await client.close() }
            }
        }
    }

    @Test func aTargetedMessageIsSyncedOnlyToItsReceiversAndTheSender() async throws {
        try await withClientGroup { group in
            try await withRelay({ $0.groups = ["team": ["alice", "bob", "carol"]] }) { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group, deviceID: "phone")
                try await alice.send(targeted("for bob", in: .group("team"), to: ["bob"], id: "t-1"))
                try await alice.send(
                    Frame(Message.groupText(from: "alice", group: "team", "for all", clientMsgID: "t-2"))
                )
                #expect(await eventually { alice.collector.acks.count == 2 })
                await alice.close()
                let bob = try await TestClient.connect(to: server, as: "bob", group: group)
                let carol = try await TestClient.connect(to: server, as: "carol", group: group)
                let laptop = try await TestClient.connect(to: server, as: "alice", group: group, deviceID: "laptop")
                let bobSync = try #require(try await sync(bob, .group("team"), 1))
                #expect(texts(bobSync.messages) == ["for bob", "for all"] && bobSync.messages.map(\.seq) == [1, 2])
                let aliceSync = try #require(try await sync(laptop, .group("team"), 2))
                #expect(texts(aliceSync.messages) == ["for bob", "for all"])
                #expect(aliceSync.messages.map(\.direction) == [.sent, .sent])
                let carolSync = try #require(try await sync(carol, .group("team"), 3))
                #expect(carolSync.errorCode == 0 && texts(carolSync.messages) == ["for all"])
                #expect(carolSync.messages.map(\.seq) == [2])

                let bobStream = try #require(try await streamFrames(bob, 4))
                #expect(bobStream.frames.count == 2)
                let carolStream = try #require(try await streamFrames(carol, 5))
                let carolFrames = try carolStream.frames.map { try Frame(serializedBytes: $0.frame) }
                #expect(
                    carolFrames.compactMap { if case .message(let m)? = $0.payload { m.previewText } else { nil } } == [
                        "for all"
                    ]
                )
                for client in [bob, carol, laptop] { await client.close() }
            }
        }
    }

    /// Tencent (seed 000): "The targeted group message feature is not available for Community and
    /// AVChatRoom groups"; a one-to-one message has no members to pick from. Refused in its ack with
    /// 1006 (``RelayProtocol/AckError/targetedOutsideGroup``), as `validate()` refuses it.
    @Test func aTargetedMessageInAChatroomOrAOneToOneConversationIsRefusedWith1006() async throws {
        try await withClientGroup { group in
            try await withRelay { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group)
                let bob = try await TestClient.connect(to: server, as: "bob", group: group)
                let room = Conversation.with {
                    $0.type = .chatroom; $0.targetID = "lobby"
                }
                try await join(alice, room, 1)
                try await join(bob, room, 2)
                try await alice.send(targeted("room", in: room, to: ["bob"], id: "r-1"))
                try await alice.send(targeted("direct", in: .oneToOne("bob"), to: ["bob"], id: "d-1"))
                #expect(await eventually { alice.collector.acks.count == 2 })
                let acks = alice.collector.acks
                #expect(
                    acks.map(\.errorCode) == [
                        RelayProtocol.AckError.targetedOutsideGroup, RelayProtocol.AckError.targetedOutsideGroup,
                    ]
                )
                #expect(acks.map(\.seq) == [0, 0] && acks.map(\.clientMsgID) == ["r-1", "d-1"])
                try await bob.roundTrip(3)
                #expect(bob.collector.messages.isEmpty)
                let sync = try #require(try await sync(bob, room, 4))
                #expect(sync.messages.isEmpty && sync.maxSeq == 0)
                #expect(alice.channel.isActive)
                await alice.close()
                await bob.close()
            }
        }
    }

    /// RongCloud (seed 003, RCMessage): `directedUserIds`, "users receiving targeted messages", on a
    /// message whose `channelId` is an "Ultra group channel ID": targeted messages exist in ultra
    /// groups as in groups (and `validate()` allows them there).
    @Test func aTargetedMessageInAnUltraGroupChannelReachesOnlyItsReceivers() async throws {
        try await withClientGroup { group in
            try await withRelay { server in
                let channel = Conversation.with {
                    $0.type = .ultraGroup; $0.targetID = "ug"; $0.channelID = "c1"
                }
                let alice = try await TestClient.connect(to: server, as: "alice", group: group)
                let bob = try await TestClient.connect(to: server, as: "bob", group: group)
                let carol = try await TestClient.connect(to: server, as: "carol", group: group)
                for (k, client) in [alice, bob, carol].enumerated() { try await join(client, channel, UInt64(k + 1)) }
                try await alice.send(targeted("for bob", in: channel, to: ["bob"], id: "u-1"))
                try await alice.send(
                    Frame(Message(from: "alice", in: channel, elements: [.text("for all")], clientMsgID: "u-2"))
                )
                #expect(
                    await eventually {
                        alice.collector.acks.count == 2 && bob.collector.messages.count == 2
                            && carol.collector.messages.count == 1
                    }
                )
                #expect(alice.collector.acks.map(\.errorCode) == [0, 0] && alice.collector.acks.map(\.seq) == [1, 2])
                #expect(texts(bob.collector.messages) == ["for bob", "for all"])
                #expect(texts(carol.collector.messages) == ["for all"])
                let carolSync = try #require(try await sync(carol, channel, 10))
                #expect(texts(carolSync.messages) == ["for all"])
                for client in [alice, bob, carol] { await client.close() }
            }
        }
    }

    // MARK: Messages that are not kept

    /// Sends `message` from alice to bob, whose phone is online and whose laptop is not: the phone
    /// gets it live without seq or stream position; nothing is kept for the laptop to sync.
    private func checkNotKept(_ message: Message) async throws {
        try await withClientGroup { group in
            try await withRelay { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group, deviceID: "phone")
                let aliceLaptop = try await TestClient.connect(
                    to: server,
                    as: "alice",
                    group: group,
                    deviceID: "laptop"
                )
                let phone = try await TestClient.connect(to: server, as: "bob", group: group, deviceID: "phone")
                try await alice.send(Frame(message))
                #expect(
                    await eventually {
                        alice.collector.acks.count == 1 && phone.collector.messages.count == 1
                            && aliceLaptop.collector.messages.count == 1
                    }
                )
                let ack = try #require(alice.collector.acks.first)
                #expect(ack.errorCode == 0 && ack.seq == 0, "acknowledged without a seq")
                let live = try #require(phone.collector.frames.first { $0.payload?.kind == .message })
                #expect(live.streamPosition == 0, "not in the stream")
                #expect(
                    phone.collector.messages.first?.seq == 0 && phone.collector.messages.first?.direction == .received
                )
                #expect(aliceLaptop.collector.messages.first?.direction == .sent)

                let laptop = try await TestClient.connect(
                    to: server,
                    as: "bob",
                    group: group,
                    deviceID: "laptop",
                    streamResume: true
                )
                let login = try #require(laptop.collector.loginResults.first)
                #expect(login.streamPosition == 0 && login.maxSeqs.allSatisfy { $0.seq == 0 })
                let stream = try #require(try await streamFrames(laptop, 1))
                #expect(stream.frames.isEmpty && stream.headPosition == 0 && !stream.hasMore)
                let sync = try #require(try await sync(laptop, .oneToOne("alice"), 2))
                #expect(sync.messages.isEmpty && sync.maxSeq == 0)
                try await laptop.roundTrip(3)
                #expect(laptop.collector.messages.isEmpty)
                for client in [alice, aliceLaptop, phone, laptop] { await client.close() }
            }
        }
    }

    /// Tencent (seed 000, "Setting onlineUserOnly"): such messages "cannot be stored offline, which
    /// means the recipient cannot receive messages unless the recipient is online", and "Multi-device
    /// roaming of messages is unavailable".
    @Test func anOnlineOnlyMessageReachesOnlineDevicesAndIsNeitherStoredNorSynced() async throws {
        var message = Message.c2cText(from: "alice", to: "bob", "typing...", clientMsgID: "o-1")
        message.messageFlags = [.onlineUserOnly]
        try await checkNotKept(message)
    }

    /// RongCloud (seed 003, "Message Storage Strategy"): the server stores a message or not by its
    /// `RCMessagePersistent`; a status message (`STORAGE_POLICY_STATUS_ONLY`) is not stored.
    @Test func aStatusOnlyMessageReachesOnlineDevicesAndIsNeitherStoredNorSynced() async throws {
        var message = Message.c2cText(from: "alice", to: "bob", "status", clientMsgID: "s-1")
        message.storagePolicy = .statusOnly
        try await checkNotKept(message)
    }

    // MARK: System notices

    /// QuickBlox (seed 004, "Send system messages"): system messages "are not stored on the server.
    /// This means that these messages will be delivered **only** to online users."
    @Test func aSystemNoticeWithARecipientReachesThatUsersOnlineDevicesOnly() async throws {
        try await withClientGroup { group in
            try await withRelay { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group)
                let phone = try await TestClient.connect(to: server, as: "bob", group: group, deviceID: "phone")
                let laptop = try await TestClient.connect(to: server, as: "bob", group: group, deviceID: "laptop")
                let carol = try await TestClient.connect(to: server, as: "carol", group: group)
                let notice = SystemNotice.with {
                    $0.type = "groupInvite"
                    $0.params = ["group": "team"]
                    $0.recipientID = "bob"
                }
                #expect(try await alice.ask(RelayProtocol.answer(.systemNotice(notice), requestID: 1)) != nil)
                #expect(alice.collector.result(of: 1)?.errorCode == 0)
                func invites(_ client: TestClient) -> [Frame] {
                    client.collector.frames.filter {
                        if case .systemNotice(let n)? = $0.payload { n.type == "groupInvite" } else { false }
                    }
                }
                #expect(await eventually { invites(phone).count == 1 && invites(laptop).count == 1 })
                #expect(invites(phone).first?.streamPosition == 0, "not kept")
                if case .systemNotice(let received)? = invites(phone).first?.payload {
                    #expect(
                        received.params == ["group": "team", "sender_id": "alice"] && received.recipientID == "bob",
                        "the relay names the sender"
                    )
                }
                // A sender_id of its own is replaced; the relay's own type is refused.
                var forged = notice
                forged.params["sender_id"] = "carol"
                #expect(try await alice.ask(RelayProtocol.answer(.systemNotice(forged), requestID: 10)) != nil)
                #expect(await eventually { invites(phone).count == 2 })
                if case .systemNotice(let received)? = invites(phone).last?.payload {
                    #expect(received.params["sender_id"] == "alice")
                }
                var error = notice
                error.type = "error"
                #expect(try await alice.ask(RelayProtocol.answer(.systemNotice(error), requestID: 11)) != nil)
                #expect(alice.collector.result(of: 11)?.errorCode == RelayProtocol.RequestError.badRequest)
                try await carol.roundTrip(2)
                try await alice.roundTrip(3)
                #expect(invites(carol).isEmpty && invites(alice).isEmpty)

                let tablet = try await TestClient.connect(
                    to: server,
                    as: "bob",
                    group: group,
                    deviceID: "tablet",
                    streamResume: true
                )
                let stream = try #require(try await streamFrames(tablet, 4))
                #expect(stream.frames.isEmpty && stream.headPosition == 0)
                try await tablet.roundTrip(5)
                #expect(invites(tablet).isEmpty)
                for client in [alice, phone, laptop, carol, tablet] { await client.close() }
            }
        }
    }

    /// QuickBlox (seed 004): a system message goes to its `recipientID`; the relay has no other
    /// receiver for one, so a notice without a recipient is refused with 3004
    /// (``RelayProtocol/RequestError/unsupported``) and the connection kept.
    @Test func aSystemNoticeWithoutARecipientIsRefusedWith3004() async throws {
        try await withClientGroup { group in
            try await withRelay { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group)
                let bob = try await TestClient.connect(to: server, as: "bob", group: group)
                let notice = SystemNotice.with {
                    $0.type = "broadcast"; $0.text = "to nobody"
                }
                #expect(try await alice.ask(RelayProtocol.answer(.systemNotice(notice), requestID: 7)) != nil)
                #expect(alice.collector.result(of: 7)?.errorCode == RelayProtocol.RequestError.unsupported)
                try await bob.roundTrip(8)
                #expect(bob.collector.notices.isEmpty && alice.channel.isActive)
                await alice.close()
                await bob.close()
            }
        }
    }

    // MARK: Events on removed and foreign messages

    /// Sends a group message from alice to bob and returns it as bob received it.
    private func sent(_ alice: TestClient, to bob: TestClient, _ text: String, id: String) async throws -> Message {
        let before = bob.collector.messages.count
        try await alice.send(Frame(Message.groupText(from: "alice", group: "team", text, clientMsgID: id)))
        #expect(await eventually { bob.collector.messages.count == before + 1 })
        return try #require(bob.collector.messages.last)
    }

    /// An edit of `message` to new text, its `new_message` the message itself otherwise, changed by
    /// `change` (a forgery).
    private func edit(
        _ message: Message,
        by editor: String,
        requestID: UInt64,
        _ change: (inout Message) -> Void = { _ in }
    ) -> Frame {
        editFrame(message, by: editor, to: [.text("\(message.previewText) (edited)")], requestID: requestID, change)
    }

    private func react(_ message: Message, by user: String, _ emoji: String = "👍", requestID: UInt64) -> Frame {
        RelayProtocol.answer(
            .reaction(
                ReactionEvent.with {
                    $0.message = message.reference
                    $0.userID = user
                    $0.emoji = emoji
                    $0.action = .add
                }
            ),
            requestID: requestID
        )
    }

    private func kinds(_ client: TestClient, _ kind: Frame.Payload.Kind) -> Int {
        client.collector.frames.filter { $0.payload?.kind == kind }.count
    }

    /// Tencent (seed 000, "Recalling Messages"): once recalled, the message shows as "Message
    /// recalled" on the recipient's side; an edit or a reaction to it is refused with 3005
    /// (``RelayProtocol/RequestError/messageRemoved``) and reaches no one.
    @Test func anEditOrReactionToARecalledMessageIsRefusedWith3005() async throws {
        try await withClientGroup { group in
            try await withRelay({ $0.groups = ["team": ["alice", "bob"]] }) { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group)
                let bob = try await TestClient.connect(to: server, as: "bob", group: group)
                let message = try await sent(alice, to: bob, "oops", id: "m-1")
                var recall = Frame.recall(message.reference, by: "alice")
                recall.requestID = 1
                #expect(try await alice.ask(recall) != nil)
                #expect(alice.collector.result(of: 1)?.errorCode == 0)
                #expect(await eventually { kinds(bob, .recall) == 1 })

                #expect(try await alice.ask(edit(message, by: "alice", requestID: 2)) != nil)
                #expect(alice.collector.result(of: 2)?.errorCode == RelayProtocol.RequestError.messageRemoved)
                #expect(try await bob.ask(react(message, by: "bob", requestID: 3)) != nil)
                #expect(bob.collector.result(of: 3)?.errorCode == RelayProtocol.RequestError.messageRemoved)
                try await alice.roundTrip(4)
                try await bob.roundTrip(5)
                #expect(kinds(bob, .edit) == 0 && kinds(alice, .reaction) == 0)
                await alice.close()
                await bob.close()
            }
        }
    }

    /// QuickBlox (seed 004, "Delete message"): with `forAllUsers` the owner can "completely remove
    /// messages from all users' histories"; an edit or a reaction to such a message is refused with
    /// 3005 (``RelayProtocol/RequestError/messageRemoved``). A delete for "only me" removes nothing.
    @Test func anEditOrReactionToAMessageDeletedForEveryoneIsRefusedWith3005() async throws {
        try await withClientGroup { group in
            try await withRelay({ $0.groups = ["team": ["alice", "bob"]] }) { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group)
                let bob = try await TestClient.connect(to: server, as: "bob", group: group)
                let kept = try await sent(alice, to: bob, "kept", id: "m-1")
                let gone = try await sent(alice, to: bob, "gone", id: "m-2")
                let onlyMe = RelayProtocol.answer(
                    .delete(
                        DeleteEvent.with {
                            $0.messages = [kept.reference]; $0.scope = .onlyMe; $0.operatorID = "alice"
                        }
                    ),
                    requestID: 1
                )
                let everyone = RelayProtocol.answer(
                    .delete(
                        DeleteEvent.with {
                            $0.messages = [gone.reference]; $0.scope = .everyone; $0.operatorID = "alice"
                        }
                    ),
                    requestID: 2
                )
                #expect(try await alice.ask(onlyMe) != nil && alice.collector.result(of: 1)?.errorCode == 0)
                #expect(try await alice.ask(everyone) != nil && alice.collector.result(of: 2)?.errorCode == 0)
                #expect(await eventually { kinds(bob, .delete) == 1 }, "a delete for everyone reaches bob")

                #expect(try await alice.ask(edit(gone, by: "alice", requestID: 3)) != nil)
                #expect(alice.collector.result(of: 3)?.errorCode == RelayProtocol.RequestError.messageRemoved)
                #expect(try await bob.ask(react(gone, by: "bob", requestID: 4)) != nil)
                #expect(bob.collector.result(of: 4)?.errorCode == RelayProtocol.RequestError.messageRemoved)
                // The message deleted for alice only can still be reacted to.
                #expect(try await bob.ask(react(kept, by: "bob", requestID: 5)) != nil)
                #expect(bob.collector.result(of: 5)?.errorCode == 0)
                #expect(await eventually { kinds(alice, .reaction) == 1 })
                try await bob.roundTrip(6)
                #expect(kinds(bob, .edit) == 0)
                // Kept, and listed as the last message, as DELETED (a recall's stub says RECALLED).
                let list = try await RelayUserStateTests.list(bob, id: 7)
                let last = RelayUserStateTests.entry(list, .group("team"))?.lastMessage
                #expect(last?.seq == gone.seq && last?.status == .deleted && last?.elements.isEmpty == true)
                let sync = try #require(try await sync(bob, .group("team"), 8))
                #expect(sync.messages.map(\.seq) == [kept.seq], "sync by seq skips the deleted message")
                await alice.close()
                await bob.close()
            }
        }
    }

    /// Tencent (seed 000): "The sender can call revokeMessage to recall a successfully sent message";
    /// for edits Tencent leaves "restricting only the message sender to modify messages" to the
    /// business layer, which the relay is. A recall or an edit of another user's message is refused
    /// with 3006 (``RelayProtocol/RequestError/notTheSender``) and reaches no one.
    @Test func aRecallOrEditOfAnotherUsersMessageIsRefusedWith3006() async throws {
        try await withClientGroup { group in
            try await withRelay({ $0.groups = ["team": ["alice", "bob"]] }) { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group)
                let bob = try await TestClient.connect(to: server, as: "bob", group: group)
                let message = try await sent(alice, to: bob, "mine", id: "m-1")
                var recall = Frame.recall(message.reference, by: "bob")
                recall.requestID = 1
                #expect(try await bob.ask(recall) != nil)
                #expect(bob.collector.result(of: 1)?.errorCode == RelayProtocol.RequestError.notTheSender)
                #expect(try await bob.ask(edit(message, by: "bob", requestID: 2)) != nil)
                #expect(bob.collector.result(of: 2)?.errorCode == RelayProtocol.RequestError.notTheSender)

                // In a one-to-one conversation, with the reference as bob received it.
                try await alice.send(Frame(Message.c2cText(from: "alice", to: "bob", "direct", clientMsgID: "d-1")))
                #expect(await eventually { bob.collector.messages.count == 2 })
                let direct = try #require(bob.collector.messages.last)
                var directRecall = Frame.recall(direct.reference, by: "bob")
                directRecall.requestID = 3
                #expect(try await bob.ask(directRecall) != nil)
                #expect(bob.collector.result(of: 3)?.errorCode == RelayProtocol.RequestError.notTheSender)
                #expect(try await bob.ask(edit(direct, by: "bob", requestID: 4)) != nil)
                #expect(bob.collector.result(of: 4)?.errorCode == RelayProtocol.RequestError.notTheSender)

                try await alice.roundTrip(5)
                #expect(kinds(alice, .recall) == 0 && kinds(alice, .edit) == 0)
                // The sender may still edit it.
                #expect(try await alice.ask(edit(message, by: "alice", requestID: 6)) != nil)
                #expect(alice.collector.result(of: 6)?.errorCode == 0)
                #expect(await eventually { kinds(bob, .edit) == 1 })
                await alice.close()
                await bob.close()
            }
        }
    }

    /// events.proto: an edit's `new_message` "is its content after the edit", and receivers take it
    /// as the message. What it says of who sent it, where and under which ids must be what the
    /// edited message says: an edit that would make the message another user's, another chat's or
    /// another message's is refused (3003) and reaches no one, and so is one whose
    /// `sender_device_id` is not the editing connection's device (receivers would take the message
    /// for another device's). Fields left empty are not compared.
    @Test func anEditCannotChangeWhoSentTheMessageWhereOrUnderWhichIds() async throws {
        try await withClientGroup { group in
            try await withRelay({ $0.groups = ["team": ["alice", "bob"], "other": ["alice", "bob"]] }) { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group)
                let bob = try await TestClient.connect(to: server, as: "bob", group: group)
                let message = try await sent(alice, to: bob, "mine", id: "m-1")
                let another = try await sent(alice, to: bob, "another", id: "m-2")
                let forgeries: [(String, (inout Message) -> Void)] = [
                    ("sender_id", { $0.senderID = "bob" }),
                    ("seq", { $0.seq = another.seq }),
                    ("server_msg_uid", { $0.serverMsgUID = another.serverMsgUID }),
                    ("client_msg_id", { $0.clientMsgID = "m-2" }),
                    ("conversation", { $0.conversation = .group("other") }),
                    // (alice's connection has no device id: another device's is a forgery.)
                    ("sender_device_id", { $0.senderDeviceID = "laptop" }),
                ]
                for (index, (field, forge)) in forgeries.enumerated() {
                    let requestID = UInt64(index + 1)
                    #expect(try await alice.ask(edit(message, by: "alice", requestID: requestID, forge)) != nil)
                    #expect(
                        alice.collector.result(of: requestID)?.errorCode == RelayProtocol.RequestError.badRequest,
                        "a new_message with another \(field)"
                    )
                }
                // Only the content: accepted, whether the ids are repeated or left out.
                #expect(try await alice.ask(edit(message, by: "alice", requestID: 10)) != nil)
                #expect(alice.collector.result(of: 10)?.errorCode == 0)
                let bare = RelayProtocol.answer(
                    .edit(
                        EditEvent.with {
                            $0.message = message.reference
                            $0.newMessage = Message.with { $0.elements = [.text("mine, edited again")] }
                            $0.editorID = "alice"
                        }
                    ),
                    requestID: 11
                )
                #expect(try await alice.ask(bare) != nil)
                #expect(alice.collector.result(of: 11)?.errorCode == 0)
                #expect(await eventually { kinds(bob, .edit) == 2 })
                try await alice.roundTrip(12)
                #expect(kinds(bob, .edit) == 2, "the refused edits reached no one")
                await alice.close()
                await bob.close()
            }
        }
    }

    /// An edit's `new_message` is what receivers take for the message, so the fields only the server
    /// sets are checked on it as on a message: a device may repeat what the server gave its copy
    /// (the received message, server time and all, is edited as it is, and so is a copy history
    /// served before a later edit), but an edit that shows a
    /// read list, reactions, a thread, an edit count, an update time, a receive status or an expiry
    /// the server never gave is refused (3003, naming the field) and reaches no one. Before, each of
    /// these reached the receivers live and by stream sync.
    @Test func anEditCannotSetWhatOnlyTheServerSets() async throws {
        try await withClientGroup { group in
            try await withRelay({ $0.groups = ["team": ["alice", "bob"]] }) { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group)
                let bob = try await TestClient.connect(to: server, as: "bob", group: group)
                let message = try await sent(alice, to: bob, "mine", id: "m-1")
                #expect(message.serverTimeMs != 0 && !message.serverMsgUID.isEmpty)
                let forgeries: [(String, (inout Message) -> Void)] = [
                    ("read_ids", { $0.readIDs = ["bob"] }),
                    ("delivered_ids", { $0.deliveredIDs = ["bob"] }),
                    (
                        "reactions",
                        {
                            $0.reactions = [
                                ReactionSummary.with {
                                    $0.emoji = "👍"; $0.count = 100
                                }
                            ]
                        }
                    ),
                    ("thread", { $0.thread = ThreadSummary.with { $0.replyCount = 9 } }),
                    ("edit_version", { $0.editVersion = 5 }),
                    ("updated_at_ms", { $0.updatedAtMs = 1 }),
                    ("received_status", { $0.receivedStatus = 1 }),
                    ("server_time_ms", { $0.serverTimeMs += 1 }),
                    ("expire_at_ms", { $0.expireAtMs = message.serverTimeMs + 60_000 }),
                ]
                for (index, (field, forge)) in forgeries.enumerated() {
                    let requestID = UInt64(index + 1)
                    #expect(try await alice.ask(edit(message, by: "alice", requestID: requestID, forge)) != nil)
                    let result = alice.collector.result(of: requestID)
                    #expect(result?.errorCode == RelayProtocol.RequestError.badRequest, "a new_message with \(field)")
                    #expect(result?.errorDescription.contains(field) == true, "\(result?.errorDescription ?? "")")
                }
                // The received copy as it is (server time, uid, seq; is_offline as a synced copy has it).
                #expect(try await alice.ask(edit(message, by: "alice", requestID: 20) { $0.isOffline = true }) != nil)
                #expect(alice.collector.result(of: 20)?.errorCode == 0)
                // A second edit of the copy history now serves: its edit count and update time.
                let history = try #require(
                    try await RelayHistoryTests.page(alice, id: 21) {
                        $0.conversation = .group("team"); $0.count = 1
                    }
                )
                let served = try #require(history.messages.first)
                #expect(served.editVersion == 1 && served.updatedAtMs != 0)
                #expect(try await alice.ask(edit(served, by: "alice", requestID: 22)) != nil)
                #expect(alice.collector.result(of: 22)?.errorCode == 0)
                // The same copy again, now out of date (history would serve edit_version 2): what the
                // server gave before a later edit is still what it gave.
                #expect(try await alice.ask(edit(served, by: "alice", requestID: 24)) != nil)
                #expect(alice.collector.result(of: 24)?.errorCode == 0)
                #expect(await eventually { kinds(bob, .edit) == 3 })
                try await alice.roundTrip(23)
                #expect(kinds(bob, .edit) == 3, "the refused edits reached no one")
                await alice.close()
                await bob.close()
            }
        }
    }

    /// events.proto, PollUpdate: "the creator sends closed = true". A poll update (a closing) of
    /// another member's poll is refused with 3006 and reaches no one, and so is one that names no
    /// message the relay keeps (3003: whose poll it is cannot be checked); the creator's own closing
    /// reaches every member.
    @Test func onlyThePollsCreatorClosesIt() async throws {
        try await withClientGroup { group in
            try await withRelay({ $0.groups = ["team": ["alice", "bob", "carol"]] }) { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group)
                let bob = try await TestClient.connect(to: server, as: "bob", group: group)
                let carol = try await TestClient.connect(to: server, as: "carol", group: group)
                try await alice.send(
                    Frame(
                        Message(
                            from: "alice",
                            in: .group("team"),
                            elements: [.poll(id: "lunch", question: "Lunch?", options: ["pizza", "sushi"])],
                            clientMsgID: "poll-1"
                        )
                    )
                )
                #expect(await eventually { bob.collector.messages.count == 1 && carol.collector.messages.count == 1 })
                let poll = try #require(bob.collector.messages.first).reference
                func close(_ reference: MessageRef, by user: String, requestID: UInt64) -> Frame {
                    RelayProtocol.answer(
                        .pollUpdate(
                            PollUpdate.with {
                                $0.pollMessage = reference
                                $0.pollID = "lunch"
                                $0.closed = true
                                $0.closedBy = user
                            }
                        ),
                        requestID: requestID
                    )
                }
                #expect(try await bob.ask(close(poll, by: "bob", requestID: 1)) != nil)
                #expect(bob.collector.result(of: 1)?.errorCode == RelayProtocol.RequestError.notTheSender)
                // Without closed_by, too: the poll is still alice's.
                #expect(try await bob.ask(close(poll, by: "", requestID: 2)) != nil)
                #expect(bob.collector.result(of: 2)?.errorCode == RelayProtocol.RequestError.notTheSender)
                let unknown = MessageRef.with {
                    $0.conversation = .group("team"); $0.seq = 999
                }
                #expect(try await alice.ask(close(unknown, by: "alice", requestID: 3)) != nil)
                #expect(alice.collector.result(of: 3)?.errorCode == RelayProtocol.RequestError.badRequest)

                #expect(try await alice.ask(close(poll, by: "alice", requestID: 4)) != nil)
                #expect(alice.collector.result(of: 4)?.errorCode == 0)
                #expect(await eventually { kinds(bob, .pollUpdate) == 1 && kinds(carol, .pollUpdate) == 1 })
                // Bob's refused closings reached no one: the one update each member has is alice's.
                for client in [bob, carol] {
                    let updates = client.collector.frames.compactMap { frame -> PollUpdate? in
                        guard case .pollUpdate(let update)? = frame.payload else { return nil }
                        return update
                    }
                    #expect(updates.map(\.closedBy) == ["alice"])
                }
                for client in [alice, bob, carol] { await client.close() }
            }
        }
    }

    /// A message reference that names a conversation names the event's own: receivers look the
    /// message up where the reference says. A pin in one group whose message reference names
    /// another group, and a delete for everyone whose second reference does, are refused (3003)
    /// and reach no one, even when the reference's ids name a message of the event's conversation;
    /// with the reference as received, the same pin is accepted.
    @Test func aMessageReferenceNamingAnotherConversationIsRefused() async throws {
        try await withClientGroup { group in
            try await withRelay({ $0.groups = ["team": ["alice", "bob"], "other": ["alice", "bob"]] }) { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group)
                let bob = try await TestClient.connect(to: server, as: "bob", group: group)
                let first = try await sent(alice, to: bob, "pin me", id: "m-1")
                let second = try await sent(alice, to: bob, "delete me", id: "m-2")
                var foreign = second.reference
                foreign.conversation = .group("other")
                func pin(_ reference: MessageRef, requestID: UInt64) -> Frame {
                    RelayProtocol.answer(
                        .pin(
                            PinEvent.with {
                                $0.conversation = .group("team"); $0.message = reference; $0.pinned = true
                                $0.operatorID = "bob"
                            }
                        ),
                        requestID: requestID
                    )
                }
                #expect(try await bob.ask(pin(foreign, requestID: 1)) != nil)
                #expect(bob.collector.result(of: 1)?.errorCode == RelayProtocol.RequestError.badRequest)
                let delete = RelayProtocol.answer(
                    .delete(
                        DeleteEvent.with {
                            $0.messages = [first.reference, foreign]; $0.scope = .everyone; $0.operatorID = "alice"
                        }
                    ),
                    requestID: 2
                )
                #expect(try await alice.ask(delete) != nil)
                #expect(alice.collector.result(of: 2)?.errorCode == RelayProtocol.RequestError.badRequest)

                #expect(try await bob.ask(pin(second.reference, requestID: 3)) != nil)
                #expect(bob.collector.result(of: 3)?.errorCode == 0)
                #expect(await eventually { kinds(alice, .pin) == 1 })
                try await bob.roundTrip(4)
                #expect(kinds(alice, .delete) == 0 && kinds(bob, .delete) == 0 && kinds(bob, .pin) == 0)
                // Nothing was removed: alice may still edit both.
                #expect(try await alice.ask(edit(first, by: "alice", requestID: 5)) != nil)
                #expect(alice.collector.result(of: 5)?.errorCode == 0)
                #expect(try await alice.ask(edit(second, by: "alice", requestID: 6)) != nil)
                #expect(alice.collector.result(of: 6)?.errorCode == 0)
                await alice.close()
                await bob.close()
            }
        }
    }

    /// A reference names its message as receivers find it (common.proto, `MessageRef`: "A receiver
    /// matches on server_msg_uid when present, else on (sender_id, client_msg_id)"), so the relay's
    /// rules hold whichever of its fields a reference carries: bob cannot recall alice's message by
    /// naming only its server uid, or only its sender and client id, or by pairing the seq of his own
    /// message with the uid of hers (3003, the seq and the ids disagree); a recall that names no
    /// message the relay keeps is refused (3003: whose message it is cannot be checked). Alice's
    /// recall by uid alone is applied: a reaction to the message is then refused with 3005, and its
    /// edit too, named by sender and client id.
    @Test func theRulesHoldWhicheverFieldsAReferenceNamesItsMessageBy() async throws {
        try await withClientGroup { group in
            try await withRelay({ $0.groups = ["team": ["alice", "bob"]] }) { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group)
                let bob = try await TestClient.connect(to: server, as: "bob", group: group)
                let hers = try await sent(alice, to: bob, "hers", id: "a-1")
                try await bob.send(Frame(Message.groupText(from: "bob", group: "team", "his", clientMsgID: "b-1")))
                #expect(await eventually { alice.collector.messages.count == 1 })
                let his = try #require(alice.collector.messages.last)
                func recall(_ ref: MessageRef, by user: String, _ requestID: UInt64) -> Frame {
                    var frame = Frame.recall(ref, by: user)
                    frame.requestID = requestID
                    return frame
                }
                let byUID = MessageRef.with {
                    $0.serverMsgUID = hers.serverMsgUID
                    $0.conversation = hers.conversation
                }
                let byClientID = MessageRef.with {
                    $0.senderID = "alice"
                    $0.clientMsgID = "a-1"
                    $0.conversation = hers.conversation
                }
                var mixed = his.reference
                mixed.serverMsgUID = hers.serverMsgUID
                var unknown = byUID
                unknown.serverMsgUID = "no-such-uid"
                let refusals: [(MessageRef, Int32)] = [
                    (byUID, RelayProtocol.RequestError.notTheSender),
                    (byClientID, RelayProtocol.RequestError.notTheSender),
                    (mixed, RelayProtocol.RequestError.badRequest),
                    (unknown, RelayProtocol.RequestError.badRequest),
                ]
                for (number, (ref, code)) in refusals.enumerated() {
                    let id = UInt64(number + 1)
                    #expect(try await bob.ask(recall(ref, by: "bob", id)) != nil)
                    #expect(bob.collector.result(of: id)?.errorCode == code, "refusal \(number + 1)")
                }
                try await alice.roundTrip(10)
                #expect(kinds(alice, .recall) == 0, "no refused recall reaches alice")

                #expect(try await alice.ask(recall(byUID, by: "alice", 11)) != nil)
                #expect(alice.collector.result(of: 11)?.errorCode == 0)
                #expect(await eventually { kinds(bob, .recall) == 1 })
                #expect(try await bob.ask(react(hers, by: "bob", requestID: 12)) != nil)
                #expect(bob.collector.result(of: 12)?.errorCode == RelayProtocol.RequestError.messageRemoved)
                var byIDs = hers
                byIDs.serverMsgUID = ""
                byIDs.seq = 0
                #expect(try await alice.ask(edit(byIDs, by: "alice", requestID: 13)) != nil)
                #expect(alice.collector.result(of: 13)?.errorCode == RelayProtocol.RequestError.messageRemoved)
                await alice.close()
                await bob.close()
            }
        }
    }

    /// A receipt speaks for its reader and goes to the sender of the message it names: bob cannot
    /// send a receipt in carol's name (3003), name alice's message as carol's to reach carol (3003),
    /// or reach dave, who is in no conversation with him, through a group message the relay does not
    /// keep (3001). A batch with one such receipt is refused whole. His own receipt reaches alice.
    @Test func aReceiptSpeaksForItsReaderAndReachesOnlyTheSenderOfItsMessage() async throws {
        try await withClientGroup { group in
            try await withRelay({ $0.groups = ["team": ["alice", "bob", "carol"]] }) { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group)
                let bob = try await TestClient.connect(to: server, as: "bob", group: group)
                let carol = try await TestClient.connect(to: server, as: "carol", group: group)
                let dave = try await TestClient.connect(to: server, as: "dave", group: group)
                let hers = try await sent(alice, to: bob, "hers", id: "a-1")
                func receipt(_ ref: MessageRef, reader: String, _ requestID: UInt64) -> Frame {
                    var frame = Frame.readReceipt(for: ref, by: reader)
                    frame.requestID = requestID
                    return frame
                }
                var asCarols = hers.reference
                asCarols.senderID = "carol"
                var unknownToDave = hers.reference
                unknownToDave.serverMsgUID = "not-kept"
                unknownToDave.clientMsgID = "not-kept"
                unknownToDave.seq = 0
                unknownToDave.senderID = "dave"
                let refusals: [(Frame, Int32)] = [
                    (receipt(hers.reference, reader: "carol", 1), RelayProtocol.RequestError.badRequest),
                    (receipt(asCarols, reader: "bob", 2), RelayProtocol.RequestError.badRequest),
                    (receipt(unknownToDave, reader: "bob", 3), RelayProtocol.RequestError.notAMember),
                    (
                        RelayProtocol.answer(
                            .receipts(
                                ReceiptBatch.with {
                                    $0.receipts = [hers.reference, asCarols].compactMap { ref in
                                        guard case .receipt(let value)? = Frame.readReceipt(for: ref, by: "bob").payload
                                        else { return nil }
                                        return value
                                    }
                                }
                            ),
                            requestID: 4
                        ), RelayProtocol.RequestError.badRequest
                    ),
                ]
                // A C2CReadReceipt names its reader and no receiver: a batch with one cannot be routed
                // (before, it was answered with success and the c2c receipts were dropped), alone or
                // beside a receipt that could be.
                let c2c = C2CReadReceipt.with {
                    $0.userID = "bob"; $0.readTimeMs = RelayProtocol.nowMs()
                }
                guard case .receipt(let valid)? = Frame.readReceipt(for: hers.reference, by: "bob").payload else {
                    Issue.record("no receipt")
                    return
                }
                let c2cRefusals = [
                    ReceiptBatch.with { $0.c2cReadReceipts = [c2c] },
                    ReceiptBatch.with {
                        $0.receipts = [valid]; $0.c2cReadReceipts = [c2c]
                    },
                ].map { (RelayProtocol.answer(.receipts($0), requestID: 0), RelayProtocol.RequestError.badRequest) }
                for (number, (frame, code)) in (refusals + c2cRefusals).enumerated() {
                    let id = UInt64(number + 1)
                    var frame = frame
                    frame.requestID = id
                    #expect(try await bob.ask(frame) != nil)
                    #expect(bob.collector.result(of: id)?.errorCode == code, "refusal \(number + 1)")
                }
                #expect(try await bob.ask(receipt(hers.reference, reader: "bob", 15)) != nil)
                #expect(bob.collector.result(of: 15)?.errorCode == 0)
                #expect(await eventually { kinds(alice, .receipt) == 1 })
                try await carol.roundTrip(16)
                try await dave.roundTrip(17)
                try await alice.roundTrip(18)
                #expect(kinds(alice, .receipt) == 1 && kinds(alice, .receipts) == 0)
                #expect(kinds(carol, .receipt) + kinds(carol, .receipts) == 0)
                #expect(kinds(dave, .receipt) + kinds(dave, .receipts) == 0)
                for client in [alice, bob, carol, dave] { await client.close() }
            }
        }
    }

    /// An event speaks for its sender only, as a message's `sender_id` does: a reaction, a recall,
    /// a typing event or a call signal that names another user as who did it is refused (3003, or an
    /// error notice when it carries no request id) and reaches no one. A typing event (not kept)
    /// reaches alice without the stream position bob wrote into it.
    @Test func anEventInAnotherUsersNameIsRefused() async throws {
        try await withClientGroup { group in
            try await withRelay({ $0.groups = ["team": ["alice", "bob"]] }) { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group)
                let bob = try await TestClient.connect(to: server, as: "bob", group: group)
                let hers = try await sent(alice, to: bob, "hers", id: "a-1")
                var asAlice = react(hers, by: "alice", requestID: 1)
                #expect(try await bob.ask(asAlice) != nil)
                #expect(bob.collector.result(of: 1)?.errorCode == RelayProtocol.RequestError.badRequest)
                var recall = Frame.recall(hers.reference, by: "carol")
                recall.requestID = 2
                #expect(try await alice.ask(recall) != nil)
                #expect(alice.collector.result(of: 2)?.errorCode == RelayProtocol.RequestError.badRequest)
                let typing = Frame(
                    .typing(
                        TypingEvent.with {
                            $0.conversation = .group("team"); $0.userID = "alice"; $0.state = .started
                        }
                    )
                )
                try await bob.send(typing)
                #expect(await eventually { bob.collector.notices.contains { $0.params["code"] == "badRequest" } })
                let call = RelayProtocol.answer(
                    .call(
                        CallEvent.with {
                            $0.callID = "c-1"; $0.conversation = .group("team"); $0.userID = "alice"
                            $0.signal = .accept
                        }
                    ),
                    requestID: 5
                )
                #expect(try await bob.ask(call) != nil)
                #expect(bob.collector.result(of: 5)?.errorCode == RelayProtocol.RequestError.badRequest)
                // A frame that is not kept reaches its receivers without the position its sender wrote.
                var ownTyping = Frame(
                    .typing(
                        TypingEvent.with {
                            $0.conversation = .group("team"); $0.userID = "bob"; $0.state = .started
                        }
                    )
                )
                ownTyping.streamPosition = 1 << 62
                try await bob.send(ownTyping)
                #expect(await eventually { kinds(alice, .typing) == 1 })
                #expect(alice.collector.frames.last { $0.payload?.kind == .typing }?.streamPosition == 0)
                // In their own names they pass.
                asAlice = react(hers, by: "bob", requestID: 3)
                #expect(try await bob.ask(asAlice) != nil)
                #expect(bob.collector.result(of: 3)?.errorCode == 0)
                try await alice.roundTrip(4)
                #expect(kinds(alice, .reaction) == 1 && kinds(alice, .typing) == 1 && kinds(bob, .recall) == 0)
                #expect(kinds(alice, .call) == 0)
                await alice.close()
                await bob.close()
            }
        }
    }

    /// Typing events and status updates are kept by no one and written to every online member or
    /// subscriber, so each user has a budget of them (`--live-update-rate`, here 2 a second in
    /// bursts of 8; Router+RateLimits.swift): past it typing is dropped and a status update refused
    /// (3014), until the relay's clock gives it more. Before, one client sending them as fast as it
    /// could had the relay write as many frames to every member, until their buffers overflowed
    /// and the relay closed them as slow consumers. The budget is the user's: another device, or a
    /// new connection, gets nothing more. A relay with the rate 0 bounds nothing.
    @Test func typingAndStatusUpdatesPastAUsersBudgetAreDroppedOrRefused() async throws {
        let clock = FrozenClock()
        func typing() -> Frame {
            Frame(
                .typing(
                    TypingEvent.with {
                        $0.conversation = .group("team"); $0.state = .started
                    }
                )
            )
        }
        func presences(_ client: TestClient) -> Int {
            client.collector.frames.filter {
                if case .presence(let update)? = $0.payload {
                    update.userID == "alice" && update.status == .away
                } else {
                    false
                }
            }.count
        }
        try await withClientGroup { group in
            try await withRelay({
                $0.groups = ["team": ["alice", "bob"]]; $0.liveUpdateRate = 2; $0.silenceClock = clock.now
            }) { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group, deviceID: "a")
                let bob = try await TestClient.connect(to: server, as: "bob", group: group)
                let watch = PresenceSubscription.with {
                    $0.action = .subscribe; $0.userIDs = ["alice"]
                }
                #expect(try await RelayUserStateTests.ask(bob, .presenceSubscription(watch), id: 1) != nil)
                // Twelve typing events at one instant: the first 8 reach bob.
                for _ in 0..<12 { try await alice.send(typing()) }
                try await alice.roundTrip(2)
                try await bob.roundTrip(3)
                #expect(kinds(bob, .typing) == 8)
                // The budget is spent: a status update is refused (a notice without a request id) and
                // reaches no one; so is one from her other device.
                #expect(
                    try await alice.ask(Self.away(4))?.requestResult?.errorCode
                        == RelayProtocol.RequestError.tooFrequent
                )
                try await alice.send(Frame(.presence(PresenceUpdate.with { $0.status = .away })))
                #expect(await eventually { alice.collector.notices.contains { $0.params["code"] == "tooFrequent" } })
                let phone = try await TestClient.connect(to: server, as: "alice", group: group, deviceID: "p")
                #expect(
                    try await phone.ask(Self.away(5))?.requestResult?.errorCode
                        == RelayProtocol.RequestError.tooFrequent
                )
                try await phone.send(typing())
                // A second later: two more, a status update and a typing event; the third is dropped.
                clock.advance(by: 1_000)
                #expect(try await alice.ask(Self.away(6))?.requestResult?.errorCode == 0)
                try await phone.send(typing())
                try await alice.send(typing())
                try await alice.roundTrip(7)
                try await phone.roundTrip(8)
                try await bob.roundTrip(9)
                #expect(kinds(bob, .typing) == 9)
                #expect(presences(bob) == 1)
                // The sweep forgets a budget only once it is full again (4 s later), as if unused.
                let kept = try await server.withRouter { router in
                    router.forgetFullBudgets()
                    return router.liveUpdateBudgets.keys.sorted()
                }.get()
                #expect(kept == ["alice"])
                clock.advance(by: 4_000)
                let left = try await server.withRouter { router in
                    router.forgetFullBudgets()
                    return router.liveUpdateBudgets.keys.count
                }.get()
                #expect(left == 0)
                for client in [alice, bob, phone] { await client.close() }
            }
            // With the rate 0 nothing is bounded.
            try await withRelay({
                $0.groups = ["team": ["alice", "bob"]]; $0.liveUpdateRate = 0
            }) { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group)
                let bob = try await TestClient.connect(to: server, as: "bob", group: group)
                for _ in 0..<50 { try await alice.send(typing()) }
                #expect(try await alice.ask(Self.away(1))?.requestResult?.errorCode == 0)
                try await bob.roundTrip(2)
                #expect(kinds(bob, .typing) == 50)
                for client in [alice, bob] { await client.close() }
            }
        }
    }

    /// Each message, kept event, join and system notice costs its sender the users it reaches, from
    /// a budget per user (`--fan-out-rate`, here 10 a second in bursts of 50): past it a message is
    /// refused with 1012 and the rest with 3014, nothing kept or sent, until the relay's clock gives
    /// more. A message to a group larger than the burst goes when the budget is full, and its sender
    /// then waits its cost. Before, one client could have the relay keep a row and write a frame per
    /// member for every frame it sent (a message, a join and leave in a loop), as fast as it sent.
    /// Other users' budgets are their own.
    @Test func whatAUserSendsCostsItTheUsersItReaches() async throws {
        let clock = FrozenClock()
        let big = ["alice", "bob"] + (0..<18).map { "user_\($0)" }
        let huge = ["alice"] + (0..<59).map { "member_\($0)" }
        try await withClientGroup { group in
            try await withRelay({
                $0.groups = ["big": Set(big), "huge": Set(huge)]; $0.fanOutRate = 10; $0.silenceClock = clock.now
            }) { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group)
                let bob = try await TestClient.connect(to: server, as: "bob", group: group)
                var id: UInt64 = 0
                func send(_ message: Message, from client: TestClient = alice) async throws -> Int32? {
                    id += 1
                    return try await client.ask(RelayProtocol.answer(.message(message), requestID: id))?.sendAck?
                        .errorCode
                }
                func toBig(_ text: String) -> Message {
                    var message = Message.groupText(from: "alice", group: "big", text, clientMsgID: text)
                    message.flags = MessageFlags.supportExtension.rawValue
                    return message
                }
                func notice(_ requestID: UInt64) -> Frame {
                    let notice = SystemNotice.with {
                        $0.type = "hello"; $0.recipientID = "bob"
                    }
                    return RelayProtocol.answer(.systemNotice(notice), requestID: requestID)
                }
                func code(_ frame: Frame) async throws -> Int32? {
                    try await alice.ask(frame)?.requestResult?.errorCode
                }
                let tooFrequent = RelayProtocol.AckError.tooFrequent
                let tooFrequentRequest = RelayProtocol.RequestError.tooFrequent
                // 20 members each: two messages (50, 30, 10 left), the third is refused.
                #expect(try await send(toBig("b-1")) == 0)
                #expect(try await send(toBig("b-2")) == 0)
                #expect(try await send(toBig("b-3")) == tooFrequent)
                // A one-to-one message costs 2 (8 left); a reaction or an extension update in the
                // group 20: refused; a notice to bob 1 (7 left).
                #expect(try await send(Message.c2cText(from: "alice", to: "bob", "hi", clientMsgID: "d-1")) == 0)
                let first = try #require(bob.collector.messages.first { $0.clientMsgID == "b-1" })
                #expect(try await code(react(first, by: "alice", requestID: 100)) == tooFrequentRequest)
                let keys = ExtensionUpdate.with {
                    $0.message = first.reference;
                    $0.set = [
                        .with {
                            $0.key = "k"; $0.value = "1"
                        }
                    ]
                }
                #expect(
                    try await code(RelayProtocol.answer(.extensionUpdate(keys), requestID: 101)) == tooFrequentRequest
                )
                #expect(try await code(notice(102)) == 0)
                // Bob's budget is his own.
                #expect(
                    try await send(Message.groupText(from: "bob", group: "big", "his", clientMsgID: "h-1"), from: bob)
                        == 0
                )
                // 1.3 s later: 20 left, the third message goes (0 left); a notice and a join of an
                // open group (1 user) are refused; 100 ms later the join goes.
                clock.advance(by: 1_300)
                #expect(try await send(toBig("b-3")) == 0)
                #expect(try await code(notice(103)) == tooFrequentRequest)
                let join = { (requestID: UInt64) in
                    RelayProtocol.membershipFrame(.join, group: "open", requestID: requestID)
                }
                #expect(try await code(join(104)) == tooFrequentRequest)
                clock.advance(by: 100)
                #expect(try await code(join(105)) == 0)
                // Full again (5 s later): a message to 60 members goes, and leaves a debt of 10;
                // a one-to-one message waits until 1.2 s have paid it and its cost.
                clock.advance(by: 5_000)
                #expect(try await send(Message.groupText(from: "alice", group: "huge", "all", clientMsgID: "u-1")) == 0)
                #expect(
                    try await send(Message.c2cText(from: "alice", to: "bob", "wait", clientMsgID: "d-2")) == tooFrequent
                )
                clock.advance(by: 1_100)
                #expect(
                    try await send(Message.c2cText(from: "alice", to: "bob", "wait", clientMsgID: "d-2")) == tooFrequent
                )
                clock.advance(by: 100)
                #expect(try await send(Message.c2cText(from: "alice", to: "bob", "wait", clientMsgID: "d-2")) == 0)
                // Bob got what was accepted, once each, and nothing refused.
                try await bob.roundTrip(200)
                let got = bob.collector.messages.filter { $0.senderID == "alice" }.map(\.clientMsgID)
                #expect(got == ["b-1", "b-2", "d-1", "b-3", "d-2"])
                #expect(kinds(bob, .reaction) == 0 && kinds(bob, .extensionUpdate) == 0)
                #expect(bob.collector.notices.filter { $0.type == "hello" }.count == 1)
                for client in [alice, bob] { await client.close() }
            }
            // The largest rates configured in process count as the largest `serve` takes: nothing
            // overflows, a message and a status update go.
            try await withRelay({
                $0.fanOutRate = .max; $0.liveUpdateRate = .max
            }) { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group)
                let message = Message.c2cText(from: "alice", to: "bob", "max", clientMsgID: "m-1")
                #expect(
                    try await alice.ask(RelayProtocol.answer(.message(message), requestID: 1))?.sendAck?.errorCode == 0
                )
                #expect(try await alice.ask(Self.away(2))?.requestResult?.errorCode == 0)
                await alice.close()
            }
        }
    }

    /// A kept event costs its sender the users it reaches once its checks passed: one refused for
    /// what it names (a recall of another user's message) costs nothing, and one about a targeted
    /// message costs that message's audience, not the group. Before, each was charged the group's
    /// members before its checks ran, so refused events used up the budget its messages needed.
    @Test func anEventCostsTheUsersItReachesOnceItsChecksPass() async throws {
        let clock = FrozenClock()
        let big = ["alice", "bob"] + (0..<18).map { "user_\($0)" }
        try await withClientGroup { group in
            try await withRelay({
                $0.groups = ["big": Set(big)]; $0.fanOutRate = 10; $0.silenceClock = clock.now
            }) { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group)
                let bob = try await TestClient.connect(to: server, as: "bob", group: group)
                var id: UInt64 = 0
                func ask(_ payload: Frame.Payload, from client: TestClient = alice) async throws -> Frame? {
                    id += 1
                    return try await client.ask(RelayProtocol.answer(payload, requestID: id))
                }
                // Bob's message costs him 20; alice's 20 of her 50 (30 left).
                #expect(
                    try await ask(
                        .message(Message.groupText(from: "bob", group: "big", "his", clientMsgID: "h-1")),
                        from: bob
                    )?
                    .sendAck?.errorCode == 0
                )
                #expect(
                    try await ask(.message(Message.groupText(from: "alice", group: "big", "b-1", clientMsgID: "b-1")))?
                        .sendAck?.errorCode == 0
                )
                // Three recalls of bob's message are refused as not hers, and cost nothing.
                #expect(await eventually { alice.collector.messages.contains { $0.clientMsgID == "h-1" } })
                let his = try #require(alice.collector.messages.first { $0.clientMsgID == "h-1" })
                for _ in 0..<3 {
                    let recall = RecallEvent.with {
                        $0.message = his.reference; $0.revokerID = "alice"
                    }
                    #expect(
                        try await ask(.recall(recall))?.requestResult?.errorCode
                            == RelayProtocol.RequestError.notTheSender
                    )
                }
                // Nor do reactions refused for what they say (no action), checked by applying them.
                for requestID: UInt64 in 50..<53 {
                    var frame = react(his, by: "alice", requestID: requestID)
                    if case .reaction(var reaction)? = frame.payload {
                        reaction.action = .unspecified
                        frame.payload = .reaction(reaction)
                    }
                    #expect(
                        try await alice.ask(frame)?.requestResult?.errorCode == RelayProtocol.RequestError.badRequest
                    )
                }
                // A message to bob alone costs 2 (28 left), a reaction to it 2 more (26 left).
                var targeted = Message.groupText(from: "alice", group: "big", "for bob", clientMsgID: "t-1")
                targeted.targetReceivers = ["bob"]
                #expect(try await ask(.message(targeted))?.sendAck?.errorCode == 0)
                #expect(await eventually { bob.collector.messages.contains { $0.clientMsgID == "t-1" } })
                let forBob = try #require(bob.collector.messages.first { $0.clientMsgID == "t-1" })
                #expect(try await alice.ask(react(forBob, by: "alice", requestID: 100))?.requestResult?.errorCode == 0)
                // So a message to the group still goes (6 left), and the next one is refused.
                #expect(
                    try await ask(.message(Message.groupText(from: "alice", group: "big", "b-2", clientMsgID: "b-2")))?
                        .sendAck?.errorCode == 0
                )
                #expect(
                    try await ask(.message(Message.groupText(from: "alice", group: "big", "b-3", clientMsgID: "b-3")))?
                        .sendAck?.errorCode == RelayProtocol.AckError.tooFrequent
                )
                // Bob's copy of his message stands; he got the reaction.
                try await bob.roundTrip(200)
                #expect(kinds(bob, .recall) == 0 && kinds(bob, .reaction) == 1)
                for client in [alice, bob] { await client.close() }
            }
        }
    }

    /// What one user sends one other user comes from a budget per sender and receiver
    /// (`--peer-rate`, here 2 a second in bursts of 10): one-to-one messages, kept one-to-one events
    /// and notices. Past it a message is refused with 1012 and the rest with 3014, nothing kept,
    /// sent, or taken from the sender's fan-out budget; the sender's frames to others, the
    /// receiver's to the sender and group messages have their own budgets. Before, the fan-out
    /// budget alone let one user send another 10,000 messages a second.
    @Test func whatAUserSendsOnePeerComesFromABudgetPerPeer() async throws {
        let clock = FrozenClock()
        try await withClientGroup { group in
            try await withRelay({
                $0.groups = ["team": ["alice", "bob", "carol"]]; $0.peerRate = 2; $0.fanOutRate = 6
                $0.silenceClock = clock.now
            }) { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group)
                let bob = try await TestClient.connect(to: server, as: "bob", group: group)
                var id: UInt64 = 0
                func ask(_ payload: Frame.Payload, from client: TestClient = alice) async throws -> Frame? {
                    id += 1
                    return try await client.ask(RelayProtocol.answer(payload, requestID: id))
                }
                func send(_ to: String, from: String = "alice", by client: TestClient? = nil) async throws -> SendAck? {
                    let text = Message.c2cText(from: from, to: to, "hi", clientMsgID: "\(from)-\(id + 1)")
                    return try await ask(.message(text), from: client ?? alice)?.sendAck
                }
                func notice(to recipient: String) -> Frame.Payload {
                    .systemNotice(
                        SystemNotice.with {
                            $0.type = "hello"; $0.recipientID = recipient
                        }
                    )
                }
                // Ten messages to bob (20 of alice's fan-out of 30); the next ones, a notice and a
                // kept event to him are refused, and cost none of her fan-out.
                for _ in 0..<10 { #expect(try await send("bob")?.errorCode == 0) }
                let refused = try #require(try await send("bob"))
                #expect(refused.errorCode == RelayProtocol.AckError.tooFrequent)
                #expect(refused.errorDescription.contains("--peer-rate"))
                for _ in 0..<4 { #expect(try await send("bob")?.errorCode == RelayProtocol.AckError.tooFrequent) }
                #expect(
                    try await ask(notice(to: "bob"))?.requestResult?.errorCode == RelayProtocol.RequestError.tooFrequent
                )
                #expect(await eventually { bob.collector.messages.count == 10 })
                let first = try #require(bob.collector.messages.first)
                #expect(
                    try await alice.ask(react(first, by: "alice", requestID: 900))?.requestResult?.errorCode
                        == RelayProtocol.RequestError.tooFrequent
                )
                // A recall past the budget removes nothing: the message stays as it was.
                var recall = Frame.recall(first.reference, by: "alice")
                recall.requestID = 902
                #expect(try await alice.ask(recall)?.requestResult?.errorCode == RelayProtocol.RequestError.tooFrequent)
                #expect(
                    try await server.withRouter { $0.conversations[.direct("alice", "bob")]?.removed.isEmpty }.get()
                        == true
                )
                // Bob's frames to alice and alice's to carol have budgets of their own: the last 10
                // units of her fan-out go to carol (a notice, 1; four messages, 8), then it is spent.
                #expect(try await send("alice", from: "bob", by: bob)?.errorCode == 0)
                #expect(try await ask(notice(to: "carol"))?.requestResult?.errorCode == 0)
                for _ in 0..<4 { #expect(try await send("carol")?.errorCode == 0) }
                #expect(try await send("carol")?.errorDescription.contains("--fan-out-rate") == true)
                // Half a second gives one frame to bob (and 3 units of fan-out); then the peer
                // budget refuses again.
                clock.advance(by: 500)
                #expect(try await send("bob")?.errorCode == 0)
                #expect(try await send("bob")?.errorDescription.contains("--peer-rate") == true)
                try await bob.roundTrip(901)
                #expect(bob.collector.messages.filter { $0.senderID == "alice" }.count == 11)
                #expect(bob.collector.notices.filter { $0.type == "hello" }.isEmpty)
                #expect(kinds(bob, .reaction) == 0 && kinds(bob, .recall) == 0)
                for client in [alice, bob] { await client.close() }
            }
        }
    }

    /// A status update (`presence`, away) asked with `id`.
    private static func away(_ id: UInt64) -> Frame {
        RelayProtocol.answer(.presence(PresenceUpdate.with { $0.status = .away }), requestID: id)
    }
}
#endif
