import AppStoreModels
import Foundation

/// A StoreKit 2 transaction, verified, in the shape the grant planner reads (a verified
/// verifyReceipt answer holding that one transaction), so StoreKit 1 and StoreKit 2 purchases
/// follow the same grant rules, ledger and exactly-once keys.
public enum SignedTransactionMapping {
    public enum Failure: Error, Hashable, Sendable {
        /// A field without which nothing can be granted is missing.
        case missingField(String)
    }

    /// `renewal`, from a notification or the Server API, carries auto-renew status, billing retry
    /// and grace period into the subscription's facts.
    public static func response(
        for transaction: SignedTransaction, renewal: SignedRenewalInfo? = nil
    ) throws -> (VerifyReceiptResponse, AppStoreEnvironment) {
        let environment = transaction.environment ?? .production
        var matched = renewal
        if matched != nil, matched?.originalTransactionId == nil {
            matched?.originalTransactionId = transaction.originalTransactionId ?? transaction.transactionId
        }
        return (try response(for: [transaction], renewals: matched.map { [$0] } ?? [], environment: environment), environment)
    }

    /// A customer's transactions from the Server API (history, subscription statuses) as one
    /// verified answer, renewal infos matched to their subscriptions by original transaction id.
    public static func response(
        for transactions: [SignedTransaction], renewals: [SignedRenewalInfo], environment: AppStoreEnvironment
    ) throws -> VerifyReceiptResponse {
        var wires: [InAppTransaction] = []
        var subscriptions: [InAppTransaction] = []
        var subscribedOriginals = Set<String>()
        for transaction in transactions {
            let wire = try wire(for: transaction)
            wires.append(wire)
            if transaction.type == .autoRenewable {
                subscriptions.append(wire)
                subscribedOriginals.insert(wire.originalTransactionId?.value ?? "")
            }
        }
        let pending = renewals.compactMap { renewal -> PendingRenewalInfo? in
            guard let original = renewal.originalTransactionId, subscribedOriginals.contains(original) else { return nil }
            return PendingRenewalInfo(
                autoRenewProductId: renewal.autoRenewProductId, productId: renewal.productId, originalTransactionId: original,
                autoRenewStatus: renewal.autoRenewStatus == 1, expirationIntent: renewal.expirationIntent.map(String.init),
                isInBillingRetryPeriod: renewal.isInBillingRetryPeriod, gracePeriodExpiresDate: renewal.gracePeriodExpiresDate?.date)
        }
        return VerifyReceiptResponse(
            status: .valid, environment: environment,
            receipt: ReceiptInfo(receiptType: environment.rawValue, bundleId: transactions.first?.bundleId, inApp: wires),
            latestReceiptInfo: subscriptions.isEmpty ? nil : subscriptions, pendingRenewalInfo: pending.isEmpty ? nil : pending)
    }

    private static func wire(for transaction: SignedTransaction) throws -> InAppTransaction {
        guard let transactionId = transaction.transactionId else { throw Failure.missingField("transactionId") }
        guard let productId = transaction.productId else { throw Failure.missingField("productId") }
        guard let purchaseDate = transaction.purchaseDate?.date else { throw Failure.missingField("purchaseDate") }
        return InAppTransaction(
            quantity: transaction.quantity ?? 1, productId: productId, transactionId: transactionId,
            originalTransactionId: transaction.originalTransactionId ?? transactionId, purchaseDate: purchaseDate,
            originalPurchaseDate: transaction.originalPurchaseDate?.date ?? purchaseDate, expiresDate: transaction.expiresDate?.date,
            cancellationDate: transaction.revocationDate?.date,
            cancellationReason: transaction.revocationReason.map(String.init), webOrderLineItemId: transaction.webOrderLineItemId,
            inAppOwnershipType: transaction.inAppOwnershipType?.rawValue ?? OwnershipType.purchased.rawValue,
            subscriptionGroupIdentifier: transaction.subscriptionGroupIdentifier)
    }
}
