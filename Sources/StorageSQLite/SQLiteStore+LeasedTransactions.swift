public import Foundation
import GRDB
public import JobQueue
public import Persistence
import StorekeeperDomain

extension SQLiteStore: LeasedTransactions {
    /// SQLite has one writer, so the write transaction itself serializes grants that share an
    /// original transaction: no lock beyond it is taken.
    public func withLease<T: Sendable>(
        _ lease: JobLease, verificationId: String, reading query: GrantFactsQuery, now: Date,
        _ decide: @escaping @Sendable (LeasedVerification?, GrantFacts) throws -> LeasedDecision<T>
    ) async throws -> T? {
        let committed = try await write(priority: .work) { db -> LeasedCommit<T>? in
            guard try Self.holdsLease(db, lease) else { return nil }
            let verification = try Row.fetchOne(
                db.cachedStatement(sql: "SELECT id, app_id, app_user_id, state, hints FROM verifications WHERE id = ?"), arguments: [verificationId]
            ).map { row in
                LeasedVerification(
                    id: row["id"], appId: row["app_id"], appUserId: row["app_user_id"],
                    state: try VerificationState.stored(row["state"], column: "verifications.state"),
                    provisionalGrants: try Self.provisionalGrants(db, verificationId: verificationId),
                    hints: StoredJSON.decode([String: String].self, row["hints"]) ?? [:])
            }
            let decision = try decide(verification, try Self.loadFacts(db, query, verificationId: verificationId))
            for write in decision.writes { try Self.apply(write, lease: lease, db: db, now: now) }
            return LeasedCommit(result: decision.result, changed: decision.changedVerifications)
        }
        for id in committed?.changed ?? [] { verificationWatch.notify(id) }
        return committed?.result
    }

    static func apply(_ write: LeasedWrite, lease: JobLease, db: Database, now: Date) throws {
        switch write {
        case .job(let transition):
            guard try endAttempt(db, lease, transition, now: now) else { throw StorageConflict("job \(lease.jobId) left its lease") }
        case .verification(let verification):
            try change(db, verification, now: now)
        case .grant(let plan, let appId):
            try apply(plan, appId: appId, db: db, now: now)
        case .provisionalGrants(let grants):
            for grant in grants {
                try db.cachedStatement(
                    sql: """
                        INSERT INTO provisional_grants (app_id, verification_id, app_user_id, transaction_id, original_transaction_id,
                            product_id, expires_at, created_at)
                        VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                        ON CONFLICT (verification_id, transaction_id) DO NOTHING
                        """
                ).execute(arguments: [
                    grant.appId, grant.verificationId, grant.appUserId, grant.transactionId, grant.originalTransactionId,
                    grant.productId, StoredTime.ms(grant.expiresAt), StoredTime.ms(now),
                ])
            }
        case .endProvisionalGrants(let verificationId):
            try db.cachedStatement(sql: "DELETE FROM provisional_grants WHERE verification_id = ?").execute(arguments: [verificationId])
        case .events(let batch):
            try record(batch, db: db, now: now)
        }
    }
}
