import Foundation
import Logging
import Persistence
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
        let logger = self.logger
        let facts = GrantFactsQuery(appId: "app", transactionIds: ["t1"], originalTransactionIds: ["o1"], readsCatalog: true)
        await #expect(throws: (any Error).self) {
            try await store.transaction { connection in
                // A NUL in a bound value fails the subscriber's read and aborts the transaction; the
                // grant's facts, prepared next for the first time, are refused (25P02).
                _ = try? await PostgresStore.subscriberRows(
                    connection, appId: "app\u{0}", appUserId: "u", catalog: nil, now: Date(), logger: logger)
                _ = try await PostgresStore.grantFacts(connection, facts, verificationId: "v", logger: logger)
            }
        }
        let read = try await store.transaction { connection in
            try await PostgresStore.grantFacts(connection, facts, verificationId: "v", logger: logger)
        }
        #expect(read.transactions.isEmpty && read.catalog.isEmpty)
    }
}
