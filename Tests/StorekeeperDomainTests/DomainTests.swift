import AppStoreCrypto
import AppStoreModels
import Foundation
import JobQueue
import StorekeeperDomain
import TestFixtures
import Testing

@Suite("Apple answers: routing and classification")
struct ClassificationTests {
    @Test("21007 from production goes to sandbox, 21008 from sandbox goes to production, nothing else redirects")
    func routing() {
        #expect(AppStoreRouting.redirect(after: .sandboxReceiptInProduction, from: .production) == .sandbox)
        #expect(AppStoreRouting.redirect(after: .productionReceiptInSandbox, from: .sandbox) == .production)
        #expect(AppStoreRouting.redirect(after: .sandboxReceiptInProduction, from: .sandbox) == nil)
        #expect(AppStoreRouting.redirect(after: .valid, from: .production) == nil)
        #expect(AppStoreRouting.firstEnvironment == .production)
    }

    @Test(
        "each status maps to its action",
        arguments: [
            (21000, "configuration"), (21002, "invalid"), (21003, "invalid"), (21004, "configuration"), (21005, "transient"),
            (21006, "verified"), (21009, "transient"), (21010, "invalid"), (0, "verified"),
        ])
    func statusTable(status: Int, expected: String) {
        let response = VerifyReceiptResponse(status: AppStoreStatus(status), receipt: ReceiptInfo(bundleId: "b", inApp: []))
        let kind: String =
            switch AttemptClassification.classify(response, environment: .production) {
            case .verified: "verified"
            case .invalid: "invalid"
            case .configurationError: "configuration"
            case .transient: "transient"
            case .redirect: "redirect"
            }
        #expect(kind == expected)
    }

    @Test("211xx retries only when Apple says it is retryable")
    func internalRange() {
        let retryable = VerifyReceiptResponse(status: AppStoreStatus(21150), isRetryable: true)
        let final = VerifyReceiptResponse(status: AppStoreStatus(21150), isRetryable: false)
        #expect(
            AttemptClassification.classify(retryable, environment: .production)
                == .transient(reason: "apple_internal_error_retryable", status: AppStoreStatus(21150)))
        #expect(
            AttemptClassification.classify(final, environment: .production) == .invalid(reason: "apple_internal_error", status: AppStoreStatus(21150))
        )
    }

    @Test("wire failures are transient: timeouts, refused connections, 5xx, 429, HTML with 200")
    func wire() {
        let html = Array("<html>down</html>".utf8)
        let cases: [(VerifyReceiptCallResult, FailureReason)] = [
            (.timedOut, "apple_timeout"), (.connectionFailed("refused"), "apple_unreachable"),
            (.answered(httpStatus: 503, body: []), "apple_http_503"), (.answered(httpStatus: 500, body: html), "apple_http_500"),
            (.answered(httpStatus: 429, body: []), "apple_rate_limited"), (.answered(httpStatus: 200, body: html), "apple_unparseable_body"),
        ]
        for (result, reason) in cases {
            #expect(AttemptClassification.classify(result, environment: .production) == .transient(reason: reason, status: nil))
        }
    }
}

@Suite("retry policy and lifecycles")
struct LifecycleTests {
    @Test("backoff doubles, is capped, and jitter stays within its band")
    func backoff() {
        let policy = RetryPolicy(base: 2, cap: 60, jitter: 0.2)
        #expect(policy.delay(afterAttempt: 1, unitRandom: 0.5) == 2)
        #expect(policy.delay(afterAttempt: 2, unitRandom: 0.5) == 4)
        #expect(policy.delay(afterAttempt: 4, unitRandom: 0.5) == 16)
        #expect(policy.delay(afterAttempt: 30, unitRandom: 0.5) == 60)
        #expect(policy.delay(afterAttempt: 3, unitRandom: 0) == 8 * 0.8)
        #expect(abs(policy.delay(afterAttempt: 3, unitRandom: 0.999_999) - 8 * 1.2) < 0.001)
        #expect(policy.delay(afterAttempt: 1000, unitRandom: 1) <= 60)
    }

    @Test("verification state machine allows only documented moves")
    func verificationMachine() {
        #expect(VerificationLifecycle.next(from: .pending, on: .leased) == .verifying)
        #expect(VerificationLifecycle.next(from: .verifying, on: .appleVerified) == .verified)
        #expect(VerificationLifecycle.next(from: .verifying, on: .transientFailure) == .retryScheduled)
        #expect(VerificationLifecycle.next(from: .retryScheduled, on: .leased) == .verifying)
        #expect(VerificationLifecycle.next(from: .verifying, on: .appleConfigurationError) == .configurationError)
        #expect(VerificationLifecycle.next(from: .configurationError, on: .requeued) == .pending)
        #expect(VerificationLifecycle.next(from: .verified, on: .appleInvalid) == nil)
        #expect(VerificationLifecycle.next(from: .invalid, on: .appleVerified) == nil)
        #expect(VerificationLifecycle.next(from: .pending, on: .appleVerified) == nil)
        #expect(VerificationState.verified.isFinal && VerificationState.invalid.isFinal)
        #expect(!VerificationState.retryScheduled.isFinal && !VerificationState.configurationError.isFinal)
    }

    @Test("subscription state comes from Apple's dates, evaluated at an instant")
    func subscriptionStatus() {
        var facts = SubscriptionFacts(
            appId: "a", originalTransactionId: "1", appUserId: "u", productId: "p", environment: "sandbox",
            latestTransactionId: "3", expiresDate: referenceTime.addingTimeInterval(60), revokedAt: nil,
            autoRenewEnabled: true, autoRenewProductId: "p", inBillingRetry: false, gracePeriodExpiresDate: nil,
            expirationIntent: nil, updatedAt: referenceTime)
        #expect(SubscriptionStatus.evaluate(facts, at: referenceTime) == .active)
        #expect(SubscriptionStatus.evaluate(facts, at: referenceTime.addingTimeInterval(61)) == .expired)
        facts.inBillingRetry = true
        #expect(SubscriptionStatus.evaluate(facts, at: referenceTime.addingTimeInterval(61)) == .inBillingRetry)
        facts.gracePeriodExpiresDate = referenceTime.addingTimeInterval(120)
        #expect(SubscriptionStatus.evaluate(facts, at: referenceTime.addingTimeInterval(61)) == .inGracePeriod)
        #expect(SubscriptionStatus.evaluate(facts, at: referenceTime.addingTimeInterval(121)) == .inBillingRetry)
        facts.revokedAt = referenceTime
        #expect(SubscriptionStatus.evaluate(facts, at: referenceTime) == .revoked)
        #expect(!SubscriptionStatus.revoked.grantsAccess && SubscriptionStatus.inGracePeriod.grantsAccess)
    }

    @Test("ISO 8601 durations use calendar months (Jan 31 + 1 month = Feb 28)")
    func durations() throws {
        let jan31 = try #require(ISO8601DateFormatter().date(from: "2026-01-31T10:00:00Z"))
        #expect(ISODuration("P1M")?.added(to: jan31) == ISO8601DateFormatter().date(from: "2026-02-28T10:00:00Z"))
        #expect(ISODuration("P1W")?.added(to: jan31) == ISO8601DateFormatter().date(from: "2026-02-07T10:00:00Z"))
        #expect(ISODuration("PT90M")?.added(to: jan31) == jan31.addingTimeInterval(5400))
        #expect(ISODuration("1M") == nil)
        #expect(ISODuration("P") == nil)
        #expect(ISODuration("PXM") == nil)
    }
}

@Suite("granting")
struct GrantPlannerTests {
    let catalog: [String: Product] = [
        "coins": Product(productId: "coins", type: .consumable, creditAmount: 100, priceMicros: 990_000, currency: "USD"),
        "noads": Product(productId: "noads", type: .nonConsumable, priceMicros: 2_990_000, currency: "USD"),
        "monthly": Product(productId: "monthly", type: .autoRenewable, priceMicros: 4_990_000, currency: "USD"),
        "season": Product(productId: "season", type: .nonRenewing, duration: "P1M", priceMicros: 9_990_000, currency: "USD"),
    ]

    func context(
        user: String = "alice", existing: [TransactionRecord] = [], bindings: [OwnershipBinding] = [], policy: BindingPolicy = .refuse
    )
        -> GrantContext
    {
        GrantContext(
            appId: "app", bundleId: "com.example", appUserId: user, verificationId: "v1", now: referenceTime,
            catalog: catalog, bindingPolicy: policy,
            existingTransactions: Dictionary(uniqueKeysWithValues: existing.map { ($0.transactionId, $0) }),
            bindings: Dictionary(uniqueKeysWithValues: bindings.map { ($0.originalTransactionId, $0) }))
    }

    func tx(
        _ id: String, _ product: String, original: String? = nil, at offset: TimeInterval = 0, expires: TimeInterval? = nil, cancelled: Bool = false
    )
        -> InAppTransaction
    {
        InAppTransaction(
            productId: product, transactionId: id, originalTransactionId: original ?? id,
            purchaseDate: referenceTime.addingTimeInterval(offset), originalPurchaseDate: referenceTime,
            expiresDate: expires.map { referenceTime.addingTimeInterval($0) },
            cancellationDate: cancelled ? referenceTime.addingTimeInterval(offset + 1) : nil)
    }

    func plan(_ response: VerifyReceiptResponse, _ context: GrantContext) throws -> GrantPlan {
        guard case .grant(let plan) = GrantPlanner.plan(response, context: context) else {
            throw CancellationError()
        }
        return plan
    }

    @Test("another app's bundle id is rejected, an empty in_app grants nothing")
    func bundleAndEmpty() throws {
        let other = VerifyReceiptResponse(status: .valid, receipt: ReceiptInfo(bundleId: "com.evil", inApp: [tx("1", "noads")]))
        guard case .reject(let reason) = GrantPlanner.plan(other, context: context()) else {
            Issue.record("expected a rejection")
            return
        }
        #expect(reason == "bundle_id_mismatch")
        let empty = try plan(VerifyReceiptResponse(status: .valid, receipt: ReceiptInfo(bundleId: "com.example", inApp: [])), context())
        #expect(empty.newTransactions.isEmpty && empty.ledger.isEmpty && empty.summary.granted.isEmpty)
    }

    @Test("consumables credit once per transaction id; a replay grants nothing")
    func consumableOnce() throws {
        let first = try plan(
            VerifyReceiptResponse(status: .valid, receipt: ReceiptInfo(bundleId: "com.example", inApp: [tx("1", "coins")])), context())
        #expect(first.summary.creditsAdded == 100)
        #expect(first.ledger.map(\.priceMicros) == [990_000])
        let replay = try plan(
            VerifyReceiptResponse(
                status: .valid, receipt: ReceiptInfo(bundleId: "com.example", inApp: [tx("1", "coins"), tx("2", "coins", at: 10)])),
            context(existing: first.newTransactions, bindings: first.bindings))
        #expect(replay.summary.creditsAdded == 100)
        #expect(replay.summary.granted == ["2"])
        #expect(replay.summary.alreadyGranted == ["1"])
    }

    @Test("REFUND_REVERSED undoes a recorded refund once; a refund signed before its reversal, delivered late, is ignored")
    func refundReversal() throws {
        let bought = try plan(
            VerifyReceiptResponse(status: .valid, receipt: ReceiptInfo(bundleId: "com.example", inApp: [tx("1", "noads")])), context())
        let refunded = try plan(
            VerifyReceiptResponse(status: .valid, receipt: ReceiptInfo(bundleId: "com.example", inApp: [tx("1", "noads", cancelled: true)])),
            context(existing: bought.newTransactions, bindings: bought.bindings))
        #expect(refunded.summary.revoked == ["1"])
        var revoked = try #require(refunded.revokedTransactions.first)

        // The reversal, signed at +100 s: reinstated, money back in the ledger.
        var reversal = context(existing: [revoked], bindings: bought.bindings)
        reversal.reversesRefunds = true
        reversal.evidenceSignedAt = referenceTime.addingTimeInterval(100)
        let clean = VerifyReceiptResponse(status: .valid, receipt: ReceiptInfo(bundleId: "com.example", inApp: [tx("1", "noads")]))
        let reversed = try plan(clean, reversal)
        #expect(reversed.summary.reinstated == ["1"])
        #expect(reversed.reinstatedTransactions.first?.cancellationDate == nil)
        #expect(reversed.reinstatedTransactions.first?.reinstatedAt == referenceTime.addingTimeInterval(100))
        #expect(reversed.ledger.map(\.event) == [.refundReversed] && reversed.ledger.map(\.priceMicros) == [2_990_000])

        // Without the reversal flag, an answer that omits the refund changes nothing (a late renewal).
        #expect(try plan(clean, context(existing: [revoked], bindings: bought.bindings)).reinstatedTransactions.isEmpty)

        // The refund arrives again, signed before the reversal: ignored. Signed after: a new refund.
        let reinstated = try #require(reversed.reinstatedTransactions.first)
        let refundAgain = VerifyReceiptResponse(
            status: .valid, receipt: ReceiptInfo(bundleId: "com.example", inApp: [tx("1", "noads", cancelled: true)]))
        var stale = context(existing: [reinstated], bindings: bought.bindings)
        stale.evidenceSignedAt = referenceTime.addingTimeInterval(50)
        let ignored = try plan(refundAgain, stale)
        #expect(ignored.revokedTransactions.isEmpty && ignored.summary.alreadyGranted == ["1"] && ignored.ledger.isEmpty)
        var fresh = stale
        fresh.evidenceSignedAt = referenceTime.addingTimeInterval(200)
        #expect(try plan(refundAgain, fresh).summary.revoked == ["1"])

        // A reversal that overtakes its refund is remembered, so the refund arriving later is ignored.
        var early = context(existing: bought.newTransactions, bindings: bought.bindings)
        early.reversesRefunds = true
        early.evidenceSignedAt = referenceTime.addingTimeInterval(100)
        let overtaking = try plan(clean, early)
        #expect(overtaking.summary.reinstated == nil && overtaking.ledger.isEmpty)
        revoked = try #require(overtaking.reinstatedTransactions.first)
        #expect(revoked.reinstatedAt == referenceTime.addingTimeInterval(100))
        var late = context(existing: [revoked], bindings: bought.bindings)
        late.evidenceSignedAt = referenceTime.addingTimeInterval(90)
        #expect(try plan(refundAgain, late).revokedTransactions.isEmpty)
    }

    @Test("an original transaction bound to another user is refused with a conflict, or moved under transfer")
    func binding() throws {
        let bound = [OwnershipBinding(appId: "app", originalTransactionId: "1", appUserId: "alice", productId: "noads")]
        let response = VerifyReceiptResponse(status: .valid, receipt: ReceiptInfo(bundleId: "com.example", inApp: [tx("1", "noads")]))
        let refused = try plan(response, context(user: "mallory", bindings: bound))
        #expect(refused.newTransactions.isEmpty)
        #expect(refused.summary.conflicts.map(\.code) == [GrantConflict.ownedByAnotherUser])
        let moved = try plan(response, context(user: "bob", bindings: bound, policy: .transfer))
        #expect(moved.transfers == [OwnershipTransfer(originalTransactionId: "1", fromAppUserId: "alice", toAppUserId: "bob")])
        #expect(moved.newTransactions.first?.appUserId == "bob")
    }

    @Test("subscription facts come from the latest expiry in unsorted arrays, with renewal info")
    func subscriptionFacts() throws {
        let renewals = [
            tx("3", "monthly", original: "1", at: 200, expires: 300), tx("1", "monthly", at: 0, expires: 100),
            tx("2", "monthly", original: "1", at: 100, expires: 200),
        ]
        var response = VerifyReceiptResponse(status: .valid, receipt: ReceiptInfo(bundleId: "com.example", inApp: [renewals[1]]))
        response.latestReceiptInfo = renewals
        response.pendingRenewalInfo = [
            PendingRenewalInfo(
                autoRenewProductId: "monthly", productId: "monthly", originalTransactionId: "1", autoRenewStatus: false,
                isInBillingRetryPeriod: true, gracePeriodExpiresDate: referenceTime.addingTimeInterval(400))
        ]
        let result = try plan(response, context())
        let facts = try #require(result.subscriptions.first)
        #expect(facts.latestTransactionId == "3")
        #expect(facts.expiresDate == referenceTime.addingTimeInterval(300))
        #expect(facts.autoRenewEnabled == false && facts.inBillingRetry)
        #expect(facts.gracePeriodExpiresDate == referenceTime.addingTimeInterval(400))
        #expect(result.newTransactions.count == 3)
    }

    @Test("a cancellation date revokes: first seen refunded → no credit; later refund → ledger refund entry")
    func refunds() throws {
        let refundedOnArrival = try plan(
            VerifyReceiptResponse(status: .valid, receipt: ReceiptInfo(bundleId: "com.example", inApp: [tx("1", "coins", cancelled: true)])),
            context())
        #expect(refundedOnArrival.summary.creditsAdded == 0)
        #expect(refundedOnArrival.ledger.map(\.event) == [.purchase, .refund])
        let granted = try plan(
            VerifyReceiptResponse(status: .valid, receipt: ReceiptInfo(bundleId: "com.example", inApp: [tx("5", "noads")])), context())
        let later = try plan(
            VerifyReceiptResponse(status: .valid, receipt: ReceiptInfo(bundleId: "com.example", inApp: [tx("5", "noads", cancelled: true)])),
            context(existing: granted.newTransactions, bindings: granted.bindings))
        #expect(later.summary.revoked == ["5"])
        #expect(later.ledger.map(\.event) == [.refund])
        #expect(later.ledger.first?.priceMicros == -2_990_000)
    }

    @Test("non-renewing purchases stack: the second period starts when the first ends")
    func stacking() throws {
        let result = try plan(
            VerifyReceiptResponse(
                status: .valid, receipt: ReceiptInfo(bundleId: "com.example", inApp: [tx("1", "season"), tx("2", "season", at: 86_400)])),
            context())
        let view = SubscriberView.build(
            appUserId: "alice", transactions: result.newTransactions, subscriptions: [], catalog: catalog,
            now: referenceTime.addingTimeInterval(40 * 86_400))
        let season = try #require(view.nonRenewingSubscriptions.first)
        // Jan 15 + 1 month = Feb 15, + 1 month = Mar 15.
        #expect(season.endDate == ISO8601DateFormatter().date(from: "2026-03-15T12:00:00Z"))
        #expect(season.isActive)
        #expect(view.activeEntitlements == ["season"])
    }
}

@Suite("failure reasons")
struct FailureReasonTests {
    @Test("one list: unique names, every Apple status classification and every signed-data failure code is in it")
    func oneList() {
        #expect(Set(FailureReason.all).count == FailureReason.all.count)
        let statuses = [21000, 21002, 21003, 21004, 21005, 21007, 21008, 21010, 21100, 21199, 21999]
        for status in statuses {
            let response = VerifyReceiptResponse(status: AppStoreStatus(rawValue: status))
            switch AttemptClassification.classify(response, environment: .production) {
            case .invalid(let reason, _), .transient(let reason, _), .configurationError(let reason, _):
                #expect(FailureReason.all.contains(reason), "\(status) → \(reason)")
            case .verified, .redirect: break
            }
        }
        let failures: [SignedDataVerdict.Failure] = [
            .unsupportedAlgorithm("none"), .missingCertificateChain("x"), .badSignature("x"), .untrustedChain([]),
            .wrongBundleId(expected: "a", found: nil), .wrongEnvironment(expected: "a", found: nil), .wrongAppAppleId(expected: 1, found: nil),
        ]
        for failure in failures { #expect(FailureReason.all.contains(FailureReason(rawValue: failure.code)), "\(failure.code)") }
    }

    @Test("a reason not in the list (a stored row from a newer version) is kept as read")
    func unknownKept() throws {
        let decoded = try JSONDecoder().decode([FailureReason].self, from: Data(#"["apple_something_new"]"#.utf8))
        #expect(decoded == [FailureReason(rawValue: "apple_something_new")])
        #expect(String(decoding: try JSONEncoder().encode(decoded), as: UTF8.self) == #"["apple_something_new"]"#)
    }
}

@Suite("grant rules, one by one")
struct GrantRuleTests {
    let t0 = referenceTime

    func purchase(_ id: String, original: String? = nil, cancelled: Date? = nil, expires: Date? = nil) -> PurchaseEvidence.Purchase {
        PurchaseEvidence.Purchase(
            transactionId: id, originalTransactionId: original ?? id, productId: "p", purchaseDate: t0, expiresDate: expires,
            cancellationDate: cancelled)
    }

    func record(_ id: String, cancelled: Date? = nil, reinstatedAt: Date? = nil) -> TransactionRecord {
        var record = TransactionRecord(
            appId: "app", appUserId: "alice", transactionId: id, originalTransactionId: id, productId: "p", productType: .nonConsumable,
            environment: "sandbox", purchaseDate: t0, originalPurchaseDate: t0, expiresDate: nil, cancellationDate: cancelled, quantity: 1,
            credits: 0, ownershipType: "PURCHASED", verificationId: "v")
        record.reinstatedAt = reinstatedAt
        return record
    }

    func context(user: String, policy: BindingPolicy = .refuse) -> GrantContext {
        GrantContext(
            appId: "app", bundleId: "b", appUserId: user, verificationId: "v", now: t0, catalog: [:], bindingPolicy: policy)
    }

    @Test("binding: unbound binds; bound to the same user passes; another user: conflict (refuse) or move (transfer)")
    func binding() {
        var bindings: [String: OwnershipBinding] = [:]
        var plan = GrantPlan()
        #expect(BindingRule.bind(purchase("1"), context: context(user: "alice"), bindings: &bindings, plan: &plan))
        #expect(plan.bindings.map(\.appUserId) == ["alice"] && bindings["1"]?.appUserId == "alice")
        #expect(BindingRule.bind(purchase("1"), context: context(user: "alice"), bindings: &bindings, plan: &plan))
        #expect(plan.bindings.count == 1)
        #expect(!BindingRule.bind(purchase("1"), context: context(user: "bob"), bindings: &bindings, plan: &plan))
        #expect(!BindingRule.bind(purchase("1"), context: context(user: "bob"), bindings: &bindings, plan: &plan))
        #expect(plan.summary.conflicts.map(\.transactionId) == ["1"], "one conflict per transaction")
        #expect(BindingRule.bind(purchase("1"), context: context(user: "bob", policy: .transfer), bindings: &bindings, plan: &plan))
        #expect(plan.transfers == [OwnershipTransfer(originalTransactionId: "1", fromAppUserId: "alice", toAppUserId: "bob")])
        #expect(bindings["1"]?.appUserId == "bob")
    }

    @Test("refunds: a refund revokes; one signed before a standing reversal is stale; a reversal reinstates, even ahead of its refund")
    func refunds() {
        let refund = t0.addingTimeInterval(100)
        #expect(RefundRule.change(record("1"), seen: purchase("1"), evidenceAt: t0, reversesRefunds: false) == .none)
        guard
            case .revoke(let revoked) = RefundRule.change(record("1"), seen: purchase("1", cancelled: refund), evidenceAt: t0, reversesRefunds: false)
        else {
            Issue.record("expected a revocation")
            return
        }
        #expect(revoked.cancellationDate == refund)
        let reinstated = record("1", reinstatedAt: t0.addingTimeInterval(200))
        #expect(
            RefundRule.change(reinstated, seen: purchase("1", cancelled: refund), evidenceAt: t0.addingTimeInterval(150), reversesRefunds: false)
                == .staleRefund)
        guard
            case .reinstate(let back, let wasRevoked) = RefundRule.change(
                record("1", cancelled: refund), seen: purchase("1"), evidenceAt: t0.addingTimeInterval(300), reversesRefunds: true)
        else {
            Issue.record("expected a reinstatement")
            return
        }
        #expect(back.cancellationDate == nil && back.reinstatedAt == t0.addingTimeInterval(300) && wasRevoked)
        guard case .reinstate(_, let early) = RefundRule.change(record("1"), seen: purchase("1"), evidenceAt: t0, reversesRefunds: true) else {
            Issue.record("a reversal ahead of its refund is remembered")
            return
        }
        #expect(!early)
    }

    @Test("a copy Apple stated as current after a recorded refund, without it, reverses the refund; one stated before it does not")
    func currentCopyReversesRefund() {
        let refund = t0.addingTimeInterval(100)
        var current = purchase("1")
        current.currentAt = t0.addingTimeInterval(400)
        guard
            case .reinstate(let back, let wasRevoked) = RefundRule.change(
                record("1", cancelled: refund), seen: current, evidenceAt: t0.addingTimeInterval(500), reversesRefunds: false)
        else {
            Issue.record("expected a reinstatement")
            return
        }
        #expect(back.cancellationDate == nil && back.reinstatedAt == t0.addingTimeInterval(400) && wasRevoked)
        var old = purchase("1")
        old.currentAt = t0.addingTimeInterval(50)
        #expect(
            RefundRule.change(record("1", cancelled: refund), seen: old, evidenceAt: t0.addingTimeInterval(500), reversesRefunds: false) == .none,
            "a history signed before the refund, processed after it, reverses nothing")
        #expect(
            RefundRule.change(record("1", cancelled: refund), seen: purchase("1"), evidenceAt: t0.addingTimeInterval(500), reversesRefunds: false)
                == .none, "a copy that may be old (a device's receipt) reverses nothing")
        #expect(RefundRule.change(record("1"), seen: current, evidenceAt: t0, reversesRefunds: false) == .none, "nothing to reverse")
    }

    @Test("subscription facts: a renewal info signed before the stored one does not replace it (notifications arrive in any order); a later one does")
    func renewalOrder() throws {
        func evidence(autoRenew: Bool, retry: Bool, signedAt: Date?) -> PurchaseEvidence {
            PurchaseEvidence(
                source: .notification, bundleId: "b", environment: "sandbox",
                purchases: [purchase("1", original: "o", expires: t0.addingTimeInterval(60))],
                renewals: [
                    "o": .init(
                        autoRenewEnabled: autoRenew, autoRenewProductId: "p", inBillingRetry: retry, gracePeriodExpiresDate: nil,
                        expirationIntent: nil,
                        signedAt: signedAt)
                ])
        }
        func facts(_ evidence: PurchaseEvidence, over stored: SubscriptionFacts?) -> SubscriptionFacts? {
            var context = context(user: "alice")
            if let stored { context.subscriptions = ["o": stored] }
            return SubscriptionFactsRule.facts(
                "o", purchases: evidence.purchases, owner: "alice", evidence: evidence, context: context, refundStands: { _ in nil },
                refundIsStale: { _ in false })
        }
        // Renewal turned off (signed at +10), told first; the purchase's own notification (signed at +1) after it.
        let off = try #require(facts(evidence(autoRenew: false, retry: true, signedAt: t0.addingTimeInterval(10)), over: nil))
        #expect(off.autoRenewEnabled == false && off.inBillingRetry && off.renewalSignedAt == t0.addingTimeInterval(10))
        let late = facts(evidence(autoRenew: true, retry: false, signedAt: t0.addingTimeInterval(1)), over: off)
        #expect(
            late == nil || (late?.autoRenewEnabled == false && late?.inBillingRetry == true),
            "the older renewal info changes nothing: \(String(describing: late))")
        // A later one does; so does one whose time is unknown (a receipt: Apple's answer of the moment).
        let on = try #require(facts(evidence(autoRenew: true, retry: false, signedAt: t0.addingTimeInterval(20)), over: off))
        #expect(on.autoRenewEnabled == true && !on.inBillingRetry && on.renewalSignedAt == t0.addingTimeInterval(20))
        let receipt = try #require(facts(evidence(autoRenew: true, retry: false, signedAt: nil), over: off))
        #expect(receipt.autoRenewEnabled == true && receipt.renewalSignedAt == nil)
    }

    @Test("subscription facts: the latest transaction and its renewal; never an expiry moved back; unchanged facts not rewritten")
    func subscriptionFacts() throws {
        let evidence = PurchaseEvidence(
            source: .receipt, bundleId: "b", environment: "sandbox",
            purchases: [
                purchase("1", original: "o", expires: t0.addingTimeInterval(30)), purchase("2", original: "o", expires: t0.addingTimeInterval(60)),
            ],
            renewals: [
                "o": .init(autoRenewEnabled: false, autoRenewProductId: "p", inBillingRetry: true, gracePeriodExpiresDate: nil, expirationIntent: "1")
            ])
        var context = context(user: "alice")
        let facts = try #require(
            SubscriptionFactsRule.facts(
                "o", purchases: evidence.purchases, owner: "alice", evidence: evidence, context: context, refundStands: { _ in nil },
                refundIsStale: { _ in false }))
        #expect(facts.latestTransactionId == "2" && facts.expiresDate == t0.addingTimeInterval(60) && facts.inBillingRetry)
        #expect(facts.autoRenewEnabled == false && facts.expirationIntent == "1")
        context.subscriptions = ["o": facts]
        #expect(
            SubscriptionFactsRule.facts(
                "o", purchases: evidence.purchases, owner: "alice", evidence: evidence, context: context, refundStands: { _ in nil },
                refundIsStale: { _ in false }) == nil, "unchanged")
        #expect(
            SubscriptionFactsRule.facts(
                "o", purchases: [evidence.purchases[0]], owner: "alice", evidence: evidence, context: context, refundStands: { _ in nil },
                refundIsStale: { _ in false }) == nil, "older answer")
        let refunded = SubscriptionFactsRule.facts(
            "o", purchases: evidence.purchases, owner: "alice", evidence: evidence, context: context, refundStands: { _ in t0 },
            refundIsStale: { _ in false })
        #expect(refunded?.revokedAt == t0, "a recorded refund stands")
    }

    @Test("ledger: priced per quantity, refunds negative, family-shared copies free")
    func ledger() {
        let product = Product(productId: "p", type: .consumable, priceMicros: 990_000, currency: "EUR")
        var bought = record("1")
        bought.quantity = 3
        #expect(LedgerRule.entry(bought, product: product, event: .purchase, state: "granted", now: t0).priceMicros == 2_970_000)
        #expect(LedgerRule.entry(bought, product: product, event: .refund, state: "refunded", now: t0).priceMicros == -2_970_000)
        var shared = record("2")
        shared.ownershipType = "FAMILY_SHARED"
        #expect(LedgerRule.entry(shared, product: product, event: .purchase, state: "granted", now: t0).priceMicros == nil)
        #expect(LedgerRule.entry(bought, product: nil, event: .purchase, state: "granted", now: t0).priceMicros == nil)
    }
}

@Suite("prorated refunds in the ledger")
struct ProratedRefundLedgerTests {
    let product = Product(productId: "gems", type: .consumable, creditAmount: 1, priceMicros: 990_000, currency: "USD")

    func record(quantity: Int, ownership: String = "PURCHASED") -> TransactionRecord {
        TransactionRecord(
            appId: "app", appUserId: "u", transactionId: "1", originalTransactionId: "1", productId: "gems", productType: .consumable,
            environment: "production", purchaseDate: referenceTime, originalPurchaseDate: nil, expiresDate: nil, cancellationDate: nil,
            quantity: quantity, credits: quantity, ownershipType: ownership, verificationId: "v")
    }

    @Test("the refund is the share Apple refunded, rounded to the micro-unit; its reversal credits the same; the purchase is whole")
    func shares() {
        let tx = record(quantity: 3)
        func price(_ event: LedgerEntry.Event, _ share: Int?) -> Int64? {
            LedgerRule.entry(tx, product: product, event: event, state: "x", now: referenceTime, refundedShare: share).priceMicros
        }
        // 1 of 3 refunded: 33.333 % of 2.97 USD.
        #expect(price(.refund, 33_333) == -989_990)
        #expect(price(.refundReversed, 33_333) == 989_990)
        #expect(price(.refund, nil) == -2_970_000 && price(.refund, 100_000) == -2_970_000)
        #expect(price(.refund, 0) == 0)
        // Out of range is clamped, never more than was paid.
        #expect(price(.refund, 250_000) == -2_970_000 && price(.refund, -5) == 0)
        // The share of a refund says nothing about the purchase.
        #expect(price(.purchase, 25_000) == 2_970_000)
        // A family member paid nothing.
        #expect(
            LedgerRule.entry(
                record(quantity: 1, ownership: "FAMILY_SHARED"), product: product, event: .refund, state: "x", now: referenceTime,
                refundedShare: 50_000
            ).priceMicros == nil)
    }
}
