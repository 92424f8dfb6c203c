public import Foundation
import GRDB
public import Persistence
public import StorekeeperDomain

extension SQLiteStore: ExperimentStore {
    public func experiments(appId: String) async throws -> [Experiment] {
        try await read { db in
            try String.fetchAll(
                db.cachedStatement(sql: "SELECT body FROM experiments WHERE app_id = ? ORDER BY experiment_id"), arguments: [appId]
            ).compactMap { StoredJSON.decode(Experiment.self, $0) }
        }
    }

    public func createExperiment(appId: String, experiment: Experiment, audit: AuditEntry, now: Date) async throws -> Bool {
        try await write { db in
            try db.execute(
                sql: """
                    INSERT INTO experiments (app_id, experiment_id, body, created_at, updated_at) VALUES (?, ?, ?, ?, ?)
                    ON CONFLICT DO NOTHING
                    """,
                arguments: [appId, experiment.id, StoredJSON.encode(experiment), StoredTime.ms(now), StoredTime.ms(now)])
            guard db.changesCount == 1 else { return false }
            try Self.recordAudit(db, audit)
            return true
        }
    }

    public func stopExperiment(appId: String, experimentId: String, audit: AuditEntry, now: Date) async throws -> Bool {
        try await write { db in
            let stopped = try Self.changeExperiment(db, appId: appId, experimentId: experimentId, now: now) { experiment in
                guard experiment.stoppedAt == nil else { return false }
                experiment.stoppedAt = now
                return true
            }
            if stopped { try Self.recordAudit(db, audit) }
            return stopped
        }
    }

    public func shipExperiment(
        appId: String, experimentId: String, arm: Int, targeting: OfferingTargeting, audit: AuditEntry, now: Date
    ) async throws -> Bool {
        try await write { db in
            let shipped = try Self.changeExperiment(db, appId: appId, experimentId: experimentId, now: now) { experiment in
                guard experiment.shippedArm == nil else { return false }
                experiment.shippedArm = arm
                experiment.stoppedAt = experiment.stoppedAt ?? now
                return true
            }
            guard shipped else { return false }
            try Self.writeTargeting(db, appId: appId, targeting: targeting, now: now, replace: true)
            try Self.recordAudit(db, audit)
            return true
        }
    }

    /// Applies `change` to the stored experiment and writes it back (its stop in its column
    /// too); false, nothing written, when there is none or `change` refuses.
    static func changeExperiment(
        _ db: Database, appId: String, experimentId: String, now: Date, _ change: (inout Experiment) -> Bool
    ) throws -> Bool {
        let body = try String.fetchOne(
            db, sql: "SELECT body FROM experiments WHERE app_id = ? AND experiment_id = ?", arguments: [appId, experimentId])
        guard var experiment = StoredJSON.decode(Experiment.self, body), change(&experiment) else { return false }
        try db.execute(
            sql: "UPDATE experiments SET body = ?, updated_at = ?, stopped_at = ? WHERE app_id = ? AND experiment_id = ?",
            arguments: [StoredJSON.encode(experiment), StoredTime.ms(now), experiment.stoppedAt.map(StoredTime.ms), appId, experimentId])
        return true
    }

    public func enrollment(appId: String, experimentId: String, appUserIds: [String]) async throws -> ExperimentEnrollment? {
        guard !appUserIds.isEmpty else { return nil }
        return try await read { db in
            try Row.fetchOne(
                db,
                sql: """
                    SELECT experiment_id, app_user_id, arm, offering, enrolled_at FROM experiment_enrollments
                    WHERE app_id = ? AND experiment_id = ? AND app_user_id IN (\(placeholders(appUserIds.count)))
                    ORDER BY enrolled_at, app_user_id LIMIT 1
                    """,
                arguments: StatementArguments([appId, experimentId] + appUserIds)
            ).map(Self.enrollment(from:))
        }
    }

    public func enroll(appId: String, _ enrollment: ExperimentEnrollment, events: EventBatch) async throws -> ExperimentEnrollment {
        try await write { db in
            try db.execute(
                sql: """
                    INSERT INTO experiment_enrollments (app_id, experiment_id, app_user_id, arm, offering, enrolled_at)
                    VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING
                    """,
                arguments: [
                    appId, enrollment.experimentId, enrollment.appUserId, enrollment.arm, enrollment.offering,
                    StoredTime.ms(enrollment.enrolledAt),
                ])
            if db.changesCount == 1 { try Self.record(events, db: db, now: enrollment.enrolledAt) }
            return try Row.fetchOne(
                db,
                sql: """
                    SELECT experiment_id, app_user_id, arm, offering, enrolled_at FROM experiment_enrollments
                    WHERE app_id = ? AND experiment_id = ? AND app_user_id = ?
                    """,
                arguments: [appId, enrollment.experimentId, enrollment.appUserId]
            ).map(Self.enrollment(from:)) ?? enrollment
        }
    }

    public func experimentCohort(
        appId: String, experimentId: String, environment: String?
    ) async throws -> (
        enrollments: [ExperimentEnrollment], ledger: [LedgerEntry]
    ) {
        try await read { db in
            let enrollments = try Row.fetchAll(
                db,
                sql: """
                    SELECT e.experiment_id, COALESCE(a.app_user_id, e.app_user_id) AS app_user_id, e.arm, e.offering, e.enrolled_at
                    FROM experiment_enrollments e LEFT JOIN aliases a ON a.app_id = e.app_id AND a.alias_id = e.app_user_id
                    WHERE e.app_id = ? AND e.experiment_id = ? ORDER BY e.enrolled_at, e.app_user_id
                    """,
                arguments: [appId, experimentId]
            ).map(Self.enrollment(from:))
            let ledger = try Row.fetchAll(
                db,
                sql: """
                    SELECT * FROM ledger WHERE app_id = ? AND (? IS NULL OR environment = ?)
                      AND app_user_id IN (
                        SELECT COALESCE(a.app_user_id, e.app_user_id)
                        FROM experiment_enrollments e LEFT JOIN aliases a ON a.app_id = e.app_id AND a.alias_id = e.app_user_id
                        WHERE e.app_id = ? AND e.experiment_id = ?)
                    ORDER BY purchase_date, transaction_id, event
                    """,
                arguments: [appId, environment, environment, appId, experimentId]
            ).map(Self.ledgerEntry(from:))
            return (enrollments, ledger)
        }
    }

    static func enrollment(from row: Row) -> ExperimentEnrollment {
        ExperimentEnrollment(
            experimentId: row["experiment_id"], appUserId: row["app_user_id"], arm: row["arm"], offering: row["offering"],
            enrolledAt: StoredTime.date(row["enrolled_at"] as Int64))
    }
}
