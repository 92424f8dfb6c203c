public import Foundation
public import Persistence
import PostgresNIO

extension PostgresStore {
    public func recordGapFillRun(_ run: GapFillRun) async throws {
        let logger = self.logger
        let oldest = StoredTime.ms(run.startedAt.addingTimeInterval(-GapFillRun.keptSeconds))
        try await transaction { connection in
            try await connection.execute("DELETE FROM gap_fill_runs WHERE started_at < \(oldest)", logger: logger)
            try await connection.execute(
                """
                INSERT INTO gap_fill_runs (app_id, started_at, window_from, window_to, cause, examined, recovered, duplicates, failed, pages, error)
                VALUES (\(run.appId), \(StoredTime.ms(run.startedAt)), \(StoredTime.ms(run.from)), \(StoredTime.ms(run.to)), \(run.cause),
                    \(Int64(run.examined)), \(Int64(run.recovered)), \(Int64(run.duplicates)), \(Int64(run.failed)), \(Int64(run.pages)), \(run.error))
                """, logger: logger)
        }
    }

    public func gapFillRuns(since: Date, limit: Int) async throws -> [GapFillRun] {
        let logger = self.logger
        let sinceMs = StoredTime.ms(since)
        return try await read { connection in
            try await connection.rows(
                "SELECT * FROM gap_fill_runs WHERE started_at >= \(sinceMs) ORDER BY started_at DESC, id DESC LIMIT \(limit)", logger: logger
            ).map { row in
                GapFillRun(
                    cause: try row.value("cause"), appId: try row.value("app_id"), startedAt: try row.date("started_at"),
                    from: try row.date("window_from"), to: try row.date("window_to"), examined: Int(try row.value("examined", as: Int64.self)),
                    recovered: Int(try row.value("recovered", as: Int64.self)), duplicates: Int(try row.value("duplicates", as: Int64.self)),
                    failed: Int(try row.value("failed", as: Int64.self)), pages: Int(try row.value("pages", as: Int64.self)),
                    error: try row.value("error", as: String?.self))
            }
        }
    }
}
