#if Tools
import IMCodec
import IMCodecNIO
import NIOCore
import NIOPosix
import Testing

@testable import imcodec_relay

/// Several devices per user and the user stream (issue 16, items 2 and 3; session.proto, "The user
/// stream"): devices online at once, kicks only for the same device id, SENT copies on the sender's
/// other devices, events on every device but the sending one, catching up before going live,
/// stream acks, retention, and ``ResumeTracker``'s side of the stream.
@Suite("Relay devices and stream", .timeLimit(.minutes(2)))
struct RelayDeviceTests {
    // MARK: Helpers

    private func streamSync(
        _ client: TestClient,
        _ request: StreamSyncRequest,
        _ requestID: UInt64
    ) async throws
        -> StreamSyncResponse?
    {
        let frame = try await client.ask(RelayProtocol.answer(.streamSyncRequest(request), requestID: requestID))
        if case .streamSyncResponse(let response)? = frame?.payload { return response }
        return nil
    }

    private func kicks(_ client: TestClient) -> [KickedOffline] {
        client.collector.frames.compactMap { if case .kickedOffline(let k)? = $0.payload { k } else { nil } }
    }

    private func texts(_ frames: [Frame]) -> [String] {
        frames.compactMap { if case .message(let m)? = $0.payload { m.previewText } else { nil } }
    }

    private func sendTexts(_ alice: TestClient, to user: String, _ range: ClosedRange<Int>) {
        for k in range {
            alice.channel.write(
                Frame(Message.c2cText(from: "alice", to: user, "m\(k)", clientMsgID: "m-\(k)")),
                promise: nil
            )
        }
        alice.channel.flush()
    }

    // MARK: Devices

    /// Issue 16 item 3: "Devices log in with their own device_id, are online at the same time";
    /// Tencent (seed 000, onlineUserOnly) names "Multi-device roaming" as what ordinary messages get.
    @Test func devicesOfOneUserWithTheirOwnDeviceIDsAreOnlineAtOnce() async throws {
        try await withClientGroup { group in
            try await withRelay { server in
                let phone = try await TestClient.connect(to: server, as: "bob", group: group, deviceID: "phone")
                let laptop = try await TestClient.connect(to: server, as: "bob", group: group, deviceID: "laptop")
                let tablet = try await TestClient.connect(to: server, as: "bob", group: group, deviceID: "tablet")
                let alice = try await TestClient.connect(to: server, as: "alice", group: group)
                try await alice.send(
                    Frame(Message.c2cText(from: "alice", to: "bob", "to every device", clientMsgID: "a-1"))
                )
                #expect(await eventually { [phone, laptop, tablet].allSatisfy { $0.collector.messages.count == 1 } })
                for device in [phone, laptop, tablet] {
                    #expect(device.collector.messages.first?.direction == .received)
                    #expect(device.channel.isActive && kicks(device).isEmpty)
                }
                let stats = try await server.stats().get()
                #expect(stats.usersOnline == 2 && stats.connectionsOpen == 4)
                for client in [phone, laptop, tablet, alice] { await client.close() }
            }
        }
    }

    /// Issue 16 item 3: "kicked_offline (logged in elsewhere) happens only when the same device_id
    /// logs in again" (Tencent onKickedOffline, RongCloud KICKED_OFFLINE_BY_OTHER_CLIENT, per
    /// session.proto's KickReason).
    @Test func onlyALoginWithTheSameDeviceIDKicksWithLoggedInElsewhere() async throws {
        try await withClientGroup { group in
            try await withRelay { server in
                let phone = try await TestClient.connect(to: server, as: "alice", group: group, deviceID: "phone")
                let laptop = try await TestClient.connect(to: server, as: "alice", group: group, deviceID: "laptop")
                let phoneAgain = try await TestClient.connect(to: server, as: "alice", group: group, deviceID: "phone")
                #expect(await eventually { !phone.channel.isActive })
                #expect(
                    kicks(phone).map(\.reason) == [.loggedInElsewhere] && kicks(phone).first?.otherDeviceID == "phone"
                )
                try await laptop.roundTrip(1)
                #expect(laptop.channel.isActive && kicks(laptop).isEmpty)
                #expect(phoneAgain.channel.isActive && kicks(phoneAgain).isEmpty)
                let stats = try await server.stats().get()
                #expect(stats.usersOnline == 1 && stats.closedByError.isEmpty, "\(stats.closedByError)")
                for client in [laptop, phoneAgain] { await client.close() }
            }
        }
    }

    /// Issue 16 item 3: "A message sent from one device reaches the user's other devices with
    /// direction: SENT"; QuickBlox (seed 004) delivers a dialog message "on both recipients' and
    /// senders' device". The sending device gets its send_ack, not the message back.
    @Test func aMessageFromOneDeviceReachesTheOtherDevicesAsSentAndIsNotEchoed() async throws {
        try await withClientGroup { group in
            try await withRelay({ $0.groups = ["team": ["alice", "bob"]] }) { server in
                let phone = try await TestClient.connect(to: server, as: "alice", group: group, deviceID: "phone")
                let laptop = try await TestClient.connect(to: server, as: "alice", group: group, deviceID: "laptop")
                let bob = try await TestClient.connect(to: server, as: "bob", group: group)
                try await phone.send(Frame(Message.c2cText(from: "alice", to: "bob", "direct", clientMsgID: "a-1")))
                try await phone.send(Frame(Message.groupText(from: "alice", group: "team", "team", clientMsgID: "a-2")))
                #expect(
                    await eventually {
                        phone.collector.acks.count == 2 && laptop.collector.messages.count == 2
                            && bob.collector.messages.count == 2
                    }
                )
                #expect(laptop.collector.messages.map(\.previewText) == ["direct", "team"])
                #expect(laptop.collector.messages.map(\.direction) == [.sent, .sent])
                #expect(laptop.collector.messages.map(\.seq) == phone.collector.acks.map(\.seq))
                #expect(bob.collector.messages.map(\.direction) == [.received, .received])
                let positions = laptop.collector.frames.filter { $0.payload?.kind == .message }.map(\.streamPosition)
                #expect(positions.allSatisfy { $0 > 0 } && positions == positions.sorted())
                try await phone.roundTrip(1)
                #expect(phone.collector.messages.isEmpty)
                for client in [phone, laptop, bob] { await client.close() }
            }
        }
    }

    /// Issue 16 item 2: events of a conversation reach every device of its users (session.proto:
    /// "A device does not get back what it sent itself"); Tencent (seed 000, "Message Modification"):
    /// a modified message "is synced to all participants of the conversation".
    @Test func anEventReachesEveryDeviceOfTheConversationsUsersButTheSendingOne() async throws {
        try await withClientGroup { group in
            try await withRelay({ $0.groups = ["team": ["alice", "bob"]] }) { server in
                let phone = try await TestClient.connect(to: server, as: "alice", group: group, deviceID: "phone")
                let laptop = try await TestClient.connect(to: server, as: "alice", group: group, deviceID: "laptop")
                let bobPhone = try await TestClient.connect(to: server, as: "bob", group: group, deviceID: "phone")
                let bobLaptop = try await TestClient.connect(to: server, as: "bob", group: group, deviceID: "laptop")
                try await phone.send(
                    Frame(Message.groupText(from: "alice", group: "team", "hello", clientMsgID: "a-1"))
                )
                #expect(await eventually { bobLaptop.collector.messages.count == 1 })
                let message = try #require(bobLaptop.collector.messages.first)
                var edited = message
                edited.elements = [.text("hello (edited)")]
                let edit = RelayProtocol.answer(
                    .edit(
                        EditEvent.with {
                            $0.message = message.reference; $0.newMessage = edited; $0.editorID = "alice"
                        }
                    ),
                    requestID: 1
                )
                #expect(try await phone.ask(edit) != nil && phone.collector.result(of: 1)?.errorCode == 0)
                func edits(_ client: TestClient) -> [Frame] {
                    client.collector.frames.filter { $0.payload?.kind == .edit }
                }
                #expect(await eventually { [laptop, bobPhone, bobLaptop].allSatisfy { edits($0).count == 1 } })
                for device in [laptop, bobPhone, bobLaptop] {
                    #expect(edits(device).first?.streamPosition ?? 0 > 0, "kept: it carries its stream position")
                }
                try await phone.roundTrip(2)
                #expect(edits(phone).isEmpty)
                for client in [phone, laptop, bobPhone, bobLaptop] { await client.close() }
            }
        }
    }

    // MARK: The stream

    /// session.proto ("The user stream"): a device that logs in with stream_resume gets no live
    /// frame until its last stream_sync_response (has_more false), then every later kept frame
    /// live with its stream_position, each once and in order (Matrix next_batch, XEP-0198).
    @Test func aResumingDeviceGetsNothingLiveUntilItsLastStreamSyncResponse() async throws {
        try await withClientGroup { group in
            try await withRelay { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group)
                sendTexts(alice, to: "bob", 1...5)
                #expect(await eventually { alice.collector.acks.count == 5 })
                let bob = try await TestClient.connect(
                    to: server,
                    as: "bob",
                    group: group,
                    deviceID: "phone",
                    streamResume: true
                )
                var tracker = ResumeTracker(user: "bob")
                let login = try #require(bob.collector.loginResults.first)
                #expect(login.streamPosition == 5 && login.resumePosition == 0)
                var request = tracker.streamLoggedIn(login, limit: 3)
                #expect(request.afterPosition == 0 && tracker.isCatchingUp)

                // Sent after the login: not live yet.
                sendTexts(alice, to: "bob", 6...6)
                #expect(await eventually { alice.collector.acks.count == 6 })
                try await bob.roundTrip(100)
                #expect(bob.collector.messages.isEmpty, "nothing live before the stream sync")

                var handed: [Frame] = []
                var requestID: UInt64 = 0
                var pages: [StreamSyncResponse] = []
                while true {
                    requestID += 1
                    let page = try #require(try await streamSync(bob, request, requestID))
                    pages.append(page)
                    let (frames, next) = tracker.streamSynced(page, limit: 3)
                    handed += frames
                    guard let next else { break }
                    request = next
                    if pages.count == 1 {
                        // Between two pages: still not live.
                        sendTexts(alice, to: "bob", 7...7)
                        #expect(await eventually { alice.collector.acks.count == 7 })
                        try await bob.roundTrip(200)
                        #expect(bob.collector.messages.isEmpty, "nothing live before the last page")
                    }
                    #expect(pages.count < 10)
                }
                #expect(pages.map(\.hasMore) == [true, true, false])
                #expect(pages.last?.headPosition == 7 && !tracker.isCatchingUp)
                #expect(texts(handed) == (1...7).map { "m\($0)" })
                #expect(handed.map(\.streamPosition) == Array(1...7))

                // Live from now on, with the stream position.
                sendTexts(alice, to: "bob", 8...9)
                #expect(await eventually { bob.collector.messages.count == 2 })
                let live = bob.collector.frames.filter { $0.payload?.kind == .message }
                #expect(live.map(\.streamPosition) == [8, 9] && texts(live) == ["m8", "m9"])
                let accepted = live.map { tracker.accept($0) }
                #expect(accepted == [true, true])
                #expect(tracker.streamPosition == 9 && tracker.delivered.values.first == 9)
                await alice.close()
                await bob.close()
            }
        }
    }

    // MARK: The bound on devices

    /// Publishes a key bundle from `client`'s device; its request result's code.
    private func publish(_ client: TestClient, id: UInt64) async throws -> Int32? {
        let keys = KeyPublish.with {
            $0.bundle = .with {
                $0.kind = .signalPrekeys; $0.bundle = [1, 2, 3]
            }
        }
        return try await RelayUserStateTests.ask(client, .keyPublish(keys), id: id)?.requestResult?.errorCode
    }

    /// The devices of `user` a key fetch by `client` finds bundles of.
    private func bundleDevices(of user: String, asking client: TestClient, id: UInt64) async throws -> [String]? {
        let fetch = KeyFetchRequest.with {
            $0.userID = user; $0.kind = .signalPrekeys
        }
        guard
            case .keyFetchResponse(let answer)? = try await RelayUserStateTests.ask(
                client,
                .keyFetchRequest(fetch),
                id: id
            )?
            .payload
        else { return nil }
        return answer.bundles.map(\.deviceID)
    }

    /// `--max-devices-per-user` (3 here). A login from a device id the relay does not know, by a
    /// user with 3 devices, makes the relay forget the least recently seen one that is offline (by
    /// its latest login or disconnection): its acknowledged position and its key bundle go, and it
    /// comes back as a new device. With all 3 online, a fourth is refused with 2005 and changes
    /// nothing. After a restart the relay still knows which was seen last (its device records keep
    /// the order). Before, every device id a client ever logged in with was kept, with its bundles
    /// in every contact's key fetch.
    @Test func aUserKeepsAtMostMaxDevicesAndANewOneReplacesTheLeastRecentlySeenOfflineOne() async throws {
        let database = try await TestStore(.sqlite)
        defer { database.remove() }
        try await withClientGroup { group in
            func bob(_ server: RelayServer, _ device: String) async throws -> TestClient {
                try await TestClient.connect(to: server, as: "bob", group: group, deviceID: device)
            }
            /// Closes `client` and waits until the relay has `open` connections left (it saw the close).
            func close(_ client: TestClient, leaving open: Int, _ server: RelayServer) async -> Bool {
                await client.close()
                return await eventually { (try? server.stats().wait().connectionsOpen) == open }
            }
            try await withRelay({
                $0.store = database.location; $0.maxDevicesPerUser = 3
            }) { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group)
                let a = try await bob(server, "a")
                sendTexts(alice, to: "bob", 1...1)
                #expect(await eventually { a.collector.messages.count == 1 })
                let ack = RelayProtocol.answer(.streamAck(StreamAck.with { $0.position = 1 }), requestID: 1)
                #expect(try await a.ask(ack)?.requestResult?.errorCode == 0)
                let b = try await bob(server, "b")
                #expect(try await publish(b, id: 2) == 0)
                let c = try await bob(server, "c")
                #expect(await close(a, leaving: 3, server))
                #expect(await close(b, leaving: 2, server))
                #expect(try await bundleDevices(of: "bob", asking: alice, id: 3) == ["b"])

                // d: a, offline longer than b, is forgotten; b is kept.
                let d = try await bob(server, "d")
                #expect(try await bundleDevices(of: "bob", asking: alice, id: 4) == ["b"])
                // a is back as a new device: its acknowledged position is gone, and b, the only
                // offline device, is forgotten with its bundle.
                let aAgain = try await bob(server, "a")
                #expect(aAgain.collector.loginResults.first?.resumePosition == 0)
                #expect(try await bundleDevices(of: "bob", asking: alice, id: 5) == [])

                // a, c and d are online: a fourth device is refused, and nothing changes.
                let e = try await TestClient.connect(
                    to: server,
                    sending: try await TestAuth.login("bob", deviceID: "e"),
                    group: group
                )
                #expect(await eventually { !e.collector.loginResults.isEmpty })
                #expect(e.collector.loginResults.first?.errorCode == RelayProtocol.LoginError.tooManyDevices)
                #expect(await eventually { !e.channel.isActive })
                for client in [c, d, aAgain] { #expect(client.channel.isActive && kicks(client).isEmpty) }

                // c acknowledges position 2; c and d publish bundles; d goes offline first, then c, then a.
                sendTexts(alice, to: "bob", 2...2)
                #expect(await eventually { c.collector.messages.count == 1 })
                let cAck = RelayProtocol.answer(.streamAck(StreamAck.with { $0.position = 2 }), requestID: 6)
                #expect(try await c.ask(cAck)?.requestResult?.errorCode == 0)
                #expect(try await publish(c, id: 7) == 0)
                #expect(try await publish(d, id: 8) == 0)
                #expect(await close(d, leaving: 3, server))
                #expect(await close(c, leaving: 2, server))
                #expect(await close(aAgain, leaving: 1, server))
                await alice.close()
            }
            // After a restart: f forgets d, seen first (not a, first by id); g forgets c; c is back
            // as a new device (its acknowledged position is gone) and forgets a.
            try await withRelay({
                $0.store = database.location; $0.maxDevicesPerUser = 3
            }) { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group)
                #expect(try await bundleDevices(of: "bob", asking: alice, id: 1) == ["c", "d"])
                let f = try await bob(server, "f")
                #expect(try await bundleDevices(of: "bob", asking: alice, id: 2) == ["c"])
                let g = try await bob(server, "g")
                #expect(try await bundleDevices(of: "bob", asking: alice, id: 3) == [])
                let c = try await bob(server, "c")
                #expect(c.collector.loginResults.first?.resumePosition == 0)
                let a = try await TestClient.connect(
                    to: server,
                    sending: try await TestAuth.login("bob", deviceID: "a"),
                    group: group
                )
                #expect(await eventually { !a.collector.loginResults.isEmpty })
                #expect(a.collector.loginResults.first?.errorCode == RelayProtocol.LoginError.tooManyDevices)
                for client in [alice, f, g, c, a] { await client.close() }
            }
        }
    }

    /// The devices online when the relay stops gracefully count as seen then: after a restart, a
    /// new device forgets the one that went offline before the stop, not the one that stayed
    /// online through it (which logged in first).
    @Test func devicesOnlineAtAGracefulStopCountAsSeenLast() async throws {
        let database = try await TestStore(.sqlite)
        defer { database.remove() }
        try await withClientGroup { group in
            try await withRelay({
                $0.store = database.location; $0.maxDevicesPerUser = 2
            }) { server in
                let stays = try await TestClient.connect(to: server, as: "bob", group: group, deviceID: "stays")
                let leaves = try await TestClient.connect(to: server, as: "bob", group: group, deviceID: "leaves")
                #expect(try await publish(stays, id: 1) == 0)
                #expect(try await publish(leaves, id: 2) == 0)
                await leaves.close()
                #expect(await eventually { (try? server.stats().wait().connectionsOpen) == 1 })
                // `stays` is still online when withRelay stops the relay.
            }
            try await withRelay({
                $0.store = database.location; $0.maxDevicesPerUser = 2
            }) { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group)
                let new = try await TestClient.connect(to: server, as: "bob", group: group, deviceID: "new")
                #expect(try await bundleDevices(of: "bob", asking: alice, id: 1) == ["stays"])
                for client in [alice, new] { await client.close() }
            }
        }
    }

    /// A device id holds at most 128 bytes: a 129-byte one is refused with 2006 and the connection
    /// closes; a 128-byte one logs in, and bob's watcher is told. Before, any id up to the frame
    /// size limit was kept, with each of the user's devices (positions, floors, key bundles,
    /// records): 16 devices of 4 MiB ids held 64 MiB for one user.
    @Test func aDeviceIDHoldsAtMost128Bytes() async throws {
        try await withClientGroup { group in
            try await withRelay { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group)
                let watch = PresenceSubscription.with {
                    $0.action = .subscribe; $0.userIDs = ["bob"]
                }
                let subscribed = try await RelayUserStateTests.ask(alice, .presenceSubscription(watch), id: 1)
                #expect(subscribed?.requestResult?.errorCode == 0)
                let long = try await TestClient.connect(
                    to: server,
                    sending: try await TestAuth.login("bob", deviceID: String(repeating: "d", count: 129)),
                    group: group
                )
                #expect(await eventually { !long.collector.loginResults.isEmpty })
                #expect(long.collector.loginResults.first?.errorCode == RelayProtocol.LoginError.deviceIDTooLong)
                #expect(await eventually { !long.channel.isActive })
                let longest = String(repeating: "d", count: 128)
                let bob = try await TestClient.connect(to: server, as: "bob", group: group, deviceID: longest)
                #expect(
                    await eventually {
                        alice.collector.frames.contains {
                            if case .presence(let update)? = $0.payload { update.deviceID == longest } else { false }
                        }
                    }
                )
                for client in [alice, long, bob] { await client.close() }
            }
        }
    }

    /// A client that logs in with a new device id each time, and publishes a key bundle from each,
    /// leaves the relay keeping its newest `--max-devices-per-user` devices (3): a contact's key
    /// fetch carries three bundles, not twelve.
    @Test func aClientThatLogsInWithANewDeviceIDEachTimeLeavesTheNewestDevices() async throws {
        try await withClientGroup { group in
            try await withRelay({ $0.maxDevicesPerUser = 3 }) { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group)
                for index in 0..<12 {
                    let device = try await TestClient.connect(
                        to: server,
                        as: "bob",
                        group: group,
                        deviceID: "d\(index)"
                    )
                    #expect(try await publish(device, id: 1) == 0)
                    await device.close()
                    #expect(await eventually { (try? server.stats().wait().connectionsOpen) == 1 })
                }
                #expect(try await bundleDevices(of: "bob", asking: alice, id: 1) == ["d10", "d11", "d9"])
                await alice.close()
            }
        }
    }

    /// session.proto (StreamAck): "the server keeps it as the device's position (LoginRequest.
    /// stream_position 0 resumes from it)", per device, as Signal-Server keeps a queue per device.
    @Test func aStreamAckIsWhereALoginWithoutAPositionResumes() async throws {
        try await withClientGroup { group in
            try await withRelay { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group)
                let phone = try await TestClient.connect(to: server, as: "bob", group: group, deviceID: "phone")
                sendTexts(alice, to: "bob", 1...3)
                #expect(await eventually { phone.collector.messages.count == 3 })
                var tracker = ResumeTracker(user: "bob")
                for frame in phone.collector.frames where frame.payload?.kind == .message {
                    let accepted = tracker.accept(frame)
                    #expect(accepted)
                }
                let ack = RelayProtocol.answer(.streamAck(tracker.streamAck), requestID: 1)
                #expect(tracker.streamAck.position == 3)
                #expect(try await phone.ask(ack) != nil && phone.collector.result(of: 1)?.errorCode == 0)
                await phone.close()
                sendTexts(alice, to: "bob", 4...5)
                #expect(await eventually { alice.collector.acks.count == 5 })

                let again = try await TestClient.connect(
                    to: server,
                    as: "bob",
                    group: group,
                    deviceID: "phone",
                    streamResume: true
                )
                let login = try #require(again.collector.loginResults.first)
                #expect(login.resumePosition == 3 && login.streamPosition == 5)
                var fresh = ResumeTracker(user: "bob")
                let request = fresh.streamLoggedIn(login)
                #expect(request.afterPosition == 3)
                let page = try #require(try await streamSync(again, request, 2))
                #expect(page.frames.map(\.position) == [4, 5] && !page.hasMore && !page.truncated)
                let resumed = fresh.streamSynced(page).frames
                #expect(texts(resumed) == ["m4", "m5"])

                // Another device of bob never acknowledged anything: it resumes from the start.
                let laptop = try await TestClient.connect(
                    to: server,
                    as: "bob",
                    group: group,
                    deviceID: "laptop",
                    streamResume: true
                )
                #expect(laptop.collector.loginResults.first?.resumePosition == 0)
                // A position named in the login wins over the acknowledged one.
                await again.close()
                let named = try await TestClient.connect(
                    to: server,
                    as: "bob",
                    group: group,
                    deviceID: "phone",
                    streamResume: true,
                    streamPosition: 1
                )
                #expect(named.collector.loginResults.first?.resumePosition == 1)
                // An ack past the head is held to the head.
                let past = RelayProtocol.answer(.streamAck(StreamAck.with { $0.position = 999 }), requestID: 3)
                #expect(try await laptop.ask(past) != nil)
                await laptop.close()
                let laptopAgain = try await TestClient.connect(
                    to: server,
                    as: "bob",
                    group: group,
                    deviceID: "laptop",
                    streamResume: true
                )
                #expect(laptopAgain.collector.loginResults.first?.resumePosition == 5)
                for client in [alice, named, laptopAgain] { await client.close() }
            }
        }
    }

    /// session.proto (StreamSyncResponse.truncated): "Frames after after_position were dropped by
    /// the server's retention limit before this device read them: the answer starts at the oldest
    /// one kept" (``RelayConfiguration/maxStreamEntries``).
    @Test func aResumeFromBelowTheRetainedStreamIsMarkedTruncated() async throws {
        try await withClientGroup { group in
            try await withRelay({ $0.maxStreamEntries = 5 }) { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group)
                sendTexts(alice, to: "bob", 1...8)
                #expect(await eventually { alice.collector.acks.count == 8 })
                let bob = try await TestClient.connect(to: server, as: "bob", group: group, streamResume: true)
                var tracker = ResumeTracker(user: "bob")
                let request = tracker.streamLoggedIn(try #require(bob.collector.loginResults.first))
                let page = try #require(try await streamSync(bob, request, 1))
                #expect(page.truncated && !page.hasMore && page.headPosition == 8)
                #expect(page.frames.map(\.position) == [4, 5, 6, 7, 8])
                let (frames, next) = tracker.streamSynced(page)
                #expect(texts(frames) == ["m4", "m5", "m6", "m7", "m8"] && next == nil && tracker.missedFrames)
                // From the oldest kept position on, nothing was missed.
                let kept = try #require(try await streamSync(bob, StreamSyncRequest.with { $0.afterPosition = 3 }, 2))
                #expect(!kept.truncated && kept.frames.map(\.position) == [4, 5, 6, 7, 8])
                let missed = try #require(try await streamSync(bob, StreamSyncRequest.with { $0.afterPosition = 2 }, 3))
                #expect(missed.truncated)
                await alice.close()
                await bob.close()
            }
        }
    }

    // MARK: ResumeTracker

    /// ResumeTracker alone (session.proto, "The user stream"): it resumes from the relay's position
    /// when it has none, hands each stream frame on once in position order, refuses a live frame it
    /// already has, passes frames that are not kept, notes truncation, and acks its position.
    @Test func theResumeTrackerHandsOnEachStreamFrameOnceInPositionOrder() throws {
        func frame(_ position: UInt64, seq: UInt64) -> Frame {
            var message = Message.c2cText(from: "alice", to: "bob", "m\(seq)", clientMsgID: "a-\(seq)")
            message.seq = seq
            var frame = Frame(message)
            frame.streamPosition = position
            return frame
        }
        func item(_ position: UInt64, seq: UInt64) -> StreamFrame {
            StreamFrame.with {
                $0.position = position
                $0.frame = frame(position, seq: seq).serializedBytes()
            }
        }
        func page(
            _ items: [StreamFrame],
            more: Bool,
            next: UInt64,
            head: UInt64,
            truncated: Bool = false
        )
            -> StreamSyncResponse
        {
            StreamSyncResponse.with {
                $0.frames = items
                $0.hasMore = more
                $0.nextAfterPosition = next
                $0.headPosition = head
                $0.truncated = truncated
            }
        }
        var tracker = ResumeTracker(user: "bob")
        let first = tracker.streamLoggedIn(
            LoginResult.with {
                $0.resumePosition = 10; $0.streamPosition = 16
            },
            limit: 2
        )
        #expect(first.afterPosition == 10 && first.limit == 2 && tracker.isCatchingUp)
        // A page that repeats a frame the device has (10) and skips one it sent itself (13).
        let one = tracker.streamSynced(
            page([item(10, seq: 1), item(11, seq: 2), item(12, seq: 3)], more: true, next: 13, head: 16),
            limit: 2
        )
        #expect(
            one.frames.map(\.streamPosition) == [11, 12] && one.next?.afterPosition == 13
                && tracker.streamPosition == 13
        )
        let two = tracker.streamSynced(page([item(14, seq: 4), item(15, seq: 5)], more: false, next: 16, head: 16))
        #expect(two.frames.map(\.streamPosition) == [14, 15] && two.next == nil && !tracker.isCatchingUp)
        #expect(tracker.streamPosition == 16 && tracker.streamAck.position == 16)
        // Live: a frame at or below the position is a duplicate; a frame with no position passes.
        let duplicates = [tracker.accept(frame(15, seq: 5)), tracker.accept(frame(16, seq: 6))]
        #expect(duplicates == [false, false])
        let next = tracker.accept(frame(17, seq: 7))
        #expect(next && tracker.streamPosition == 17)
        var typing = Frame(
            .typing(
                TypingEvent.with {
                    $0.conversation = .oneToOne("bob"); $0.state = .started
                }
            )
        )
        typing.streamPosition = 0
        let unkept = tracker.accept(typing)
        #expect(unkept && tracker.streamPosition == 17)
        // Messages from the stream count as delivered for a later sync by seq.
        #expect(tracker.lastSeen.map(\.seq) == [7] && tracker.lastSeen.first?.conversation == .oneToOne("alice"))
        #expect(!tracker.missedFrames)
        // A device that has its own position keeps it; a truncated answer is noted.
        let resumed = tracker.streamLoggedIn(LoginResult.with { $0.resumePosition = 3 })
        #expect(resumed.afterPosition == 17)
        _ = tracker.streamSynced(page([item(20, seq: 8)], more: false, next: 20, head: 20, truncated: true))
        #expect(tracker.missedFrames && tracker.streamPosition == 20)
        // A relay whose stream is behind the device lost its store: the device reads it from the start.
        var restarted = ResumeTracker(user: "bob")
        _ = restarted.streamSynced(page([item(1, seq: 1)], more: false, next: 1, head: 1))
        _ = restarted.streamLoggedIn(LoginResult())
        let behind = restarted.streamSynced(page([], more: false, next: 0, head: 0))
        #expect(behind.frames.isEmpty && behind.next?.afterPosition == 0 && restarted.missedFrames)
        // A stream sync answered busy (3013) is asked again from where the device is, still catching up.
        let busy = StreamSyncResponse.with { $0.errorCode = RelayProtocol.RequestError.busy }
        _ = restarted.streamLoggedIn(LoginResult())
        let again = restarted.streamSynced(busy)
        #expect(again.frames.isEmpty && again.next?.afterPosition == restarted.streamPosition && restarted.isCatchingUp)
    }

    /// The per-conversation resume never has more sync requests under way than
    /// ``ResumeTracker/maxSyncsInFlight`` (the relay answers a session's reads past its bound with
    /// busy, 3013), and a conversation answered busy is asked again once another is answered: its
    /// gap is filled and the live messages held back meanwhile follow it. Before, every
    /// conversation was asked at once, and a busy answer ended that conversation's sync: the held
    /// messages were handed on and the gap skipped for good (the next login's last_seen was past it).
    @Test func aSyncAnsweredBusyIsAskedAgainAndItsGapFilled() {
        let conversations = (1...6).map { Conversation.oneToOne("peer\($0)") }
        func message(_ conversation: Conversation, seq: UInt64) -> Message {
            var message = Message.c2cText(from: conversation.targetID, to: "bob", "\(seq)", clientMsgID: "\(seq)")
            message.seq = seq
            return message
        }
        var tracker = ResumeTracker(user: "bob")
        for conversation in conversations { _ = tracker.received(message(conversation, seq: 5)) }
        let first = tracker.loggedIn(
            LoginResult.with {
                $0.maxSeqs = conversations.map { conversation in
                    ConversationSeq.with {
                        $0.conversation = conversation; $0.seq = 20
                    }
                }
            }
        )
        #expect(first.map(\.conversation) == Array(conversations.prefix(ResumeTracker.maxSyncsInFlight)))
        #expect(first.allSatisfy { $0.fromSeq == 6 && $0.toSeq == 20 })
        // A live message of the first conversation waits for its sync; the relay answers it busy.
        #expect(tracker.received(message(conversations[0], seq: 21)).isEmpty)
        let busy = tracker.synced(
            SyncResponse.with {
                $0.conversation = conversations[0]; $0.errorCode = RelayProtocol.RequestError.busy
            }
        )
        #expect(busy.messages.isEmpty && busy.next.isEmpty, "three syncs are still under way")
        // The second is answered: the first is asked again, and the fifth for the first time.
        let second = tracker.synced(
            SyncResponse.with {
                $0.conversation = conversations[1]; $0.messages = (6...20).map { message(conversations[1], seq: $0) }
            }
        )
        #expect(second.messages.map(\.seq) == Array(6...20))
        #expect(second.next.map(\.conversation) == [conversations[0], conversations[4]])
        #expect(second.next.first?.fromSeq == 6 && second.next.first?.toSeq == 20)
        let filled = tracker.synced(
            SyncResponse.with {
                $0.conversation = conversations[0]; $0.messages = (6...20).map { message(conversations[0], seq: $0) }
            }
        )
        #expect(filled.messages.map(\.seq) == Array(6...21))
        #expect(filled.next.map(\.conversation) == [conversations[5]])
        #expect(tracker.lastSeen.first { $0.conversation == conversations[0] }?.seq == 21)
    }
}
#endif
