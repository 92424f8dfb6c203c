public import Foundation
import GRDB
public import Persistence

extension SQLiteStore {
    public func recordGapFillRun(_ run: GapFillRun) async throws {
        try await pool.write { db in
            try db.execute(
                sql: "DELETE FROM gap_fill_runs WHERE started_at < ?",
                arguments: [StoredTime.ms(run.startedAt.addingTimeInterval(-GapFillRun.keptSeconds))])
            try db.execute(
                sql: """
                    INSERT INTO gap_fill_runs (app_id, started_at, window_from, window_to, cause, examined, recovered, duplicates, failed, pages, error)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    run.appId, StoredTime.ms(run.startedAt), StoredTime.ms(run.from), StoredTime.ms(run.to), run.cause, run.examined, run.recovered,
                    run.duplicates, run.failed, run.pages, run.error,
                ])
        }
    }

    public func gapFillRuns(since: Date, limit: Int) async throws -> [GapFillRun] {
        try await read { db in
            try Row.fetchAll(
                db, sql: "SELECT * FROM gap_fill_runs WHERE started_at >= ? ORDER BY started_at DESC, id DESC LIMIT ?",
                arguments: [StoredTime.ms(since), limit]
            ).map { row in
                GapFillRun(
                    cause: row["cause"], appId: row["app_id"], startedAt: StoredTime.date(row["started_at"] as Int64),
                    from: StoredTime.date(row["window_from"] as Int64), to: StoredTime.date(row["window_to"] as Int64), examined: row["examined"],
                    recovered: row["recovered"], duplicates: row["duplicates"], failed: row["failed"], pages: row["pages"], error: row["error"])
            }
        }
    }
}
