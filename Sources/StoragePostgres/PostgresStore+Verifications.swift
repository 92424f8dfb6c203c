public import Foundation
import JobQueue
import Logging
public import Persistence
import PostgresNIO
public import StorekeeperDomain

extension PostgresStore {
    public func accept(_ submission: EvidenceSubmission, now: Date, decide: @escaping SubmissionDecision) async throws -> SubmissionResult {
        // Most evidence is new to its user: what the rule decides when there is no latest
        // verification is written by one statement, committed on its own (one round trip, not
        // four), guarded so that it writes nothing when the user has sent this evidence before.
        // Then, or when it fails, the transaction below reads the latest and decides again.
        // An audited submission (a refresh) writes its audit entry too: the transaction below.
        if submission.audit == nil, case .create(let pending) = decide(nil) {
            let nowMs = StoredTime.ms(now)
            let created: Bool
            do {
                created = try await statement { connection in
                    try await Self.acceptFirst(connection, submission, pending, nowMs: nowMs, logger: self.logger)
                }
            } catch  where Self.isRetryable(error) {
                created = false
            }
            if created {
                return SubmissionResult(verification: .pending(pending, submission: submission, at: StoredTime.date(nowMs)), created: true)
            }
        }
        // No lock: two API processes receiving the same post at once both try generation 1; the
        // unique key (app, receipt, user, generation) refuses the second, whose transaction is run
        // again and then finds and returns the first one's verification.
        let result = try await transaction { connection in
            try await Self.accept(connection, submission, now: now, decide: decide, logger: self.logger)
        }
        return result
    }

    /// A first submission in one statement: the evidence stored (deduplicated by hash), and the
    /// verification, its job and its claims, written only when the user has
    /// no verification of this evidence (`NOT EXISTS`, and the unique key against a concurrent
    /// twin, which then writes nothing). True when it wrote them. Unprepared: a generic plan
    /// made while the tables were empty kept scanning them as they grew (docs/BENCHMARKS.md,
    /// "Receipt ingest").
    static func acceptFirst(
        _ connection: PostgresConnection, _ submission: EvidenceSubmission, _ pending: PendingVerification, nowMs: Int64, logger: Logger
    ) async throws -> Bool {
        let hints: String? = submission.hints.isEmpty ? nil : StoredJSON.encode(submission.hints)
        let created = try await connection.count(
            """
            WITH stored AS (
                INSERT INTO receipts (app_id, hash, data, created_at)
                VALUES (\(submission.appId), \(submission.evidenceHash), \(submission.evidence.storedText), \(nowMs))
                ON CONFLICT DO NOTHING
            ), verification AS (
                INSERT INTO verifications (id, app_id, app_user_id, receipt_hash, generation, job_id, state, attempts,
                    apple_statuses, hints, created_at, updated_at)
                SELECT \(pending.id), \(submission.appId), \(submission.appUserId), \(submission.evidenceHash),
                    \(Int64(pending.generation)), \(pending.jobId), \(pending.state.rawValue), 0, '[]', \(hints), \(nowMs), \(nowMs)
                WHERE NOT EXISTS (
                    SELECT 1 FROM verifications
                    WHERE app_id = \(submission.appId) AND receipt_hash = \(submission.evidenceHash) AND app_user_id = \(submission.appUserId))
                ON CONFLICT DO NOTHING
                RETURNING id
            ), job AS (
                INSERT INTO jobs (id, kind, payload, state, attempt, run_at, created_at)
                SELECT \(pending.jobId), \(submission.evidence.jobKind), id, \(pending.jobState.rawValue), 0, \(nowMs), \(nowMs)
                FROM verification
            ), claims AS (
                INSERT INTO ownership_claims (app_id, original_transaction_id, app_user_id, verification_id, accepted_seq, claimed_at)
                SELECT \(submission.appId), o, \(submission.appUserId), v.id, s.seq, \(nowMs)
                FROM verification AS v, unnest(\(pending.claims)::text[]) AS o, (SELECT nextval('ownership_claim_seq') AS seq) AS s
                ON CONFLICT (app_id, original_transaction_id, app_user_id) DO UPDATE SET verification_id = excluded.verification_id
            )
            SELECT 1 FROM verification
            """, logger: logger)
        if created == 1 { QueuedJobs.note() }
        return created == 1
    }

    /// Four round trips in all: BEGIN, store receipt + read latest, insert job + verification,
    /// COMMIT. The job is announced once committed (`QueuedJobs`).
    static func accept(
        _ connection: PostgresConnection, _ submission: EvidenceSubmission, now: Date, decide: SubmissionDecision, logger: Logger
    ) async throws -> SubmissionResult {
        let nowMs = StoredTime.ms(now)
        let latest = try await connection.rows(
            """
            WITH stored AS (
                INSERT INTO receipts (app_id, hash, data, created_at)
                VALUES (\(submission.appId), \(submission.evidenceHash), \(submission.evidence.storedText), \(nowMs))
                ON CONFLICT DO NOTHING
            )
            SELECT * FROM verifications
            WHERE app_id = \(submission.appId) AND receipt_hash = \(submission.evidenceHash) AND app_user_id = \(submission.appUserId)
            ORDER BY generation DESC LIMIT 1
            """, logger: logger
        ).first.map { row in
            LatestSubmission(verification: try verification(from: row), generation: Int(try row.value("generation", as: Int64.self)))
        }
        let write = decide(latest)
        if case .create(let pending) = write {
            let hints: String? = submission.hints.isEmpty ? nil : StoredJSON.encode(submission.hints)
            try await connection.execute(
                """
                WITH job AS (
                    INSERT INTO jobs (id, kind, payload, state, attempt, run_at, created_at)
                    VALUES (\(pending.jobId), \(submission.evidence.jobKind), \(pending.id), \(pending.jobState.rawValue), 0, \(nowMs),
                        \(nowMs))
                ), verification AS (
                    INSERT INTO verifications (id, app_id, app_user_id, receipt_hash, generation, job_id, state, attempts,
                        apple_statuses, hints, created_at, updated_at)
                    VALUES (\(pending.id), \(submission.appId), \(submission.appUserId), \(submission.evidenceHash),
                        \(Int64(pending.generation)), \(pending.jobId), \(pending.state.rawValue), 0, '[]', \(hints), \(nowMs), \(nowMs))
                )
                SELECT 1
                """, logger: logger)
            QueuedJobs.note()
            if !pending.claims.isEmpty {
                // One sequence value for the whole submission; a refresh keeps the user's place in
                // line and follows its newest verification.
                try await connection.execute(
                    """
                    INSERT INTO ownership_claims (app_id, original_transaction_id, app_user_id, verification_id, accepted_seq, claimed_at)
                    SELECT \(submission.appId), o, \(submission.appUserId), \(pending.id), s.seq, \(nowMs)
                    FROM unnest(\(pending.claims)::text[]) AS o, (SELECT nextval('ownership_claim_seq') AS seq) AS s
                    ON CONFLICT (app_id, original_transaction_id, app_user_id) DO UPDATE SET verification_id = excluded.verification_id
                    """, logger: logger)
            }
            if var audit = submission.audit {
                audit.subject = pending.id
                try await recordAudit(connection, audit, logger: logger)
            }
        }
        guard let result = SubmissionResult.applied(write, latest: latest, submission: submission, at: StoredTime.date(nowMs)) else {
            throw StorageConflict("a submission decided to keep a verification that does not exist")
        }
        return result
    }

    public func verification(id: String) async throws -> VerificationRecord? {
        try await read { connection in
            try await connection.rows("SELECT * FROM verifications WHERE id = \(id)", logger: self.logger).first.map(Self.verification(from:))
        }
    }

    public func verifications(
        appId: String?, states: [VerificationState], createdBefore: Date?, limit: Int
    ) async throws -> [VerificationRecord] {
        try await read { connection in
            // NULL parameters switch a filter off, so the statement text stays the same.
            let stateNames: [String]? = states.isEmpty ? nil : states.map(\.rawValue)
            return try await connection.rows(
                """
                SELECT * FROM verifications
                WHERE (\(appId)::text IS NULL OR app_id = \(appId))
                  AND (\(stateNames)::text[] IS NULL OR state = ANY(\(stateNames)))
                  AND (\(StoredTime.ms(createdBefore))::bigint IS NULL OR created_at < \(StoredTime.ms(createdBefore)))
                ORDER BY created_at, id LIMIT \(limit)
                """, logger: self.logger
            ).map(Self.verification(from:))
        }
    }

    public func verificationForJob(jobId: String) async throws -> (VerificationRecord, evidence: String)? {
        try await read { connection in
            let row = try await connection.rows(
                """
                SELECT v.*, r.data AS receipt_data FROM verifications v
                JOIN receipts r ON r.app_id = v.app_id AND r.hash = v.receipt_hash
                WHERE v.job_id = \(jobId)
                """, logger: self.logger
            ).first
            return try row.map(Self.submission(from:)).map { ($0.record, $0.evidence) }
        }
    }

    static func submission(from row: some StoredRow) throws -> SubmittedVerification {
        SubmittedVerification(record: try verification(from: row), evidence: try row.value("receipt_data", as: String.self))
    }

    public func provisionalGrants(appId: String, appUserId: String, now: Date) async throws -> [ProvisionalGrant] {
        try await read { connection in
            try await Self.provisionalGrants(connection, appId: appId, appUserId: appUserId, now: now, logger: self.logger)
        }
    }

    static func provisionalGrants(
        _ connection: PostgresConnection, appId: String, appUserId: String, now: Date, logger: Logger
    ) async throws -> [ProvisionalGrant] {
        try await connection.rows(
            """
            SELECT * FROM provisional_grants
            WHERE app_id = \(appId) AND app_user_id = \(appUserId) AND expires_at > \(StoredTime.ms(now))
            ORDER BY product_id, transaction_id
            """, logger: logger
        ).map(provisionalGrant(from:))
    }

    /// Provisional grants one verification gave, expired or not.
    static func provisionalGrants(
        _ connection: PostgresConnection, verificationId: String, logger: Logger
    ) async throws -> [ProvisionalGrant] {
        try await connection.rows(
            "SELECT * FROM provisional_grants WHERE verification_id = \(verificationId) ORDER BY transaction_id", logger: logger
        ).map(provisionalGrant(from:))
    }

    static func provisionalGrant(from row: some StoredRow) throws -> ProvisionalGrant {
        ProvisionalGrant(
            appId: try row.value("app_id"), appUserId: try row.value("app_user_id"),
            verificationId: try row.value("verification_id"), transactionId: try row.value("transaction_id"),
            originalTransactionId: try row.value("original_transaction_id"), productId: try row.value("product_id"),
            expiresAt: try row.date("expires_at"))
    }

    public func withQueued<T: Sendable>(
        _ selection: QueuedSelection, now: Date, _ decide: @escaping @Sendable ([QueuedVerification]) throws -> QueuedDecision<T>
    ) async throws -> T {
        let logger = self.logger
        let channel = verificationChannel
        let (result, changed) = try await transaction { connection -> (T, [String]) in
            let rows: [PostgresRandomAccessRow]
            switch selection {
            case .verification(let id):
                rows = try await connection.rows(
                    """
                    SELECT v.*, j.state AS job_state, j.lease_expires_at FROM verifications v JOIN jobs j ON j.id = v.job_id
                    WHERE v.id = \(id) FOR UPDATE
                    """, logger: logger)
            case .heldUnder(let appId, let state, let fingerprint):
                rows = try await connection.rows(
                    """
                    SELECT v.*, j.state AS job_state, j.lease_expires_at FROM verifications v JOIN jobs j ON j.id = v.job_id
                    WHERE v.app_id = \(appId) AND v.state = \(state.rawValue)
                      AND (v.config_fingerprint IS NULL OR v.config_fingerprint <> \(fingerprint))
                    ORDER BY v.created_at, v.id FOR UPDATE
                    """, logger: logger)
            }
            let queued = try rows.map { row in
                QueuedVerification(
                    verification: try Self.verification(from: row),
                    jobState: try JobState.stored(try row.value("job_state", as: String.self), column: "jobs.state"),
                    leaseExpiresAt: StoredTime.date(try row.value("lease_expires_at", as: Int64?.self)))
            }
            let decision = try decide(queued)
            for write in decision.writes {
                switch write {
                case .verification(let change): try await Self.change(connection, change, now: now, logger: logger)
                case .job(let id, let transition):
                    try await Self.moveJob(connection, id: id, transition, now: now, logger: logger)
                case .audit(let entry): try await Self.recordAudit(connection, entry, logger: logger)
                }
            }
            // Delivered at commit to the processes holding `?wait=` answers.
            for id in decision.changedVerifications { try await connection.execute("SELECT pg_notify(\(channel), \(id))", logger: logger) }
            return (decision.result, decision.changedVerifications)
        }
        for id in changed { verificationWatch.notify(id) }
        return result
    }

    /// A job moved outside any lease: due at the transition's run time, lease and finalization
    /// cleared. From `running`, only once the lease has expired.
    static func moveJob(
        _ connection: PostgresConnection, id: String, _ transition: JobLifecycle.Transition, now: Date, logger: Logger
    ) async throws {
        let moved = try await connection.count(
            """
            UPDATE jobs SET state = \(transition.to.rawValue), run_at = COALESCE(\(StoredTime.ms(transition.runAt)), run_at),
                finalized_at = NULL, lease_token = NULL, lease_owner = NULL, lease_expires_at = NULL
            WHERE id = \(id) AND state = \(transition.from.rawValue)
              AND (state <> \(JobState.running.rawValue) OR lease_expires_at <= \(StoredTime.ms(now)))
            RETURNING 1
            """, logger: logger)
        guard moved == 1 else { throw StorageConflict("job \(id) is no longer \(transition.from)") }
        QueuedJobs.note()
    }

    public func verificationCounts() async throws -> [VerificationState: Int] {
        try await read { connection in
            var counts: [VerificationState: Int] = [:]
            for row in try await connection.rows("SELECT state, COUNT(*) AS n FROM verifications GROUP BY state", logger: self.logger) {
                if let state = VerificationState(rawValue: try row.value("state")) {
                    counts[state] = Int(try row.value("n", as: Int64.self))
                }
            }
            return counts
        }
    }

    public func countVerifications(states: [VerificationState], createdBefore: Date) async throws -> Int {
        guard !states.isEmpty else { return 0 }
        return try await read { connection in
            let rows = try await connection.rows(
                """
                SELECT COUNT(*) AS n FROM verifications
                WHERE state = ANY(\(states.map(\.rawValue))) AND created_at < \(StoredTime.ms(createdBefore))
                """, logger: self.logger)
            return Int(try rows.first?.value("n", as: Int64.self) ?? 0)
        }
    }

    // MARK: Helpers

    /// Writes a change the verification state machine decided, guarded by its `from` state.
    static func change(_ connection: PostgresConnection, _ change: VerificationChange, now: Date, logger: Logger) async throws {
        let nowMs = StoredTime.ms(now)
        let attempts: Int64? = change.attempts.map(Int64.init)
        if change.restarts {
            let changed = try await connection.count(
                """
                UPDATE verifications SET state = \(change.to.rawValue), next_attempt_at = NULL, finalized_at = NULL, updated_at = \(nowMs)
                WHERE id = \(change.id) AND state = \(change.from.rawValue)
                RETURNING 1
                """, prepared: true, logger: logger)
            guard changed == 1 else { throw StorageConflict("verification \(change.id) is no longer \(change.from)") }
            return
        }
        guard let report = change.report else {
            let changed = try await connection.count(
                """
                UPDATE verifications SET state = \(change.to.rawValue), attempts = COALESCE(\(attempts), attempts), updated_at = \(nowMs)
                WHERE id = \(change.id) AND state = \(change.from.rawValue)
                RETURNING 1
                """, prepared: true, logger: logger)
            guard changed == 1 else { throw StorageConflict("verification \(change.id) is no longer \(change.from)") }
            return
        }
        // Apple's statuses append to those kept, in the statement itself (the row is locked by
        // it): one round trip instead of a read and a write.
        let statuses = StoredJSON.encode(report.statuses)
        let finalizedAt: Int64? = change.finalizes ? nowMs : nil
        let nextAttemptMs: Int64? = StoredTime.ms(change.nextAttemptAt)
        let grantText: String? = change.grant.map { StoredJSON.encode($0) }
        let changed = try await connection.count(
            """
            UPDATE verifications SET state = \(change.to.rawValue), attempts = COALESCE(\(attempts), attempts),
                reason = \(report.reason?.rawValue),
                apple_statuses = (COALESCE(apple_statuses, '[]')::jsonb || \(statuses)::jsonb)::text,
                environment = COALESCE(\(report.environment), environment), next_attempt_at = \(nextAttemptMs),
                updated_at = \(nowMs), finalized_at = \(finalizedAt), grant_summary = COALESCE(\(grantText), grant_summary),
                config_fingerprint = COALESCE(\(change.configurationFingerprint), config_fingerprint)
            WHERE id = \(change.id) AND state = \(change.from.rawValue)
            RETURNING 1
            """, prepared: true, logger: logger)
        guard changed == 1 else { throw StorageConflict("verification \(change.id) is no longer \(change.from)") }
    }

    static func verification(from row: some StoredRow) throws -> VerificationRecord {
        VerificationRecord(
            id: try row.value("id"), appId: try row.value("app_id"), appUserId: try row.value("app_user_id"),
            receiptHash: try row.value("receipt_hash"), jobId: try row.value("job_id"),
            state: try VerificationState.stored(try row.value("state"), column: "verifications.state"),
            reason: try row.value("reason", as: String?.self).map(FailureReason.init(rawValue:)),
            attempts: Int(try row.value("attempts", as: Int64.self)),
            appleStatuses: StoredJSON.decode([Int].self, try row.value("apple_statuses", as: String.self)) ?? [],
            environment: try row.value("environment"), nextAttemptAt: try row.optionalDate("next_attempt_at"),
            grant: StoredJSON.decode(GrantSummary.self, try row.value("grant_summary", as: String?.self)),
            createdAt: try row.date("created_at"), updatedAt: try row.date("updated_at"),
            finalizedAt: try row.optionalDate("finalized_at"))
    }
}
