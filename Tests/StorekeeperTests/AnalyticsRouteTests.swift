import AppStoreSimulator
import Foundation
import NIOHTTP1
import Persistence
import SimulatorSetup
import StorekeeperDomain
import StorekeeperServer
import StorekeeperTesting
import Testing

/// `GET /v1/admin/apps/{app}/metrics/revenue` over real HTTP on both backends: the figures are
/// the ledger's, summed as docs/ANALYTICS.md defines them.
@Suite("analytics: revenue from the ledger")
struct AnalyticsRouteTests {
    @Test("revenue by day: the charged amounts, refunds and proceeds per currency, and in the reporting currency", arguments: WebhookTests.backends)
    func revenue(backend storage: String) async throws {
        let database = storage == "postgresql" ? try PostgresTestDatabase.freshURL(prefix: "revenue") : nil
        try await withStack(configure: {
            $0.notificationGapFill.enabled = false
            $0.apps[0].commission = .smallBusiness
            if let database { $0.databasePath = database }
        }) { stack in
            let month = RevenueReport.month(of: stack.clock.now())
            let device = try await stack.simulator.createDevice(bundleId: demoBundle, environment: "production")
            for product in ["com.example.removeads", "com.example.coins100"] {
                let bought = try await stack.simulator.purchase(device: device, productId: product)
                #expect(
                    try await stack.api.postSignedTransaction(appUserId: "payer", signedTransaction: bought.signedTransaction, wait: TestWait.seconds)
                        .status == 200
                )
            }
            let admin = ["Authorization": "Bearer \(stack.api.adminKey)"]
            let reply = try await stack.api.http.send(.GET, "/v1/admin/apps/demo/metrics/revenue?interval=day", headers: admin)
            #expect(reply.status == 200, "\(reply.text)")
            let totals = (reply.json["totals"] as? [[String: Any]]) ?? []
            #expect(totals.count == 1 && totals.first?["currency"] as? String == "USD", "\(reply.text)")
            // 2.99 + 0.99 charged, as the simulator signed them; 15% to Apple.
            #expect((totals.first?["grossMicros"] as? NSNumber)?.int64Value == 3_980_000)
            #expect((totals.first?["proceedsMicros"] as? NSNumber)?.int64Value == 3_383_000)
            #expect((totals.first?["sales"] as? NSNumber)?.intValue == 2 && (totals.first?["estimatedMicros"] as? NSNumber)?.int64Value == 0)
            #expect((reply.json["periods"] as? [Any])?.count == 1 && reply.json["reporting"] == nil)

            // Malformed input is named; an operator's route only.
            let bad = try await stack.api.http.send(.GET, "/v1/admin/apps/demo/metrics/revenue?interval=hour", headers: admin)
            #expect(bad.status == 400 && bad.text.contains("interval"))
            let backwards = try await stack.api.http.send(
                .GET, "/v1/admin/apps/demo/metrics/revenue?from=2026-02-01&to=2026-01-01", headers: admin)
            #expect(backwards.status == 400)
            let client = try await stack.api.http.send(
                .GET, "/v1/admin/apps/demo/metrics/revenue", headers: ["Authorization": "Bearer \(DemoConfiguration.clientKey)"])
            #expect(client.status == 401 || client.status == 403)

            // A reporting currency with this month's rate: the same sales in euros.
            var configuration = stack.configuration
            configuration.apps[0].reporting = ReportingCurrency(currency: "EUR", rates: [month: ["USD": "0.9"]])
            let other = try await stack.startAnotherServer(configuration: configuration)
            let inEuros = try await HTTPJSONClient(httpClient: stack.httpClient, baseURL: other.url).send(
                .GET, "/v1/admin/apps/demo/metrics/revenue", headers: admin)
            let reporting = inEuros.json["reporting"] as? [String: Any]
            #expect(
                reporting?["currency"] as? String == "EUR" && (reporting?["grossMicros"] as? NSNumber)?.int64Value == 3_582_000, "\(inEuros.text)")
            #expect(inEuros.json["missingRates"] == nil)
            try await other.stop()
        }
    }

    @Test(
        "subscriptions and cohorts: a trial, a paying subscriber with MRR, the month's cohort; malformed ranges refused",
        arguments: WebhookTests.backends)
    func subscriptions(backend storage: String) async throws {
        let database = storage == "postgresql" ? try PostgresTestDatabase.freshURL(prefix: "subscriptions") : nil
        try await withStack(configure: {
            $0.notificationGapFill.enabled = false
            if let database { $0.databasePath = database }
        }) { stack in
            let trial = SimulatorClient.Offer(type: 1, discountType: "FREE_TRIAL", period: "P1W")
            for (user, offer) in [("payer", nil), ("trier", trial)] as [(String, SimulatorClient.Offer?)] {
                let device = try await stack.simulator.createDevice(bundleId: demoBundle, environment: "production")
                let bought = try await stack.simulator.purchase(device: device, productId: "com.example.pro.monthly", offer: offer)
                #expect(
                    try await stack.api.postSignedTransaction(appUserId: user, signedTransaction: bought.signedTransaction, wait: TestWait.seconds)
                        .status == 200)
            }
            let admin = ["Authorization": "Bearer \(stack.api.adminKey)"]
            let reply = try await stack.api.http.send(.GET, "/v1/admin/apps/demo/metrics/subscriptions?interval=day", headers: admin)
            #expect(reply.status == 200, "\(reply.text)")
            let snapshot = (reply.json["current"] as? [String: Any])?["snapshot"] as? [String: Any]
            #expect((snapshot?["activeSubscriptions"] as? NSNumber)?.intValue == 1 && (snapshot?["activeTrials"] as? NSNumber)?.intValue == 1)
            // The catalog's P1M: the charged 4.99 is the month's revenue.
            let mrr = snapshot?["mrr"] as? [[String: Any]]
            #expect(mrr?.count == 1 && mrr?.first?["currency"] as? String == "USD", "\(reply.text)")
            #expect((mrr?.first?["micros"] as? NSNumber)?.int64Value == 4_990_000)
            // Twelve days by default, the last one today with one new subscription and one trial.
            let periods = reply.json["periods"] as? [[String: Any]] ?? []
            #expect(periods.count == 12)
            #expect((periods.last?["newSubscriptions"] as? NSNumber)?.intValue == 1 && (periods.last?["trialsStarted"] as? NSNumber)?.intValue == 1)

            let cohorts = try await stack.api.http.send(.GET, "/v1/admin/apps/demo/metrics/cohorts", headers: admin)
            let list = cohorts.json["cohorts"] as? [[String: Any]] ?? []
            #expect(list.count == 1 && (list.first?["customers"] as? NSNumber)?.intValue == 1, "\(cohorts.text)")
            #expect(list.first?["month"] as? String == RevenueReport.month(of: stack.clock.now()))

            // More than 1,000 periods: the latest 1,000, saying so. Malformed and backwards ranges are refused.
            let long = try await stack.api.http.send(.GET, "/v1/admin/apps/demo/metrics/subscriptions?interval=day&from=2000-01-01", headers: admin)
            #expect((long.json["periods"] as? [Any])?.count == 1_000 && long.json["earlierPeriodsOmitted"] as? Bool == true)
            let future = try await stack.api.http.send(.GET, "/v1/admin/apps/demo/metrics/subscriptions?from=2999-01-01", headers: admin)
            #expect(future.status == 200 && (future.json["periods"] as? [Any])?.isEmpty == true, "\(future.text)")
            for query in ["from=2026-02-01&to=2026-01-01", "interval=quarter", "environment=staging", "from=yesterday"] {
                let bad = try await stack.api.http.send(.GET, "/v1/admin/apps/demo/metrics/subscriptions?\(query)", headers: admin)
                #expect(bad.status == 400, "\(query): \(bad.text)")
            }
            let client = try await stack.api.http.send(
                .GET, "/v1/admin/apps/demo/metrics/cohorts", headers: ["Authorization": "Bearer \(DemoConfiguration.clientKey)"])
            #expect(client.status == 401 || client.status == 403)
            let unknownApp = try await stack.api.http.send(.GET, "/v1/admin/apps/nope/metrics/subscriptions", headers: admin)
            #expect(unknownApp.status == 404)
        }
    }

    @Test(
        "lifetime value by cohort: a paying customer's 30 days counted once reached; malformed ranges and other callers refused",
        arguments: WebhookTests.backends)
    func lifetimeValue(backend storage: String) async throws {
        let database = storage == "postgresql" ? try PostgresTestDatabase.freshURL(prefix: "ltv") : nil
        try await withStack(configure: {
            $0.notificationGapFill.enabled = false
            if let database { $0.databasePath = database }
        }) { stack in
            stack.clock.freeze()
            let device = try await stack.simulator.createDevice(bundleId: demoBundle, environment: "production")
            let bought = try await stack.simulator.purchase(device: device, productId: "com.example.removeads")
            #expect(
                try await stack.api.postSignedTransaction(appUserId: "payer", signedTransaction: bought.signedTransaction, wait: TestWait.seconds)
                    .status == 200)
            let admin = ["Authorization": "Bearer \(stack.api.adminKey)"]
            let young = try await stack.api.http.send(.GET, "/v1/admin/apps/demo/metrics/ltv", headers: admin)
            let cohorts = young.json["cohorts"] as? [[String: Any]] ?? []
            #expect(young.status == 200 && cohorts.count == 1 && (cohorts.first?["customers"] as? NSNumber)?.intValue == 1, "\(young.text)")
            #expect((cohorts.first?["values"] as? [Any])?.isEmpty == true, "no horizon reached yet: \(young.text)")
            #expect(cohorts.first?["month"] as? String == RevenueReport.month(of: stack.clock.now()))

            stack.clock.advance(by: 31 * 86_400)
            let month = try await stack.api.http.send(.GET, "/v1/admin/apps/demo/metrics/ltv?from=2000-01-01", headers: admin)
            let values = ((month.json["cohorts"] as? [[String: Any]])?.first?["values"] as? [[String: Any]]) ?? []
            #expect(values.count == 1 && values.first?["days"] as? Int == 30 && values.first?["currency"] as? String == "USD", "\(month.text)")
            #expect((values.first?["grossPerCustomerMicros"] as? NSNumber)?.int64Value == 2_990_000, "\(month.text)")

            for query in ["from=2026-02-01&to=2026-01-01", "environment=staging", "from=yesterday"] {
                let bad = try await stack.api.http.send(.GET, "/v1/admin/apps/demo/metrics/ltv?\(query)", headers: admin)
                #expect(bad.status == 400, "\(query): \(bad.text)")
            }
            let client = try await stack.api.http.send(
                .GET, "/v1/admin/apps/demo/metrics/ltv", headers: ["Authorization": "Bearer \(DemoConfiguration.clientKey)"])
            #expect(client.status == 401 || client.status == 403)
            #expect(try await stack.api.http.send(.GET, "/v1/admin/apps/nope/metrics/ltv", headers: admin).status == 404)
        }
    }
}
