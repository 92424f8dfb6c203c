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
                    try await stack.api.postSignedTransaction(appUserId: "payer", signedTransaction: bought.signedTransaction, wait: 30).status == 200
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
}
