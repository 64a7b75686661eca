#if Tools
import NIOCore

/// The heartbeat (session.proto LoginResult.heartbeat_interval_s): "the server closes a session
/// silent for 3 intervals". Any frame counts, not only a ping: a client busy sending needs no ping.
/// Before its login a connection has ``RelayConfiguration/loginTimeout`` instead.
extension Router {
    /// Starts the checks for silent sessions, every `interval` (on the router's loop, until the relay
    /// shuts down); none with a heartbeat interval of 0.
    func closeSilentSessions(every interval: TimeAmount) {
        guard configuration.heartbeatIntervalS > 0 else { return }
        repeatedly(every: interval) { router in router.closeSilentSessions() }
    }

    /// Closes every logged-in session that sent no frame for 3 heartbeat intervals, with an `error`
    /// notice `heartbeatTimeout`; its devices resume from their stream positions when they return.
    func closeSilentSessions() {
        let limitMs = 3 * Int64(configuration.heartbeatIntervalS) * 1000
        let nowMs = configuration.silenceClock()
        let silent = connections.values.filter {
            $0.state == .loggedIn && !$0.closing && nowMs - $0.lastHeardMs > limitMs
        }
        for session in silent {
            fail(
                session,
                code: "heartbeatTimeout",
                reason: "no frame for \(3 * configuration.heartbeatIntervalS) s (3 heartbeat intervals)"
            )
        }
    }
}
#endif
