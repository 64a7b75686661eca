#if Tools
import NIOCore
import NIOEmbedded
import Testing

@testable import imcodec_relay

/// The link between relay nodes (`NodeLink.swift`), piece by piece: what one client of a
/// forwarding node may have queued on the routing node's side, the first message a link may
/// carry, and the ids a forwarding node gives its clients. The nodes themselves, as processes on a
/// PostgreSQL database, are in `RelayPostgresTests` and `RelayCrashTests`.
@Suite("Node links")
struct NodeLinkTests {
    /// A client of a forwarding node is bounded as a client of the relay is: the bytes written for
    /// it and not yet handed to the link's socket are counted, and past `--max-outbound-bytes` it
    /// is not writable (the router then drops it as a slow consumer), whatever the link holds for
    /// other clients. Once the link's socket takes them, it is writable again.
    @Test func aLinkClientIsBoundedByWhatItHasQueued() throws {
        let link = EmbeddedChannel()
        try link.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 9)).wait()
        let alice = LinkConnection(link: link, id: 1, address: "a", maxQueuedBytes: 64 * 1024)
        let bob = LinkConnection(link: link, id: 2, address: "b", maxQueuedBytes: 64 * 1024)
        let frame = ByteBuffer(repeating: 7, count: 40_000)

        alice.write(frame)
        #expect(alice.isWritable && alice.bufferedBytes == 40_000)
        bob.write(frame)
        #expect(bob.isWritable && bob.bufferedBytes == 40_000, "another client's bytes are not bob's")
        alice.write(frame)
        #expect(!alice.isWritable && alice.bufferedBytes == 80_000, "past its bound")
        #expect(bob.isWritable)

        link.flush()
        #expect(alice.isWritable && alice.bufferedBytes == 0 && bob.bufferedBytes == 0)
        // What went out: three link messages (a header, then the frame's bytes as they are).
        var sessions: [UInt32] = []
        while let header = try link.readOutbound(as: ByteBuffer.self) {
            var header = header
            let length = header.readInteger(as: UInt32.self)
            let kind = header.readInteger(as: UInt8.self)
            let session = header.readInteger(as: UInt32.self)
            #expect(length == 5 + 40_000 && kind == NodeLink.Kind.frame.rawValue)
            sessions.append(session ?? 0)
            #expect(try link.readOutbound(as: ByteBuffer.self)?.readableBytes == 40_000)
        }
        #expect(sessions == [1, 2, 1])

        // As the routing node's handler does when a link goes.
        for client in [alice, bob] { client.linkClosed() }
        _ = try link.finish()
    }

    /// Until a link's first message (a hello with the secret, or a welcome) has been read, a
    /// message holds at most 128 bytes, so that a connection that does not know the secret cannot
    /// have a frame's worth (1 MiB by default) buffered; after it, frames up to the limit pass.
    @Test func aLinksFirstMessageIsSmall() throws {
        let maxSize = 1 << 20
        let large = NodeLink.message(.frame, session: 1, allocator: .init(), ByteBuffer(repeating: 1, count: 1_000))

        let stranger = EmbeddedChannel(handler: ByteToMessageHandler(NodeLink.Decoder(maxSize: maxSize)))
        #expect(throws: NodeLinkError.self) { try stranger.writeInbound(large) }

        let node = EmbeddedChannel(handler: ByteToMessageHandler(NodeLink.Decoder(maxSize: maxSize)))
        let hello = NodeLink.message(.hello, session: 0, allocator: .init(), ByteBuffer(string: NodeLink.makeSecret()))
        #expect(hello.readableBytes <= NodeLink.Decoder.firstMessageMaxSize)
        try node.writeInbound(hello)
        try node.writeInbound(large)
        #expect(try node.readInbound(as: NodeLink.Message.self)?.kind == .hello)
        let frame = try #require(try node.readInbound(as: NodeLink.Message.self))
        #expect(frame.kind == .frame && frame.payload.readableBytes == 1_000)
        _ = try node.finish()
    }

    /// A forwarding node's client ids go up by one, skip 0, and skip every id a client still holds,
    /// also when the counter wraps around.
    @Test func aClientIDStillHeldIsNotGivenAgain() {
        #expect(NodeLink.sessionID(after: 0) { _ in false } == 1)
        #expect(NodeLink.sessionID(after: 41) { _ in false } == 42)
        let held: Set<UInt32> = [1, 2, 4]
        #expect(NodeLink.sessionID(after: .max) { held.contains($0) } == 3)
        #expect(NodeLink.sessionID(after: .max - 1) { $0 == .max } == 1)
    }
}
#endif
