import Foundation
import StorekeeperDomain
import TestFixtures
import Testing

/// What a refund request is answered with, by policy and facts, at fixed instants.
@Suite("refund answers")
struct RefundAnswerRuleTests {
    let t0 = referenceTime

    func request(at: Date? = nil) -> RefundRequest {
        RefundRequest(
            appId: "app", notificationUUID: "n1", transactionId: "t1", originalTransactionId: "t1", appUserId: "alice",
            environment: "production", reason: "UNINTENDED_PURCHASE", requestedAt: at ?? t0, state: .pending, jobId: "j1")
    }

    func transaction(
        _ type: ProductType, credits: Int = 0, purchased: Date? = nil, expires: Date? = nil, storefront: String? = nil
    )
        -> TransactionRecord
    {
        var record = TransactionRecord(
            appId: "app", appUserId: "alice", transactionId: "t1", originalTransactionId: "t1", productId: "p", productType: type,
            environment: "production", purchaseDate: purchased ?? t0.addingTimeInterval(-86_400 * 3), originalPurchaseDate: nil,
            expiresDate: expires, cancellationDate: nil, quantity: 1, credits: credits, ownershipType: nil, verificationId: "v")
        record.storefront = storefront
        return record
    }

    func decide(_ policy: RefundPolicy, _ facts: RefundAnswerRule.Facts, now: Date? = nil) -> RefundAnswerRule.Decision {
        RefundAnswerRule.decide(policy, request: request(), facts: facts, now: now ?? t0.addingTimeInterval(60))
    }

    @Test("off, no consent, or past the deadline: nothing is sent")
    func nothingSent() {
        let facts = RefundAnswerRule.Facts(transaction: transaction(.nonConsumable), creditBalance: 0)
        #expect(decide(RefundPolicy(mode: .off, customersConsented: true), facts) == .skip(note: "policy_off"))
        #expect(decide(RefundPolicy(mode: .preferGrant), facts) == .skip(note: "no_consent"))
        let late = t0.addingTimeInterval(RefundRequest.answerWindow)
        #expect(decide(RefundPolicy(mode: .preferGrant, customersConsented: true), facts, now: late) == .expired, "the deadline is exclusive")
        #expect(
            decide(RefundPolicy(mode: .off), facts, now: late) == .expired, "an expired request is expired whatever the policy")
    }

    @Test("modes: data only has no preference; prefer grant and prefer decline say so; delivery known from the grant")
    func modes() {
        let facts = RefundAnswerRule.Facts(transaction: transaction(.nonConsumable), creditBalance: 0)
        let base = ConsumptionAnswer(
            customerConsented: true, deliveryStatus: "DELIVERED", sampleContentProvided: false, consumptionPercentage: nil, refundPreference: nil)
        #expect(decide(RefundPolicy(mode: .dataOnly, customersConsented: true), facts) == .send(base, note: "data_only"))
        var grant = base
        grant.refundPreference = "GRANT_FULL"
        #expect(decide(RefundPolicy(mode: .preferGrant, customersConsented: true), facts) == .send(grant, note: "prefer_grant"))
        var decline = base
        decline.refundPreference = "DECLINE"
        decline.sampleContentProvided = true
        #expect(
            decide(RefundPolicy(mode: .preferDecline, customersConsented: true, sampleContentProvided: true), facts)
                == .send(decline, note: "prefer_decline"))
        guard case .send(let unknown, _) = decide(RefundPolicy(mode: .dataOnly, customersConsented: true), .init(transaction: nil, creditBalance: 0))
        else {
            Issue.record("a purchase never granted is still answered")
            return
        }
        #expect(unknown.deliveryStatus == "UNDELIVERED_OTHER" && unknown.consumptionPercentage == nil)
    }

    @Test("rules in order: spent credits decline; a recent purchase or a listed storefront grant; else no preference")
    func rules() {
        let policy = RefundPolicy(mode: .rules, customersConsented: true, grantWithinHours: 48, grantStorefronts: ["FRA"])
        func preference(_ facts: RefundAnswerRule.Facts) -> (String?, String)? {
            guard case .send(let answer, let note) = decide(policy, facts) else { return nil }
            return (answer.refundPreference, note)
        }
        // 100 coins, a balance of 40 left: 60 % consumed → decline, even though bought just now.
        let coins = transaction(.consumable, credits: 100, purchased: t0)
        #expect(preference(.init(transaction: coins, creditBalance: 40))! == ("DECLINE", "credits_spent"))
        // Nothing spent: the recent purchase is granted.
        #expect(preference(.init(transaction: coins, creditBalance: 100))! == ("GRANT_FULL", "within_48_hours"))
        var lenient = policy
        lenient.declineWhenCreditsSpent = false
        guard
            case .send(_, let note) = RefundAnswerRule.decide(
                lenient, request: request(), facts: .init(transaction: coins, creditBalance: 0), now: t0)
        else { return }
        #expect(note == "within_48_hours", "with the rule off, spent credits decide nothing")
        // Three days old: by storefront, or nothing.
        #expect(preference(.init(transaction: transaction(.nonConsumable, storefront: "FRA"), creditBalance: 0))! == ("GRANT_FULL", "storefront_FRA"))
        #expect(preference(.init(transaction: transaction(.nonConsumable, storefront: "USA"), creditBalance: 0))! == (nil, "no_rule"))
        #expect(preference(.init(transaction: nil, creditBalance: 0))! == (nil, "no_rule"))
    }

    @Test("consumption: a consumable's spent share, its own credits counted unspent first; a subscription's elapsed share")
    func consumption() {
        let now = t0
        func share(_ transaction: TransactionRecord, balance: Int) -> Int? {
            RefundAnswerRule.consumptionPercentage(.init(transaction: transaction, creditBalance: balance), now: now)
        }
        let coins = transaction(.consumable, credits: 100)
        #expect(share(coins, balance: 250) == 0, "more left than it gave: none of it counted spent")
        #expect(share(coins, balance: 100) == 0)
        #expect(share(coins, balance: 1) == 99_000)
        #expect(share(coins, balance: 0) == 100_000)
        #expect(share(coins, balance: -50) == 100_000, "a negative balance is all spent")
        let month = transaction(.autoRenewable, purchased: now.addingTimeInterval(-10 * 86_400), expires: now.addingTimeInterval(30 * 86_400))
        #expect(share(month, balance: 0) == 25_000)
        let lapsed = transaction(.autoRenewable, purchased: now.addingTimeInterval(-40 * 86_400), expires: now.addingTimeInterval(-10 * 86_400))
        #expect(share(lapsed, balance: 0) == 100_000)
        #expect(share(transaction(.nonConsumable), balance: 0) == nil)
        #expect(share(transaction(.consumable, credits: 0), balance: 0) == nil)
    }

    @Test("configuration problems: hours, storefront codes, a mode that sends without consent")
    func problems() {
        #expect(RefundPolicy().problems(prefix: "p").isEmpty)
        #expect(RefundPolicy(mode: .rules, customersConsented: true, grantWithinHours: 24, grantStorefronts: ["USA"]).problems(prefix: "p").isEmpty)
        #expect(
            RefundPolicy(mode: .dataOnly).problems(prefix: "p") == [
                "p.customersConsented: must be true for mode 'data_only' (Apple takes consumption information only with the customer's consent)"
            ])
        #expect(RefundPolicy(grantWithinHours: 0, grantStorefronts: ["fr", "FRA", "FRAN"]).problems(prefix: "p").count == 3)
    }

    @Test("events: requested and answered once per notification, for the holder only")
    func events() {
        var request = request()
        let requested = request.event(.refundRequested, now: t0)
        #expect(requested?.details?.reason == "UNINTENDED_PURCHASE" && requested?.occurredAt == t0)
        #expect(requested?.id == request.event(.refundRequested, now: t0.addingTimeInterval(9))?.id)
        request.appUserId = nil
        #expect(request.event(.refundRequested, now: t0) == nil, "nobody holds it: no subscriber to tell")
    }
}
