import Foundation
import Logging
public import StoragePostgres
import StorekeeperErrors

/// The PostgreSQL server the test suite and benchmarks use, named by
/// `STOREKEEPER_TEST_POSTGRES_URL` (scripts/test.sh starts a throwaway cluster and sets it).
/// Each store gets a schema of its own, so tests never see each other's rows.
public enum PostgresTestDatabase {
    public static var url: String? {
        ProcessInfo.processInfo.environment["STOREKEEPER_TEST_POSTGRES_URL"].flatMap { $0.isEmpty ? nil : $0 }
    }

    /// Set by scripts/test.sh (and so by CI): a missing server is then a failure, not a skip.
    public static var required: Bool { ProcessInfo.processInfo.environment["STOREKEEPER_REQUIRE_POSTGRES"] == "1" }

    /// The test server's URL with a fresh schema name, for stores and for whole processes.
    public static func freshURL(prefix: String = "t") throws -> String {
        guard let url else { throw PostgresStoreError(.invalidURL, "STOREKEEPER_TEST_POSTGRES_URL is not set") }
        let schema = "\(prefix)_\(UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "").prefix(16))"
        return url + (url.contains("?") ? "&" : "?") + "schema=\(schema)"
    }

    /// A migrated store in a fresh schema. Its pool runs in the background for the rest of the
    /// process and closes idle connections quickly, so hundreds of tests fit one server.
    public static func makeStore(url: String? = nil, maximumConnections: Int = 8) async throws -> PostgresStore {
        var configuration = try PostgresStore.Configuration(url: url ?? freshURL())
        configuration.maximumConnections = maximumConnections
        configuration.idleTimeout = .seconds(2)
        var logger = Logger(label: "storekeeper.test.postgres")
        logger.logLevel = .warning
        let store = try PostgresStore(configuration: configuration, logger: logger)
        _ = store.runInBackground()
        try await store.migrate()
        return store
    }
}

extension PostgresStore {
    /// Test support only: the pool of a store a test keeps for its whole run, in a task of its
    /// own. Shipped code runs the pool as a Service or through `withRunningPool`.
    public func runInBackground() -> Task<Void, Never> {
        Task { await runPool() }
    }
}
