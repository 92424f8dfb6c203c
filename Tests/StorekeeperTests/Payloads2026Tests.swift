import AppStoreSimulator
import Foundation
import NIOHTTP1
import Persistence
import StorekeeperDomain
import StorekeeperServer
import StorekeeperTesting
import Testing

/// The 2025-2026 payload fields over real HTTP, simulator → server, on both backends: monthly
/// plans with a 12-month commitment, and prorated refunds.
@Suite("Apple's 2026 payloads: commitment plans and prorated refunds")
struct Payloads2026Tests {
    static let month: Double = 300

    @Test("a commitment plan is stored and shown per period; a prorated refund refunds its share in the ledger", arguments: WebhookTests.backends)
    func commitmentAndProratedRefund(backend: String) async throws {
        let database = backend == "postgresql" ? try PostgresTestDatabase.freshURL(prefix: "pay26") : nil
        try await withStack(
            secondsPerMonth: Self.month,
            configure: { configuration in
                if let database { configuration.databasePath = database }
            }, configureSimulator: { $0.commitmentProductIds = ["com.example.pro.monthly"] }
        ) { stack in
            try await stack.sendNotifications()
            let api = stack.api
            let device = try await stack.simulator.createDevice(bundleId: demoBundle, environment: "production")
            let sub = try await stack.simulator.purchase(device: device, productId: "com.example.pro.monthly")
            #expect(
                try await api.postSignedTransaction(appUserId: "erin", signedTransaction: sub.signedTransaction, wait: TestWait.seconds).status == 200
            )
            let first = try #require(try await api.subscriber("erin").subscriptions.first)
            #expect(first.billingPlanType == "MONTHLY", "\(first)")
            #expect(first.commitment?.billingPeriodNumber == 1 && first.commitment?.totalBillingPeriods == 12, "\(first)")
            let commitmentEnds = try #require(first.commitment?.expiresDate)
            let nextRenewal = try #require(first.expiresDate)
            // Monthly renewals, a year's commitment: the customer may leave only at its end, which
            // Apple's dates put eleven billing periods after the first renewal (the simulator's
            // clock scales a month to `Self.month` seconds; no wall time is involved).
            let periodsAfterRenewal = (commitmentEnds.timeIntervalSince(nextRenewal) / Self.month).rounded()
            #expect(periodsAfterRenewal == 11, "commitment ends \(commitmentEnds), first renewal \(nextRenewal)")

            // A month later Apple renews and tells the server: the second payment of twelve.
            try await stack.simulator.advanceClock(seconds: Self.month + 1)
            let renewed = try await stack.whenSettled {
                try await api.subscriber("erin").subscriptions.first?.commitment?.billingPeriodNumber == 2
            }
            let second = try await api.subscriber("erin").subscriptions.first
            #expect(renewed, "\(String(describing: second))")
            #expect(second?.commitment?.expiresDate == commitmentEnds && second?.isActive == true)

            // A quarter of 100 coins (0.99 USD) is refunded: the ledger refunds 0.2475 USD.
            let coins = try await stack.simulator.purchase(device: device, productId: "com.example.coins100")
            #expect(
                try await api.postSignedTransaction(appUserId: "erin", signedTransaction: coins.signedTransaction, wait: TestWait.seconds).status
                    == 200)
            try await stack.simulator.refund(transactionId: coins.transactionId, percentage: 25_000)
            let refunded = try await stack.whenSettled {
                try await api.subscriber("erin").history.first { $0.transactionId == coins.transactionId }?.cancellationDate != nil
            }
            #expect(refunded)
            let record = try #require(try await api.subscriber("erin").history.first { $0.transactionId == coins.transactionId })
            #expect(record.revocationType == "REFUND_PRORATED" && record.revocationPercentage == 25_000, "\(record)")
            let ledger = try await api.adminGet("/v1/admin/apps/demo/ledger?environment=production")
            let entries = try #require(ledger.json["entries"] as? [[String: Any]])
            let forCoins = entries.filter { $0["transactionId"] as? String == coins.transactionId }
            #expect(forCoins.map { $0["event"] as? String } == ["purchase", "refund"], "\(forCoins)")
            #expect(forCoins.map { $0["priceMicros"] as? Int } == [990_000, -247_500], "\(forCoins)")
            let refundEvents = try await api.events("?types=refund").filter { $0.event.transactionId == coins.transactionId }
            #expect(refundEvents.count == 1 && refundEvents.first?.event.details?.revocationPercentage == 25_000, "\(refundEvents)")

            // A full refund: Apple's REFUND_FULL, the whole price back.
            let more = try await stack.simulator.purchase(device: device, productId: "com.example.coins100")
            #expect(
                try await api.postSignedTransaction(appUserId: "erin", signedTransaction: more.signedTransaction, wait: TestWait.seconds).status
                    == 200)
            try await stack.simulator.refund(transactionId: more.transactionId)
            #expect(
                try await stack.whenSettled {
                    try await api.subscriber("erin").history.first { $0.transactionId == more.transactionId }?.revocationType == "REFUND_FULL"
                })
            let full = try await api.adminGet("/v1/admin/apps/demo/ledger?environment=production")
            let fullEntries = try #require(full.json["entries"] as? [[String: Any]]).filter { $0["transactionId"] as? String == more.transactionId }
            #expect(fullEntries.map { $0["priceMicros"] as? Int } == [990_000, -990_000], "\(fullEntries)")
        }
    }
}
