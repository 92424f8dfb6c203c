public import Foundation
import GRDB
import JobQueue
public import Persistence
public import StorekeeperDomain

extension SQLiteStore {
    static func apply(_ plan: GrantPlan, appId: String, db: Database, now: Date) throws {
        let nowMs = StoredTime.ms(now)
        for binding in plan.bindings {
            try db.cachedStatement(
                sql: """
                    INSERT INTO ownership_bindings (app_id, original_transaction_id, app_user_id, product_id, bound_at)
                    VALUES (?, ?, ?, ?, ?)
                    ON CONFLICT (app_id, original_transaction_id) DO UPDATE SET app_user_id = excluded.app_user_id,
                        bound_at = excluded.bound_at
                    """
            ).execute(arguments: [binding.appId, binding.originalTransactionId, binding.appUserId, binding.productId, nowMs])
        }
        for transfer in plan.transfers {
            for table in ["transactions", "subscriptions"] {
                try db.execute(
                    sql: "UPDATE \(table) SET app_user_id = ? WHERE app_id = ? AND original_transaction_id = ?",
                    arguments: [transfer.toAppUserId, appId, transfer.originalTransactionId])
            }
        }
        for tx in plan.newTransactions {
            // The primary key (app_id, transaction_id) is the exactly-once guard; DO NOTHING means "already granted".
            try db.cachedStatement(
                sql: """
                    INSERT INTO transactions (app_id, transaction_id, app_user_id, original_transaction_id, product_id,
                        product_type, environment, purchase_date, original_purchase_date, expires_date, cancellation_date,
                        quantity, credits, ownership_type, verification_id, created_at, reinstated_at, app_transaction_id,
                        revocation_type, revocation_percentage, billing_plan_type, commitment_period_number,
                        commitment_total_periods, commitment_expires_date, offer_type, offer_identifier, offer_discount_type,
                        offer_period, imported, price_milliunits, price_currency, storefront, app_account_token)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    ON CONFLICT (app_id, transaction_id) DO NOTHING
                    """
            ).execute(arguments: [
                tx.appId, tx.transactionId, tx.appUserId, tx.originalTransactionId, tx.productId, tx.productType.rawValue,
                tx.environment, StoredTime.ms(tx.purchaseDate), StoredTime.ms(tx.originalPurchaseDate),
                StoredTime.ms(tx.expiresDate), StoredTime.ms(tx.cancellationDate), tx.quantity, tx.credits,
                tx.ownershipType, tx.verificationId, nowMs, StoredTime.ms(tx.reinstatedAt), tx.appTransactionId,
                tx.revocationType, tx.revocationPercentage, tx.billingPlanType, tx.commitment?.billingPeriodNumber,
                tx.commitment?.totalBillingPeriods, StoredTime.ms(tx.commitment?.expiresDate), tx.offer?.type, tx.offer?.identifier,
                tx.offer?.discountType, tx.offer?.period, tx.imported, tx.price?.milliunits, tx.price?.currency, tx.storefront,
                tx.appAccountToken,
            ])
        }
        for tx in plan.revokedTransactions {
            try db.cachedStatement(
                sql: """
                    UPDATE transactions SET cancellation_date = ?, revocation_type = ?, revocation_percentage = ?
                    WHERE app_id = ? AND transaction_id = ? AND cancellation_date IS NULL
                    """
            ).execute(arguments: [
                StoredTime.ms(tx.cancellationDate), tx.revocationType, tx.revocationPercentage, tx.appId, tx.transactionId,
            ])
        }
        for tx in plan.reinstatedTransactions {
            try db.cachedStatement(
                sql: """
                    UPDATE transactions SET cancellation_date = NULL, reinstated_at = ?, revocation_type = NULL,
                        revocation_percentage = NULL
                    WHERE app_id = ? AND transaction_id = ?
                    """
            ).execute(arguments: [StoredTime.ms(tx.reinstatedAt), tx.appId, tx.transactionId])
        }
        for tx in plan.annotatedTransactions {
            try db.cachedStatement(
                sql: """
                    UPDATE transactions SET app_transaction_id = COALESCE(app_transaction_id, ?),
                        app_account_token = COALESCE(app_account_token, ?)
                    WHERE app_id = ? AND transaction_id = ?
                    """
            ).execute(arguments: [tx.appTransactionId, tx.appAccountToken, tx.appId, tx.transactionId])
        }
        var insertedLedger: [LedgerEntry] = []
        for entry in plan.ledger {
            try db.cachedStatement(
                sql: """
                    INSERT INTO ledger (app_id, app_user_id, product_id, product_type, transaction_id, original_transaction_id,
                        environment, purchase_date, event, quantity, price_micros, currency, state, recorded_at, imported, estimated,
                        storefront, offer_type, offer_identifier, offer_discount_type, offer_period, commission_rate, proceeds_micros)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    ON CONFLICT (app_id, transaction_id, event) DO NOTHING
                    """
            ).execute(arguments: [
                entry.appId, entry.appUserId, entry.productId, entry.productType.rawValue, entry.transactionId,
                entry.originalTransactionId, entry.environment, StoredTime.ms(entry.purchaseDate), entry.event.rawValue,
                entry.quantity, entry.priceMicros, entry.currency, entry.state, StoredTime.ms(entry.recordedAt), entry.imported,
                entry.estimated, entry.storefront, entry.offer?.type, entry.offer?.identifier, entry.offer?.discountType, entry.offer?.period,
                entry.commissionRate, entry.proceedsMicros,
            ])
            if db.changesCount > 0 { insertedLedger.append(entry) }
        }
        for facts in plan.subscriptions {
            try db.cachedStatement(
                sql: """
                    INSERT INTO subscriptions (app_id, original_transaction_id, app_user_id, product_id, environment,
                        latest_transaction_id, expires_date, revoked_at, auto_renew_enabled, auto_renew_product_id,
                        in_billing_retry, grace_period_expires_date, expiration_intent, updated_at, renewal_signed_at,
                        win_back_offer_ids, price_increase_status)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    ON CONFLICT (app_id, original_transaction_id) DO UPDATE SET app_user_id = excluded.app_user_id,
                        product_id = excluded.product_id, environment = excluded.environment,
                        latest_transaction_id = excluded.latest_transaction_id, expires_date = excluded.expires_date,
                        revoked_at = excluded.revoked_at, auto_renew_enabled = excluded.auto_renew_enabled,
                        auto_renew_product_id = excluded.auto_renew_product_id, in_billing_retry = excluded.in_billing_retry,
                        grace_period_expires_date = excluded.grace_period_expires_date,
                        expiration_intent = excluded.expiration_intent, updated_at = excluded.updated_at,
                        renewal_signed_at = excluded.renewal_signed_at, win_back_offer_ids = excluded.win_back_offer_ids,
                        price_increase_status = excluded.price_increase_status
                    """
            ).execute(arguments: [
                facts.appId, facts.originalTransactionId, facts.appUserId, facts.productId, facts.environment,
                facts.latestTransactionId, StoredTime.ms(facts.expiresDate), StoredTime.ms(facts.revokedAt),
                facts.autoRenewEnabled, facts.autoRenewProductId, facts.inBillingRetry,
                StoredTime.ms(facts.gracePeriodExpiresDate), facts.expirationIntent, StoredTime.ms(facts.updatedAt),
                StoredTime.ms(facts.renewalSignedAt), facts.winBackOfferIds.map(StoredJSON.encode), facts.priceIncreaseStatus,
            ])
        }
        try keepFigures(plan, appId: appId, insertedLedger: insertedLedger, db: db)
    }

    // MARK: Loading granted state

    static func loadFacts(_ db: Database, _ query: GrantFactsQuery, verificationId: String) throws -> GrantFacts {
        GrantFacts(
            transactions: try loadTransactions(db, appId: query.appId, ids: query.transactionIds),
            bindings: try loadBindings(db, appId: query.appId, originalIds: query.originalTransactionIds),
            subscriptions: try loadSubscriptions(db, appId: query.appId, originalIds: query.originalTransactionIds),
            claims: try loadClaims(db, appId: query.appId, originalIds: query.originalTransactionIds),
            catalog: query.readsCatalog
                ? Dictionary(try products(db, appId: query.appId).map { ($0.productId, $0) }, uniquingKeysWith: { $1 }) : [:],
            submission: query.readsSubmission ? try submission(db, verificationId: verificationId) : nil)
    }

    static func loadClaims(_ db: Database, appId: String, originalIds: [String]) throws -> [String: [OwnershipClaim]] {
        var result: [String: [OwnershipClaim]] = [:]
        for chunk in originalIds.chunked(500) {
            let rows = try Row.fetchAll(
                db,
                sql: """
                    SELECT c.original_transaction_id, c.app_user_id, c.accepted_seq, v.state FROM ownership_claims c
                    JOIN verifications v ON v.id = c.verification_id
                    WHERE c.app_id = ? AND c.original_transaction_id IN (\(placeholders(chunk.count)))
                    """,
                arguments: [appId] + StatementArguments(chunk))
            for row in rows {
                let claim = OwnershipClaim(
                    originalTransactionId: row["original_transaction_id"], appUserId: row["app_user_id"],
                    acceptedSequence: row["accepted_seq"],
                    verificationState: try VerificationState.stored(row["state"], column: "verifications.state"))
                result[claim.originalTransactionId, default: []].append(claim)
            }
        }
        return result
    }

    static func loadTransactions(_ db: Database, appId: String, ids: [String]) throws -> [String: TransactionRecord] {
        var result: [String: TransactionRecord] = [:]
        for chunk in ids.chunked(500) {
            let rows = try Row.fetchAll(
                db, sql: "SELECT * FROM transactions WHERE app_id = ? AND transaction_id IN (\(placeholders(chunk.count)))",
                arguments: [appId] + StatementArguments(chunk))
            for row in rows {
                let tx = transaction(from: row)
                result[tx.transactionId] = tx
            }
        }
        return result
    }

    static func loadBindings(_ db: Database, appId: String, originalIds: [String]) throws -> [String: OwnershipBinding] {
        var result: [String: OwnershipBinding] = [:]
        for chunk in originalIds.chunked(500) {
            let rows = try Row.fetchAll(
                db,
                sql: "SELECT * FROM ownership_bindings WHERE app_id = ? AND original_transaction_id IN (\(placeholders(chunk.count)))",
                arguments: [appId] + StatementArguments(chunk))
            for row in rows {
                let binding = OwnershipBinding(
                    appId: row["app_id"], originalTransactionId: row["original_transaction_id"],
                    appUserId: row["app_user_id"], productId: row["product_id"])
                result[binding.originalTransactionId] = binding
            }
        }
        return result
    }

    static func loadSubscriptions(_ db: Database, appId: String, originalIds: [String]) throws -> [String: SubscriptionFacts] {
        var result: [String: SubscriptionFacts] = [:]
        for chunk in originalIds.chunked(500) {
            let rows = try Row.fetchAll(
                db,
                sql: "SELECT * FROM subscriptions WHERE app_id = ? AND original_transaction_id IN (\(placeholders(chunk.count)))",
                arguments: [appId] + StatementArguments(chunk))
            for row in rows {
                let facts = subscription(from: row)
                result[facts.originalTransactionId] = facts
            }
        }
        return result
    }

    static func transaction(from row: Row) -> TransactionRecord {
        var record = TransactionRecord(
            appId: row["app_id"], appUserId: row["app_user_id"], transactionId: row["transaction_id"],
            originalTransactionId: row["original_transaction_id"], productId: row["product_id"],
            productType: ProductType(rawValue: row["product_type"]), environment: row["environment"],
            purchaseDate: StoredTime.date(row["purchase_date"] as Int64),
            originalPurchaseDate: StoredTime.date(row["original_purchase_date"] as Int64?),
            expiresDate: StoredTime.date(row["expires_date"] as Int64?),
            cancellationDate: StoredTime.date(row["cancellation_date"] as Int64?), quantity: row["quantity"],
            credits: row["credits"], ownershipType: row["ownership_type"], verificationId: row["verification_id"])
        record.reinstatedAt = StoredTime.date(row["reinstated_at"] as Int64?)
        record.appTransactionId = row["app_transaction_id"]
        record.appAccountToken = row["app_account_token"]
        record.revocationType = row["revocation_type"]
        record.revocationPercentage = row["revocation_percentage"]
        record.billingPlanType = row["billing_plan_type"]
        let periodNumber: Int? = row["commitment_period_number"]
        let totalPeriods: Int? = row["commitment_total_periods"]
        let commitmentEnds = StoredTime.date(row["commitment_expires_date"] as Int64?)
        if periodNumber != nil || totalPeriods != nil || commitmentEnds != nil {
            record.commitment = CommitmentTerms(billingPeriodNumber: periodNumber, totalBillingPeriods: totalPeriods, expiresDate: commitmentEnds)
        }
        if let offerType: Int = row["offer_type"] {
            record.offer = PurchaseOffer(
                type: offerType, identifier: row["offer_identifier"], discountType: row["offer_discount_type"], period: row["offer_period"])
        }
        record.imported = row["imported"]
        if let milliunits: Int64 = row["price_milliunits"], let currency: String = row["price_currency"] {
            record.price = ChargedPrice(milliunits: milliunits, currency: currency)
        }
        record.storefront = row["storefront"]
        return record
    }

    static func subscription(from row: Row) -> SubscriptionFacts {
        var facts = SubscriptionFacts(
            appId: row["app_id"], originalTransactionId: row["original_transaction_id"], appUserId: row["app_user_id"],
            productId: row["product_id"], environment: row["environment"], latestTransactionId: row["latest_transaction_id"],
            expiresDate: StoredTime.date(row["expires_date"] as Int64?), revokedAt: StoredTime.date(row["revoked_at"] as Int64?),
            autoRenewEnabled: row["auto_renew_enabled"], autoRenewProductId: row["auto_renew_product_id"],
            inBillingRetry: row["in_billing_retry"],
            gracePeriodExpiresDate: StoredTime.date(row["grace_period_expires_date"] as Int64?),
            expirationIntent: row["expiration_intent"], updatedAt: StoredTime.date(row["updated_at"] as Int64))
        facts.renewalSignedAt = StoredTime.date(row["renewal_signed_at"] as Int64?)
        facts.winBackOfferIds = StoredJSON.decode([String].self, row["win_back_offer_ids"] as String?)
        facts.priceIncreaseStatus = row["price_increase_status"]
        return facts
    }

    // MARK: Subscribers and ledger

    public func transactions(appId: String, appUserId: String) async throws -> [TransactionRecord] {
        try await read { db in try Self.transactions(db, appId: appId, appUserId: appUserId) }
    }

    public func transactions(appId: String, appTransactionId: String) async throws -> [TransactionRecord] {
        try await read { db in
            try Row.fetchAll(
                db.cachedStatement(
                    sql: "SELECT * FROM transactions WHERE app_id = ? AND app_transaction_id = ? ORDER BY purchase_date, transaction_id"),
                arguments: [appId, appTransactionId]
            ).map(Self.transaction(from:))
        }
    }

    public func subscriptions(appId: String, appUserId: String) async throws -> [SubscriptionFacts] {
        try await read { db in try Self.subscriptions(db, appId: appId, appUserId: appUserId) }
    }

    public func transactions(appId: String, environment: String, purchasedBefore before: Date) async throws -> [TransactionRecord] {
        try await read { db in
            try Row.fetchAll(
                db.cachedStatement(
                    sql: """
                        SELECT * FROM transactions WHERE app_id = ? AND environment = ? AND purchase_date < ?
                        ORDER BY purchase_date, transaction_id
                        """), arguments: [appId, environment, StoredTime.ms(before)]
            ).map(Self.transaction(from:))
        }
    }

    public func subscriptions(appId: String, environment: String) async throws -> [SubscriptionFacts] {
        try await read { db in
            try Row.fetchAll(
                db.cachedStatement(sql: "SELECT * FROM subscriptions WHERE app_id = ? AND environment = ? ORDER BY original_transaction_id"),
                arguments: [appId, environment]
            ).map(Self.subscription(from:))
        }
    }

    static func transactions(_ db: Database, appId: String, appUserId: String) throws -> [TransactionRecord] {
        try Row.fetchAll(
            db.cachedStatement(sql: "SELECT * FROM transactions WHERE app_id = ? AND app_user_id = ? ORDER BY purchase_date, transaction_id"),
            arguments: [appId, appUserId]
        ).map(transaction(from:))
    }

    static func subscriptions(_ db: Database, appId: String, appUserId: String) throws -> [SubscriptionFacts] {
        try Row.fetchAll(
            db.cachedStatement(sql: "SELECT * FROM subscriptions WHERE app_id = ? AND app_user_id = ? ORDER BY original_transaction_id"),
            arguments: [appId, appUserId]
        ).map(subscription(from:))
    }

    public func ledger(_ query: LedgerQuery) async throws -> [LedgerEntry] {
        try await read { db in
            var arguments: StatementArguments = [query.appId, query.environment, StoredTime.ms(query.from), StoredTime.ms(query.to)]
            var after = ""
            if let position = query.after {
                after = "AND (purchase_date, transaction_id, event) > (?, ?, ?)"
                arguments += [StoredTime.ms(position.purchaseDate), position.transactionId, position.event.rawValue]
            }
            var limit = ""
            if let count = query.limit {
                limit = "LIMIT ?"
                arguments += [count]
            }
            return try Row.fetchAll(
                db.cachedStatement(
                    sql: """
                        SELECT * FROM ledger WHERE app_id = ? AND environment = ? AND purchase_date >= ? AND purchase_date < ? \(after)
                        ORDER BY purchase_date, transaction_id, event \(limit)
                        """), arguments: arguments
            ).map(Self.ledgerEntry(from:))
        }
    }

    static func ledgerEntry(from row: Row) -> LedgerEntry {
        var entry = LedgerEntry(
            appId: row["app_id"], appUserId: row["app_user_id"], productId: row["product_id"],
            productType: ProductType(rawValue: row["product_type"]), transactionId: row["transaction_id"],
            originalTransactionId: row["original_transaction_id"], environment: row["environment"],
            purchaseDate: StoredTime.date(row["purchase_date"] as Int64),
            event: LedgerEntry.Event(rawValue: row["event"]) ?? .purchase, quantity: row["quantity"],
            priceMicros: row["price_micros"], currency: row["currency"], state: row["state"],
            recordedAt: StoredTime.date(row["recorded_at"] as Int64))
        entry.imported = row["imported"]
        entry.estimated = row["estimated"]
        entry.storefront = row["storefront"]
        if let offerType: Int = row["offer_type"] {
            entry.offer = PurchaseOffer(
                type: offerType, identifier: row["offer_identifier"], discountType: row["offer_discount_type"], period: row["offer_period"])
        }
        entry.commissionRate = row["commission_rate"]
        entry.proceedsMicros = row["proceeds_micros"]
        return entry
    }

    public func countTransactions(appId: String?) async throws -> Int {
        try await read { db in
            if let appId {
                return try Int.fetchOne(db.cachedStatement(sql: "SELECT COUNT(*) FROM transactions WHERE app_id = ?"), arguments: [appId]) ?? 0
            }
            return try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM transactions") ?? 0
        }
    }
}

extension SQLiteStore: StorekeeperStore {}

extension Array {
    func chunked(_ size: Int) -> [ArraySlice<Element>] {
        stride(from: 0, to: count, by: size).map { self[$0..<Swift.min($0 + size, count)] }
    }
}
