public import Foundation
import GRDB
import Persistence
public import StorekeeperDomain

extension SQLiteStore {
    public func addAppleCalls(_ tallies: [AppleCallTally], keptSince: Date) async throws {
        let upsert = AppleCallTable.upsert { _ in "?" }
        try await pool.write { db in
            try db.execute(sql: AppleCallTable.deleteOlder + "?", arguments: [StoredTime.ms(keptSince)])
            for tally in tallies where tally.period >= keptSince {
                var arguments: [any DatabaseValueConvertible] = [StoredTime.ms(tally.period), tally.endpoint, tally.outcome]
                arguments += AppleCallTable.counts(of: tally).map { $0 as any DatabaseValueConvertible }
                try db.execute(sql: upsert, arguments: StatementArguments(arguments))
            }
        }
    }

    public func appleCalls(since: Date) async throws -> [AppleCallTally] {
        try await read { db in
            try Row.fetchAll(db, sql: AppleCallTable.selectSince + "? ORDER BY minute", arguments: [StoredTime.ms(since)]).map { row in
                AppleCallTally(
                    endpoint: row["endpoint"], outcome: row["outcome"], period: StoredTime.date(row["minute"] as Int64), count: row["calls"],
                    totalMilliseconds: row["total_ms"], buckets: AppleCallTable.bucketColumns.map { row[$0] as Int64 })
            }
        }
    }
}
