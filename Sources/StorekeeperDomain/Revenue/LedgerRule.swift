public import Foundation

/// The ledger rule: one entry per transaction and event, at what Apple charged (the signed
/// transaction's price, currency and storefront, the offer it was bought with); from the
/// catalog's list price only where Apple's data has no price (a receipt), and then marked
/// `estimated`. A refund is negative, of the share refunded; a family member's copy of
/// another's purchase costs nothing (the buyer paid once). Proceeds are the amount less
/// Apple's commission (`CommissionRule`).
public enum LedgerRule {
    /// Apple's ownership type of a family member's copy.
    static let familyShared = "FAMILY_SHARED"

    /// `refundedShare`: for a refund or its reversal, the share Apple refunded in milliunits of a
    /// percent (a prorated refund); nil for all of it. Rounded to the nearest micro-unit.
    public static func entry(
        _ record: TransactionRecord, product: Product?, event: LedgerEntry.Event, state: String, now: Date, refundedShare: Int? = nil,
        commission: CommissionProgram = .standard
    ) -> LedgerEntry {
        let paid = record.ownershipType != familyShared
        let charged = record.price
        let unit = paid ? (charged?.micros ?? product?.priceMicros) : nil
        let share = event == .purchase ? 100_000 : min(max(refundedShare ?? 100_000, 0), 100_000)
        let price = unit.map { unit -> Int64 in
            let full = unit * Int64(record.quantity)
            let amount = share == 100_000 ? full : (full * Int64(share) + 50_000) / 100_000
            return event == .refund ? -amount : amount
        }
        var entry = LedgerEntry(
            appId: record.appId, appUserId: record.appUserId, productId: record.productId, productType: record.productType,
            transactionId: record.transactionId, originalTransactionId: record.originalTransactionId, environment: record.environment,
            purchaseDate: record.purchaseDate, event: event, quantity: record.quantity, priceMicros: price,
            currency: charged?.currency ?? product?.currency, state: state, recordedAt: now)
        entry.estimated = charged == nil && price != nil
        entry.storefront = record.storefront
        entry.offer = record.offer
        if let price {
            let rate = CommissionRule.rate(
                program: commission, productType: record.productType, purchaseDate: record.purchaseDate,
                originalPurchaseDate: record.originalPurchaseDate)
            entry.commissionRate = rate
            entry.proceedsMicros = CommissionRule.proceeds(price, rate: rate)
        }
        return entry
    }
}
