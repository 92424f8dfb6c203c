import Foundation
import StorekeeperDomain
import TestFixtures
import Testing

/// Who may take which offer, from a user's history, at fixed instants.
@Suite("offer eligibility")
struct OfferEligibilityTests {
    let t0 = referenceTime
    let catalog = [
        Product(productId: "monthly", type: .autoRenewable, duration: "P1M", priceMicros: 4_990_000, currency: "USD"),
        Product(productId: "annual", type: .autoRenewable, duration: "P1Y", priceMicros: 39_990_000, currency: "USD"),
        Product(productId: "magazine", type: .autoRenewable, duration: "P1M", priceMicros: 1_990_000, currency: "USD"),
        Product(productId: "coins", type: .consumable, priceMicros: 990_000, currency: "USD"),
    ]

    func bought(_ productId: String, at: Date, expires: Date?, refunded: Bool = false) -> TransactionRecord {
        var record = TransactionRecord(
            appId: "app", appUserId: "alice", transactionId: "\(productId)-\(Int(at.timeIntervalSince1970))", originalTransactionId: productId,
            productId: productId, productType: productId == "coins" ? .consumable : .autoRenewable, environment: "production",
            purchaseDate: at, originalPurchaseDate: at, expiresDate: expires, cancellationDate: refunded ? at + 60 : nil, quantity: 1, credits: 0,
            ownershipType: "PURCHASED", verificationId: "v")
        record.appTransactionId = "app-tx-alice"
        return record
    }

    func subscription(
        _ productId: String, expires: Date, winBack: [String]?, refunded: Bool = false, original: String? = nil
    ) -> SubscriptionFacts {
        var facts = SubscriptionFacts(
            appId: "app", originalTransactionId: original ?? productId, appUserId: "alice", productId: productId, environment: "production",
            latestTransactionId: "\(productId)-latest", expiresDate: expires, revokedAt: refunded ? expires - 60 : nil, autoRenewEnabled: false,
            autoRenewProductId: productId, inBillingRetry: false, gracePeriodExpiresDate: nil, expirationIntent: "1", updatedAt: expires)
        facts.winBackOfferIds = winBack
        return facts
    }

    @Test("win-back: Apple's list for a lapsed subscription, once each; none while it or another of its group runs, or once refunded")
    func winBack() {
        let offers = [OfferDefinition(id: "back50", productId: "annual", kind: .winBack), OfferDefinition(id: "promo", productId: "monthly")]
        func winBack(_ subscriptions: [SubscriptionFacts]) -> [OfferEligibility.WinBack] {
            OfferEligibility.winBack(subscriptions: subscriptions, offers: offers, groups: ["news": ["magazine"]], catalog: catalog, now: t0)
        }
        let lapsed = subscription("monthly", expires: t0 - 1, winBack: ["back50", "unlisted"])
        #expect(
            winBack([lapsed]) == [
                .init(offerId: "back50", productId: "annual", originalTransactionId: "monthly", configured: true),
                .init(offerId: "unlisted", productId: "monthly", originalTransactionId: "monthly", configured: false),
            ])
        #expect(winBack([subscription("monthly", expires: t0 + 1, winBack: ["back50"])]).isEmpty, "still running at now")
        #expect(winBack([subscription("monthly", expires: t0 - 1, winBack: ["back50"], refunded: true)]).isEmpty, "refunded")
        #expect(winBack([subscription("monthly", expires: t0 - 1, winBack: nil)]).isEmpty, "Apple named none")
        #expect(winBack([lapsed, subscription("annual", expires: t0 + 86_400, winBack: nil)]).isEmpty, "came back in the group")
        #expect(winBack([lapsed, subscription("magazine", expires: t0 + 86_400, winBack: nil)]).count == 2, "another group's runs")
        let again = subscription("annual", expires: t0 - 10, winBack: ["back50"], original: "annual-2")
        #expect(winBack([lapsed, again]).map(\.offerId) == ["back50", "unlisted"], "each offer once")
        #expect(winBack([lapsed]).allSatisfy { $0.offerId != "promo" }, "a promotional offer is not a win-back offer")
    }

    @Test("a subscription group: the one configured, else every auto-renewable no group names")
    func groups() {
        #expect(OfferEligibility.group(of: "monthly", groups: [:], catalog: catalog) == ["monthly", "annual", "magazine"])
        let named = ["news": ["magazine"]]
        #expect(OfferEligibility.group(of: "monthly", groups: named, catalog: catalog) == ["monthly", "annual"])
        #expect(OfferEligibility.group(of: "magazine", groups: named, catalog: catalog) == ["magazine"])
    }

    @Test("an introductory offer once per group: any transaction in the group, refunded too, ends it; another group's does not")
    func introductory() {
        let group: Set<String> = ["monthly", "annual"]
        #expect(OfferEligibility.introductory(group: group, transactions: []) == .init(eligible: true, reason: "new_to_group"))
        #expect(OfferEligibility.introductory(group: group, transactions: [bought("coins", at: t0, expires: nil)]).eligible)
        #expect(OfferEligibility.introductory(group: group, transactions: [bought("magazine", at: t0, expires: t0 + 86_400)]).eligible)
        let refunded = bought("annual", at: t0, expires: t0 + 365 * 86_400, refunded: true)
        #expect(OfferEligibility.introductory(group: group, transactions: [refunded]) == .init(eligible: false, reason: "subscribed_in_group"))
    }

    @Test("a promotional offer by audience: current or lapsed (the default), current only, lapsed only")
    func promotional() {
        let group: Set<String> = ["monthly", "annual"]
        let active = [bought("monthly", at: t0, expires: t0 + 30 * 86_400)]
        let expired = [bought("monthly", at: t0 - 60 * 86_400, expires: t0 - 30 * 86_400)]
        let refunded = [bought("annual", at: t0, expires: t0 + 365 * 86_400, refunded: true)]
        let never = [bought("coins", at: t0, expires: nil), bought("magazine", at: t0, expires: t0 + 86_400)]
        func decide(_ audience: OfferDefinition.Audience, _ history: [TransactionRecord], at now: Date? = nil) -> OfferEligibility.Decision {
            OfferEligibility.promotional(
                OfferDefinition(id: "o", productId: "monthly", audience: audience), group: group, transactions: history, now: now ?? t0 + 1)
        }
        #expect(decide(.currentOrLapsed, active) == .init(eligible: true, reason: "current_subscriber"))
        #expect(decide(.currentOrLapsed, expired) == .init(eligible: true, reason: "lapsed_subscriber"))
        #expect(decide(.currentOrLapsed, refunded) == .init(eligible: true, reason: "lapsed_subscriber"), "a refund ends access, not the history")
        #expect(decide(.currentOrLapsed, never) == .init(eligible: false, reason: "never_subscribed"))
        #expect(decide(.current, active).eligible && !decide(.current, expired).eligible && !decide(.current, refunded).eligible)
        #expect(decide(.current, expired).reason == "no_active_subscription")
        #expect(decide(.lapsed, active) == .init(eligible: false, reason: "active_subscription"))
        #expect(decide(.lapsed, expired).eligible && decide(.lapsed, refunded).eligible && !decide(.lapsed, never).eligible)
        // The instant the period ends, the subscriber has lapsed.
        #expect(decide(.lapsed, active, at: t0 + 30 * 86_400).eligible)
    }

    @Test("the transaction a JWS names: the latest bought, else the app transaction's id, else none")
    func customerTransaction() {
        let first = bought("monthly", at: t0, expires: t0 + 86_400)
        let later = bought("coins", at: t0 + 10, expires: nil)
        #expect(OfferEligibility.customerTransactionId([later, first]) == later.transactionId)
        #expect(OfferEligibility.customerTransactionId([]) == nil)
    }
}
