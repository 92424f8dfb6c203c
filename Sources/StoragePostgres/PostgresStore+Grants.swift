public import Foundation
import JobQueue
import Logging
public import Persistence
import PostgresNIO
public import StorekeeperDomain

extension PostgresStore {
    static func apply(_ plan: GrantPlan, appId: String, connection: PostgresConnection, now: Date, logger: Logger) async throws {
        let nowMs = StoredTime.ms(now)
        for binding in plan.bindings {
            try await connection.execute(
                """
                INSERT INTO ownership_bindings (app_id, original_transaction_id, app_user_id, product_id, bound_at)
                VALUES (\(binding.appId), \(binding.originalTransactionId), \(binding.appUserId), \(binding.productId), \(nowMs))
                ON CONFLICT (app_id, original_transaction_id) DO UPDATE SET app_user_id = excluded.app_user_id,
                    bound_at = excluded.bound_at
                """, prepared: true, logger: logger)
        }
        for transfer in plan.transfers {
            try await connection.execute(
                """
                UPDATE transactions SET app_user_id = \(transfer.toAppUserId)
                WHERE app_id = \(appId) AND original_transaction_id = \(transfer.originalTransactionId)
                """, prepared: true, logger: logger)
            try await connection.execute(
                """
                UPDATE subscriptions SET app_user_id = \(transfer.toAppUserId)
                WHERE app_id = \(appId) AND original_transaction_id = \(transfer.originalTransactionId)
                """, prepared: true, logger: logger)
        }
        for tx in plan.newTransactions {
            // The primary key (app_id, transaction_id) is the exactly-once guard; DO NOTHING means "already granted".
            try await connection.execute(
                """
                INSERT INTO transactions (app_id, transaction_id, app_user_id, original_transaction_id, product_id,
                    product_type, environment, purchase_date, original_purchase_date, expires_date, cancellation_date,
                    quantity, credits, ownership_type, verification_id, created_at, reinstated_at, app_transaction_id,
                    revocation_type, revocation_percentage, billing_plan_type, commitment_period_number, commitment_total_periods,
                    commitment_expires_date, offer_type, offer_identifier, offer_discount_type, offer_period, imported,
                    price_milliunits, price_currency, storefront, app_account_token)
                VALUES (\(tx.appId), \(tx.transactionId), \(tx.appUserId), \(tx.originalTransactionId), \(tx.productId),
                    \(tx.productType.rawValue), \(tx.environment), \(StoredTime.ms(tx.purchaseDate)),
                    \(StoredTime.ms(tx.originalPurchaseDate)), \(StoredTime.ms(tx.expiresDate)), \(StoredTime.ms(tx.cancellationDate)),
                    \(Int64(tx.quantity)), \(Int64(tx.credits)), \(tx.ownershipType), \(tx.verificationId), \(nowMs),
                    \(StoredTime.ms(tx.reinstatedAt)), \(tx.appTransactionId), \(tx.revocationType),
                    \(tx.revocationPercentage.map(Int64.init)), \(tx.billingPlanType), \(tx.commitment?.billingPeriodNumber.map(Int64.init)),
                    \(tx.commitment?.totalBillingPeriods.map(Int64.init)), \(StoredTime.ms(tx.commitment?.expiresDate)),
                    \(tx.offer.map { Int64($0.type) }), \(tx.offer?.identifier), \(tx.offer?.discountType), \(tx.offer?.period),
                    \(tx.imported), \(tx.price?.milliunits), \(tx.price?.currency), \(tx.storefront),
                    \(tx.appAccountToken))
                ON CONFLICT (app_id, transaction_id) DO NOTHING
                """, prepared: true, logger: logger)
        }
        for tx in plan.revokedTransactions {
            try await connection.execute(
                """
                UPDATE transactions SET cancellation_date = \(StoredTime.ms(tx.cancellationDate)),
                    revocation_type = \(tx.revocationType), revocation_percentage = \(tx.revocationPercentage.map(Int64.init))
                WHERE app_id = \(tx.appId) AND transaction_id = \(tx.transactionId) AND cancellation_date IS NULL
                """, prepared: true, logger: logger)
        }
        for tx in plan.reinstatedTransactions {
            try await connection.execute(
                """
                UPDATE transactions SET cancellation_date = NULL, reinstated_at = \(StoredTime.ms(tx.reinstatedAt)),
                    revocation_type = NULL, revocation_percentage = NULL
                WHERE app_id = \(tx.appId) AND transaction_id = \(tx.transactionId)
                """, prepared: true, logger: logger)
        }
        for tx in plan.annotatedTransactions {
            try await connection.execute(
                """
                UPDATE transactions SET app_transaction_id = COALESCE(app_transaction_id, \(tx.appTransactionId)),
                    app_account_token = COALESCE(app_account_token, \(tx.appAccountToken))
                WHERE app_id = \(tx.appId) AND transaction_id = \(tx.transactionId)
                """, prepared: true, logger: logger)
        }
        var insertedLedger: [LedgerEntry] = []
        for entry in plan.ledger {
            let inserted = try await connection.count(
                """
                INSERT INTO ledger (app_id, app_user_id, product_id, product_type, transaction_id, original_transaction_id,
                    environment, purchase_date, event, quantity, price_micros, currency, state, recorded_at, imported, estimated,
                    storefront, offer_type, offer_identifier, offer_discount_type, offer_period, commission_rate, proceeds_micros)
                VALUES (\(entry.appId), \(entry.appUserId), \(entry.productId), \(entry.productType.rawValue), \(entry.transactionId),
                    \(entry.originalTransactionId), \(entry.environment), \(StoredTime.ms(entry.purchaseDate)), \(entry.event.rawValue),
                    \(Int64(entry.quantity)), \(entry.priceMicros), \(entry.currency), \(entry.state), \(StoredTime.ms(entry.recordedAt)),
                    \(entry.imported), \(entry.estimated), \(entry.storefront), \(entry.offer.map { Int64($0.type) }),
                    \(entry.offer?.identifier), \(entry.offer?.discountType), \(entry.offer?.period),
                    \(entry.commissionRate.map(Int64.init)), \(entry.proceedsMicros))
                ON CONFLICT (app_id, transaction_id, event) DO NOTHING RETURNING 1
                """, prepared: true, logger: logger)
            if inserted > 0 { insertedLedger.append(entry) }
        }
        for facts in plan.subscriptions {
            try await connection.execute(
                """
                INSERT INTO subscriptions (app_id, original_transaction_id, app_user_id, product_id, environment,
                    latest_transaction_id, expires_date, revoked_at, auto_renew_enabled, auto_renew_product_id,
                    in_billing_retry, grace_period_expires_date, expiration_intent, updated_at, renewal_signed_at,
                    win_back_offer_ids, price_increase_status)
                VALUES (\(facts.appId), \(facts.originalTransactionId), \(facts.appUserId), \(facts.productId), \(facts.environment),
                    \(facts.latestTransactionId), \(StoredTime.ms(facts.expiresDate)), \(StoredTime.ms(facts.revokedAt)),
                    \(facts.autoRenewEnabled), \(facts.autoRenewProductId), \(facts.inBillingRetry),
                    \(StoredTime.ms(facts.gracePeriodExpiresDate)), \(facts.expirationIntent), \(StoredTime.ms(facts.updatedAt)),
                    \(StoredTime.ms(facts.renewalSignedAt)), \(facts.winBackOfferIds.map(StoredJSON.encode)),
                    \(facts.priceIncreaseStatus))
                ON CONFLICT (app_id, original_transaction_id) DO UPDATE SET app_user_id = excluded.app_user_id,
                    product_id = excluded.product_id, environment = excluded.environment,
                    latest_transaction_id = excluded.latest_transaction_id, expires_date = excluded.expires_date,
                    revoked_at = excluded.revoked_at, auto_renew_enabled = excluded.auto_renew_enabled,
                    auto_renew_product_id = excluded.auto_renew_product_id, in_billing_retry = excluded.in_billing_retry,
                    grace_period_expires_date = excluded.grace_period_expires_date,
                    expiration_intent = excluded.expiration_intent, updated_at = excluded.updated_at,
                    renewal_signed_at = excluded.renewal_signed_at, win_back_offer_ids = excluded.win_back_offer_ids,
                    price_increase_status = excluded.price_increase_status
                """, prepared: true, logger: logger)
        }
        try await keepFigures(plan, appId: appId, insertedLedger: insertedLedger, connection: connection, logger: logger)
    }

    // MARK: Loading what the planner reads

    static func loadTransactions(
        _ connection: PostgresConnection, appId: String, ids: [String], logger: Logger
    ) async throws -> [String: TransactionRecord] {
        guard !ids.isEmpty else { return [:] }
        var result: [String: TransactionRecord] = [:]
        for row in try await connection.rows(
            "SELECT * FROM transactions WHERE app_id = \(appId) AND transaction_id = ANY(\(ids))", logger: logger)
        {
            let tx = try transaction(from: row)
            result[tx.transactionId] = tx
        }
        return result
    }

    static func loadSubscriptions(
        _ connection: PostgresConnection, appId: String, originalIds: [String], logger: Logger
    ) async throws -> [String: SubscriptionFacts] {
        guard !originalIds.isEmpty else { return [:] }
        var result: [String: SubscriptionFacts] = [:]
        for row in try await connection.rows(
            "SELECT * FROM subscriptions WHERE app_id = \(appId) AND original_transaction_id = ANY(\(originalIds))", logger: logger)
        {
            let facts = try subscription(from: row)
            result[facts.originalTransactionId] = facts
        }
        return result
    }

    static func transaction(from row: some StoredRow) throws -> TransactionRecord {
        var record = TransactionRecord(
            appId: try row.value("app_id"), appUserId: try row.value("app_user_id"), transactionId: try row.value("transaction_id"),
            originalTransactionId: try row.value("original_transaction_id"), productId: try row.value("product_id"),
            productType: ProductType(rawValue: try row.value("product_type")), environment: try row.value("environment"),
            purchaseDate: try row.date("purchase_date"), originalPurchaseDate: try row.optionalDate("original_purchase_date"),
            expiresDate: try row.optionalDate("expires_date"), cancellationDate: try row.optionalDate("cancellation_date"),
            quantity: Int(try row.value("quantity", as: Int64.self)), credits: Int(try row.value("credits", as: Int64.self)),
            ownershipType: try row.value("ownership_type"), verificationId: try row.value("verification_id"))
        record.reinstatedAt = try row.optionalDate("reinstated_at")
        record.appTransactionId = try row.value("app_transaction_id")
        record.appAccountToken = try row.value("app_account_token")
        record.revocationType = try row.value("revocation_type")
        record.revocationPercentage = try row.value("revocation_percentage", as: Int64?.self).map(Int.init)
        record.billingPlanType = try row.value("billing_plan_type")
        let periodNumber = try row.value("commitment_period_number", as: Int64?.self).map(Int.init)
        let totalPeriods = try row.value("commitment_total_periods", as: Int64?.self).map(Int.init)
        let commitmentEnds = try row.optionalDate("commitment_expires_date")
        if periodNumber != nil || totalPeriods != nil || commitmentEnds != nil {
            record.commitment = CommitmentTerms(billingPeriodNumber: periodNumber, totalBillingPeriods: totalPeriods, expiresDate: commitmentEnds)
        }
        if let offerType = try row.value("offer_type", as: Int64?.self) {
            record.offer = PurchaseOffer(
                type: Int(offerType), identifier: try row.value("offer_identifier"), discountType: try row.value("offer_discount_type"),
                period: try row.value("offer_period"))
        }
        record.imported = try row.value("imported", as: Bool.self)
        if let milliunits = try row.value("price_milliunits", as: Int64?.self), let currency = try row.value("price_currency", as: String?.self) {
            record.price = ChargedPrice(milliunits: milliunits, currency: currency)
        }
        record.storefront = try row.value("storefront")
        return record
    }

    static func subscription(from row: some StoredRow) throws -> SubscriptionFacts {
        var facts = SubscriptionFacts(
            appId: try row.value("app_id"), originalTransactionId: try row.value("original_transaction_id"),
            appUserId: try row.value("app_user_id"), productId: try row.value("product_id"), environment: try row.value("environment"),
            latestTransactionId: try row.value("latest_transaction_id"), expiresDate: try row.optionalDate("expires_date"),
            revokedAt: try row.optionalDate("revoked_at"), autoRenewEnabled: try row.value("auto_renew_enabled"),
            autoRenewProductId: try row.value("auto_renew_product_id"), inBillingRetry: try row.value("in_billing_retry"),
            gracePeriodExpiresDate: try row.optionalDate("grace_period_expires_date"),
            expirationIntent: try row.value("expiration_intent"), updatedAt: try row.date("updated_at"))
        facts.renewalSignedAt = try row.optionalDate("renewal_signed_at")
        facts.winBackOfferIds = StoredJSON.decode([String].self, try row.value("win_back_offer_ids") as String?)
        facts.priceIncreaseStatus = try row.value("price_increase_status")
        return facts
    }

    // MARK: Subscribers and ledger

    public func transactions(appId: String, appUserId: String) async throws -> [TransactionRecord] {
        try await read { connection in try await Self.transactions(connection, appId: appId, appUserId: appUserId, logger: self.logger) }
    }

    public func transactions(appId: String, appTransactionId: String) async throws -> [TransactionRecord] {
        try await read { connection in
            try await connection.rows(
                """
                SELECT * FROM transactions WHERE app_id = \(appId) AND app_transaction_id = \(appTransactionId)
                ORDER BY purchase_date, transaction_id
                """, logger: self.logger
            ).map(Self.transaction(from:))
        }
    }

    public func subscriptions(appId: String, appUserId: String) async throws -> [SubscriptionFacts] {
        try await read { connection in try await Self.subscriptions(connection, appId: appId, appUserId: appUserId, logger: self.logger) }
    }

    public func transactions(appId: String, environment: String, purchasedBefore before: Date) async throws -> [TransactionRecord] {
        try await read { connection in
            try await connection.rows(
                """
                SELECT * FROM transactions WHERE app_id = \(appId) AND environment = \(environment)
                  AND purchase_date < \(StoredTime.ms(before))
                ORDER BY purchase_date, transaction_id
                """, logger: self.logger
            ).map(Self.transaction(from:))
        }
    }

    public func subscriptions(appId: String, environment: String) async throws -> [SubscriptionFacts] {
        try await read { connection in
            try await connection.rows(
                """
                SELECT * FROM subscriptions WHERE app_id = \(appId) AND environment = \(environment)
                ORDER BY original_transaction_id
                """, logger: self.logger
            ).map(Self.subscription(from:))
        }
    }

    static func transactions(
        _ connection: PostgresConnection, appId: String, appUserId: String, logger: Logger
    ) async throws -> [TransactionRecord] {
        try await connection.rows(
            """
            SELECT * FROM transactions WHERE app_id = \(appId) AND app_user_id = \(appUserId)
            ORDER BY purchase_date, transaction_id
            """, logger: logger
        ).map(transaction(from:))
    }

    static func subscriptions(
        _ connection: PostgresConnection, appId: String, appUserId: String, logger: Logger
    ) async throws -> [SubscriptionFacts] {
        try await connection.rows(
            """
            SELECT * FROM subscriptions WHERE app_id = \(appId) AND app_user_id = \(appUserId)
            ORDER BY original_transaction_id
            """, logger: logger
        ).map(subscription(from:))
    }

    public func ledger(_ query: LedgerQuery) async throws -> [LedgerEntry] {
        // Without a position or a limit, the bounds stand in for them (a position before every
        // entry, no limit), so there is one statement.
        let position = query.after ?? LedgerPosition(purchaseDate: query.from, transactionId: "", event: .purchase)
        let afterDate = query.after == nil ? Int64.min : StoredTime.ms(position.purchaseDate)
        let limit = query.limit.map(Int64.init) ?? Int64.max
        return try await read { connection in
            try await connection.rows(
                """
                SELECT * FROM ledger WHERE app_id = \(query.appId) AND environment = \(query.environment)
                  AND purchase_date >= \(StoredTime.ms(query.from)) AND purchase_date < \(StoredTime.ms(query.to))
                  AND (purchase_date, transaction_id, event) > (\(afterDate), \(position.transactionId), \(position.event.rawValue))
                ORDER BY purchase_date, transaction_id, event LIMIT \(limit)
                """, logger: self.logger
            ).map(Self.ledgerEntry(from:))
        }
    }

    static func ledgerEntry(from row: PostgresRandomAccessRow) throws -> LedgerEntry {
        var entry = LedgerEntry(
            appId: try row.value("app_id"), appUserId: try row.value("app_user_id"), productId: try row.value("product_id"),
            productType: ProductType(rawValue: try row.value("product_type")), transactionId: try row.value("transaction_id"),
            originalTransactionId: try row.value("original_transaction_id"), environment: try row.value("environment"),
            purchaseDate: try row.date("purchase_date"), event: LedgerEntry.Event(rawValue: try row.value("event")) ?? .purchase,
            quantity: Int(try row.value("quantity", as: Int64.self)), priceMicros: try row.value("price_micros", as: Int64?.self),
            currency: try row.value("currency"), state: try row.value("state"), recordedAt: try row.date("recorded_at"))
        entry.imported = try row.value("imported", as: Bool.self)
        entry.estimated = try row.value("estimated", as: Bool.self)
        entry.storefront = try row.value("storefront")
        if let offerType = try row.value("offer_type", as: Int64?.self) {
            entry.offer = PurchaseOffer(
                type: Int(offerType), identifier: try row.value("offer_identifier"), discountType: try row.value("offer_discount_type"),
                period: try row.value("offer_period"))
        }
        entry.commissionRate = try row.value("commission_rate", as: Int64?.self).map(Int.init)
        entry.proceedsMicros = try row.value("proceeds_micros", as: Int64?.self)
        return entry
    }

    public func countTransactions(appId: String?) async throws -> Int {
        try await read { connection in
            let rows = try await connection.rows(
                "SELECT COUNT(*) AS n FROM transactions WHERE (\(appId)::text IS NULL OR app_id = \(appId))", logger: self.logger)
            return Int(try rows.first?.value("n", as: Int64.self) ?? 0)
        }
    }
}

extension PostgresStore: StorekeeperStore {}
