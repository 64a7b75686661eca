#if Tools
import NIOCore
import NIOHTTP1
import NIOPosix
import Prometheus

/// The metrics endpoint of `serve --metrics-port`: an HTTP/1.1 server that answers `GET /metrics`
/// (and `HEAD`) with a relay's ``RelayMetrics/registry`` in Prometheus' text exposition format,
/// version 0.0.4; any other path is 404, any other method on `/metrics` 405. Keep-alive as the
/// scraper asks.
final class MetricsHTTPHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    /// The path the metrics are served on.
    static let path = "/metrics"
    /// The content type of Prometheus' text exposition format.
    static let contentType = "text/plain; version=0.0.4; charset=utf-8"

    private let registry: PrometheusCollectorRegistry
    private var request: HTTPRequestHead?

    init(registry: PrometheusCollectorRegistry) {
        self.registry = registry
    }

    /// Listens on `host`:`port` (0 picks a free port) on `loop` and serves `registry`.
    /// - Returns: The listening channel (its `localAddress` has the port).
    static func bind(
        host: String,
        port: Int,
        loop: any EventLoop,
        registry: PrometheusCollectorRegistry
    ) -> EventLoopFuture<any Channel> {
        ServerBootstrap(group: loop)
            .serverChannelOption(.backlog, value: 16)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let sync = channel.pipeline.syncOperations
                    try sync.configureHTTPServerPipeline(withErrorHandling: true)
                    try sync.addHandler(MetricsHTTPHandler(registry: registry))
                }
            }
            .bind(host: host, port: port)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch Self.unwrapInboundIn(data) {
        case .head(let head):
            request = head
        case .body:
            break
        case .end:
            guard let head = request else { return }
            request = nil
            respond(to: head, context: context)
        }
    }

    private func respond(to head: HTTPRequestHead, context: ChannelHandlerContext) {
        let path = head.uri.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        var headers = HTTPHeaders()
        let status: HTTPResponseStatus
        var body = context.channel.allocator.buffer(capacity: 0)
        if path != Self.path {
            status = .notFound
            headers.add(name: "Content-Type", value: "text/plain; charset=utf-8")
            body.writeString("Not found: the metrics are at \(Self.path)\n")
        } else if head.method != .GET, head.method != .HEAD {
            status = .methodNotAllowed
            headers.add(name: "Allow", value: "GET, HEAD")
            headers.add(name: "Content-Type", value: "text/plain; charset=utf-8")
            body.writeString("Method not allowed: GET \(Self.path)\n")
        } else {
            status = .ok
            headers.add(name: "Content-Type", value: Self.contentType)
            body.writeBytes(registry.emitToBuffer())
        }
        let keepAlive = head.isKeepAlive
        headers.add(name: "Content-Length", value: "\(body.readableBytes)")
        headers.add(name: "Connection", value: keepAlive ? "keep-alive" : "close")
        context.write(
            Self.wrapOutboundOut(
                .head(
                    HTTPResponseHead(
                        version: head.version,
                        status: status,
                        headers: headers
                    )
                )
            ),
            promise: nil
        )
        if head.method != .HEAD {
            context.write(Self.wrapOutboundOut(.body(.byteBuffer(body))), promise: nil)
        }
        let done = context.writeAndFlush(Self.wrapOutboundOut(.end(nil)))
        if !keepAlive {
            let channel = context.channel
            done.whenComplete { _ in channel.close(promise: nil) }
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}
#endif
