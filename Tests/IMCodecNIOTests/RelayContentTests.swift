#if Tools
import Crypto
import Foundation
import IMCodec
import IMCodecNIO
import NIOCore
import NIOPosix
import Testing

@testable import imcodec_relay

/// Schema version 3 content through the relay: an end-to-end encrypted message sealed with
/// swift-crypto's AES-GCM (test-only: the library does no cryptography), call signalling and a
/// streamed answer.
@Suite("Relay: encrypted messages, calls, streamed messages", .timeLimit(.minutes(2)))
struct RelayContentTests {
    /// The associated data both ends compute from the clear envelope: moving the ciphertext to
    /// another message or conversation makes opening fail.
    static func associatedData(_ message: Message) -> [UInt8] {
        let conversation = message.conversation ?? Conversation()
        return Array(
            "\(conversation.type.rawValue)/\(conversation.targetID)/\(message.senderID)/\(message.clientMsgID)".utf8
        )
    }

    @Test("an AES-GCM sealed message crosses the relay, which routes, stores and syncs it, and opens at the receiver")
    func encryptedMessageThroughTheRelay() async throws {
        // The key the two devices agreed on (a real client derives it from a prekey bundle or an
        // MLS epoch); the relay never sees it.
        let key = SymmetricKey(size: .bits256)
        let keyID: [UInt8] = Array("session-alice-bob-1".utf8)
        var plaintext = MessagePlaintext()
        plaintext.elements = [
            .text("The launch code is 0000 🤫"),
            .with {
                $0.content = .image(
                    .with {
                        $0.caption = "the board"; $0.mimeType = "image/jpeg"
                    }
                )
            },
        ]
        var message = Message(from: "alice", in: .oneToOne("bob"), elements: [], clientMsgID: "e2e-1")
        let aad = Self.associatedData(message)
        let box = try AES.GCM.seal(plaintext.serializedBytes(), using: key, authenticating: aad)
        message.elements = [
            .with {
                $0.content = .encrypted(
                    .with {
                        $0.algorithm = "AES-256-GCM"
                        $0.senderDeviceID = "alice-phone"
                        $0.keyID = keyID
                        $0.nonce = Array(box.nonce)
                        $0.ciphertext = Array(box.ciphertext) + Array(box.tag)
                        $0.associatedData = aad
                    }
                )
            }
        ]
        let frame = Frame(message)
        #expect(frame.minReaderVersion == 3, "a version-2 reader would show an empty message")
        #expect(frame.validate().isEmpty, "\(frame.validate())")
        // The plaintext is nowhere in the bytes the relay handles.
        let wire = frame.serializedBytes()
        #expect(!wire.containsSubsequence(Array("launch code".utf8)))

        try await withClientGroup { group in
            try await withRelay { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group, deviceID: "alice-phone")
                let bob = try await TestClient.connect(to: server, as: "bob", group: group, deviceID: "bob-phone")
                try await alice.send(frame)
                #expect(await eventually { bob.collector.messages.count == 1 && alice.collector.acks.count == 1 })
                #expect(alice.collector.acks.first?.errorCode == 0)
                // What the relay could read: the envelope (it routed and numbered the message).
                let received = try #require(bob.collector.messages.first)
                #expect(received.seq == 1 && received.senderID == "alice" && received.conversation == .oneToOne("bob"))
                #expect(try open(received, key: key) == plaintext)
                // Stored like any message: a device that logs in later syncs it, still sealed.
                let laptop = try await TestClient.connect(to: server, as: "bob", group: group, deviceID: "bob-laptop")
                let answer = try await laptop.ask(RelayProtocol.syncFrame(.oneToOne("alice"), from: 1, requestID: 9))
                guard case .syncResponse(let page)? = answer?.payload else {
                    Issue.record("no sync response: \(String(describing: answer))")
                    return
                }
                #expect(page.messages.count == 1)
                #expect(try page.messages.first.map { try open($0, key: key) } == plaintext)
                // A ciphertext moved to another message does not open.
                var moved = received
                moved.clientMsgID = "e2e-2"
                #expect(throws: (any Error).self) { try open(moved, key: key) }
                await laptop.close()
                await alice.close()
                await bob.close()
            }
        }
    }

    /// An encrypted element names the device that sealed it, the sending one (message.proto):
    /// receivers pick the session that opens it by that id. A device that names another (of its
    /// user or not) is refused as a message with another sender_device_id is (1001), and an edit
    /// whose new content names another device than the editing one with 3003; neither reaches
    /// anyone. Another device of the user edits with content it sealed itself.
    @Test func anEncryptedElementSealedByAnotherDeviceIsRefused() async throws {
        func sealed(by device: String) -> MessageElement {
            .with {
                $0.content = .encrypted(
                    .with {
                        $0.algorithm = "AES-256-GCM"
                        $0.senderDeviceID = device
                        $0.keyID = Array("session-1".utf8)
                        $0.ciphertext = Array(repeating: 7, count: 32)
                    }
                )
            }
        }
        func edit(_ message: Message, sealedBy device: String, requestID: UInt64) -> Frame {
            editFrame(message, by: "alice", to: [sealed(by: device)], requestID: requestID)
        }
        try await withClientGroup { group in
            try await withRelay { server in
                let phone = try await TestClient.connect(to: server, as: "alice", group: group, deviceID: "alice-phone")
                let laptop = try await TestClient.connect(
                    to: server,
                    as: "alice",
                    group: group,
                    deviceID: "alice-laptop"
                )
                let bob = try await TestClient.connect(to: server, as: "bob", group: group, deviceID: "bob-phone")
                for (index, device) in ["alice-laptop", "bob-phone", ""].enumerated() {
                    let forged = Message(
                        from: "alice",
                        in: .oneToOne("bob"),
                        elements: [sealed(by: device)],
                        clientMsgID: "forged-\(index)"
                    )
                    try await phone.send(Frame(forged))
                }
                let good = Message(
                    from: "alice",
                    in: .oneToOne("bob"),
                    elements: [sealed(by: "alice-phone")],
                    clientMsgID: "good"
                )
                try await phone.send(Frame(good))
                #expect(await eventually { phone.collector.acks.count == 4 && bob.collector.messages.count == 1 })
                #expect(phone.collector.acks.map(\.errorCode) == [1001, 1001, 1001, 0])
                #expect(phone.collector.acks.first?.errorDescription.contains("alice-laptop") == true)
                let kept = try #require(bob.collector.messages.first)
                #expect(kept.clientMsgID == "good")
                // An edit: the editing device seals the new content.
                try await phone.send(edit(kept, sealedBy: "alice-laptop", requestID: 21))
                #expect(await eventually { phone.collector.result(of: 21) != nil })
                #expect(phone.collector.result(of: 21)?.errorCode == RelayProtocol.RequestError.badRequest)
                try await laptop.send(edit(kept, sealedBy: "alice-laptop", requestID: 22))
                #expect(await eventually { laptop.collector.result(of: 22) != nil })
                #expect(laptop.collector.result(of: 22)?.errorCode == 0)
                #expect(await eventually { bob.collector.frames.contains { $0.payload?.kind == .edit } })
                let edits = bob.collector.frames.compactMap { frame -> EditEvent? in
                    if case .edit(let edit)? = frame.payload { edit } else { nil }
                }
                #expect(edits.count == 1)
                guard case .encrypted(let content)? = edits.first?.newMessage?.elements.first?.content else {
                    Issue.record("bob got no encrypted edit: \(edits)")
                    return
                }
                #expect(content.senderDeviceID == "alice-laptop")
                await phone.close()
                await laptop.close()
                await bob.close()
            }
        }
    }

    /// Opens an encrypted message as its receiver does: checks the associated data against the
    /// envelope, then AES-GCM.
    func open(_ message: Message, key: SymmetricKey) throws -> MessagePlaintext {
        guard case .encrypted(let sealed)? = message.elements.first?.content, sealed.algorithm == "AES-256-GCM" else {
            throw IMCodecError(code: .payloadMismatch, reason: "not an AES-GCM envelope")
        }
        guard sealed.associatedData == Self.associatedData(message) else {
            throw IMCodecError(code: .payloadMismatch, reason: "the envelope was moved")
        }
        let box = try AES.GCM.SealedBox(
            nonce: AES.GCM.Nonce(data: sealed.nonce),
            ciphertext: sealed.ciphertext.dropLast(16),
            tag: sealed.ciphertext.suffix(16)
        )
        return try MessagePlaintext(
            serializedBytes: Array(AES.GCM.open(box, using: key, authenticating: sealed.associatedData))
        )
    }

    @Test("call signals reach the conversation: invite, ring, accept, hang up")
    func callSignalling() async throws {
        try await withClientGroup { group in
            try await withRelay { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group)
                let bob = try await TestClient.connect(to: server, as: "bob", group: group)
                func signal(_ kind: CallSignal, by user: String, to peer: String) -> Frame {
                    Frame(
                        .call(
                            .with {
                                $0.callID = "call-1"; $0.signal = kind; $0.conversation = .oneToOne(peer)
                                $0.userID = user; $0.media = .audio
                                if kind == .invite { $0.inviteeIDs = [peer]; $0.timeoutS = 30 }
                            }
                        )
                    )
                }
                #expect(signal(.invite, by: "alice", to: "bob").validate().isEmpty)
                try await alice.send(signal(.invite, by: "alice", to: "bob"))
                #expect(await eventually { bob.collector.kinds.contains(.call) })
                try await bob.send(signal(.ring, by: "bob", to: "alice"))
                try await bob.send(signal(.accept, by: "bob", to: "alice"))
                try await alice.send(signal(.hangUp, by: "alice", to: "bob"))
                let calls = { (c: TestClient) in
                    c.collector.frames.compactMap { if case .call(let e)? = $0.payload { e.signal } else { nil } }
                }
                #expect(await eventually { calls(alice) == [.ring, .accept] && calls(bob) == [.invite, .hangUp] })
                await alice.close()
                await bob.close()
            }
        }
    }

    @Test("a streamed answer grows by chunks from its sender; another user cannot add to it")
    func streamedMessage() async throws {
        try await withClientGroup { group in
            try await withRelay({ $0.groups = ["team": ["bot", "bob", "carol"]] }) { server in
                let bot = try await TestClient.connect(to: server, as: "bot", group: group)
                let bob = try await TestClient.connect(to: server, as: "bob", group: group)
                var answer = Message(
                    from: "bot",
                    in: .group("team"),
                    elements: [
                        .with {
                            $0.content = .stream(
                                .with {
                                    $0.streamID = "s-1"; $0.text = "The"
                                }
                            )
                        }
                    ],
                    clientMsgID: "answer-1"
                )
                answer.senderID = "bot"
                try await bot.send(Frame(answer))
                #expect(await eventually { bob.collector.messages.count == 1 && bot.collector.acks.count == 1 })
                let ack = try #require(bot.collector.acks.first)
                let ref = MessageRef.with {
                    $0.clientMsgID = "answer-1"; $0.serverMsgUID = ack.serverMsgUID; $0.seq = ack.seq
                    $0.conversation = .group("team"); $0.senderID = "bot"
                }
                for (position, text) in [" answer", " is 42."].enumerated() {
                    try await bot.send(
                        Frame(
                            .streamChunk(
                                .with {
                                    $0.message = ref; $0.streamID = "s-1"; $0.position = UInt32(position)
                                    $0.text = text; $0.final = position == 1
                                }
                            )
                        )
                    )
                }
                let chunks = {
                    bob.collector.frames.compactMap { if case .streamChunk(let c)? = $0.payload { c } else { nil } }
                }
                #expect(await eventually { chunks().count == 2 })
                #expect(chunks().map(\.text).joined() == " answer is 42." && chunks().last?.final == true)
                // Bob is not the sender: the relay refuses his chunk.
                var forged = Frame(
                    .streamChunk(
                        .with {
                            $0.message = ref; $0.streamID = "s-1"; $0.position = 2
                        }
                    )
                )
                forged.requestID = 9
                let refused = try await bob.ask(forged)
                if case .requestResult(let result)? = refused?.payload {
                    #expect(result.errorCode == RelayProtocol.RequestError.notTheSender)
                } else {
                    Issue.record("no refusal: \(String(describing: refused))")
                }
                await bot.close()
                await bob.close()
            }
        }
    }

    @Test("key bundles: a device publishes, another user fetches; each fetch hands out one one-time key")
    func keyDistribution() async throws {
        try await withClientGroup { group in
            try await withRelay { server in
                let bob = try await TestClient.connect(to: server, as: "bob", group: group, deviceID: "bob-phone")
                let alice = try await TestClient.connect(to: server, as: "alice", group: group, deviceID: "alice-phone")
                var publish = Frame(
                    .keyPublish(
                        .with {
                            $0.bundle = .with {
                                $0.userID = "mallory"  // the relay sets the session's user and device
                                $0.kind = .signalPrekeys; $0.bundle = Array(repeating: 7, count: 64)
                                $0.oneTimeKeys = [.with { $0.key = [1] }, .with { $0.key = [2] }]
                            }
                        }
                    )
                )
                publish.requestID = 1
                let published = try await bob.ask(publish)
                if case .requestResult(let result)? = published?.payload {
                    #expect(result.errorCode == 0)
                } else {
                    Issue.record("no answer to the publish: \(String(describing: published))")
                }
                func fetch(_ id: UInt64, kind: KeyBundleKind = .signalPrekeys) async throws -> KeyFetchResponse? {
                    var request = Frame(
                        .keyFetchRequest(
                            .with {
                                $0.userID = "bob"; $0.kind = kind
                            }
                        )
                    )
                    request.requestID = id
                    guard case .keyFetchResponse(let response)? = try await alice.ask(request)?.payload else {
                        return nil
                    }
                    return response
                }
                let first = try #require(try await fetch(2))
                #expect(first.errorCode == 0 && first.bundles.count == 1)
                #expect(first.bundles.first?.userID == "bob" && first.bundles.first?.deviceID == "bob-phone")
                #expect(first.bundles.first?.oneTimeKeys.map(\.key) == [[1]])
                let second = try #require(try await fetch(3))
                #expect(second.bundles.first?.oneTimeKeys.map(\.key) == [[2]])
                let third = try #require(try await fetch(4))
                #expect(third.bundles.first?.oneTimeKeys.isEmpty == true, "the one-time keys are used up")
                #expect(third.bundles.first?.bundle == Array(repeating: 7, count: 64))
                let none = try #require(try await fetch(5, kind: .mlsKeyPackage))
                #expect(none.errorCode == RelayProtocol.RequestError.noKeys && none.bundles.isEmpty)
                // A session without a device id cannot publish for the device its bundle names: before,
                // it replaced bob-phone's bundle.
                let deviceless = try await TestClient.connect(to: server, as: "bob", group: group)
                var forged = publish
                if case .keyPublish(var keys)? = forged.payload {
                    keys.bundle?.deviceID = "bob-phone"
                    keys.bundle?.bundle = Array(repeating: 9, count: 64)
                    forged.payload = .keyPublish(keys)
                }
                forged.requestID = 6
                let refused = try await deviceless.ask(forged)
                #expect(refused?.requestResult?.errorCode == RelayProtocol.RequestError.badRequest)
                let after = try #require(try await fetch(7))
                #expect(after.bundles.first?.bundle == Array(repeating: 7, count: 64))
                await deviceless.close()
                await alice.close()
                await bob.close()
            }
        }
    }
}

extension RelayContentTests {
    /// A user's bundles of one kind fit one `key_fetch_response`: at a 4,096-byte limit, bob's
    /// phone publishes 2,000 bytes, and his laptop's 2,000 more are refused with 3010 (1,000 are
    /// taken); one-time keys count once each, at the largest, as a fetch hands out one. Before, every publish was
    /// taken, and a fetch of bob's bundles was past the limit: alice's device lost its connection at
    /// each fetch, and could never start an encrypted session with bob.
    @Test("key bundles of one user fit one fetch answer")
    func keyBundlesFitOneFetchAnswer() async throws {
        let codec = FrameCodecOptions(maxFrameSize: 4096)
        func publish(
            _ client: TestClient,
            _ bytes: Int,
            oneTimeKeys: [Int] = [],
            kind: KeyBundleKind = .signalPrekeys,
            id: UInt64
        ) async throws -> Int32? {
            let keys = KeyPublish.with {
                $0.bundle = .with {
                    $0.kind = kind; $0.bundle = Array(repeating: 7, count: bytes)
                    $0.oneTimeKeys = oneTimeKeys.enumerated().map { key, size in
                        .with { $0.key = Array(repeating: UInt8(key), count: size) }
                    }
                }
            }
            return try await RelayUserStateTests.ask(client, .keyPublish(keys), id: id)?.requestResult?.errorCode
        }
        try await withClientGroup { group in
            try await withRelay({ $0.codec = codec }) { server in
                func connect(_ user: String, _ device: String) async throws -> TestClient {
                    try await TestClient.connect(to: server, as: user, group: group, deviceID: device, codec: codec)
                }
                let phone = try await connect("bob", "phone")
                let laptop = try await connect("bob", "laptop")
                let alice = try await connect("alice", "a")
                #expect(try await publish(phone, 2000, oneTimeKeys: [300, 300, 300, 300], id: 1) == 0)
                #expect(try await publish(laptop, 2000, id: 2) == RelayProtocol.RequestError.tooLargeToDeliver)
                #expect(try await publish(laptop, 1000, id: 3) == 0)
                // A kind the schema does not name is refused: each kind is kept apart, so made-up
                // ones (any int32) were kept without bound.
                let madeUp = try await publish(laptop, 10, kind: .unrecognized(7), id: 30)
                #expect(madeUp == RelayProtocol.RequestError.badRequest)
                // The phone's own bundle is replaced, not added to.
                #expect(try await publish(phone, 2100, oneTimeKeys: [300, 300, 300, 300], id: 4) == 0)
                let fetch = KeyFetchRequest.with {
                    $0.userID = "bob"; $0.kind = .signalPrekeys
                }
                guard
                    case .keyFetchResponse(let answer)? = try await RelayUserStateTests.ask(
                        alice,
                        .keyFetchRequest(fetch),
                        id: 5
                    )?.payload
                else {
                    Issue.record("no key_fetch_response")
                    return
                }
                #expect(answer.bundles.map(\.deviceID) == ["laptop", "phone"])
                #expect(answer.bundles.map(\.bundle.count) == [1000, 2100])
                #expect(answer.bundles.map(\.oneTimeKeys.count) == [0, 1])
                // A one-time key counts at the largest: a fetch hands out the next, which may be larger
                // than the first.
                let carolPhone = try await connect("carol", "phone")
                let carolLaptop = try await connect("carol", "laptop")
                #expect(try await publish(carolPhone, 1000, oneTimeKeys: [10, 2000], id: 6) == 0)
                #expect(try await publish(carolLaptop, 1000, id: 7) == RelayProtocol.RequestError.tooLargeToDeliver)
                #expect(alice.channel.isActive && alice.collector.decodeErrors.isEmpty)
                for client in [phone, laptop, alice, carolPhone, carolLaptop] { await client.close() }
            }
        }
    }

    /// Each key fetch hands out and deletes one one-time key per device, so one user may take only
    /// so many of another user's (`--key-fetch-rate`, here 2 a minute in bursts of 2; Signal's
    /// prekey limiter is keyed the same way): past it such a fetch is refused with 3014 and deletes
    /// nothing. Another requester has a budget of its own, a fetch that would hand out no one-time
    /// key costs nothing, and the relay's clock refills the budget. Before, any user could fetch
    /// until another user's one-time keys were gone, and every later session with that user started
    /// without one.
    @Test("one user takes another user's one-time keys within a budget")
    func oneTimeKeysTakenWithinABudget() async throws {
        let clock = FrozenClock()
        try await withClientGroup { group in
            try await withRelay({
                $0.keyFetchRate = 2; $0.silenceClock = clock.now
            }) { server in
                func connect(_ user: String, _ device: String) async throws -> TestClient {
                    try await TestClient.connect(to: server, as: user, group: group, deviceID: device)
                }
                func publish(_ client: TestClient, keys: [UInt8], kind: KeyBundleKind, id: UInt64) async throws {
                    let publish = KeyPublish.with {
                        $0.bundle = .with {
                            $0.kind = kind; $0.bundle = [7]
                            $0.oneTimeKeys = keys.map { key in .with { $0.key = [key] } }
                        }
                    }
                    let result = try await RelayUserStateTests.ask(client, .keyPublish(publish), id: id)
                    #expect(result?.requestResult?.errorCode == 0)
                }
                func fetch(
                    _ client: TestClient,
                    devices: [String] = [],
                    kind: KeyBundleKind = .signalPrekeys,
                    id: UInt64
                ) async throws -> KeyFetchResponse {
                    let request = KeyFetchRequest.with {
                        $0.userID = "bob"; $0.deviceIDs = devices; $0.kind = kind
                    }
                    let answer = try await RelayUserStateTests.ask(client, .keyFetchRequest(request), id: id)
                    guard case .keyFetchResponse(let response)? = answer?.payload else {
                        Issue.record("no key_fetch_response: \(String(describing: answer))")
                        return KeyFetchResponse()
                    }
                    return response
                }
                func handedOut(_ answer: KeyFetchResponse) -> [[UInt8]] {
                    answer.bundles.flatMap { $0.oneTimeKeys.map(\.key) }
                }
                let phone = try await connect("bob", "phone")
                let laptop = try await connect("bob", "laptop")
                try await publish(phone, keys: [1, 2, 3], kind: .signalPrekeys, id: 1)
                try await publish(laptop, keys: [11, 12, 13], kind: .signalPrekeys, id: 2)
                try await publish(laptop, keys: [], kind: .mlsKeyPackage, id: 3)
                let alice = try await connect("alice", "a")
                // Both devices' first keys: two, the whole burst.
                #expect(handedOut(try await fetch(alice, id: 4)) == [[11], [1]])
                // Spent: refused, whether for both devices or one, with no bundle and nothing deleted.
                for (devices, id) in [([String](), UInt64(5)), (["phone"], 6)] {
                    let refused = try await fetch(alice, devices: devices, id: id)
                    #expect(refused.errorCode == RelayProtocol.RequestError.tooFrequent && refused.bundles.isEmpty)
                    #expect(refused.errorDescription.contains("--key-fetch-rate"))
                }
                // A bundle without one-time keys costs nothing.
                let package = try await fetch(alice, kind: .mlsKeyPackage, id: 7)
                #expect(package.errorCode == 0 && package.bundles.map(\.deviceID) == ["laptop"])
                // Carol's budget is her own; she gets the keys alice's refused fetches left.
                let carol = try await connect("carol", "c")
                #expect(handedOut(try await fetch(carol, id: 8)) == [[12], [2]])
                // Half a minute later alice has one key's worth: the phone's next.
                clock.advance(by: 30_000)
                #expect(try await fetch(alice, id: 9).errorCode == RelayProtocol.RequestError.tooFrequent)
                #expect(handedOut(try await fetch(alice, devices: ["phone"], id: 10)) == [[3]])
                // The sweep forgets a budget once it is full again, a minute later.
                func budgets() async throws -> Int {
                    try await server.withRouter { router in
                        router.forgetFullBudgets()
                        return router.keyFetchBudgets.keys.count
                    }.get()
                }
                #expect(try await budgets() == 2)
                clock.advance(by: 60_000)
                #expect(try await budgets() == 0)
                for client in [phone, laptop, alice, carol] { await client.close() }
            }
        }
    }
}

extension Array where Element == UInt8 {
    fileprivate func containsSubsequence(_ needle: [UInt8]) -> Bool {
        guard needle.count <= count else { return false }
        return (0...(count - needle.count)).contains { Array(self[$0..<$0 + needle.count]) == needle }
    }
}
#endif
