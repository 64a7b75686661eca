#if Tools
import Foundation
import Logging
import NIOCore
import NIOPosix
import PostgresNIO
import Testing

@testable import imcodec_relay

/// The stores a durability test runs on.
enum StoreBackend: String, CaseIterable, CustomTestStringConvertible, Sendable {
    /// SQLite in the relay's data directory (the default).
    case sqlite
    /// A PostgreSQL database of the test's own (``PostgresTestDatabase``).
    case postgresql

    var testDescription: String { rawValue }
}

/// A PostgreSQL database made for one test on the server that `Scripts/with-postgres` runs (named
/// by `IMCODEC_TEST_POSTGRES_URL`), and dropped by ``drop()``.
///
/// A test that needs one and finds no `IMCODEC_TEST_POSTGRES_URL` fails (``serverURL()``): it is
/// never skipped, so a run without PostgreSQL cannot pass by leaving these tests out.
final class PostgresTestDatabase: Sendable {
    /// The variable `Scripts/with-postgres` sets.
    static let environmentVariable = "IMCODEC_TEST_POSTGRES_URL"

    /// The new database's URL.
    let url: PostgresURL
    /// The server's own database (where the test's database is created and dropped from).
    let server: PostgresURL

    /// The server's URL, from `IMCODEC_TEST_POSTGRES_URL`.
    /// - Throws: A recorded failure naming `Scripts/with-postgres` when the variable is not set.
    static func serverURL() throws -> PostgresURL {
        let text = try #require(
            ProcessInfo.processInfo.environment[environmentVariable],
            """
            this test needs PostgreSQL and \(environmentVariable) is not set: run the tests through \
            Scripts/with-postgres (Scripts/with-postgres swift test --traits Tools ...), which starts a \
            throwaway server and sets it
            """
        )
        return try PostgresURL(text)
    }

    /// Creates a database with a new name on the test server.
    init() async throws {
        server = try Self.serverURL()
        let name = "imcodec_test_\(UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: ""))"
        var url = server
        url.database = name
        // A loaded machine (ThreadSanitizer's run, a disk that stalls its fsyncs) once kept every
        // test's server silent past the relay's 10 s default: the relays here wait a minute, as the
        // harness gives logins two. The tests of the timeout set their own.
        url.timeout = 60
        self.url = url
        // A database's name is an identifier, which PostgreSQL does not take as a bound parameter;
        // this one is made of [a-z0-9_] only.
        _ = try await Self.withConnection(to: server) { connection in
            try await connection.query(PostgresQuery(unsafeSQL: "CREATE DATABASE \(name)"), logger: Self.logger)
        }
    }

    /// Drops the database, ending any session still on it (a relay killed a moment ago). Blocks the
    /// calling thread (the work runs on NIO's threads), so that a `defer` can call it.
    func drop() {
        let statement = PostgresQuery(unsafeSQL: "DROP DATABASE IF EXISTS \(url.database) WITH (FORCE)")
        do {
            let connection = try Self.connect(to: server).wait()
            defer { try? connection.close().wait() }
            _ = try connection.query(statement, logger: Self.logger).wait()
        } catch {
            Issue.record("could not drop the test database \(url.database): \(PostgresRelayStore.describe(error))")
        }
    }

    /// `serve` arguments that put the relay's store in this database.
    var serveArguments: [String] { ["--store", url.description] }

    /// Runs `body` on a new connection to `url` (the test's database, or the server's own).
    static func withConnection<R>(
        to url: PostgresURL,
        _ body: (PostgresConnection) async throws -> R
    ) async throws -> R {
        let connection = try await connect(to: url).get()
        do {
            let result = try await body(connection)
            try await connection.close()
            return result
        } catch {
            try? await connection.close()
            throw error
        }
    }

    /// Runs `body` on a new connection to this database.
    func withConnection<R>(_ body: (PostgresConnection) async throws -> R) async throws -> R {
        try await Self.withConnection(to: url, body)
    }

    static let logger = Logger(label: "imcodec-tests.postgres", factory: { _ in SwiftLogNoOpLogHandler() })

    private static func connect(to url: PostgresURL) throws -> EventLoopFuture<PostgresConnection> {
        PostgresConnection.connect(
            on: MultiThreadedEventLoopGroup.singleton.any(),
            configuration: try PostgresRelayStore.connectionConfiguration(for: url),
            id: 0,
            logger: logger
        )
    }
}

/// Where an in-process test relay keeps its store, for the length of one test: a SQLite file in a
/// temporary folder, or a PostgreSQL database of its own. ``remove()`` deletes it.
final class TestStore {
    let backend: StoreBackend
    let location: StoreLocation
    private let folder: URL?
    /// The PostgreSQL database (`nil` on SQLite).
    let database: PostgresTestDatabase?

    init(_ backend: StoreBackend) async throws {
        self.backend = backend
        switch backend {
        case .sqlite:
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
                "imcodec-store-\(UUID().uuidString)"
            )
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            self.folder = folder
            database = nil
            location = .sqlite(path: folder.appendingPathComponent("relay.sqlite").path)
        case .postgresql:
            let database = try await PostgresTestDatabase()
            self.database = database
            folder = nil
            location = .postgres(database.url)
        }
    }

    /// Deletes the SQLite folder, or drops the PostgreSQL database.
    func remove() {
        if let folder { try? FileManager.default.removeItem(at: folder) }
        database?.drop()
    }

    /// Opens the store, as a relay does.
    func open() throws -> any RelayStore {
        try location.open(logger: Logger(label: "imcodec-tests.store", factory: { _ in SwiftLogNoOpLogHandler() }))
    }
}
#endif
