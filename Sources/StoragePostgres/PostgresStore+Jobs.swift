public import Foundation
public import JobQueue
import Logging
import Persistence
import PostgresNIO

extension PostgresStore: JobStore {
    public func leaseJobs(
        kinds: [String], limit: Int, owner: String, now: Date, leaseDuration: TimeInterval
    ) async throws -> [JobLease] {
        guard !kinds.isEmpty, limit > 0 else { return [] }
        let token = UUID().uuidString
        let nowMs = StoredTime.ms(now)
        let expires = now.addingTimeInterval(leaseDuration)
        let expiresMs = StoredTime.ms(expires)
        return try await transaction(on: .work) { connection in
            // Due jobs, and running jobs whose holder let the lease expire (presumed dead): this
            // statement is also the rescuer. SKIP LOCKED lets many workers lease at once without
            // waiting on each other or taking the same job; a job whose holder is inside its
            // completion transaction is row-locked and therefore skipped, never stolen midway.
            let rows = try await connection.rows(
                """
                WITH due AS (
                    SELECT id FROM jobs
                    WHERE kind = ANY(\(kinds))
                      AND ((state = 'available' AND run_at <= \(nowMs)) OR (state = 'running' AND lease_expires_at <= \(nowMs)))
                    ORDER BY CASE WHEN state = 'available' THEN run_at ELSE lease_expires_at END
                    LIMIT \(limit)
                    FOR UPDATE SKIP LOCKED
                )
                UPDATE jobs j SET state = 'running', attempt = j.attempt + 1, lease_token = \(token), lease_owner = \(owner),
                    lease_expires_at = \(expiresMs)
                FROM due WHERE j.id = due.id
                RETURNING j.id, j.kind, j.payload, j.attempt, j.created_at
                """, prepared: true, logger: logger)
            return try rows.map { row in
                JobLease(
                    jobId: try row.value("id"), kind: try row.value("kind"), payload: try row.value("payload"),
                    attempt: Int(try row.value("attempt", as: Int64.self)), token: token, expiresAt: expires,
                    createdAt: try row.date("created_at"))
            }
        }
    }

    public func endAttempt(_ lease: JobLease, _ transition: JobLifecycle.Transition, now: Date) async throws -> Bool {
        try await transaction(on: .work) { connection in try await Self.endAttempt(connection, lease, transition, now: now, logger: self.logger) }
    }

    public func releaseJob(_ lease: JobLease, now: Date) async throws -> Bool {
        try await transaction(on: .work) { connection in
            let release = JobLifecycle.ending(.released(at: now, reason: releasedReason))
            return try await Self.endAttempt(connection, lease, release, now: now, logger: self.logger)
        }
    }

    public func leaseOwners() async throws -> [String] {
        try await read(on: .work) { connection in
            try await connection.rows(
                "SELECT DISTINCT lease_owner FROM jobs WHERE state = 'running' AND lease_owner IS NOT NULL", logger: self.logger
            ).map { try $0.value("lease_owner", as: String.self) }
        }
    }

    public func releaseLeases(owner: String, now: Date) async throws -> Int {
        try await transaction(on: .work) { connection in
            try await connection.count(
                """
                UPDATE jobs SET lease_expires_at = \(StoredTime.ms(now))
                WHERE state = 'running' AND lease_owner = \(owner) AND lease_expires_at > \(StoredTime.ms(now))
                RETURNING 1
                """, logger: self.logger)
        }
    }

    public func releaseWaitingJobs(kinds: [String], now: Date, perSecond: Double?) async throws -> Int {
        guard !kinds.isEmpty else { return 0 }
        let nowMs = StoredTime.ms(now)
        return try await transaction(on: .work) { connection in
            let released: Int
            if let perSecond, perSecond > 0 {
                // `state = 'available'` again outside the subquery: a row another process leased
                // meanwhile is re-checked after its lock and left alone.
                let millisecondsApart = 1_000 / perSecond
                released = try await connection.count(
                    """
                    UPDATE jobs SET run_at = \(nowMs) + CAST(FLOOR(waiting.n * \(millisecondsApart)::float8) AS BIGINT)
                    FROM (
                        SELECT id, ROW_NUMBER() OVER (ORDER BY created_at, id) - 1 AS n FROM jobs
                        WHERE state = 'available' AND run_at > \(nowMs) AND kind = ANY(\(kinds))
                    ) AS waiting
                    WHERE jobs.id = waiting.id AND jobs.state = 'available' AND jobs.run_at > \(nowMs)
                    RETURNING 1
                    """, logger: self.logger)
            } else {
                released = try await connection.count(
                    """
                    UPDATE jobs SET run_at = LEAST(created_at, \(nowMs))
                    WHERE state = 'available' AND run_at > \(nowMs) AND kind = ANY(\(kinds))
                    RETURNING 1
                    """, logger: self.logger)
            }
            if released > 0 { QueuedJobs.note() }
            return released
        }
    }

    public func nextJobDue() async throws -> Date? {
        try await read(on: .work) { connection in
            let rows = try await connection.rows(
                """
                SELECT (SELECT MIN(run_at) FROM jobs WHERE state = 'available') AS available,
                       (SELECT MIN(lease_expires_at) FROM jobs WHERE state = 'running') AS expiring
                """, logger: self.logger)
            guard let row = rows.first else { return nil }
            let times = [try row.value("available", as: Int64?.self), try row.value("expiring", as: Int64?.self)]
            return times.compactMap { $0 }.min().map(StoredTime.date)
        }
    }

    public func jobCounts() async throws -> [JobState: Int] {
        try await read { connection in
            var counts: [JobState: Int] = [:]
            for row in try await connection.rows("SELECT state, COUNT(*) AS n FROM jobs GROUP BY state", logger: self.logger) {
                if let state = JobState(rawValue: try row.value("state")) { counts[state] = Int(try row.value("n", as: Int64.self)) }
            }
            return counts
        }
    }

    // MARK: Guarded writes, used inside larger transactions too

    /// Writes a transition of the job state machine for the job `lease` holds.
    static func endAttempt(
        _ connection: PostgresConnection, _ lease: JobLease, _ transition: JobLifecycle.Transition, now: Date, logger: Logger
    ) async throws -> Bool {
        let finalizedAt: Int64? = transition.finalizes ? StoredTime.ms(now) as Int64 : nil
        let runAt: Int64? = StoredTime.ms(transition.runAt)
        let uncounted: Int64 = transition.uncountsAttempt ? 1 : 0
        return try await connection.count(
            """
            UPDATE jobs SET state = \(transition.to.rawValue), run_at = COALESCE(\(runAt), run_at),
                attempt = attempt - \(uncounted), finalized_at = \(finalizedAt),
                last_error = \(transition.lastError), lease_token = NULL, lease_owner = NULL, lease_expires_at = NULL
            WHERE id = \(lease.jobId) AND state = \(transition.from.rawValue) AND lease_token = \(lease.token)
            RETURNING 1
            """, prepared: true, logger: logger) == 1
    }
}
