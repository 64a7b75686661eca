#if Tools
import IMCodec
import IMCodecNIO
import IMCodecTestSupport
import NIOCore
import NIOPosix
import Testing

@testable import imcodec_relay

/// The relay's session layer (session.proto): login, kick, ping, logout, join and leave, presence,
/// max seq and sync, offline delivery, and the routing of the newer events.
@Suite("Relay session layer", .timeLimit(.minutes(2)))
struct RelaySessionTests {
    private func request(_ payload: Frame.Payload, _ requestID: UInt64) -> Frame {
        RelayProtocol.answer(payload, requestID: requestID)
    }

    private func syncResponse(_ frame: Frame?) -> SyncResponse? {
        if case .syncResponse(let r)? = frame?.payload { r } else { nil }
    }

    @Test func aMessageToAnOfflineUserIsStoredAndDeliveredBySyncAfterLogin() async throws {
        try await withClientGroup { group in
            try await withRelay({
                $0.groups = ["team": ["alice", "bob"]]
                // Any interval the login result says, long enough that no client here is closed as
                // silent (3 intervals) on a loaded machine: with 17 s, the only short deadline of
                // this test, a CI run beside a debug build saw "I/O on closed channel".
                $0.heartbeatIntervalS = 1_717
            }) { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group)
                for k in 1...3 {
                    try await alice.send(
                        Frame(Message.c2cText(from: "alice", to: "bob", "offline \(k)", clientMsgID: "o-\(k)"))
                    )
                }
                try await alice.send(
                    Frame(Message.groupText(from: "alice", group: "team", "to the team", clientMsgID: "g-1"))
                )
                #expect(await eventually { alice.collector.acks.count == 4 })
                #expect(alice.collector.acks.map(\.errorCode) == [0, 0, 0, 0])
                #expect(alice.collector.acks.map(\.seq) == [1, 2, 3, 1])

                let bob = try await TestClient.connect(
                    to: server,
                    as: "bob",
                    group: group,
                    deviceID: "bob-laptop",
                    lastSeen: [
                        ConversationSeq.with {
                            $0.conversation = .oneToOne("alice"); $0.seq = 0
                        }
                    ]
                )
                let login = try #require(bob.collector.loginResults.first)
                #expect(login.errorCode == 0 && !login.sessionID.isEmpty && login.heartbeatIntervalS == 1_717)
                #expect(login.serverTimeMs > 0)
                let maxSeqs = Dictionary(
                    uniqueKeysWithValues: login.maxSeqs.map {
                        ("\($0.conversation?.type == .group ? "#" : "")\($0.conversation?.targetID ?? "")", $0.seq)
                    }
                )
                #expect(maxSeqs == ["alice": 3, "#team": 1])
                // Nothing arrived live: it is all in the store.
                #expect(bob.collector.messages.isEmpty)

                let answer = try await bob.ask(RelayProtocol.syncFrame(.oneToOne("alice"), from: 1, requestID: 9))
                let sync = try #require(syncResponse(answer))
                #expect(sync.errorCode == 0 && !sync.hasMore && sync.maxSeq == 3 && sync.nextFromSeq == 4)
                #expect(sync.conversation == .oneToOne("alice"))
                #expect(sync.messages.map(\.seq) == [1, 2, 3])
                #expect(sync.messages.map { $0.firstText ?? "" } == ["offline 1", "offline 2", "offline 3"])
                // The stored message is the stamped one: the uid and time of the sender's ack.
                #expect(sync.messages.map(\.serverMsgUID) == alice.collector.acks.prefix(3).map(\.serverMsgUID))
                #expect(sync.messages.map(\.serverTimeMs) == alice.collector.acks.prefix(3).map(\.serverTimeMs))
                let team = try #require(
                    syncResponse(try await bob.ask(RelayProtocol.syncFrame(.group("team"), from: 1, requestID: 10)))
                )
                #expect(team.messages.map { $0.firstText ?? "" } == ["to the team"])
                await alice.close()
                await bob.close()
            }
        }
    }

    /// Resume, step by step: bob holds 1...50, drops, misses 51...300, logs in again with last_seen,
    /// syncs the gap in pages of 30 while 301...400 arrive live, and ends with 1...400 once, in order.
    /// (Alice sends 250 at once: more than `--peer-rate` lets one sender send one peer.)
    @Test func aClientThatDropsResumesWithEveryMessageOnceInOrder() async throws {
        try await withClientGroup { group in
            try await withRelay({ $0.peerRate = 0 }) { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group)
                func send(_ range: ClosedRange<Int>) {
                    for k in range {
                        alice.channel.write(
                            Frame(Message.c2cText(from: "alice", to: "bob", "m\(k)", clientMsgID: "a-\(k)")),
                            promise: nil
                        )
                    }
                    alice.channel.flush()
                }
                var tracker = ResumeTracker(user: "bob")
                var out: [Message] = []
                let bob = try await TestClient.connect(to: server, as: "bob", group: group)
                send(1...50)
                #expect(await eventually { bob.collector.messages.count == 50 })
                for message in bob.collector.messages { out += tracker.received(message) }
                await bob.close()
                #expect(await eventually { (try? server.stats().wait().usersOnline) == 1 })
                send(51...300)
                #expect(await eventually { alice.collector.acks.count == 300 })

                let lastSeen = tracker.lastSeen
                #expect(lastSeen.map(\.seq) == [50] && lastSeen.first?.conversation == .oneToOne("alice"))
                let again = try await TestClient.connect(to: server, as: "bob", group: group, lastSeen: lastSeen)
                let login = try #require(again.collector.loginResults.first)
                #expect(login.maxSeqs.map(\.seq) == [300])
                let requests = tracker.loggedIn(login, limit: 30)
                #expect(requests.map(\.fromSeq) == [51] && requests.map(\.toSeq) == [300])
                send(301...400)  // Live while the sync runs.
                var requestID: UInt64 = 100
                for request in requests {
                    requestID += 1
                    try await again.send(RelayProtocol.answer(.syncRequest(request), requestID: requestID))
                }
                var index = 0
                var pages = 0
                while out.count < 400 {
                    let more = await eventually { again.collector.frames.count > index }
                    guard more else { break }
                    let frame = again.collector.frames[index]
                    index += 1
                    switch frame.payload {
                    case .message(let message)?:
                        out += tracker.received(message)
                    case .syncResponse(let response)?:
                        pages += 1
                        let (messages, next) = tracker.synced(response, limit: 30)
                        out += messages
                        for request in next {
                            requestID += 1
                            try await again.send(RelayProtocol.answer(.syncRequest(request), requestID: requestID))
                        }
                    default:
                        break
                    }
                }
                #expect(out.map(\.seq) == (1...400).map { UInt64($0) })
                #expect(out.map { $0.firstText ?? "" } == (1...400).map { "m\($0)" })
                #expect(pages == 9, "250 messages in pages of 30")
                #expect(!tracker.isSyncing && tracker.delivered.values.first == 400)
                await alice.close()
                await again.close()
            }
        }
    }

    /// ResumeTracker alone: held live messages, duplicates, paging, and a relay that lost its store.
    @Test func theResumeTrackerHoldsLiveMessagesUntilTheSyncIsDone() {
        func message(_ seq: UInt64, from sender: String = "alice") -> Message {
            var message = Message.c2cText(from: sender, to: "bob", "m\(seq)", clientMsgID: "\(sender)-\(seq)")
            message.seq = seq
            return message
        }
        func seqs(_ messages: [Message]) -> [UInt64] { messages.map(\.seq) }
        var tracker = ResumeTracker(user: "bob")
        #expect(seqs(tracker.received(message(1))) == [1])
        #expect(seqs(tracker.received(message(1))).isEmpty, "a duplicate is dropped")
        let max = { (seq: UInt64) in
            LoginResult.with {
                $0.maxSeqs = [
                    ConversationSeq.with {
                        $0.conversation = .oneToOne("alice"); $0.seq = seq
                    }
                ]
            }
        }
        let requests = tracker.loggedIn(max(5), limit: 2)
        #expect(requests.map(\.fromSeq) == [2] && requests.map(\.toSeq) == [5] && tracker.isSyncing)
        #expect(seqs(tracker.received(message(6))).isEmpty && seqs(tracker.received(message(7))).isEmpty, "held")
        let page = { (messages: [UInt64], more: Bool, next: UInt64) in
            SyncResponse.with {
                $0.conversation = .oneToOne("alice")
                $0.messages = messages.map { message($0) }
                $0.hasMore = more
                $0.nextFromSeq = next
            }
        }
        let first = tracker.synced(page([2, 3], true, 4), limit: 2)
        #expect(seqs(first.messages) == [2, 3] && first.next.first?.fromSeq == 4 && first.next.first?.toSeq == 5)
        let last = tracker.synced(page([4, 5], false, 6), limit: 2)
        #expect(seqs(last.messages) == [4, 5, 6, 7] && last.next.isEmpty && !tracker.isSyncing)
        #expect(tracker.lastSeen.map(\.seq) == [7] && tracker.lastSeen.first?.conversation == .oneToOne("alice"))
        // A relay that restarted has fewer messages (all new): the client syncs them from seq 1.
        #expect(tracker.loggedIn(max(2)).map(\.fromSeq) == [1])
        #expect(tracker.delivered.values.first == 0)
    }

    // One scenario, read top to bottom: kept as one function (over 80 lines).
    @Test func syncPagesWithHasMoreAndTheLimitCap() async throws {
        try await withClientGroup { group in
            try await withRelay({ $0.groups = ["ops": ["carol"]] }) { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group)
                let bob = try await TestClient.connect(to: server, as: "bob", group: group)
                for k in 1...250 {
                    alice.channel.write(
                        Frame(Message.c2cText(from: "alice", to: "bob", "m\(k)", clientMsgID: "s-\(k)")),
                        promise: nil
                    )
                }
                alice.channel.flush()
                #expect(await eventually { alice.collector.acks.count == 250 && bob.collector.messages.count == 250 })

                // limit 0: the cap, 100.
                let first = try #require(
                    syncResponse(try await bob.ask(RelayProtocol.syncFrame(.oneToOne("alice"), from: 1, requestID: 1)))
                )
                #expect(first.messages.map(\.seq) == Array(1...100))
                #expect(first.hasMore && first.nextFromSeq == 101 && first.maxSeq == 250)
                // A limit above the cap is capped.
                let capped = try #require(
                    syncResponse(
                        try await bob.ask(
                            RelayProtocol.syncFrame(.oneToOne("alice"), from: 101, limit: 500, requestID: 2)
                        )
                    )
                )
                #expect(capped.messages.map(\.seq) == Array(101...200) && capped.hasMore && capped.nextFromSeq == 201)
                let small = try #require(
                    syncResponse(
                        try await bob.ask(
                            RelayProtocol.syncFrame(.oneToOne("alice"), from: 201, limit: 30, requestID: 3)
                        )
                    )
                )
                #expect(small.messages.map(\.seq) == Array(201...230) && small.hasMore && small.nextFromSeq == 231)
                // to_seq is inclusive.
                let ranged = try #require(
                    syncResponse(
                        try await bob.ask(
                            RelayProtocol.syncFrame(.oneToOne("alice"), from: 101, to: 120, limit: 50, requestID: 4)
                        )
                    )
                )
                #expect(ranged.messages.map(\.seq) == Array(101...120) && !ranged.hasMore && ranged.nextFromSeq == 121)
                #expect(ranged.messages.map { $0.firstText ?? "" } == (101...120).map { "m\($0)" })
                // The sync returns what bob got live, marked as delivered offline.
                let live = bob.collector.messages[100..<120].map {
                    var message = $0
                    message.isOffline = true
                    return message
                }
                #expect(ranged.messages == live)
                // Past the end: nothing, no more.
                let past = try #require(
                    syncResponse(
                        try await bob.ask(RelayProtocol.syncFrame(.oneToOne("alice"), from: 251, requestID: 5))
                    )
                )
                #expect(past.messages.isEmpty && !past.hasMore && past.maxSeq == 250)
                // A group bob is not in: refused.
                let refused = try #require(
                    syncResponse(try await bob.ask(RelayProtocol.syncFrame(.group("ops"), from: 1, requestID: 6)))
                )
                #expect(refused.errorCode == RelayProtocol.RequestError.notAMember && refused.messages.isEmpty)

                // max_seq_request: named conversations, and every conversation when none is named.
                let named = try await bob.ask(
                    request(
                        .maxSeqRequest(
                            MaxSeqRequest.with {
                                $0.conversations = [.oneToOne("alice"), .oneToOne("nobody")]
                            }
                        ),
                        7
                    )
                )
                guard case .maxSeqResponse(let max)? = named?.payload else {
                    Issue.record("no max_seq_response: \(String(describing: named))")
                    return
                }
                #expect(max.maxSeqs.map(\.seq) == [250, 0] && max.serverTimeMs > 0)
                let all = try await bob.ask(request(.maxSeqRequest(MaxSeqRequest()), 8))
                guard case .maxSeqResponse(let everything)? = all?.payload else {
                    Issue.record("no max_seq_response")
                    return
                }
                #expect(everything.maxSeqs.map(\.conversation) == [.oneToOne("alice")])
                #expect(everything.maxSeqs.map(\.seq) == [250])
                await alice.close()
                await bob.close()
            }
        }
    }

    @Test func aSyncResponseFitsTheFrameSizeLimit() async throws {
        let maxFrameSize = 4096
        try await withClientGroup { group in
            try await withRelay({ $0.codec = FrameCodecOptions(maxFrameSize: maxFrameSize) }) { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group)
                let text = String(repeating: "x", count: 1000)
                for k in 1...10 {
                    try await alice.send(
                        Frame(Message.c2cText(from: "alice", to: "bob", "\(k) \(text)", clientMsgID: "b-\(k)"))
                    )
                }
                #expect(await eventually { alice.collector.acks.count == 10 })
                #expect(alice.collector.acks.allSatisfy { $0.errorCode == 0 })
                let bob = try await TestClient.connect(to: server, as: "bob", group: group)
                var seqs: [UInt64] = []
                var from: UInt64 = 1
                var requestID: UInt64 = 0
                var pages = 0
                while pages < 20 {
                    requestID += 1
                    let frame = try await bob.ask(
                        RelayProtocol.syncFrame(.oneToOne("alice"), from: from, requestID: requestID)
                    )
                    let page = try #require(syncResponse(frame))
                    #expect(frame.map { $0.serializedBytes().count <= maxFrameSize } == true)
                    pages += 1
                    seqs += page.messages.map(\.seq)
                    guard page.hasMore else { break }
                    from = page.nextFromSeq
                }
                #expect(seqs == (1...10).map { UInt64($0) })
                #expect(pages > 1, "ten 1 KB messages do not fit one 4 KB frame")
                #expect(bob.channel.isActive && bob.collector.decodeErrors.isEmpty)
                await alice.close()
                await bob.close()
            }
        }
    }
    /// A login result and a max seq response fit the frame size limit: bob is in 400 groups, whose
    /// max seqs take about 6 KB, and his device decodes with the relay's 4,096 bytes. The answers
    /// hold what fits, say so (`max_seqs_truncated`, `truncated`), and put first what the login named
    /// in `last_seen`, then the conversations that changed last. Before, the login result held
    /// every conversation: bob's device could not read it, and so could never log in.
    @Test func aLoginResultAndAMaxSeqResponseFitTheFrameSizeLimit() async throws {
        let codec = FrameCodecOptions(maxFrameSize: 4096)
        let groups = (0..<400).map { "g\(1000 + $0)" }
        try await withClientGroup { group in
            try await withRelay({
                $0.codec = codec
                $0.groups = Dictionary(uniqueKeysWithValues: groups.map { ($0, ["alice", "bob"]) })
            }) { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group, codec: codec)
                for target in ["g1399", "g1007"] {
                    try await alice.send(
                        Frame(Message.groupText(from: "alice", group: target, "hi", clientMsgID: target))
                    )
                }
                #expect(await eventually { alice.collector.acks.count == 2 })
                let bob = try await TestClient.connect(
                    to: server,
                    as: "bob",
                    group: group,
                    lastSeen: [ConversationSeq.with { $0.conversation = .group("g1200") }],
                    codec: codec
                )
                let login = try #require(bob.collector.loginResults.first)
                #expect(login.maxSeqsTruncated && login.maxSeqs.count > 100 && login.maxSeqs.count < 400)
                #expect(login.maxSeqs.prefix(3).map(\.conversation?.targetID) == ["g1200", "g1007", "g1399"])
                #expect(login.maxSeqs.prefix(3).map(\.seq) == [0, 1, 1])
                #expect(Set(login.maxSeqs.map(\.conversation)).count == login.maxSeqs.count)

                var ask = Frame(.maxSeqRequest(MaxSeqRequest()))
                ask.requestID = 1
                guard case .maxSeqResponse(let all)? = try await bob.ask(ask)?.payload else {
                    Issue.record("no max_seq_response")
                    return
                }
                #expect(all.truncated && all.maxSeqs.count > 100 && all.maxSeqs.count < 400)
                #expect(all.maxSeqs.prefix(2).map(\.conversation?.targetID) == ["g1007", "g1399"])
                ask = Frame(.maxSeqRequest(.with { $0.conversations = [.group("g1399"), .group("g1001")] }))
                ask.requestID = 2
                guard case .maxSeqResponse(let named)? = try await bob.ask(ask)?.payload else {
                    Issue.record("no max_seq_response")
                    return
                }
                #expect(!named.truncated && named.maxSeqs.map(\.seq) == [1, 0])
                #expect(bob.channel.isActive && bob.collector.decodeErrors.isEmpty)
                await alice.close()
                await bob.close()
            }
        }
    }

    /// ``RelayProtocol/deliveryReserve(targetID:channelID:)`` covers the largest page the relay can put around one
    /// frame it keeps: every varint at 10 bytes, a SENT direction and the largest stream position
    /// appended, the longest history cursor.
    @Test func theDeliveryReserveCoversThePageAroundOneFrame() throws {
        let conversation = Conversation.group("team")
        let stamped = Frame(Message.groupText(from: "alice", group: "team", String(repeating: "x", count: 3000)))
            .serializedBytes()
        let reserve = RelayProtocol.deliveryReserve(targetID: "team", channelID: "")
        // stream_sync_response: the frame with its direction (and, to a receiver, is_offline) and
        // position appended.
        let streamPage = RelayProtocol.answer(
            .streamSyncResponse(
                StreamSyncResponse.with {
                    $0.headPosition = .max; $0.truncated = true; $0.nextAfterPosition = .max; $0.hasMore = true
                    $0.frames = [
                        StreamFrame.with {
                            $0.position = .max
                            $0.frame =
                                stamped
                                + Frame.with {
                                    $0.payload = .message(
                                        Message.with {
                                            $0.direction = .received; $0.isOffline = true
                                        }
                                    )
                                }
                                .serializedBytes() + Router.noRequestSuffix + Router.positionSuffix(.max)
                        }
                    ]
                }
            ),
            requestID: .max
        )
        #expect(streamPage.serializedBytes().count - stamped.count <= reserve)
        // sync_response and history_response: the message decoded, with its direction (history: as
        // kept, with the fields an update adds when it keeps the message's size).
        guard case .message(var message)? = try Frame(serializedBytes: stamped).payload else {
            Issue.record("not a message")
            return
        }
        message.direction = .received
        message.isOffline = true
        message.updatedAtMs = .max
        let syncPage = RelayProtocol.answer(
            .syncResponse(
                SyncResponse.with {
                    $0.conversation = conversation; $0.messages = [message]; $0.hasMore = true
                    $0.nextFromSeq = .max; $0.maxSeq = .max; $0.errorCode = .max
                }
            ),
            requestID: .max
        )
        #expect(syncPage.serializedBytes().count - stamped.count <= reserve)
        let historyPage = RelayProtocol.answer(
            .historyResponse(
                HistoryResponse.with {
                    $0.conversation = conversation; $0.messages = [message]; $0.finished = true
                    $0.nextCursor = "\(UInt64.max)+\(UInt32.max)"
                }
            ),
            requestID: .max
        )
        #expect(historyPage.serializedBytes().count - stamped.count <= reserve)
    }

    /// Everything the relay accepts reaches a device that decodes with the relay's own limit, live
    /// and read back (stream sync, sync, history). Before, a message at the limit was delivered
    /// with the direction and stream position appended, past the limit: its receivers could
    /// neither read it nor sync past it. Now a message that fits the limit but not with what the
    /// relay adds is refused in its ack (1005), and so is an event or a notice (3010), before
    /// anything is kept.
    /// The frame `make` builds around a string of x's, `size` bytes long.
    static func padded(to size: Int, _ make: (String) -> Frame) throws -> Frame {
        let empty = make("").serializedBytes().count
        for shorter in 0..<32 {
            let frame = make(String(repeating: "x", count: max(0, size - empty - shorter)))
            if frame.serializedBytes().count == size { return frame }
        }
        throw IMCodecError(code: .malformed, reason: "no frame of \(size) bytes")
    }

    /// A one-to-one text message of a fixed size: its random and client time (which vary in
    /// length) set.
    static func text(_ text: String, id: String, from sender: String = "alice", to receiver: String = "bob") -> Frame {
        var message = Message.c2cText(from: sender, to: receiver, text, clientMsgID: id)
        message.random = 1
        message.clientTimeMs = 1
        return Frame(message)
    }

    @Test func whatTheRelayAcceptsFitsTheLimitOnEveryDevice() async throws {
        let limit = 4096
        let codec = FrameCodecOptions(maxFrameSize: limit)
        try await withClientGroup { group in
            try await withRelay({ $0.codec = codec }) { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group, codec: codec)
                let phone = try await TestClient.connect(
                    to: server,
                    as: "bob",
                    group: group,
                    deviceID: "phone",
                    codec: codec
                )
                // Within the limit, too large for what the relay adds: every size up to the limit.
                let sizes = Array(stride(from: limit - 130, through: limit, by: 5))
                for (index, size) in sizes.enumerated() {
                    try await alice.send(
                        try Self.padded(to: size) {
                            Self.text($0, id: "big-\(index)")
                        }
                    )
                }
                let room = limit - RelayProtocol.deliveryReserve(targetID: "bob", channelID: "")
                try await alice.send(
                    try Self.padded(to: room - 100) {
                        Self.text($0, id: "fits")
                    }
                )
                #expect(await eventually { alice.collector.acks.count == sizes.count + 1 })
                let acks = alice.collector.acks
                #expect(acks.dropLast().allSatisfy { $0.errorCode == RelayProtocol.AckError.cannotStamp })
                #expect(acks.dropLast().allSatisfy { $0.errorDescription.hasPrefix("tooLarge") })
                #expect(acks.last?.clientMsgID == "fits" && acks.last?.errorCode == 0)
                #expect(await eventually { phone.collector.messages.count == 1 })
                #expect(phone.collector.messages.map(\.clientMsgID) == ["fits"])
                let fits = try #require(phone.collector.messages.first)

                // An event, a receipt and a notice in the same band: refused, reaching no one.
                let reaction = try Self.padded(to: limit - 20) { emoji in
                    RelayProtocol.answer(
                        .reaction(
                            ReactionEvent.with {
                                $0.message = fits.reference; $0.userID = "bob"; $0.emoji = emoji; $0.action = .add
                            }
                        ),
                        requestID: 1
                    )
                }
                #expect(try await phone.ask(reaction) != nil)
                #expect(phone.collector.result(of: 1)?.errorCode == RelayProtocol.RequestError.tooLargeToDeliver)
                let notice = try Self.padded(to: limit - 20) { text in
                    RelayProtocol.answer(
                        .systemNotice(
                            SystemNotice.with {
                                $0.type = "note"; $0.recipientID = "alice"; $0.params = ["text": text]
                            }
                        ),
                        requestID: 2
                    )
                }
                #expect(try await phone.ask(notice) != nil)
                #expect(phone.collector.result(of: 2)?.errorCode == RelayProtocol.RequestError.tooLargeToDeliver)
                try await alice.roundTrip(3)
                #expect(
                    alice.collector.frames.allSatisfy {
                        $0.payload?.kind != .reaction && $0.payload?.kind != .systemNotice
                    }
                )

                // Read back on another device, by the stream, by seq and by history: every page fits.
                let tablet = try await TestClient.connect(
                    to: server,
                    as: "bob",
                    group: group,
                    deviceID: "tablet",
                    streamResume: true,
                    codec: codec
                )
                let stream = try await tablet.ask(
                    RelayProtocol.answer(
                        .streamSyncRequest(StreamSyncRequest.with { $0.afterPosition = 0 }),
                        requestID: 4
                    )
                )
                let sync = try await tablet.ask(RelayProtocol.syncFrame(.oneToOne("alice"), from: 1, requestID: 5))
                let history = try await tablet.ask(
                    RelayProtocol.answer(
                        .historyRequest(
                            HistoryRequest.with {
                                $0.conversation = .oneToOne("alice"); $0.count = 20
                            }
                        ),
                        requestID: 6
                    )
                )
                for (name, frame) in [
                    ("stream_sync_response", stream), ("sync_response", sync), ("history_response", history),
                ] {
                    let bytes = try #require(frame, "no \(name)").serializedBytes()
                    #expect(bytes.count <= limit, "\(name): \(bytes.count) bytes")
                }
                if case .streamSyncResponse(let page)? = stream?.payload {
                    #expect(page.frames.count == 1)
                } else {
                    Issue.record("not a stream_sync_response: \(String(describing: stream?.payload?.kind))")
                }
                if case .syncResponse(let page)? = sync?.payload {
                    #expect(page.messages.map(\.clientMsgID) == ["fits"])
                } else {
                    Issue.record("not a sync_response")
                }
                if case .historyResponse(let page)? = history?.payload {
                    #expect(page.messages.map(\.clientMsgID) == ["fits"])
                } else {
                    Issue.record("not a history_response")
                }
                for client in [alice, phone, tablet] {
                    #expect(client.collector.decodeErrors.isEmpty && client.channel.isActive)
                    await client.close()
                }
            }
        }
    }

    /// A one-to-one conversation is named by the other user's id on each side, so the receiver's
    /// pages name the sender: the room counts the longer of the two ids. Before, a message from a
    /// user with a long id to one with a short id was judged by the short id, and the receiver's
    /// history page holding it was past the limit.
    @Test func aOneToOneMessageLeavesRoomForTheLongerUserID() async throws {
        let limit = 4096
        let codec = FrameCodecOptions(maxFrameSize: limit)
        let long = String(repeating: "l", count: RelayProtocol.maxIDBytes)
        let shortRoom = limit - RelayProtocol.deliveryReserve(targetID: "bob", channelID: "")
        let longRoom = limit - RelayProtocol.deliveryReserve(targetID: long, channelID: "")
        try await withClientGroup { group in
            try await withRelay({ $0.codec = codec }) { server in
                let sender = try await TestClient.connect(to: server, as: long, group: group, codec: codec)
                let bob = try await TestClient.connect(to: server, as: "bob", group: group, codec: codec)
                try await sender.send(
                    try Self.padded(to: longRoom - 100) { Self.text($0, id: "fits", from: long) }
                )
                // Stamped (about 30 bytes more), between the two rooms: refused. (It would be the
                // first message of the newest-first page below.)
                try await sender.send(
                    try Self.padded(to: shortRoom - 60) { Self.text($0, id: "between", from: long) }
                )
                #expect(await eventually { sender.collector.acks.count == 2 })
                let acks = sender.collector.acks
                #expect(acks.first?.clientMsgID == "fits" && acks.first?.errorCode == 0)
                #expect(acks.last?.errorCode == RelayProtocol.AckError.cannotStamp)
                var request = Frame(
                    .historyRequest(
                        HistoryRequest.with {
                            $0.conversation = .oneToOne(long); $0.count = 20
                        }
                    )
                )
                request.requestID = 1
                let answer = try #require(try await bob.ask(request))
                #expect(answer.serializedBytes().count <= limit)
                if case .historyResponse(let page)? = answer.payload {
                    #expect(page.messages.map(\.clientMsgID) == ["fits"])
                } else {
                    Issue.record("not a history_response: \(String(describing: answer.payload?.kind))")
                }
                for client in [sender, bob] {
                    #expect(client.collector.decodeErrors.isEmpty && client.channel.isActive)
                    await client.close()
                }
            }
        }
    }

    @Test func theStoreKeepsTheNewestMessagesAndASyncFromBelowStartsAtTheOldestKept() async throws {
        try await withClientGroup { group in
            try await withRelay({ $0.maxMessagesPerConversation = 100 }) { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group)
                for k in 1...150 {
                    alice.channel.write(
                        Frame(Message.c2cText(from: "alice", to: "bob", "m\(k)", clientMsgID: "k-\(k)")),
                        promise: nil
                    )
                }
                alice.channel.flush()
                #expect(await eventually { alice.collector.acks.count == 150 })
                let bob = try await TestClient.connect(to: server, as: "bob", group: group)
                let sync = try #require(
                    syncResponse(try await bob.ask(RelayProtocol.syncFrame(.oneToOne("alice"), from: 1, requestID: 1)))
                )
                #expect(sync.messages.map(\.seq) == Array(51...150) && !sync.hasMore && sync.maxSeq == 150)
                await alice.close()
                await bob.close()
            }
        }
    }

    /// Retention deletes from the durable store what it drops, from the oldest kept before, after a
    /// restart too: a relay keeps 80 messages, and one restarted with lower limits (5 messages, 4
    /// stream entries) first drops 76 and 77 rows at once (one long range each), then one row a
    /// message. The store then holds the newest messages of the conversation and the newest
    /// entries of the stream, and nothing older.
    @Test(arguments: StoreBackend.allCases)
    func retentionDeletesWhatItDropsFromTheStore(_ backend: StoreBackend) async throws {
        let database = try await TestStore(backend)
        defer { database.remove() }
        let store = database.location
        try await withClientGroup { group in
            for (burst, kept) in [(1...80, 100), (81...86, 5)] {
                try await withRelay({
                    $0.store = store; $0.maxMessagesPerConversation = kept; $0.maxStreamEntries = kept - 1
                }) { server in
                    let alice = try await TestClient.connect(to: server, as: "alice", group: group)
                    for k in burst {
                        alice.channel.write(
                            Frame(Message.c2cText(from: "alice", to: "bob", "m\(k)", clientMsgID: "k-\(k)")),
                            promise: nil
                        )
                    }
                    alice.channel.flush()
                    #expect(await eventually { alice.collector.acks.count == burst.count })
                    #expect(alice.collector.acks.map(\.seq) == burst.map(UInt64.init))
                    await alice.close()
                }
            }
        }
        let opened = try database.open()
        defer { opened.close() }
        let key = ConversationKey.direct("alice", "bob")
        let kept = try opened.messages(in: key, from: 1, through: 100, limit: 100, visibleTo: "alice").map(\.seq)
        #expect(kept == Array(82...86))
        #expect(try opened.stream(of: "alice", after: 0, through: 100, limit: 100).map(\.position) == Array(83...86))
        #expect(try opened.load().conversations[key]?.oldestSeq == 82)
    }

    @Test func aMessageSentAgainIsAcknowledgedWithItsFirstStampAndDeliveredOnce() async throws {
        try await withClientGroup { group in
            try await withRelay { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group)
                let bob = try await TestClient.connect(to: server, as: "bob", group: group)
                let once = Frame(Message.c2cText(from: "alice", to: "bob", "once", clientMsgID: "same"))
                try await alice.send(once)
                try await alice.send(once)
                try await alice.send(Frame(Message.c2cText(from: "alice", to: "bob", "next", clientMsgID: "other")))
                #expect(await eventually { alice.collector.acks.count == 3 && bob.collector.messages.count == 2 })
                let acks = alice.collector.acks
                #expect(acks.map(\.seq) == [1, 1, 2] && acks[0].serverMsgUID == acks[1].serverMsgUID)
                #expect(bob.collector.messages.map { $0.firstText ?? "" } == ["once", "next"])
                await alice.close()
                await bob.close()
            }
        }
    }

    /// A message the relay does not keep (online-only, or in a chatroom) sent again with the same
    /// `client_msg_id`: before, it was delivered twice under two uids. Now it is acknowledged with
    /// its first stamp (seq 0) and delivered once; the same id in another conversation is another
    /// message.
    @Test func aMessageNotKeptSentAgainIsAcknowledgedWithItsFirstStampAndDeliveredOnce() async throws {
        try await withClientGroup { group in
            try await withRelay { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group)
                let bob = try await TestClient.connect(to: server, as: "bob", group: group)
                let room = Conversation.with {
                    $0.type = .chatroom; $0.targetID = "lobby"
                }
                for client in [alice, bob] {
                    let join = RelayProtocol.membershipFrame(.join, room, requestID: 1)
                    #expect(try await client.ask(join)?.requestResult?.errorCode == 0)
                }
                var live = Message.c2cText(from: "alice", to: "bob", "now", clientMsgID: "same")
                live.messageFlags = [.onlineUserOnly]
                let inRoom = Message(from: "alice", in: room, elements: [.text("hi room")], clientMsgID: "same")
                for message in [live, live, inRoom, inRoom] { try await alice.send(Frame(message)) }
                #expect(await eventually { alice.collector.acks.count == 4 && bob.collector.messages.count == 2 })
                try await alice.roundTrip(2)
                let acks = alice.collector.acks
                #expect(acks.allSatisfy { $0.errorCode == 0 && $0.seq == 0 })
                #expect(acks[0].serverMsgUID == acks[1].serverMsgUID && acks[2].serverMsgUID == acks[3].serverMsgUID)
                #expect(acks[0].serverMsgUID != acks[2].serverMsgUID)
                #expect(bob.collector.messages.map { $0.firstText ?? "" } == ["now", "hi room"])
                await alice.close()
                await bob.close()
            }
        }
    }

    /// Message uids and session ids are unique and tell nothing: neither the order in which the relay
    /// gave them out nor how many it gave out between two of them (``ServerIDs``).
    @Test func messageUIDsAndSessionIDsAreUniqueAndTellNothing() async throws {
        func isID(_ id: String) -> Bool {
            id.utf8.count == 32 && id.utf8.allSatisfy { (48...57).contains($0) || (97...102).contains($0) }
        }
        var ids = ServerIDs()
        let uids = (0..<10_000).map { _ in ids.nextMessageUID() }
        let sessions = (0..<1_000).map { _ in ids.nextSessionID() }
        #expect(Set(uids).count == 10_000 && Set(sessions).count == 1_000 && Set(uids).isDisjoint(with: sessions))
        #expect(uids.allSatisfy(isID) && sessions.allSatisfy(isID))
        // The router holds each uid packed in 16 bytes, and reads it back as written.
        #expect(uids.allSatisfy { PackedUID($0) != .text($0) && PackedUID($0).string == $0 })
        // Neither sorted nor counting up: 10,000 random blocks are in order with probability 2/10,000!.
        #expect(uids != uids.sorted() && uids != uids.sorted(by: >))
        // A new start (a new key) gives other ids for the same counters.
        var again = ServerIDs()
        #expect(again.nextMessageUID() != uids[0])
        try await withClientGroup { group in
            try await withRelay { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group)
                let bob = try await TestClient.connect(to: server, as: "bob", group: group)
                for k in 1...20 {
                    try await alice.send(
                        Frame(Message.c2cText(from: "alice", to: "bob", "m\(k)", clientMsgID: "u-\(k)"))
                    )
                }
                #expect(await eventually { bob.collector.messages.count == 20 })
                let sent = alice.collector.acks.map(\.serverMsgUID)
                #expect(Set(sent).count == 20 && sent.allSatisfy(isID))
                #expect(bob.collector.messages.map(\.serverMsgUID) == sent)
                let logins = [alice, bob].compactMap { $0.collector.loginResults.first?.sessionID }
                #expect(logins.count == 2 && logins[0] != logins[1] && logins.allSatisfy(isID))
                await alice.close()
                await bob.close()
            }
        }
    }

    /// A frame's request id is its sender's: the answer repeats it (a message's `send_ack` too, refused
    /// or not), and no other device gets it, live or by sync. A receiver that got it would take the
    /// frame for the answer to its own request of that id (as ``FrameCollector/answer(to:)`` would).
    // One scenario, read top to bottom: kept as one function (over 60 lines).
    @Test func aRequestIDReachesOnlyTheAnswerToItsSender() async throws {
        try await withClientGroup { group in
            try await withRelay({ $0.groups = ["team": ["alice", "bob"]] }) { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group, deviceID: "phone")
                let alicePad = try await TestClient.connect(to: server, as: "alice", group: group, deviceID: "pad")
                let bob = try await TestClient.connect(to: server, as: "bob", group: group, deviceID: "phone")
                func ack(_ answer: Frame?) -> SendAck? {
                    if case .sendAck(let a)? = answer?.payload { a } else { nil }
                }
                // Kept: a one-to-one and a group message, acknowledged with their request ids.
                let direct = request(.message(Message.c2cText(from: "alice", to: "bob", "hi", clientMsgID: "q-1")), 70)
                let toTeam = request(
                    .message(Message.groupText(from: "alice", group: "team", "hi all", clientMsgID: "q-2")),
                    71
                )
                let directAck = try #require(ack(try await alice.ask(direct)))
                #expect(directAck.clientMsgID == "q-1" && directAck.errorCode == 0 && directAck.seq == 1)
                #expect(ack(try await alice.ask(toTeam))?.clientMsgID == "q-2")
                // A refused message's ack repeats it too.
                let forged = request(.message(Message.c2cText(from: "mallory", to: "bob", "x", clientMsgID: "q-3")), 72)
                let refused = try #require(ack(try await alice.ask(forged)))
                #expect(refused.errorCode == RelayProtocol.AckError.senderMismatch && refused.clientMsgID == "q-3")
                #expect(
                    await eventually { bob.collector.messages.count == 2 && alicePad.collector.messages.count == 2 }
                )
                // Kept: an event (bob's reaction); not kept: alice's typing.
                let reaction = request(
                    .reaction(
                        ReactionEvent.with {
                            $0.message = bob.collector.messages[0].reference
                            $0.userID = "bob"; $0.emoji = "👍"; $0.action = .add; $0.timeMs = 1
                        }
                    ),
                    73
                )
                _ = try await bob.ask(reaction)
                #expect(bob.collector.result(of: 73)?.errorCode == 0)
                try await alice.send(
                    request(
                        .typing(
                            TypingEvent.with {
                                $0.conversation = .oneToOne("bob"); $0.userID = "alice"; $0.state = .started
                            }
                        ),
                        74
                    )
                )
                let forwarded: Set<Frame.Payload.Kind?> = [.message, .reaction, .typing]
                func received(_ client: TestClient) -> [Frame] {
                    client.collector.frames.filter { forwarded.contains($0.payload?.kind) }
                }
                #expect(await eventually { received(bob).count == 3 && received(alice).count == 1 })
                try await alicePad.roundTrip(76)  // Whatever the relay sent the pad before has arrived.
                // Every device but the sender's got them with request id 0: bob the messages and the
                // typing, alice's pad the messages and the reaction, alice's phone the reaction.
                #expect(received(bob).map { $0.payload?.kind } == [.message, .message, .typing])
                #expect(received(bob).map(\.requestID) == [0, 0, 0])
                let pad = received(alicePad)
                #expect(
                    pad.filter { $0.payload?.kind == .message }.count == 2
                        && pad.contains { $0.payload?.kind == .reaction }
                )
                #expect(pad.allSatisfy { $0.requestID == 0 })
                #expect(received(alice).map { $0.payload?.kind } == [.reaction] && received(alice)[0].requestID == 0)
                // By sync: bob's laptop reads the kept frames from his stream without the ids.
                let laptop = try await TestClient.connect(
                    to: server,
                    as: "bob",
                    group: group,
                    deviceID: "laptop",
                    streamResume: true
                )
                let synced = try #require(try await laptop.streamPage(requestID: 75))
                #expect(synced.map { $0.payload?.kind } == [.message, .message, .reaction])
                #expect(synced.map(\.requestID) == [0, 0, 0])
                for client in [alice, alicePad, bob, laptop] { await client.close() }
            }
        }
    }

    /// A message whose sender set a field only the server sets is refused with 1007, before anything is
    /// kept or forwarded: a sender cannot show its receivers a read list, reactions, an edit mark, an
    /// expiry or a seq that the relay never gave (a message that is not kept gets no seq stamped, so
    /// its sender's seq reached receivers before).
    @Test func aMessageWithFieldsOnlyTheServerSetsIsRefused() async throws {
        try await withClientGroup { group in
            try await withRelay { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group)
                let bob = try await TestClient.connect(to: server, as: "bob", group: group)
                let forgeries: [(String, (inout Message) -> Void)] = [
                    (
                        "seq",
                        {
                            $0.seq = 999; $0.messageFlags = [.onlineUserOnly]
                        }
                    ),
                    ("read_ids", { $0.readIDs = ["bob", "carol"] }),
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
                    ("edit_version", { $0.editVersion = 3 }),
                    ("expire_at_ms", { $0.expireAtMs = 1 }),
                    ("is_offline", { $0.isOffline = true }),
                    (
                        "server_msg_uid, updated_at_ms",
                        {
                            $0.serverMsgUID = "s-1"; $0.updatedAtMs = 5
                        }
                    ),
                ]
                for (index, (fields, forge)) in forgeries.enumerated() {
                    var message = Message.c2cText(from: "alice", to: "bob", "forged", clientMsgID: "f-\(index)")
                    forge(&message)
                    try await alice.send(Frame(message))
                    #expect(await eventually { alice.collector.acks.count == index + 1 })
                    let ack = alice.collector.acks[index]
                    #expect(ack.errorCode == RelayProtocol.AckError.serverAssignedField && ack.seq == 0)
                    #expect(
                        ack.errorDescription
                            == "serverAssignedField: only the server sets \(fields); send the message without them"
                    )
                }
                // What a sender's own copy holds (its direction, status and timer) is not the server's.
                var own = Message.c2cText(from: "alice", to: "bob", "fine", clientMsgID: "ok")
                own.direction = .sent
                own.status = .sending
                try await alice.send(Frame(own))
                #expect(await eventually { bob.collector.messages.count == 1 })
                #expect(alice.collector.acks.last?.errorCode == 0 && alice.collector.acks.last?.seq == 1)
                #expect(bob.collector.messages.map { $0.firstText ?? "" } == ["fine"])
                #expect(bob.collector.messages[0].direction == .received)
                await alice.close()
                await bob.close()
            }
        }
    }

    /// The relay stamps a disappearing message's `expire_at_ms` (its server time plus `expire_after_s`),
    /// and marks `is_offline` on what a receiver's device reads back (stream sync, sync by seq), not
    /// on what it gets live nor on the sender's own copies.
    @Test func aDisappearingMessageGetsItsExpiryAndWhatASyncDeliversIsOffline() async throws {
        try await withClientGroup { group in
            try await withRelay { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group, deviceID: "phone")
                let bob = try await TestClient.connect(to: server, as: "bob", group: group, deviceID: "phone")
                var fleeting = Message.c2cText(from: "alice", to: "bob", "gone soon", clientMsgID: "d-1")
                fleeting.expireAfterS = 86_400  // Not to expire during the test, however slowly it runs.
                try await alice.send(Frame(fleeting))
                try await alice.send(Frame(Message.c2cText(from: "alice", to: "bob", "kept", clientMsgID: "d-2")))
                #expect(await eventually { bob.collector.messages.count == 2 && alice.collector.acks.count == 2 })
                let acks = alice.collector.acks
                let live = bob.collector.messages
                #expect(live[0].expireAtMs == acks[0].serverTimeMs + 86_400_000 && live[0].expireAfterS == 86_400)
                #expect(live[1].expireAtMs == 0)
                #expect(live.allSatisfy { !$0.isOffline && $0.direction == .received })
                // Read back by a device of bob's that was offline: offline, with the same expiry.
                let laptop = try await TestClient.connect(
                    to: server,
                    as: "bob",
                    group: group,
                    deviceID: "laptop",
                    streamResume: true
                )
                let synced = try #require(try await laptop.streamPage(requestID: 5)).compactMap(\.messagePayload)
                #expect(synced.map(\.isOffline) == [true, true] && synced.map(\.direction) == [.received, .received])
                #expect(synced.map(\.expireAtMs) == live.map(\.expireAtMs))
                let bySeq = try #require(
                    syncResponse(try await bob.ask(RelayProtocol.syncFrame(.oneToOne("alice"), from: 1, requestID: 6)))
                )
                #expect(bySeq.messages.map(\.isOffline) == [true, true])
                #expect(bySeq.messages.map(\.expireAtMs) == live.map(\.expireAtMs))
                // The sender's own copies are not offline deliveries.
                let alicePad = try await TestClient.connect(
                    to: server,
                    as: "alice",
                    group: group,
                    deviceID: "pad",
                    streamResume: true
                )
                let ownMessages = try #require(try await alicePad.streamPage(requestID: 7)).compactMap(\.messagePayload)
                #expect(
                    ownMessages.map(\.isOffline) == [false, false] && ownMessages.map(\.direction) == [.sent, .sent]
                )
                let aliceBySeq = try #require(
                    syncResponse(try await alice.ask(RelayProtocol.syncFrame(.oneToOne("bob"), from: 1, requestID: 8)))
                )
                #expect(aliceBySeq.messages.map(\.isOffline) == [false, false])
                for client in [alice, bob, laptop, alicePad] { await client.close() }
            }
        }
    }

    @Test func badLoginsGetAFailedLoginResultAndAreClosed() async throws {
        try await withClientGroup { group in
            try await withRelay { server in
                let noToken = try await RawClient.connect(to: server, group: group)
                try await noToken.write(frame: request(.loginRequest(LoginRequest.with { $0.userID = "alice" }), 3))
                #expect(await noToken.closedByPeer(within: 20))
                let frames = noToken.collector.frames
                guard case .loginResult(let result)? = frames.first?.payload else {
                    Issue.record("no login_result: \(frames)")
                    return
                }
                #expect(frames.first?.requestID == 3)
                #expect(result.errorCode == RelayProtocol.LoginError.missingCredentials)
                #expect(result.errorDescription.hasPrefix("notLoggedIn: "))
                #expect(noToken.collector.errorCode == "notLoggedIn")

                let notALogin = try await RawClient.connect(to: server, group: group)
                try await notALogin.write(frame: request(.ping(Ping.with { $0.id = 1 }), 1))
                #expect(await notALogin.closedByPeer(within: 20))
                guard case .loginResult(let refused)? = notALogin.collector.frames.first?.payload else {
                    Issue.record("no login_result")
                    return
                }
                #expect(refused.errorCode == RelayProtocol.LoginError.notLoggedIn)
                let stats = try await server.stats().get()
                #expect(stats.closedByError == ["notLoggedIn": 2])
            }
        }
    }

    @Test func aSecondLoginOfTheSameDeviceKicksTheFirstWithLoggedInElsewhere() async throws {
        try await withClientGroup { group in
            try await withRelay { server in
                let first = try await TestClient.connect(to: server, as: "alice", group: group, deviceID: "phone")
                let second = try await TestClient.connect(to: server, as: "alice", group: group, deviceID: "phone")
                #expect(await eventually { !first.channel.isActive })
                let kicks = first.collector.frames.compactMap {
                    if case .kickedOffline(let k)? = $0.payload { k } else { nil }
                }
                #expect(kicks.count == 1)
                #expect(kicks.first?.reason == .loggedInElsewhere && kicks.first?.otherDeviceID == "phone")
                #expect(kicks.first?.timeMs ?? 0 > 0)
                #expect(second.channel.isActive)
                let stats = try await server.stats().get()
                #expect(stats.usersOnline == 1 && stats.closedByError.isEmpty)
                await second.close()
            }
        }
    }

    @Test func pingIsAnsweredWithPongAndLogoutClosesCleanly() async throws {
        try await withClientGroup { group in
            try await withRelay { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group)
                let pong = try await alice.ask(
                    request(
                        .ping(
                            Ping.with {
                                $0.id = 42; $0.timeMs = 1
                            }
                        ),
                        5
                    )
                )
                guard case .pong(let answer)? = pong?.payload else {
                    Issue.record("no pong: \(String(describing: pong))")
                    return
                }
                #expect(answer.id == 42 && answer.timeMs > 0)
                let sessionID = alice.collector.loginResults.first?.sessionID ?? ""
                let bye = try await alice.ask(request(.logout(Logout.with { $0.sessionID = sessionID }), 6))
                guard case .requestResult(let result)? = bye?.payload else {
                    Issue.record("no request_result")
                    return
                }
                #expect(result.errorCode == 0)
                #expect(await eventually { !alice.channel.isActive })
                #expect(await eventually { (try? server.stats().wait().connectionsOpen) == 0 })
                let stats = try await server.stats().get()
                #expect(stats.usersOnline == 0 && stats.closedByError.isEmpty, "\(stats.closedByError)")
            }
        }
    }

    /// A user joins while it is in fewer than `--max-joined-groups` groups, chatrooms and channels
    /// (3 here, the groups file's closed group included): a fourth is refused with 3012 and changes
    /// nothing, joining one it is in again is answered, and a leave makes room (and, by its last
    /// member, forgets the group's empty set of members). Before, one user could join, and so
    /// create, any number of them.
    @Test func aUserJoinsAtMostMaxJoinedGroups() async throws {
        try await withClientGroup { group in
            try await withRelay({
                $0.maxJoinedConversations = 3; $0.groups = ["closed": ["alice"]]
            }) { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group)
                func join(_ name: String, _ action: MembershipAction = .join, id: UInt64) async throws -> Int32? {
                    try await alice.ask(RelayProtocol.membershipFrame(action, group: name, requestID: id))?
                        .requestResult?
                        .errorCode
                }
                #expect(try await join("g1", id: 1) == 0)
                #expect(try await join("g2", id: 2) == 0)
                #expect(try await join("g3", id: 3) == RelayProtocol.RequestError.listFull)
                #expect(try await join("g1", id: 4) == 0, "already in it")
                try await alice.send(Frame(Message.groupText(from: "alice", group: "g3", "in?", clientMsgID: "x")))
                #expect(await eventually { alice.collector.acks.count == 1 })
                #expect(alice.collector.acks.first?.errorCode != 0, "not a member of g3")
                #expect(try await join("g2", .leave, id: 5) == 0)
                // Its last member gone, the group leaves no empty set of members behind.
                #expect(try await server.withRouter { $0.members[.group("g2")] == nil }.get())
                #expect(try await join("g3", id: 6) == 0)
                await alice.close()
            }
        }
    }

    /// A join of a group with no members starts it, and what it kept stays after its members leave,
    /// so each user has a budget of joins (`--join-rate`, here 3 a minute in bursts of 3; Matrix
    /// Synapse's `rc_joins`): past it a join is refused with 3014 and changes nothing, until the
    /// relay's clock gives it more. A leave, and a join of a group the user is in, cost nothing;
    /// another user's budget is its own. Before, one user could join new groups, send and leave in
    /// a loop, and have the relay keep a conversation per loop.
    @Test func aUserJoinsAtMostJoinRateGroupsAMinute() async throws {
        let clock = FrozenClock()
        try await withClientGroup { group in
            try await withRelay({
                $0.joinRate = 3; $0.silenceClock = clock.now
            }) { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group)
                let bob = try await TestClient.connect(to: server, as: "bob", group: group)
                func join(
                    _ name: String,
                    _ action: MembershipAction = .join,
                    by client: TestClient? = nil,
                    id: UInt64
                ) async throws -> Int32? {
                    try await (client ?? alice).ask(RelayProtocol.membershipFrame(action, group: name, requestID: id))?
                        .requestResult?
                        .errorCode
                }
                func isMember(_ user: String, _ name: String) async throws -> Bool {
                    try await server.withRouter { $0.members[.group(name)]?.contains(user) ?? false }.get()
                }
                for (index, name) in ["g1", "g2", "g3"].enumerated() {
                    #expect(try await join(name, id: UInt64(index + 1)) == 0)
                }
                #expect(try await join("g4", id: 4) == RelayProtocol.RequestError.tooFrequent)
                #expect(try await isMember("alice", "g4") == false)
                #expect(try await join("g2", id: 5) == 0, "already in it: no join")
                #expect(try await join("g1", .leave, id: 6) == 0, "a leave is never refused")
                #expect(try await join("g1", id: 7) == RelayProtocol.RequestError.tooFrequent)
                #expect(try await isMember("alice", "g1") == false)
                #expect(try await join("g1", by: bob, id: 8) == 0, "bob's budget is his own")
                // Twenty seconds later: one more join.
                clock.advance(by: 20_000)
                #expect(try await join("g4", id: 9) == 0)
                #expect(try await join("g5", id: 10) == RelayProtocol.RequestError.tooFrequent)
                #expect(try await isMember("alice", "g4"))
                #expect(try await isMember("alice", "g5") == false)
                // The sweep forgets a budget once it is full again: bob's, twenty seconds after his
                // one join, and alice's a minute later.
                func budgets() async throws -> [String] {
                    try await server.withRouter { router in
                        router.forgetFullBudgets()
                        return router.joinBudgets.keys.sorted()
                    }.get()
                }
                #expect(try await budgets() == ["alice"])
                clock.advance(by: 60_000)
                #expect(try await budgets().isEmpty)
                await alice.close()
                await bob.close()
            }
        }
    }

    /// A join refused because its fan-out is past the joiner's budget (`--fan-out-rate`, here 1 a
    /// second in bursts of 5) takes none of its joins (`--join-rate`, here 3 a minute): it still
    /// has all three once its fan-out refills. Before, the refused join had spent one.
    @Test func aJoinRefusedForItsFanOutKeepsTheJoin() async throws {
        let clock = FrozenClock()
        try await withClientGroup { group in
            try await withRelay({
                $0.joinRate = 3; $0.fanOutRate = 1; $0.silenceClock = clock.now
            }) { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group)
                let bob = try await TestClient.connect(to: server, as: "bob", group: group)
                func join(_ name: String, by client: TestClient? = nil, id: UInt64) async throws -> Int32? {
                    try await (client ?? alice).ask(RelayProtocol.membershipFrame(.join, group: name, requestID: id))?
                        .requestResult?
                        .errorCode
                }
                #expect(try await join("crowd", by: bob, id: 1) == 0)
                // Two one-to-one messages cost alice 4 of her 5: a join of bob's group (2 users) is
                // refused for its fan-out.
                for id: UInt64 in [2, 3] {
                    #expect(try await Self.aliceSends(alice, to: "bob", requestID: id)?.errorCode == 0)
                }
                #expect(try await join("crowd", id: 4) == RelayProtocol.RequestError.tooFrequent)
                #expect(try await server.withRouter { $0.members[.group("crowd")] == ["bob"] }.get())
                // Four seconds later her fan-out is full again, and her three joins are all there.
                clock.advance(by: 4_000)
                #expect(try await join("crowd", id: 5) == 0)
                #expect(try await join("g1", id: 6) == 0)
                #expect(try await join("g2", id: 7) == 0)
                #expect(try await join("g3", id: 8) == RelayProtocol.RequestError.tooFrequent)
                #expect(try await server.withRouter { $0.members[.group("g3")] == nil }.get())
                await alice.close()
                await bob.close()
            }
        }
    }

    /// Alice's one-to-one text to `peer` (online-only with `live`), asked with `requestID`: its ack.
    private static func aliceSends(
        _ alice: TestClient,
        to peer: String,
        requestID: UInt64,
        live: Bool = false
    ) async throws -> SendAck? {
        var message = Message.c2cText(from: "alice", to: peer, "hi", clientMsgID: "m\(requestID)")
        if live { message.messageFlags = [.onlineUserOnly] }
        let answer = try await alice.ask(RelayProtocol.answer(.message(message), requestID: requestID))
        if case .sendAck(let ack)? = answer?.payload { return ack }
        return nil
    }

    /// A conversation update that pins the one-to-one conversation with `peer`.
    private static func pin(_ peer: String) -> Frame.Payload {
        .conversationUpdate(
            .with {
                $0.conversation = .oneToOne(peer); $0.fields = UInt32(ConversationField.pinned.rawValue)
                $0.pinned = true
            }
        )
    }

    /// A user starts one-to-one conversations while it has fewer than `--max-direct-conversations`
    /// (2 here): a first message to a third peer is refused with 1010 and keeps nothing, a view of
    /// a conversation with a new peer (a pin, a receive option) with 3012; its conversations go on,
    /// an online-only message (kept nowhere) still reaches a new peer, and a conversation another
    /// user starts with it is never refused. Before, one user could make the relay keep a
    /// conversation, for itself and for the peer, with every user id it made up.
    @Test func aUserStartsAtMostMaxDirectConversations() async throws {
        try await withClientGroup { group in
            try await withRelay({ $0.maxDirectConversations = 2 }) { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group)
                let dave = try await TestClient.connect(to: server, as: "dave", group: group)
                var requests: UInt64 = 100
                func send(_ to: String, live: Bool = false) async throws -> SendAck? {
                    requests += 1
                    return try await Self.aliceSends(alice, to: to, requestID: requests, live: live)
                }
                func view(_ payload: Frame.Payload, id: UInt64) async throws -> Int32? {
                    try await RelayUserStateTests.ask(alice, payload, id: id)?.requestResult?.errorCode
                }
                #expect(try await send("bob")?.errorCode == 0)
                #expect(try await view(Self.pin("carol"), id: 1) == 0, "a view alone starts one")
                let refused = try await send("erin")
                #expect(refused?.errorCode == RelayProtocol.AckError.conversationLimit && refused?.seq == 0)
                #expect(try await view(Self.pin("erin"), id: 2) == RelayProtocol.RequestError.listFull)
                let mute = ReceiveOptionChange.with {
                    $0.conversation = .oneToOne("erin"); $0.option = .notReceive
                }
                #expect(try await view(.receiveOption(mute), id: 3) == RelayProtocol.RequestError.listFull)
                #expect(try await send("dave", live: true)?.errorCode == 0, "kept nowhere")
                #expect(await eventually { dave.collector.messages.count == 1 })
                #expect(try await send("bob")?.errorCode == 0)
                #expect(try await send("carol")?.errorCode == 0, "started by its view")
                #expect(try await view(Self.pin("bob"), id: 4) == 0)
                // Started by dave: alice now has three, and answers in it.
                try await dave.send(Frame(Message.c2cText(from: "dave", to: "alice", "hello", clientMsgID: "d1")))
                #expect(await eventually { dave.collector.acks.count == 1 })
                #expect(dave.collector.acks.first?.errorCode == 0)
                #expect(try await send("dave")?.errorCode == 0)
                // erin got nothing kept: her stream is empty.
                let erin = try await TestClient.connect(to: server, as: "erin", group: group)
                #expect(try await erin.streamPage(requestID: 1)?.isEmpty == true)
                for client in [alice, dave, erin] { await client.close() }
            }
        }
    }

    /// The count of a user's one-to-one conversations survives a restart: it is made again from
    /// what the store keeps (conversations with messages, views alone), so a start past the bound is
    /// refused after it too.
    @Test func theOneToOneBoundHoldsAfterARestart() async throws {
        let database = try await TestStore(.sqlite)
        defer { database.remove() }
        try await withClientGroup { group in
            func start(_ server: RelayServer) async throws -> TestClient {
                try await TestClient.connect(to: server, as: "alice", group: group)
            }
            func send(_ alice: TestClient, to peer: String, id: UInt64) async throws -> Int32? {
                try await Self.aliceSends(alice, to: peer, requestID: id)?.errorCode
            }
            try await withRelay({
                $0.store = database.location; $0.maxDirectConversations = 2
            }) { server in
                let alice = try await start(server)
                #expect(try await send(alice, to: "bob", id: 1) == 0)
                #expect(
                    try await RelayUserStateTests.ask(alice, Self.pin("carol"), id: 2)?.requestResult?.errorCode == 0
                )
                await alice.close()
            }
            try await withRelay({
                $0.store = database.location; $0.maxDirectConversations = 2
            }) { server in
                let alice = try await start(server)
                #expect(try await send(alice, to: "erin", id: 1) == RelayProtocol.AckError.conversationLimit)
                #expect(try await send(alice, to: "bob", id: 2) == 0)
                #expect(try await send(alice, to: "carol", id: 3) == 0, "its view started it")
                await alice.close()
            }
        }
    }

    /// A kept event in a one-to-one conversation with no message yet (a call, a disappearing
    /// timer) starts it as a first message does (`--max-direct-conversations`, 2 here): the caller
    /// gets a list entry for it, which counts, and past the bound the event is refused with 3012
    /// and reaches no one. Before, each call to a made-up id made the relay keep a stream for it.
    @Test func anEventStartsAOneToOneConversationWithinTheBound() async throws {
        try await withClientGroup { group in
            try await withRelay({ $0.maxDirectConversations = 2 }) { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group)
                let bob = try await TestClient.connect(to: server, as: "bob", group: group)
                func invite(_ peer: String, id: UInt64) -> Frame {
                    RelayProtocol.answer(
                        .call(
                            CallEvent.with {
                                $0.callID = "call-\(id)"; $0.conversation = .oneToOne(peer); $0.userID = "alice"
                                $0.signal = .invite
                            }
                        ),
                        requestID: id
                    )
                }
                // A call is not answered (checkEvent); bob gets it.
                try await alice.send(invite("bob", id: 1))
                #expect(await eventually { bob.collector.frames.contains { $0.payload?.kind == .call } })
                #expect(
                    try await RelayDisappearingTests.setTimer(alice, by: "alice", in: .oneToOne("carol"), 60, id: 3)
                        == 0
                )
                #expect(
                    try await alice.ask(invite("erin", id: 4))?.requestResult?.errorCode
                        == RelayProtocol.RequestError.listFull
                )
                let entries = try await RelayUserStateTests.list(alice, id: 5).conversations
                #expect(Set(entries.compactMap(\.conversation?.targetID)) == ["bob", "carol"])
                // At the bound, an event that its own checks refuse gets their answer (3003: a recall
                // of a message the relay does not keep), not 3012.
                let recall = RecallEvent.with {
                    $0.message = MessageRef.with {
                        $0.conversation = .oneToOne("frank"); $0.senderID = "alice"; $0.clientMsgID = "f-1"
                    }
                    $0.revokerID = "alice"
                }
                #expect(
                    try await RelayUserStateTests.ask(alice, .recall(recall), id: 6)?.requestResult?.errorCode
                        == RelayProtocol.RequestError.badRequest
                )
                // A receipt about a message of a made-up peer, in a conversation nothing was kept
                // of, is refused whatever the bound (3001): it would keep a stream for zed.
                let receipt = MessageReceipt.with {
                    $0.kind = .read; $0.timeMs = 1
                    $0.message = MessageRef.with {
                        $0.conversation = .oneToOne("alice"); $0.senderID = "zed"; $0.clientMsgID = "z-1"
                    }
                }
                #expect(
                    try await RelayUserStateTests.ask(alice, .receipt(receipt), id: 7)?.requestResult?.errorCode
                        == RelayProtocol.RequestError.notAMember
                )
                let erin = try await TestClient.connect(to: server, as: "erin", group: group)
                #expect(try await erin.streamPage(requestID: 1)?.isEmpty == true, "erin got nothing kept")
                let zed = try await TestClient.connect(to: server, as: "zed", group: group)
                #expect(try await zed.streamPage(requestID: 1)?.isEmpty == true, "zed got nothing kept")
                await zed.close()
                // A message to bob, started by the call, is not a new start.
                try await alice.send(Frame(Message.c2cText(from: "alice", to: "bob", "hi", clientMsgID: "m1")))
                #expect(await eventually { alice.collector.acks.count == 1 })
                #expect(alice.collector.acks.first?.errorCode == 0)
                for client in [alice, bob, erin] { await client.close() }
            }
        }
    }

    /// A refusal names at most 512 bytes of what the client sent: a read receipt about a message
    /// whose sender's id takes 3,500 bytes (the relay keeps no such user, and no id of it; a
    /// receipt only names one) is refused with a notice (no request id) or a request_result, each
    /// cut with "…", and alice's device, which decodes with the relay's 4,096 bytes, reads both.
    /// Before, such a notice was about 7 KB and cost alice her connection. A history request for a
    /// group of as long an id is refused with 3002: no conversation has such an id.
    @Test func aRefusalNamesAtMost512BytesOfWhatTheClientSent() async throws {
        let codec = FrameCodecOptions(maxFrameSize: 4096)
        try await withClientGroup { group in
            try await withRelay({
                $0.codec = codec; $0.groups = ["team": ["alice", "bob"]]
            }) { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group, codec: codec)
                let sender = String(repeating: "s", count: 3_500)
                let receipt = MessageReceipt.with {
                    $0.kind = .read
                    $0.message = MessageRef.with {
                        $0.conversation = .group("team"); $0.senderID = sender; $0.seq = 99
                    }
                }
                try await alice.send(Frame(.receipt(receipt)))
                #expect(await eventually { alice.collector.notices.count == 1 })
                let reason = alice.collector.notices.first?.params["reason"] ?? ""
                #expect(reason.utf8.count <= 512 && reason.hasSuffix("…") && reason.hasPrefix("sss"))
                let result = try await alice.ask(request(.receipt(receipt), 2))?.requestResult
                #expect(result?.errorCode == RelayProtocol.RequestError.notAMember)
                #expect(
                    result.map { $0.errorDescription.utf8.count <= 512 && $0.errorDescription.hasSuffix("…") } == true
                )
                let history = HistoryRequest.with {
                    $0.conversation = .group(String(repeating: "g", count: 3_500)); $0.count = 20
                }
                let refused = try await alice.ask(request(.historyRequest(history), 3))?.requestResult
                #expect(refused?.errorCode == RelayProtocol.RequestError.unsupportedConversation)
                #expect(alice.channel.isActive && alice.collector.decodeErrors.isEmpty)
                await alice.close()
            }
        }
        #expect(RelayProtocol.described("short") == "short")
        let cut = RelayProtocol.described(String(repeating: "é", count: 400))
        #expect(cut.utf8.count <= 512 && cut.hasSuffix("…") && cut.dropLast().allSatisfy { $0 == "é" })
    }

    @Test func joinAndLeaveAreAnsweredByRequestIDAndToldToTheOtherMembers() async throws {
        try await withClientGroup { group in
            try await withRelay { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group)
                let bob = try await TestClient.connect(to: server, as: "bob", group: group)
                #expect(
                    try await alice.ask(RelayProtocol.membershipFrame(.join, group: "team", requestID: 11))?.requestID
                        == 11
                )
                #expect(alice.collector.result(of: 11)?.errorCode == 0)
                #expect(try await bob.ask(RelayProtocol.membershipFrame(.join, group: "team", requestID: 12)) != nil)
                #expect(bob.collector.result(of: 12)?.errorCode == 0)
                let joined = {
                    alice.collector.frames.compactMap { if case .membership(let m)? = $0.payload { m } else { nil } }
                }
                #expect(await eventually { joined().count == 1 })
                #expect(joined().first?.action == .join && joined().first?.userID == "bob")
                #expect(joined().first?.conversation == .group("team"))

                try await alice.send(Frame(Message.groupText(from: "alice", group: "team", "both", clientMsgID: "t-1")))
                #expect(await eventually { bob.collector.messages.count == 1 })
                #expect(try await bob.ask(RelayProtocol.membershipFrame(.leave, group: "team", requestID: 13)) != nil)
                #expect(bob.collector.result(of: 13)?.errorCode == 0)
                #expect(await eventually { joined().count == 2 })
                #expect(joined().last?.action == .leave && joined().last?.userID == "bob")
                try await alice.send(
                    Frame(Message.groupText(from: "alice", group: "team", "alone", clientMsgID: "t-2"))
                )
                #expect(await eventually { alice.collector.acks.count == 2 })
                #expect(bob.collector.messages.count == 1)

                // One-to-one conversations are not joined.
                let refused = try await alice.ask(
                    request(
                        .membership(
                            MembershipChange.with {
                                $0.action = .join
                                $0.conversation = .oneToOne("bob")
                            }
                        ),
                        14
                    )
                )
                guard case .requestResult(let result)? = refused?.payload else {
                    Issue.record("no request_result")
                    return
                }
                #expect(result.errorCode == RelayProtocol.RequestError.unsupportedConversation)
                #expect(alice.channel.isActive)
                await alice.close()
                await bob.close()
            }
        }
    }

    /// Chatrooms and ultra-group channels are joined like groups; an ultra group's channels are
    /// separate conversations (own members, own seqs). A chatroom keeps no history (common.proto:
    /// "no roaming history"): its messages reach the members online and get no seq; sync by seq and
    /// a device's stream sync find none. Before, they were kept, synced and written to every
    /// member's stream.
    @Test func chatroomsAndUltraGroupChannelsWorkLikeGroups() async throws {
        try await withClientGroup { group in
            try await withRelay { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group)
                let bob = try await TestClient.connect(to: server, as: "bob", group: group)
                let channel1 = Conversation.with {
                    $0.type = .ultraGroup; $0.targetID = "ug"; $0.channelID = "c1"
                }
                let channel2 = Conversation.with {
                    $0.type = .ultraGroup; $0.targetID = "ug"; $0.channelID = "c2"
                }
                let room = Conversation.with {
                    $0.type = .chatroom; $0.targetID = "lobby"
                }
                var requestID: UInt64 = 0
                for (client, conversation) in [(alice, channel1), (bob, channel1), (alice, room), (bob, room)] {
                    requestID += 1
                    let join = RelayProtocol.membershipFrame(.join, conversation, requestID: requestID)
                    #expect(try await client.ask(join) != nil)
                    #expect(client.collector.result(of: requestID)?.errorCode == 0)
                }
                for (k, conversation) in [channel1, room, channel2, channel1].enumerated() {
                    try await alice.send(
                        Frame(
                            Message(
                                from: "alice",
                                in: conversation,
                                elements: [.text("t\(k)")],
                                clientMsgID: "u-\(k)"
                            )
                        )
                    )
                }
                #expect(await eventually { alice.collector.acks.count == 4 && bob.collector.messages.count == 3 })
                #expect(alice.collector.acks.map(\.errorCode) == [0, 0, RelayProtocol.AckError.notAGroupMember, 0])
                #expect(alice.collector.acks.map(\.seq) == [1, 0, 0, 2])
                #expect(alice.collector.acks[0].conversation == channel1)
                #expect(bob.collector.messages.map { $0.firstText ?? "" } == ["t0", "t1", "t3"])
                let sync = try #require(
                    syncResponse(try await bob.ask(RelayProtocol.syncFrame(channel1, from: 1, requestID: 50)))
                )
                #expect(sync.messages.map { $0.firstText ?? "" } == ["t0", "t3"] && sync.conversation == channel1)
                let roomSync = try #require(
                    syncResponse(try await bob.ask(RelayProtocol.syncFrame(room, from: 1, requestID: 51)))
                )
                #expect(roomSync.messages.isEmpty && roomSync.maxSeq == 0)
                let laptop = try await TestClient.connect(to: server, as: "bob", group: group, deviceID: "laptop")
                let stream = try #require(try await laptop.streamPage(requestID: 52))
                #expect(stream.compactMap { $0.messagePayload?.firstText } == ["t0", "t3"])
                // Its events too: a reaction reaches bob's devices online, and no stream keeps it.
                let inRoom = try #require(bob.collector.messages.first { $0.firstText == "t1" })
                let reaction = request(
                    .reaction(
                        ReactionEvent.with {
                            $0.message = inRoom.reference; $0.emoji = "👍"; $0.action = .add
                        }
                    ),
                    53
                )
                #expect(try await alice.ask(reaction)?.requestResult?.errorCode == 0)
                #expect(await eventually { laptop.collector.frames.contains { $0.payload?.kind == .reaction } })
                let later = try #require(try await laptop.streamPage(requestID: 54))
                #expect(!later.contains { $0.payload?.kind == .reaction })
                await laptop.close()
                await alice.close()
                await bob.close()
            }
        }
    }

    /// What the relay tells others fits the frame size limit with the fields it adds: a presence
    /// update whose custom status leaves no room for its sender's 128-byte id is refused with 3010
    /// and reaches no subscriber, and so is a join that carries 3,800 bytes of a field the relay
    /// does not know (told to the members as sent). Before, bob (a subscriber, and a member of that
    /// group), whose device decodes with the relay's 4,096 bytes, lost his connection at each. A
    /// leave is never refused, and refusals that repeat a long id (a sync's conversation, a key
    /// fetch's user) do not name it again.
    @Test func whatOthersAreToldFitsTheLimitWithTheRelaysFields() async throws {
        let codec = FrameCodecOptions(maxFrameSize: 4096)
        let carol = String(repeating: "c", count: RelayProtocol.maxIDBytes)
        try await withClientGroup { group in
            try await withRelay({
                $0.codec = codec; $0.groups = ["closed": ["bob"]]
            }) { server in
                let bob = try await TestClient.connect(to: server, as: "bob", group: group, codec: codec)
                let other = try await TestClient.connect(
                    to: server,
                    as: carol,
                    group: group,
                    deviceID: "d",
                    codec: codec
                )
                let watch = PresenceSubscription.with {
                    $0.action = .subscribe; $0.userIDs = [carol]
                }
                #expect(try await bob.ask(request(.presenceSubscription(watch), 1))?.requestResult?.errorCode == 0)
                var status = PresenceUpdate.with {
                    $0.status = .away; $0.customStatus = String(repeating: "s", count: 4_000)
                }
                let tooLarge = RelayProtocol.RequestError.tooLargeToDeliver
                #expect(try await other.ask(request(.presence(status), 2))?.requestResult?.errorCode == tooLarge)
                status.customStatus = "In a meeting"
                #expect(try await other.ask(request(.presence(status), 3))?.requestResult?.errorCode == 0)
                #expect(await eventually { bob.collector.presences.last?.customStatus == "In a meeting" })
                #expect(!bob.collector.presences.contains { $0.customStatus.count > 100 })

                // A membership change with an unknown field of 3,800 bytes.
                func padded(_ action: MembershipAction, _ group: String, id: UInt64) throws -> Frame {
                    let change = MembershipChange.with {
                        $0.action = action; $0.conversation = .group(group)
                    }
                    let bytes = change.serializedBytes() + Wire.field(15, [UInt8](repeating: 7, count: 3_800))
                    return request(.membership(try MembershipChange(serializedBytes: bytes)), id)
                }
                let join = { (id: UInt64) in RelayProtocol.membershipFrame(.join, group: "open", requestID: id) }
                #expect(try await bob.ask(join(4))?.requestResult?.errorCode == 0)
                #expect(try await other.ask(try padded(.join, "open", id: 5))?.requestResult?.errorCode == tooLarge)
                #expect(try await other.ask(join(6))?.requestResult?.errorCode == 0)
                let joins = {
                    bob.collector.frames.filter {
                        if case .membership(let change)? = $0.payload { change.userID == carol } else { false }
                    }
                }
                #expect(await eventually { joins().count == 1 })
                // The refused join reached no one: after a round trip of bob's, still one.
                #expect(try await bob.ask(request(.ping(.init()), 40))?.payload?.kind == .pong)
                #expect(joins().count == 1)

                // A leave is never refused: bob leaves the groups file's group with as large a
                // change (applied, told to no one).
                func sync(_ conversation: Conversation, _ id: UInt64) async throws -> Int32? {
                    guard
                        case .syncResponse(let page)? = try await bob.ask(
                            RelayProtocol.syncFrame(conversation, from: 1, requestID: id)
                        )?.payload
                    else { return nil }
                    return page.errorCode
                }
                #expect(try await sync(.group("closed"), 7) == 0)
                #expect(try await bob.ask(try padded(.leave, "closed", id: 8))?.requestResult?.errorCode == 0)
                #expect(try await sync(.group("closed"), 9) == RelayProtocol.RequestError.notAMember)
                let long = Conversation.group(String(repeating: "g", count: 3_900))
                #expect(try await sync(long, 10) == RelayProtocol.RequestError.unsupportedConversation)
                let fetch = KeyFetchRequest.with {
                    $0.userID = String(repeating: "u", count: 3_990); $0.kind = .signalPrekeys
                }
                guard
                    case .keyFetchResponse(let keys)? = try await bob.ask(request(.keyFetchRequest(fetch), 11))?.payload
                else {
                    Issue.record("no key_fetch_response")
                    return
                }
                #expect(keys.errorCode == RelayProtocol.RequestError.noKeys)
                #expect(bob.channel.isActive && bob.collector.decodeErrors.isEmpty)
                for client in [bob, other] { await client.close() }
            }
        }
    }

    @Test func presenceIsToldToSubscribers() async throws {
        try await withClientGroup { group in
            try await withRelay { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group)
                let subscribe = request(
                    .presenceSubscription(
                        PresenceSubscription.with {
                            $0.action = .subscribe
                            $0.userIDs = ["bob"]
                        }
                    ),
                    21
                )
                #expect(try await alice.ask(subscribe) != nil)
                #expect(alice.collector.result(of: 21)?.errorCode == 0)
                #expect(await eventually { alice.collector.presences.count == 1 })
                #expect(
                    alice.collector.presences.first?.userID == "bob"
                        && alice.collector.presences.first?.status == .offline
                )

                let bob = try await TestClient.connect(to: server, as: "bob", group: group, deviceID: "bob-phone")
                #expect(await eventually { alice.collector.presences.count == 2 })
                let online = alice.collector.presences[1]
                #expect(online.userID == "bob" && online.status == .online && online.deviceID == "bob-phone")
                await bob.close()
                #expect(await eventually { alice.collector.presences.count == 3 })
                let offline = alice.collector.presences[2]
                #expect(offline.status == .offline && offline.lastSeenMs > 0)

                // Subscribing again tells the current state at once (offline, with the time), once
                // however often the list names the user.
                let thrice = PresenceSubscription.with {
                    $0.action = .subscribe; $0.userIDs = ["bob", "bob", "bob"]
                }
                #expect(try await alice.ask(request(.presenceSubscription(thrice), 22)) != nil)
                #expect(await eventually { alice.collector.presences.count == 4 })
                #expect(alice.collector.presences[3].lastSeenMs == offline.lastSeenMs)
                #expect(try await alice.ask(request(.ping(Ping.with { $0.id = 2 }), 25)) != nil)
                #expect(alice.collector.presences.count == 4, "bob's presence once")

                let unsubscribe = request(
                    .presenceSubscription(
                        PresenceSubscription.with {
                            $0.action = .unsubscribe
                            $0.userIDs = ["bob"]
                        }
                    ),
                    23
                )
                #expect(try await alice.ask(unsubscribe) != nil)
                #expect(alice.collector.result(of: 23)?.errorCode == 0)
                let bob2 = try await TestClient.connect(to: server, as: "bob", group: group)
                // A ping round trip after bob's login: anything told about bob would have come first.
                #expect(try await alice.ask(request(.ping(Ping.with { $0.id = 1 }), 24)) != nil)
                #expect(alice.collector.presences.count == 4)
                await bob2.close()
                await alice.close()
            }
        }
    }

    /// `last_seen_ms` outlives a restart: alice, who logged out before it, is shown offline since
    /// the same time after it, and carol, online when the relay stopped, since its stop. Before, a
    /// restart made every offline user's `last_seen_ms` 0, which is what a user who blocked its
    /// watcher shows.
    @Test(arguments: StoreBackend.allCases)
    func lastSeenOutlivesARestart(_ backend: StoreBackend) async throws {
        let database = try await TestStore(backend)
        defer { database.remove() }
        let configure: (inout RelayConfiguration) -> Void = { $0.store = database.location }
        func seen(by bob: TestClient, id: UInt64) async throws -> [String: Int64] {
            let watch = PresenceSubscription.with {
                $0.action = .subscribe; $0.userIDs = ["alice", "carol"]
            }
            #expect(try await bob.ask(request(.presenceSubscription(watch), id))?.requestResult?.errorCode == 0)
            #expect(await eventually { bob.collector.presences.count == 2 })
            var seen: [String: Int64] = [:]
            for presence in bob.collector.presences where presence.status == .offline {
                seen[presence.userID] = presence.lastSeenMs
            }
            return seen
        }
        try await withClientGroup { group in
            var before: Int64 = 0
            var beforeStop: Int64 = 0
            let start = RelayProtocol.nowMs()
            try await withRelay(configure) { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group)
                await alice.close()
                let bob = try await TestClient.connect(to: server, as: "bob", group: group)
                var online = -1
                for _ in 0..<3_000 where online != 1 {  // Until alice's leaving is noted (30 s guard).
                    online = try await server.stats().get().usersOnline
                    if online != 1 { try await Task.sleep(for: .milliseconds(10)) }
                }
                #expect(online == 1)
                let carol = try await TestClient.connect(to: server, as: "carol", group: group)
                let shown = try await seen(by: bob, id: 1)
                before = shown["alice"] ?? 0
                #expect(before >= start && shown["carol"] == nil)
                await bob.close()
                // carol stays online: the relay's stop closes her connection, and is the time it
                // keeps for her (her login came before this).
                try await Task.sleep(for: .milliseconds(50))
                beforeStop = RelayProtocol.nowMs()
                withExtendedLifetime(carol) {}
            }
            try await withRelay(configure) { server in
                let bob = try await TestClient.connect(to: server, as: "bob", group: group, deviceID: "2")
                let shown = try await seen(by: bob, id: 2)
                #expect(shown["alice"] == before)
                #expect((shown["carol"] ?? 0) >= beforeStop, "carol was online until the relay stopped")
                await bob.close()
            }
        }
    }

    /// A user who blocked its watcher shows it nothing: the subscription is answered (it does not
    /// say the block) with the user offline and its last seen unknown, and neither its logins, its
    /// status nor its leaving reach the watcher; a watcher it did not block is told each. Before,
    /// a blocked user followed the blocker's every login, device, platform and status.
    @Test func aUserWhoBlockedItsWatcherShowsItNothing() async throws {
        try await withClientGroup { group in
            try await withRelay { server in
                let bob = try await TestClient.connect(to: server, as: "bob", group: group, deviceID: "phone")
                let block = BlocklistChange.with {
                    $0.action = .block; $0.userIDs = ["mallory"]
                }
                #expect(try await bob.ask(request(.blocklistChange(block), 1))?.requestResult?.errorCode == 0)
                let mallory = try await TestClient.connect(to: server, as: "mallory", group: group)
                let carol = try await TestClient.connect(to: server, as: "carol", group: group)
                let watch = PresenceSubscription.with {
                    $0.action = .subscribe; $0.userIDs = ["bob"]
                }
                for (watcher, id) in [(mallory, UInt64(2)), (carol, 3)] {
                    #expect(
                        try await watcher.ask(request(.presenceSubscription(watch), id))?.requestResult?.errorCode == 0
                    )
                    #expect(await eventually { watcher.collector.presences.count == 1 })
                }
                let hidden = mallory.collector.presences.first
                #expect(hidden?.status == .offline && hidden?.lastSeenMs == 0 && hidden?.deviceID == "")
                #expect(carol.collector.presences.first?.status == .online)
                #expect(carol.collector.presences.first?.deviceID == "phone")

                let laptop = try await TestClient.connect(to: server, as: "bob", group: group, deviceID: "laptop")
                let away = PresenceUpdate.with {
                    $0.status = .away; $0.customStatus = "In a meeting"
                }
                #expect(try await laptop.ask(request(.presence(away), 4))?.requestResult?.errorCode == 0)
                await laptop.close()
                await bob.close()
                // carol is told bob's status and his last device's leaving: mallory nothing.
                #expect(await eventually { carol.collector.presences.last?.status == .offline })
                #expect(carol.collector.presences.contains { $0.customStatus == "In a meeting" })
                #expect(try await mallory.ask(request(.ping(Ping.with { $0.id = 1 }), 5))?.payload?.kind == .pong)
                #expect(mallory.collector.presences.count == 1)

                // A block or an unblock after the subscription tells the watcher what it may now see.
                let phone = try await TestClient.connect(to: server, as: "bob", group: group, deviceID: "phone")
                #expect(await eventually { carol.collector.presences.last?.status == .online })
                var change = BlocklistChange.with {
                    $0.action = .unblock; $0.userIDs = ["mallory"]
                }
                #expect(try await phone.ask(request(.blocklistChange(change), 6))?.requestResult?.errorCode == 0)
                #expect(await eventually { mallory.collector.presences.last?.status == .online })
                #expect(mallory.collector.presences.last?.deviceID == "phone")
                change.action = .block
                #expect(try await phone.ask(request(.blocklistChange(change), 7))?.requestResult?.errorCode == 0)
                #expect(await eventually { mallory.collector.presences.last?.status == .offline })
                #expect(mallory.collector.presences.last?.lastSeenMs == 0)
                await phone.close()
                await mallory.close()
                await carol.close()
            }
        }
    }

    /// A user watches at most 1,000 users' presence: ten subscriptions of 100 are taken, one more
    /// user is refused with 3012 and changes nothing (no presence comes for it), ids already watched
    /// cost nothing, and an unsubscription makes room. Before, the subscriptions of one connection
    /// grew by 100 ids a request without end.
    @Test func aUserWatchesAtMostAThousandUsers() async throws {
        try await withClientGroup { group in
            try await withRelay { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group)
                func watch(
                    _ ids: [String],
                    _ action: SubscriptionAction = .subscribe,
                    id: UInt64
                ) async throws -> Int32? {
                    let subscription = PresenceSubscription.with {
                        $0.action = action; $0.userIDs = ids
                    }
                    return try await alice.ask(request(.presenceSubscription(subscription), id))?.requestResult?
                        .errorCode
                }
                for batch in 0..<10 {
                    #expect(try await watch((0..<100).map { "w\(batch * 100 + $0)" }, id: UInt64(batch + 1)) == 0)
                }
                #expect(await eventually { alice.collector.presences.count == 1_000 })
                #expect(try await watch(["w1000"], id: 20) == RelayProtocol.RequestError.listFull)
                #expect(try await watch(["w1", "w2"], id: 21) == 0, "already watched")
                #expect(try await watch(["w0"], .unsubscribe, id: 22) == 0)
                #expect(try await watch(["w1000", "w1001"], id: 23) == RelayProtocol.RequestError.listFull)
                #expect(try await watch(["w1000"], id: 24) == 0)
                #expect(await eventually { alice.collector.presences.count == 1_003 })
                #expect(!alice.collector.presences.contains { $0.userID == "w1001" })
                await alice.close()
            }
        }
    }

    // One scenario, read top to bottom: kept as one function (over 80 lines).
    /// Pins and timers are forwarded unchanged; a reaction with the summary the relay keeps
    /// (RelayReactionTests), poll votes and results as the relay tallies them (RelayPollTests).
    @Test func reactionsPinsAndTimersAreForwardedUnchanged() async throws {
        try await withClientGroup { group in
            try await withRelay({ $0.groups = ["team": ["alice", "bob", "carol"]] }) { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group)
                let bob = try await TestClient.connect(to: server, as: "bob", group: group)
                let carol = try await TestClient.connect(to: server, as: "carol", group: group)
                try await alice.send(
                    Frame(Message.c2cText(from: "alice", to: "bob", "react to me", clientMsgID: "r-1"))
                )
                try await alice.send(
                    Frame(Message.groupText(from: "alice", group: "team", "pin me", clientMsgID: "p-1"))
                )
                #expect(await eventually { bob.collector.messages.count == 2 && carol.collector.messages.count == 1 })
                let direct = bob.collector.messages[0]
                let pinned = bob.collector.messages[1]

                // One-to-one: bob's reaction goes back to the sender of the message (alice).
                let reaction = Frame(
                    .reaction(
                        ReactionEvent.with {
                            $0.message = direct.reference
                            $0.userID = "bob"
                            $0.emoji = "👍"
                            $0.action = .add
                            $0.timeMs = 1
                        }
                    )
                )
                try await bob.send(reaction)
                // A disappearing timer in the one-to-one conversation, from alice: to bob.
                let timer = Frame(
                    .disappearingTimer(
                        DisappearingTimerEvent.with {
                            $0.conversation = .oneToOne("bob")
                            $0.expireAfterS = 60
                            $0.operatorID = "alice"
                        }
                    )
                )
                try await alice.send(timer)
                // Group: a pin reaches the other members.
                let pin = Frame(
                    .pin(
                        PinEvent.with {
                            $0.conversation = .group("team")
                            $0.message = pinned.reference
                            $0.pinned = true
                            $0.operatorID = "bob"
                        }
                    )
                )
                let events: Set<Frame.Payload.Kind?> = [.reaction, .disappearingTimer, .pin]
                func received(_ client: TestClient) -> [Frame] {
                    client.collector.frames.filter { events.contains($0.payload?.kind) }
                }
                try await bob.send(pin)
                #expect(
                    await eventually {
                        received(alice).count == 2 && received(bob).count == 1 && received(carol).count == 1
                    }
                )
                // Forwarded unchanged but for the receiving user's stream position, which only grows.
                for client in [alice, bob, carol] {
                    let positions = received(client).map(\.streamPosition)
                    #expect(positions.allSatisfy { $0 > 0 } && positions == positions.sorted(), "\(positions)")
                }
                func unstamped(_ frames: [Frame]) -> [Frame] {
                    frames.map {
                        var frame = $0; frame.streamPosition = 0; return frame
                    }
                }
                var summed = reaction
                if case .reaction(var event)? = reaction.payload {
                    event.summary = [
                        ReactionSummary.with {
                            $0.emoji = "👍"; $0.count = 1; $0.userIDs = ["bob"]
                        }
                    ]
                    summed.payload = .reaction(event)
                }
                #expect(unstamped(received(alice)) == [summed, pin])
                #expect(unstamped(received(bob)) == [timer])
                #expect(unstamped(received(carol)) == [pin])
                // Not a member: refused with a notice, the connection kept.
                let outsider = try await TestClient.connect(to: server, as: "dave", group: group)
                try await outsider.send(
                    Frame(
                        .pin(
                            PinEvent.with {
                                $0.conversation = .group("team"); $0.pinned = true
                            }
                        )
                    )
                )
                #expect(await eventually { outsider.collector.notices.contains { $0.params["code"] == "unroutable" } })
                // With a request id, a request_result (before, a notice, and the request went
                // unanswered).
                let asked = try await outsider.ask(
                    RelayProtocol.answer(
                        .pin(
                            PinEvent.with {
                                $0.conversation = .group("team"); $0.pinned = true
                            }
                        ),
                        requestID: 9
                    )
                )
                #expect(asked?.requestResult?.errorCode == RelayProtocol.RequestError.notAMember)
                #expect(received(alice).count == 2 && outsider.channel.isActive)
                for client in [alice, bob, carol, outsider] { await client.close() }
            }
        }
    }

    /// Receivers take a message's `sender_device_id` and a call signal's `device_id` for the device
    /// that sent them (an ACCEPT on one device stops the others ringing), so each is the
    /// connection's device or empty, as `sender_id` is its user: another device's id gets 1001
    /// (a message) or 3003 (a call), and reaches no one. Before, any device id went through.
    @Test func aSenderSpeaksForItsOwnDeviceOnly() async throws {
        try await withClientGroup { group in
            try await withRelay { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group, deviceID: "phone")
                let bob = try await TestClient.connect(to: server, as: "bob", group: group, deviceID: "desk")
                func send(device: String, id: UInt64) async throws -> Int32? {
                    var message = Message.c2cText(from: "alice", to: "bob", "m\(id)", clientMsgID: "a-\(id)")
                    message.senderDeviceID = device
                    return try await alice.ask(RelayProtocol.answer(.message(message), requestID: id))?.sendAck?
                        .errorCode
                }
                #expect(try await send(device: "laptop", id: 1) == RelayProtocol.AckError.senderMismatch)
                #expect(try await send(device: "phone", id: 2) == 0)
                #expect(try await send(device: "", id: 3) == 0)
                #expect(await eventually { bob.collector.messages.count == 2 })
                #expect(bob.collector.messages.map(\.clientMsgID) == ["a-2", "a-3"])

                func call(device: String, id: UInt64) -> Frame {
                    RelayProtocol.answer(
                        .call(
                            CallEvent.with {
                                $0.callID = "call-\(id)"; $0.conversation = .oneToOne("bob"); $0.userID = "alice"
                                $0.signal = .invite; $0.deviceID = device
                            }
                        ),
                        requestID: id
                    )
                }
                #expect(
                    try await alice.ask(call(device: "laptop", id: 4))?.requestResult?.errorCode
                        == RelayProtocol.RequestError.badRequest
                )
                // A call that passes is not answered (checkEvent); bob gets it, and only it.
                try await alice.send(call(device: "phone", id: 5))
                let calls = {
                    bob.collector.frames.compactMap { if case .call(let c)? = $0.payload { c } else { nil } }
                }
                #expect(await eventually { !calls().isEmpty })
                #expect(calls().map(\.callID) == ["call-5"] && calls().first?.deviceID == "phone")
                #expect(alice.channel.isActive)
                for client in [alice, bob] { await client.close() }
            }
        }
    }
}
#endif
