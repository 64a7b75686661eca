#if Tools
import ServiceLifecycle

/// The relay as a swift-service-lifecycle service: it runs until the service group asks for a
/// graceful shutdown (`serve` asks on SIGTERM and SIGINT), then shuts the relay down gracefully
/// (``RelayServer/shutdown()``: stop listening, commit and acknowledge what was accepted, tell every
/// device `kicked_offline` with `KICK_REASON_SERVER_SHUTDOWN`, close the store).
struct RelayService: Service {
    let server: RelayServer

    func run() async throws {
        // Returns on graceful shutdown; throws CancellationError when the group is cancelled
        // instead, and the relay is shut down all the same.
        try? await gracefulShutdown()
        try await server.shutdown()
    }
}
#endif
