#if Tools
import Foundation
import IMCodec
import IMCodecNIO
import IMCodecTestSupport
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import NIOSSL
import Testing

@testable import imcodec_relay

/// One WebSocket frame as a server sent it (servers do not mask).
struct ReceivedWebSocketFrame: Equatable {
    var fin: Bool
    var opcode: UInt8
    var payload: [UInt8]
}

/// WebSocket opcodes (RFC 6455 §5.2).
enum WSOpcode {
    static let continuation: UInt8 = 0x0
    static let text: UInt8 = 0x1
    static let binary: UInt8 = 0x2
    static let close: UInt8 = 0x8
    static let ping: UInt8 = 0x9
    static let pong: UInt8 = 0xA
}

/// Keeps every byte a connection receives.
final class ByteCollector: ChannelInboundHandler, Sendable {
    typealias InboundIn = ByteBuffer

    private let box = NIOLockedValueBox<[UInt8]>([])

    var bytes: [UInt8] { box.withLockedValue { $0 } }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let buffer = Self.unwrapInboundIn(data)
        box.withLockedValue { $0.append(contentsOf: buffer.readableBytesView) }
        testClientReads.withLockedValue { $0 += 1 }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}

/// A WebSocket client written from raw bytes (handshake, masking, framing by hand), so that tests
/// can send what a well-behaved client library never would.
struct RawWebSocketClient: Sendable {
    let channel: any Channel
    let collector: ByteCollector

    /// Connects to the relay's WebSocket port and completes the upgrade handshake.
    /// With `tls`, over TLS (`wss://`), checking the relay's certificate for `localhost`.
    static func connect(
        to server: RelayServer,
        group: any EventLoopGroup,
        receiveBuffer: Int? = nil,
        tls: NIOSSLContext? = nil
    ) async throws -> RawWebSocketClient {
        var request = ByteBuffer()
        request.writeString(
            "GET /chat HTTP/1.1\r\nHost: 127.0.0.1:\(server.webSocketPort ?? 0)\r\nUpgrade: websocket\r\n"
                + "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                + "Sec-WebSocket-Version: 13\r\n\r\n"
        )
        // Written on the connection's event loop as soon as it connects (see TestClient.connect).
        let client = try await connectRaw(
            to: server,
            group: group,
            receiveBuffer: receiveBuffer,
            tls: tls,
            sending: request
        )
        let upgraded = await eventually { client.responseHead != nil }
        #expect(upgraded, "no handshake response")
        let head = client.responseHead ?? ""
        #expect(head.hasPrefix("HTTP/1.1 101"), "handshake: \(head)")
        // The accept value RFC 6455 §1.3 gives for this key.
        #expect(head.contains("s3pPLMBiTxaQ9kYGzzhZRbK+xOo="), "handshake: \(head)")
        return client
    }

    /// Connects to the WebSocket port without a handshake; writes `first`, if any, on the
    /// connection's event loop as soon as it is connected.
    static func connectRaw(
        to server: RelayServer,
        group: any EventLoopGroup,
        receiveBuffer: Int? = nil,
        tls: NIOSSLContext? = nil,
        sending first: ByteBuffer? = nil
    ) async throws -> RawWebSocketClient {
        let collector = ByteCollector()
        var bootstrap = ClientBootstrap(group: group)
        if let receiveBuffer {
            bootstrap = bootstrap.channelOption(.socketOption(.so_rcvbuf), value: SocketOptionValue(receiveBuffer))
        }
        let channel =
            try await bootstrap
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    if let tls {
                        try channel.pipeline.syncOperations.addHandler(
                            NIOSSLClientHandler(context: tls, serverHostname: "localhost")
                        )
                    }
                    try channel.pipeline.syncOperations.addHandler(collector)
                }
            }
            .connect(host: "127.0.0.1", port: try #require(server.webSocketPort))
            .flatMap { channel in
                guard let first else { return channel.eventLoop.makeSucceededFuture(channel) }
                return channel.writeAndFlush(first).map { channel }
            }
            .get()
        return RawWebSocketClient(channel: channel, collector: collector)
    }

    /// The HTTP response head, once it has arrived whole.
    var responseHead: String? {
        let bytes = collector.bytes
        guard let end = Self.headEnd(bytes) else { return nil }
        return String(decoding: bytes[..<end], as: UTF8.self)
    }

    private static func headEnd(_ bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        for i in 0...(bytes.count - 4) where bytes[i..<i + 4].elementsEqual([13, 10, 13, 10]) { return i + 4 }
        return nil
    }

    /// The WebSocket frames received after the handshake (a frame still incomplete is left out).
    var frames: [ReceivedWebSocketFrame] {
        let bytes = collector.bytes
        guard var index = Self.headEnd(bytes) else { return [] }
        var frames: [ReceivedWebSocketFrame] = []
        while index + 2 <= bytes.count {
            let fin = bytes[index] & 0x80 != 0
            let opcode = bytes[index] & 0x0F
            var length = Int(bytes[index + 1] & 0x7F)
            var at = index + 2
            if length == 126 {
                guard at + 2 <= bytes.count else { break }
                length = Int(bytes[at]) << 8 | Int(bytes[at + 1])
                at += 2
            } else if length == 127 {
                guard at + 8 <= bytes.count else { break }
                length = bytes[at..<at + 8].reduce(0) { $0 << 8 | Int($1) }
                at += 8
            }
            guard at + length <= bytes.count else { break }
            frames.append(ReceivedWebSocketFrame(fin: fin, opcode: opcode, payload: Array(bytes[at..<at + length])))
            index = at + length
        }
        return frames
    }

    /// The IMCodec frames received, one per binary message.
    var messages: [Frame] {
        frames.filter { $0.opcode == WSOpcode.binary }.compactMap { try? Frame(serializedBytes: $0.payload) }
    }

    /// The close code of the relay's close frame, if one arrived.
    var closeCode: UInt16? {
        guard let close = frames.first(where: { $0.opcode == WSOpcode.close }), close.payload.count >= 2 else {
            return nil
        }
        return UInt16(close.payload[0]) << 8 | UInt16(close.payload[1])
    }

    /// The `code` of the first error notice (or refused login) received, if any.
    var errorCode: String? { relayErrorCode(in: messages) }

    /// The messages (IMCodec `Message` payloads) received.
    var chatMessages: [Message] {
        messages.compactMap { if case .message(let m)? = $0.payload { m } else { nil } }
    }

    func send(opcode: UInt8, payload: [UInt8], fin: Bool = true, masked: Bool = true) async throws {
        try await write(webSocketFrameBytes(opcode: opcode, payload: payload, fin: fin, masked: masked))
    }

    func write(_ bytes: [UInt8]) async throws {
        try await channel.writeAndFlush(ByteBuffer(bytes: bytes)).get()
    }

    /// Sends `frame` as one binary message.
    func send(_ frame: Frame) async throws {
        try await send(opcode: WSOpcode.binary, payload: frame.serializedBytes())
    }

    /// Logs in as `user` and waits for the answer.
    func login(_ user: String) async throws {
        try await send(try await TestAuth.login(user))
        let ok = await eventually {
            messages.contains {
                if case .loginResult(let r)? = $0.payload { r.errorCode == 0 } else { false }
            }
        }
        #expect(ok, "\(user) was not logged in over WebSocket")
    }

    /// Waits until the relay closes the connection; returns whether it did within `seconds`.
    func closedByPeer(within seconds: Double) async -> Bool {
        await eventually(seconds) { !channel.isActive }
    }

    func close() async {
        try? await channel.close().get()
    }
}

extension Message {
    /// The text of the first element, if it is a text element.
    var firstText: String? {
        if case .text(let element)? = elements.first?.content { element.text } else { nil }
    }
}

/// The repository root (for Scripts/).
let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent()

/// Runs a command to completion off the cooperative pool; returns its exit status and output
/// (standard output and error together).
func runProcess(_ arguments: [String], environment extra: [String: String] = [:]) async throws -> (Int32, String) {
    var environment = ProcessInfo.processInfo.environment
    environment.merge(extra) { $1 }
    // On a thread of its own: the child may run for seconds, and ChildProcess.run waits for it.
    return try await withCheckedThrowingContinuation { continuation in
        Thread.detachNewThread { [environment] in
            continuation.resume(
                with: Result {
                    let (termination, output, _) = try ChildProcess.run(
                        "/usr/bin/env",
                        arguments,
                        directory: repositoryRoot.path,
                        environment: environment,
                        errorToOutput: true
                    )
                    return (termination.status, String(decoding: output, as: UTF8.self))
                }
            )
        }
    }
}
#endif
