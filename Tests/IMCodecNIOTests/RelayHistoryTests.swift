#if Tools
import Foundation
import IMCodec
import IMCodecNIO
import NIOCore
import NIOPosix
import Testing

@testable import imcodec_relay

/// History pages through the relay (events.proto HistoryRequest): cursors both ways, sort and
/// skip; QuickBlox's search operators (sender, recipient, text, updated_at) and `mark_as_read`;
/// messages served as they now are (edits applied, extension keys current, recalled ones and
/// cleared history left out), kept across a restart.
@Suite("Relay: history pages, filters and mark-as-read", .timeLimit(.minutes(2)))
struct RelayHistoryTests {
    /// One page reads from the store at most twice a frame's worth of frames (the index knows each
    /// one's size): a search that matches nothing goes on page by page, not through a thousand
    /// frames at once (up to a gigabyte per request at the default frame size limit), and the pages
    /// of history and of sync still hold every message once, in order, either way.
    @Test func aPageReadsAtMostTwiceAFramesWorthOfFrames() async throws {
        try await withClientGroup { group in
            try await withRelay({
                $0.codec = FrameCodecOptions(maxFrameSize: 4096); $0.groups = ["team": ["alice", "bob"]]
            }) { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group)
                let bob = try await TestClient.connect(to: server, as: "bob", group: group)
                // Twelve messages of about 1,600 bytes: five fit 8,192 bytes.
                for index in 1...12 {
                    let text = "\(index) " + String(repeating: "x", count: 1_500)
                    let id = "m\(index)"
                    try await alice.send(Frame(Message.groupText(from: "alice", group: "team", text, clientMsgID: id)))
                }
                #expect(await eventually { bob.collector.messages.count == 12 })
                var id: UInt64 = 0
                func pages(_ configure: @escaping (inout HistoryRequest) -> Void) async throws -> [[UInt64]] {
                    var cursor = ""
                    var seqs: [[UInt64]] = []
                    for _ in 0..<20 {
                        id += 1
                        let page = try #require(
                            try await Self.page(bob, id: id) {
                                $0.conversation = .group("team"); $0.cursor = cursor; configure(&$0)
                            }
                        )
                        seqs.append(page.messages.map(\.seq))
                        if page.finished { return seqs }
                        cursor = page.nextCursor
                    }
                    Issue.record("no last page")
                    return seqs
                }
                // A search that matches nothing: three pages (5, 5 and 2 frames read), none with a message.
                let searched = try await pages {
                    $0.textContains = "absent"; $0.direction = .newer
                }
                #expect(searched == [[], [], []])
                let searchedOlder = try await pages {
                    $0.textContains = "absent"; $0.direction = .older
                }
                #expect(searchedOlder == [[], [], []])
                // Every message once, in order, newer and older (two fit one 4 KiB answer).
                let newer = try await pages { $0.direction = .newer }
                #expect(newer.flatMap { $0 } == Array(1...12))
                let older = try await pages { $0.direction = .older }
                #expect(older.flatMap { $0 } == Array((1...12).reversed()))
                // Sync pages too.
                var synced: [UInt64] = []
                var from: UInt64 = 0
                for _ in 0..<20 {
                    id += 1
                    let request = SyncRequest.with {
                        $0.conversation = .group("team"); $0.fromSeq = from
                    }
                    let answer = try await RelayUserStateTests.ask(bob, .syncRequest(request), id: id)
                    guard case .syncResponse(let response)? = answer?.payload else {
                        Issue.record("no sync response")
                        break
                    }
                    synced += response.messages.map(\.seq)
                    guard response.hasMore else { break }
                    from = response.nextFromSeq
                }
                #expect(synced == Array(1...12))
                for client in [alice, bob] { await client.close() }
            }
        }
    }

    static func page(
        _ client: TestClient,
        id: UInt64,
        _ configure: (inout HistoryRequest) -> Void
    ) async throws
        -> HistoryResponse?
    {
        var request = HistoryRequest.with { $0.count = 20 }
        configure(&request)
        let answer = try await RelayUserStateTests.ask(client, .historyRequest(request), id: id)
        guard case .historyResponse(let page)? = answer?.payload else { return nil }
        #expect(Frame(.historyResponse(page)).validate().isEmpty, "\(Frame(.historyResponse(page)).validate())")
        return page
    }

    static func refusal(
        _ client: TestClient,
        id: UInt64,
        _ configure: (inout HistoryRequest) -> Void
    ) async throws
        -> Int32?
    {
        var request = HistoryRequest.with { $0.count = 20 }
        configure(&request)
        return try await RelayUserStateTests.ask(client, .historyRequest(request), id: id).flatMap(\.requestResult)?
            .errorCode
    }

    static func texts(_ page: HistoryResponse?) -> [String] {
        page?.messages.map(\.previewText) ?? ["no page"]
    }

    /// Seven one-to-one messages read back in pages of three, older then newer, with the cursor
    /// each page gives; sort, skip, the direction a message is shown with, a cursor the relay never
    /// gave, and one at the largest seq (no overflow).
    @Test func pagesGoBothWaysWithCursorsSortAndSkip() async throws {
        try await withClientGroup { group in
            try await withRelay { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group, deviceID: "a")
                let bob = try await TestClient.connect(to: server, as: "bob", group: group, deviceID: "b")
                for index in 1...7 {
                    let sender = index % 2 == 1 ? alice : bob
                    let from = index % 2 == 1 ? "alice" : "bob"
                    let to = index % 2 == 1 ? "bob" : "alice"
                    try await sender.send(
                        Frame(
                            Message(
                                from: from,
                                in: .oneToOne(to),
                                elements: [.text("m\(index)")],
                                clientMsgID: "c\(index)"
                            )
                        )
                    )
                    #expect(
                        await eventually { (index % 2 == 1 ? bob : alice).collector.messages.count == (index + 1) / 2 }
                    )
                }
                let direct = Conversation.oneToOne("alice")
                let first = try #require(
                    try await Self.page(bob, id: 1) {
                        $0.conversation = direct; $0.count = 3
                    }
                )
                #expect(Self.texts(first) == ["m7", "m6", "m5"], "newest first, older by default")
                #expect(!first.finished)
                #expect(first.messages.map(\.direction) == [.received, .sent, .received])
                let second = try await Self.page(bob, id: 2) {
                    $0.conversation = direct; $0.count = 3; $0.cursor = first.nextCursor
                }
                #expect(Self.texts(second) == ["m4", "m3", "m2"])
                let third = try await Self.page(bob, id: 3) {
                    $0.conversation = direct; $0.count = 3; $0.cursor = second?.nextCursor ?? ""
                }
                #expect(Self.texts(third) == ["m1"] && third?.finished == true)

                let forward = try #require(
                    try await Self.page(bob, id: 4) {
                        $0.conversation = direct; $0.count = 4; $0.direction = .newer
                    }
                )
                #expect(Self.texts(forward) == ["m1", "m2", "m3", "m4"] && !forward.finished)
                let rest = try await Self.page(bob, id: 5) {
                    $0.conversation = direct; $0.count = 4; $0.direction = .newer; $0.cursor = forward.nextCursor
                }
                #expect(Self.texts(rest) == ["m5", "m6", "m7"] && rest?.finished == true)

                let sorted = try await Self.page(bob, id: 6) {
                    $0.conversation = direct; $0.count = 3; $0.sort = .oldestFirst
                }
                #expect(Self.texts(sorted) == ["m5", "m6", "m7"])
                let skipped = try await Self.page(bob, id: 7) {
                    $0.conversation = direct; $0.count = 2; $0.skip = 2
                }
                #expect(Self.texts(skipped) == ["m5", "m4"], "QuickBlox skip: the first matches are passed over")

                #expect(
                    try await Self.refusal(bob, id: 8) {
                        $0.conversation = direct; $0.cursor = "next"
                    } == 3003
                )
                let beyond = try await Self.page(bob, id: 9) {
                    $0.conversation = direct; $0.direction = .newer; $0.cursor = "\(UInt64.max)"
                }
                #expect(beyond?.messages.isEmpty == true && beyond?.finished == true)
                let below = try await Self.page(bob, id: 10) {
                    $0.conversation = direct; $0.cursor = "0"
                }
                #expect(below?.messages.isEmpty == true && below?.finished == true)
                for client in [alice, bob] { await client.close() }
            }
        }
    }

    /// A session has at most 8 requests waiting for the store (history, sync by seq, stream sync,
    /// the conversation list): the next is refused with 3013 and nothing is read for it. A flood of
    /// 60 history requests is answered whole, each page or 3013, and the session's count goes back
    /// to 0. Before, every request a client sent queued a read whose rows (up to a scan of 1,000
    /// whole frames) the relay held until its answer went.
    @Test func aSessionHasAtMostEightRequestsWaitingForTheStore() async throws {
        try await withClientGroup { group in
            try await withRelay { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group)
                let bob = try await TestClient.connect(to: server, as: "bob", group: group)
                try await alice.send(Frame(Message.c2cText(from: "alice", to: "bob", "hello", clientMsgID: "h-1")))
                #expect(await eventually { bob.collector.messages.count == 1 })
                func inFlight(_ count: Int?) async throws -> [Int] {
                    try await server.withRouter { router in
                        let sessions = router.sessions["bob"] ?? []
                        if let count { for session in sessions { session.readsInFlight = count } }
                        return sessions.map(\.readsInFlight)
                    }.get()
                }
                // As if eight were waiting: each kind of read is refused, and nothing is read.
                #expect(try await inFlight(Session.maxReadsInFlight) == [Session.maxReadsInFlight])
                let requests: [Frame.Payload] = [
                    .historyRequest(
                        .with {
                            $0.conversation = .oneToOne("alice"); $0.count = 20
                        }
                    ),
                    .syncRequest(.with { $0.conversation = .oneToOne("alice") }),
                    .streamSyncRequest(.init()),
                    .conversationListRequest(.with { $0.limit = 100 }),
                ]
                // Each in its own answer where it has an error code; history in a request result.
                for (index, request) in requests.enumerated() {
                    let answer = try await RelayUserStateTests.ask(bob, request, id: 1 + UInt64(index))
                    let code: Int32?
                    switch answer?.payload {
                    case .syncResponse(let response)?: code = response.errorCode
                    case .streamSyncResponse(let response)?: code = response.errorCode
                    case .conversationList(let list)?: code = list.errorCode
                    case .requestResult(let result)?: code = request.kind == .historyRequest ? result.errorCode : nil
                    default: code = nil
                    }
                    #expect(code == RelayProtocol.RequestError.busy, "\(request.kind): \(String(describing: answer))")
                }
                #expect(try await inFlight(0) == [0])
                #expect(try await Self.page(bob, id: 10) { $0.conversation = .oneToOne("alice") }?.messages.count == 1)

                // A flood: every request is answered, with a page or 3013, and none is left waiting.
                let ids = (100..<160).map(UInt64.init)
                for id in ids {
                    let request = HistoryRequest.with {
                        $0.conversation = .oneToOne("alice"); $0.count = 20
                    }
                    bob.channel.write(RelayProtocol.answer(.historyRequest(request), requestID: id), promise: nil)
                }
                bob.channel.flush()
                #expect(await eventually { ids.allSatisfy { bob.collector.answer(to: $0) != nil } })
                let answers = ids.compactMap { bob.collector.answer(to: $0) }
                #expect(
                    answers.allSatisfy {
                        $0.payload?.kind == .historyResponse
                            || $0.requestResult?.errorCode == RelayProtocol.RequestError.busy
                    }
                )
                #expect(answers.contains { $0.payload?.kind == .historyResponse })
                #expect(try await inFlight(nil) == [0])
                for client in [alice, bob] { await client.close() }
            }
        }
    }

    /// What a user deleted for itself is kept only while the relay keeps the message: with 5 kept a
    /// conversation, bob deletes each of 12 messages as it comes, and his record ends with the last
    /// 5 seqs. Before, it held every seq he ever deleted, and was rewritten whole with each delete.
    @Test func aDeleteForMeIsKeptOnlyWhileTheMessageIs() async throws {
        let database = try await TestStore(.sqlite)
        defer { database.remove() }
        try await withClientGroup { group in
            try await withRelay({
                $0.store = database.location; $0.maxMessagesPerConversation = 5
            }) { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group, deviceID: "a")
                let bob = try await TestClient.connect(to: server, as: "bob", group: group, deviceID: "phone")
                for index in 1...12 {
                    try await alice.send(
                        Frame(Message.c2cText(from: "alice", to: "bob", "m\(index)", clientMsgID: "d-\(index)"))
                    )
                    try #require(await eventually { bob.collector.messages.count == index })
                    let delete = DeleteEvent.with {
                        $0.messages = [bob.collector.messages[index - 1].reference]; $0.scope = .onlyMe
                        $0.operatorID = "bob"
                    }
                    let answer = try await RelayUserStateTests.ask(bob, .delete(delete), id: UInt64(index))
                    #expect(answer?.requestResult?.errorCode == 0)
                }
                for client in [alice, bob] { await client.close() }
            }
        }
        let store = try database.open()
        defer { store.close() }
        let bytes = try #require(try store.load().records[.deletedForMe(user: "bob", .direct("alice", "bob"))])
        #expect(SeqListBytes.seqs(bytes[...]) == Array(8...12))
    }

    /// events.proto DeleteEvent, scope ONLY_ME: the messages go for the user who deleted them. Before,
    /// the relay only passed the event to the user's other devices, and history, sync by seq and the
    /// conversation list served the messages again to any device that read back. Now none of those
    /// reads serves them to that user (the other side still has them), across a restart too.
    @Test(arguments: StoreBackend.allCases)
    func aMessageDeletedForMeIsServedToMeNoMore(_ backend: StoreBackend) async throws {
        let database = try await TestStore(backend)
        defer { database.remove() }
        let configure: (inout RelayConfiguration) -> Void = { $0.store = database.location }
        func deleteForMe(_ client: TestClient, _ messages: [Message], id: UInt64) async throws -> Int32? {
            let delete = DeleteEvent.with {
                $0.messages = messages.map(\.reference); $0.scope = .onlyMe; $0.operatorID = "bob"
            }
            return try await RelayUserStateTests.ask(client, .delete(delete), id: id)?.requestResult?.errorCode
        }
        func reads(
            _ client: TestClient,
            id: UInt64
        ) async throws -> (history: [String], bySeq: [String], unread: UInt32, last: String?) {
            let page = try await Self.page(client, id: id) { $0.conversation = .oneToOne("alice") }
            let sync = try await client.ask(RelayProtocol.syncFrame(.oneToOne("alice"), from: 1, requestID: id + 1))
            guard case .syncResponse(let bySeq)? = sync?.payload else {
                throw ReadBackError(description: "no sync page")
            }
            let entry = RelayUserStateTests.entry(
                try await RelayUserStateTests.list(client, id: id + 2),
                .oneToOne("alice")
            )
            return (
                Self.texts(page).sorted(), bySeq.messages.map { $0.firstText ?? "" }, entry?.unreadCount ?? 0,
                entry?.lastMessage?.firstText
            )
        }
        try await withClientGroup { group in
            try await withRelay(configure) { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group, deviceID: "a")
                let bob = try await TestClient.connect(to: server, as: "bob", group: group, deviceID: "phone")
                for index in 1...3 {
                    try await alice.send(
                        Frame(Message.c2cText(from: "alice", to: "bob", "m\(index)", clientMsgID: "d-\(index)"))
                    )
                }
                // A failed wait ends the test here rather than crash the process on an index.
                try #require(await eventually { bob.collector.messages.count == 3 })
                let received = bob.collector.messages
                #expect(try await deleteForMe(bob, [received[1]], id: 1) == 0)
                let afterOne = try await reads(bob, id: 10)
                #expect(afterOne.history == ["m1", "m3"] && afterOne.bySeq == ["m1", "m3"])
                #expect(afterOne.unread == 2 && afterOne.last == "m3")
                // The last message too: the entry shows none until a newer one.
                #expect(try await deleteForMe(bob, [received[2]], id: 2) == 0)
                let afterTwo = try await reads(bob, id: 20)
                #expect(afterTwo.history == ["m1"] && afterTwo.bySeq == ["m1"] && afterTwo.unread == 1)
                #expect(afterTwo.last == nil)
                // Alice still has all three.
                let hers = try await Self.page(alice, id: 30) { $0.conversation = .oneToOne("bob") }
                #expect(Self.texts(hers).sorted() == ["m1", "m2", "m3"])
                for client in [alice, bob] { await client.close() }
            }
            try await withRelay(configure) { server in
                let laptop = try await TestClient.connect(to: server, as: "bob", group: group, deviceID: "laptop")
                let restarted = try await reads(laptop, id: 40)
                #expect(restarted.history == ["m1"] && restarted.bySeq == ["m1"] && restarted.unread == 1)
                await laptop.close()
            }
        }
    }

    /// events.proto HistoryRequest.count: "Messages wanted; servers cap it". Before, a count above
    /// 100 was refused (3003); now it is capped at 100, and a count of 0 is still refused.
    @Test func aCountAbove100IsCappedAndACountOf0Refused() async throws {
        try await withClientGroup { group in
            try await withRelay { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group)
                for index in 1...3 {
                    try await alice.send(
                        Frame(Message.c2cText(from: "alice", to: "bob", "m\(index)", clientMsgID: "h-\(index)"))
                    )
                }
                #expect(await eventually { alice.collector.acks.count == 3 })
                let page = try await Self.page(alice, id: 1) {
                    $0.conversation = .oneToOne("bob"); $0.count = 1000
                }
                #expect(Self.texts(page).sorted() == ["m1", "m2", "m3"])
                #expect(
                    try await Self.refusal(alice, id: 2) {
                        $0.conversation = .oneToOne("bob"); $0.count = 0
                    } == 3003
                )
                await alice.close()
            }
        }
    }

    /// What bob's device `device` reads back of his conversation with alice: the kinds of his stream's
    /// frames, and the texts of a sync by seq and of history.
    static func readBack(
        _ server: RelayServer,
        _ group: any EventLoopGroup,
        _ device: String
    ) async throws -> (
        stream: [Frame.Payload.Kind?], bySeq: [String], history: [String]
    ) {
        let reader = try await TestClient.connect(to: server, as: "bob", group: group, deviceID: device)
        guard let page = try await reader.streamPage(requestID: 901) else {
            throw ReadBackError(description: "no stream page")
        }
        let kinds = page.map { $0.payload?.kind }
        let sync = try #require(
            try await reader.ask(RelayProtocol.syncFrame(.oneToOne("alice"), from: 1, requestID: 902))
        )
        guard case .syncResponse(let bySeq)? = sync.payload else {
            throw ReadBackError(description: "no sync page")
        }
        let history = try #require(
            try await RelayUserStateTests.ask(
                reader,
                .historyRequest(
                    HistoryRequest.with {
                        $0.conversation = .oneToOne("alice"); $0.count = 20
                    }
                ),
                id: 903
            )
        )
        guard case .historyResponse(let read)? = history.payload else {
            throw ReadBackError(description: "no history page")
        }
        await reader.close()
        return (kinds, bySeq.messages.map { $0.firstText ?? "" }, read.messages.map { $0.previewText })
    }

    /// Between its expiry and the sweep that erases it, a disappearing message is served to no one
    /// already (the sweeps are an hour apart here): reads leave it out, and an edit is refused.
    @Test func anExpiredMessageIsLeftOutBeforeTheSweepErasesIt() async throws {
        try await withClientGroup { group in
            let clock = TestClock()
            try await withRelay({
                $0.expirySweepInterval = .hours(1); $0.clock = clock.now
            }) { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group)
                var fleeting = Message.c2cText(from: "alice", to: "bob", "gone soon", clientMsgID: "w-1")
                fleeting.expireAfterS = 3600
                try await alice.send(Frame(fleeting))
                try await alice.send(Frame(Message.c2cText(from: "alice", to: "bob", "stays", clientMsgID: "w-2")))
                #expect(await eventually { alice.collector.acks.count == 2 })
                let ack = alice.collector.acks[0]
                clock.advance(past: ack.serverTimeMs + 3_600_000)
                let read = try await Self.readBack(server, group, "phone")
                #expect(read.stream == [.message] && read.bySeq == ["stays"] && read.history == ["stays"])
                let edit = EditEvent.with {
                    $0.message = MessageRef.with {
                        $0.conversation = .oneToOne("bob"); $0.senderID = "alice"; $0.clientMsgID = "w-1"
                        $0.seq = ack.seq
                    }
                    $0.editorID = "alice"; $0.timeMs = RelayProtocol.nowMs()
                    $0.newMessage = Message.c2cText(from: "alice", to: "bob", "again", clientMsgID: "w-1")
                }
                #expect(
                    try await RelayUserStateTests.ask(alice, .edit(edit), id: 4)?.requestResult?.errorCode
                        == RelayProtocol.RequestError.messageRemoved
                )
                await alice.close()
            }
        }
    }

    /// A disappearing message (`expire_after_s`) is served to no one once it expires, nor the edit
    /// and the extension kept about it: not by stream sync, sync by seq, history, the conversation
    /// list or an extension fetch, and an edit of it is refused (3005); the store has erased their
    /// frames within a sweep. Across a restart, on both durable stores: the expiry is kept.
    @Test(arguments: StoreBackend.allCases)
    func aDisappearingMessageIsServedToNoOneOnceItExpires(_ backend: StoreBackend) async throws {
        let database = try await TestStore(backend)
        defer { database.remove() }
        // The relay's clock is moved past the expiries rather than waited for: the checks before
        // it run however slowly (ThreadSanitizer).
        let clock = TestClock()
        let configure: (inout RelayConfiguration) -> Void = {
            $0.store = database.location; $0.clock = clock.now
        }
        var fleeting = Message.c2cText(from: "alice", to: "bob", "gone soon", clientMsgID: "d-1")
        fleeting.expireAfterS = 3600
        fleeting.flags = MessageFlags.supportExtension.rawValue
        var expireAtMs: Int64 = 0
        var lastExpiry: Int64 = 0
        var reference = MessageRef()
        try await withClientGroup { group in
            try await withRelay(configure) { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group)
                let bob = try await TestClient.connect(to: server, as: "bob", group: group)
                try await alice.send(Frame(fleeting))
                try await alice.send(Frame(Message.c2cText(from: "alice", to: "bob", "stays", clientMsgID: "d-2")))
                // The last message of alice's conversation with carol disappears too.
                var toCarol = Message.c2cText(from: "alice", to: "carol", "bye carol", clientMsgID: "d-3")
                toCarol.expireAfterS = 3600
                try await alice.send(Frame(toCarol))
                #expect(await eventually { bob.collector.messages.count == 2 && alice.collector.acks.count == 3 })
                lastExpiry = alice.collector.acks[2].serverTimeMs + 3_600_000
                let received = bob.collector.messages[0]
                expireAtMs = received.expireAtMs
                reference = received.reference
                #expect(expireAtMs == received.serverTimeMs + 3_600_000)
                let edit = EditEvent.with {
                    $0.message = reference; $0.editorID = "alice"; $0.timeMs = RelayProtocol.nowMs()
                    $0.newMessage = Message.c2cText(from: "alice", to: "bob", "edited secret", clientMsgID: "d-1")
                }
                #expect(try await RelayUserStateTests.ask(alice, .edit(edit), id: 1)?.requestResult?.errorCode == 0)
                let update = ExtensionUpdate.with {
                    $0.message = reference
                    $0.set = [
                        .with {
                            $0.key = "seen"; $0.value = "yes"; $0.version = 0
                        }
                    ]
                }
                #expect(
                    try await RelayUserStateTests.ask(bob, .extensionUpdate(update), id: 2)?.requestResult?.errorCode
                        == 0
                )
                // Before it expires, everyone reads it, edited.
                let before = try await Self.readBack(server, group, "laptop")
                #expect(before.stream == [.message, .message, .edit, .extensionUpdate])
                #expect(
                    before.bySeq == ["gone soon", "stays"] && before.history.sorted() == ["edited secret", "stays"]
                )
                for client in [alice, bob] { await client.close() }
            }
            // It expires while no relay runs.
            clock.advance(past: lastExpiry)
            try await withRelay(configure) { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group)
                let after = try await Self.readBack(server, group, "tablet")
                #expect(after.stream == [.message] && after.bySeq == ["stays"] && after.history == ["stays"])
                let edit = EditEvent.with {
                    $0.message = reference; $0.editorID = "alice"; $0.timeMs = RelayProtocol.nowMs()
                    $0.newMessage = Message.c2cText(from: "alice", to: "bob", "again", clientMsgID: "d-1")
                }
                #expect(
                    try await RelayUserStateTests.ask(alice, .edit(edit), id: 3)?.requestResult?.errorCode
                        == RelayProtocol.RequestError.messageRemoved
                )
                let fetch = try #require(
                    try await RelayUserStateTests.ask(
                        alice,
                        .extensionFetchRequest(ExtensionFetchRequest.with { $0.messages = [reference] }),
                        id: 4
                    )
                )
                guard case .extensionFetchResponse(let fetched)? = fetch.payload else {
                    Issue.record("no extension_fetch_response")
                    return
                }
                #expect(fetched.extensions.isEmpty)
                let list = try #require(
                    try await RelayUserStateTests.ask(alice, .conversationListRequest(ConversationListRequest()), id: 5)
                )
                guard case .conversationList(let conversations)? = list.payload else {
                    Issue.record("no conversation_list")
                    return
                }
                let last = Dictionary(
                    uniqueKeysWithValues: conversations.conversations.map {
                        ($0.conversation?.targetID ?? "", $0.lastMessage?.firstText)
                    }
                )
                #expect(last == ["bob": "stays", "carol": nil])
                await alice.close()
            }
        }
        // Erased from the store, not only left out: the message's frame and the events' frames.
        let store = try database.open()
        defer { store.close() }
        let kept = try store.messages(
            in: .direct("alice", "bob"),
            from: 1,
            through: 2,
            limit: 10,
            visibleTo: "bob"
        )
        #expect(kept.map(\.frame.isEmpty) == [true, false] && kept.map(\.expireAtMs) == [expireAtMs, 0])
        // The last entry, with no frame, is where bob's conversation list changed: the message had
        // been unread.
        let stream = try store.stream(of: "bob", after: 0, through: 100, limit: 100)
        #expect(stream.map(\.expireAtMs) == [expireAtMs, 0, expireAtMs, expireAtMs, 0])
        #expect(stream.map(\.frame.isEmpty) == [true, false, true, true, true])
    }

    /// events.proto: a recall or a delete for everyone removes a message for every participant, and
    /// session.proto: a sync skips the seqs with no message. So what a recalled message said is
    /// served to no one: stream sync gives a device, at the same positions, the message as a stub
    /// (its ids, status RECALLED, no content), the edit kept about it without its new content, and
    /// the recall; sync by seq skips it and history leaves it out. The store keeps only the stub
    /// and the redacted edit, so a restart serves nothing of it either. Before, stream sync and
    /// sync by seq served the original to every device that read back later, and stream sync the
    /// edit's new content.
    @Test(arguments: StoreBackend.allCases)
    func aRecalledMessageAndTheEditKeptAboutItAreServedToNoOne(_ backend: StoreBackend) async throws {
        let database = try await TestStore(backend)
        defer { database.remove() }
        let configure: (inout RelayConfiguration) -> Void = { $0.store = database.location }
        let secret = Array("secret".utf8)
        /// What a new device of bob's reads back, and whether any frame of his stream holds "secret".
        func readBack(
            _ server: RelayServer,
            _ group: any EventLoopGroup,
            _ device: String
        ) async throws -> (
            stream: [Frame.Payload.Kind?], bySeq: [String], history: [String], leaks: Bool
        ) {
            let read = try await Self.readBack(server, group, device)
            let reader = try await TestClient.connect(to: server, as: "bob", group: group, deviceID: device + "-raw")
            let frames = try #require(try await reader.streamPage(requestID: 904))
            await reader.close()
            let leaks = frames.contains { $0.serializedBytes().contains(subsequence: secret) }
            return (read.stream, read.bySeq, read.history, leaks)
        }
        try await withClientGroup { group in
            try await withRelay(configure) { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group)
                let bob = try await TestClient.connect(to: server, as: "bob", group: group)
                try await alice.send(Frame(Message.c2cText(from: "alice", to: "bob", "secret", clientMsgID: "r-1")))
                try await alice.send(Frame(Message.c2cText(from: "alice", to: "bob", "stays", clientMsgID: "r-2")))
                #expect(await eventually { bob.collector.messages.count == 2 })
                let reference = bob.collector.messages[0].reference
                let edit = EditEvent.with {
                    $0.message = reference; $0.editorID = "alice"; $0.timeMs = RelayProtocol.nowMs()
                    $0.newMessage = Message.c2cText(from: "alice", to: "bob", "edited secret", clientMsgID: "r-1")
                }
                #expect(try await RelayUserStateTests.ask(alice, .edit(edit), id: 1)?.requestResult?.errorCode == 0)
                let before = try await readBack(server, group, "laptop")
                #expect(before.stream == [.message, .message, .edit] && before.bySeq == ["secret", "stays"])
                #expect(before.leaks)
                var recall = Frame.recall(reference, by: "alice")
                recall.requestID = 2
                #expect(try await alice.ask(recall)?.requestResult?.errorCode == 0)
                let after = try await readBack(server, group, "tablet")
                #expect(after.stream == [.message, .message, .edit, .recall])
                #expect(after.bySeq == ["stays"] && after.history == ["stays"] && !after.leaks)
                for client in [alice, bob] { await client.close() }
            }
            try await withRelay(configure) { server in
                let after = try await readBack(server, group, "phone")
                #expect(after.stream == [.message, .message, .edit, .recall])
                #expect(after.bySeq == ["stays"] && after.history == ["stays"] && !after.leaks)
            }
        }
        let store = try database.open()
        defer { store.close() }
        let kept = try store.messages(in: .direct("alice", "bob"), from: 1, through: 2, limit: 10, visibleTo: "bob")
        let stub = try kept.first.flatMap { try Frame(serializedBytes: $0.frame).messagePayload }
        #expect(stub?.status == .recalled && stub?.elements.isEmpty == true && stub?.clientMsgID == "r-1")
        #expect(stub?.senderID == "alice" && stub?.seq == 1 && stub?.conversation == .oneToOne("bob"))
        let stream = try store.stream(of: "bob", after: 0, through: 100, limit: 100)
        #expect(stream.count == 4 && !stream.contains { $0.frame.contains(subsequence: secret) })
        #expect(!kept.contains { $0.frame.contains(subsequence: secret) })
    }

    /// History serves a message as it now is, so an edit or an extension update that could make it
    /// too large for a device that decodes with the relay's limit is refused with 3010
    /// (`tooLargeToDeliver`), also after a restart (the kept messages' sizes come back from the
    /// store); what is accepted reads back within the limit, and an extension fetch is answered in
    /// as many frames as its keys need. Before, every change below was accepted, the history page
    /// holding the message was past the limit, and so was the extension fetch's one answer: the
    /// device that asked lost its connection on each.
    @Test(arguments: StoreBackend.allCases)
    func anEditOrExtensionsCannotGrowAMessagePastTheLimit(_ backend: StoreBackend) async throws {
        let database = try await TestStore(backend)
        defer { database.remove() }
        let limit = 4096
        let codec = FrameCodecOptions(maxFrameSize: limit)
        let configure: (inout RelayConfiguration) -> Void = {
            $0.store = database.location; $0.codec = codec
        }
        func text(_ count: Int) -> Message {
            Message.c2cText(from: "alice", to: "bob", String(repeating: "x", count: count), clientMsgID: "m1")
        }
        // 400 bytes of text and 2,000 of custom data (which an edit keeps).
        var sent = text(400)
        sent.cloudCustomData = Array(repeating: 7, count: 2000)
        sent.flags = MessageFlags.supportExtension.rawValue
        try await withClientGroup { group in
            var reference = MessageRef()
            try await withRelay(configure) { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group, codec: codec)
                let bob = try await TestClient.connect(to: server, as: "bob", group: group, codec: codec)
                try await alice.send(Frame(sent))
                #expect(await eventually { bob.collector.messages.count == 1 })
                reference = try #require(bob.collector.messages.first).reference
                for client in [alice, bob] { await client.close() }
            }
            // After a restart: the relay knows the message's size from the store.
            try await withRelay(configure) { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group, codec: codec)
                let bob = try await TestClient.connect(to: server, as: "bob", group: group, codec: codec)
                func edit(_ count: Int, id: UInt64) async throws -> Int32? {
                    let edit = EditEvent.with {
                        $0.message = reference; $0.editorID = "alice"; $0.timeMs = RelayProtocol.nowMs()
                        $0.newMessage = text(count)
                    }
                    return try await RelayUserStateTests.ask(alice, .edit(edit), id: id)?.requestResult?.errorCode
                }
                // Keys of `value` bytes each (a value may have 1,024).
                func extend(_ keys: [String], _ value: Int, id: UInt64) async throws -> Int32? {
                    let update = ExtensionUpdate.with {
                        $0.message = reference
                        $0.set = keys.map { key in
                            .with {
                                $0.key = key; $0.value = String(repeating: "y", count: value); $0.version = 0
                            }
                        }
                    }
                    return try await RelayUserStateTests.ask(bob, .extensionUpdate(update), id: id)?.requestResult?
                        .errorCode
                }
                // The custom data and 3,000 bytes of text: past the limit.
                #expect(try await edit(3000, id: 1) == RelayProtocol.RequestError.tooLargeToDeliver)
                #expect(try await edit(1000, id: 2) == 0)
                #expect(
                    try await extend(["big", "bigger"], 600, id: 3) == RelayProtocol.RequestError.tooLargeToDeliver
                )
                #expect(try await extend(["small"], 200, id: 4) == 0)
                // An edit is judged with the keys the message now has (1,300 alone would fit).
                #expect(try await edit(1300, id: 5) == RelayProtocol.RequestError.tooLargeToDeliver)

                let tablet = try await TestClient.connect(
                    to: server,
                    as: "bob",
                    group: group,
                    deviceID: "tablet",
                    codec: codec
                )
                var request = Frame(
                    .historyRequest(
                        HistoryRequest.with {
                            $0.conversation = .oneToOne("alice"); $0.count = 20
                        }
                    )
                )
                request.requestID = 6
                let answer = try #require(try await tablet.ask(request))
                #expect(answer.serializedBytes().count <= limit)
                guard case .historyResponse(let page)? = answer.payload else {
                    Issue.record("not a history_response: \(String(describing: answer.payload?.kind))")
                    return
                }
                let message = try #require(page.messages.first)
                #expect(page.messages.count == 1 && message.editVersion == 1)
                #expect(message.previewText == String(repeating: "x", count: 1000))
                #expect(message.expansion.keys.sorted() == ["small"])

                // An extension fetch answers with as many messages' keys as fit the limit.
                for index in 1...3 {
                    var extended = Message.c2cText(from: "alice", to: "bob", "vote \(index)", clientMsgID: "e\(index)")
                    extended.flags = MessageFlags.supportExtension.rawValue
                    extended.expansion = ["k": String(repeating: "z", count: 1500)]
                    try await alice.send(Frame(extended))
                }
                let votes = { tablet.collector.messages.filter { $0.clientMsgID.hasPrefix("e") } }
                #expect(await eventually { votes().count == 3 })
                let references = [reference] + votes().map(\.reference)
                var fetched: [MessageRef] = []
                for id: UInt64 in 7...10 where fetched.count < references.count {
                    var fetch = Frame(
                        .extensionFetchRequest(
                            ExtensionFetchRequest.with { $0.messages = Array(references[fetched.count...]) }
                        )
                    )
                    fetch.requestID = id
                    let answer = try #require(try await tablet.ask(fetch))
                    #expect(answer.serializedBytes().count <= limit)
                    guard case .extensionFetchResponse(let response)? = answer.payload,
                        !response.extensions.isEmpty
                    else {
                        Issue.record("no extensions in \(String(describing: answer.payload?.kind))")
                        return
                    }
                    fetched += response.extensions.map { $0.message ?? MessageRef() }
                }
                #expect(fetched == references, "every message's keys, in request order, over several answers")
                for client in [alice, bob, tablet] {
                    #expect(client.collector.decodeErrors.isEmpty && client.channel.isActive)
                    await client.close()
                }
            }
        }
    }

    /// QuickBlox's search operators on a group: sender, recipient (a targeted message's
    /// receivers), text, a time range and updated_at; an edited message comes back edited, with
    /// its edit_version and updated_at_ms, and an extension update counts as a change; a recalled
    /// message is never served. The changes survive a restart of the relay (SQLite and PostgreSQL).
    @Test(arguments: StoreBackend.allCases)
    func filtersFindSendersRecipientsTextAndChangesAcrossARestart(_ backend: StoreBackend) async throws {
        let database = try await TestStore(backend)
        defer { database.remove() }
        let configure: (inout RelayConfiguration) -> Void = {
            $0.store = database.location; $0.groups = ["team": ["alice", "bob", "carol"]]
        }
        let team = Conversation.group("team")
        var before: Int64 = 0
        try await withClientGroup { group in
            try await withRelay(configure) { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group, deviceID: "a")
                let bob = try await TestClient.connect(to: server, as: "bob", group: group, deviceID: "b")
                let carol = try await TestClient.connect(to: server, as: "carol", group: group, deviceID: "c")
                // Two senders on two connections: each message is routed before the next is sent, so
                // their seqs follow the order written here.
                try await alice.send(Frame(RelayUserStateTests.groupMessage("hello team", id: "g1")))
                #expect(await eventually { carol.collector.messages.count == 1 })
                try await bob.send(Frame(Message.groupText(from: "bob", group: "team", "lunch?", clientMsgID: "g2")))
                #expect(await eventually { carol.collector.messages.count == 2 })
                var secret = RelayUserStateTests.groupMessage("the surprise is for bob", id: "g3")
                secret.targetReceivers = ["carol"]
                try await alice.send(Frame(secret))
                var vote = RelayUserStateTests.groupMessage("lunch at noon, vote", id: "g4")
                vote.flags = MessageFlags.supportExtension.rawValue
                vote.expansion = ["yes": "0"]
                try await alice.send(Frame(vote))
                #expect(await eventually { carol.collector.messages.count == 4 })
                let received = carol.collector.messages
                // bob recalls his message: history never serves it again.
                let recall = RecallEvent.with {
                    $0.message = received[1].reference; $0.revokerID = "bob"; $0.timeMs = RelayProtocol.nowMs()
                }
                #expect(try await RelayUserStateTests.ask(bob, .recall(recall), id: 1)?.requestResult?.errorCode == 0)

                // Everything so far was stamped at or before `before`; what follows is later.
                before = RelayProtocol.nowMs()
                while RelayProtocol.nowMs() <= before { try await Task.sleep(for: .milliseconds(1)) }
                let edit = EditEvent.with {
                    $0.message = received[0].reference; $0.editorID = "alice"; $0.timeMs = RelayProtocol.nowMs()
                    $0.newMessage = RelayUserStateTests.groupMessage("hello everyone", id: "g1")
                }
                #expect(try await RelayUserStateTests.ask(alice, .edit(edit), id: 2)?.requestResult?.errorCode == 0)
                let yes = ExtensionUpdate.with {
                    $0.message = received[3].reference
                    $0.set = [
                        .with {
                            $0.key = "yes"; $0.value = "1"; $0.version = 1
                        }
                    ]
                }
                #expect(
                    try await RelayUserStateTests.ask(carol, .extensionUpdate(yes), id: 3)?.requestResult?.errorCode
                        == 0
                )

                let all = try await Self.page(carol, id: 4) {
                    $0.conversation = team; $0.sort = .oldestFirst
                }
                #expect(Self.texts(all) == ["hello everyone", "the surprise is for bob", "lunch at noon, vote"])
                #expect(all?.messages.first?.editVersion == 1 && all!.messages.first!.updatedAtMs > before)
                #expect(all?.messages.last?.expansion == ["yes": "1"])
                let bobsView = try await Self.page(bob, id: 5) {
                    $0.conversation = team; $0.sort = .oldestFirst
                }
                #expect(Self.texts(bobsView) == ["hello everyone", "lunch at noon, vote"], "not the targeted one")

                let fromBob = try await Self.page(carol, id: 6) {
                    $0.conversation = team; $0.senderIDs = ["bob"]
                }
                #expect(fromBob?.messages.isEmpty == true, "bob's only message was recalled")
                let toCarol = try await Self.page(carol, id: 7) {
                    $0.conversation = team; $0.recipientIDs = ["carol"]
                }
                #expect(Self.texts(toCarol) == ["the surprise is for bob"])
                let lunch = try await Self.page(carol, id: 8) {
                    $0.conversation = team; $0.textContains = "lunch"
                }
                #expect(Self.texts(lunch) == ["lunch at noon, vote"])
                let edited = try await Self.page(carol, id: 9) {
                    $0.conversation = team; $0.textContains = "hello team"
                }
                #expect(edited?.messages.isEmpty == true, "text is matched as edited")
                let early = try await Self.page(carol, id: 10) {
                    $0.conversation = team; $0.endTimeMs = 1
                }
                #expect(early?.messages.isEmpty == true)
                let changed = try await Self.page(carol, id: 11) {
                    $0.conversation = team; $0.updatedAfterMs = before; $0.sort = .oldestFirst
                }
                #expect(Self.texts(changed) == ["hello everyone", "lunch at noon, vote"])
                for client in [alice, bob, carol] { await client.close() }
            }
            try await withRelay(configure) { server in
                let carol = try await TestClient.connect(to: server, as: "carol", group: group, deviceID: "c")
                let changed = try await Self.page(carol, id: 1) {
                    $0.conversation = team; $0.updatedAfterMs = before; $0.sort = .oldestFirst
                }
                #expect(Self.texts(changed) == ["hello everyone", "lunch at noon, vote"], "kept across the restart")
                #expect(changed?.messages.first?.editVersion == 1)
                #expect(changed?.messages.last?.expansion == ["yes": "1"])
                await carol.close()
            }
        }
    }

    /// QuickBlox mark_as_read: a page fetched with it is read for the user (its conversation list
    /// shows no unread message up to the page's newest), and the user's other device hears of it
    /// as a MarkReadEvent; a page already read marks nothing again.
    @Test func markAsReadReadsThePageForEveryDeviceOfTheUser() async throws {
        try await withClientGroup { group in
            try await withRelay({ $0.groups = ["team": ["alice", "bob"]] }) { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group, deviceID: "a")
                let phone = try await TestClient.connect(to: server, as: "bob", group: group, deviceID: "phone")
                let laptop = try await TestClient.connect(to: server, as: "bob", group: group, deviceID: "laptop")
                for index in 1...4 {
                    try await alice.send(Frame(RelayUserStateTests.groupMessage("m\(index)", id: "m\(index)")))
                }
                #expect(await eventually { laptop.collector.messages.count == 4 })
                let before = try #require(
                    RelayUserStateTests.entry(try await RelayUserStateTests.list(phone, id: 1), .group("team"))
                )
                #expect(before.unreadCount == 4)

                let peek = try await Self.page(phone, id: 2) {
                    $0.conversation = .group("team"); $0.count = 2
                }
                #expect(Self.texts(peek) == ["m4", "m3"])
                let unread = try #require(
                    RelayUserStateTests.entry(try await RelayUserStateTests.list(phone, id: 3), .group("team"))
                )
                #expect(unread.unreadCount == 4, "without mark_as_read nothing is read")

                let older = try await Self.page(phone, id: 4) {
                    $0.conversation = .group("team"); $0.count = 2; $0.cursor = "3"; $0.markAsRead = true
                }
                #expect(Self.texts(older) == ["m2", "m1"])
                #expect(await eventually { laptop.collector.frames.contains { $0.payload?.kind == .markRead } })
                let marks = laptop.collector.frames.compactMap {
                    if case .markRead(let m)? = $0.payload { m } else { nil }
                }
                #expect(marks.map(\.readSeq) == [2] && marks.first?.userID == "bob")
                let after = try #require(
                    RelayUserStateTests.entry(try await RelayUserStateTests.list(phone, id: 5), .group("team"))
                )
                #expect(after.readSeq == 2 && after.unreadCount == 2)

                let newest = try await Self.page(phone, id: 6) {
                    $0.conversation = .group("team"); $0.markAsRead = true
                }
                #expect(Self.texts(newest) == ["m4", "m3", "m2", "m1"])
                let read = try #require(
                    RelayUserStateTests.entry(try await RelayUserStateTests.list(phone, id: 7), .group("team"))
                )
                #expect(read.readSeq == 4 && read.unreadCount == 0)
                _ = try await Self.page(phone, id: 8) {
                    $0.conversation = .group("team"); $0.markAsRead = true
                }
                try await laptop.roundTrip(9)
                let marksNow = laptop.collector.frames.filter { $0.payload?.kind == .markRead }
                #expect(marksNow.count == 2, "a page already read marks nothing again")
                let echoed = phone.collector.frames.filter { $0.payload?.kind == .markRead }
                #expect(echoed.isEmpty, "not back to the reader")
                for client in [alice, phone, laptop] { await client.close() }
            }
        }
    }

    /// What a user may read: not what it cleared, not a conversation it is not in, not a
    /// chatroom's (Tencent: history does not take effect there).
    @Test func clearedHistoryMembershipAndChatroomsBoundWhatIsServed() async throws {
        try await withClientGroup { group in
            try await withRelay({ $0.groups = ["team": ["alice", "bob"]] }) { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group, deviceID: "a")
                let bob = try await TestClient.connect(to: server, as: "bob", group: group, deviceID: "b")
                let dave = try await TestClient.connect(to: server, as: "dave", group: group, deviceID: "d")
                for index in 1...4 {
                    try await alice.send(Frame(RelayUserStateTests.groupMessage("m\(index)", id: "m\(index)")))
                }
                #expect(await eventually { bob.collector.messages.count == 4 })
                let clear = ConversationUpdate.with {
                    $0.conversation = .group("team"); $0.fields = UInt32(ConversationField.clearedSeq.rawValue)
                    $0.clearedSeq = 2
                }
                #expect(
                    try await RelayUserStateTests.ask(bob, .conversationUpdate(clear), id: 1)?.requestResult?.errorCode
                        == 0
                )
                let page = try await Self.page(bob, id: 2) { $0.conversation = .group("team") }
                #expect(Self.texts(page) == ["m4", "m3"] && page?.finished == true)
                let fromStart = try await Self.page(bob, id: 3) {
                    $0.conversation = .group("team"); $0.direction = .newer
                }
                #expect(Self.texts(fromStart) == ["m3", "m4"])
                #expect(Self.texts(try await Self.page(alice, id: 4) { $0.conversation = .group("team") }).count == 4)
                #expect(try await Self.refusal(dave, id: 5) { $0.conversation = .group("team") } == 3001)
                let none = try await Self.page(dave, id: 6) { $0.conversation = .oneToOne("alice") }
                #expect(
                    none?.messages.isEmpty == true && none?.finished == true,
                    "alice's messages to bob are not dave's"
                )
                let room = Conversation.with {
                    $0.type = .chatroom; $0.targetID = "lobby"
                }
                #expect(try await Self.refusal(bob, id: 7) { $0.conversation = room } == 3002)
                for client in [alice, bob, dave] { await client.close() }
            }
        }
    }
}
/// A page a test expected and did not get.
struct ReadBackError: Error, CustomStringConvertible {
    var description: String
}
#endif
