#if Tools
import Foundation
import IMCodec
import IMCodecNIO
import NIOCore
import NIOPosix
import Testing

@testable import imcodec_relay

/// Polls as the relay tallies them (events.proto PollUpdate: "A poll's results (server to the
/// conversation, after votes), or its closing: the creator sends closed = true, and the server
/// answers everyone with the final results").
@Suite("Relay: polls", .timeLimit(.minutes(2)))
struct RelayPollTests {
    static func vote(_ poll: MessageRef, _ pollID: String, _ options: [UInt32], id: UInt64) -> Frame {
        RelayProtocol.answer(
            .pollVote(
                PollVoteEvent.with {
                    $0.pollMessage = poll; $0.pollID = pollID; $0.optionIDs = options
                }
            ),
            requestID: id
        )
    }

    /// The creator's closing, with results it made up (the relay sends its own).
    static func close(_ poll: MessageRef, _ pollID: String, by user: String, id: UInt64) -> Frame {
        RelayProtocol.answer(
            .pollUpdate(
                PollUpdate.with {
                    $0.pollMessage = poll; $0.pollID = pollID; $0.closed = true; $0.closedBy = user
                    $0.results = [
                        PollOptionResult.with {
                            $0.optionID = 1; $0.votes = 99; $0.voterIDs = ["mallory"]
                        }
                    ]
                    $0.voterCount = 99
                }
            ),
            requestID: id
        )
    }

    /// alice's poll "q" (yes, no) in "team", which closes at `closeTimeMs`.
    static func timedPoll(closingAt closeTimeMs: Int64, clientMsgID: String) -> Frame {
        Frame(
            Message(
                from: "alice",
                in: .group("team"),
                elements: [.poll(id: "q", question: "Q?", options: ["yes", "no"], closeTimeMs: closeTimeMs)],
                clientMsgID: clientMsgID
            )
        )
    }

    static func updates(_ client: TestClient, _ pollID: String) -> [PollUpdate] {
        client.collector.frames.compactMap {
            if case .pollUpdate(let update)? = $0.payload, update.pollID == pollID { update } else { nil }
        }
    }

    /// The last results `client` has of `pollID`: `option:votes:voters` per option, the voter count,
    /// and who closed it.
    static func results(_ client: TestClient, _ pollID: String) -> String {
        guard let last = updates(client, pollID).last else { return "none" }
        return describe(last)
    }

    static func describe(_ update: PollUpdate) -> String {
        let options = update.results.map { "\($0.optionID):\($0.votes):\($0.voterIDs.joined(separator: ","))" }
        return options.joined(separator: " ") + " n=\(update.voterCount)"
            + (update.closed ? " closed by \(update.closedBy)" : "")
    }

    /// The results of poll "q" among `frames` (of `poll`'s message only, when given), described.
    static func results(of poll: MessageRef?, in frames: [Frame]) -> [String] {
        frames.compactMap {
            guard case .pollUpdate(let update)? = $0.payload, update.pollID == "q",
                poll.map({ update.pollMessage?.seq == $0.seq }) ?? true
            else { return nil }
            return describe(update)
        }
    }

    static func code(_ client: TestClient, _ frame: Frame) async throws -> Int32? {
        try await client.ask(frame)?.requestResult?.errorCode
    }

    /// Before, votes were forwarded to every member (an anonymous poll's voters too) and results
    /// were whatever a client wrote. Now the relay checks each vote against its poll, keeps every
    /// vote (across a restart), sends its own results to every member after each change (no voter
    /// named for an anonymous poll), sends the vote itself only to the voter's other devices,
    /// replaces a closing's results with the final ones and refuses votes after it (3011), and
    /// forgets the poll with a recall.
    @Test(arguments: StoreBackend.allCases)
    func theRelayTalliesVotesAndSendsTheResults(_ backend: StoreBackend) async throws {
        let database = try await TestStore(backend)
        defer { database.remove() }
        // Results after every vote at once: what is tallied is checked here without waiting on the
        // sweep's timing (the hold-back has its own test, on the relay's clock).
        let configure: (inout RelayConfiguration) -> Void = {
            $0.store = database.location; $0.groups = ["team": ["alice", "bob", "carol"]]
            $0.pollResultsInterval = .zero
        }
        try await withClientGroup { group in
            var poll = MessageRef()
            try await withRelay(configure) { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group, deviceID: "a")
                let bob = try await TestClient.connect(to: server, as: "bob", group: group, deviceID: "b")
                let tablet = try await TestClient.connect(to: server, as: "bob", group: group, deviceID: "b2")
                let carol = try await TestClient.connect(to: server, as: "carol", group: group, deviceID: "c")
                try await alice.send(
                    Frame(
                        Message(
                            from: "alice",
                            in: .group("team"),
                            elements: [
                                .poll(id: "lunch", question: "Lunch?", options: ["pizza", "sushi", "noodles"]),
                                .poll(
                                    id: "days",
                                    question: "Which days?",
                                    options: ["mon", "tue", "wed"],
                                    multipleChoice: true,
                                    anonymous: true
                                ),
                            ],
                            clientMsgID: "poll-1"
                        )
                    )
                )
                #expect(
                    await eventually { carol.collector.messages.count == 1 && tablet.collector.messages.count == 1 }
                )
                poll = try #require(carol.collector.messages.first?.reference)

                #expect(try await Self.code(bob, Self.vote(poll, "lunch", [2], id: 1)) == 0)
                let first = "1:0: 2:1:bob 3:0: n=1"
                #expect(
                    await eventually { [alice, bob, tablet, carol].allSatisfy { Self.results($0, "lunch") == first } }
                )
                // The results name the poll's message fully.
                let named = try #require(Self.updates(carol, "lunch").last?.pollMessage)
                #expect(named.seq == poll.seq && named.serverMsgUID == poll.serverMsgUID && named.senderID == "alice")
                #expect(named.conversation == .group("team"))
                // The vote itself reaches bob's other device only.
                #expect(await eventually { tablet.collector.frames.contains { $0.payload?.kind == .pollVote } })
                // In stream order on the wire: the vote, then the results it made.
                let onTablet = tablet.collector.frames.filter { [.pollVote, .pollUpdate].contains($0.payload?.kind) }
                #expect(onTablet.map { $0.payload?.kind } == [.pollVote, .pollUpdate])
                #expect(onTablet.map(\.streamPosition) == onTablet.map(\.streamPosition).sorted())
                #expect(!carol.collector.frames.contains { $0.payload?.kind == .pollVote })
                #expect(!alice.collector.frames.contains { $0.payload?.kind == .pollVote })

                #expect(try await Self.code(carol, Self.vote(poll, "lunch", [2], id: 2)) == 0)
                // A new vote replaces the voter's earlier one.
                #expect(try await Self.code(bob, Self.vote(poll, "lunch", [3], id: 3)) == 0)
                let second = "1:0: 2:1:carol 3:1:bob n=2"
                #expect(await eventually { Self.results(alice, "lunch") == second })
                // The same vote again changes nothing: answered, no results sent.
                let sent = Self.updates(alice, "lunch").count
                #expect(try await Self.code(bob, Self.vote(poll, "lunch", [3], id: 4)) == 0)
                // Refused: two options of a single-choice poll, an option it does not have, one
                // chosen twice, a poll the message does not carry.
                let bad = RelayProtocol.RequestError.badRequest
                #expect(try await Self.code(bob, Self.vote(poll, "lunch", [1, 2], id: 5)) == bad)
                #expect(try await Self.code(bob, Self.vote(poll, "lunch", [9], id: 6)) == bad)
                #expect(try await Self.code(bob, Self.vote(poll, "days", [1, 1], id: 7)) == bad)
                #expect(try await Self.code(bob, Self.vote(poll, "nope", [1], id: 8)) == bad)
                try await alice.roundTrip(9)
                #expect(Self.updates(alice, "lunch").count == sent)

                // An anonymous multiple-choice poll: counts, no voters; no options withdraws a vote.
                #expect(try await Self.code(bob, Self.vote(poll, "days", [1, 2], id: 10)) == 0)
                #expect(try await Self.code(carol, Self.vote(poll, "days", [2], id: 11)) == 0)
                #expect(await eventually { Self.results(alice, "days") == "1:1: 2:2: 3:0: n=2" })
                #expect(try await Self.code(carol, Self.vote(poll, "days", [], id: 12)) == 0)
                #expect(await eventually { Self.results(bob, "days") == "1:1: 2:1: 3:0: n=1" })

                // An edit does not change the polls votes name.
                let edit = RelayProtocol.answer(
                    .edit(
                        EditEvent.with {
                            $0.message = poll
                            $0.editorID = "alice"
                            $0.newMessage = Message(
                                from: "alice",
                                in: .group("team"),
                                elements: [.poll(id: "lunch", question: "Dinner?", options: ["a", "b"])]
                            )
                        }
                    ),
                    requestID: 13
                )
                #expect(try await Self.code(alice, edit) == bad)

                // Only its creator closes it; the results are the relay's, whatever the closing says.
                let notTheSender = RelayProtocol.RequestError.notTheSender
                #expect(try await Self.code(bob, Self.close(poll, "lunch", by: "bob", id: 14)) == notTheSender)
                #expect(try await Self.code(alice, Self.close(poll, "lunch", by: "alice", id: 15)) == 0)
                let final = "1:0: 2:1:carol 3:1:bob n=2 closed by alice"
                #expect(
                    await eventually { [alice, bob, tablet, carol].allSatisfy { Self.results($0, "lunch") == final } }
                )
                let closed = RelayProtocol.RequestError.pollClosed
                #expect(try await Self.code(carol, Self.vote(poll, "lunch", [1], id: 16)) == closed)
                // A second closing changes nothing.
                let finals = Self.updates(carol, "lunch").count
                #expect(try await Self.code(alice, Self.close(poll, "lunch", by: "alice", id: 17)) == 0)
                try await carol.roundTrip(18)
                #expect(Self.updates(carol, "lunch").count == finals)
                for client in [alice, bob, tablet, carol] { await client.close() }
            }

            try await withRelay(configure) { server in
                // The votes and the closing survive the restart; carol's new device syncs the results
                // as they were sent.
                let laptop = try await TestClient.connect(to: server, as: "carol", group: group, deviceID: "c2")
                let page = try #require(try await laptop.streamPage(requestID: 30))
                let synced = page.compactMap {
                    if case .pollUpdate(let update)? = $0.payload, update.pollID == "lunch" { update } else { nil }
                }
                #expect(synced.last.map(Self.describe) == "1:0: 2:1:carol 3:1:bob n=2 closed by alice")
                // Of the votes, carol's own only (for her other devices).
                #expect(page.filter { $0.payload?.kind == .pollVote }.count == 3)
                #expect(
                    try await Self.code(laptop, Self.vote(poll, "lunch", [1], id: 31))
                        == RelayProtocol.RequestError.pollClosed
                )
                #expect(try await Self.code(laptop, Self.vote(poll, "days", [3], id: 32)) == 0)
                #expect(await eventually { Self.results(laptop, "days") == "1:1: 2:1: 3:1: n=2" })
                // A recall forgets the polls: a vote names a removed message (3005).
                let alice = try await TestClient.connect(to: server, as: "alice", group: group, deviceID: "a")
                var recall = Frame.recall(poll, by: "alice")
                recall.requestID = 33
                #expect(try await Self.code(alice, recall) == 0)
                #expect(
                    try await Self.code(laptop, Self.vote(poll, "days", [1], id: 34))
                        == RelayProtocol.RequestError.messageRemoved
                )
                for client in [alice, laptop] { await client.close() }
            }
        }
        // The recall dropped the tallies from the store, not only from the relay's memory.
        let state = try database.open().load()
        #expect(!state.records.keys.contains { if case .polls = $0 { true } else { false } })
    }

    /// Before, every vote sent its results to every member who reads the poll: a busy poll in a
    /// large group cost one stream row per member per vote. Now the first vote's results go at once
    /// and the ones of the votes within `pollResultsInterval` after it go together, in one frame,
    /// when the interval ends; results held back survive a restart (the next relay's first sweep
    /// sends them), a recall forgets them, and a closing sends the final results at once, dropping
    /// what was held back.
    @Test(arguments: StoreBackend.allCases)
    func resultsAfterVotesGoOutOncePerInterval(_ backend: StoreBackend) async throws {
        let database = try await TestStore(backend)
        defer { database.remove() }
        let clock = TestClock()
        let configure: (inout RelayConfiguration) -> Void = {
            $0.store = database.location; $0.groups = ["team": ["alice", "bob", "carol", "dave"]]
            $0.clock = clock.now; $0.pollResultsInterval = .seconds(3600); $0.expirySweepInterval = .milliseconds(20)
        }
        let hour: Int64 = 3_600_000
        try await withClientGroup { group in
            var poll = MessageRef()
            try await withRelay(configure) { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group, deviceID: "a")
                let bob = try await TestClient.connect(to: server, as: "bob", group: group, deviceID: "b")
                let carol = try await TestClient.connect(to: server, as: "carol", group: group, deviceID: "c")
                let dave = try await TestClient.connect(to: server, as: "dave", group: group, deviceID: "d")
                try await alice.send(Self.timedPoll(closingAt: 0, clientMsgID: "poll-h"))
                try await alice.send(Self.timedPoll(closingAt: 0, clientMsgID: "poll-recalled"))
                #expect(await eventually { [bob, carol, dave].allSatisfy { $0.collector.messages.count == 2 } })
                poll = try #require(bob.collector.messages.first?.reference)
                let recalled = try #require(bob.collector.messages.last?.reference)
                #expect(try await Self.code(bob, Self.vote(poll, "q", [1], id: 1)) == 0)
                #expect(await eventually { Self.results(alice, "q") == "1:1:bob 2:0: n=1" })
                // Within the interval: acknowledged, tallied, held back.
                #expect(try await Self.code(carol, Self.vote(poll, "q", [2], id: 2)) == 0)
                #expect(try await Self.code(dave, Self.vote(poll, "q", [2], id: 3)) == 0)
                try await alice.roundTrip(4)
                #expect(Self.updates(alice, "q").count == 1)
                // When it ends, the next sweep sends both votes' results in one frame.
                clock.advance(past: clock.now() + hour)
                #expect(await eventually { Self.results(alice, "q") == "1:1:bob 2:2:carol,dave n=3" })
                #expect(Self.updates(alice, "q").count == 2)
                // Held again (a new interval began with that frame), then the relay stops.
                #expect(try await Self.code(carol, Self.vote(poll, "q", [1], id: 5)) == 0)
                // The other poll's held results go with its recall.
                #expect(try await Self.code(bob, Self.vote(recalled, "q", [1], id: 6)) == 0)
                #expect(try await Self.code(carol, Self.vote(recalled, "q", [1], id: 7)) == 0)
                var recall = Frame.recall(recalled, by: "alice")
                recall.requestID = 8
                #expect(try await Self.code(alice, recall) == 0)
                try await alice.roundTrip(9)
                #expect(Self.updates(alice, "q").count == 3, "the recalled poll's first results only")
                for client in [alice, bob, carol, dave] { await client.close() }
            }
            let held = try database.open().load().records.keys.compactMap {
                if case .heldPollResults(_, let seq) = $0 { seq } else { nil }
            }
            #expect(held == [poll.seq], "the recalled poll's held results are gone")

            try await withRelay(configure) { server in
                // The next relay's first sweep sends what was held back.
                let alice = try await TestClient.connect(to: server, as: "alice", group: group, deviceID: "a2")
                let results = try await alice.streamed(
                    { Self.results(of: poll, in: $0) },
                    until: { $0.count == 3 },
                    firstRequestID: 10
                )
                #expect(
                    results == ["1:1:bob 2:0: n=1", "1:1:bob 2:2:carol,dave n=3", "1:2:bob,carol 2:1:dave n=3"]
                )
                // A vote within the new interval is held back; the closing sends the final results
                // at once and drops the held ones (their record too, below).
                let dave = try await TestClient.connect(to: server, as: "dave", group: group, deviceID: "d2")
                #expect(try await Self.code(dave, Self.vote(poll, "q", [1], id: 30)) == 0)
                #expect(try await Self.code(alice, Self.close(poll, "q", by: "alice", id: 31)) == 0)
                let final = "1:3:bob,carol,dave 2:0: n=3 closed by alice"
                #expect(await eventually { Self.results(alice, "q") == final })
                #expect(
                    Self.results(of: poll, in: try await alice.streamPage(requestID: 100) ?? []) == results + [final]
                )
                for client in [alice, dave] { await client.close() }
            }
            let state = try database.open().load()
            #expect(!state.records.keys.contains { if case .heldPollResults = $0 { true } else { false } })
        }
    }

    /// The results reach who reads the poll: not a member who deleted it for itself only (before,
    /// they still did). A chatroom keeps no message, so its polls are not tallied: a vote is
    /// forwarded as it is, and a closing, which names no kept message, is refused (3003).
    @Test func resultsReachWhoReadsThePollAndAChatroomsPollsAreNotTallied() async throws {
        try await withClientGroup { group in
            try await withRelay({ $0.groups = ["team": ["alice", "bob", "carol"]] }) { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group)
                let bob = try await TestClient.connect(to: server, as: "bob", group: group)
                let carol = try await TestClient.connect(to: server, as: "carol", group: group)
                try await alice.send(Self.timedPoll(closingAt: 0, clientMsgID: "p-1"))
                #expect(await eventually { carol.collector.messages.count == 1 })
                let poll = try #require(carol.collector.messages.first?.reference)
                let onlyMe = RelayProtocol.answer(
                    .delete(
                        DeleteEvent.with {
                            $0.messages = [poll]; $0.scope = .onlyMe; $0.operatorID = "carol"
                        }
                    ),
                    requestID: 1
                )
                #expect(try await carol.ask(onlyMe)?.requestResult?.errorCode == 0)
                #expect(try await Self.code(bob, Self.vote(poll, "q", [1], id: 2)) == 0)
                #expect(await eventually { Self.results(alice, "q") == "1:1:bob 2:0: n=1" })
                try await carol.roundTrip(3)
                #expect(Self.updates(carol, "q").isEmpty)

                let room = Conversation.with {
                    $0.type = .chatroom; $0.targetID = "lobby"
                }
                for (client, id) in [(alice, UInt64(4)), (bob, 5)] {
                    let join = RelayProtocol.membershipFrame(.join, room, requestID: id)
                    #expect(try await client.ask(join)?.requestResult?.errorCode == 0)
                }
                try await alice.send(
                    Frame(
                        Message(
                            from: "alice",
                            in: room,
                            elements: [.poll(id: "r", question: "R?", options: ["a", "b"])],
                            clientMsgID: "p-2"
                        )
                    )
                )
                #expect(await eventually { bob.collector.messages.contains { $0.conversation?.type == .chatroom } })
                let inRoom = try #require(bob.collector.messages.last?.reference)
                #expect(inRoom.seq == 0)
                #expect(try await Self.code(bob, Self.vote(inRoom, "r", [2], id: 6)) == 0)
                #expect(await eventually { alice.collector.frames.contains { $0.payload?.kind == .pollVote } })
                #expect(Self.updates(alice, "r").isEmpty)
                #expect(
                    try await Self.code(alice, Self.close(inRoom, "r", by: "alice", id: 8))
                        == RelayProtocol.RequestError.badRequest
                )
                for client in [alice, bob, carol] { await client.close() }
            }
        }
    }

    /// message.proto PollElement `close_time_ms`: "When voting ends". At that time the relay closes
    /// the poll itself and sends the final results to every member, its creator as `closed_by`; a
    /// vote after it is refused (3011), even before the relay's sweep has run. The final results'
    /// `time_ms` is the close time, not when the sweep saw it: here an hour later, as after a relay
    /// that was down when the poll closed.
    @Test func aPollClosesAtItsCloseTime() async throws {
        let clock = TestClock()
        try await withClientGroup { group in
            try await withRelay({
                $0.clock = clock.now; $0.expirySweepInterval = .milliseconds(20)
                $0.groups = ["team": ["alice", "bob", "carol"]]
            }) { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group)
                let bob = try await TestClient.connect(to: server, as: "bob", group: group)
                let carol = try await TestClient.connect(to: server, as: "carol", group: group)
                let closeTimeMs = clock.now() + 3_600_000
                try await alice.send(Self.timedPoll(closingAt: closeTimeMs, clientMsgID: "poll-t"))
                #expect(await eventually { bob.collector.messages.count == 1 })
                let poll = try #require(bob.collector.messages.first?.reference)
                #expect(try await Self.code(bob, Self.vote(poll, "q", [1], id: 1)) == 0)
                #expect(await eventually { Self.results(carol, "q") == "1:1:bob 2:0: n=1" })
                clock.advance(past: closeTimeMs + 3_600_000)
                #expect(
                    try await Self.code(carol, Self.vote(poll, "q", [2], id: 2))
                        == RelayProtocol.RequestError.pollClosed
                )
                let final = "1:1:bob 2:0: n=1 closed by alice"
                #expect(await eventually { [alice, bob, carol].allSatisfy { Self.results($0, "q") == final } })
                #expect(Self.updates(carol, "q").count == 2)
                #expect(Self.updates(carol, "q").last?.timeMs == closeTimeMs)
                for client in [alice, bob, carol] { await client.close() }
            }
        }
    }

    /// Polls with a close time that retention drops before it (60 sent, each closing in an hour,
    /// in a conversation that keeps 10) leave at most 23 entries in the relay's list of closings
    /// (pruned here from 16 entries on rather than the relay's 1,024, as the disappearing-message
    /// test does; it keeps the 10 polls still open and is pruned again past twice that), and the 10
    /// kept still close when their hour comes. Before, every poll sent with a close time left an
    /// entry until that time.
    @Test func pollsDroppedBeforeTheirCloseTimeAreForgotten() async throws {
        let clock = TestClock()
        try await withClientGroup { group in
            try await withRelay({
                $0.clock = clock.now; $0.maxMessagesPerConversation = 10
                $0.groups = ["team": ["alice", "bob"]]
            }) { server in
                try await server.withRouter { $0.closingPolls = PrunedHeap(minimumPruneAt: 16) }.get()
                let alice = try await TestClient.connect(to: server, as: "alice", group: group)
                let bob = try await TestClient.connect(to: server, as: "bob", group: group)
                let closeTimeMs = clock.now() + 3_600_000
                for index in 0..<60 {
                    try await alice.send(Self.timedPoll(closingAt: closeTimeMs, clientMsgID: "poll-\(index)"))
                }
                #expect(await eventually { alice.collector.acks.count == 60 })
                #expect(alice.collector.acks.allSatisfy { $0.errorCode == 0 })
                let due = try await server.withRouter { router in
                    (
                        router.closingPolls.count,
                        router.closingPolls.heap.unordered.filter(router.isDue).map(\.seq).sorted()
                    )
                }.get()
                #expect(due.0 <= 23, "\(due.0) entries")
                #expect(due.1 == Array(51...60))
                clock.advance(past: closeTimeMs)
                // The sweep, as it runs every second, without waiting for it.
                let left = try await server.withRouter { router in
                    router.closeDuePolls(at: router.nowMs())
                    return router.closingPolls.count
                }.get()
                #expect(left == 0)
                #expect(await eventually { Self.updates(bob, "q").count == 10 })
                #expect(Self.updates(bob, "q").allSatisfy { $0.closed && $0.closedBy == "alice" })
                #expect(Set(Self.updates(bob, "q").compactMap(\.pollMessage?.seq)) == Set(51...60))
                for client in [alice, bob] { await client.close() }
            }
        }
    }

    /// A poll whose close time passes while no relay runs is closed by the next one, at its first
    /// sweep: the open polls' close times are loaded with their tallies.
    @Test func aPollWhoseCloseTimePassedWhileNoRelayRanIsClosedAtStart() async throws {
        let clock = TestClock()
        let database = try await TestStore(.sqlite)
        defer { database.remove() }
        let configure: (inout RelayConfiguration) -> Void = {
            $0.store = database.location; $0.clock = clock.now; $0.expirySweepInterval = .milliseconds(20)
            $0.groups = ["team": ["alice", "bob"]]
        }
        try await withClientGroup { group in
            let closeTimeMs = clock.now() + 3_600_000
            try await withRelay(configure) { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group)
                let bob = try await TestClient.connect(to: server, as: "bob", group: group)
                try await alice.send(Self.timedPoll(closingAt: closeTimeMs, clientMsgID: "poll-r"))
                #expect(await eventually { bob.collector.messages.count == 1 })
                let poll = try #require(bob.collector.messages.first?.reference)
                #expect(try await Self.code(bob, Self.vote(poll, "q", [2], id: 1)) == 0)
                #expect(await eventually { Self.results(alice, "q") == "1:0: 2:1:bob n=1" })
                for client in [alice, bob] { await client.close() }
            }
            clock.advance(past: closeTimeMs)
            try await withRelay(configure) { server in
                let bob = try await TestClient.connect(to: server, as: "bob", group: group, deviceID: "b2")
                // The first sweep runs as the relay starts; asked again until it has (as `eventually`
                // waits, with a minute's room for a loaded machine).
                let closings = try await bob.streamed(
                    { Self.results(of: nil, in: $0).filter { $0.hasSuffix("closed by alice") } },
                    until: { !$0.isEmpty },
                    firstRequestID: 10
                )
                #expect(closings == ["1:0: 2:1:bob n=1 closed by alice"])
                await bob.close()
            }
        }
    }
}
#endif
