public import Foundation
import GRDB
import JobQueue
public import Persistence
public import StorekeeperDomain

extension SQLiteStore {
    public func accept(_ submission: EvidenceSubmission, now: Date, decide: @escaping SubmissionDecision) async throws -> SubmissionResult {
        try await write { db in try Self.accept(db, submission, now: now, decide: decide) }
    }

    /// One submission inside an open write transaction: store the evidence, read the latest
    /// verification, write what `decide` returns.
    static func accept(_ db: Database, _ submission: EvidenceSubmission, now: Date, decide: SubmissionDecision) throws -> SubmissionResult {
        let nowMs = StoredTime.ms(now)
        try db.cachedStatement(sql: "INSERT INTO receipts (app_id, hash, data, created_at) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING").execute(
            arguments: [submission.appId, submission.evidenceHash, submission.evidence.storedText, nowMs])
        let latest = try Row.fetchOne(
            db.cachedStatement(
                sql: """
                    SELECT * FROM verifications WHERE app_id = ? AND receipt_hash = ? AND app_user_id = ?
                    ORDER BY generation DESC LIMIT 1
                    """), arguments: [submission.appId, submission.evidenceHash, submission.appUserId]
        ).map { row in LatestSubmission(verification: try Self.verification(from: row), generation: row["generation"]) }
        let write = decide(latest)
        if case .create(let pending) = write {
            try db.cachedStatement(
                sql: """
                    INSERT INTO jobs (id, kind, payload, state, attempt, run_at, created_at)
                    VALUES (?, ?, ?, ?, 0, ?, ?)
                    """
            ).execute(arguments: [pending.jobId, submission.evidence.jobKind, pending.id, pending.jobState.rawValue, nowMs, nowMs])
            try db.cachedStatement(
                sql: """
                    INSERT INTO verifications (id, app_id, app_user_id, receipt_hash, generation, job_id, state, attempts,
                        apple_statuses, hints, created_at, updated_at)
                    VALUES (?, ?, ?, ?, ?, ?, ?, 0, '[]', ?, ?, ?)
                    """
            ).execute(arguments: [
                pending.id, submission.appId, submission.appUserId, submission.evidenceHash, pending.generation, pending.jobId,
                pending.state.rawValue, submission.hints.isEmpty ? nil : StoredJSON.encode(submission.hints), nowMs, nowMs,
            ])
            // The verification's rowid orders acceptances: SQLite's single writer hands rowids out
            // in commit order, and verifications are never deleted, so none is handed out twice.
            let sequence = db.lastInsertedRowID
            for original in pending.claims {
                // A refresh keeps the user's place in line and follows its newest verification.
                try db.cachedStatement(
                    sql: """
                        INSERT INTO ownership_claims (app_id, original_transaction_id, app_user_id, verification_id, accepted_seq,
                            claimed_at)
                        VALUES (?, ?, ?, ?, ?, ?)
                        ON CONFLICT (app_id, original_transaction_id, app_user_id) DO UPDATE SET verification_id = excluded.verification_id
                        """
                ).execute(arguments: [submission.appId, original, submission.appUserId, pending.id, sequence, nowMs])
            }
            if var audit = submission.audit {
                audit.subject = pending.id
                try recordAudit(db, audit)
            }
        }
        guard let result = SubmissionResult.applied(write, latest: latest, submission: submission, at: StoredTime.date(nowMs)) else {
            throw StorageConflict("a submission decided to keep a verification that does not exist")
        }
        return result
    }

    public func verification(id: String) async throws -> VerificationRecord? {
        try await read { db in
            try Row.fetchOne(db.cachedStatement(sql: "SELECT * FROM verifications WHERE id = ?"), arguments: [id]).map(Self.verification(from:))
        }
    }

    public func verifications(
        appId: String?, states: [VerificationState], createdBefore: Date?, limit: Int
    ) async throws
        -> [VerificationRecord]
    {
        try await read { db in
            var clauses: [String] = []
            var arguments = StatementArguments()
            if let appId {
                clauses.append("app_id = ?")
                arguments += [appId]
            }
            if !states.isEmpty {
                clauses.append("state IN (\(placeholders(states.count)))")
                arguments += StatementArguments(states.map(\.rawValue))
            }
            if let createdBefore {
                clauses.append("created_at < ?")
                arguments += [StoredTime.ms(createdBefore)]
            }
            arguments += [limit]
            let filter = clauses.isEmpty ? "" : "WHERE " + clauses.joined(separator: " AND ")
            return try Row.fetchAll(
                db, sql: "SELECT * FROM verifications \(filter) ORDER BY created_at, id LIMIT ?", arguments: arguments
            ).map(Self.verification(from:))
        }
    }

    public func verificationForJob(jobId: String) async throws -> (VerificationRecord, evidence: String)? {
        try await read { db in
            try Self.submission(db, where: "v.job_id = ?", jobId).map { ($0.record, $0.evidence) }
        }
    }

    static func submission(_ db: Database, verificationId: String) throws -> SubmittedVerification? {
        try submission(db, where: "v.id = ?", verificationId)
    }

    private static func submission(_ db: Database, where condition: String, _ key: String) throws -> SubmittedVerification? {
        guard
            let row = try Row.fetchOne(
                db.cachedStatement(
                    sql: """
                        SELECT v.*, r.data AS receipt_data FROM verifications v
                        JOIN receipts r ON r.app_id = v.app_id AND r.hash = v.receipt_hash
                        WHERE \(condition)
                        """), arguments: [key])
        else { return nil }
        return SubmittedVerification(record: try verification(from: row), evidence: row["receipt_data"])
    }

    public func provisionalGrants(appId: String, appUserId: String, now: Date) async throws -> [ProvisionalGrant] {
        try await read { db in try Self.provisionalGrants(db, appId: appId, appUserId: appUserId, now: now) }
    }

    static func provisionalGrants(_ db: Database, appId: String, appUserId: String, now: Date) throws -> [ProvisionalGrant] {
        try Row.fetchAll(
            db.cachedStatement(
                sql: """
                    SELECT * FROM provisional_grants WHERE app_id = ? AND app_user_id = ? AND expires_at > ?
                    ORDER BY product_id, transaction_id
                    """), arguments: [appId, appUserId, StoredTime.ms(now)]
        ).map(provisionalGrant(from:))
    }

    /// Provisional grants one verification gave, expired or not.
    static func provisionalGrants(_ db: Database, verificationId: String) throws -> [ProvisionalGrant] {
        try Row.fetchAll(
            db.cachedStatement(sql: "SELECT * FROM provisional_grants WHERE verification_id = ? ORDER BY transaction_id"), arguments: [verificationId]
        ).map(provisionalGrant(from:))
    }

    static func provisionalGrant(from row: Row) -> ProvisionalGrant {
        ProvisionalGrant(
            appId: row["app_id"], appUserId: row["app_user_id"], verificationId: row["verification_id"],
            transactionId: row["transaction_id"], originalTransactionId: row["original_transaction_id"],
            productId: row["product_id"], expiresAt: StoredTime.date(row["expires_at"] as Int64))
    }

    public func withQueued<T: Sendable>(
        _ selection: QueuedSelection, now: Date, _ decide: @escaping @Sendable ([QueuedVerification]) throws -> QueuedDecision<T>
    ) async throws -> T {
        let (result, changed) = try await pool.write { db -> (T, [String]) in
            let select = "SELECT v.*, j.state AS job_state, j.lease_expires_at FROM verifications v JOIN jobs j ON j.id = v.job_id"
            let rows: [Row]
            switch selection {
            case .verification(let id):
                rows = try Row.fetchAll(db.cachedStatement(sql: "\(select) WHERE v.id = ?"), arguments: [id])
            case .heldUnder(let appId, let state, let fingerprint):
                rows = try Row.fetchAll(
                    db.cachedStatement(
                        sql: """
                            \(select) WHERE v.app_id = ? AND v.state = ? AND (v.config_fingerprint IS NULL OR v.config_fingerprint != ?)
                            ORDER BY v.created_at, v.id
                            """), arguments: [appId, state.rawValue, fingerprint])
            }
            let queued = try rows.map { row in
                QueuedVerification(
                    verification: try Self.verification(from: row), jobState: try JobState.stored(row["job_state"], column: "jobs.state"),
                    leaseExpiresAt: StoredTime.date(row["lease_expires_at"] as Int64?))
            }
            let decision = try decide(queued)
            for write in decision.writes {
                switch write {
                case .verification(let change): try Self.change(db, change, now: now)
                case .job(let id, let transition): try Self.moveJob(db, id: id, transition, now: now)
                case .audit(let entry): try Self.recordAudit(db, entry)
                }
            }
            return (decision.result, decision.changedVerifications)
        }
        for id in changed { verificationWatch.notify(id) }
        return result
    }

    /// A job moved outside any lease: due at the transition's run time, lease and finalization
    /// cleared. From `running`, only once the lease has expired.
    static func moveJob(_ db: Database, id: String, _ transition: JobLifecycle.Transition, now: Date) throws {
        try db.cachedStatement(
            sql: """
                UPDATE jobs SET state = ?, run_at = COALESCE(?, run_at), finalized_at = NULL, lease_token = NULL, lease_owner = NULL,
                    lease_expires_at = NULL
                WHERE id = ? AND state = ? AND (state != ? OR lease_expires_at <= ?)
                """
        ).execute(arguments: [
            transition.to.rawValue, StoredTime.ms(transition.runAt), id, transition.from.rawValue, JobState.running.rawValue,
            StoredTime.ms(now),
        ])
        guard db.changesCount == 1 else { throw StorageConflict("job \(id) is no longer \(transition.from)") }
    }

    public func verificationCounts() async throws -> [VerificationState: Int] {
        try await read { db in
            var counts: [VerificationState: Int] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT state, COUNT(*) AS n FROM verifications GROUP BY state") {
                if let state = VerificationState(rawValue: row["state"]) { counts[state] = row["n"] }
            }
            return counts
        }
    }

    public func countVerifications(states: [VerificationState], createdBefore: Date) async throws -> Int {
        guard !states.isEmpty else { return 0 }
        return try await read { db in
            try Int.fetchOne(
                db, sql: "SELECT COUNT(*) FROM verifications WHERE state IN (\(placeholders(states.count))) AND created_at < ?",
                arguments: StatementArguments(states.map(\.rawValue)) + [StoredTime.ms(createdBefore)]) ?? 0
        }
    }

    // MARK: Helpers

    /// Writes a change the verification state machine decided, guarded by its `from` state.
    static func change(_ db: Database, _ change: VerificationChange, now: Date) throws {
        let nowMs = StoredTime.ms(now)
        if change.restarts {
            try db.cachedStatement(
                sql: """
                    UPDATE verifications SET state = ?, next_attempt_at = NULL, finalized_at = NULL, updated_at = ?
                    WHERE id = ? AND state = ?
                    """
            ).execute(arguments: [change.to.rawValue, nowMs, change.id, change.from.rawValue])
            guard db.changesCount == 1 else { throw StorageConflict("verification \(change.id) is no longer \(change.from)") }
            return
        }
        guard let report = change.report else {
            try db.cachedStatement(
                sql: "UPDATE verifications SET state = ?, attempts = COALESCE(?, attempts), updated_at = ? WHERE id = ? AND state = ?"
            ).execute(arguments: [change.to.rawValue, change.attempts, nowMs, change.id, change.from.rawValue])
            guard db.changesCount == 1 else { throw StorageConflict("verification \(change.id) is no longer \(change.from)") }
            return
        }
        let previous = try String.fetchOne(db.cachedStatement(sql: "SELECT apple_statuses FROM verifications WHERE id = ?"), arguments: [change.id])
        let statuses = (StoredJSON.decode([Int].self, previous) ?? []) + report.statuses
        try db.cachedStatement(
            sql: """
                UPDATE verifications SET state = ?, attempts = COALESCE(?, attempts), reason = ?, apple_statuses = ?,
                    environment = COALESCE(?, environment), next_attempt_at = ?, updated_at = ?, finalized_at = ?,
                    grant_summary = COALESCE(?, grant_summary), config_fingerprint = COALESCE(?, config_fingerprint)
                WHERE id = ? AND state = ?
                """
        ).execute(arguments: [
            change.to.rawValue, change.attempts, report.reason?.rawValue, StoredJSON.encode(statuses), report.environment,
            StoredTime.ms(change.nextAttemptAt), nowMs, change.finalizes ? nowMs : nil, change.grant.map { StoredJSON.encode($0) },
            change.configurationFingerprint, change.id, change.from.rawValue,
        ])
        guard db.changesCount == 1 else { throw StorageConflict("verification \(change.id) is no longer \(change.from)") }
    }

    static func verification(from row: Row) throws -> VerificationRecord {
        VerificationRecord(
            id: row["id"], appId: row["app_id"], appUserId: row["app_user_id"], receiptHash: row["receipt_hash"],
            jobId: row["job_id"], state: try VerificationState.stored(row["state"], column: "verifications.state"),
            reason: (row["reason"] as String?).map(FailureReason.init(rawValue:)),
            attempts: row["attempts"], appleStatuses: StoredJSON.decode([Int].self, row["apple_statuses"]) ?? [],
            environment: row["environment"], nextAttemptAt: StoredTime.date(row["next_attempt_at"] as Int64?),
            grant: StoredJSON.decode(GrantSummary.self, row["grant_summary"]), createdAt: StoredTime.date(row["created_at"] as Int64),
            updatedAt: StoredTime.date(row["updated_at"] as Int64), finalizedAt: StoredTime.date(row["finalized_at"] as Int64?))
    }
}
