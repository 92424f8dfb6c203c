import AppStoreSimulator
import Foundation
import NIOHTTP1
import Persistence
import SimulatorSetup
import StorekeeperDomain
import StorekeeperServer
import StorekeeperTesting
import Testing

/// Existing customers imported through the App Store Server API, over real HTTP against the
/// simulator: the route, and `storekeeper import` as an operator runs it.
@Suite("import: existing customers read through Apple and granted once")
struct ImportTests {
    @Test(
        "rows by original transaction id, transaction id, receipt and signed transaction are granted; a second run changes nothing; bad rows are refused alone",
        arguments: WebhookTests.backends)
    func route(backend storage: String) async throws {
        let database = storage == "postgresql" ? try PostgresTestDatabase.freshURL(prefix: "import") : nil
        try await withStack(configure: {
            $0.apps[0].serverAPI = .generated()
            $0.notificationGapFill.enabled = false
            if let database { $0.databasePath = database }
        }) { stack in
            let http = stack.api.http
            let admin = ["Authorization": "Bearer \(stack.api.adminKey)"]
            func device() async throws -> UUID { try await stack.simulator.createDevice(bundleId: demoBundle, environment: "production") }
            let plan = try await stack.simulator.purchase(device: try await device(), productId: "com.example.pro.monthly")
            let ads = try await stack.simulator.purchase(device: try await device(), productId: "com.example.removeads")
            let refunded = try await stack.simulator.purchase(device: try await device(), productId: "com.example.season.pass")
            try await stack.simulator.refund(transactionId: refunded.transactionId)
            let viaReceipt = try await stack.simulator.purchase(device: try await device(), productId: "com.example.removeads")
            let viaJWS = try await stack.simulator.purchase(device: try await device(), productId: "com.example.coins100")
            let rows: [[String: String]] = [
                ["appUserId": "imp-1", "originalTransactionId": plan.originalTransactionId],
                ["appUserId": "imp-2", "transactionId": ads.transactionId],
                ["appUserId": "imp-3", "originalTransactionId": refunded.originalTransactionId],
                ["appUserId": "imp-4", "receipt": viaReceipt.receipt],
                ["appUserId": "imp-5", "signedTransaction": viaJWS.signedTransaction],
                ["appUserId": "imp-7", "signedTransaction": "a.b.c"],
            ]
            func post() async throws -> [[String: Any]] {
                let reply = try await http.send(
                    .POST, "/v1/admin/apps/demo/imports", headers: admin, body: try JSONSerialization.data(withJSONObject: ["rows": rows]))
                #expect(reply.status == 200, "\(reply.text)")
                return (reply.json["results"] as? [[String: Any]]) ?? []
            }
            let first = try await post()
            #expect(first.count == 6)
            #expect(first.prefix(5).allSatisfy { $0["created"] as? Bool == true }, "\(first)")
            #expect(["invalid_signed_transaction", "signed_transaction_rejected"].contains(first[5]["error"] as? String ?? ""), "\(first[5])")
            // A malformed row refuses its batch, naming it; nothing of the batch is stored.
            let malformed = try await http.send(
                .POST, "/v1/admin/apps/demo/imports", headers: admin,
                body: Data(
                    #"{"rows":[{"appUserId":"imp-8","transactionId":"2000000001"},{"appUserId":"imp-6","originalTransactionId":"12ab"}]}"#.utf8))
            #expect(malformed.status == 400 && malformed.text.contains("rows[1]: transaction id"), "\(malformed.text)")
            #expect(try await stack.api.subscriber("imp-8").history.isEmpty)
            #expect(
                try await stack.whenSettled {
                    try await post().prefix(5).allSatisfy { (($0["verification"] as? [String: Any])?["state"] as? String) == "verified" }
                })
            #expect(try await stack.api.subscriber("imp-1").entitlements["pro"]?.isActive == true)
            // Marked as brought in by the import: the entitlement's source (a renewal bought later
            // would be a purchase again, so a lifetime product's), the ledger rows.
            let lifetime = try await stack.api.subscriber("imp-2")
            #expect(lifetime.entitlements["no_ads"]?.source == .imported, "\(lifetime)")
            let booked = try await stack.store.ledger(LedgerQuery(appId: "demo", environment: "production", from: .distantPast, to: .distantFuture))
            let sold = [plan, ads, refunded, viaReceipt, viaJWS].map(\.transactionId)
            let imported = booked.filter { sold.contains($0.transactionId) }
            #expect(imported.count == 6 && imported.allSatisfy(\.imported), "\(imported)")
            #expect(try await stack.api.subscriber("imp-2").entitlements["no_ads"]?.isActive == true)
            #expect(try await stack.api.subscriber("imp-3").activeEntitlements.isEmpty, "refunded before the import")
            #expect(try await stack.api.subscriber("imp-4").activeEntitlements == ["com.example.removeads"])
            #expect(try await stack.api.subscriber("imp-5").creditBalance == 100)

            // Again: the same verifications, nothing new granted, no new events.
            let events = try await stack.api.events("?limit=500").count
            let ledger = try await stack.store.countTransactions(appId: "demo")
            let second = try await post()
            #expect(second.prefix(5).allSatisfy { $0["created"] as? Bool == false })
            #expect(try await stack.api.events("?limit=500").count == events)
            #expect(try await stack.store.countTransactions(appId: "demo") == ledger)

            // An operator's route only.
            let client = try await http.send(
                .POST, "/v1/admin/apps/demo/imports", headers: ["Authorization": "Bearer \(DemoConfiguration.clientKey)"],
                body: Data(#"{"rows":[{"appUserId":"x","transactionId":"1"}]}"#.utf8))
            #expect(client.status == 401 || client.status == 403)
            let empty = try await http.send(.POST, "/v1/admin/apps/demo/imports", headers: admin, body: Data(#"{"rows":[]}"#.utf8))
            #expect(empty.status == 400)
        }
    }

    @Test("storekeeper import FILE: posts, follows to the end with its progress, reports the rows that failed; run again, it changes nothing")
    func command() async throws {
        try await ServerAPIClientTests.withAPIStack { stack in
            let device = try await stack.simulator.createDevice(bundleId: demoBundle, environment: "production")
            let bought = try await stack.simulator.purchase(device: device, productId: "com.example.pro.monthly")
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("storekeeper-import-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: directory) }
            let file = directory.appendingPathComponent("customers.csv")
            try Data("app_user_id,original_transaction_id\ncli-1,\(bought.originalTransactionId)\ncli-2,not-a-number\n".utf8).write(to: file)
            let report = directory.appendingPathComponent("failed.csv")
            let arguments = [file.path, "--app", "demo", "--url", try #require(stack.serverURL), "--report", report.path]
            let key = ["STOREKEEPER_ADMIN_KEY": stack.api.adminKey]
            let run = try await AppleCommandTests.run(arguments, command: "import", environment: key)
            #expect(run.status == 1, "one row failed: \(run.errors)")
            #expect(run.errors.contains("1 rows read (csv), 1 unreadable") && run.errors.contains("rows/s, ETA"), "\(run.errors)")
            let failed = try String(contentsOf: report, encoding: .utf8)
            #expect(failed.hasPrefix("line,app_user_id,problem\n3,") && failed.contains("1-64 digits"), "\(failed)")
            #expect(try await stack.api.subscriber("cli-1").entitlements["pro"]?.isActive == true)
            let again = try await AppleCommandTests.run(arguments, command: "import", environment: key)
            #expect(again.status == 1 && again.errors.contains("1 rows imported, 1 failed"), "\(again.errors)")
        }
    }
}
