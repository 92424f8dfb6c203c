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
            let facts = try await Self.grantFacts(connection, query, verificationId: verificationId, logger: logger)
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

    /// What a grant is decided from, in one statement: the transactions and original
    /// transactions it names (their rows, bindings, subscriptions and ownership claims), the
    /// catalog and the submission when asked. Each table's rows travel as `row_to_json` and are
    /// decoded by the same functions as a statement's own rows.
    static func grantFacts(
        _ connection: PostgresConnection, _ query: GrantFactsQuery, verificationId: String, logger: Logger
    ) async throws -> GrantFacts {
        var bindings = PostgresBindings()
        bindings.append(query.appId)
        bindings.append(query.transactionIds)
        bindings.append(query.originalTransactionIds)
        if query.readsSubmission { bindings.append(verificationId) }
        let catalog = query.readsCatalog ? "ARRAY(SELECT body FROM products WHERE app_id = $1 ORDER BY product_id)" : "NULL::text[]"
        let submitted =
            query.readsSubmission
            ? """
            (SELECT row_to_json(x)::text FROM (
                SELECT v.*, r.data AS receipt_data FROM verifications v
                JOIN receipts r ON r.app_id = v.app_id AND r.hash = v.receipt_hash WHERE v.id = $4) x)
            """ : "NULL::text"
        let row = try await connection.rows(
            PostgresQuery(
                unsafeSQL: """
                    SELECT ARRAY(SELECT row_to_json(t)::text FROM transactions t WHERE t.app_id = $1 AND t.transaction_id = ANY($2))
                            AS transactions,
                        ARRAY(SELECT row_to_json(b)::text FROM ownership_bindings b
                            WHERE b.app_id = $1 AND b.original_transaction_id = ANY($3)) AS bindings,
                        ARRAY(SELECT row_to_json(s)::text FROM subscriptions s
                            WHERE s.app_id = $1 AND s.original_transaction_id = ANY($3)) AS subscriptions,
                        ARRAY(SELECT json_build_object('original_transaction_id', c.original_transaction_id,
                                'app_user_id', c.app_user_id, 'accepted_seq', c.accepted_seq, 'state', v.state)::text
                            FROM ownership_claims c JOIN verifications v ON v.id = c.verification_id
                            WHERE c.app_id = $1 AND c.original_transaction_id = ANY($3)) AS claims,
                        \(catalog) AS products, \(submitted) AS submission
                    """, binds: bindings), prepared: true, logger: logger)[0]
        /// The column's rows, decoded, by their key (the last of equal keys, as a primary key
        /// never has two).
        func keyed<T>(_ column: String, _ decode: (JSONStoredRow) throws -> T, by key: KeyPath<T, String>) throws -> [String: T] {
            Dictionary(try JSONStoredRow.rows(column, of: row).map(decode).map { ($0[keyPath: key], $0) }, uniquingKeysWith: { $1 })
        }
        var facts = GrantFacts(
            transactions: try keyed("transactions", transaction(from:), by: \.transactionId),
            bindings: try keyed(
                "bindings",
                { stored in
                    OwnershipBinding(
                        appId: try stored.value("app_id"), originalTransactionId: try stored.value("original_transaction_id"),
                        appUserId: try stored.value("app_user_id"), productId: try stored.value("product_id"))
                }, by: \.originalTransactionId),
            subscriptions: try keyed("subscriptions", subscription(from:), by: \.originalTransactionId))
        for stored in try JSONStoredRow.rows("claims", of: row) {
            let claim = OwnershipClaim(
                originalTransactionId: try stored.value("original_transaction_id"), appUserId: try stored.value("app_user_id"),
                acceptedSequence: try stored.value("accepted_seq"),
                verificationState: try VerificationState.stored(try stored.value("state"), column: "verifications.state"))
            facts.claims[claim.originalTransactionId, default: []].append(claim)
        }
        if query.readsCatalog {
            for product in try row.value("products", as: [String].self).compactMap({ StoredJSON.decode(Product.self, $0) }) {
                facts.catalog[product.productId] = product
            }
        }
        if let submitted = try row.value("submission", as: String?.self) {
            facts.submission = try submission(from: JSONStoredRow(submitted))
        }
        return facts
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
                """, prepared: true, logger: logger
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
                    """, prepared: true, logger: logger)
            }
        case .endProvisionalGrants(let verificationId):
            try await connection.execute("DELETE FROM provisional_grants WHERE verification_id = \(verificationId)", prepared: true, logger: logger)
        case .events(let batch):
            try await record(batch, connection: connection, now: now, logger: logger)
        }
    }
}
