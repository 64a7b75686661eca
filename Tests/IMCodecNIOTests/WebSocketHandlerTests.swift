#if NIO
import IMCodec
import IMCodecNIO
import NIOCore
import NIOEmbedded
import NIOWebSocket
import Testing

/// `WebSocketFrameHandler` and `WebSocketDeadlineHandler` on an `EmbeddedChannel`.
@Suite("WebSocket frame handlers")
struct WebSocketHandlerTests {
    /// A client frame: masked, as RFC 6455 requires.
    private func clientFrame(_ opcode: WebSocketOpcode, _ bytes: [UInt8], fin: Bool = true) -> WebSocketFrame {
        let key: WebSocketMaskingKey = [0x11, 0x22, 0x33, 0x44]
        var data = ByteBuffer(bytes: bytes)
        data.webSocketMask(key)
        return WebSocketFrame(fin: fin, opcode: opcode, maskKey: key, data: data)
    }

    /// A connection that ends between the fragments of a message raises `truncated`, as a
    /// length-prefixed stream that ends inside a frame does; one that ends between messages ends
    /// cleanly. Before, both ended the inbound frames as if nothing were missing.
    @Test func aConnectionCutInsideAFragmentedMessageIsTruncated() throws {
        let body = Frame(Message.c2cText(from: "alice", to: "bob", "hi", clientMsgID: "c-1")).serializedBytes()
        let cut = EmbeddedChannel(handler: WebSocketFrameHandler())
        try cut.writeInbound(clientFrame(.binary, Array(body.prefix(3)), fin: false))
        cut.pipeline.fireChannelInactive()
        #expect(codecErrorCode { try cut.throwIfErrorCaught() } == .truncated)
        _ = try? cut.finish(acceptAlreadyClosed: true)
        let clean = EmbeddedChannel(handler: WebSocketFrameHandler())
        try clean.writeInbound(clientFrame(.binary, body))
        clean.pipeline.fireChannelInactive()
        try clean.throwIfErrorCaught()
        #expect(try clean.readInbound(as: InboundFrame.self) != nil)
        _ = try? clean.finish(acceptAlreadyClosed: true)
    }

    @Test func eachBinaryMessageIsOneInboundFrameWithALengthPrefixedRecord() throws {
        let channel = EmbeddedChannel(handler: WebSocketFrameHandler())
        let frame = Frame(Message.c2cText(from: "alice", to: "bob", "hi", clientMsgID: "c-1"))
        let body = frame.serializedBytes()
        try channel.writeInbound(clientFrame(.binary, body))
        let inbound = try #require(try channel.readInbound(as: InboundFrame.self))
        #expect(inbound.payloadKind == .message)
        #expect(inbound.senderID == "alice" && inbound.targetID == "bob" && inbound.clientMsgID == "c-1")
        #expect(Array(inbound.body.readableBytesView) == body)
        // The record is what a length-prefixed peer reads.
        var record = inbound.record
        #expect(try record.readFrame() == frame)
        #expect(record.readableBytes == 0)
        // Fragments are joined.
        try channel.writeInbound(clientFrame(.binary, Array(body.prefix(3)), fin: false))
        #expect(try channel.readInbound(as: InboundFrame.self) == nil)
        try channel.writeInbound(clientFrame(.continuation, Array(body.dropFirst(3))))
        #expect(try channel.readInbound(as: InboundFrame.self)?.body == inbound.body)
        #expect(try channel.finish().isClean)
    }

    @Test func eachOutboundRecordIsOneBinaryMessage() throws {
        let channel = EmbeddedChannel(handler: WebSocketFrameHandler())
        let frames = [SampleFrames.notice, Frame(Message.c2cText(from: "a", to: "b", "x"))]
        var buffer = ByteBuffer()
        for frame in frames { buffer.writeFrame(frame) }
        try channel.writeOutbound(buffer)
        for frame in frames {
            let out = try #require(try channel.readOutbound(as: WebSocketFrame.self))
            #expect(out.opcode == .binary && out.fin && out.maskKey == nil)
            #expect(try Frame(serializedBytes: Array(out.data.readableBytesView)) == frame)
        }
        #expect(try channel.readOutbound(as: WebSocketFrame.self) == nil)
        // A buffer that ends inside a record is refused, and nothing is written.
        var cut = ByteBuffer()
        cut.writeFrame(frames[1])
        cut.moveWriterIndex(to: cut.writerIndex - 1)
        #expect(throws: IMCodecError.self) { try channel.writeOutbound(cut) }
        #expect(try channel.readOutbound(as: WebSocketFrame.self) == nil)
        _ = try channel.finish()
    }

    @Test func closingSendsTheRequestedCodeAndWaitsForThePeer() throws {
        let channel = EmbeddedChannel(handler: WebSocketFrameHandler())
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        // A reason longer than a close frame holds is cut on a character boundary.
        let reason = String(repeating: "é", count: 100)
        channel.pipeline.triggerUserOutboundEvent(
            WebSocketFrameHandler.CloseRequest(code: .policyViolation, reason: reason),
            promise: nil
        )
        let closed = channel.close()
        let close = try #require(try channel.readOutbound(as: WebSocketFrame.self))
        #expect(close.opcode == .connectionClose)
        var data = close.data
        let code = data.readInteger(as: UInt16.self)
        #expect(code == 1008)
        let text = String(decoding: data.readableBytesView, as: UTF8.self)
        #expect(text.utf8.count <= 123 && text.utf8.count >= 121 && reason.hasPrefix(text))
        // Nothing is written after the close frame.
        #expect(throws: ChannelError.outputClosed) { try channel.writeOutbound(ByteBuffer(bytes: [0])) }
        // The peer's answer completes the handshake.
        #expect(channel.isActive)
        try channel.writeInbound(clientFrame(.connectionClose, [0x03, 0xF0]))
        #expect(!channel.isActive)
        try closed.wait()
        _ = try channel.finish(acceptAlreadyClosed: true)
    }

    @Test func thePeersCloseIsEchoedAndErrorsChooseTheCloseCode() throws {
        let channel = EmbeddedChannel(handler: WebSocketFrameHandler())
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        try channel.writeInbound(clientFrame(.connectionClose, [0x03, 0xE9]))  // 1001 going away
        let echo = try #require(try channel.readOutbound(as: WebSocketFrame.self))
        #expect(echo.opcode == .connectionClose && echo.data.getInteger(at: echo.data.readerIndex) == UInt16(1001))
        #expect(!channel.isActive)
        _ = try channel.finish(acceptAlreadyClosed: true)

        // A frame that does not decode: the error goes down the pipeline, and the close says 1007.
        let second = EmbeddedChannel(handler: WebSocketFrameHandler())
        try second.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        #expect(throws: IMCodecError.self) { try second.writeInbound(clientFrame(.binary, [0x00, 0x01])) }
        // Later input is dropped, not decoded again.
        try second.writeInbound(clientFrame(.binary, [0x00, 0x01]))
        second.close(promise: nil)
        let close = try #require(try second.readOutbound(as: WebSocketFrame.self))
        #expect(close.data.getInteger(at: close.data.readerIndex) == UInt16(1007))
        // No answer from the peer: the close timeout ends the connection.
        second.embeddedEventLoop.advanceTime(by: .seconds(5))
        #expect(!second.isActive)
        _ = try second.finish(acceptAlreadyClosed: true)
        // A text message is a WebSocketFrameError.
        let third = EmbeddedChannel(handler: WebSocketFrameHandler())
        #expect(throws: WebSocketFrameError.self) { try third.writeInbound(clientFrame(.text, Array("hi".utf8))) }
        _ = try third.finish(acceptAlreadyClosed: true)
    }

    @Test func theDeadlineFollowsFramesAndFragments() throws {
        let loop = EmbeddedEventLoop()
        let handler = WebSocketDeadlineHandler(maxMessageWait: .seconds(5))
        let channel = EmbeddedChannel(handler: handler, loop: loop)
        // As a channel with autoRead does: the next read() right after each batch of reads.
        func feed(_ bytes: ByteBuffer) throws {
            try channel.writeInbound(bytes)
            channel.read()
        }
        func bytes(_ opcode: UInt8, _ payload: Int, fin: Bool = true) -> [UInt8] {
            webSocketFrameBytes(opcode: opcode, payload: [UInt8](repeating: 7, count: payload), fin: fin)
        }
        // Whole messages (a 16-bit and a 64-bit length among them) leave nothing incomplete.
        for frame in [bytes(2, 10), bytes(2, 300), bytes(2, 70_000), bytes(9, 3)] {
            try feed(ByteBuffer(bytes: frame))
            #expect(!handler.isInsideMessage)
        }
        // Half a frame, then its rest.
        let frame = bytes(2, 300)
        try feed(ByteBuffer(bytes: frame.prefix(150)))
        #expect(handler.isInsideMessage)
        try feed(ByteBuffer(bytes: frame.dropFirst(150)))
        #expect(!handler.isInsideMessage)
        // A fragmented message stays incomplete across a ping, until its last fragment.
        try feed(ByteBuffer(bytes: bytes(2, 4, fin: false)))
        try feed(ByteBuffer(bytes: bytes(9, 1)))
        #expect(handler.isInsideMessage)
        loop.advanceTime(by: .seconds(4))
        try feed(ByteBuffer(bytes: bytes(0, 4)))
        #expect(!handler.isInsideMessage)
        loop.advanceTime(by: .seconds(10))
        // Left incomplete past the wait: frameTimeout; a server that starts reading again
        // (ReadsResumed) gives it its whole wait first.
        try feed(ByteBuffer(bytes: bytes(2, 4, fin: false)))
        loop.advanceTime(by: .seconds(4))
        channel.pipeline.fireUserInboundEventTriggered(ReadsResumed())
        loop.advanceTime(by: .seconds(4))
        try channel.throwIfErrorCaught()
        loop.advanceTime(by: .seconds(1))
        #expect(throws: IMCodecError(code: .frameTimeout, reason: "")) { try channel.throwIfErrorCaught() }
        while try channel.readInbound(as: ByteBuffer.self) != nil {}
        _ = try channel.finish()
    }

    /// A message left incomplete while the application holds back the channel's next read() (as
    /// NIOAsyncChannel does while its consumer is behind): when the wait passes with no read()
    /// since the last batch, the handler issues one read() itself and waits again; a read that
    /// brings nothing within a whole wait makes the peer late, and a hold that goes on after it is
    /// not read for again (as FrameCodecTests' frame test; before, the handler waited for the
    /// application's read() however long).
    @Test(arguments: [false, true])
    func aHeldMessageIsReadForOnce(theReadBringsMore: Bool) throws {
        let loop = EmbeddedEventLoop()
        let counter = ReadCounter()
        let channel = EmbeddedChannel(loop: loop)
        try channel.pipeline.syncOperations.addHandler(counter)
        try channel.pipeline.syncOperations.addHandler(WebSocketDeadlineHandler(maxMessageWait: .seconds(5)))
        let frame = webSocketFrameBytes(opcode: 2, payload: [UInt8](repeating: 7, count: 300), fin: true)
        try channel.writeInbound(ByteBuffer(bytes: frame.prefix(100)))  // no read() after it
        loop.advanceTime(by: .seconds(5))
        try channel.throwIfErrorCaught()
        #expect(counter.reads == 1)
        if theReadBringsMore {
            try channel.writeInbound(ByteBuffer(bytes: frame.dropFirst(100).prefix(100)))
            loop.advanceTime(by: .seconds(60))
            try channel.throwIfErrorCaught()
            #expect(counter.reads == 1)
            channel.read()
            loop.advanceTime(by: .seconds(4))
            try channel.throwIfErrorCaught()
            loop.advanceTime(by: .seconds(1))
        } else {
            loop.advanceTime(by: .seconds(5))
        }
        #expect(throws: IMCodecError(code: .frameTimeout, reason: "")) { try channel.throwIfErrorCaught() }
        while try channel.readInbound(as: ByteBuffer.self) != nil {}
        _ = try channel.finish()
    }
}
#endif
