#if Tools
import Foundation
import IMCodec
import IMCodecNIO
import NIOCore
import NIOPosix
import Testing

@testable import imcodec_relay

/// Read receipts as the relay counts them (Tencent's message read receipts: `needReadReceipt`,
/// `getMessageReadReceipts`, `getGroupMessageReadMemberList`).
@Suite("Relay: read receipts", .timeLimit(.minutes(2)))
struct RelayReceiptTests {
    /// A read receipt with everything a client could forge set.
    static func read(_ message: MessageRef, id: UInt64) -> Frame {
        RelayProtocol.answer(
            .receipt(
                MessageReceipt.with {
                    $0.kind = .read; $0.message = message; $0.timeMs = 1
                    $0.groupID = "elsewhere"; $0.readCount = 99; $0.unreadCount = 0; $0.isPeerRead = true
                    $0.deviceID = "forged"
                }
            ),
            requestID: id
        )
    }

    /// The receipts forwarded to `client`, as `user@device group read/unread [peer read]`.
    static func received(_ client: TestClient) -> [String] {
        // Forwarded ones (request id 0), not the answers to the client's pulls.
        client.collector.frames.filter { $0.requestID == 0 }.flatMap { frame -> [String] in
            switch frame.payload {
            case .receipt(let receipt)?: [describe(receipt)]
            case .receipts(let batch)?: batch.receipts.map(describe)
            default: []
            }
        }
    }

    static func describe(_ receipt: MessageReceipt) -> String {
        "\(receipt.userID)@\(receipt.deviceID) \(receipt.groupID) \(receipt.readCount)/\(receipt.unreadCount)"
            + (receipt.isPeerRead ? " peer read" : "")
    }

    /// `client`'s pull of the receipts of `messages`, described, or its error code.
    static func pull(_ client: TestClient, _ messages: [MessageRef], id: UInt64) async throws -> [String] {
        let answer = try await client.ask(
            RelayProtocol.answer(.readReceiptRequest(ReadReceiptRequest.with { $0.messages = messages }), requestID: id)
        )
        switch answer?.payload {
        case .receipts(let batch)?:
            return batch.receipts.map { "\($0.message?.seq ?? 0): " + describe($0) }
        case .requestResult(let result)?:
            return ["error \(result.errorCode)"]
        default:
            return ["no answer"]
        }
    }

    /// One page of the members who read (or did not read) `message`: `members | next_seq finished`.
    static func members(
        _ client: TestClient,
        _ message: MessageRef,
        _ filter: ReadMembersFilter,
        from next: UInt64 = 0,
        count: UInt32 = 0,
        id: UInt64
    ) async throws -> String {
        let request = GroupReadMembersRequest.with {
            $0.message = message; $0.filter = filter; $0.nextSeq = next; $0.count = count
        }
        let answer = try await client.ask(RelayProtocol.answer(.groupReadMembersRequest(request), requestID: id))
        switch answer?.payload {
        case .groupReadMembers(let page)?:
            #expect(page.members.map(\.userID) == page.memberIDs)
            return page.memberIDs.joined(separator: ",") + " | \(page.nextSeq)" + (page.finished ? " finished" : "")
        case .requestResult(let result)?:
            return "error \(result.errorCode)"
        default:
            return "no answer"
        }
    }

    static func flagged(_ message: Message) -> Frame {
        var message = message
        message.messageFlags = [.needReadReceipt]
        return Frame(message)
    }

    /// A page of read members fits the frame size limit: with long user ids a page ends early (not
    /// finished, `next_seq` where the next starts), and the pages together name every member once.
    @Test func readMemberPagesFitTheFrameSizeLimit() async throws {
        let members = (1...40).map { "member-\($0)-" + String(repeating: "x", count: 60) }
        try await withClientGroup { group in
            try await withRelay({
                $0.codec = FrameCodecOptions(maxFrameSize: 2048)
                $0.groups = ["big": Set(["alice"] + members)]
            }) { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group)
                try await alice.send(
                    Self.flagged(Message.groupText(from: "alice", group: "big", "all?", clientMsgID: "b-1"))
                )
                #expect(await eventually { alice.collector.acks.count == 1 })
                let message = MessageRef.with {
                    $0.conversation = .group("big"); $0.seq = 1
                }
                var listed: [String] = []
                var next: UInt64 = 0
                var pages = 0
                repeat {
                    let request = GroupReadMembersRequest.with {
                        $0.message = message; $0.filter = .unread; $0.nextSeq = next
                    }
                    let answer = try await alice.ask(
                        RelayProtocol.answer(.groupReadMembersRequest(request), requestID: 10 + UInt64(pages))
                    )
                    guard case .groupReadMembers(let page)? = answer?.payload else {
                        Issue.record("no page")
                        break
                    }
                    #expect((answer?.serializedBytes().count ?? 0) <= 2048)
                    #expect(!page.memberIDs.isEmpty)
                    listed += page.memberIDs
                    pages += 1
                    if page.finished { break }
                    #expect(page.nextSeq == UInt64(listed.count))
                    next = page.nextSeq
                } while pages < 40
                #expect(pages > 1)
                #expect(listed == members.sorted())
                await alice.close()
            }
        }
    }

    /// Before, `next_seq` was an offset into the unread list, which shrinks as members read: a
    /// member who read between two pages moved the others forward, and the next page skipped one.
    /// Now it is a position among all receivers by user id: the next page goes on where the last
    /// ended, whoever read in between. The read list grows at its end, so its pages go on too.
    @Test func readMemberPagesSkipNoOneWhoseReadComesBetweenPages() async throws {
        try await withClientGroup { group in
            try await withRelay({ $0.groups = ["crowd": ["alice", "m1", "m2", "m3", "m4"]] }) { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group, deviceID: "a")
                var readers: [String: TestClient] = [:]
                for name in ["m1", "m2", "m3", "m4"] {
                    readers[name] = try await TestClient.connect(to: server, as: name, group: group, deviceID: name)
                }
                try await alice.send(
                    Self.flagged(Message.groupText(from: "alice", group: "crowd", "all?", clientMsgID: "c-1"))
                )
                #expect(await eventually { readers.values.allSatisfy { $0.collector.messages.count == 1 } })
                let message = try #require(readers["m1"]?.collector.messages.first?.reference)
                #expect(try await Self.members(alice, message, .unread, count: 2, id: 1) == "m1,m2 | 2")
                // m1 and m3 read: the next unread page starts after m2 still, and m3 is not in it.
                #expect(try await readers["m1"]?.ask(Self.read(message, id: 2))?.requestResult?.errorCode == 0)
                #expect(try await readers["m3"]?.ask(Self.read(message, id: 3))?.requestResult?.errorCode == 0)
                #expect(try await Self.members(alice, message, .unread, from: 2, count: 2, id: 4) == "m4 | 0 finished")
                // Read pages: m1, m3 in the order they read; m2 reads after the first page.
                #expect(try await Self.members(alice, message, .read, count: 1, id: 5) == "m1 | 1")
                #expect(try await readers["m2"]?.ask(Self.read(message, id: 6))?.requestResult?.errorCode == 0)
                #expect(try await Self.members(alice, message, .read, from: 1, count: 1, id: 7) == "m3 | 2")
                #expect(try await Self.members(alice, message, .read, from: 2, count: 1, id: 8) == "m2 | 0 finished")
                // A full page whose members are the last ones is finished, not followed by an empty one.
                #expect(try await Self.members(alice, message, .unread, count: 1, id: 9) == "m4 | 0 finished")
                await alice.close()
                for reader in readers.values { await reader.close() }
            }
        }
    }

    /// Before, a receipt reached the sender as the reader wrote it: any `read_count`, `unread_count`
    /// or `is_peer_read`, in any reader's name, and the pull requests were refused (3004). Now the
    /// relay counts who read each message sent with NEED_READ_RECEIPT (across a restart), fills
    /// every receipt's reader, device and counts itself, drops a second read of the same reader, and
    /// answers the sender's pulls: the receipts of its messages and the members who did or did not
    /// read one, in pages.
    @Test(arguments: StoreBackend.allCases)
    func theRelayCountsReadsAndAnswersTheSendersPulls(_ backend: StoreBackend) async throws {
        let database = try await TestStore(backend)
        defer { database.remove() }
        let configure: (inout RelayConfiguration) -> Void = {
            $0.store = database.location; $0.groups = ["team": ["alice", "bob", "carol", "dave"]]
        }
        try await withClientGroup { group in
            var flagged = MessageRef()
            var direct = MessageRef()
            var delivered = Frame()
            try await withRelay(configure) { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group, deviceID: "a")
                let bob = try await TestClient.connect(to: server, as: "bob", group: group, deviceID: "b")
                let carol = try await TestClient.connect(to: server, as: "carol", group: group, deviceID: "c")
                try await alice.send(
                    Self.flagged(Message.groupText(from: "alice", group: "team", "read?", clientMsgID: "g-1"))
                )
                try await alice.send(
                    Frame(Message.groupText(from: "alice", group: "team", "plain", clientMsgID: "g-2"))
                )
                try await alice.send(
                    Self.flagged(Message.c2cText(from: "alice", to: "bob", "seen?", clientMsgID: "d-1"))
                )
                try await alice.send(Frame(Message.c2cText(from: "alice", to: "bob", "later", clientMsgID: "d-2")))
                #expect(await eventually { bob.collector.messages.count == 4 && carol.collector.messages.count == 2 })
                flagged = bob.collector.messages[0].reference
                let plain = bob.collector.messages[1].reference
                direct = bob.collector.messages[2].reference
                let later = bob.collector.messages[3].reference

                // The relay's fields, whatever the reader wrote: 1 of 3 members read it.
                #expect(try await bob.ask(Self.read(flagged, id: 1))?.requestResult?.errorCode == 0)
                #expect(await eventually { Self.received(alice) == ["bob@b team 1/2"] })
                // The same read again is answered and sent to no one.
                #expect(try await bob.ask(Self.read(flagged, id: 2))?.requestResult?.errorCode == 0)
                #expect(try await carol.ask(Self.read(flagged, id: 3))?.requestResult?.errorCode == 0)
                #expect(await eventually { Self.received(alice) == ["bob@b team 1/2", "carol@c team 2/1"] })
                // A message sent without the flag is not counted: its receipts carry no counts.
                #expect(try await carol.ask(Self.read(plain, id: 4))?.requestResult?.errorCode == 0)
                #expect(await eventually { Self.received(alice).last == "carol@c team 0/0" })
                // One-to-one: whether the peer read it.
                #expect(try await bob.ask(Self.read(direct, id: 5))?.requestResult?.errorCode == 0)
                #expect(await eventually { Self.received(alice).last == "bob@b  0/0 peer read" })
                #expect(Self.received(alice).count == 4)

                // The sender pulls: counts for the flagged group message, none for the other; the
                // peer read the flagged one-to-one message (its receipt), not the later one yet.
                let pulled = try await Self.pull(alice, [flagged, plain, direct, later], id: 10)
                #expect(pulled == ["1: @ team 2/1", "2: @ team 0/0", "1: bob@  0/0 peer read", "2: bob@  0/0"])
                // A mark-read past the later message tells it too (bob's read horizon).
                let markRead = MarkReadEvent.with {
                    $0.conversation = .oneToOne("alice"); $0.userID = "bob"; $0.readSeq = later.seq
                }
                #expect(try await bob.ask(RelayProtocol.answer(.markRead(markRead), requestID: 11)) != nil)
                #expect(try await Self.pull(alice, [later], id: 12) == ["2: bob@  0/0 peer read"])
                // Only the sender pulls (3006); a message the relay does not keep is refused (3003).
                let notTheSender = RelayProtocol.RequestError.notTheSender
                #expect(try await Self.pull(bob, [flagged], id: 13) == ["error \(notTheSender)"])
                var unknown = flagged
                unknown.seq = 999; unknown.serverMsgUID = ""; unknown.clientMsgID = ""
                let bad = RelayProtocol.RequestError.badRequest
                #expect(try await Self.pull(alice, [unknown], id: 14) == ["error \(bad)"])

                // Who read it, in the order they read; who did not; in pages.
                #expect(try await Self.members(alice, flagged, .read, id: 20) == "bob,carol | 0 finished")
                #expect(try await Self.members(alice, flagged, .unread, id: 21) == "dave | 0 finished")
                #expect(try await Self.members(alice, flagged, .read, count: 1, id: 22) == "bob | 1")
                #expect(
                    try await Self.members(alice, flagged, .read, from: 1, count: 1, id: 23) == "carol | 0 finished"
                )
                #expect(try await Self.members(bob, flagged, .read, id: 24) == "error \(notTheSender)")
                #expect(try await Self.members(alice, plain, .read, id: 25) == "error \(bad)")
                // A delivery receipt whose answer is "lost": resent after the restart below.
                delivered = RelayProtocol.answer(
                    .receipt(
                        MessageReceipt.with {
                            $0.kind = .delivered; $0.message = plain; $0.timeMs = 2
                        }
                    ),
                    requestID: 26
                )
                #expect(try await bob.ask(delivered)?.requestResult?.errorCode == 0)
                #expect(await eventually { Self.received(alice).count == 5 })
                for client in [alice, bob, carol] { await client.close() }
            }

            try await withRelay(configure) { server in
                // The reads survive the restart; dave's makes it 3 of 3.
                let alice = try await TestClient.connect(to: server, as: "alice", group: group, deviceID: "a2")
                let dave = try await TestClient.connect(to: server, as: "dave", group: group, deviceID: "d")
                #expect(
                    try await Self.pull(alice, [flagged, direct], id: 30) == [
                        "1: @ team 2/1", "1: bob@  0/0 peer read",
                    ]
                )
                // Twice in one batch: counted once.
                var twice = Self.read(flagged, id: 31)
                if case .receipt(let receipt)? = twice.payload {
                    twice.payload = .receipts(ReceiptBatch.with { $0.receipts = [receipt, receipt] })
                }
                #expect(try await dave.ask(twice)?.requestResult?.errorCode == 0)
                #expect(await eventually { Self.received(alice) == ["dave@d team 3/0"] }, "\(Self.received(alice))")
                #expect(try await Self.members(alice, flagged, .unread, id: 32) == " | 0 finished")
                // The resend is found in the window the restart rebuilt from the relay's copy kept:
                // answered, not delivered again.
                let bob = try await TestClient.connect(to: server, as: "bob", group: group, deviceID: "b")
                #expect(try await bob.ask(delivered)?.requestResult?.errorCode == 0)
                try await bob.roundTrip(35)
                try await alice.roundTrip(36)
                #expect(Self.received(alice) == ["dave@d team 3/0"])
                await bob.close()
                // A recall forgets the reads: the message is no longer one the relay keeps.
                var recall = Frame.recall(flagged, by: "alice")
                recall.requestID = 33
                #expect(try await alice.ask(recall)?.requestResult?.errorCode == 0)
                let bad = RelayProtocol.RequestError.badRequest
                #expect(try await Self.pull(alice, [flagged], id: 34) == ["error \(bad)"])
                for client in [alice, dave] { await client.close() }
            }
            // The recall dropped the readers from the store, not only from the relay's memory; the
            // one-to-one message's readers stay.
            let state = try database.open().load()
            let team = try #require(flagged.conversation.flatMap { ConversationKey($0, user: "alice") })
            let pair = try #require(direct.conversation.flatMap { ConversationKey($0, user: "alice") })
            #expect(state.records[.readers(team, seq: flagged.seq)] == nil)
            #expect(state.records[.readers(pair, seq: direct.seq)] == [1])
            // One record per reader, with its place: the recall deleted the group message's three.
            #expect(
                !state.records.keys.contains {
                    if case .reader(let m, _) = $0 { m.conversation == team } else { false }
                }
            )
            let bobRead = state.records[.reader(MessageKey(conversation: pair, seq: direct.seq), user: "bob")]
            #expect(bobRead.flatMap { SeqListBytes.seqs($0[...]) } == [0])
        }
    }

    /// A read writes one record for its reader, with its place in the order they read, and leaves
    /// the message's own record as it was; a restart loads the readers in that order, after those
    /// of a record from an earlier relay that listed them all (whose messages keep counting). Before,
    /// each read rewrote the record of every reader: 500,500 names for one message that all 1,000
    /// members of a group read.
    @Test func eachReadWritesItsOwnRecordAndARestartKeepsTheOrder() async throws {
        let database = try await TestStore(.sqlite)
        defer { database.remove() }
        let configure: (inout RelayConfiguration) -> Void = {
            $0.store = database.location; $0.groups = ["team": ["alice", "bob", "carol", "dave", "erin"]]
        }
        let team = ConversationKey.group("team")
        try await withClientGroup { group in
            var flagged = MessageRef()
            try await withRelay(configure) { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group, deviceID: "a")
                let bob = try await TestClient.connect(to: server, as: "bob", group: group, deviceID: "b")
                try await alice.send(
                    Self.flagged(Message.groupText(from: "alice", group: "team", "read?", clientMsgID: "g-1"))
                )
                #expect(await eventually { bob.collector.messages.count == 1 })
                flagged = bob.collector.messages[0].reference
                #expect(try await bob.ask(Self.read(flagged, id: 1))?.requestResult?.errorCode == 0)
                for client in [alice, bob] { await client.close() }
            }
            // As an earlier relay kept it: one record listing bob and carol, and none per reader.
            let message = MessageKey(conversation: team, seq: flagged.seq)
            do {
                let store = try database.open()
                defer { store.close() }
                let records = try store.load().records
                #expect(records[.readers(team, seq: flagged.seq)] == [1])
                #expect(records[.reader(message, user: "bob")].flatMap { SeqListBytes.seqs($0[...]) } == [0])
                try store.commit(
                    StoreBatch(
                        records: [
                            .readers(team, seq: flagged.seq): legacy(["bob", "carol"]),
                            .reader(message, user: "bob"): [],
                        ]
                    )
                )
            }
            try await withRelay(configure) { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group, deviceID: "a")
                let dave = try await TestClient.connect(to: server, as: "dave", group: group, deviceID: "d")
                let erin = try await TestClient.connect(to: server, as: "erin", group: group, deviceID: "e")
                #expect(try await Self.pull(alice, [flagged], id: 2) == ["1: @ team 2/2"])
                #expect(try await dave.ask(Self.read(flagged, id: 3))?.requestResult?.errorCode == 0)
                #expect(try await erin.ask(Self.read(flagged, id: 4))?.requestResult?.errorCode == 0)
                #expect(try await Self.members(alice, flagged, .read, id: 5) == "bob,carol,dave,erin | 0 finished")
                for client in [alice, dave, erin] { await client.close() }
            }
            let store = try database.open()
            defer { store.close() }
            let records = try store.load().records
            #expect(records[.readers(team, seq: flagged.seq)] == legacy(["bob", "carol"]))
            #expect(records[.reader(message, user: "dave")].flatMap { SeqListBytes.seqs($0[...]) } == [2])
            #expect(records[.reader(message, user: "erin")].flatMap { SeqListBytes.seqs($0[...]) } == [3])
            try await withRelay(configure) { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group, deviceID: "a")
                #expect(try await Self.members(alice, flagged, .read, id: 6) == "bob,carol,dave,erin | 0 finished")
                #expect(try await Self.pull(alice, [flagged], id: 7) == ["1: @ team 4/0"])
                await alice.close()
            }
        }
    }

    /// A readers record as relays before per-reader records kept it.
    private func legacy(_ readers: [String]) -> [UInt8] {
        var bytes: [UInt8] = [1]
        StringListBytes.append(readers, to: &bytes)
        return bytes
    }

    /// A receipt batch costs its reader's fan-out budget (`--fan-out-rate`, here 10 a second in
    /// bursts of 50) the senders it reaches and the reader: one batch may name a message of each
    /// member of a group, each of whom keeps a row. Past the budget a batch is refused whole (3014)
    /// and nothing is kept or sent. Before, one client could have the relay keep a row in every
    /// member's stream per batch, as fast as it sent them.
    @Test func aReceiptBatchCostsItsReaderTheSendersItReaches() async throws {
        let clock = FrozenClock()
        let members = (0..<30).map { "member_\($0)" }
        func batch(from first: UInt64, id: UInt64) -> Frame {
            let receipts = members.enumerated().map { index, member in
                MessageReceipt.with {
                    $0.kind = .read; $0.timeMs = 1
                    $0.message = MessageRef.with {
                        $0.conversation = .group("big"); $0.senderID = member; $0.seq = first + UInt64(index)
                    }
                }
            }
            return RelayProtocol.answer(.receipts(ReceiptBatch.with { $0.receipts = receipts }), requestID: id)
        }
        try await withClientGroup { group in
            try await withRelay({
                $0.groups = ["big": Set(["alice"] + members)]; $0.fanOutRate = 10; $0.silenceClock = clock.now
            }) { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group)
                let member = try await TestClient.connect(to: server, as: "member_0", group: group)
                // 31 users (50, 19 left): the first goes; the second is refused whole.
                #expect(try await alice.ask(batch(from: 1_000, id: 1))?.requestResult?.errorCode == 0)
                let second = try await alice.ask(batch(from: 2_000, id: 2))
                #expect(second?.requestResult?.errorCode == RelayProtocol.RequestError.tooFrequent)
                // 1.2 s later, 31 left: it goes.
                clock.advance(by: 1_200)
                #expect(try await alice.ask(batch(from: 2_000, id: 3))?.requestResult?.errorCode == 0)
                try await member.roundTrip(4)
                let seqs = member.collector.frames.filter { $0.requestID == 0 }.compactMap { frame -> UInt64? in
                    if case .receipts(let batch)? = frame.payload { batch.receipts.first?.message?.seq } else { nil }
                }
                #expect(seqs == [1_000, 2_000])
                for client in [alice, member] { await client.close() }
            }
        }
    }

    /// A group message's counts are counted once and kept until its audience changes: a member
    /// who joins after it is not one of its receivers, one who leaves or clears it no longer is, and
    /// the counts after each change say so (a count kept across the change would not). A receipt the
    /// batch holds twice is served once, and a batch names at most 100 messages (each may cost a walk
    /// of its group's members).
    @Test func readCountsFollowTheGroupsMembersAndABatchIsBounded() async throws {
        let team = ConversationKey.group("team")
        try await withClientGroup { group in
            try await withRelay({ _ in }) { server in
                var clients: [String: TestClient] = [:]
                for name in ["alice", "bob", "carol", "dave"] {
                    let client = try await TestClient.connect(to: server, as: name, group: group, deviceID: name)
                    let joined = try await client.ask(
                        RelayProtocol.membershipFrame(.join, .group("team"), requestID: 1)
                    )
                    #expect(joined?.requestResult?.errorCode == 0)
                    clients[name] = client
                }
                let (alice, bob, carol, dave) = (
                    clients["alice"]!, clients["bob"]!, clients["carol"]!, clients["dave"]!
                )
                try await alice.send(
                    Self.flagged(Message.groupText(from: "alice", group: "team", "read?", clientMsgID: "r"))
                )
                #expect(await eventually { dave.collector.messages.count == 1 })
                let message = dave.collector.messages[0].reference
                func counts() async throws -> ReadCounts? {
                    try await server.withRouter { $0.messageReaders[team]?[message.seq]?.counts }.get()
                }

                // Counted once (3 receivers), then one more reader on the counts kept.
                #expect(try await bob.ask(Self.read(message, id: 2))?.requestResult?.errorCode == 0)
                #expect(try await counts().map { [$0.read, $0.receivers] } == [1, 3])
                // Carol leaves: dave's read makes it 2 of 2 (bob, dave).
                #expect(try await carol.ask(RelayProtocol.membershipFrame(.leave, .group("team"), requestID: 3)) != nil)
                #expect(try await dave.ask(Self.read(message, id: 4))?.requestResult?.errorCode == 0)
                #expect(await eventually { Self.received(alice) == ["bob@bob team 1/2", "dave@dave team 2/0"] })
                // Erin joins after the message: not one of its receivers.
                let erin = try await TestClient.connect(to: server, as: "erin", group: group, deviceID: "erin")
                #expect(try await erin.ask(RelayProtocol.membershipFrame(.join, .group("team"), requestID: 5)) != nil)
                #expect(try await Self.pull(alice, [message], id: 6) == ["\(message.seq): @ team 2/0"])
                // Bob clears it: of its receivers only dave is left, who read it.
                let clear = ConversationUpdate.with {
                    $0.conversation = .group("team"); $0.fields = UInt32(ConversationField.clearedSeq.rawValue)
                    $0.clearedSeq = message.seq
                }
                #expect(
                    try await bob.ask(RelayProtocol.answer(.conversationUpdate(clear), requestID: 61))?.requestResult?
                        .errorCode == 0
                )
                #expect(try await Self.pull(alice, [message], id: 7) == ["\(message.seq): @ team 1/0"])
                #expect(try await counts().map { [$0.read, $0.receivers] } == [1, 1])

                // The same delivery receipt twice in one batch: served once.
                let delivered = MessageReceipt.with {
                    $0.kind = .delivered; $0.message = message; $0.timeMs = 1
                }
                let twice = ReceiptBatch.with { $0.receipts = [delivered, delivered] }
                #expect(
                    try await dave.ask(RelayProtocol.answer(.receipts(twice), requestID: 8))?.requestResult?.errorCode
                        == 0
                )
                #expect(await eventually { Self.received(alice).count == 3 })
                try await alice.roundTrip(9)
                #expect(Self.received(alice).last == "dave@dave team 1/0")
                #expect(Self.received(alice).count == 3)
                // 101 messages in one batch are refused whole, before any is looked at; 100 are not
                // refused for their number.
                func batch(_ count: Int) -> ReceiptBatch {
                    ReceiptBatch.with {
                        $0.receipts = (0..<count).map { index in
                            var ref = message
                            ref.seq = message.seq + UInt64(index); ref.serverMsgUID = ""; ref.clientMsgID = ""
                            return MessageReceipt.with {
                                $0.kind = .delivered; $0.message = ref; $0.timeMs = 1
                            }
                        }
                    }
                }
                let tooMany = try await dave.ask(RelayProtocol.answer(.receipts(batch(101)), requestID: 10))
                #expect(tooMany?.requestResult?.errorCode == RelayProtocol.RequestError.badRequest)
                #expect(tooMany?.requestResult?.errorDescription.contains("at most 100 messages") == true)
                try await alice.roundTrip(12)
                #expect(Self.received(alice).count == 3, "nothing of the refused batch went out")
                let hundred = try await dave.ask(RelayProtocol.answer(.receipts(batch(100)), requestID: 11))
                #expect(hundred?.requestResult?.errorDescription.contains("at most 100 messages") == false)
                for client in [alice, bob, carol, dave, erin] { await client.close() }
            }
        }
    }
}
#endif
