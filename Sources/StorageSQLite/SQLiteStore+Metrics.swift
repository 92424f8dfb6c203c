public import Foundation
import GRDB
import Persistence
public import StorekeeperDomain

/// Kept figures (docs/ANALYTICS.md, "How the figures are kept"): maintained in each grant's
/// transaction once built, built from the history on the first read. SQLite has one writer, so
/// its day totals need one shard.
extension SQLiteStore {
    public func metricReadout(appId: String, environment: String, now: Date, interval: ReportInterval) async throws -> MetricReadout {
        try await ensureFigures(appId: appId, environment: environment, now: now)
        return try await read { db in
            let days = try Row.fetchAll(
                db.cachedStatement(
                    sql: """
                        SELECT kind, key, day_ms, SUM(amount) AS amount FROM metric_days WHERE app_id = ? AND environment = ?
                        GROUP BY kind, key, day_ms
                        """), arguments: [appId, environment]
            ).compactMap { row -> MetricReadout.DayTotal? in
                let amount: Int64 = row["amount"]
                guard amount != 0 else { return nil }
                return MetricReadout.DayTotal(
                    kind: MetricContribution.Kind(rawValue: row["kind"]), key: row["key"], day: StoredTime.date(row["day_ms"] as Int64),
                    amount: amount)
            }
            let nowMs = StoredTime.ms(now)
            // Summed by instant: many subscriptions change at once (a day's renewals at one price).
            let today = try Row.fetchAll(
                db.cachedStatement(
                    sql: """
                        SELECT kind, key, at_ms, NULL AS since_ms, NULL AS until_ms, SUM(amount) AS amount FROM metric_contributions
                        WHERE app_id = ? AND environment = ? AND kind IN (\(placeholders(MetricContribution.Kind.steps.count)))
                            AND at_ms > ? AND at_ms <= ?
                        GROUP BY kind, key, at_ms
                        """),
                arguments: [appId, environment] + StatementArguments(MetricContribution.Kind.steps.map(\.rawValue))
                    + [StoredTime.ms(ReportInterval.day.start(of: now)), nowMs]
            ).map(Self.contribution(from:))
            let openTrials = try Self.contributions(
                db, appId: appId, environment: environment, kind: .trialOpen, after: nowMs, through: Int64.max
            ).map(\.contribution)
            let recentEnds = try Self.contributions(
                db, appId: appId, environment: environment, kind: .paidEnd, after: StoredTime.ms(interval.start(of: now)), through: nowMs)
            return MetricReadout(days: days, today: today, openTrials: openTrials, recentEnds: recentEnds)
        }
    }

    public func revenueDays(appId: String, environment: String, from: Date, to: Date) async throws -> [RevenueDay] {
        try await ensureFigures(appId: appId, environment: environment, now: from)
        return try await read { db in
            try Row.fetchAll(
                db.cachedStatement(
                    sql: """
                        SELECT day_ms, currency, event, SUM(rows) AS rows, SUM(amount_micros) AS amount,
                            SUM(proceeds_micros) AS proceeds, SUM(estimated_micros) AS estimated
                        FROM revenue_days WHERE app_id = ? AND environment = ? AND day_ms >= ? AND day_ms < ?
                        GROUP BY day_ms, currency, event ORDER BY day_ms, currency, event
                        """), arguments: [appId, environment, StoredTime.ms(from), StoredTime.ms(to)]
            ).compactMap { row -> RevenueDay? in
                guard let event = LedgerEntry.Event(rawValue: row["event"]), (row["rows"] as Int64) != 0 else { return nil }
                return RevenueDay(
                    day: StoredTime.date(row["day_ms"] as Int64), currency: row["currency"], event: event, count: row["rows"],
                    amountMicros: row["amount"], proceedsMicros: row["proceeds"], estimatedMicros: row["estimated"])
            }
        }
    }

    static func contributions(
        _ db: Database, appId: String, environment: String, kind: MetricContribution.Kind, after: Int64, through: Int64
    ) throws -> [MetricReadout.Sourced] {
        try Row.fetchAll(
            db.cachedStatement(
                sql: """
                    SELECT * FROM metric_contributions WHERE app_id = ? AND environment = ? AND kind = ? AND at_ms > ? AND at_ms <= ?
                    """), arguments: [appId, environment, kind.rawValue, after, through]
        ).map { row in MetricReadout.Sourced(source: row["source"], contribution: contribution(from: row)) }
    }

    static func contribution(from row: Row) -> MetricContribution {
        MetricContribution(
            kind: MetricContribution.Kind(rawValue: row["kind"]), key: row["key"], at: StoredTime.date(row["at_ms"] as Int64),
            amount: row["amount"], since: StoredTime.date(row["since_ms"] as Int64?), until: StoredTime.date(row["until_ms"] as Int64?))
    }

    // MARK: Building

    /// Builds an environment's figures from its history unless built: one write transaction, so
    /// no grant falls between the history read and the figures marked built.
    func ensureFigures(appId: String, environment: String, now: Date) async throws {
        let built = try await read { db in try Self.figuresBuilt(db, appId: appId, environment: environment) }
        guard !built else { return }
        try await pool.write { db in
            guard try !Self.figuresBuilt(db, appId: appId, environment: environment) else { return }
            try Self.buildFigures(db, appId: appId, environment: environment, now: now)
        }
    }

    static func figuresBuilt(_ db: Database, appId: String, environment: String) throws -> Bool {
        try Int.fetchOne(
            db.cachedStatement(sql: "SELECT 1 FROM metric_state WHERE app_id = ? AND environment = ?"), arguments: [appId, environment]) != nil
    }

    static func buildFigures(_ db: Database, appId: String, environment: String, now: Date) throws {
        for table in ["metric_contributions", "metric_days", "revenue_days"] {
            try db.execute(sql: "DELETE FROM \(table) WHERE app_id = ? AND environment = ?", arguments: [appId, environment])
        }
        try db.execute(
            sql: """
                INSERT INTO revenue_days (app_id, environment, day_ms, currency, event, shard, rows, amount_micros, proceeds_micros,
                    estimated_micros)
                SELECT app_id, environment, purchase_date - (((purchase_date % 86400000) + 86400000) % 86400000), currency, event, 0,
                    COUNT(*), SUM(price_micros), SUM(COALESCE(proceeds_micros, 0)), SUM(CASE WHEN estimated THEN price_micros ELSE 0 END)
                FROM ledger WHERE app_id = ? AND environment = ? AND price_micros IS NOT NULL AND currency IS NOT NULL
                    AND abs(price_micros) <= ? AND abs(COALESCE(proceeds_micros, 0)) <= ?
                GROUP BY 3, currency, event
                """,
            arguments: [appId, environment, MetricContribution.largestAmount, MetricContribution.largestAmount])
        let catalog = Dictionary(try products(db, appId: appId).map { ($0.productId, $0) }, uniquingKeysWith: { $1 })
        let facts = Dictionary(
            try Row.fetchAll(
                db, sql: "SELECT * FROM subscriptions WHERE app_id = ? AND environment = ?", arguments: [appId, environment]
            ).map { subscription(from: $0) }.map { ($0.originalTransactionId, $0) }, uniquingKeysWith: { $1 })
        var days: [MetricUpkeep.DayKey: Int64] = [:]
        var group: [TransactionRecord] = []
        func flush() throws {
            for (source, contribution) in MetricUpkeep.contributions(
                originalTransaction: group, facts: group.first.flatMap { facts[$0.originalTransactionId] }, catalog: catalog)
            {
                let stored = MetricUpkeep.stored(contribution)
                try insert(db, appId: appId, environment: environment, source: source, stored)
                days[MetricUpkeep.key(stored), default: 0] += stored.amount
            }
            group.removeAll(keepingCapacity: true)
        }
        let rows = try Row.fetchCursor(
            db, sql: "SELECT * FROM transactions WHERE app_id = ? AND environment = ? ORDER BY original_transaction_id",
            arguments: [appId, environment])
        while let row = try rows.next() {
            let record = transaction(from: row)
            if let first = group.first, first.originalTransactionId != record.originalTransactionId { try flush() }
            group.append(record)
        }
        try flush()
        for (key, amount) in days.sorted(by: { $0.key < $1.key }) where amount != 0 {
            try addDay(db, appId: appId, environment: environment, key, amount)
        }
        try db.execute(
            sql: "INSERT INTO metric_state (app_id, environment, built_at) VALUES (?, ?, ?)",
            arguments: [appId, environment, StoredTime.ms(now)])
    }

    // MARK: Upkeep in a grant's transaction

    /// Recomputes the contributions of what `plan` touched and adds the revenue of the ledger
    /// rows it inserted, in environments whose figures are built (others are built when read).
    static func keepFigures(_ plan: GrantPlan, appId: String, insertedLedger: [LedgerEntry], db: Database) throws {
        let built = Set(
            try String.fetchAll(db.cachedStatement(sql: "SELECT environment FROM metric_state WHERE app_id = ?"), arguments: [appId]))
        guard !built.isEmpty else { return }
        for entry in insertedLedger where built.contains(entry.environment) {
            guard let day = RevenueDay(entry) else { continue }
            try db.cachedStatement(
                sql: """
                    INSERT INTO revenue_days (app_id, environment, day_ms, currency, event, shard, rows, amount_micros,
                        proceeds_micros, estimated_micros)
                    VALUES (?, ?, ?, ?, ?, 0, 1, ?, ?, ?)
                    ON CONFLICT (app_id, environment, day_ms, currency, event, shard) DO UPDATE SET rows = rows + 1,
                        amount_micros = amount_micros + excluded.amount_micros,
                        proceeds_micros = proceeds_micros + excluded.proceeds_micros,
                        estimated_micros = estimated_micros + excluded.estimated_micros
                    """
            ).execute(arguments: [
                appId, entry.environment, StoredTime.ms(day.day), day.currency, day.event.rawValue, day.amountMicros, day.proceedsMicros,
                day.estimatedMicros,
            ])
        }
        let (originals, consumables) = MetricUpkeep.touched(by: plan)
        guard !originals.isEmpty || !consumables.isEmpty else { return }
        let catalog =
            plan.catalog.isEmpty ? Dictionary(try products(db, appId: appId).map { ($0.productId, $0) }, uniquingKeysWith: { $1 }) : plan.catalog
        let facts = try loadSubscriptions(db, appId: appId, originalIds: originals)
        var records: [String: [TransactionRecord]] = [:]
        for chunk in originals.chunked(500) {
            for row in try Row.fetchAll(
                db,
                sql: "SELECT * FROM transactions WHERE app_id = ? AND original_transaction_id IN (\(placeholders(chunk.count)))",
                arguments: [appId] + StatementArguments(chunk))
            {
                let record = transaction(from: row)
                records[record.originalTransactionId, default: []].append(record)
            }
        }
        for original in originals {
            let group = records[original] ?? []
            guard let environment = group.first?.environment ?? facts[original]?.environment, built.contains(environment) else { continue }
            let computed = MetricContribution.subscription(group, facts: facts[original], catalog: catalog)
            try replace(db, appId: appId, environment: environment, source: original, with: computed)
        }
        for record in try loadTransactions(db, appId: appId, ids: consumables).values where built.contains(record.environment) {
            try replace(
                db, appId: appId, environment: record.environment, source: MetricContribution.source(consumable: record.transactionId),
                with: MetricContribution.consumable(record))
        }
    }

    private static func replace(_ db: Database, appId: String, environment: String, source: String, with computed: [MetricContribution]) throws {
        let old = try Row.fetchAll(
            db.cachedStatement(sql: "SELECT * FROM metric_contributions WHERE app_id = ? AND source = ?"), arguments: [appId, source]
        ).map { MetricUpkeep.Stored(id: $0["id"], contribution: contribution(from: $0)) }
        let change = MetricUpkeep.change(from: old, to: computed)
        for id in change.deletions {
            try db.cachedStatement(sql: "DELETE FROM metric_contributions WHERE id = ?").execute(arguments: [id])
        }
        for contribution in change.insertions {
            try insert(db, appId: appId, environment: environment, source: source, contribution)
        }
        for (key, amount) in change.days { try addDay(db, appId: appId, environment: environment, key, amount) }
    }

    private static func insert(_ db: Database, appId: String, environment: String, source: String, _ c: MetricContribution) throws {
        try db.cachedStatement(
            sql: """
                INSERT INTO metric_contributions (app_id, environment, source, kind, key, at_ms, since_ms, until_ms, amount)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                """
        ).execute(arguments: [
            appId, environment, source, c.kind.rawValue, c.key, StoredTime.ms(c.at), StoredTime.ms(c.since), StoredTime.ms(c.until), c.amount,
        ])
    }

    private static func addDay(_ db: Database, appId: String, environment: String, _ key: MetricUpkeep.DayKey, _ amount: Int64) throws {
        try db.cachedStatement(
            sql: """
                INSERT INTO metric_days (app_id, environment, kind, key, day_ms, shard, amount) VALUES (?, ?, ?, ?, ?, 0, ?)
                ON CONFLICT (app_id, environment, kind, key, day_ms, shard) DO UPDATE SET amount = amount + excluded.amount
                """
        ).execute(arguments: [appId, environment, key.kind.rawValue, key.key, StoredTime.ms(key.day), amount])
    }

    /// A catalog change can change any subscription's MRR: the app's figures are built again on the next read.
    static func dropFigures(_ db: Database, appId: String) throws {
        try db.execute(sql: "DELETE FROM metric_state WHERE app_id = ?", arguments: [appId])
    }
}
