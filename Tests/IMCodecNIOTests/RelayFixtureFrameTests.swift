#if Tools
import Foundation
import IMCodec
import IMCodecNIO
import IMCodecTestSupport
import NIOCore
import NIOPosix
import Testing

@testable import imcodec_relay

/// Every valid fixture (`Fixtures/valid`, made by Google's encoder: every payload kind, and the
/// edges of each field) sent to the relay by a logged-in client, as it is and, for a message,
/// sent by that client to a group it is in and to a peer. The relay answers or refuses each and
/// goes on; what it kept reads back the same from its SQLite store after a restart. A hostile
/// client sends such frames on purpose: a relay that traps on one (a forced unwrap, an arithmetic
/// overflow, an index out of range) takes every user's connection down with it.
// The time limit only stops a hang: about 25 s here for both tests, several times that under
// ThreadSanitizer (Scripts/test-sanitizers runs IMCodecNIOTests).
@Suite("Relay: every valid frame a client can send", .timeLimit(.minutes(10)))
struct RelayFixtureFrameTests {
    /// The valid fixtures' frames, by file name (the canonical copies left out: the same frames).
    private static func fixtureFrames() throws -> [(name: String, frame: Frame)] {
        let folder = repositoryRoot.appendingPathComponent("Fixtures/valid")
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.path)
            .filter { $0.hasSuffix(".binpb") && !$0.hasSuffix(".canonical.binpb") }
            .sorted()
        return try names.map { name in
            let bytes = [UInt8](try Data(contentsOf: folder.appendingPathComponent(name)))
            return (name, try Frame(serializedBytes: bytes))
        }
    }

    /// The device alice sends the frames from.
    static let aliceDevice = "alice-phone"

    /// `message` as `sender` would send it in `conversation`: the fields only a server sets cleared
    /// (else it is refused with 1007 before any other rule runs), the fixture's sending device
    /// with them, and its encrypted elements sealed by alice's device (the relay refuses a device
    /// other than the connection's with 1001).
    private static func sent(_ message: Message, by sender: String, in conversation: Conversation) -> Message {
        var message = message
        message.senderID = sender
        message.senderDeviceID = ""
        for index in message.elements.indices {
            if case .encrypted(var sealed)? = message.elements[index].content {
                sealed.senderDeviceID = aliceDevice
                message.elements[index].content = .encrypted(sealed)
            }
        }
        message.conversation = conversation
        message.serverMsgUID = ""
        message.seq = 0
        message.serverTimeMs = 0
        message.editVersion = 0
        message.receivedStatus = 0
        message.deliveredIDs = []
        message.readIDs = []
        message.updatedAtMs = 0
        message.reactions = []
        message.thread = nil
        message.expireAtMs = 0
        message.isOffline = false
        return message
    }

    /// The fixtures' users and groups as this test's, twice with the two users of the one-to-one
    /// fixtures swapped: their frames then speak of alice, bob, carol and the group `team` (an
    /// event in `team`, a reference to a message of alice's in her conversation with bob, and to
    /// one of bob's).
    private static let casts = [
        [
            "user_10010": "alice", "user_10086": "bob", "user_20001": "alice", "user_20002": "bob",
            "user_20003": "carol", "user_20004": "carol", "user_30003": "bob", "@TGS#2J4SZEAEL": "team",
            "@TGS#aJ7XKFCIM": "team", "ug_gamers_guild_01": "team",
        ],
        ["user_10010": "bob", "user_10086": "alice", "user_20001": "bob", "user_20002": "alice"],
    ]

    /// `frame` with the fixtures' ids replaced by `cast`'s (through its JSON, which drops unknown
    /// fields), or `nil` when it names none of them.
    private static func recast(_ frame: Frame, _ cast: [String: String]) throws -> Frame? {
        var json = try frame.jsonString()
        for (fixture, user) in cast { json = json.replacingOccurrences(of: "\"\(fixture)\"", with: "\"\(user)\"") }
        let recast = try Frame(jsonString: json)
        return recast == frame ? nil : recast
    }

    /// The frames a hostile alice sends: each fixture as it is and recast by each of ``casts``,
    /// and each fixture's message sent by her to the group `team` and to bob.
    private static func hostileFrames() throws -> [(name: String, frame: Frame)] {
        var frames: [(name: String, frame: Frame)] = []
        for (name, frame) in try fixtureFrames() {
            frames.append((name, frame))
            for (index, cast) in casts.enumerated() {
                if let recast = try recast(frame, cast) { frames.append((name + " cast \(index + 1)", recast)) }
            }
            guard case .message(let message)? = frame.payload else { continue }
            var toGroup = frame
            toGroup.payload = .message(sent(message, by: "alice", in: .group("team")))
            frames.append((name + " to team", toGroup))
            var toBob = frame
            toBob.payload = .message(sent(message, by: "alice", in: .oneToOne("bob")))
            frames.append((name + " to bob", toBob))
        }
        return frames
    }

    /// bob's whole stream from its start, each frame's bytes as served, and whether every page
    /// was answered.
    private static func wholeStream(of bob: TestClient, firstRequestID: UInt64) async throws -> [[UInt8]]? {
        var frames: [[UInt8]] = []
        var after: UInt64 = 0
        var requestID = firstRequestID
        for _ in 0..<1_000 {
            let request = RelayProtocol.answer(
                .streamSyncRequest(StreamSyncRequest.with { $0.afterPosition = after }),
                requestID: requestID
            )
            requestID += 1
            guard case .streamSyncResponse(let page)? = try await bob.ask(request)?.payload, page.errorCode == 0 else {
                return nil
            }
            frames += page.frames.map(\.frame)
            guard page.hasMore else { return frames }
            after = page.nextAfterPosition
        }
        return nil
    }

    /// What alice's ``send(_:to:group:)`` did: every connection she used, each frame's request id,
    /// and the frames after which the relay had closed her connection.
    private struct Sent {
        var connections: [TestClient] = []
        var requestIDs: [(name: String, id: UInt64)] = []
        var closed = Set<String>()
        var lastRequestID: UInt64 = 1_000
    }

    /// Sends `frames` as alice, each with a request id, in batches of 64 each followed by a ping:
    /// the relay handles a connection's frames in order, so the pong says it handled the batch. A
    /// logout ends the session: each goes alone, last. She reconnects when her connection was
    /// closed.
    private static func send(
        _ frames: [(name: String, frame: Frame)],
        to server: RelayServer,
        group: any EventLoopGroup
    ) async throws -> Sent {
        var sent = Sent()
        var alice = try await TestClient.connect(to: server, as: "alice", group: group, deviceID: aliceDevice)
        sent.connections.append(alice)
        let logouts = frames.filter { $0.frame.payload?.kind == .logout }.map { [$0] }
        let others = frames.filter { $0.frame.payload?.kind != .logout }
        let batches = stride(from: 0, to: others.count, by: 64).map { Array(others[$0..<min($0 + 64, others.count)]) }
        for batch in batches + logouts {
            if !alice.channel.isActive {
                alice = try await TestClient.connect(to: server, as: "alice", group: group, deviceID: aliceDevice)
                sent.connections.append(alice)
            }
            for (name, frame) in batch {
                var numbered = frame
                sent.lastRequestID += 1
                numbered.requestID = sent.lastRequestID
                sent.requestIDs.append((name, sent.lastRequestID))
                alice.channel.write(numbered, promise: nil)
            }
            sent.lastRequestID += 1
            let pingID = sent.lastRequestID
            try? await alice.send(RelayProtocol.answer(.ping(Ping.with { $0.id = pingID }), requestID: pingID))
            let answered = await eventually { alice.collector.answer(to: pingID) != nil || !alice.channel.isActive }
            let names = Set(batch.map(\.name))
            #expect(answered, "no pong after \(names.sorted()), and the connection is open")
            if alice.collector.answer(to: pingID) == nil { sent.closed.formUnion(names) }
        }
        if !alice.channel.isActive {
            sent.connections.append(
                try await TestClient.connect(to: server, as: "alice", group: group, deviceID: aliceDevice)
            )
        }
        return sent
    }

    /// alice sends every frame of ``hostileFrames()`` (``send(_:to:group:)``: in batches, each
    /// followed by a ping; she reconnects after her logout); each pong says the relay handled the
    /// batch and lives. Then bob, carol (a user
    /// nothing was sent to) and the relay's answers after a restart from the same SQLite store:
    /// bob's stream reads back byte for byte (a sweep at the start may add to its end), his
    /// conversation list and the group's history are answered, and every frame the clients got
    /// decodes.
    @Test func theRelayAnswersEveryValidFrameAndReadsBackWhatItKept() async throws {
        let database = try await TestStore(.sqlite)
        defer { database.remove() }
        let frames = try Self.hostileFrames()
        #expect(frames.count > 250, "the fixtures hold every payload kind")
        let configure = { (configuration: inout RelayConfiguration) in
            configuration.store = database.location
            configuration.groups = ["team": ["alice", "bob", "carol"]]
            // No low-priority message is dropped for a busy group (1008): how many arrive in one
            // second depends on the machine. Nor is any frame refused for its sender's rate (1012,
            // 3014): the frames exercise their paths, not the budgets (Router+RateLimits.swift).
            configuration.groupMessageRate = 1_000_000
            configuration.liveUpdateRate = 0
            configuration.fanOutRate = 0
            configuration.peerRate = 0
            configuration.joinRate = 0
            configuration.loginRate = 0
            configuration.keyFetchRate = 0
        }
        try await withClientGroup { group in
            let kept = try await withRelay(configure) { server -> [[UInt8]]? in
                let bob = try await TestClient.connect(to: server, as: "bob", group: group)
                let sent = try await Self.send(frames, to: server, group: group)
                let (connections, requestIDs, closed) = (sent.connections, sent.requestIDs, sent.closed)
                let alice = connections.last!
                // Only a logout ends the session (a second login_request is refused with 2002 and
                // the connection kept; the fixtures' frames are within the relay's decode limits).
                #expect(closed == ["session_logout.binpb"])
                // Acknowledged once committed, after everything alice sent before it: every ack is
                // in, and bob's stream below holds everything kept.
                let last = Message.groupText(from: "alice", group: "team", "last", clientMsgID: "last")
                let ack = try await alice.ask(RelayProtocol.answer(.message(last), requestID: sent.lastRequestID + 1))
                #expect(ack?.sendAck?.errorCode == 0)
                // Every message is acknowledged. alice's own are accepted, or refused for what
                // the fixture says: a quote of a message the relay does not keep (1009), targeted
                // receivers in a one-to-one conversation (1006).
                let messages = Set(frames.filter { $0.frame.payload?.kind == .message }.map(\.name))
                var (accepted, own) = (0, 0)
                for (name, id) in requestIDs where messages.contains(name) {
                    let ack = connections.lazy.compactMap { $0.collector.answer(to: id)?.sendAck }.first
                    #expect(ack != nil, "\(name) was not acknowledged")
                    guard let ack, name.hasSuffix(" to team") || name.hasSuffix(" to bob") else { continue }
                    own += 1
                    if ack.errorCode == 0 { accepted += 1 }
                    #expect(
                        [0, 1006, 1009].contains(ack.errorCode),
                        "\(name): \(ack.errorCode) \(ack.errorDescription)"
                    )
                }
                #expect(accepted * 4 >= own * 3, "\(accepted) of alice's \(own) own messages kept")
                #expect(connections.allSatisfy { $0.collector.decodeErrors.isEmpty })
                let carol = try await TestClient.connect(to: server, as: "carol", group: group)
                #expect(try await carol.ask(RelayProtocol.answer(.ping(.init()), requestID: 1))?.payload?.kind == .pong)
                let stream = try await Self.wholeStream(of: bob, firstRequestID: 1)
                #expect(stream.map { !$0.isEmpty } == true, "bob got alice's messages")
                for client in connections + [bob, carol] { await client.close() }
                return stream
            }
            try await withRelay(configure) { server in
                let bob = try await TestClient.connect(to: server, as: "bob", group: group)
                let stream = try await Self.wholeStream(of: bob, firstRequestID: 1)
                // A sweep at the start may add to it (a poll whose close time passed is closed).
                #expect(
                    stream.map { kept.map($0.starts(with:)) ?? false } == true,
                    "bob's stream reads back the same after a restart"
                )
                let list = try await bob.ask(
                    RelayProtocol.answer(.conversationListRequest(.with { $0.limit = 100 }), requestID: 5_000)
                )
                #expect(list?.payload?.kind == .conversationList)
                let history = try await bob.ask(
                    RelayProtocol.answer(
                        .historyRequest(
                            .with {
                                $0.conversation = .group("team"); $0.count = 100
                            }
                        ),
                        requestID: 5_001
                    )
                )
                #expect(history?.payload?.kind == .historyResponse)
                #expect(bob.collector.decodeErrors.isEmpty)
                await bob.close()
            }
        }
    }

    /// The same frames with one field left out, at any depth down to a conversation's fields
    /// (`Wire.fieldRemovals`, depth 4: a reference without its sender, a conversation without its
    /// target, a message without its conversation): each is answered, or refused, and the relay
    /// goes on; no session ends. Before, a recall naming alice's side of a
    /// one-to-one conversation and no sender stopped the relay.
    @Test func theRelayAnswersEveryFrameWithAFieldLeftOut() async throws {
        try await Self.sendEveryVariant(atLeast: 10_000, underThreadSanitizerEvery: 4) { _, bytes in
            Wire.fieldRemovals(bytes, depth: 4)
        }
    }

    /// The same frames with one number at an edge of its type (the largest `uint64`, the smallest
    /// and largest `int64`, the largest `uint32`, 2^31), down to a conversation's fields: each
    /// number they carry (`Wire.valueExtremes`: a varint, a fixed-width field, a packed list), and
    /// each number field of each message they carry, set or not (`Wire.numberInsertions`: the
    /// first five variants of each field in each kind of cast, one frame's worth for a varint; the
    /// same field in the next fixture takes the same path). A seq, a time, a duration, a count or an enum a hostile client sends
    /// to overflow what the relay adds or converts: each is answered, or refused, and the relay
    /// goes on; no session ends.
    @Test func theRelayAnswersEveryFrameWithANumberAtAnEdge() async throws {
        var inserted: [String: Int] = [:]
        try await Self.sendEveryVariant(atLeast: 15_000, underThreadSanitizerEvery: 32) { name, bytes in
            let cast = name.split(separator: " ").dropFirst().joined(separator: " ")
            var variants = Wire.valueExtremes(bytes, depth: 4)
            for (field, variant) in Wire.numberInsertions(bytes, as: Frame.self, depth: 4) {
                let key = cast + " " + field
                inserted[key, default: 0] += 1
                if inserted[key]! <= Wire.extremeValues.count { variants.append(variant) }
            }
            return variants
        }
    }

    /// alice sends every frame `variantsOf` makes of the recast fixtures and her own messages (those
    /// that decode: a string that parsed as fields gives bytes a decoder refuses; at least `least`)
    /// to a relay with the group `team`; the relay answers a ping after each batch and closes no
    /// session, and then answers her requests for what she set.
    private static func sendEveryVariant(
        atLeast least: Int,
        underThreadSanitizerEvery every: Int,
        _ variantsOf: (_ name: String, _ frame: [UInt8]) -> [[UInt8]]
    ) async throws {
        var seen = Set<[UInt8]>()
        var variants: [(name: String, frame: Frame)] = []
        // As the fixtures name their users, most frames are refused at the first check (not the
        // logged-in sender, not a member): the recast ones and alice's own messages go deeper.
        for (name, frame) in try hostileFrames() where name.contains(" ") {
            for bytes in variantsOf(name, frame.serializedBytes()) where seen.insert(bytes).inserted {
                guard let variant = try? Frame(serializedBytes: bytes) else { continue }
                variants.append((name, variant))
            }
        }
        #expect(variants.count > least, "\(variants.count) variants")
        // Under ThreadSanitizer (Scripts/test-sanitizers), every `every`th: the same paths on the
        // same threads, in a few minutes there (about three for a quarter of the field removals,
        // beside the other suites, whose two-minute limits this load must leave room for).
        if underThreadSanitizer {
            variants = variants.enumerated().filter { $0.offset % every == 0 }.map(\.element)
        }
        try await withClientGroup { group in
            try await withRelay({
                // As above: neither the group's rate nor the users' budgets bound them.
                $0.groups = ["team": ["alice", "bob", "carol"]]; $0.groupMessageRate = 1_000_000
                $0.liveUpdateRate = 0; $0.fanOutRate = 0; $0.peerRate = 0; $0.joinRate = 0; $0.loginRate = 0
                $0.keyFetchRate = 0
            }) { server in
                let bob = try await TestClient.connect(to: server, as: "bob", group: group)
                let sent = try await send(variants, to: server, group: group)
                let (connections, closed) = (sent.connections, sent.closed)
                // No variant is a logout (it names no user to recast): no session ends.
                #expect(closed.isEmpty, "closed after: \(closed.sorted())")
                #expect(connections.allSatisfy { $0.collector.decodeErrors.isEmpty })
                // What she set (a view, a floor, a cursor) is read by her next requests: each is
                // answered. Before, a clear of the largest seq made the next sync or history of
                // that conversation overflow, in the relay and after every restart.
                let alice = connections.last!
                var requestID = sent.lastRequestID
                for conversation in [Conversation.group("team"), .oneToOne("bob"), .oneToOne("alice")] {
                    let requests: [Frame.Payload] = [
                        .syncRequest(.with { $0.conversation = conversation }),
                        .historyRequest(
                            .with {
                                $0.conversation = conversation; $0.count = 20
                            }
                        ),
                        .conversationListRequest(.with { $0.limit = 100 }),
                        .streamSyncRequest(.init()),
                    ]
                    for request in requests {
                        requestID += 1
                        let answer = try await alice.ask(RelayProtocol.answer(request, requestID: requestID))
                        #expect(answer != nil, "\(request.kind) of \(conversation) was not answered")
                    }
                }
                let carol = try await TestClient.connect(to: server, as: "carol", group: group)
                #expect(try await carol.ask(RelayProtocol.answer(.ping(.init()), requestID: 1))?.payload?.kind == .pong)
                for client in connections + [bob, carol] { await client.close() }
            }
        }
    }
}
#endif
