import AppStoreModels
import Foundation

extension SimulatedAppStore {
    /// The StoreKit 2 signed transaction a device receives for `transaction`: Apple's JSON
    /// shape (`JWSTransactionDecodedPayload`), signed by the simulator's chain.
    func signedTransaction(_ transaction: SimulatorState.Transaction, now: Date) async throws -> String {
        guard let device = await state.device(transaction.deviceId) else {
            throw SimulatorState.Failure(status: 404, code: "unknown_device", message: "no device")
        }
        let product = await state.app(device.bundleId)?.products.first { $0.productId == transaction.productId }
        func ms(_ date: Date) -> Int64 { Int64((date.timeIntervalSince1970 * 1000).rounded()) }
        var payload: [String: Any] = [
            "transactionId": transaction.transactionId,
            "originalTransactionId": transaction.originalTransactionId,
            "bundleId": device.bundleId,
            "productId": transaction.productId,
            "purchaseDate": ms(transaction.purchaseDate),
            "originalPurchaseDate": ms(transaction.originalPurchaseDate),
            "quantity": transaction.quantity,
            "type": Self.storeKitType(transaction.kind),
            "inAppOwnershipType": transaction.ownership,
            "signedDate": ms(now),
            "environment": device.environment == .production ? "Production" : "Sandbox",
            "transactionReason": transaction.transactionId == transaction.originalTransactionId ? "PURCHASE" : "RENEWAL",
            "storefront": "USA",
            "storefrontId": "143441",
            "appTransactionId": device.appTransactionId,
        ]
        if let expires = transaction.expiresDate { payload["expiresDate"] = ms(expires) }
        if let revoked = transaction.cancellationDate {
            payload["revocationDate"] = ms(revoked)
            payload["revocationReason"] = transaction.revocationReason ?? 0
            // Apple sends both with every revocation date (API 1.19, Notifications 2.20).
            payload["revocationType"] = transaction.revocationType ?? "REFUND_FULL"
            payload["revocationPercentage"] = transaction.revocationPercentage ?? 100_000
        }
        if let line = transaction.webOrderLineItemId { payload["webOrderLineItemId"] = line }
        if let token = transaction.appAccountToken { payload["appAccountToken"] = token }
        if let group = product?.subscriptionGroupIdentifier { payload["subscriptionGroupIdentifier"] = group }
        // StoreKit 2 prices are in milli-units of the currency.
        if let micros = transaction.priceMicros ?? product?.priceMicros {
            payload["price"] = micros / 1000 * (transaction.billedUpfront ? Int64(SimulatorState.paymentsPerCommitment) : 1)
        }
        if transaction.billedUpfront { payload["billingPlanType"] = "BILLED_UPFRONT" }
        if let currency = product?.currency { payload["currency"] = currency }
        if let offer = transaction.offer {
            payload["offerType"] = offer.type
            payload["offerDiscountType"] = offer.discountType
            if let identifier = offer.identifier { payload["offerIdentifier"] = identifier }
            if let period = offer.period { payload["offerPeriod"] = period }
            if offer.discountType == "FREE_TRIAL" { payload["price"] = 0 }
            if let micros = offer.priceMicros { payload["price"] = micros / 1000 }
        }
        // Ordinary subscriptions carry no `billingPlanType`: Apple documents `BILLED_UPFRONT`
        // as a value, not that every upfront transaction is labelled with it.
        if let position = await state.commitmentPosition(of: transaction) {
            var commitment: [String: Any] = [
                "billingPeriodNumber": position.billingPeriod,
                "totalBillingPeriods": SimulatorState.paymentsPerCommitment,
                "commitmentExpiresDate": ms(commitmentEnd(position, product: product)),
            ]
            if let price = Self.commitmentPrice(product) { commitment["commitmentPrice"] = price }
            payload["billingPlanType"] = "MONTHLY"
            payload["commitmentInfo"] = commitment
        }
        let json = try JSONSerialization.data(withJSONObject: payload, options: [.sortedKeys])
        return try pki.signJWS(payload: Array(json))
    }

    /// When a commitment ends: twelve monthly periods after its first payment (accelerated like
    /// every period), whatever billing retries or extensions did to the payments in between.
    func commitmentEnd(_ position: SimulatorState.CommitmentPosition, product: SimulatedProduct?) -> Date {
        let period = configuration.acceleratedSeconds(forPeriod: product?.period)
        return position.start.addingTimeInterval(Double(SimulatorState.paymentsPerCommitment) * period)
    }

    /// The whole commitment's price in milli-units: twelve monthly payments.
    static func commitmentPrice(_ product: SimulatedProduct?) -> Int64? {
        guard let micros = product?.priceMicros else { return nil }
        return micros / 1000 * Int64(SimulatorState.paymentsPerCommitment)
    }

    /// The signed renewal info of a subscription: what Apple will do at its next renewal date.
    func signedRenewalInfo(_ subscription: SimulatorState.Subscription, now: Date) async throws -> String {
        guard let device = await state.device(subscription.deviceId) else {
            throw SimulatorState.Failure(status: 404, code: "unknown_device", message: "no device")
        }
        let latest = await state.transaction(subscription.latestTransactionId)
        let product = await state.app(device.bundleId)?.products.first { $0.productId == subscription.productId }
        func ms(_ date: Date) -> Int64 { Int64((date.timeIntervalSince1970 * 1000).rounded()) }
        var payload: [String: Any] = [
            "originalTransactionId": subscription.originalTransactionId,
            "productId": subscription.productId,
            "autoRenewProductId": subscription.autoRenewProductId ?? subscription.productId,
            "autoRenewStatus": subscription.autoRenew ? 1 : 0,
            "isInBillingRetryPeriod": subscription.billingFailedAt != nil,
            "signedDate": ms(now),
            "environment": device.environment == .production ? "Production" : "Sandbox",
            "appTransactionId": device.appTransactionId,
        ]
        if let token = latest?.appAccountToken { payload["appAccountToken"] = token }
        if let expires = latest?.expiresDate { payload["renewalDate"] = ms(expires) }
        if let original = latest?.originalPurchaseDate { payload["recentSubscriptionStartDate"] = ms(original) }
        if let intent = Self.expirationIntent(subscription, latest: latest, now: now) { payload["expirationIntent"] = intent }
        if let grace = subscription.graceUntil { payload["gracePeriodExpiresDate"] = ms(grace) }
        // A subscriber who let the subscription lapse (not one Apple still tries to charge, not
        // a refunded one) may be won back with the group's win-back offers.
        let lapsed = subscription.billingFailedAt == nil && latest?.cancellationDate == nil && (latest?.expiresDate.map { $0 <= now } ?? false)
        let group = product?.subscriptionGroupIdentifier
        let winBack = (await state.app(device.bundleId)?.products ?? []).filter { $0.subscriptionGroupIdentifier == group }
            .flatMap { $0.offers ?? [] }.filter { $0.winBack == true }.map(\.id)
        if lapsed, !winBack.isEmpty { payload["eligibleWinBackOfferIds"] = winBack }
        // What the next period costs, in milli-units like a transaction's price.
        if let status = subscription.priceIncreaseStatus { payload["priceIncreaseStatus"] = status }
        if let micros = subscription.priceIncrease?.priceMicros ?? subscription.priceMicros ?? product?.priceMicros,
            let currency = product?.currency
        {
            payload["renewalPrice"] = micros / 1000 * (subscription.billedUpfront ? Int64(SimulatorState.paymentsPerCommitment) : 1)
            if subscription.billedUpfront { payload["renewalBillingPlanType"] = "BILLED_UPFRONT" }
            payload["currency"] = currency
        }
        // A commitment plan renews month by month, and at the commitment's end into another
        // commitment of the same product, if auto-renew is still on then.
        if let latest, let position = await state.commitmentPosition(of: latest) {
            var commitment: [String: Any] = [
                "commitmentAutoRenewProductId": subscription.productId,
                "commitmentAutoRenewStatus": subscription.autoRenew ? 1 : 0,
                "commitmentRenewalBillingPlanType": "MONTHLY",
                "commitmentRenewalDate": ms(commitmentEnd(position, product: product)),
            ]
            if let price = Self.commitmentPrice(product) { commitment["commitmentRenewalPrice"] = price }
            payload["renewalBillingPlanType"] = "MONTHLY"
            payload["commitmentInfo"] = commitment
        }
        let json = try JSONSerialization.data(withJSONObject: payload, options: [.sortedKeys])
        return try pki.signJWS(payload: Array(json))
    }

    /// Why the subscription lapsed, once it has: 2 billing error while Apple retries the charge,
    /// else 1 the customer turned auto-renew off, 3 they did not agree to a price increase, 4 the product stopped renewing (the sandbox's
    /// renewal limit). Nil while a period is running: turning auto-renew off says what will
    /// happen, not what happened.
    static func expirationIntent(_ subscription: SimulatorState.Subscription, latest: SimulatorState.Transaction?, now: Date) -> Int? {
        if subscription.billingFailedAt != nil { return 2 }
        guard let expires = latest?.expiresDate, expires <= now else { return nil }
        if subscription.declinedPriceIncrease { return 3 }
        return subscription.autoRenew ? 4 : 1
    }

    /// Apple's subscription status code for the Server API and notifications: 1 active,
    /// 2 expired, 3 billing retry, 4 grace period, 5 revoked.
    func subscriptionStatus(_ subscription: SimulatorState.Subscription, now: Date) async -> Int {
        let latest = await state.transaction(subscription.latestTransactionId)
        if latest?.cancellationDate != nil { return 5 }
        if let grace = subscription.graceUntil, grace > now { return 4 }
        if subscription.billingFailedAt != nil { return 3 }
        return (latest?.expiresDate ?? .distantPast) > now ? 1 : 2
    }

    static func storeKitType(_ kind: SimulatedProduct.Kind) -> String {
        switch kind {
        case .consumable: SignedProductType.consumable.rawValue
        case .nonConsumable: SignedProductType.nonConsumable.rawValue
        case .autoRenewable: SignedProductType.autoRenewable.rawValue
        case .nonRenewing, .freeSubscription: SignedProductType.nonRenewing.rawValue
        }
    }
}
