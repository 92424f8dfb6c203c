import Foundation
import StorekeeperDomain
import Testing

/// The ledger at what Apple charged, and the proceeds after its commission, at fixed instants.
@Suite("revenue: the ledger at the charged price, proceeds after Apple's commission")
struct RevenueRuleTests {
    let t0 = Date(timeIntervalSince1970: 1_790_000_000)
    let catalog = Product(productId: "monthly", type: .autoRenewable, priceMicros: 4_990_000, currency: "USD")

    func record(
        price: ChargedPrice?, quantity: Int = 1, purchased: Date? = nil, original: Date? = nil, ownership: String? = "PURCHASED"
    )
        -> TransactionRecord
    {
        var record = TransactionRecord(
            appId: "app", appUserId: "u", transactionId: "2", originalTransactionId: "1", productId: "monthly", productType: .autoRenewable,
            environment: "production", purchaseDate: purchased ?? t0, originalPurchaseDate: original ?? t0, expiresDate: nil,
            cancellationDate: nil, quantity: quantity, credits: 0, ownershipType: ownership, verificationId: "v")
        record.price = price
        record.storefront = price == nil ? nil : "FRA"
        return record
    }

    @Test("a sale in another storefront is booked in its currency at its price, not the list price; proceeds at 30%")
    func charged() {
        let entry = LedgerRule.entry(
            record(price: ChargedPrice(milliunits: 5_490, currency: "EUR")), product: catalog, event: .purchase, state: "granted", now: t0)
        #expect(entry.priceMicros == 5_490_000 && entry.currency == "EUR" && !entry.estimated && entry.storefront == "FRA")
        #expect(entry.commissionRate == 3_000 && entry.proceedsMicros == 3_843_000)
    }

    @Test("without Apple's price (a receipt) the list price is booked, marked estimated")
    func estimated() {
        let entry = LedgerRule.entry(record(price: nil), product: catalog, event: .purchase, state: "granted", now: t0)
        #expect(entry.priceMicros == 4_990_000 && entry.currency == "USD" && entry.estimated && entry.storefront == nil)
        // No price anywhere: nothing booked, nothing estimated.
        let unknown = LedgerRule.entry(record(price: nil), product: nil, event: .purchase, state: "granted", now: t0)
        #expect(unknown.priceMicros == nil && !unknown.estimated && unknown.proceedsMicros == nil)
        // A receipt's free trial (`is_trial_period`) has no price either, and cost nothing: 0,
        // known, never the list price.
        var trial = record(price: nil)
        trial.offer = PurchaseOffer(type: PurchaseOffer.introductory, discountType: PurchaseOffer.freeTrial)
        let free = LedgerRule.entry(trial, product: catalog, event: .purchase, state: "granted", now: t0)
        #expect(free.priceMicros == 0 && free.proceedsMicros == 0 && free.currency == "USD" && !free.estimated, "\(free)")
    }

    @Test("a free trial books 0; several items are charged each; a family member's copy costs nothing")
    func amounts() {
        let trial = LedgerRule.entry(
            record(price: ChargedPrice(milliunits: 0, currency: "USD")), product: catalog, event: .purchase, state: "granted", now: t0)
        #expect(trial.priceMicros == 0 && trial.proceedsMicros == 0 && !trial.estimated)
        let three = LedgerRule.entry(
            record(price: ChargedPrice(milliunits: 990, currency: "GBP"), quantity: 3), product: catalog, event: .purchase, state: "granted",
            now: t0)
        #expect(three.priceMicros == 2_970_000)
        let shared = LedgerRule.entry(
            record(price: ChargedPrice(milliunits: 5_490, currency: "EUR"), ownership: "FAMILY_SHARED"), product: catalog,
            event: .purchase, state: "granted", now: t0)
        #expect(shared.priceMicros == nil && shared.proceedsMicros == nil)
    }

    @Test("a refund reverses the charged amount, or its prorated share, and exactly its proceeds")
    func refunds() {
        let bought = record(price: ChargedPrice(milliunits: 5_490, currency: "EUR"))
        let sale = LedgerRule.entry(bought, product: catalog, event: .purchase, state: "granted", now: t0)
        let refund = LedgerRule.entry(bought, product: catalog, event: .refund, state: "refunded", now: t0)
        #expect(refund.priceMicros == -5_490_000 && refund.currency == "EUR" && refund.proceedsMicros == -(sale.proceedsMicros ?? 0))
        let part = LedgerRule.entry(bought, product: catalog, event: .refund, state: "refunded", now: t0, refundedShare: 25_000)
        #expect(part.priceMicros == -1_372_500 && part.proceedsMicros == -960_750)
    }

    @Test("15% under the Small Business Program; a renewal a year after the subscription began is taken at 15%, before it at 30%")
    func commission() {
        let year = 365.0 * 86_400
        let price = ChargedPrice(milliunits: 4_990, currency: "USD")
        let small = LedgerRule.entry(
            record(price: price), product: catalog, event: .purchase, state: "granted", now: t0, commission: .smallBusiness)
        #expect(small.commissionRate == 1_500 && small.proceedsMicros == 4_241_500)
        let early = LedgerRule.entry(
            record(price: price, purchased: t0.addingTimeInterval(year - 86_400), original: t0), product: catalog, event: .purchase,
            state: "granted", now: t0)
        #expect(early.commissionRate == 3_000)
        // 2027 is not a leap year: a year after 2026-09-21 is 365 days later.
        let late = LedgerRule.entry(
            record(price: price, purchased: t0.addingTimeInterval(year), original: t0), product: catalog, event: .purchase,
            state: "granted", now: t0)
        #expect(late.commissionRate == 1_500 && late.proceedsMicros == 4_241_500)
        // Not a subscription: 30% however long after.
        #expect(
            CommissionRule.rate(program: .standard, productType: .consumable, purchaseDate: t0.addingTimeInterval(3 * year), originalPurchaseDate: t0)
                == 3_000)
        // Rounding: half a micro-unit of commission goes to Apple, symmetrically for refunds.
        #expect(CommissionRule.proceeds(5, rate: 3_000) == 3 && CommissionRule.proceeds(-5, rate: 3_000) == -3)
    }
}
