#if Tools
import Logging

/// The swift-log handler of `imcodec-relay serve`: one line on standard output per event, written
/// at once (``emit(_:)``), as the relay printed its lines before it logged through swift-log:
///
/// ```
/// relay: accepted alice/phone@127.0.0.1:50122                    info and notice: the message
/// relay: warning: closing bob@127.0.0.1:50130: slowConsumer: ...  other levels: the level first
/// relay: debug: alice/phone@127.0.0.1:50122 caught up ... peer=... metadata, if any, last
/// ```
///
/// `serve` installs it for the whole process (`LoggingSystem.bootstrap`, once, before anything
/// logs); the in-process tests never run `serve` and give each relay a ``RelayConfiguration/logger``
/// of their own.
struct RelayLogHandler: LogHandler {
    var metadata: Logger.Metadata = [:]
    var metadataProvider: Logger.MetadataProvider?
    var logLevel: Logger.Level = .info

    /// Where a line goes (standard output; a test can collect lines instead).
    private let write: @Sendable (String) -> Void

    init(label: String, write: @escaping @Sendable (String) -> Void = { emit($0) }) {
        self.write = write
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        write(Self.format(event, metadata: metadata, provider: metadataProvider))
    }

    /// `relay: [LEVEL: ]MESSAGE[ key=value ...]`: the level is left out for info and notice.
    static func format(_ event: LogEvent, metadata: Logger.Metadata, provider: Logger.MetadataProvider?) -> String {
        var line = "relay: "
        switch event.level {
        case .info, .notice: break
        default: line += "\(event.level.rawValue): "
        }
        line += event.message.description
        var merged = metadata
        if let provided = provider?.get() { merged.merge(provided) { _, new in new } }
        if let own = event.metadata { merged.merge(own) { _, new in new } }
        for key in merged.keys.sorted() { line += " \(key)=\(merged[key]!)" }
        return line
    }
}

extension Logger {
    /// A logger that drops everything: a relay's default (``RelayConfiguration/logger``).
    static func silent(label: String) -> Logger {
        Logger(label: label, factory: { _ in SwiftLogNoOpLogHandler() })
    }
}
#endif
