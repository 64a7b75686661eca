#if Tools
import CoreMetrics
import IMCodec
import Prometheus

/// The relay's metrics: swift-metrics counters, meters and a timer, made by a
/// `PrometheusMetricsFactory` over a registry this relay owns (no process-wide
/// `MetricsSystem.bootstrap`, so relays in one process, as in the tests, never share counts).
/// `serve --metrics-port` exports ``registry`` in Prometheus' text format (``MetricsHTTPHandler``).
///
/// Lives on the relay's event loop (the router and the store queue update it there). The hot-path
/// metrics, frames by payload kind and transport, are made once per label value and kept in arrays
/// indexed by the kind's field number: counting a frame is an index and an atomic add, never a
/// lookup by name. Every metric is listed, with its type and labels, in README.md ("Metrics").
final class RelayMetrics {
    /// The metric names (each with the `imcodec_relay_` prefix).
    enum Name {
        static let connections = "imcodec_relay_connections_total"
        static let connectionsOpen = "imcodec_relay_connections_open"
        static let usersOnline = "imcodec_relay_users_online"
        static let logins = "imcodec_relay_logins_total"
        static let loginsFailed = "imcodec_relay_logins_failed_total"
        static let framesIn = "imcodec_relay_frames_in_total"
        static let framesOut = "imcodec_relay_frames_out_total"
        static let acks = "imcodec_relay_acks_total"
        static let syncRequests = "imcodec_relay_sync_requests_total"
        static let slowConsumers = "imcodec_relay_slow_consumers_total"
        static let closedByError = "imcodec_relay_connections_closed_by_error_total"
        static let storeCommitDuration = "imcodec_relay_store_commit_duration_seconds"
        static let nodeForwarding = "imcodec_relay_node_forwarding"
        static let nodeClientsHeld = "imcodec_relay_node_clients_held"
    }

    /// The buckets of ``Name/storeCommitDuration``: from 100 µs (the memory store, a small SQLite
    /// commit with `synchronous=NORMAL`) to 2.5 s (a large group commit with `FULL` on a slow disk).
    static let commitBuckets: [Duration] = [
        .microseconds(100), .microseconds(250), .microseconds(500), .milliseconds(1), .microseconds(2500),
        .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100),
        .milliseconds(250), .milliseconds(500), .seconds(1), .milliseconds(2500),
    ]

    /// The registry every metric of this relay is in; ``MetricsHTTPHandler`` emits it.
    let registry: PrometheusCollectorRegistry
    private let factory: PrometheusMetricsFactory

    /// Store commits and how long each took (a histogram), recorded on the loop as each completes.
    let storeCommitDuration: CoreMetrics.Timer
    /// Users with at least one logged-in device.
    let usersOnline: CoreMetrics.Meter
    /// A forwarding relay node's: 1 while its link to the routing node is up, else 0. Made on first
    /// use, so a relay that routes does not export it.
    private(set) lazy var nodeForwarding = CoreMetrics.Meter(
        label: Name.nodeForwarding,
        dimensions: [],
        factory: factory
    )

    /// A forwarding relay node's: the clients whose reads it turned off because its link to the
    /// routing node is full (the routing node falls behind). Made on first use, as ``nodeForwarding``.
    private(set) lazy var nodeClientsHeld = CoreMetrics.Meter(
        label: Name.nodeClientsHeld,
        dimensions: [],
        factory: factory
    )

    private let connections: [CoreMetrics.Counter]
    private let connectionsOpen: [CoreMetrics.Meter]
    private let logins: [CoreMetrics.Counter]
    private let slowConsumers: [CoreMetrics.Counter]
    /// Indexed by transport, then by ``kindIndex(_:)``; made on first use.
    private var framesIn: [[CoreMetrics.Counter?]]
    private var framesOut: [[CoreMetrics.Counter?]]
    private var syncRequests: [Frame.Payload.Kind: CoreMetrics.Counter] = [:]
    private var acks: [Int32: CoreMetrics.Counter] = [:]
    private var loginsFailed: [Int32: CoreMetrics.Counter] = [:]
    private var closedByError: [String: CoreMetrics.Counter] = [:]

    /// One slot per field number of `Frame.payload`, and slot 0 for a frame without a payload.
    private static let kindSlots = Int(Frame.Payload.Kind.allCases.map(\.rawValue).max() ?? 0) + 2

    /// Makes every metric of a relay in `registry`.
    init(registry: PrometheusCollectorRegistry = PrometheusCollectorRegistry()) {
        self.registry = registry
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.durationHistogramBuckets[Name.storeCommitDuration] = Self.commitBuckets
        self.factory = factory
        func perTransport<M>(_ make: (String) -> M) -> [M] {
            Session.Transport.allCases.map { make($0.metricLabel) }
        }
        connections = perTransport {
            CoreMetrics.Counter(label: Name.connections, dimensions: [("transport", $0)], factory: factory)
        }
        connectionsOpen = perTransport {
            CoreMetrics.Meter(label: Name.connectionsOpen, dimensions: [("transport", $0)], factory: factory)
        }
        logins = perTransport {
            CoreMetrics.Counter(label: Name.logins, dimensions: [("transport", $0)], factory: factory)
        }
        slowConsumers = perTransport {
            CoreMetrics.Counter(label: Name.slowConsumers, dimensions: [("transport", $0)], factory: factory)
        }
        usersOnline = CoreMetrics.Meter(label: Name.usersOnline, dimensions: [], factory: factory)
        storeCommitDuration = CoreMetrics.Timer(label: Name.storeCommitDuration, dimensions: [], factory: factory)
        let empty = [[CoreMetrics.Counter?]](
            repeating: Array(repeating: nil, count: Self.kindSlots),
            count: Session.Transport.allCases.count
        )
        framesIn = empty
        framesOut = empty
    }

    /// The slot of `kind` in the per-kind arrays.
    @inline(__always)
    private static func kindIndex(_ kind: Frame.Payload.Kind?) -> Int {
        kind.map { Int($0.rawValue) + 1 } ?? 0
    }

    /// The `kind` label of a payload kind: its field name in the schema, or `none`.
    static func kindLabel(_ kind: Frame.Payload.Kind?) -> String { kind?.protoName ?? "none" }

    /// A connection was accepted.
    func connectionOpened(_ transport: Session.Transport) {
        connections[transport.index].increment()
        connectionsOpen[transport.index].increment()
    }

    /// A connection closed.
    func connectionClosed(_ transport: Session.Transport) {
        connectionsOpen[transport.index].decrement()
    }

    /// A login was accepted.
    func loggedIn(_ transport: Session.Transport) { logins[transport.index].increment() }

    /// A `login_result` with a non-zero `error_code` was sent.
    func loginFailed(code: Int32) {
        counter(&loginsFailed, code, Name.loginsFailed, ("error_code", String(code))).increment()
    }

    /// A frame was read from a client.
    @inline(__always)
    func frameIn(_ kind: Frame.Payload.Kind?, _ transport: Session.Transport) {
        frameCounter(&framesIn, Name.framesIn, kind, transport).increment()
    }

    /// A frame was queued for writing to a client.
    @inline(__always)
    func frameOut(_ kind: Frame.Payload.Kind?, _ transport: Session.Transport) {
        frameCounter(&framesOut, Name.framesOut, kind, transport).increment()
    }

    /// A `send_ack` was written; `code` is its `error_code` (0: success).
    func ack(code: Int32) {
        counter(&acks, code, Name.acks, ("error_code", String(code))).increment()
    }

    /// A `sync_request` or `stream_sync_request` was handled.
    func syncRequest(_ kind: Frame.Payload.Kind) {
        counter(&syncRequests, kind, Name.syncRequests, ("kind", Self.kindLabel(kind))).increment()
    }

    /// A client was dropped as a slow consumer.
    func slowConsumer(_ transport: Session.Transport) { slowConsumers[transport.index].increment() }

    /// The relay closed a connection for `code` (`tooLarge`, `loginTimeout`, `slowConsumer`, ...).
    func closedByError(code: String) {
        counter(&closedByError, code, Name.closedByError, ("code", code)).increment()
    }

    private func frameCounter(
        _ table: inout [[CoreMetrics.Counter?]],
        _ name: String,
        _ kind: Frame.Payload.Kind?,
        _ transport: Session.Transport
    ) -> CoreMetrics.Counter {
        let slot = Self.kindIndex(kind)
        if let counter = table[transport.index][slot] { return counter }
        let counter = CoreMetrics.Counter(
            label: name,
            dimensions: [("kind", Self.kindLabel(kind)), ("transport", transport.metricLabel)],
            factory: factory
        )
        table[transport.index][slot] = counter
        return counter
    }

    private func counter<Key: Hashable>(
        _ table: inout [Key: CoreMetrics.Counter],
        _ key: Key,
        _ name: String,
        _ label: (String, String)
    ) -> CoreMetrics.Counter {
        if let counter = table[key] { return counter }
        let counter = CoreMetrics.Counter(label: name, dimensions: [label], factory: factory)
        table[key] = counter
        return counter
    }
}

extension Session.Transport {
    /// The `transport` label of the relay's metrics: `tcp` or `websocket`.
    var metricLabel: String {
        switch self {
        case .tcp: "tcp"
        case .webSocket: "websocket"
        }
    }

    /// The transport's slot in per-transport arrays.
    var index: Int {
        switch self {
        case .tcp: 0
        case .webSocket: 1
        }
    }
}
#endif
