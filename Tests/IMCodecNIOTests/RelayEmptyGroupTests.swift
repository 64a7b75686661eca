#if Tools
import IMCodec
import IMCodecNIO
import Testing

@testable import imcodec_relay

/// What a group keeps after its last member left (Router+EmptyGroups.swift): kept while a leaver's
/// stream may still name its messages, freed by the sweep once none does, across a restart too;
/// its seqs go on.
@Suite("Relay: groups their members left", .timeLimit(.minutes(2)))
struct RelayEmptyGroupTests {
    /// Alice and bob start group "gone", alice sends two messages (one that keeps its readers, which
    /// bob reads), and both leave; alice leaves "club" too, where carol stays, "team", which the
    /// groups file puts her back in at the next start, and "solo", a groups file group of her alone. With streams of 4 entries, "gone" waits
    /// while either leaver's stream holds entries of the time it was a member, a restart included
    /// (bob's leave then known from his list entry alone, as for a leave before relays noted them);
    /// once carol's messages pushed them out of both streams, the sweep frees it: messages, records,
    /// leaves and both list entries. "club" and "team" keep everything. A later join goes on from seq 3.
    @Test(arguments: StoreBackend.allCases)
    func aGroupItsMembersLeftIsFreedOnceNoStreamNamesItsMessages(_ backend: StoreBackend) async throws {
        let database = try await TestStore(backend)
        defer { database.remove() }
        let configure: (inout RelayConfiguration) -> Void = {
            $0.store = database.location; $0.maxStreamEntries = 4
            $0.groups = ["team": ["alice", "carol"], "solo": ["alice"]]
        }
        let gone = ConversationKey.group("gone")
        let team = ConversationKey.group("team")
        let club = ConversationKey.group("club")
        var id: UInt64 = 0
        func membership(_ action: MembershipAction, _ group: String, by client: TestClient) async throws -> Int32? {
            id += 1
            return try await client.ask(RelayProtocol.membershipFrame(action, group: group, requestID: id))?
                .requestResult?.errorCode
        }
        func carolWrites(_ user: String, _ count: Int, by carol: TestClient) async throws {
            for _ in 0..<count {
                id += 1
                let text = Message.c2cText(from: "carol", to: user, "push", clientMsgID: "c-\(id)")
                #expect(
                    try await carol.ask(RelayProtocol.answer(.message(text), requestID: id))?.sendAck?.errorCode == 0
                )
            }
        }
        struct Held: Equatable, Sendable {
            var goneKept = 0
            var goneMaxSeq: UInt64 = 0
            var goneRecords = false
            var views = 0
            var leavers: [String] = []
            var empty = false
            var teamKept = 0
            var clubKept = 0
        }
        func held(_ server: RelayServer, sweep: Bool = true) async throws -> Held {
            try await server.withRouter { router in
                if sweep { router.freeEmptyGroups() }
                return Held(
                    goneKept: router.conversations[gone]?.count ?? -1,
                    goneMaxSeq: router.conversations[gone]?.maxSeq ?? 0,
                    goneRecords: router.messageReaders[gone] != nil,
                    views: ["alice", "bob"].filter { router.userConversations[$0]?[gone] != nil }.count,
                    leavers: (router.leavePositions[gone]?.keys).map { $0.sorted() } ?? [],
                    empty: router.emptyGroups.contains(gone),
                    teamKept: router.conversations[team]?.count ?? -1,
                    clubKept: router.conversations[club]?.count ?? -1
                )
            }.get()
        }
        // What the relay holds while "gone" waits.
        let waiting = Held(
            goneKept: 2,
            goneMaxSeq: 2,
            goneRecords: true,
            views: 2,
            leavers: ["alice", "bob"],
            empty: true,
            teamKept: 1,
            clubKept: 1
        )
        try await withClientGroup { group in
            try await withRelay(configure) { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group, deviceID: "a")
                let bob = try await TestClient.connect(to: server, as: "bob", group: group, deviceID: "b")
                let carol = try await TestClient.connect(to: server, as: "carol", group: group, deviceID: "c")
                #expect(try await membership(.join, "club", by: carol) == 0)
                #expect(try await membership(.join, "club", by: alice) == 0)
                try await alice.send(Frame(Message.groupText(from: "alice", group: "club", "hi", clientMsgID: "k-1")))
                #expect(try await membership(.join, "gone", by: alice) == 0)
                #expect(try await membership(.join, "gone", by: bob) == 0)
                try await alice.send(
                    RelayReceiptTests.flagged(
                        Message.groupText(from: "alice", group: "gone", "one", clientMsgID: "g-1")
                    )
                )
                try await alice.send(Frame(Message.groupText(from: "alice", group: "gone", "two", clientMsgID: "g-2")))
                try await alice.send(
                    Frame(Message.groupText(from: "alice", group: "team", "stays", clientMsgID: "t-1"))
                )
                #expect(await eventually { bob.collector.messages.count == 2 })
                let first = bob.collector.messages[0].reference
                #expect(try await bob.ask(RelayReceiptTests.read(first, id: 100))?.requestResult?.errorCode == 0)
                // Each gets a list entry of "gone" (a pin), which stays after the leave.
                for client in [alice, bob] {
                    id += 1
                    let pin = ConversationUpdate.with {
                        $0.conversation = .group("gone"); $0.fields = UInt32(ConversationField.pinned.rawValue)
                        $0.pinned = true
                    }
                    #expect(
                        try await client.ask(RelayProtocol.answer(.conversationUpdate(pin), requestID: id))?
                            .requestResult?.errorCode == 0
                    )
                }
                #expect(try await membership(.leave, "gone", by: bob) == 0)
                #expect(try await membership(.leave, "gone", by: alice) == 0)
                #expect(try await membership(.leave, "team", by: alice) == 0)
                #expect(try await membership(.leave, "club", by: alice) == 0)
                // A group of the groups file is never freed, even without members.
                #expect(try await membership(.leave, "solo", by: alice) == 0)
                #expect(try await server.withRouter { !$0.emptyGroups.contains(.group("solo")) }.get())
                #expect(try await held(server) == waiting)
                for client in [alice, bob, carol] { await client.close() }
            }
            // As if bob had left before relays noted leaves: his list entry stands for it at the start.
            do {
                let store = try database.open()
                defer { store.close() }
                try store.commit(StoreBatch(records: [.leave(gone, user: "bob"): []]))
            }
            // Across a restart: the leaves are records; alice's stream moves on, bob's does not.
            try await withRelay(configure) { server in
                let carol = try await TestClient.connect(to: server, as: "carol", group: group, deviceID: "c")
                #expect(try await held(server, sweep: false) == waiting)
                try await carolWrites("alice", 4, by: carol)
                #expect(try await held(server).goneKept == 2, "bob's stream still names its messages")
                try await carolWrites("bob", 4, by: carol)
                #expect(
                    try await held(server)
                        == Held(
                            goneKept: 0,
                            goneMaxSeq: 2,
                            goneRecords: false,
                            views: 0,
                            leavers: [],
                            empty: false,
                            teamKept: 1,
                            clubKept: 1
                        )
                )
                // "club" still has carol: alice's leave of it stays, and so does what it kept. The
                // groups file put alice back in "team" at the start: her leave of it is forgotten.
                #expect(try await server.withRouter { $0.leavePositions[club]?.keys.sorted() }.get() == ["alice"])
                #expect(try await server.withRouter { $0.leavePositions[team] == nil }.get())
                // A new join goes on from the newest seq.
                let erin = try await TestClient.connect(to: server, as: "erin", group: group, deviceID: "e")
                #expect(try await membership(.join, "gone", by: erin) == 0)
                id += 1
                let again = Message.groupText(from: "erin", group: "gone", "again", clientMsgID: "e-1")
                #expect(try await erin.ask(RelayProtocol.answer(.message(again), requestID: id))?.sendAck?.seq == 3)
                for client in [carol, erin] { await client.close() }
            }
        }
        // The store kept the seq and the new message, and nothing else of "gone".
        let store = try database.open()
        defer { store.close() }
        let state = try store.load()
        #expect(state.conversations[gone]?.maxSeq == 3 && state.conversations[gone]?.count == 1)
        // Erin's own list entry is the only record of it (the readers, leaves and old entries went).
        let goneRecords = state.records.keys.filter {
            switch $0 {
            case .readers(let key, _), .leave(let key, _): key == gone
            case .conversation(let user, let key): key == gone && user != "erin"
            case .reader(let message, _): message.conversation == gone
            default: false
            }
        }
        #expect(goneRecords.isEmpty, "\(goneRecords)")
        #expect(state.records[.leave(club, user: "alice")] != nil && state.records[.leave(team, user: "alice")] == nil)
        #expect(state.conversations[team]?.count == 1 && state.conversations[club]?.count == 1)
    }
}
#endif
