public import Foundation
import Persistence
import PostgresNIO
public import StorekeeperDomain

extension PostgresStore {
    public func addAppleCalls(_ tallies: [AppleCallTally], keptSince: Date) async throws {
        let logger = self.logger
        let upsert = AppleCallTable.upsert { "$\($0)" }
        try await transaction { connection in
            var bound = PostgresBindings()
            bound.append(StoredTime.ms(keptSince))
            try await connection.execute(PostgresQuery(unsafeSQL: AppleCallTable.deleteOlder + "$1", binds: bound), logger: logger)
            for tally in tallies where tally.period >= keptSince {
                var bindings = PostgresBindings()
                bindings.append(StoredTime.ms(tally.period))
                bindings.append(tally.endpoint)
                bindings.append(tally.outcome)
                for value in AppleCallTable.counts(of: tally) { bindings.append(value) }
                try await connection.execute(PostgresQuery(unsafeSQL: upsert, binds: bindings), logger: logger)
            }
        }
    }

    public func appleCalls(since: Date) async throws -> [AppleCallTally] {
        let logger = self.logger
        let sinceMs = StoredTime.ms(since)
        return try await read { connection in
            var bindings = PostgresBindings()
            bindings.append(sinceMs)
            return try await connection.rows(
                PostgresQuery(unsafeSQL: AppleCallTable.selectSince + "$1 ORDER BY minute", binds: bindings), logger: logger
            )
            .map { row in
                AppleCallTally(
                    endpoint: try row.value("endpoint"), outcome: try row.value("outcome"), period: try row.date("minute"),
                    count: try row.value("calls"), totalMilliseconds: try row.value("total_ms"),
                    buckets: try AppleCallTable.bucketColumns.map { try row.value($0, as: Int64.self) })
            }
        }
    }
}
