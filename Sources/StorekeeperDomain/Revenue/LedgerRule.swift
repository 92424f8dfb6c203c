public import Foundation

/// The ledger rule: one entry per transaction and event, at what Apple charged (the signed
/// transaction's price, currency and storefront, the offer it was bought with); from the
/// catalog's list price only where Apple's data has no price (a receipt), and then marked
/// `estimated` (a free trial excepted: it is known to cost nothing). A refund is negative, of the share refunded; a family member's copy of
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
        // A free trial costs nothing: a receipt says so (`is_trial_period`) though it gives no
        // price, so its list price is never booked as charged.
        let freeTrial = record.offer?.discountType == PurchaseOffer.freeTrial
        let unit = paid ? (charged.map(\.micros) ?? (freeTrial ? 0 : product?.priceMicros)) : nil
        let share = event == .purchase ? 100_000 : min(max(refundedShare ?? 100_000, 0), 100_000)
        // Overflow (an absurd price or quantity) leaves the amount unknown rather than trapping.
        let price = unit.flatMap { unit -> Int64? in
            let (full, overflow) = unit.multipliedReportingOverflow(by: Int64(record.quantity))
            guard !overflow else { return nil }
            let amount: Int64
            if share == 100_000 {
                amount = full
            } else {
                let (scaled, tooLarge) = full.multipliedReportingOverflow(by: Int64(share))
                let (rounded, past) = scaled.addingReportingOverflow(50_000)
                guard !tooLarge, !past else { return nil }
                amount = rounded / 100_000
            }
            return event == .refund ? -amount : amount
        }
        var entry = LedgerEntry(
            appId: record.appId, appUserId: record.appUserId, productId: record.productId, productType: record.productType,
            transactionId: record.transactionId, originalTransactionId: record.originalTransactionId, environment: record.environment,
            purchaseDate: record.purchaseDate, event: event, quantity: record.quantity, priceMicros: price,
            currency: charged?.currency ?? product?.currency, state: state, recordedAt: now)
        entry.estimated = charged == nil && price != nil && !freeTrial
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
