import AppStoreSimulator
import Foundation
import JobQueue
import NIOHTTP1
import Persistence
import SimulatorSetup
import StorekeeperDomain
import StorekeeperServer
import StorekeeperTesting
import Testing

/// Notifications V2 sent by the simulator itself, as Apple sends them: real HTTP deliveries to
/// the server, Apple's retry schedule, duplicates, out-of-order and lost deliveries, the
/// gap-fill from Apple's notification history, the Server API standing in for verifyReceipt,
/// and the subscriber refresh.
@Suite("notifications from the simulated App Store, and the Server API paths of the server")
struct NotificationDeliveryTests {
    static func withAPIStack<T>(
        secondsPerMonth: Double = 300, configure: (inout StorekeeperConfiguration) -> Void = { _ in },
        configureSimulator: (inout SimulatorConfiguration) -> Void = { _ in }, _ body: (LocalStack) async throws -> T
    ) async throws -> T {
        try await withStack(
            secondsPerMonth: secondsPerMonth,
            configure: {
                $0.apps[0].serverAPI = .generated()
                configure(&$0)
            }, configureSimulator: configureSimulator, body)
    }

    func subscription(_ stack: LocalStack, _ user: String) async throws -> SubscriberView.Subscription? {
        try await stack.api.subscriber(user).subscriptions.first
    }

    /// Nothing in flight can still change a subscriber: every notification the simulator
    /// created so far was delivered (the server stores a notification with the verification it
    /// causes before it answers), and every verification is final.
    func settled(_ stack: LocalStack) async throws -> Bool {
        guard try await stack.simulator.notifications().allSatisfy({ $0["delivered"] as? Bool == true }) else { return false }
        return try await stack.store.verificationCounts().keys.allSatisfy { $0.isFinal || $0 == .configurationError }
    }

    /// Whether the simulator has created a notification of `type` (for `transactionId`, if
    /// given). It signs each one at creation, on its sender's next tick.
    func created(_ stack: LocalStack, _ type: String, transactionId: String? = nil) async throws -> Bool {
        try await stack.simulator.notifications().contains {
            $0["notificationType"] as? String == type && (transactionId == nil || $0["transactionId"] as? String == transactionId)
        }
    }

    /// Apple's latest period of a subscription (the transaction that expires last): its id, and
    /// whether it was refunded.
    func latestPeriod(_ stack: LocalStack, of originalTransactionId: String) async throws -> (transactionId: String, refunded: Bool)? {
        let periods = try await stack.simulator.soldTransactions().compactMap { $0["transaction"] as? [String: Any] }
            .filter { $0["original_transaction_id"] as? String == originalTransactionId }
        func expiry(_ period: [String: Any]) -> Int64 { Int64(period["expires_date_ms"] as? String ?? "") ?? 0 }
        guard let latest = periods.max(by: { expiry($0) < expiry($1) }), let id = latest["transaction_id"] as? String else { return nil }
        return (transactionId: id, refunded: latest["cancellation_date_ms"] is String)
    }

    @Test("a renewal, a billing failure into grace, the recovery and a refund, each delivered by Apple, change the subscriber")
    func subscriptionLifecycle() async throws {
        // Months of an hour, moved by the test: a month ends when the test advances the shared
        // clock past it, not every few seconds of wall time (a busy server falling seconds behind
        // Apple's renewals would then never be seen active). The grace period outlasts the test.
        let month = 3_600.0
        try await Self.withAPIStack(secondsPerMonth: month, configureSimulator: { $0.gracePeriodSeconds = 10 * month }) { stack in
            try await stack.sendNotifications()
            let device = try await stack.simulator.createDevice(bundleId: demoBundle, environment: "production")
            let bought = try await stack.simulator.purchase(device: device, productId: "com.example.pro.monthly")
            #expect(
                try await stack.api.postSignedTransaction(appUserId: "alice", signedTransaction: bought.signedTransaction, wait: TestWait.seconds)
                    .status == 200)
            let firstExpiry = try #require(try await subscription(stack, "alice")?.expiresDate)

            // The month ends; Apple renews and says so (DID_RENEW).
            try await stack.simulator.advanceClock(seconds: month + 1)
            try await stack.settle()
            #expect((try await subscription(stack, "alice")?.expiresDate ?? .distantPast) > firstExpiry)

            // Apple cannot charge at the next month's end: billing retry with a grace period,
            // access kept.
            try await stack.simulator.failBilling(originalTransactionId: bought.originalTransactionId, gracePeriod: true)
            try await stack.simulator.advanceClock(seconds: month + 1)
            try await stack.settle()
            #expect(try await subscription(stack, "alice")?.status == .inGracePeriod)
            #expect(try await subscription(stack, "alice")?.isActive == true)

            // The charge goes through (DID_RENEW / BILLING_RECOVERY): a month from now.
            let recovered = try #require(
                try await stack.simulator.http.send(.POST, "/sim/subscriptions/\(bought.originalTransactionId)/billing-recovery").json[
                    "transaction_id"] as? String)
            try await stack.settle()
            #expect(try await subscription(stack, "alice")?.status == .active)

            // Apple refunds the current period (REFUND), which also ends auto-renewal. Should a
            // month have ended meanwhile after all, the period Apple renewed into is refunded too.
            try await stack.simulator.refund(transactionId: recovered)
            if let latest = try await latestPeriod(stack, of: bought.originalTransactionId), !latest.refunded {
                try await stack.simulator.refund(transactionId: latest.transactionId)
            }
            try await stack.settle()
            #expect(try await subscription(stack, "alice")?.status == .revoked)
            #expect(try await settled(stack))
            #expect(try await subscription(stack, "alice")?.isActive == false)

            let sent = try await stack.simulator.notifications()
            let types = Set(sent.compactMap { $0["notificationType"] as? String })
            #expect(types.isSuperset(of: ["SUBSCRIBED", "DID_RENEW", "DID_FAIL_TO_RENEW", "REFUND"]), "\(types)")
            #expect(sent.allSatisfy { $0["delivered"] as? Bool == true })
        }
    }

    @Test("a duplicate delivery and an out-of-order delivery change nothing twice")
    func duplicatesAndOrder() async throws {
        // Push delivery only: a gap-fill pull (its interval passes in moments on the accelerated
        // clock) could fetch the held-back failure before the recovery is delivered, and then
        // the failure is rightly news (a CI run on a loaded machine did just that).
        try await Self.withAPIStack(configure: { $0.notificationGapFill.enabled = false }) { stack in
            try await stack.sendNotifications()
            let device = try await stack.simulator.createDevice(bundleId: demoBundle, environment: "production")
            let bought = try await stack.simulator.purchase(device: device, productId: "com.example.pro.monthly")
            #expect(
                try await stack.api.postSignedTransaction(appUserId: "alice", signedTransaction: bought.signedTransaction, wait: TestWait.seconds)
                    .status == 200)
            // The purchase's SUBSCRIBED is created (and delivered) before a fault is set, so the
            // fault applies to the notification it is meant for, however late Apple's sender runs.
            try await stack.settle()
            #expect(try await created(stack, "SUBSCRIBED"))
            try await stack.settle()
            #expect(try await stack.simulator.notifications().allSatisfy { $0["delivered"] as? Bool == true })

            // DID_FAIL_TO_RENEW is held back and arrives after the recovery's DID_RENEW, once the
            // server has finished the recovery's work (released at the test's word: delivery
            // order alone is not processing order). The recovery waits until Apple has created
            // (and signed) the failure's notification, so the recovery's is signed later.
            try await stack.simulator.setNotificationFaults(hold: 1)
            try await stack.simulator.failBilling(originalTransactionId: bought.originalTransactionId, gracePeriod: false)
            try await stack.settle()
            #expect(try await created(stack, "DID_FAIL_TO_RENEW"))
            try await stack.simulator.recoverBilling(originalTransactionId: bought.originalTransactionId)
            try await stack.settle()
            #expect(try await created(stack, "DID_RENEW"))
            try await stack.settle()
            let sentBeforeRelease = try await stack.simulator.notifications()
            #expect(sentBeforeRelease.last?["notificationType"] as? String == "DID_RENEW" && sentBeforeRelease.last?["delivered"] as? Bool == true)
            #expect(try await stack.store.verificationCounts().keys.allSatisfy { $0.isFinal })
            #expect(try await stack.simulator.releaseHeldNotifications() == 1)
            try await stack.settle()
            #expect(try await stack.simulator.notifications().allSatisfy { $0["delivered"] as? Bool == true })
            let sent = try await stack.simulator.notifications()
            let order = sent.compactMap { $0["notificationType"] as? String }
            #expect(order.suffix(2) == ["DID_FAIL_TO_RENEW", "DID_RENEW"], "created in this order")
            // Both were delivered; once the server has also finished the work they caused, the
            // late failure has had every chance to undo the recovery.
            try await stack.settle()
            #expect(try await settled(stack))
            let afterBoth = try #require(try await subscription(stack, "alice"))
            #expect(afterBoth.status == .active, "the late failure does not undo the recovery: \(afterBoth)")
            let told = try await stack.api.events("").filter { $0.event.appUserId == "alice" }.map(\.event.type)
            #expect(!told.contains(.billingIssue), "a failure Apple had already left is not news: \(told)")

            // A refund delivered twice is refunded once.
            try await stack.simulator.setNotificationFaults(duplicate: 1)
            let transactions = try await stack.store.transactions(appId: "demo", appUserId: "alice")
            let latest = try #require(transactions.max { ($0.expiresDate ?? .distantPast) < ($1.expiresDate ?? .distantPast) })
            try await stack.simulator.refund(transactionId: latest.transactionId)
            try await stack.settle()
            #expect((try await stack.simulator.notifications().last?["attempts"] as? [[String: Any]])?.count == 2)
            #expect(try await subscription(stack, "alice")?.status == .revoked)
            let ledger = try await stack.api.adminGet("/v1/admin/apps/demo/ledger")
            let entries = ledger.json["entries"] as? [[String: Any]] ?? []
            #expect(
                entries.filter { $0["event"] as? String == "refund" && $0["transactionId"] as? String == latest.transactionId }.count == 1,
                "\(ledger.text)")
        }
    }

    @Test("REFUND_REVERSED gives the purchase back, even when it overtakes its REFUND")
    func refundReversed() async throws {
        try await Self.withAPIStack { stack in
            try await stack.sendNotifications()
            let device = try await stack.simulator.createDevice(bundleId: demoBundle, environment: "production")
            let first = try await stack.simulator.purchase(device: device, productId: "com.example.removeads")
            #expect(
                try await stack.api.postSignedTransaction(appUserId: "alice", signedTransaction: first.signedTransaction, wait: TestWait.seconds)
                    .status == 200)
            func owns() async throws -> Bool { try await stack.api.subscriber("alice").activeEntitlements.contains("com.example.removeads") }

            // In order: refunded, then reversed.
            try await stack.simulator.refund(transactionId: first.transactionId)
            try await stack.settle()
            #expect(try await !owns())
            try await stack.simulator.reverseRefund(transactionId: first.transactionId)
            try await stack.settle()
            #expect(try await owns())
            let ledger = try await stack.api.adminGet("/v1/admin/apps/demo/ledger").json["entries"] as? [[String: Any]] ?? []
            #expect(Set(ledger.compactMap { $0["event"] as? String }) == ["purchase", "refund", "refund_reversed"], "\(ledger)")

            // Out of order: the REFUND of another purchase is held back until the server has taken
            // and worked through its reversal (a signal, not a head start on a timer).
            let second = try await stack.simulator.purchase(device: device, productId: "com.example.coins100")
            #expect(
                try await stack.api.postSignedTransaction(appUserId: "alice", signedTransaction: second.signedTransaction, wait: TestWait.seconds)
                    .status == 200)
            // The purchase's own notification exists before the fault is set: the REFUND is held.
            try await stack.settle()
            #expect(try await created(stack, "ONE_TIME_CHARGE", transactionId: second.transactionId))
            try await stack.simulator.setNotificationFaults(hold: 1)
            try await stack.simulator.refund(transactionId: second.transactionId)
            // The reversal waits until Apple has created (and signed) the REFUND's notification,
            // so the reversal's is signed later.
            try await stack.settle()
            #expect(try await created(stack, "REFUND", transactionId: second.transactionId))
            try await stack.simulator.reverseRefund(transactionId: second.transactionId)
            try await stack.settle()
            #expect(
                try await stack.simulator.notifications().contains {
                    $0["notificationType"] as? String == "REFUND_REVERSED" && $0["transactionId"] as? String == second.transactionId
                        && $0["delivered"] as? Bool == true
                })
            #expect(try await stack.store.verificationCounts().keys.allSatisfy { $0.isFinal || $0 == .configurationError })
            #expect(try await stack.simulator.releaseHeldNotifications() == 1, "the REFUND, held until now")
            // Delivered; once the server has also finished the work they caused, the late REFUND
            // has had every chance to undo the reversal.
            try await stack.settle()
            let sentAfterRelease = try await stack.simulator.notifications()
            #expect(sentAfterRelease.count >= 6 && sentAfterRelease.allSatisfy { $0["delivered"] as? Bool == true })
            #expect(try await settled(stack))
            let coins = try await stack.store.transactions(appId: "demo", appUserId: "alice").first { $0.transactionId == second.transactionId }
            #expect(coins?.cancellationDate == nil && coins?.reinstatedAt != nil, "the late refund does not undo the reversal")
            let told = try await stack.api.events("").filter { $0.event.transactionId == second.transactionId }.map(\.event.type)
            #expect(told == [.consumablePurchase], "a refund delivered after its reversal is not news: \(told)")
        }
    }

    @Test("a notification the sender loses is recovered by the scheduled gap-fill, once")
    func gapFill() async throws {
        try await Self.withAPIStack(configure: { $0.notificationGapFill.intervalSeconds = 1 }) { stack in
            try await stack.sendNotifications()
            let device = try await stack.simulator.createDevice(bundleId: demoBundle, environment: "production")
            let bought = try await stack.simulator.purchase(device: device, productId: "com.example.pro.monthly")
            #expect(
                try await stack.api.postSignedTransaction(appUserId: "alice", signedTransaction: bought.signedTransaction, wait: TestWait.seconds)
                    .status == 200)
            // The purchase's SUBSCRIBED exists before the fault is set: the REFUND is the one lost.
            try await stack.settle()
            #expect(try await created(stack, "SUBSCRIBED"))

            try await stack.simulator.setNotificationFaults(drop: 1)
            try await stack.simulator.refund(transactionId: bought.transactionId)
            try await stack.settle()
            #expect(try await stack.simulator.notifications().last?["notificationType"] as? String == "REFUND")
            let lost = try #require(try await stack.simulator.notifications().last)
            #expect(lost["delivered"] as? Bool == false)

            // Within an interval the gap-fill finds it in Apple's history and processes it.
            #expect(try await eventually { try await subscription(stack, "alice")?.status == .revoked })

            // Pulling again (by hand) finds it again and changes nothing.
            let again = try await stack.api.adminPost("/v1/admin/apps/demo/notifications/gap-fill?lookbackSeconds=600")
            #expect(again.status == 200 && again.json["recovered"] as? Int == 0 && (again.json["duplicates"] as? Int ?? 0) >= 1, "\(again.text)")
            #expect(try await stack.store.transactions(appId: "demo", appUserId: "alice").count == 1)
            // The longest window asked for reaches back further than the sandbox keeps history
            // (30 days; production 180): each environment is asked from what it keeps, never
            // refused by Apple with 4000012.
            let longest = try await stack.api.adminPost("/v1/admin/apps/demo/notifications/gap-fill?lookbackSeconds=15552000")
            #expect(longest.status == 200 && (longest.json["duplicates"] as? Int ?? 0) >= 1, "\(longest.text)")
            // A lookback below a date's precision is an empty window: nothing to read, and
            // nothing sent to Apple (which would refuse it).
            let tiny = try await stack.api.adminPost("/v1/admin/apps/demo/notifications/gap-fill?lookbackSeconds=1e-12")
            #expect(tiny.status == 200 && tiny.json["pages"] as? Int == 0, "\(tiny.text)")

            // Every pull is kept with what it found: the operator's three, newest first (the empty
            // window last asked), none recovering anything; the scheduled ones (however many ran)
            // recovered the refund at most once (Apple's own retry may have brought it first).
            let runs = try await stack.store.gapFillRuns(since: .distantPast, limit: 1_000)
            let manual = runs.filter { $0.cause == "operator" }
            #expect(manual.map(\.pages).first == 0 && manual.last?.pages == again.json["pages"] as? Int && manual.count == 3)
            #expect(manual.allSatisfy { $0.recovered == 0 } && manual.dropFirst().allSatisfy { $0.duplicates >= 1 })
            #expect(runs.contains { $0.cause == "scheduled" } && runs.allSatisfy { $0.appId == "demo" && $0.error == nil })
            #expect(runs.reduce(0) { $0 + $1.recovered } <= 1, "recovered at most once: \(runs)")
        }
    }

    @Test("an undelivered notification is retried on Apple's schedule until the server answers")
    func retrySchedule() async throws {
        // Retries 1, 2, … 10 hours apart: at 300 s a month the first comes 0.42 s after the failure
        // and the last some 23 s later, so the URL fixed late on a slow machine still gets one.
        try await Self.withAPIStack(configureSimulator: { $0.notificationRetryHours = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10] }) { stack in
            // Time moves at the test's word: a retry comes due only when the test moves past it.
            stack.clock.freeze()
            // Nobody listens on port 9 of loopback: every delivery fails.
            try await stack.sendNotifications(to: "http://127.0.0.1:9/v1/notifications/appstore")
            let device = try await stack.simulator.createDevice(bundleId: demoBundle, environment: "production")
            _ = try await stack.simulator.purchase(device: device, productId: "com.example.removeads")
            try await stack.settle()
            #expect((try await stack.simulator.notifications().first?["attempts"] as? [[String: Any]])?.count ?? 0 >= 1)
            try await stack.sendNotifications()
            // An attempt under way to the old URL ends first; then, past the whole schedule (55
            // hours of retries, 23 s at 300 s a month), the next retry comes due, now to a server
            // that answers.
            try await stack.settle()
            try await stack.simulator.advanceClock(seconds: 30)
            try await stack.settle()
            #expect(try await stack.simulator.notifications().first?["delivered"] as? Bool == true)
            let attempts = try #require(try await stack.simulator.notifications().first?["attempts"] as? [[String: Any]])
            let results = attempts.compactMap { $0["sendAttemptResult"] as? String }
            #expect(results.first == "NO_RESPONSE" && results.last == "SUCCESS" && results.count >= 2, "\(results)")
            let dates = attempts.compactMap { $0["attemptDate"] as? Int64 }
            // 1 hour at 300 s a month is 417 ms: the second attempt waited for it.
            #expect(dates.count >= 2 && dates[1] - dates[0] >= 400, "\(dates)")
        }
    }

    @Test("Family Sharing: a shared purchase is granted to the member, and REVOKE takes it away")
    func familySharingRevoke() async throws {
        try await Self.withAPIStack { stack in
            try await stack.sendNotifications()
            let buyer = try await stack.simulator.createDevice(bundleId: demoBundle, environment: "production")
            let member = try await stack.simulator.createDevice(bundleId: demoBundle, environment: "production")
            let bought = try await stack.simulator.purchase(device: buyer, productId: "com.example.removeads")
            #expect(
                try await stack.api.postSignedTransaction(appUserId: "alice", signedTransaction: bought.signedTransaction, wait: TestWait.seconds)
                    .status == 200)
            let shared = try await stack.simulator.shareWithFamily(transactionId: bought.transactionId, member: member)
            #expect(try jwsPayload(shared.signedTransaction)["inAppOwnershipType"] as? String == "FAMILY_SHARED")
            #expect(
                try await stack.api.postSignedTransaction(appUserId: "bob", signedTransaction: shared.signedTransaction, wait: TestWait.seconds)
                    .status == 200)
            #expect(try await stack.api.subscriber("bob").activeEntitlements.contains("com.example.removeads"))

            try await stack.simulator.revoke(transactionId: shared.transactionId)
            try await stack.settle()
            #expect(try await !stack.api.subscriber("bob").activeEntitlements.contains("com.example.removeads"))
            #expect(try await stack.api.subscriber("alice").activeEntitlements.contains("com.example.removeads"), "the buyer keeps it")

            // Nobody paid for the shared copy: the ledger shows no money for it.
            let ledger = try await stack.api.adminGet("/v1/admin/apps/demo/ledger").json["entries"] as? [[String: Any]] ?? []
            let sharedEntries = ledger.filter { $0["transactionId"] as? String == shared.transactionId }
            #expect(
                !sharedEntries.isEmpty && sharedEntries.allSatisfy { $0["priceMicros"] == nil || $0["priceMicros"] is NSNull }, "\(sharedEntries)")
        }
    }

    @Test("verifyReceipt down: a locally verified receipt is granted from the Server API's history")
    func receiptStandIn() async throws {
        try await Self.withAPIStack(configure: { $0.notificationGapFill.enabled = false }) { stack in
            let device = try await stack.simulator.createDevice(bundleId: demoBundle, environment: "production")
            let sub = try await stack.simulator.purchase(device: device, productId: "com.example.pro.monthly")
            let coins = try await stack.simulator.purchase(device: device, productId: "com.example.coins100")
            // Down for longer than the test can last: verifyReceipt never answers in it.
            try await stack.simulator.outage(seconds: 3600)

            // The Server API is down as well: the verification waits on its schedule.
            try await stack.simulator.setServerAPIFaults(down: true)
            let posted = try await stack.api.postReceipt(appUserId: "alice", receipt: coins.receipt, wait: 1)
            let id = try #require(posted.json["id"] as? String)
            #expect(posted.json["state"] as? String != "verified")
            #expect(try await stack.api.subscriber("alice").activeEntitlements.isEmpty)

            // The Server API answers: granted from the history Apple signed, verifyReceipt still down.
            try await stack.simulator.setServerAPIFaults()
            let verified = try await stack.api.waitForFinal(id)
            #expect(verified["state"] as? String == "verified", "\(verified)")
            let granted = Set((verified["grant"] as? [String: Any])?["granted"] as? [String] ?? [])
            #expect(granted == [sub.transactionId, coins.transactionId])
            let subscriber = try await stack.api.subscriber("alice")
            #expect(subscriber.subscriptions.first?.status == .active && subscriber.subscriptions.first?.autoRenewEnabled == true)
            let stats = try await stack.simulator.stats()
            #expect((stats["production.outage"] ?? 0) >= 1 && (stats["serverapi.production.history.200"] ?? 0) >= 1)
            #expect(stats["production.status.0"] == nil, "verifyReceipt never answered")
        }
    }

    @Test("an admin refresh pulls a subscriber's renewals from the Server API")
    func subscriberRefresh() async throws {
        try await Self.withAPIStack(secondsPerMonth: 1.5, configure: { $0.notificationGapFill.enabled = false }) { stack in
            let device = try await stack.simulator.createDevice(bundleId: demoBundle, environment: "production")
            let bought = try await stack.simulator.purchase(device: device, productId: "com.example.pro.monthly")
            #expect(
                try await stack.api.postSignedTransaction(appUserId: "alice", signedTransaction: bought.signedTransaction, wait: TestWait.seconds)
                    .status == 200)
            /// The renewals Apple has made so far (it makes them as time passes, 1.5 s apart).
            func renewals() async throws -> [[String: Any]] {
                try await stack.simulator.soldTransactions().compactMap { $0["transaction"] as? [String: Any] }.filter {
                    $0["original_transaction_id"] as? String == bought.originalTransactionId
                        && $0["transaction_id"] as? String != bought.transactionId
                }
            }
            // Two months pass and Apple renews twice; nobody tells the server (no notification
            // URL, no gap-fill).
            try await stack.simulator.advanceClock(seconds: 2 * 1.5 + 0.1)
            #expect(try await renewals().count >= 2)
            #expect(try await stack.store.transactions(appId: "demo", appUserId: "alice").count == 1)
            let renewedBefore = try await renewals()

            let refreshed = try await stack.api.adminPost("/v1/admin/apps/demo/users/alice/refresh?\(TestWait.query)")
            #expect(refreshed.status == 200 && refreshed.json["state"] as? String == "verified", "\(refreshed.text)")
            let granted = (refreshed.json["grant"] as? [String: Any])?["granted"] as? [String] ?? []
            #expect(granted.count >= 2 && !granted.contains(bought.transactionId))
            #expect(
                Set(granted).isSuperset(of: renewedBefore.compactMap { $0["transaction_id"] as? String }),
                "every renewal made before the refresh is granted: \(granted)")
            // The subscription runs to the end of the latest of those periods (or of a renewal made
            // since); its status is what that end means at the instant the server computed it.
            let latestEnd = renewedBefore.compactMap { ($0["expires_date_ms"] as? String).flatMap { Double($0) } }.max() ?? 0
            let view = try await stack.api.subscriber("alice")
            let current = try #require(view.subscriptions.first)
            let expires = try #require(current.expiresDate)
            // Whole milliseconds on both sides: a Date read back from JSON can be 0.0002 ms short.
            #expect((expires.timeIntervalSince1970 * 1000).rounded() >= latestEnd - 1, "\(current)")
            #expect(
                current.status == (expires > view.asOf ? SubscriptionStatus.active : .expired) || abs(expires.timeIntervalSince(view.asOf)) < 0.002,
                "\(current) as of \(view.asOf)")

            #expect(try await stack.api.adminPost("/v1/admin/apps/demo/users/nobody/refresh").status == 404)
        }
    }

    @Test("the Server API down: refreshes wait for one probe at a time without spending attempts, and all finish when it answers")
    func refreshWhileServerAPIDown() async throws {
        try await Self.withAPIStack(configure: {
            $0.notificationGapFill.enabled = false
            $0.workers = 4
            $0.appleHealth.degradedAfterFailures = 1
            $0.appleHealth.downAfterFailures = 2
            $0.appleHealth.probeBaseSeconds = 0.5
            // Longer than one failing call (the client tries 4 times over about 3.5 s), so
            // probes do not overlap.
            $0.appleHealth.probeCapSeconds = 5
            // A failed refresh's own retry is 10 minutes away: what finishes sooner was released.
            $0.retry = .init(base: 600, cap: 600, jitter: 0)
        }) { stack in
            let users = (0..<40).map { "refresh-\($0)" }
            for user in users {
                let device = try await stack.simulator.createDevice(bundleId: demoBundle, environment: "production")
                let bought = try await stack.simulator.purchase(device: device, productId: "com.example.removeads")
                #expect(
                    try await stack.api.postSignedTransaction(appUserId: user, signedTransaction: bought.signedTransaction, wait: TestWait.seconds)
                        .status == 200)
            }
            let failedCalls = {
                try await stack.simulator.stats().filter { $0.key.hasPrefix("serverapi.") && $0.key.hasSuffix(".503") }.values.reduce(0, +)
            }
            try await stack.simulator.setServerAPIFaults(down: true)
            // Time moves only when this test moves it: the bound below counts calls, not seconds.
            stack.clock.freeze()
            var ids: [String] = []
            for user in users {
                let reply = try await stack.api.adminPost("/v1/admin/apps/demo/users/\(user)/refresh?wait=0")
                #expect([200, 202].contains(reply.status), "\(reply.text)")
                ids.append(try #require(reply.json["id"] as? String))
            }
            #expect(try await stack.quiet(), "every refresh looked at")
            #expect(try await stack.store.verificationCounts()[.pending] == nil)
            let calls = try await failedCalls()
            // Per failing refresh up to 4 calls: the 2 that make the Server API down and the 4
            // workers' refreshes in flight then; no probe is due while the clock stands.
            let bound = 4 * (2 + 4)
            #expect(calls <= bound, "\(calls) calls; at most \(bound) expected")
            #expect(calls < 4 * users.count, "\(calls) calls for \(users.count) refreshes of up to 4 calls each: no storm")
            let waiting = try await stack.store.verifications(appId: "demo", states: [.retryScheduled], createdBefore: nil, limit: 100)
            #expect(waiting.contains { $0.reason == .appleDown }, "refreshes wait for the probe: \(waiting.map(\.reason))")

            try await stack.simulator.setServerAPIFaults(down: false)
            // Each step passes the next probe (at most the 5 s cap away). No failed refresh's own
            // retry comes before `ownRetries`: all final before it means the probe released them.
            let ownRetries = stack.clock.now().addingTimeInterval(600)
            func unsettled() async throws -> Bool { try await stack.store.verificationCounts().keys.contains { !$0.isFinal } }
            while try await unsettled(), stack.clock.now().addingTimeInterval(6) < ownRetries {
                #expect(try await stack.quiet())
                stack.clock.advance(by: 6)
            }
            #expect(try await !unsettled(), "all final before any failed refresh's own retry was due")
            for id in ids {
                let final = try await stack.api.waitForFinal(id)
                #expect(final["state"] as? String == "verified", "\(final)")
            }
            let health = try await stack.api.adminGet("/v1/admin/apple-health")
            #expect(health.text.contains("server_api_production"), "\(health.text)")
        }
    }
}

@Suite("Server API admin routes: bad input")
struct ServerAPIAdminInputTests {
    @Test("gap-fill and refresh answer 409 without a key, 400 for a bad window, 404 for a user with no purchase")
    func badInput() async throws {
        try await withStack { stack in
            let gapFill = try await stack.api.adminPost("/v1/admin/apps/demo/notifications/gap-fill")
            #expect(gapFill.status == 409 && gapFill.errorCode == "server_api_not_configured", "\(gapFill.text)")
            let refresh = try await stack.api.adminPost("/v1/admin/apps/demo/users/alice/refresh")
            #expect(refresh.status == 409 && refresh.errorCode == "server_api_not_configured", "\(refresh.text)")
        }
        try await withStack(configure: {
            $0.apps[0].serverAPI = .generated()
            $0.notificationGapFill.enabled = false
        }) { stack in
            for window in ["-5", "abc", "99999999999"] {
                let reply = try await stack.api.adminPost("/v1/admin/apps/demo/notifications/gap-fill?lookbackSeconds=\(window)")
                #expect(reply.status == 400 && reply.errorCode == "invalid_request", "\(window): \(reply.text)")
            }
            let empty = try await stack.api.adminPost("/v1/admin/apps/demo/notifications/gap-fill?lookbackSeconds=600")
            #expect(empty.status == 200 && empty.json["recovered"] as? Int == 0 && empty.json["pages"] as? Int == 2, "\(empty.text)")
            #expect(try await stack.api.adminPost("/v1/admin/apps/demo/users/nobody/refresh").errorCode == "not_found")
            let unauthorized = try await stack.api.http.send(.POST, "/v1/admin/apps/demo/notifications/gap-fill")
            #expect(unauthorized.status == 401)
        }
    }
}
