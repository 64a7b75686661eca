#if Tools
import Crypto
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import IMCodec
import IMCodecNIO
import NIOCore

/// The link between relay nodes on one PostgreSQL database (`serve --node-port`).
///
/// The relay that holds the database's lock is the **routing node**: it decides, commits and
/// acknowledges everything, exactly as a relay on its own does. Every other node (``EdgeNode``)
/// accepts clients (TCP, WebSocket, TLS), checks their frames against the limits, and forwards
/// them over one link to the routing node's node port; the routing node sees each of those clients
/// as a session whose frames come and go over the link (``LinkConnection``). So logins, kicks of the
/// same device on another node, presence, membership, receipts and the event sync behave across
/// nodes as on one relay, and a node that stops loses nothing acknowledged.
///
/// The routing node publishes where its node port is, a secret made at each start and the SHA-256
/// of its TLS certificate in the database (``RouterNode``); a forwarding node reads them while it
/// waits for the lock, opens the link with the secret (a link without it is closed), and, when the
/// link is TLS, accepts only that certificate. Whoever can read the database can read every message
/// anyway; nobody else can join.
///
/// Each link message is `u32 length` (of what follows), `u8 kind`, `u32 session`, then the payload.
enum NodeLink {
    /// How a relay joins the nodes of its database (`--node-port`, `--node-address`).
    struct Options: Sendable {
        /// The port the relay takes links on while it routes; 0 picks a free one.
        var port: Int
        /// The address the other nodes connect to (`--node-address`; default: `--host`).
        var advertisedHost: String
        /// Lines for people about what the node does (forwarding, and to whom).
        var announce: @Sendable (String) -> Void = { _ in }
        /// Told the node's ``EdgeNode`` while it forwards, and `nil` once it stopped forwarding (it
        /// routes, or it never will): what a SIGTERM shuts down gracefully.
        var forwarding: @Sendable (EdgeNode?) -> Void = { _ in }
    }

    enum Kind: UInt8 {
        /// Forwarding → routing, session 0: the published secret (UTF-8).
        case hello = 1
        /// Routing → forwarding, session 0: the secret was right.
        case welcome = 2
        /// Forwarding → routing: a client connected; `u8` transport (0 TCP, 1 WebSocket), then its address.
        case open = 3
        /// Either way: one frame, its length prefix included.
        case frame = 4
        /// Forwarding → routing: the client's connection closed.
        case closed = 5
        /// Routing → forwarding: close the client; `u16` code length, code, `u16` reason length,
        /// reason, then the last frame to write first (length prefix included), if any.
        case close = 6
        /// Forwarding → routing, session 0: the node is shutting down and forwards nothing more;
        /// answer with ``drained`` once everything it forwarded before is answered.
        case drain = 7
        /// Routing → forwarding, session 0: everything forwarded before the ``drain`` was answered
        /// (every ack and answer of it is ahead of this on the link; ``NodeLinkHandler`` waits for
        /// the store reads and the logins under way).
        case drained = 8
    }

    struct Message {
        var kind: Kind
        var session: UInt32
        var payload: ByteBuffer
    }

    /// The bytes of a link message on the wire, in one buffer.
    static func message(
        _ kind: Kind,
        session: UInt32,
        allocator: ByteBufferAllocator,
        _ payload: ByteBuffer?
    ) -> ByteBuffer {
        var out = header(kind, session: session, payloadSize: payload?.readableBytes ?? 0, allocator: allocator)
        if let payload { out.writeImmutableBuffer(payload) }
        return out
    }

    /// Writes a link message to `channel`: its header, then `payload` as it is (a frame's bytes are
    /// not copied, however many clients of a node it goes to).
    static func write(
        _ kind: Kind,
        session: UInt32,
        _ payload: ByteBuffer?,
        to channel: any Channel,
        flush: Bool = false,
        written: EventLoopPromise<Void>? = nil
    ) {
        let size = payload?.readableBytes ?? 0
        let header = header(kind, session: session, payloadSize: size, allocator: channel.allocator)
        if let payload, size > 0 {
            channel.write(header, promise: nil)
            channel.write(payload, promise: written)
        } else {
            channel.write(header, promise: written)
        }
        if flush { channel.flush() }
    }

    /// The socket options of a link's end: TCP keepalives (probes after 5 s of silence, every 2 s,
    /// 3 unanswered: about 11 s, as the PostgreSQL session has, PostgresRelayStore), and on the
    /// routing node's end (`routing`) a user timeout of as long for data the forwarding node does
    /// not acknowledge. So the routing node notices a forwarding node whose machine vanished, idle
    /// or not, or that stopped reading, within about 11 s and closes its clients' sessions
    /// (presence, device records) instead of waiting for TCP to give up (about 15 minutes). A
    /// forwarding node's end has no user timeout: a routing node too busy to read for a while
    /// holds its clients back (EdgeNode) and is not given up for it; one whose machine vanished
    /// loses the database's lock, and the forwarding nodes follow the next one.
    static func socketOptions(routing: Bool) -> [(ChannelOptions.Types.SocketOption, SocketOptionValue)] {
        var options: [(ChannelOptions.Types.SocketOption, SocketOptionValue)] = [
            (.init(level: .socket, name: .so_keepalive), 1)
        ]
        #if os(Linux)
        options += [
            (.init(level: .tcp, name: .init(rawValue: TCP_KEEPIDLE)), 5),
            (.init(level: .tcp, name: .init(rawValue: TCP_KEEPINTVL)), 2),
            (.init(level: .tcp, name: .init(rawValue: TCP_KEEPCNT)), 3),
        ]
        if routing { options.append((.init(level: .tcp, name: .init(rawValue: CInt(TCP_USER_TIMEOUT))), 11_000)) }
        #endif
        return options
    }

    private static func header(
        _ kind: Kind,
        session: UInt32,
        payloadSize: Int,
        allocator: ByteBufferAllocator
    )
        -> ByteBuffer
    {
        var out = allocator.buffer(capacity: 9 + payloadSize)
        out.writeInteger(UInt32(5 + payloadSize))
        out.writeInteger(kind.rawValue)
        out.writeInteger(session)
        return out
    }

    /// The payload of a ``Kind/close`` message.
    static func closePayload(
        code: String,
        reason: String,
        last: ByteBuffer?,
        allocator: ByteBufferAllocator
    ) -> ByteBuffer {
        var out = allocator.buffer(capacity: 8 + code.utf8.count + reason.utf8.count + (last?.readableBytes ?? 0))
        for text in [code, reason] {
            let bytes = Array(text.utf8.prefix(Int(UInt16.max)))
            out.writeInteger(UInt16(bytes.count))
            out.writeBytes(bytes)
        }
        if let last { out.writeImmutableBuffer(last) }
        return out
    }

    /// Reads a ``Kind/close`` payload, or `nil` when it is malformed.
    static func readClose(_ payload: inout ByteBuffer) -> (code: String, reason: String, last: ByteBuffer?)? {
        guard let codeLength = payload.readInteger(as: UInt16.self),
            let code = payload.readString(length: Int(codeLength)),
            let reasonLength = payload.readInteger(as: UInt16.self),
            let reason = payload.readString(length: Int(reasonLength))
        else { return nil }
        return (code, reason, payload.readableBytes > 0 ? payload : nil)
    }

    /// Splits the link's bytes into messages; a message longer than `maxSize` is an error (the
    /// link is closed).
    struct Decoder: ByteToMessageDecoder {
        typealias InboundOut = Message
        let maxSize: Int
        /// Whether the link's first message (a hello or a welcome: a secret at most) was read: until
        /// then a message holds at most ``firstMessageMaxSize`` bytes, so that a peer that does not
        /// know the secret cannot have a frame's worth buffered per connection.
        private var sawFirst = false

        init(maxSize: Int) { self.maxSize = maxSize }

        /// The most a link's first message may hold: a header and a 64-character secret, with room.
        static let firstMessageMaxSize = 128

        mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
            guard let length = buffer.getInteger(at: buffer.readerIndex, as: UInt32.self) else { return .needMoreData }
            guard length >= 5, Int(length) <= (sawFirst ? maxSize : Self.firstMessageMaxSize) else {
                throw NodeLinkError(description: "a link message of \(length) bytes")
            }
            guard buffer.readableBytes >= 4 + Int(length) else { return .needMoreData }
            buffer.moveReaderIndex(forwardBy: 4)
            let kindByte = buffer.readInteger(as: UInt8.self)!
            let session = buffer.readInteger(as: UInt32.self)!
            let payload = buffer.readSlice(length: Int(length) - 5)!
            guard let kind = Kind(rawValue: kindByte) else {
                throw NodeLinkError(description: "a link message of unknown kind \(kindByte)")
            }
            sawFirst = true
            context.fireChannelRead(Self.wrapInboundOut(Message(kind: kind, session: session, payload: payload)))
            return .continue
        }
    }

    /// The id a forwarding node gives its next client: the one after `last`, never 0, and never
    /// one a client still holds (`isTaken`), so that a node that has opened 2^32 connections
    /// does not give a live client's id again (the routing node would see a second open for it).
    static func sessionID(after last: UInt32, isTaken: (UInt32) -> Bool) -> UInt32 {
        var id = last
        repeat { id &+= 1 } while id == 0 || isTaken(id)
        return id
    }

    /// The largest link message: a frame at the codec's size limit, its prefix and the header.
    static func maxMessageSize(_ codec: FrameCodecOptions) -> Int { codec.effectiveMaxFrameSize + 64 }

    /// Compares two secrets in time that does not depend on where they differ.
    static func sameSecret(_ a: ByteBuffer, _ b: String) -> Bool {
        let given = Array(a.readableBytesView)
        let expected = Array(b.utf8)
        guard given.count == expected.count else { return false }
        return zip(given, expected).reduce(UInt8(0)) { $0 | ($1.0 ^ $1.1) } == 0
    }

    /// A new secret for a routing node: 32 random bytes, in hex.
    static func makeSecret() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &generator)) }.joined()
    }

    /// The SHA-256 of a certificate's DER bytes, in hex.
    static func fingerprint(_ der: [UInt8]) -> String {
        SHA256.hash(data: der).map { String(format: "%02x", $0) }.joined()
    }
}

/// Where the routing node of a database takes its links, as it published it in the database.
struct RouterNode: Sendable, Equatable {
    var host: String
    var port: Int
    /// What a forwarding node sends first (``NodeLink/Kind/hello``).
    var secret: String
    /// The SHA-256 of the node port's TLS certificate (hex), or empty when the link is not TLS.
    var certificateSHA256: String

    var address: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}

/// Why a node link was closed.
struct NodeLinkError: Error, CustomStringConvertible {
    let description: String
}

/// A client of a forwarding node, as the routing node's router sees it: frames go over the link.
///
/// Its output is bounded as a client's own connection is: the bytes written for it and not yet
/// handed to the link's socket are counted, and past `maxQueuedBytes` (`--max-outbound-bytes`) it
/// is not writable, so the router drops it as a slow consumer. One client's frames then cannot
/// fill the link that all its node's clients share (a large message to a group with many members
/// on one node costs each member's session, not the link).
final class LinkConnection: SessionConnection {
    private let link: any Channel
    let id: UInt32
    let address: String
    private let closed: EventLoopPromise<Void>
    private var isClosed = false
    private let maxQueuedBytes: Int
    /// Written for this client and not yet written to the link's socket (on the link's event loop,
    /// which is the router's).
    private var queuedBytes = 0

    init(link: any Channel, id: UInt32, address: String, maxQueuedBytes: Int) {
        self.link = link
        self.id = id
        self.address = address
        self.maxQueuedBytes = maxQueuedBytes
        self.closed = link.eventLoop.makePromise()
    }

    var isActive: Bool { !isClosed && link.isActive }
    var isWritable: Bool { queuedBytes <= maxQueuedBytes }
    var bufferedBytes: Int? { queuedBytes }
    var closeFuture: EventLoopFuture<Void> { closed.futureResult }

    func write(_ buffer: ByteBuffer) {
        guard isActive else { return }
        let size = buffer.readableBytes
        queuedBytes += size
        let written = link.eventLoop.makePromise(of: Void.self)
        // Written to the socket, or failed with the link: either way no longer queued.
        written.futureResult.assumeIsolated().whenComplete { _ in self.queuedBytes -= size }
        NodeLink.write(.frame, session: id, buffer, to: link, written: written)
    }

    func flush() { link.flush() }

    func close(code: String, reason: String, after last: ByteBuffer?) {
        guard !isClosed else { return }
        isClosed = true
        if link.isActive {
            let payload = NodeLink.closePayload(code: code, reason: reason, last: last, allocator: link.allocator)
            NodeLink.write(.close, session: id, payload, to: link, flush: true)
        }
        closed.succeed()
    }

    /// The link went away, or the forwarding node said the client did.
    func linkClosed() {
        isClosed = true
        closed.succeed()
    }
}

/// The routing node's end of a link: checks the secret, then turns the forwarding node's clients
/// into sessions of the router.
final class NodeLinkHandler: ChannelInboundHandler {
    typealias InboundIn = NodeLink.Message

    private let router: Router
    private let secret: String
    private var welcomed = false
    private var sessions: [UInt32: Session] = [:]
    private var decoder: InboundFrameDecoder
    private var helloTimer: Scheduled<Void>?

    init(router: Router, secret: String) {
        self.router = router
        self.secret = secret
        self.decoder = InboundFrameDecoder(options: router.configuration.codec)
    }

    func channelActive(context: ChannelHandlerContext) {
        let channel = context.channel
        helloTimer = context.eventLoop.scheduleTask(in: router.configuration.loginTimeout) {
            channel.close(promise: nil)
        }
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let message = Self.unwrapInboundIn(data)
        guard welcomed else {
            guard message.kind == .hello, NodeLink.sameSecret(message.payload, secret) else {
                router.logger.warning("refused a node link from \(Self.address(of: context.channel)): wrong secret")
                context.close(promise: nil)
                return
            }
            welcomed = true
            helloTimer?.cancel()
            router.logger.info("node link from \(Self.address(of: context.channel))")
            NodeLink.write(.welcome, session: 0, nil, to: context.channel, flush: true)
            return
        }
        switch message.kind {
        case .open:
            var payload = message.payload
            guard sessions[message.session] == nil, let transportByte = payload.readInteger(as: UInt8.self) else {
                return linkFailed(context, "a bad open for client \(message.session)")
            }
            let transport: Session.Transport = transportByte == 1 ? .webSocket : .tcp
            let address = payload.readString(length: payload.readableBytes) ?? "?"
            let connection = LinkConnection(
                link: context.channel,
                id: message.session,
                address: address,
                maxQueuedBytes: router.configuration.maxOutboundBytes
            )
            let session = Session(connection: connection, transport: transport)
            sessions[message.session] = session
            router.opened(session)
        case .frame:
            guard let session = sessions[message.session] else { return }
            var bytes = message.payload
            do {
                guard let frame = try decoder.decode(buffer: &bytes), bytes.readableBytes == 0 else {
                    return router.fail(session, code: "internal", reason: "a node forwarded a partial frame")
                }
                router.metrics.frameIn(frame.payloadKind, session.transport)
                router.handle(frame, from: session)
            } catch {
                router.fail(session, error: error)
            }
        case .closed:
            guard let session = sessions.removeValue(forKey: message.session) else { return }
            (session.connection as? LinkConnection)?.linkClosed()
            router.closed(session)
        case .drain:
            answerDrain(on: context.channel)
        case .hello, .welcome, .close, .drained:
            linkFailed(context, "an unexpected \(message.kind) message")
        }
    }

    /// Answers a ``NodeLink/Kind/drain`` with ``NodeLink/Kind/drained`` once everything the node
    /// forwarded before it is answered: in order with the commits (each ack and answer is written
    /// to the link when its commit is done), and once none of the link's clients waits for a
    /// store read (its answer is queued when the read is done) or for its token's check (its held
    /// frames are handled then); until then it looks again every few milliseconds (the node waits
    /// a bounded time, then closes the link).
    private func answerDrain(on channel: any Channel) {
        router.store.afterCommit {
            guard channel.isActive else { return }
            let waiting = self.sessions.values.contains { $0.readsInFlight > 0 || $0.state == .authenticating }
            guard !waiting else {
                let handler = NIOLoopBound(self, eventLoop: channel.eventLoop)
                _ = channel.eventLoop.scheduleTask(in: .milliseconds(5)) { handler.value.answerDrain(on: channel) }
                return
            }
            // Behind every answer queued so far (a read that ran with this commit queues its answer
            // in the steps after this check): the node kicks its clients once `drained` comes.
            self.router.store.afterAnswers {
                self.router.flush()
                if channel.isActive { NodeLink.write(.drained, session: 0, nil, to: channel, flush: true) }
            }
        }
    }

    private func linkFailed(_ context: ChannelHandlerContext, _ reason: String) {
        router.logger.error("closing the node link from \(Self.address(of: context.channel)): \(reason)")
        context.close(promise: nil)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        router.flush()
        context.fireChannelReadComplete()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        linkFailed(context, "\(error)")
    }

    func channelInactive(context: ChannelHandlerContext) {
        helloTimer?.cancel()
        for session in sessions.values {
            (session.connection as? LinkConnection)?.linkClosed()
            router.closed(session)
        }
        sessions = [:]
        if welcomed { router.logger.info("node link from \(Self.address(of: context.channel)) closed") }
        context.fireChannelInactive()
    }

    static func address(of channel: any Channel) -> String {
        channel.remoteAddress.map { "\($0.ipAddress ?? "?"):\($0.port ?? 0)" } ?? "?"
    }
}
#endif
