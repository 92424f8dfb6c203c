public import Foundation
import Logging
public import Persistence
import PostgresNIO
public import StorekeeperDomain

extension PostgresStore: ExperimentStore {
    public func experiments(appId: String) async throws -> [Experiment] {
        try await read { connection in
            try await connection.rows("SELECT body FROM experiments WHERE app_id = \(appId) ORDER BY experiment_id", logger: self.logger)
                .compactMap { StoredJSON.decode(Experiment.self, try $0.value("body", as: String.self)) }
        }
    }

    public func createExperiment(appId: String, experiment: Experiment, audit: AuditEntry, now: Date) async throws -> Bool {
        try await transaction { connection in
            guard
                try await connection.count(
                    """
                    INSERT INTO experiments (app_id, experiment_id, body, created_at, updated_at)
                    VALUES (\(appId), \(experiment.id), \(StoredJSON.encode(experiment)), \(StoredTime.ms(now)), \(StoredTime.ms(now)))
                    ON CONFLICT DO NOTHING RETURNING 1
                    """, logger: self.logger) == 1
            else { return false }
            try await Self.recordAudit(connection, audit, logger: self.logger)
            return true
        }
    }

    public func stopExperiment(appId: String, experimentId: String, audit: AuditEntry, now: Date) async throws -> Bool {
        try await transaction { connection in
            let stopped = try await self.changeExperiment(connection, appId: appId, experimentId: experimentId, now: now) { experiment in
                guard experiment.stoppedAt == nil else { return false }
                experiment.stoppedAt = now
                return true
            }
            if stopped { try await Self.recordAudit(connection, audit, logger: self.logger) }
            return stopped
        }
    }

    public func shipExperiment(
        appId: String, experimentId: String, arm: Int, targeting: OfferingTargeting, audit: AuditEntry, now: Date
    ) async throws -> Bool {
        try await transaction { connection in
            let shipped = try await self.changeExperiment(connection, appId: appId, experimentId: experimentId, now: now) { experiment in
                guard experiment.shippedArm == nil else { return false }
                experiment.shippedArm = arm
                experiment.stoppedAt = experiment.stoppedAt ?? now
                return true
            }
            guard shipped else { return false }
            try await Self.writeTargeting(connection, appId: appId, targeting: targeting, now: now, replace: true, logger: self.logger)
            try await Self.recordAudit(connection, audit, logger: self.logger)
            return true
        }
    }

    /// Locks the stored experiment, applies `change` and writes it back (its stop in its column
    /// too); false, nothing written, when there is none or `change` refuses.
    func changeExperiment(
        _ connection: PostgresConnection, appId: String, experimentId: String, now: Date, _ change: (inout Experiment) -> Bool
    ) async throws -> Bool {
        let row = try await connection.rows(
            "SELECT body FROM experiments WHERE app_id = \(appId) AND experiment_id = \(experimentId) FOR UPDATE", logger: logger
        ).first
        guard var experiment = try row.flatMap({ StoredJSON.decode(Experiment.self, try $0.value("body", as: String.self)) }), change(&experiment)
        else { return false }
        try await connection.execute(
            """
            UPDATE experiments SET body = \(StoredJSON.encode(experiment)), updated_at = \(StoredTime.ms(now)),
                stopped_at = \(experiment.stoppedAt.map(StoredTime.ms))
            WHERE app_id = \(appId) AND experiment_id = \(experimentId)
            """, logger: logger)
        return true
    }

    public func enrollment(appId: String, experimentId: String, appUserIds: [String]) async throws -> ExperimentEnrollment? {
        try await read { connection in
            try await connection.rows(
                """
                SELECT experiment_id, app_user_id, arm, offering, enrolled_at FROM experiment_enrollments
                WHERE app_id = \(appId) AND experiment_id = \(experimentId) AND app_user_id = ANY(\(appUserIds))
                ORDER BY enrolled_at, app_user_id LIMIT 1
                """, logger: self.logger
            ).first.map(Self.enrollment(from:))
        }
    }

    public func enroll(appId: String, _ enrollment: ExperimentEnrollment, events: EventBatch) async throws -> ExperimentEnrollment {
        try await transaction { connection in
            let inserted = try await connection.count(
                """
                INSERT INTO experiment_enrollments (app_id, experiment_id, app_user_id, arm, offering, enrolled_at)
                VALUES (\(appId), \(enrollment.experimentId), \(enrollment.appUserId), \(enrollment.arm), \(enrollment.offering),
                    \(StoredTime.ms(enrollment.enrolledAt)))
                ON CONFLICT (app_id, experiment_id, app_user_id) DO NOTHING RETURNING 1
                """, logger: self.logger)
            if inserted == 1 { try await Self.record(events, connection: connection, now: enrollment.enrolledAt, logger: self.logger) }
            return try await connection.rows(
                """
                SELECT experiment_id, app_user_id, arm, offering, enrolled_at FROM experiment_enrollments
                WHERE app_id = \(appId) AND experiment_id = \(enrollment.experimentId) AND app_user_id = \(enrollment.appUserId)
                """, logger: self.logger
            ).first.map(Self.enrollment(from:)) ?? enrollment
        }
    }

    public func experimentCohort(
        appId: String, experimentId: String, environment: String?
    ) async throws -> (
        enrollments: [ExperimentEnrollment], ledger: [LedgerEntry]
    ) {
        try await transaction { connection in
            try await connection.execute("SET TRANSACTION READ ONLY", logger: self.logger)
            let enrollments = try await connection.rows(
                """
                SELECT e.experiment_id, COALESCE(a.app_user_id, e.app_user_id) AS app_user_id, e.arm, e.offering, e.enrolled_at
                FROM experiment_enrollments e LEFT JOIN aliases a ON a.app_id = e.app_id AND a.alias_id = e.app_user_id
                WHERE e.app_id = \(appId) AND e.experiment_id = \(experimentId) ORDER BY e.enrolled_at, e.app_user_id
                """, logger: self.logger
            ).map(Self.enrollment(from:))
            let ledger = try await connection.rows(
                """
                SELECT * FROM ledger WHERE app_id = \(appId) AND (\(environment)::text IS NULL OR environment = \(environment))
                  AND app_user_id IN (
                    SELECT COALESCE(a.app_user_id, e.app_user_id)
                    FROM experiment_enrollments e LEFT JOIN aliases a ON a.app_id = e.app_id AND a.alias_id = e.app_user_id
                    WHERE e.app_id = \(appId) AND e.experiment_id = \(experimentId))
                ORDER BY purchase_date, transaction_id, event
                """, logger: self.logger
            ).map(Self.ledgerEntry(from:))
            return (enrollments, ledger)
        }
    }

    static func enrollment(from row: PostgresRandomAccessRow) throws -> ExperimentEnrollment {
        ExperimentEnrollment(
            experimentId: try row.value("experiment_id"), appUserId: try row.value("app_user_id"),
            arm: Int(try row.value("arm", as: Int64.self)), offering: try row.value("offering"),
            enrolledAt: StoredTime.date(try row.value("enrolled_at", as: Int64.self)))
    }
}
