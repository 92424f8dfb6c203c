public import AppStoreModels
public import Foundation

/// The edge: each kind of verified Apple answer becomes `PurchaseEvidence` here, once.
extension PurchaseEvidence {
    /// A verified verifyReceipt answer: `receipt.in_app` and `latest_receipt_info` together, one
    /// entry per transaction id (the arrays are unsorted and overlap; a cancellation seen in
    /// either copy wins), and the pending renewal infos. Nil when the answer holds no receipt.
    /// `askedAt`: when verifyReceipt was called; `latest_receipt_info` is Apple's state then.
    public init?(verifyReceipt response: VerifyReceiptResponse, environment: AppStoreEnvironment, askedAt: Date? = nil) {
        guard let receipt = response.receipt else { return nil }
        var byId: [String: Purchase] = [:]
        let inApp = (receipt.inApp ?? []).map { ($0, false) }
        let latest = (response.latestReceiptInfo ?? []).map { ($0, true) }
        for (raw, current) in inApp + latest {
            guard let id = raw.transactionId?.value, !id.isEmpty, let productId = raw.productId, !productId.isEmpty else { continue }
            let original = raw.originalTransactionId?.value
            var purchase = Purchase(
                transactionId: id, originalTransactionId: original?.isEmpty == false ? original ?? id : id, productId: productId,
                quantity: max(1, raw.quantity?.int ?? 1), purchaseDate: raw.purchaseDateMs?.millisecondsDate ?? .distantPast,
                originalPurchaseDate: raw.originalPurchaseDateMs?.millisecondsDate, expiresDate: raw.expiresDateMs?.millisecondsDate,
                cancellationDate: raw.cancellationDateMs?.millisecondsDate, ownershipType: raw.inAppOwnershipType,
                currentAt: current ? askedAt : nil)
            purchase.offer = Self.offer(raw)
            if var known = byId[id] {
                known.cancellationDate = known.cancellationDate ?? purchase.cancellationDate
                known.offer = known.offer ?? purchase.offer
                known.expiresDate = known.expiresDate ?? purchase.expiresDate
                known.currentAt = known.currentAt ?? purchase.currentAt
                byId[id] = known
            } else {
                byId[id] = purchase
            }
        }
        var renewals: [String: Renewal] = [:]
        for pending in response.pendingRenewalInfo ?? [] {
            guard let original = pending.originalTransactionId?.value, renewals[original] == nil else { continue }
            var renewal = Renewal(
                autoRenewEnabled: pending.autoRenewStatus?.bool, autoRenewProductId: pending.autoRenewProductId,
                inBillingRetry: pending.isInBillingRetryPeriod?.bool ?? false,
                gracePeriodExpiresDate: pending.gracePeriodExpiresDateMs?.millisecondsDate, expirationIntent: pending.expirationIntent?.value)
            renewal.priceIncreaseStatus = pending.priceConsentStatus?.int
            renewals[original] = renewal
        }
        self.init(
            source: .receipt, bundleId: receipt.bundleId, environment: environment.storageName, purchases: Array(byId.values),
            renewals: renewals)
    }

    /// A receipt's offer fields as Apple's offer types: an offer code (3) or a promotional offer
    /// (2) by their names; otherwise an introductory offer (1), a free trial when
    /// `is_trial_period` says so. A receipt does not give the offer's period.
    static func offer(_ raw: InAppTransaction) -> PurchaseOffer? {
        if let code = raw.offerCodeRefName?.value, !code.isEmpty {
            return PurchaseOffer(
                type: PurchaseOffer.offerCode, identifier: code, discountType: raw.isTrialPeriod?.bool == true ? PurchaseOffer.freeTrial : nil)
        }
        if let promotion = raw.promotionalOfferId?.value, !promotion.isEmpty {
            return PurchaseOffer(type: PurchaseOffer.promotional, identifier: promotion)
        }
        if raw.isTrialPeriod?.bool == true { return PurchaseOffer(type: PurchaseOffer.introductory, discountType: PurchaseOffer.freeTrial) }
        if raw.isInIntroOfferPeriod?.bool == true { return PurchaseOffer(type: PurchaseOffer.introductory) }
        return nil
    }

    public enum SignedDataFailure: Error, Hashable, Sendable {
        /// A field without which nothing can be granted is missing.
        case missingField(String)
    }

    /// Verified StoreKit 2 transactions (one from the app or a notification, or a customer's
    /// Server API history) and the renewal infos that came with them, matched to their
    /// subscriptions by original transaction id.
    public init(
        signedTransactions transactions: [SignedTransaction], renewals: [SignedRenewalInfo], environment: AppStoreEnvironment,
        source: Source
    ) throws {
        var purchases: [Purchase] = []
        var subscribed = Set<String>()
        for transaction in transactions {
            guard let transactionId = transaction.transactionId else { throw SignedDataFailure.missingField("transactionId") }
            guard let productId = transaction.productId else { throw SignedDataFailure.missingField("productId") }
            guard let purchaseDate = transaction.purchaseDate?.date else { throw SignedDataFailure.missingField("purchaseDate") }
            let original = transaction.originalTransactionId ?? transactionId
            var purchase = Purchase(
                transactionId: transactionId, originalTransactionId: original, productId: productId, quantity: transaction.quantity ?? 1,
                purchaseDate: purchaseDate, originalPurchaseDate: transaction.originalPurchaseDate?.date ?? purchaseDate,
                expiresDate: transaction.expiresDate?.date, cancellationDate: transaction.revocationDate?.date,
                ownershipType: transaction.inAppOwnershipType?.rawValue ?? OwnershipType.purchased.rawValue,
                currentAt: source == .serverAPI ? transaction.signedDate?.date : nil)
            purchase.appTransactionId = transaction.appTransactionId.flatMap { $0.isEmpty ? nil : $0 }
            purchase.appAccountToken = transaction.appAccountToken.flatMap { $0.isEmpty ? nil : $0.lowercased() }
            if purchase.cancellationDate != nil {
                purchase.revocationType = transaction.revocationType
                purchase.revocationPercentage = transaction.revocationPercentage.map { min(max($0, 0), 100_000) }
            }
            purchase.billingPlanType = transaction.billingPlanType
            if let price = transaction.price, price >= 0, let currency = transaction.currency, !currency.isEmpty {
                purchase.price = ChargedPrice(milliunits: price, currency: currency)
            }
            purchase.storefront = transaction.storefront.flatMap { $0.isEmpty ? nil : $0 }
            purchase.offer = transaction.offerType.map {
                PurchaseOffer(
                    type: $0, identifier: transaction.offerIdentifier, discountType: transaction.offerDiscountType,
                    period: transaction.offerPeriod)
            }
            purchase.commitment = transaction.commitmentInfo.map {
                CommitmentTerms(
                    billingPeriodNumber: $0.billingPeriodNumber, totalBillingPeriods: $0.totalBillingPeriods,
                    expiresDate: $0.commitmentExpiresDate?.date)
            }
            purchases.append(purchase)
            if transaction.type == .autoRenewable { subscribed.insert(original) }
        }
        var matched: [String: Renewal] = [:]
        for renewal in renewals {
            // A renewal info that came with a single transaction belongs to it even unlabelled.
            let original = renewal.originalTransactionId ?? (transactions.count == 1 ? purchases.first?.originalTransactionId : nil)
            guard let original, subscribed.contains(original), matched[original] == nil else { continue }
            var facts = Renewal(
                autoRenewEnabled: renewal.autoRenewStatus == 1, autoRenewProductId: renewal.autoRenewProductId,
                inBillingRetry: renewal.isInBillingRetryPeriod ?? false, gracePeriodExpiresDate: renewal.gracePeriodExpiresDate?.date,
                expirationIntent: renewal.expirationIntent.map(String.init), signedAt: renewal.signedDate?.date,
                winBackOfferIds: renewal.eligibleWinBackOfferIds)
            facts.priceIncreaseStatus = renewal.priceIncreaseStatus
            matched[original] = facts
        }
        self.init(
            source: source, bundleId: transactions.first?.bundleId, environment: environment.storageName, purchases: purchases,
            renewals: matched)
    }
}
