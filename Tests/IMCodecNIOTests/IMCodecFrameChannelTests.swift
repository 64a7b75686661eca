#if NIO
import IMCodec
import IMCodecNIO
import NIOConcurrencyHelpers
import NIOCore
import NIOEmbedded
import NIOPosix
import NIOWebSocket
import Testing

/// The async API (`IMCodecFrameChannel`, `NIOAsyncChannel<InboundFrame, Frame>`): frames both ways
/// over loopback, backpressure, cancellation, errors through the inbound sequence, WebSocket.
@Suite("IMCodecFrameChannel: the async frame API")
struct IMCodecFrameChannelTests {
    /// Binds a frame server on loopback with `initializer` (default: `framing`).
    static func bind(
        group: any EventLoopGroup,
        receiveBuffer: Int? = nil,
        _ initializer: @escaping @Sendable (any Channel) -> EventLoopFuture<IMCodecFrameChannel> = {
            IMCodecFrameChannel.framing($0)
        }
    ) async throws -> NIOAsyncChannel<IMCodecFrameChannel, Never> {
        var bootstrap = ServerBootstrap(group: group).serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
        if let receiveBuffer {
            bootstrap = bootstrap.childChannelOption(.socketOption(.so_rcvbuf), value: SocketOptionValue(receiveBuffer))
        }
        return try await bootstrap.bind(host: "127.0.0.1", port: 0, childChannelInitializer: initializer)
    }

    /// Connects a frame client to `server`.
    static func connect(
        to server: NIOAsyncChannel<IMCodecFrameChannel, Never>,
        group: any EventLoopGroup,
        sendBuffer: Int? = nil
    ) async throws -> IMCodecFrameChannel {
        var bootstrap = ClientBootstrap(group: group).channelOption(.socketOption(.tcp_nodelay), value: 1)
        if let sendBuffer {
            bootstrap = bootstrap.channelOption(.socketOption(.so_sndbuf), value: SocketOptionValue(sendBuffer))
        }
        return try await bootstrap.connect(host: "127.0.0.1", port: server.channel.localAddress!.port!) {
            IMCodecFrameChannel.framing($0)
        }
    }

    static func text(_ k: Int, padding: Int = 0) -> Frame {
        Frame(
            Message.c2cText(
                from: "alice",
                to: "bob",
                "m\(k)" + String(repeating: ".", count: padding),
                clientMsgID: "m-\(k)"
            )
        )
    }

    @Test("a server and a client exchange frames both ways, in order")
    func serverAndClientExchangeFrames() async throws {
        try await withClientGroup(threads: 2) { group in
            let server = try await Self.bind(group: group)
            let client = try await Self.connect(to: server, group: group)
            try await server.executeThenClose { clients in
                var accepted = clients.makeAsyncIterator()
                let connection = try #require(try await accepted.next())
                // The server answers each frame with a send ack naming its client message id.
                let serving = Task {
                    try await connection.withFrames { inbound, outbound in
                        for try await frame in inbound {
                            let ack = SendAck.with { $0.clientMsgID = frame.clientMsgID }
                            try await outbound.write(Frame(.sendAck(ack)))
                        }
                    }
                }
                let acked = try await client.withFrames { inbound, outbound in
                    var acked: [String] = []
                    var answers = inbound.makeAsyncIterator()
                    for k in 1...20 {
                        try await outbound.write(Self.text(k))
                        let answer = try #require(try await answers.next())
                        #expect(answer.payloadKind == .sendAck)
                        if case .sendAck(let ack)? = try answer.decode().payload { acked.append(ack.clientMsgID) }
                    }
                    return acked
                }
                #expect(acked == (1...20).map { "m-\($0)" })
                // The client closed: the server's inbound sequence ends without an error.
                try await serving.value
            }
        }
    }

    @Test("a slow consumer stops the channel reading: the sender's writer suspends, nothing is lost")
    func slowConsumerStopsReads() async throws {
        let total = 256
        let frameSize = 16 << 10
        try await withClientGroup(threads: 2) { group in
            // The server's decoder counts the frames it has read off the socket.
            let counters = NIOLockedValueBox<NIOLoopBound<FrameDecoderStats>?>(nil)
            let server = try await Self.bind(group: group, receiveBuffer: 64 << 10) { channel in
                channel.eventLoop.makeCompletedFuture {
                    let stats = FrameDecoderStats()
                    counters.withLockedValue { $0 = NIOLoopBound(stats, eventLoop: channel.eventLoop) }
                    try channel.pipeline.syncOperations.addIMCodecFrameHandlers(stats: stats)
                    return try IMCodecFrameChannel(
                        wrappingChannelSynchronously: channel,
                        configuration: .init(backPressureStrategy: .init(lowWatermark: 1, highWatermark: 2))
                    )
                }
            }
            let client = try await Self.connect(to: server, group: group, sendBuffer: 64 << 10)
            let written = NIOLockedValueBox(0)
            try await server.executeThenClose { clients in
                var accepted = clients.makeAsyncIterator()
                let connection = try #require(try await accepted.next())
                let sending = Task {
                    try await client.withFrames { inbound, outbound in
                        for k in 0..<total {
                            try await outbound.write(Self.text(k, padding: frameSize))
                            written.withLockedValue { $0 += 1 }
                        }
                        // Closing now would drop the writes still queued: wait for the server to close.
                        for try await _ in inbound {}
                    }
                }
                try await connection.withFrames { inbound, _ in
                    // Nobody reads inbound yet: the client's writes back up until its channel is not writable.
                    #expect(await eventually { !client.channel.isWritable })
                    let stats = try #require(counters.withLockedValue { $0 })
                    let decoded = try await connection.channel.eventLoop.submit { stats.value.framesDecoded }.get()
                    // The high watermark (2) plus what one read held: the channel stopped reading.
                    #expect(decoded <= 16, "the server read \(decoded) frames with nobody consuming them")
                    #expect(written.withLockedValue { $0 } < total)
                    // Now consume: every frame arrives, in order, and the writer finishes.
                    var k = 0
                    for try await frame in inbound {
                        #expect(frame.clientMsgID == "m-\(k)")
                        k += 1
                        if k == total { break }
                    }
                    #expect(k == total)
                }
                try await sending.value
                #expect(written.withLockedValue { $0 } == total)
            }
        }
    }

    @Test("cancelling the task that serves a connection closes it, even while that task awaits something else")
    func cancellationClosesTheConnection() async throws {
        try await withClientGroup(threads: 2) { group in
            let server = try await Self.bind(group: group)
            let client = try await Self.connect(to: server, group: group)
            let release = group.next().makePromise(of: Void.self)
            try await server.executeThenClose { clients in
                var accepted = clients.makeAsyncIterator()
                let connection = try #require(try await accepted.next())
                let serving = Task {
                    try await connection.withFrames { _, outbound in
                        try await outbound.write(Self.text(1))
                        // Waits for something that does not notice cancellation.
                        try await release.futureResult.get()
                    }
                }
                try await client.withFrames { inbound, _ in
                    var frames = inbound.makeAsyncIterator()
                    let first = try await frames.next()
                    #expect(first?.clientMsgID == "m-1")  // the connection is served
                    serving.cancel()
                    // The peer sees the end of the stream while the serving task still waits.
                    #expect(await eventually { !client.channel.isActive })
                    let end = try await frames.next()
                    #expect(end == nil)
                }
                release.succeed()
                _ = await serving.result
                #expect(!connection.channel.isActive)
            }
        }
    }

    @Test("bad input ends the inbound sequence with the decoder's IMCodecError, after the good frames before it")
    func badInputThrowsTheTypedError() async throws {
        try await withClientGroup(threads: 2) { group in
            let server = try await Self.bind(group: group)
            let raw = try await ClientBootstrap(group: group)
                .connect(host: "127.0.0.1", port: server.channel.localAddress!.port!).get()
            var bytes = delimited([Self.text(1)])
            bytes.writeBytes([0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01])  // not a length prefix below 2^32
            try await raw.writeAndFlush(bytes).get()
            try await server.executeThenClose { clients in
                var accepted = clients.makeAsyncIterator()
                let connection = try #require(try await accepted.next())
                var received: [String] = []
                let error = await #expect(throws: IMCodecError.self) {
                    try await connection.withFrames { inbound, _ in
                        for try await frame in inbound { received.append(frame.clientMsgID) }
                    }
                }
                #expect(error?.code == .malformed)
                #expect(received == ["m-1"])
                // withFrames closed the connection on the way out.
                #expect(await eventually { !raw.isActive })
            }
        }
    }

    @Test("the WebSocket handlers give the same channel: InboundFrame in, Frame out as one binary message")
    func webSocketFrameChannelReadsAndWrites() async throws {
        let channel = NIOAsyncTestingChannel()
        let frames = try await channel.eventLoop.submit { try webSocketFrameChannel(channel) }.get()
        let sent = Self.text(7)
        let body = ByteBuffer(bytes: sent.serializedBytes())
        var masked = body
        let mask = try #require(WebSocketMaskingKey([1, 2, 3, 4]))
        masked.webSocketMask(mask)
        try await channel.writeInbound(WebSocketFrame(fin: true, opcode: .binary, maskKey: mask, data: masked))
        try await frames.executeThenClose { inbound, outbound in
            var iterator = inbound.makeAsyncIterator()
            let received = try #require(try await iterator.next())
            #expect(received.body == body)
            #expect(try received.decode() == sent)
            try await outbound.write(sent)
            let message = try await channel.waitForOutboundWrite(as: WebSocketFrame.self)
            #expect(message.opcode == .binary && message.fin)
            #expect(message.data == body)
            // The peer's close frame: the handler answers it and closes; the inbound sequence ends.
            var code = ByteBuffer()
            code.writeInteger(UInt16(1000))
            code.webSocketMask(mask)
            try await channel.writeInbound(
                WebSocketFrame(fin: true, opcode: .connectionClose, maskKey: mask, data: code)
            )
            let answer = try await channel.waitForOutboundWrite(as: WebSocketFrame.self)
            #expect(answer.opcode == .connectionClose)
            #expect(try await iterator.next() == nil)
        }
    }
}
#endif
