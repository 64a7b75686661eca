#if Tools
import IMCodec
import IMCodecTestSupport
import IMCodecNIO
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Testing

@testable import imcodec_relay

/// Load and fault tests against a real relay on 127.0.0.1 (ephemeral ports, bounded counts and time).
/// Each client sends its one-to-one peer as fast as acks come back: the relay runs without
/// `--peer-rate` (`peerRate` 0), as the crash tests' children do.
@Suite("Relay load and faults", .serialized, .timeLimit(.minutes(10)))
struct RelayLoadTests {
    @Test func fiftyClientsTimesTwoThousandMessagesArriveExactlyOnceInOrder() async throws {
        // 50 x 2,000 (50 x 200 under ThreadSanitizer, see `underThreadSanitizer`).
        let plan = LoadPlan(messages: underThreadSanitizer ? 200 : 2_000)
        let (result, stats) = try await withClientGroup { group in
            try await withRelay({
                $0.groups = plan.groups; $0.peerRate = 0
            }) { server in
                let result = try await runLoad(plan, server: server, group: group)
                return (result, try await server.stats().get())
            }
        }
        let latency = result.deliveryLatencyMs
        let ack = result.ackLatencyMs
        print(
            """
            relay load: \(plan.clients) clients x \(plan.messages) messages (every \(plan.groupEvery)th to a group \
            of \(plan.clients / plan.groupCount), window \(plan.window)): \(result.messages) messages, \
            \(result.deliveries) deliveries in \(fixed2(result.seconds)) s = \
            \(Int(result.messagesPerSecond)) messages/s, \(Int(result.deliveriesPerSecond)) deliveries/s; \
            delivery latency p50 \(fixed2(latency.p50)) ms, p99 \(fixed2(latency.p99)) ms, \
            max \(fixed2(latency.max)) ms; ack latency p50 \(fixed2(ack.p50)) ms, \
            p99 \(fixed2(ack.p99)) ms; relay peak buffered in \(stats.peakInboundBufferedBytes) B, \
            out \(stats.peakOutboundBufferedBytes) B
            """
        )
        let problems = result.problems(plan)
        #expect(problems.isEmpty, "\(problems.prefix(10))")
        #expect(result.deliveries == (0..<plan.clients).reduce(0) { $0 + plan.expectedDeliveries(for: $1) })
        #expect(stats.messagesRouted == plan.clients * plan.messages)
        #expect(stats.acksSent == plan.clients * plan.messages)
        #expect(stats.closedByError.isEmpty, "\(stats.closedByError)")
    }

    /// Resume under load: several clients close their connection abruptly mid-stream (some more than
    /// once, one while its previous sync may still be under way), reconnect with last_seen, sync each
    /// gap in pages, resend what was not acknowledged, and end with every message exactly once and in
    /// order, checked per conversation by seq and by content; the relay stored each message once.
    @Test func clientsThatDropMidStreamResumeWithEveryMessageExactlyOnceInOrder() async throws {
        var plan = LoadPlan(prefix: "r", clients: 10, messages: 500, groupEvery: 10, groupCount: 2, window: 16)
        // Each client receives 450 one-to-one and 4 × 50 group messages.
        plan.drops = [1: [100, 400], 4: [250], 7: [30, 35, 300, 600], 9: [500]]
        plan.syncLimit = 40
        let (result, stats) = try await withClientGroup(threads: 2) { group in
            try await withRelay({
                $0.groups = plan.groups; $0.peerRate = 0
            }) { server in
                let result = try await runLoad(plan, server: server, group: group)
                return (result, try await server.stats().get())
            }
        }
        let reconnects = result.clients.reduce(0) { $0 + $1.reconnects }
        let synced = result.clients.reduce(0) { $0 + $1.synced }
        print(
            "relay resume: \(plan.clients) clients x \(plan.messages) messages, \(reconnects) reconnects, "
                + "\(synced) messages by sync, \(result.deliveries) deliveries in \(fixed2(result.seconds)) s; "
                + "closed by error \(stats.closedByError)"
        )
        let problems = result.problems(plan)
        #expect(problems.isEmpty, "\(problems.prefix(10))")
        #expect(reconnects == plan.drops.values.reduce(0) { $0 + $1.count })
        #expect(result.deliveries == (0..<plan.clients).reduce(0) { $0 + plan.expectedDeliveries(for: $1) })
        // Every message was stored and routed once, although unacknowledged ones were sent again.
        #expect(stats.messagesRouted == plan.clients * plan.messages)
        #expect(stats.acksSent >= plan.clients * plan.messages)
        // A client that closes abruptly may leave a frame half written (truncated), or unread bytes
        // that make its socket reset the connection (io); nothing else.
        #expect(Set(stats.closedByError.keys).isSubset(of: ["truncated", "io"]), "\(stats.closedByError)")
    }

    @Test func hostileClientsAreClosedWhileEveryoneElseLosesNothing() async throws {
        let maxFrameSize = 64 << 10
        let maxOutboundBytes = 512 << 10
        var plan = LoadPlan(prefix: "ok", clients: 6, messages: 1_000, groupEvery: 5, groupCount: 2, window: 8)
        // ok2 drops its connection twice while the hostile clients are being closed, and resumes.
        plan.drops = [2: [150, 700]]
        try await withClientGroup(threads: 1) { group in
            try await withRelay({
                $0.groups = plan.groups
                $0.peerRate = 0
                $0.codec = FrameCodecOptions(maxFrameSize: maxFrameSize)
                $0.maxFrameWait = .seconds(1)
                $0.loginTimeout = .seconds(5)
                $0.maxOutboundBytes = maxOutboundBytes
            }) { server in
                let outcomes = FaultOutcomes()
                let result = try await runLoad(plan, server: server, group: group) {
                    try await runFaults(server: server, group: group, outcomes: outcomes)
                }
                let stats = try await server.stats().get()
                print(
                    "relay faults: \(outcomes.lines.joined(separator: "; ")); closed by error \(stats.closedByError); "
                        + "peak buffered in \(stats.peakInboundBufferedBytes) B (cap \(maxFrameSize) + one read), "
                        + "out \(stats.peakOutboundBufferedBytes) B (cap \(maxOutboundBytes) + one frame); "
                        + "good traffic \(result.messages) messages, \(result.deliveries) deliveries"
                )

                let problems = result.problems(plan)
                #expect(problems.isEmpty, "\(problems.prefix(10))")
                for (name, expected) in [
                    ("garbage", "malformed"), ("oversize", "tooLarge"), ("depthBomb", "tooDeep"),
                    ("stall", "frameTimeout"), ("noLogin", "notLoggedIn"),
                ] {
                    #expect(outcomes.code(name) == expected, "\(name): \(outcomes.lines)")
                }
                #expect(outcomes.code("garbageFlood") != nil, "\(outcomes.lines)")
                #expect(outcomes.code("halfFrameThenDisconnect") == "closed", "\(outcomes.lines)")
                #expect(outcomes.code("slowConsumer") == "closed", "\(outcomes.lines)")
                // The half frame is reported when its connection ends (random garbage may add more).
                #expect(
                    await eventually(5) {
                        (try? server.stats().wait())?.closedByError["truncated"] ?? 0 >= 1
                    }
                )
                #expect(result.clients.first { $0.index == 2 }?.reconnects == 2)
                #expect(stats.closedByError["slowConsumer"] == 1)
                #expect(stats.closedByError["tooLarge"] == 1)
                #expect(stats.closedByError["tooDeep"] == 1)
                #expect(stats.closedByError["frameTimeout"] == 1)
                // Memory stays bounded: a connection buffers at most one frame plus one read (64 KiB),
                // and at most the outbound cap plus the frame that crossed it.
                #expect(stats.peakInboundBufferedBytes <= maxFrameSize + 5 + 65_536)
                #expect(stats.peakOutboundBufferedBytes <= maxOutboundBytes + maxFrameSize)
            }
        }
    }
}

/// `value` with two decimals.
func fixed2(_ value: Double) -> String {
    let hundredths = Int((value * 100).rounded())
    let fraction = abs(hundredths % 100)
    return "\(hundredths / 100).\(fraction < 10 ? "0" : "")\(fraction)"
}

/// What happened to each hostile client: the error code the relay sent, or "closed".
final class FaultOutcomes: Sendable {
    private let box = NIOLockedValueBox<[(String, String)]>([])

    func record(_ name: String, _ code: String?) { box.withLockedValue { $0.append((name, code ?? "none")) } }
    func code(_ name: String) -> String? { box.withLockedValue { list in list.first { $0.0 == name }?.1 } }
    var lines: [String] { box.withLockedValue { $0.map { "\($0.0) → \($0.1)" } } }
}

/// Runs every hostile client concurrently; each records how the relay answered it.
@Sendable
func runFaults(server: RelayServer, group: any EventLoopGroup, outcomes: FaultOutcomes) async throws {
    /// Logs in as `user`, writes `bytes`, and waits for the relay to close the connection.
    @Sendable func hostile(_ name: String, user: String?, _ bytes: ByteBuffer) async throws {
        let client = try await RawClient.connect(to: server, group: group)
        if let user { try await client.write(frame: try await TestAuth.login(user)) }
        try await client.write(bytes)
        let closed = await client.closedByPeer(within: 10)
        outcomes.record(name, closed ? client.collector.errorCode : "still open")
        try? await client.channel.close()
    }

    try await withThrowingTaskGroup(of: Void.self) { tasks in
        tasks.addTask {
            var bytes = ByteBuffer()
            bytes.writeBytes([0x04, 0x07, 0xFF, 0xFF, 0xFF])  // a 4-byte body with wire type 7
            try await hostile("garbage", user: "bad1", bytes)
        }
        tasks.addTask {
            var random = SeededGenerator(seed: 7)
            var bytes = ByteBuffer()
            for _ in 0..<(256 << 10) / 8 { bytes.writeInteger(random.next()) }
            try await hostile("garbageFlood", user: "bad2", bytes)
        }
        tasks.addTask {
            try await hostile("oversize", user: "bad3", ByteBuffer(bytes: Wire.varint(100_000_000)))
        }
        tasks.addTask {
            try await hostile("depthBomb", user: "bad4", delimited([SampleFrames.depthBomb(layers: 110)]))
        }
        tasks.addTask {
            var bytes = ByteBuffer(bytes: Wire.varint(200))
            bytes.writeRepeatingByte(0x20, count: 10)
            try await hostile("stall", user: "bad5", bytes)
        }
        tasks.addTask {
            try await hostile("noLogin", user: nil, delimited([Frame(Message.c2cText(from: "x", to: "ok0", "hi"))]))
        }
        tasks.addTask {
            let client = try await RawClient.connect(to: server, group: group)
            try await client.write(frame: try await TestAuth.login("bad6"))
            // Wait for the login answer, so that the close below is a clean end of stream.
            _ = await eventually { !client.collector.frames.isEmpty }
            let whole = delimited([Frame(Message.c2cText(from: "bad6", to: "ok0", String(repeating: "x", count: 500)))])
            try await client.write(whole.getSlice(at: 0, length: whole.readableBytes / 2)!)
            try await client.channel.close()
            outcomes.record("halfFrameThenDisconnect", "closed")
        }
        tasks.addTask {
            // A receiver that stops reading, and a sender that floods it: the relay drops the receiver
            // once its queue passes the outbound cap; the sender keeps its connection and gets acks.
            let sloth = try await RawClient.connect(to: server, group: group, receiveBuffer: 4096, autoRead: false)
            try await sloth.write(frame: try await TestAuth.login("sloth"))
            let flooder = try await TestClient.connect(to: server, as: "flooder", group: group)
            try await Task.sleep(nanoseconds: 200_000_000)  // let the sloth's login land first
            let text = String(repeating: "z", count: 4000)
            let count = 3000
            for k in 0..<count {
                let frame = Frame(Message.c2cText(from: "flooder", to: "sloth", text, clientMsgID: "f-\(k)"))
                if k % 100 == 99 {
                    try await flooder.channel.writeAndFlush(frame).get()
                } else {
                    flooder.channel.write(frame, promise: nil)
                }
            }
            let dropped = await eventually(20) { (try? server.stats().wait())?.closedByError["slowConsumer"] == 1 }
            // The sloth reads again: it drains what the relay queued and then sees the close.
            try await sloth.channel.setOption(.autoRead, value: true).get()
            let closed = await sloth.closedByPeer(within: 20) && dropped
            let acked = await eventually(20) { flooder.collector.acks.count == count }
            outcomes.record(
                "slowConsumer",
                closed && acked && flooder.channel.isActive ? "closed" : "closed \(closed), acks \(acked)"
            )
            try? await sloth.channel.close()
        }
        try await tasks.waitForAll()
    }
}
#endif
