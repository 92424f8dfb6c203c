import Foundation
import Logging
import PostgresNIO
import StorekeeperTesting
import Testing

@testable import StoragePostgres

/// Hot statements run prepared (`PreparedQuery`); a failed preparation must not refuse the
/// statement for the rest of its connection's life.
@Suite("prepared statements")
struct PreparedQueryTests {
    let logger = Logger(label: "test")

    @Test("a text gets one name; a different text, a different name")
    func names() {
        #expect(PreparedQuery.digest(of: "SELECT 1") == PreparedQuery.digest(of: "SELECT 1"))
        #expect(PreparedQuery.digest(of: "SELECT 1") != PreparedQuery.digest(of: "SELECT 2"))
        #expect(PreparedQuery.digest(of: String(repeating: "x", count: 10_000)).utf8.count < 64)
    }

    @Test(
        "a statement first prepared in an aborted transaction (refused) is prepared again on the same connection, and runs",
        .enabled(if: PostgresTestDatabase.url != nil))
    func preparedAgainAfterFailure() async throws {
        // One connection per pool, so the second transaction reuses the first one's connection.
        let store = try await PostgresTestDatabase.makeStore(maximumConnections: 2)
        let marker = Int64.random(in: 1...1_000_000_000)
        let query: PostgresQuery = "SELECT \(marker)::bigint + 1 AS n, 'prepared-again-test' AS label"
        let logger = self.logger
        await #expect(throws: (any Error).self) {
            try await store.transaction { connection in
                // Aborts the transaction: the next statement's preparation is refused (25P02).
                try? await connection.execute("SELECT 1 / 0", logger: logger)
                _ = try await connection.rows(query, prepared: true, logger: logger)
            }
        }
        let rows = try await store.transaction { connection in try await connection.rows(query, prepared: true, logger: logger) }
        #expect(try rows.first?.value("n", as: Int64.self) == marker + 1)
    }
}
