public import Foundation
import Logging
import Persistence
import PostgresNIO
public import StorekeeperDomain

/// Kept figures (docs/ANALYTICS.md, "How the figures are kept"): maintained in each grant's
/// transaction once built, built from the history on the first read. Day totals are split in
/// `shards` rows chosen by the subscription, so grants of one day running at once add to
/// different rows instead of queueing on one.
extension PostgresStore {
    static let shards: Int64 = 8
    /// Stands for NULL in a bigint array (PostgresNIO binds arrays of non-optional values).
    private static let none = Int64.min

    public func metricReadout(appId: String, environment: String, now: Date, interval: ReportInterval) async throws -> MetricReadout {
        try await ensureFigures(appId: appId, environment: environment, now: now)
        let nowMs = StoredTime.ms(now)
        let midnight = StoredTime.ms(ReportInterval.day.start(of: now))
        let periodStart = StoredTime.ms(interval.start(of: now))
        let steps = MetricContribution.Kind.steps.map(\.rawValue)
        // One statement, one snapshot: the totals and the contributions beside them agree. Today's
        // steps summed by instant: many subscriptions change at once.
        return try await read { connection in
            var readout = MetricReadout(days: [], today: [], openTrials: [], recentEnds: [])
            for row in try await connection.rows(
                """
                SELECT 'day' AS part, kind, key, day_ms AS at_ms, NULL::bigint AS since_ms, NULL::bigint AS until_ms,
                    SUM(amount)::bigint AS amount, '' AS source
                FROM metric_days WHERE app_id = \(appId) AND environment = \(environment) GROUP BY kind, key, day_ms
                UNION ALL
                SELECT 'contribution', kind, key, at_ms, NULL, NULL, SUM(amount)::bigint, '' FROM metric_contributions
                WHERE app_id = \(appId) AND environment = \(environment) AND kind = ANY(\(steps)) AND at_ms > \(midnight)
                    AND at_ms <= \(nowMs)
                GROUP BY kind, key, at_ms
                UNION ALL
                SELECT 'contribution', kind, key, at_ms, since_ms, until_ms, amount, source FROM metric_contributions
                WHERE app_id = \(appId) AND environment = \(environment) AND (
                    (kind = 'trial_open' AND at_ms > \(nowMs)) OR (kind = 'paid_end' AND at_ms > \(periodStart) AND at_ms <= \(nowMs)))
                """, logger: self.logger)
            {
                let contribution = try Self.contribution(from: row)
                guard try row.value("part", as: String.self) == "contribution" else {
                    guard contribution.amount != 0 else { continue }
                    readout.days.append(
                        MetricReadout.DayTotal(kind: contribution.kind, key: contribution.key, day: contribution.at, amount: contribution.amount))
                    continue
                }
                switch contribution.kind {
                case .trialOpen: readout.openTrials.append(contribution)
                case .paidEnd: readout.recentEnds.append(MetricReadout.Sourced(source: try row.value("source"), contribution: contribution))
                default: readout.today.append(contribution)
                }
            }
            return readout
        }
    }

    public func revenueDays(appId: String, environment: String, from: Date, to: Date) async throws -> [RevenueDay] {
        try await ensureFigures(appId: appId, environment: environment, now: from)
        return try await read { connection in
            try await connection.rows(
                """
                SELECT day_ms, currency, event, SUM(rows)::bigint AS rows, SUM(amount_micros)::bigint AS amount,
                    SUM(proceeds_micros)::bigint AS proceeds, SUM(estimated_micros)::bigint AS estimated
                FROM revenue_days WHERE app_id = \(appId) AND environment = \(environment)
                    AND day_ms >= \(StoredTime.ms(from)) AND day_ms < \(StoredTime.ms(to))
                GROUP BY day_ms, currency, event ORDER BY day_ms, currency, event
                """, logger: self.logger
            ).compactMap { row -> RevenueDay? in
                let rows = try row.value("rows", as: Int64.self)
                guard let event = LedgerEntry.Event(rawValue: try row.value("event")), rows != 0 else { return nil }
                return RevenueDay(
                    day: try row.date("day_ms"), currency: try row.value("currency"), event: event, count: rows,
                    amountMicros: try row.value("amount"), proceedsMicros: try row.value("proceeds"), estimatedMicros: try row.value("estimated"))
            }
        }
    }

    static func contribution(from row: PostgresRandomAccessRow) throws -> MetricContribution {
        MetricContribution(
            kind: MetricContribution.Kind(rawValue: try row.value("kind")), key: try row.value("key"), at: try row.date("at_ms"),
            amount: try row.value("amount"), since: try row.optionalDate("since_ms"), until: try row.optionalDate("until_ms"))
    }

    // MARK: Building

    /// Builds an environment's figures from its history unless built. Grants wait meanwhile (the
    /// history tables are locked against writes), so none falls between the read and the mark.
    func ensureFigures(appId: String, environment: String, now: Date) async throws {
        let built = try await read { connection in
            try await Self.figuresBuilt(connection, appId: appId, environment: environment, logger: self.logger)
        }
        guard !built else { return }
        try await transaction { connection in
            try await AdvisoryLock.lock(["figures:\(appId):\(environment)"], on: connection, logger: self.logger)
            try await connection.execute("LOCK TABLE transactions, subscriptions, ledger, products IN SHARE MODE", logger: self.logger)
            guard try await !Self.figuresBuilt(connection, appId: appId, environment: environment, logger: self.logger) else { return }
            try await Self.buildFigures(connection, appId: appId, environment: environment, now: now, logger: self.logger)
        }
    }

    static func figuresBuilt(_ connection: PostgresConnection, appId: String, environment: String, logger: Logger) async throws -> Bool {
        try await connection.count(
            "SELECT 1 FROM metric_state WHERE app_id = \(appId) AND environment = \(environment)", logger: logger) > 0
    }

    static func buildFigures(_ connection: PostgresConnection, appId: String, environment: String, now: Date, logger: Logger) async throws {
        try await connection.execute(
            "DELETE FROM metric_contributions WHERE app_id = \(appId) AND environment = \(environment)", logger: logger)
        try await connection.execute("DELETE FROM metric_days WHERE app_id = \(appId) AND environment = \(environment)", logger: logger)
        try await connection.execute("DELETE FROM revenue_days WHERE app_id = \(appId) AND environment = \(environment)", logger: logger)
        let limit = MetricContribution.largestAmount
        try await connection.execute(
            """
            INSERT INTO revenue_days (app_id, environment, day_ms, currency, event, shard, rows, amount_micros, proceeds_micros,
                estimated_micros)
            SELECT app_id, environment, purchase_date - (((purchase_date % 86400000) + 86400000) % 86400000) AS day, currency, event, 0,
                COUNT(*), SUM(price_micros)::bigint, SUM(COALESCE(proceeds_micros, 0))::bigint,
                SUM(CASE WHEN estimated THEN price_micros ELSE 0 END)::bigint
            FROM ledger WHERE app_id = \(appId) AND environment = \(environment) AND price_micros IS NOT NULL AND currency IS NOT NULL
                AND abs(price_micros) <= \(limit) AND abs(COALESCE(proceeds_micros, 0)) <= \(limit)
            GROUP BY app_id, environment, day, currency, event
            """, logger: logger)
        let catalog = Dictionary(try await products(connection, appId: appId, logger: logger).map { ($0.productId, $0) }, uniquingKeysWith: { $1 })
        var after = ""
        var days: [MetricUpkeep.DayKey: Int64] = [:]
        while true {
            // A page of subscriptions at a time, each whole.
            let originals = try await connection.rows(
                """
                SELECT DISTINCT original_transaction_id FROM transactions
                WHERE app_id = \(appId) AND environment = \(environment) AND original_transaction_id > \(after)
                ORDER BY original_transaction_id LIMIT 2000
                """, logger: logger
            ).map { try $0.value("original_transaction_id", as: String.self) }
            guard let last = originals.last else { break }
            after = last
            let facts = try await loadSubscriptions(connection, appId: appId, originalIds: originals, logger: logger)
            var records: [String: [TransactionRecord]] = [:]
            for row in try await connection.rows(
                "SELECT * FROM transactions WHERE app_id = \(appId) AND original_transaction_id = ANY(\(originals))", logger: logger)
            {
                let record = try transaction(from: row)
                records[record.originalTransactionId, default: []].append(record)
            }
            var batch = Batch()
            for original in originals {
                for (source, contribution) in MetricUpkeep.contributions(
                    originalTransaction: records[original] ?? [], facts: facts[original], catalog: catalog)
                {
                    let stored = MetricUpkeep.stored(contribution)
                    batch.append(source: source, stored)
                    days[MetricUpkeep.key(stored), default: 0] += stored.amount
                }
            }
            try await batch.insert(connection, appId: appId, environment: environment, logger: logger)
        }
        try await addDays(
            connection, appId: appId, environment: environment, shard: 0,
            days.filter { $0.value != 0 }.sorted { $0.key < $1.key }.map { (key: $0.key, amount: $0.value) }, logger: logger)
        try await connection.execute(
            "INSERT INTO metric_state (app_id, environment, built_at) VALUES (\(appId), \(environment), \(StoredTime.ms(now)))",
            logger: logger)
    }

    // MARK: Upkeep in a grant's transaction

    /// Recomputes the contributions of what `plan` touched and adds the revenue of the ledger
    /// rows it inserted, in environments whose figures are built (others are built when read).
    static func keepFigures(
        _ plan: GrantPlan, appId: String, insertedLedger: [LedgerEntry], connection: PostgresConnection, logger: Logger
    )
        async throws
    {
        let built = Set(
            try await connection.rows("SELECT environment FROM metric_state WHERE app_id = \(appId)", prepared: true, logger: logger).map {
                try $0.value("environment", as: String.self)
            })
        guard !built.isEmpty else { return }
        for entry in insertedLedger where built.contains(entry.environment) {
            guard let day = RevenueDay(entry) else { continue }
            try await connection.execute(
                """
                INSERT INTO revenue_days (app_id, environment, day_ms, currency, event, shard, rows, amount_micros,
                    proceeds_micros, estimated_micros)
                VALUES (\(appId), \(entry.environment), \(StoredTime.ms(day.day)), \(day.currency), \(day.event.rawValue),
                    \(shard(entry.transactionId)), 1, \(day.amountMicros), \(day.proceedsMicros), \(day.estimatedMicros))
                ON CONFLICT (app_id, environment, day_ms, currency, event, shard) DO UPDATE SET rows = revenue_days.rows + 1,
                    amount_micros = revenue_days.amount_micros + excluded.amount_micros,
                    proceeds_micros = revenue_days.proceeds_micros + excluded.proceeds_micros,
                    estimated_micros = revenue_days.estimated_micros + excluded.estimated_micros
                """, prepared: true, logger: logger)
        }
        let (originals, consumables) = MetricUpkeep.touched(by: plan)
        guard !originals.isEmpty || !consumables.isEmpty else { return }
        // Two grants of one subscription recompute it one after the other.
        try await AdvisoryLock.lock(
            (originals + consumables.map(MetricContribution.source(consumable:))).map { "figures:\(appId):\($0)" }, on: connection,
            logger: logger)
        var catalog = plan.catalog
        if catalog.isEmpty {
            catalog = Dictionary(try await products(connection, appId: appId, logger: logger).map { ($0.productId, $0) }, uniquingKeysWith: { $1 })
        }
        let facts = try await loadSubscriptions(connection, appId: appId, originalIds: originals, logger: logger)
        var records: [String: [TransactionRecord]] = [:]
        if !originals.isEmpty {
            for row in try await connection.rows(
                "SELECT * FROM transactions WHERE app_id = \(appId) AND original_transaction_id = ANY(\(originals))", logger: logger)
            {
                let record = try transaction(from: row)
                records[record.originalTransactionId, default: []].append(record)
            }
        }
        var wanted: [(source: String, environment: String, contributions: [MetricContribution])] = []
        for original in originals {
            let group = records[original] ?? []
            guard let environment = group.first?.environment ?? facts[original]?.environment, built.contains(environment) else { continue }
            wanted.append((original, environment, MetricContribution.subscription(group, facts: facts[original], catalog: catalog)))
        }
        for record in try await loadTransactions(connection, appId: appId, ids: consumables, logger: logger).values
        where built.contains(record.environment) {
            wanted.append((MetricContribution.source(consumable: record.transactionId), record.environment, MetricContribution.consumable(record)))
        }
        guard !wanted.isEmpty else { return }
        var old: [String: [MetricUpkeep.Stored]] = [:]
        for row in try await connection.rows(
            "SELECT * FROM metric_contributions WHERE app_id = \(appId) AND source = ANY(\(wanted.map(\.source)))", logger: logger)
        {
            old[try row.value("source", as: String.self), default: []].append(
                MetricUpkeep.Stored(id: try row.value("id"), contribution: try contribution(from: row)))
        }
        for (source, environment, contributions) in wanted {
            let change = MetricUpkeep.change(from: old[source] ?? [], to: contributions)
            guard !change.isEmpty else { continue }
            if !change.deletions.isEmpty {
                try await connection.execute("DELETE FROM metric_contributions WHERE id = ANY(\(change.deletions))", logger: logger)
            }
            var batch = Batch()
            for contribution in change.insertions { batch.append(source: source, contribution) }
            try await batch.insert(connection, appId: appId, environment: environment, logger: logger)
            try await addDays(connection, appId: appId, environment: environment, shard: shard(source), change.days, logger: logger)
        }
    }

    static func shard(_ source: String) -> Int64 { Int64(AdvisoryLock.key(source).magnitude % UInt64(shards)) }

    private static func addDays(
        _ connection: PostgresConnection, appId: String, environment: String, shard: Int64, _ days: [(key: MetricUpkeep.DayKey, amount: Int64)],
        logger: Logger
    ) async throws {
        for start in stride(from: 0, to: days.count, by: 5_000) {
            let chunk = days[start..<min(start + 5_000, days.count)]
            try await connection.execute(
                """
                INSERT INTO metric_days (app_id, environment, kind, key, day_ms, shard, amount)
                SELECT \(appId), \(environment), kind, key, day_ms, \(shard), amount
                FROM unnest(\(chunk.map(\.key.kind.rawValue))::text[], \(chunk.map(\.key.key))::text[],
                    \(chunk.map { StoredTime.ms($0.key.day) })::bigint[], \(chunk.map(\.amount))::bigint[]) AS d(kind, key, day_ms, amount)
                ON CONFLICT (app_id, environment, kind, key, day_ms, shard) DO UPDATE SET amount = metric_days.amount + excluded.amount
                """, logger: logger)
        }
    }

    /// Contributions inserted with one statement per few thousand.
    private struct Batch {
        var sources: [String] = []
        var kinds: [String] = []
        var keys: [String] = []
        var at: [Int64] = []
        var since: [Int64] = []
        var until: [Int64] = []
        var amounts: [Int64] = []

        mutating func append(source: String, _ c: MetricContribution) {
            sources.append(source)
            kinds.append(c.kind.rawValue)
            keys.append(c.key)
            at.append(StoredTime.ms(c.at))
            since.append(StoredTime.ms(c.since) ?? PostgresStore.none)
            until.append(StoredTime.ms(c.until) ?? PostgresStore.none)
            amounts.append(c.amount)
        }

        func insert(_ connection: PostgresConnection, appId: String, environment: String, logger: Logger) async throws {
            let none = PostgresStore.none
            for start in stride(from: 0, to: sources.count, by: 5_000) {
                let r = start..<min(start + 5_000, sources.count)
                try await connection.execute(
                    """
                    INSERT INTO metric_contributions (app_id, environment, source, kind, key, at_ms, since_ms, until_ms, amount)
                    SELECT \(appId), \(environment), source, kind, key, at_ms, NULLIF(since_ms, \(none)), NULLIF(until_ms, \(none)), amount
                    FROM unnest(\(Array(sources[r]))::text[], \(Array(kinds[r]))::text[], \(Array(keys[r]))::text[],
                        \(Array(at[r]))::bigint[], \(Array(since[r]))::bigint[], \(Array(until[r]))::bigint[], \(Array(amounts[r]))::bigint[])
                        AS c(source, kind, key, at_ms, since_ms, until_ms, amount)
                    """, logger: logger)
            }
        }
    }

    /// A catalog change can change any subscription's MRR: the app's figures are built again on the next read.
    static func dropFigures(_ connection: PostgresConnection, appId: String, logger: Logger) async throws {
        try await connection.execute("DELETE FROM metric_state WHERE app_id = \(appId)", logger: logger)
    }
}
