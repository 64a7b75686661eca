// swift-format-ignore-file
// (Every Swift block of the docs this test runs must appear in this file verbatim.)
#if NIO
import Foundation
import IMCodec
import IMCodecNIO
import NIOCore
import NIOPosix
import Testing

// The code of IMCodecNIO.docc's articles, verbatim: every ```swift block of the catalog (and of
// README's SwiftNIO section) appears in this file (a test below checks it), so that every snippet
// the documentation shows compiles and the complete server and client run.

// MARK: - The article's code (AsyncServerAndClient.md)

/// Listens on `port` (0 for any free port) for length-prefixed frame connections.
func bindEchoServer(group: any EventLoopGroup, port: Int) async throws -> NIOAsyncChannel<IMCodecFrameChannel, Never> {
    try await ServerBootstrap(group: group)
        .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
        // A client may half-close: its end of stream ends the inbound frames, and the answers
        // still on their way go out before the server closes.
        .childChannelOption(.allowRemoteHalfClosure, value: true)
        .bind(host: "127.0.0.1", port: port) { channel in
            IMCodecFrameChannel.framing(channel, options: FrameCodecOptions(maxFrameSize: 64 << 10))
        }
}

/// Serves each client in a task of its own until the task running it is cancelled; then it
/// stops accepting and closes every connection.
@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
func serveEcho(_ server: NIOAsyncChannel<IMCodecFrameChannel, Never>) async throws {
    try await withThrowingDiscardingTaskGroup { connections in
        try await server.executeThenClose { clients in
            for try await client in clients {
                connections.addTask {
                    do {
                        try await echo(client)
                    } catch {
                        // Bad input from this client (the decoder's IMCodecError): it is closed.
                        print("connection closed: \(error)")
                    }
                }
            }
        }
    }
}

/// Answers each message frame with the message itself, until the client half-closes.
func echo(_ connection: IMCodecFrameChannel) async throws {
    try await connection.withFrames { inbound, outbound in
        for try await frame in inbound where frame.payloadKind == .message {
            try await outbound.write(try frame.decode())
        }
    }
}

/// Sends `texts` to bob as alice, half-closes, and returns what the server answered.
func sendAndCollect(_ texts: [String], group: any EventLoopGroup, port: Int) async throws -> [Frame] {
    let connection = try await ClientBootstrap(group: group)
        .connect(host: "127.0.0.1", port: port) { channel in
            IMCodecFrameChannel.framing(
                channel, configuration: IMCodecFrameChannel.Configuration(isOutboundHalfClosureEnabled: true))
        }
    return try await connection.withFrames { inbound, outbound in
        for text in texts {
            try await outbound.write(Frame(Message.c2cText(from: "alice", to: "bob", text)))
        }
        outbound.finish()  // half-closes: the server sees the end of the stream
        var answers: [Frame] = []
        for try await frame in inbound {  // until the server closes
            answers.append(try frame.decode())
        }
        return answers
    }
}

/// Starts the server, talks to it, and shuts everything down.
@available(macOS 14, iOS 17, tvOS 17, watchOS 10, *)
func runEchoExample() async throws -> [Frame] {
    let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    let server = try await bindEchoServer(group: group, port: 0)
    let port = server.channel.localAddress!.port!
    let serving = Task { try await serveEcho(server) }

    let answers = try await sendAndCollect(["hello", "bye"], group: group, port: port)

    serving.cancel()  // stops accepting and closes the connections still open
    try? await serving.value
    try await group.shutdownGracefully()
    return answers
}

/// Adds the WebSocket frame handlers to a channel NIOWebSocket's upgrader has just upgraded, and
/// wraps it: the same inbound and outbound types as a length-prefixed connection.
func webSocketFrameChannel(_ channel: any Channel) throws -> IMCodecFrameChannel {
    try channel.pipeline.syncOperations.addIMCodecWebSocketFrameHandlers()
    return try IMCodecFrameChannel(wrappingChannelSynchronously: channel)
}

// MARK: - Tests

@Suite("IMCodecNIO.docc: the articles' code runs and is the code the articles show")
struct AsyncArticleTests {
    @Test("the article's echo server and client exchange frames, then shut down")
    func theArticlesServerAndClientRun() async throws {
        let answers = try await runEchoExample()
        #expect(answers.map { $0.message?.previewText } == ["hello", "bye"])
    }

    @Test("every ```swift block of IMCodecNIO.docc, and of README's SwiftNIO section, appears verbatim in this file")
    func theArticlesCodeBlocksAreInThisFile() throws {
        let thisFile = URL(fileURLWithPath: #filePath)
        let source = try String(contentsOf: thisFile, encoding: .utf8)
        let catalog = thisFile.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Sources/IMCodecNIO/IMCodecNIO.docc")
        let pages = try FileManager.default.contentsOfDirectory(atPath: catalog.path).filter { $0.hasSuffix(".md") }
        #expect(pages.count >= 2, "\(pages)")
        var blocks = 0
        for page in pages.sorted() {
            let text = try String(contentsOf: catalog.appendingPathComponent(page), encoding: .utf8)
            for block in Self.swiftBlocks(in: text) {
                blocks += 1
                #expect(source.contains(block), "\(page): this block is not in AsyncArticleTests.swift:\n\(block)")
            }
        }
        #expect(blocks >= 5)
        // README's IMCodecNIO section shows the same code.
        let readme = try String(
            contentsOf: catalog.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
                .appendingPathComponent("README.md"),
            encoding: .utf8)
        let section = try #require(readme.components(separatedBy: "\n## SwiftNIO").dropFirst().first)
            .components(separatedBy: "\n## ").first ?? ""
        let readmeBlocks = Self.swiftBlocks(in: section)
        #expect(!readmeBlocks.isEmpty)
        for block in readmeBlocks {
            #expect(source.contains(block), "README.md: this block is not in AsyncArticleTests.swift:\n\(block)")
        }
    }

    /// The contents of the ```swift fences of a Markdown page.
    static func swiftBlocks(in markdown: String) -> [String] {
        var blocks: [String] = []
        var current: [Substring]?
        for line in markdown.split(separator: "\n", omittingEmptySubsequences: false) {
            if current == nil, line == "```swift" {
                current = []
            } else if current != nil, line == "```" {
                blocks.append(current!.joined(separator: "\n"))
                current = nil
            } else {
                current?.append(line)
            }
        }
        return blocks
    }
}

extension Frame {
    /// The frame's message payload, if it carries one.
    fileprivate var message: Message? {
        if case .message(let message)? = payload { return message }
        return nil
    }
}
#endif
