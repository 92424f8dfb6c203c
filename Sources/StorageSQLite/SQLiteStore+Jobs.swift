public import Foundation
import GRDB
public import JobQueue
import Persistence

extension SQLiteStore: JobStore {
    public func leaseJobs(
        kinds: [String], limit: Int, owner: String, now: Date, leaseDuration: TimeInterval
    ) async throws
        -> [JobLease]
    {
        guard !kinds.isEmpty, limit > 0 else { return [] }
        let token = UUID().uuidString
        let nowMs = StoredTime.ms(now)
        let expires = now.addingTimeInterval(leaseDuration)
        return try await pool.write { db in
            // Due jobs, and running jobs whose holder let the lease expire (presumed dead).
            var arguments: StatementArguments = [token, owner, StoredTime.ms(expires)]
            arguments += StatementArguments(kinds)
            arguments += [nowMs]
            arguments += StatementArguments(kinds)
            arguments += [nowMs, limit]
            let rows = try Row.fetchAll(
                db.cachedStatement(
                    sql: """
                        UPDATE jobs SET state = 'running', attempt = attempt + 1, lease_token = ?, lease_owner = ?,
                            lease_expires_at = ?
                        WHERE id IN (
                            SELECT id FROM (
                                SELECT id, run_at AS due FROM jobs
                                WHERE state = 'available' AND kind IN (\(placeholders(kinds.count))) AND run_at <= ?
                                UNION ALL
                                SELECT id, lease_expires_at AS due FROM jobs
                                WHERE state = 'running' AND kind IN (\(placeholders(kinds.count))) AND lease_expires_at <= ?
                            ) ORDER BY due LIMIT ?
                        )
                        RETURNING id, kind, payload, attempt, created_at
                        """), arguments: arguments)
            return rows.map { row in
                JobLease(
                    jobId: row["id"], kind: row["kind"], payload: row["payload"], attempt: row["attempt"], token: token,
                    expiresAt: expires, createdAt: StoredTime.date(row["created_at"] as Int64))
            }
        }
    }

    public func endAttempt(_ lease: JobLease, _ transition: JobLifecycle.Transition, now: Date) async throws -> Bool {
        try await write(priority: .work) { db in try Self.endAttempt(db, lease, transition, now: now) }
    }

    public func releaseJob(_ lease: JobLease, now: Date) async throws -> Bool {
        try await write(priority: .work) { db in
            let release = JobLifecycle.ending(.released(at: now, reason: releasedReason))
            return try Self.endAttempt(db, lease, release, now: now)
        }
    }

    public func leaseOwners() async throws -> [String] {
        try await read { db in
            try String.fetchAll(db, sql: "SELECT DISTINCT lease_owner FROM jobs WHERE state = 'running' AND lease_owner IS NOT NULL")
        }
    }

    public func releaseLeases(owner: String, now: Date) async throws -> Int {
        try await pool.write { db in
            try db.cachedStatement(sql: "UPDATE jobs SET lease_expires_at = ? WHERE state = 'running' AND lease_owner = ? AND lease_expires_at > ?")
                .execute(arguments: [StoredTime.ms(now), owner, StoredTime.ms(now)])
            return db.changesCount
        }
    }

    public func releaseWaitingJobs(kinds: [String], now: Date, perSecond: Double?) async throws -> Int {
        guard !kinds.isEmpty else { return 0 }
        let nowMs = StoredTime.ms(now)
        return try await pool.write { db in
            if let perSecond, perSecond > 0 {
                try db.execute(
                    sql: """
                        UPDATE jobs SET run_at = ? + CAST(waiting.n * ? AS INTEGER)
                        FROM (
                            SELECT id, ROW_NUMBER() OVER (ORDER BY created_at, id) - 1 AS n FROM jobs
                            WHERE state = 'available' AND run_at > ? AND kind IN (\(placeholders(kinds.count)))
                        ) AS waiting
                        WHERE jobs.id = waiting.id
                        """,
                    arguments: [nowMs, 1_000 / perSecond, nowMs] + StatementArguments(kinds))
            } else {
                try db.execute(
                    sql: """
                        UPDATE jobs SET run_at = MIN(created_at, ?)
                        WHERE state = 'available' AND run_at > ? AND kind IN (\(placeholders(kinds.count)))
                        """,
                    arguments: [nowMs, nowMs] + StatementArguments(kinds))
            }
            return db.changesCount
        }
    }

    public func nextJobDue() async throws -> Date? {
        try await read { db in
            let available = try Int64.fetchOne(db.cachedStatement(sql: "SELECT MIN(run_at) FROM jobs WHERE state = 'available'"))
            let expiring = try Int64.fetchOne(db.cachedStatement(sql: "SELECT MIN(lease_expires_at) FROM jobs WHERE state = 'running'"))
            return [available, expiring].compactMap { $0 }.min().map(StoredTime.date)
        }
    }

    public func jobCounts() async throws -> [JobState: Int] {
        try await read { db in
            var counts: [JobState: Int] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT state, COUNT(*) AS n FROM jobs GROUP BY state") {
                if let state = JobState(rawValue: row["state"]) { counts[state] = row["n"] }
            }
            return counts
        }
    }

    // MARK: Guarded writes, used inside larger transactions too

    /// True when `lease` still holds its job. Every write made on behalf of a lease checks this
    /// inside its own transaction.
    static func holdsLease(_ db: Database, _ lease: JobLease) throws -> Bool {
        try Bool.fetchOne(
            db.cachedStatement(sql: "SELECT 1 FROM jobs WHERE id = ? AND state = 'running' AND lease_token = ?"),
            arguments: [lease.jobId, lease.token]) ?? false
    }

    /// Writes a transition of the job state machine for the job `lease` holds.
    static func endAttempt(_ db: Database, _ lease: JobLease, _ transition: JobLifecycle.Transition, now: Date) throws -> Bool {
        // Cached: every finished job runs it, and compiling it costs more than running it.
        try db.cachedStatement(
            sql: """
                UPDATE jobs SET state = ?, run_at = COALESCE(?, run_at), attempt = attempt - ?, finalized_at = ?, last_error = ?,
                    lease_token = NULL, lease_owner = NULL, lease_expires_at = NULL
                WHERE id = ? AND state = ? AND lease_token = ?
                """
        ).execute(
            arguments: [
                transition.to.rawValue, StoredTime.ms(transition.runAt), transition.uncountsAttempt ? 1 : 0,
                transition.finalizes ? StoredTime.ms(now) : nil, transition.lastError, lease.jobId, transition.from.rawValue, lease.token,
            ])
        return db.changesCount == 1
    }
}
