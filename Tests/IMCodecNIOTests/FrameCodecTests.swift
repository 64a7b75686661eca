#if NIO
import IMCodec
import IMCodecTestSupport
import IMCodecNIO
import NIOCore
import NIOEmbedded
import NIOPosix
import NIOTestUtils
import Testing

@Suite("Frame codec handlers")
struct FrameCodecTests {
    // MARK: ByteToMessageDecoderVerifier

    @Test func frameDecoderPassesTheVerifier() throws {
        // The verifier feeds the inputs byte by byte, all at once, and one message per buffer, in shuffled order.
        let pairs = SampleFrames.all.map { (delimited([$0]), [$0]) }
        try ByteToMessageDecoderVerifier.verifyDecoder(inputOutputPairs: pairs) { FrameDecoder() }
    }

    @Test func frameDecoderPassesTheVerifierWithSeveralFramesPerInput() throws {
        let frames = SampleFrames.all
        let pairs = [
            (delimited(Array(frames[0..<3])), Array(frames[0..<3])),
            (delimited(Array(frames[3...])), Array(frames[3...])),
        ]
        try ByteToMessageDecoderVerifier.verifyDecoder(inputOutputPairs: pairs) {
            FrameDecoder(options: FrameCodecOptions(maxFrameSize: 4096))
        }
    }

    @Test func inboundFrameDecoderPassesTheVerifier() throws {
        let pairs = try SampleFrames.all.map { frame throws -> (ByteBuffer, [InboundFrame]) in
            let record = delimited([frame])
            let body = frame.serializedBytes()
            let message: Message? = if case .message(let m)? = frame.payload { m } else { nil }
            let conversation: Conversation? =
                switch frame.payload {
                case .message(let m)?: m.conversation
                case .receipt(let r)?: r.message?.conversation
                case .recall(let r)?: r.message?.conversation
                default: nil
                }
            let expected = InboundFrame(
                record: record,
                prefixSize: record.readableBytes - body.count,
                requestID: frame.requestID,
                payloadKind: frame.payload?.kind,
                conversationType: conversation?.type ?? .unspecified,
                targetID: conversation?.targetID ?? "",
                channelID: conversation?.channelID ?? "",
                route: try WireDecoder().withFrameView(body) { $0.route },
                senderID: message?.senderID ?? "",
                clientMsgID: message?.clientMsgID ?? "",
                messageFlags: message?.messageFlags ?? [],
                targetReceivers: message?.targetReceivers ?? [],
                storagePolicy: message?.storagePolicy ?? .unspecified,
                atUserIDs: message?.at?.userIDs ?? [],
                atAll: message?.at?.atAll ?? false,
                serverAssignedFields: [],  // No sample sets one (ViewTests covers them).
                expireAfterS: message?.expireAfterS ?? 0,
                carriesPoll: message?.elements.contains { if case .poll? = $0.content { true } else { false } }
                    ?? false,
                isViewOnce: message?.viewOnce ?? false,
                priority: message?.priority ?? .unspecified,
                quotes: message.map { $0.quote != nil || $0.quoteSnapshot != nil } ?? false
            )
            return (record, [expected])
        }
        try ByteToMessageDecoderVerifier.verifyDecoder(inputOutputPairs: pairs) { InboundFrameDecoder() }
    }

    // MARK: Random splits

    @Test(arguments: 0..<40)
    func randomSplitsDecodeEveryFrameInOrder(seed: Int) throws {
        var random = SeededGenerator(seed: UInt64(seed))
        let frames = (0..<20).map { _ in SampleFrames.all.randomElement(using: &random)! }
        let stream = delimited(frames)
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addFrameCodec()
        var offset = 0
        while offset < stream.readableBytes {
            let length = min(Int.random(in: 1...40, using: &random), stream.readableBytes - offset)
            try channel.writeInbound(stream.getSlice(at: offset, length: length)!)
            offset += length
        }
        var decoded: [Frame] = []
        while let frame: Frame = try channel.readInbound() { decoded.append(frame) }
        #expect(decoded == frames)
        #expect(try channel.finish().isClean)
    }

    // MARK: Errors through EmbeddedChannel

    private func channel(maxFrameSize: Int = 1024, stats: FrameDecoderStats? = nil) throws -> EmbeddedChannel {
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addInboundFrameDecoder(
            options: FrameCodecOptions(maxFrameSize: maxFrameSize),
            stats: stats
        )
        return channel
    }

    @Test func aPrefixLongerThanFiveBytesIsMalformed() throws {
        let channel = try channel()
        var bytes = ByteBuffer()
        bytes.writeBytes([0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01])
        #expect(codecErrorCode { try channel.writeInbound(bytes) } == .malformed)
        _ = try? channel.finish()
    }

    @Test func anOversizeLengthIsRejectedBeforeTheBodyArrives() throws {
        let stats = FrameDecoderStats()
        let channel = try channel(maxFrameSize: 1024, stats: stats)
        // Only the prefix: the frame is refused on its announced length alone.
        #expect(codecErrorCode { try channel.writeInbound(ByteBuffer(bytes: Wire.varint(1025))) } == .tooLarge)
        #expect(stats.peakBufferedBytes <= 5)
        _ = try? channel.finish()
    }

    @Test func aLengthAtTheLimitIsAccepted() throws {
        var message = Message.c2cText(from: "a", to: "b", "")
        message.cloudCustomData = []
        var frame = Frame(message)
        let overhead = frame.serializedBytes().count
        message.elements = [.text(String(repeating: "x", count: 1024 - overhead - 3))]
        frame = Frame(message)
        let size = frame.serializedBytes().count
        let channel = try channel(maxFrameSize: size)
        try channel.writeInbound(delimited([frame]))
        let inbound: InboundFrame? = try channel.readInbound()
        #expect(try inbound?.decode() == frame)
        #expect(try channel.finish().isClean)
    }

    @Test func aDepthBombIsTooDeep() throws {
        let bomb = SampleFrames.depthBomb(layers: 110)  // 2 + 3 × 110 + 2 levels > maxDepth 320
        let channel = try channel(maxFrameSize: 1 << 20)
        #expect(codecErrorCode { try channel.writeInbound(delimited([bomb])) } == .tooDeep)
        _ = try? channel.finish()
    }

    @Test func aBodyThatIsNotProtobufIsMalformed() throws {
        let channel = try channel()
        var bytes = ByteBuffer(bytes: Wire.varint(3))
        bytes.writeBytes([0x07, 0xFF, 0xFF])  // wire type 7 does not exist
        #expect(codecErrorCode { try channel.writeInbound(bytes) } == .malformed)
        _ = try? channel.finish()
    }

    @Test func aStreamEndingInsideAFrameIsTruncated() throws {
        let channel = try channel()
        let whole = delimited([SampleFrames.c2c])
        try channel.writeInbound(whole.getSlice(at: 0, length: whole.readableBytes / 2)!)
        let nothing: InboundFrame? = try channel.readInbound()
        #expect(nothing == nil)
        #expect(codecErrorCode { _ = try channel.finish() } == .truncated)
    }

    @Test func statsTrackFramesAndBufferedBytes() throws {
        let stats = FrameDecoderStats()
        let channel = try channel(stats: stats)
        let stream = delimited([SampleFrames.c2c, SampleFrames.group])
        try channel.writeInbound(stream.getSlice(at: 0, length: stream.readableBytes - 3)!)
        #expect(stats.framesDecoded == 1)
        #expect(stats.bufferedBytes > 0)
        try channel.writeInbound(stream.getSlice(at: stream.readableBytes - 3, length: 3)!)
        #expect(stats.framesDecoded == 2)
        #expect(stats.bytesDecoded == stream.readableBytes)
        #expect(stats.bufferedBytes == 0)
        #expect(stats.peakBufferedBytes <= stream.readableBytes)
        while let _: InboundFrame = try channel.readInbound() {}
        #expect(try channel.finish().isClean)
    }

    @Test func aFrameWithItsOwnStorageNoLongerKeepsItsReadBuffer() throws {
        let channel = try channel(maxFrameSize: 64 << 10)
        // One read of 64 KiB: a small frame, then padding in a frame of its own.
        var read = ByteBufferAllocator().buffer(capacity: 64 << 10)
        read.writeImmutableBuffer(delimited([SampleFrames.c2c]))
        let padding = Frame(Message.c2cText(from: "a", to: "b", String(repeating: "x", count: 60_000)))
        read.writeImmutableBuffer(delimited([padding]))
        try channel.writeInbound(read)
        let frame: InboundFrame = try #require(try channel.readInbound())
        #expect(frame.record.storageCapacity >= 60_000)  // a slice of the read
        let owned = frame.ownStorage()
        #expect(owned == frame)
        #expect(owned.record.readableBytesView.elementsEqual(frame.record.readableBytesView))
        #expect(owned.record.storageCapacity < 1024, "\(owned.record.storageCapacity)")
        #expect(owned.payloadKind == frame.payloadKind && owned.route == frame.route)
        while let _: InboundFrame = try channel.readInbound() {}
        #expect(try channel.finish().isClean)
    }

    // MARK: Encoder and ByteBuffer helpers

    @Test func theEncoderWritesWhatTheDecoderReads() throws {
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addFrameCodec()
        for frame in SampleFrames.all { try channel.writeOutbound(frame) }
        var wire = ByteBuffer()
        while var chunk: ByteBuffer = try channel.readOutbound() { wire.writeBuffer(&chunk) }
        #expect(wire == delimited(SampleFrames.all))
        try channel.writeInbound(wire)
        for frame in SampleFrames.all { #expect(try channel.readInbound(as: Frame.self) == frame) }
        #expect(try channel.finish().isClean)
    }

    @Test func byteBufferHelpersReadWholeFramesOnly() throws {
        var buffer = delimited([SampleFrames.c2c, SampleFrames.notice])
        let total = buffer.readableBytes
        var partial = buffer.getSlice(at: 0, length: 4)!
        #expect(try partial.readFrame() == nil)
        #expect(partial.readableBytes == 4)
        #expect(try partial.readFrameBytes() == nil)

        #expect(try buffer.readFrame() == SampleFrames.c2c)
        let body = try buffer.readFrameBytes()
        #expect(body.map { Array($0.readableBytesView) } == SampleFrames.notice.serializedBytes())
        #expect(buffer.readableBytes == 0)

        var again = ByteBuffer()
        let written = again.writeFrame(SampleFrames.c2c) + again.writeFrameBytes(body!)
        #expect(written == total)
        #expect(again == delimited([SampleFrames.c2c, SampleFrames.notice]))
    }

    @Test func readFrameLeavesTheBufferUnchangedOnError() throws {
        var buffer = ByteBuffer(bytes: Wire.varint(2))
        buffer.writeBytes([0x07, 0x00])
        let before = buffer
        #expect(codecErrorCode { _ = try buffer.readFrame() } == .malformed)
        #expect(buffer == before)
        var oversize = ByteBuffer(bytes: Wire.varint(5000))
        #expect(codecErrorCode { _ = try oversize.readFrameBytes(maxFrameSize: 4096) } == .tooLarge)
    }

    @Test func lengthPrefixesAreVarints() {
        for (length, size) in [(0, 1), (127, 1), (128, 2), (16_383, 2), (16_384, 3), (1 << 21, 4), (1 << 28, 5)] {
            var buffer = ByteBuffer()
            #expect(buffer.writeLengthPrefix(length) == size)
            #expect(buffer == ByteBuffer(bytes: Wire.varint(UInt64(length))))
        }
    }

    // MARK: Frame deadline

    /// A frame left incomplete for 150 ms of a 200 ms wait is not late; 100 ms later it is. With
    /// `readsResume`, a server that stopped reading starts again at 150 ms and fires
    /// ``ReadsResumed``: the frame then gets its whole wait again (the rest may have waited in the
    /// socket), and is late 200 ms after that.
    @Test(arguments: [false, true])
    func aFrameThatStallsPastTheDeadlineRaisesFrameTimeout(readsResume: Bool) throws {
        let loop = EmbeddedEventLoop()
        let channel = EmbeddedChannel(loop: loop)
        try channel.pipeline.syncOperations.addHandler(FrameDeadlineHandler(maxFrameWait: .milliseconds(200)))
        try channel.pipeline.syncOperations.addInboundFrameDecoder()
        let whole = delimited([SampleFrames.group])
        try channel.writeInbound(whole.getSlice(at: 0, length: 10)!)
        channel.read()  // as a channel with autoRead does after each batch of reads
        loop.advanceTime(by: .milliseconds(150))
        if readsResume {
            channel.pipeline.fireUserInboundEventTriggered(ReadsResumed())
            loop.advanceTime(by: .milliseconds(150))
        }
        #expect(throws: Never.self) { try channel.throwIfErrorCaught() }
        loop.advanceTime(by: .milliseconds(100))
        #expect(codecErrorCode { try channel.throwIfErrorCaught() } == .frameTimeout)
        _ = try? channel.finish()
    }

    /// A frame whose length prefix is padded to 6-10 bytes (which the decoder reads) is followed
    /// as any other: it stalls and is late. Before, the handler followed prefixes of at most 5
    /// bytes and stopped timing the connection at a longer one, so a client could send such a
    /// prefix and then hold a frame open for good.
    @Test func aFrameWithAPaddedPrefixThatStallsRaisesFrameTimeout() throws {
        let loop = EmbeddedEventLoop()
        let channel = EmbeddedChannel(loop: loop)
        try channel.pipeline.syncOperations.addHandler(FrameDeadlineHandler(maxFrameWait: .milliseconds(200)))
        try channel.pipeline.syncOperations.addInboundFrameDecoder()
        let body = SampleFrames.c2c.serializedBytes()
        // The body's length in 10 bytes, then the whole frame, then a second frame's padded prefix
        // and half its body.
        var prefix = [UInt8](repeating: 0x80, count: 9) + [0x00]
        prefix[0] |= UInt8(body.count & 0x7F)
        prefix[1] |= UInt8(body.count >> 7)
        #expect(body.count < 1 << 14)
        try channel.writeInbound(ByteBuffer(bytes: prefix + body + prefix + body[..<(body.count / 2)]))
        channel.read()
        let first: InboundFrame? = try channel.readInbound()
        #expect(first?.prefixSize == 10)
        loop.advanceTime(by: .milliseconds(150))
        #expect(throws: Never.self) { try channel.throwIfErrorCaught() }
        loop.advanceTime(by: .milliseconds(100))
        #expect(codecErrorCode { try channel.throwIfErrorCaught() } == .frameTimeout)
        _ = try? channel.finish()
    }

    @Test func framesThatCompleteInTimeNeverTimeOut() throws {
        let loop = EmbeddedEventLoop()
        let channel = EmbeddedChannel(loop: loop)
        let deadline = FrameDeadlineHandler(maxFrameWait: .milliseconds(200))
        try channel.pipeline.syncOperations.addHandler(deadline)
        try channel.pipeline.syncOperations.addInboundFrameDecoder()
        let stream = delimited([SampleFrames.c2c, SampleFrames.group, SampleFrames.receipt])
        // Each step leaves a frame incomplete for 150 ms, under the limit; each frame completes.
        var offset = 0
        for cut in [7, stream.readableBytes / 2, stream.readableBytes - 1, stream.readableBytes] {
            try channel.writeInbound(stream.getSlice(at: offset, length: cut - offset)!)
            channel.read()
            offset = cut
            loop.advanceTime(by: .milliseconds(150))
            try channel.throwIfErrorCaught()
        }
        #expect(!deadline.isInsideFrame)
        loop.advanceTime(by: .seconds(10))  // idle between frames is not a stall
        try channel.throwIfErrorCaught()
        var count = 0
        while let _: InboundFrame = try channel.readInbound() { count += 1 }
        #expect(count == 3)
        #expect(try channel.finish().isClean)
    }

    /// A frame left incomplete while the application holds back the channel's next read() (as
    /// NIOAsyncChannel does while its consumer is behind, with autoRead on): when the wait passes
    /// with no read() since the last batch, the handler issues one read() itself (the rest may be in
    /// the socket) and waits again. If that read brings nothing within a whole wait, the peer is
    /// late: before, the handler waited for the application's read() however long, so a
    /// channelReadComplete that no read() follows (as an HTTP upgrade that completes asynchronously
    /// fires for the bytes it held) made a stalled peer never late (with the fix reverted this test
    /// saw no read() and no error). If it brings bytes and the application holds again, the
    /// handler reads no more (the hold lets in one batch more, not one per wait) and the frame is
    /// not late however long the hold lasts; the application's read() then gives it its whole wait.
    @Test(arguments: [false, true])
    func aFrameHeldByTheApplicationIsReadForOnce(theReadBringsMore: Bool) throws {
        let loop = EmbeddedEventLoop()
        let channel = EmbeddedChannel(loop: loop)
        let counter = ReadCounter()
        try channel.pipeline.syncOperations.addHandler(counter)
        try channel.pipeline.syncOperations.addHandler(FrameDeadlineHandler(maxFrameWait: .milliseconds(200)))
        try channel.pipeline.syncOperations.addInboundFrameDecoder()
        let whole = delimited([SampleFrames.group])
        try channel.writeInbound(whole.getSlice(at: 0, length: 10)!)  // no read() after it
        loop.advanceTime(by: .milliseconds(150))
        #expect(counter.reads == 0)
        loop.advanceTime(by: .milliseconds(100))
        try channel.throwIfErrorCaught()
        #expect(counter.reads == 1, "the handler read for the held frame")
        guard theReadBringsMore else {
            loop.advanceTime(by: .milliseconds(200))
            #expect(codecErrorCode { try channel.throwIfErrorCaught() } == .frameTimeout)
            #expect(counter.reads == 1)
            _ = try? channel.finish()
            return
        }
        // That read brings more of the frame, and the application holds back again.
        try channel.writeInbound(whole.getSlice(at: 10, length: 10)!)
        loop.advanceTime(by: .seconds(10))
        try channel.throwIfErrorCaught()
        #expect(counter.reads == 1, "no more reads while the application holds")
        channel.read()  // the application reads again: a whole wait
        #expect(counter.reads == 2)
        loop.advanceTime(by: .milliseconds(150))
        try channel.throwIfErrorCaught()
        loop.advanceTime(by: .milliseconds(100))
        #expect(codecErrorCode { try channel.throwIfErrorCaught() } == .frameTimeout)
        _ = try? channel.finish()
    }

    /// Through NIOAsyncChannel on loopback: a server whose consumer does not read for 5 s, with a
    /// 2 s `maxFrameWait`, gets all 40 frames a client wrote at once, without an error. Its reads of
    /// 1,050 bytes end inside frames, so a frame is incomplete when the channel stops reading at its
    /// high watermark. Before, the deadline took the consumer's delay for the peer's and ended the
    /// connection with `frameTimeout`.
    @Test func anAsyncServerBehindItsPeerDoesNotTimeItOut() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        var failure: (any Error)?
        do { try await Self.serveBehindThePeer(on: group) } catch { failure = error }
        try await group.shutdownGracefully()  // also when the exchange failed
        if let failure { throw failure }
    }

    private static func serveBehindThePeer(on group: MultiThreadedEventLoopGroup) async throws {
        let server = try await ServerBootstrap(group: group)
            .childChannelOption(.recvAllocator, value: FixedSizeRecvByteBufferAllocator(capacity: 1_050))
            .childChannelOption(.maxMessagesPerRead, value: 1)
            .bind(host: "127.0.0.1", port: 0) { channel in
                IMCodecFrameChannel.framing(channel, maxFrameWait: .seconds(2))
            }
        let port = try #require(server.channel.localAddress?.port)
        let frames = (0..<40).map {
            Frame(Message.c2cText(from: "alice", to: "bob", String(repeating: "x", count: 60), clientMsgID: "\($0)"))
        }
        // A plain socket: the 40 frames go out in one write.
        let client = try await ClientBootstrap(group: group).connect(host: "127.0.0.1", port: port).get()
        var bytes = ByteBuffer()
        for frame in frames { bytes.writeFrame(frame) }
        try await client.writeAndFlush(bytes)
        let received = try await server.executeThenClose { connections in
            var iterator = connections.makeAsyncIterator()
            let connection = try #require(await iterator.next())
            return try await connection.executeThenClose { inbound, _ in
                try await Task.sleep(for: .seconds(5))
                // Once reading resumes, the rest comes in one read: no frame is left incomplete
                // while reads go on, where a loop thread starved past the wait on a loaded machine
                // would have made the peer late by chance.
                try await connection.channel.setOption(
                    .recvAllocator,
                    value: FixedSizeRecvByteBufferAllocator(capacity: 64 << 10)
                ).get()
                var count = 0
                for try await _ in inbound {
                    count += 1
                    if count == frames.count { break }
                }
                return count
            }
        }
        #expect(received == frames.count)
        try? await client.close()
    }
}

@Suite("Deep frames on an event loop")
struct DeepFrameTests {
    @Test("a 100-layer merger round-trips on a NIO event-loop thread, through the handlers too")
    func onEventLoop() throws {
        let frame = SampleFrames.depthBomb(layers: 100)  // 2 + 3 × 100 + 2 = 304 levels
        let bytes = frame.serializedBytes()
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        defer { try? group.syncShutdownGracefully() }
        let result = try group.next().submit { () -> Bool in
            let decoder = WireDecoder()
            let decoded = try Frame(serializedBytes: bytes)
            let viaDecoder = try decoder.decode(Frame.self, from: bytes)
            let viaView = try decoder.withFrameView(bytes) { $0.materialize() }
            return decoded == frame && decoded.serializedBytes() == bytes && viaDecoder == frame && viaView == frame
        }.wait()
        #expect(result)
    }
}
#endif
