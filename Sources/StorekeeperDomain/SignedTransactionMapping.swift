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
        guard let transactionId = transaction.transactionId else { throw Failure.missingField("transactionId") }
        guard let productId = transaction.productId else { throw Failure.missingField("productId") }
        guard let purchaseDate = transaction.purchaseDate?.date else { throw Failure.missingField("purchaseDate") }
        let environment = transaction.environment ?? .production
        let wire = InAppTransaction(
            quantity: transaction.quantity ?? 1, productId: productId, transactionId: transactionId,
            originalTransactionId: transaction.originalTransactionId ?? transactionId, purchaseDate: purchaseDate,
            originalPurchaseDate: transaction.originalPurchaseDate?.date ?? purchaseDate, expiresDate: transaction.expiresDate?.date,
            cancellationDate: transaction.revocationDate?.date,
            cancellationReason: transaction.revocationReason.map(String.init), webOrderLineItemId: transaction.webOrderLineItemId,
            inAppOwnershipType: transaction.inAppOwnershipType?.rawValue ?? OwnershipType.purchased.rawValue,
            subscriptionGroupIdentifier: transaction.subscriptionGroupIdentifier)
        let isSubscription = transaction.type == .autoRenewable
        var pending: [PendingRenewalInfo]?
        if isSubscription, let renewal {
            pending = [
                PendingRenewalInfo(
                    autoRenewProductId: renewal.autoRenewProductId, productId: renewal.productId ?? productId,
                    originalTransactionId: renewal.originalTransactionId ?? transaction.originalTransactionId ?? transactionId,
                    autoRenewStatus: renewal.autoRenewStatus == 1, expirationIntent: renewal.expirationIntent.map(String.init),
                    isInBillingRetryPeriod: renewal.isInBillingRetryPeriod, gracePeriodExpiresDate: renewal.gracePeriodExpiresDate?.date)
            ]
        }
        let response = VerifyReceiptResponse(
            status: .valid, environment: environment,
            receipt: ReceiptInfo(receiptType: environment.rawValue, bundleId: transaction.bundleId, inApp: [wire]),
            latestReceiptInfo: isSubscription ? [wire] : nil, pendingRenewalInfo: pending)
        return (response, environment)
    }
}
