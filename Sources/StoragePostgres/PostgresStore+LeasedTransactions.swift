public import Foundation
public import JobQueue
import Logging
public import Persistence
import PostgresNIO
import StorekeeperDomain

extension PostgresStore: LeasedTransactions {
    /// The job row stays locked until commit; workers granting evidence that shares a purchase
    /// queue on the advisory locks of its original transactions, taken before anything granted
    /// is read, so the decision never acts on state another worker is about to change.
    public func withLease<T: Sendable>(
        _ lease: JobLease, verificationId: String, reading query: GrantFactsQuery, now: Date,
        _ decide: @escaping @Sendable (LeasedVerification?, GrantFacts) throws -> LeasedDecision<T>
    ) async throws -> T? {
        let logger = self.logger
        let channel = verificationChannel
        let committed = try await transaction(on: .work) { connection -> LeasedCommit<T>? in
            guard try await Self.lockLease(connection, lease, logger: logger) else { return nil }
            var verification = try await connection.rows(
                "SELECT id, app_id, app_user_id, state FROM verifications WHERE id = \(verificationId) FOR UPDATE", logger: logger
            ).first.map { row in
                LeasedVerification(
                    id: try row.value("id"), appId: try row.value("app_id"), appUserId: try row.value("app_user_id"),
                    state: try VerificationState.stored(try row.value("state"), column: "verifications.state"))
            }
            if verification != nil {
                verification?.provisionalGrants = try await Self.provisionalGrants(connection, verificationId: verificationId, logger: logger)
            }
            try await AdvisoryLock.lock(
                query.originalTransactionIds.map { "original/\(query.appId)/\($0)" }, on: connection, logger: logger)
            let facts = GrantFacts(
                transactions: try await Self.loadTransactions(connection, appId: query.appId, ids: query.transactionIds, logger: logger),
                bindings: try await Self.loadBindings(connection, appId: query.appId, originalIds: query.originalTransactionIds, logger: logger),
                subscriptions: try await Self.loadSubscriptions(
                    connection, appId: query.appId, originalIds: query.originalTransactionIds, logger: logger),
                claims: try await Self.loadClaims(connection, appId: query.appId, originalIds: query.originalTransactionIds, logger: logger),
                catalog: query.readsCatalog
                    ? Dictionary(
                        try await Self.products(connection, appId: query.appId, logger: logger).map { ($0.productId, $0) },
                        uniquingKeysWith: { $1 }) : [:],
                submission: query.readsSubmission
                    ? try await Self.submission(connection, verificationId: verificationId, logger: logger) : nil)
            let decision = try decide(verification, facts)
            for write in decision.writes { try await Self.apply(write, lease: lease, connection: connection, now: now, logger: logger) }
            // Delivered at commit to the processes holding `?wait=` answers.
            for id in decision.changedVerifications {
                try await connection.execute("SELECT pg_notify(\(channel), \(id))", logger: logger)
            }
            return LeasedCommit(result: decision.result, changed: decision.changedVerifications)
        }
        for id in committed?.changed ?? [] { verificationWatch.notify(id) }
        return committed?.result
    }

    static func apply(_ write: LeasedWrite, lease: JobLease, connection: PostgresConnection, now: Date, logger: Logger) async throws {
        switch write {
        case .job(let transition):
            guard try await endAttempt(connection, lease, transition, now: now, logger: logger) else {
                throw StorageConflict("job \(lease.jobId) left its lease")
            }
        case .verification(let verification):
            try await change(connection, verification, now: now, logger: logger)
        case .grant(let plan, let appId):
            try await apply(plan, appId: appId, connection: connection, now: now, logger: logger)
        case .provisionalGrants(let grants):
            for grant in grants {
                try await connection.execute(
                    """
                    INSERT INTO provisional_grants (app_id, verification_id, app_user_id, transaction_id, original_transaction_id,
                        product_id, expires_at, created_at)
                    VALUES (\(grant.appId), \(grant.verificationId), \(grant.appUserId), \(grant.transactionId),
                        \(grant.originalTransactionId), \(grant.productId), \(StoredTime.ms(grant.expiresAt)), \(StoredTime.ms(now)))
                    ON CONFLICT (verification_id, transaction_id) DO NOTHING
                    """, logger: logger)
            }
        case .endProvisionalGrants(let verificationId):
            try await connection.execute("DELETE FROM provisional_grants WHERE verification_id = \(verificationId)", logger: logger)
        case .events(let batch):
            try await record(batch, connection: connection, now: now, logger: logger)
        }
    }
}
