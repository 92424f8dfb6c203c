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
        let committed = try await transaction(on: .work) { connection -> LeasedCommit<T>? in
            guard case .held(let verification) = try await Self.leasedVerification(connection, lease, verificationId: verificationId, logger: logger)
            else { return nil }
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
            return LeasedCommit(result: decision.result, changed: decision.changedVerifications)
        }
        // To the processes holding `?wait=` answers: this one at once, the others once announced.
        let changed = committed?.changed ?? []
        for id in changed { verificationWatch.notify(id) }
        if !changed.isEmpty { verificationAnnouncer.committed(changed) }
        return committed?.result
    }

    /// One round trip for what every leased transaction reads first: the job row locked if the
    /// lease still holds it (nil otherwise: nothing else is locked or read), then the
    /// verification locked, with the provisional grants it gave. The job is locked before the
    /// verification, as everywhere else.
    static func leasedVerification(
        _ connection: PostgresConnection, _ lease: JobLease, verificationId: String, logger: Logger
    ) async throws -> LeasedRead {
        guard
            let row = try await connection.rows(
                """
                WITH leased AS (
                    SELECT id FROM jobs WHERE id = \(lease.jobId) AND state = 'running' AND lease_token = \(lease.token) FOR UPDATE
                ), verification AS (
                    SELECT id, app_id, app_user_id, state, hints FROM verifications
                    WHERE id = \(verificationId) AND EXISTS (SELECT 1 FROM leased) FOR UPDATE
                )
                SELECT EXISTS (SELECT 1 FROM leased) AS leased, v.id, v.app_id, v.app_user_id, v.state, v.hints,
                    p.transaction_ids, p.original_ids, p.product_ids, p.expires
                FROM (SELECT 1) AS one
                LEFT JOIN verification v ON TRUE
                LEFT JOIN LATERAL (
                    SELECT array_agg(transaction_id ORDER BY transaction_id) AS transaction_ids,
                        array_agg(original_transaction_id ORDER BY transaction_id) AS original_ids,
                        array_agg(product_id ORDER BY transaction_id) AS product_ids,
                        array_agg(expires_at ORDER BY transaction_id) AS expires
                    FROM provisional_grants WHERE verification_id = v.id
                ) p ON TRUE
                """, logger: logger
            ).first, try row.value("leased", as: Bool.self)
        else { return .lost }
        guard let id = try row.value("id", as: String?.self) else { return .held(nil) }
        let appId: String = try row.value("app_id")
        let appUserId: String = try row.value("app_user_id")
        let transactionIds = try row.value("transaction_ids", as: [String]?.self) ?? []
        let originalIds = try row.value("original_ids", as: [String]?.self) ?? []
        let productIds = try row.value("product_ids", as: [String]?.self) ?? []
        let expires = try row.value("expires", as: [Int64]?.self) ?? []
        let grants = transactionIds.indices.map { index in
            ProvisionalGrant(
                appId: appId, appUserId: appUserId, verificationId: id, transactionId: transactionIds[index],
                originalTransactionId: originalIds[index], productId: productIds[index], expiresAt: StoredTime.date(expires[index]))
        }
        return .held(
            LeasedVerification(
                id: id, appId: appId, appUserId: appUserId,
                state: try VerificationState.stored(try row.value("state"), column: "verifications.state"), provisionalGrants: grants,
                hints: StoredJSON.decode([String: String].self, try row.value("hints", as: String?.self)) ?? [:]))
    }

    /// What a leased transaction's first read found: the lease lost, or held with the
    /// verification (nil when it is gone).
    enum LeasedRead {
        case lost
        case held(LeasedVerification?)
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
