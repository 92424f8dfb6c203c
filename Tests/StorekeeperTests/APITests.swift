import AppStoreClient
import AppStoreSimulator
import Foundation
import JobQueue
import NIOHTTP1
import Persistence
import StorageSQLite
import StorekeeperDomain
import StorekeeperServer
import StorekeeperTesting
import TestFixtures
import Testing

@Suite("HTTP API: bad input, admin, operations")
struct APITests {
    /// Whether an answer speaks of this program's Swift types (`Dictionary<String, Any>`, `Int64`,
    /// "Cannot initialize …", a library's error struct) instead of the JSON the caller sent.
    static func namesASwiftType(_ text: String) -> Bool {
        ["Dictionary<", "Array<", "Optional<", "Swift.", "Int64", "Int32", "UInt", "Double", "Cannot initialize", "Error(", "errorType:"]
            .contains { text.contains($0) }
    }

    @Test("bad input gets a 4xx with a stable code, and the server stays healthy")
    func badInput() async throws {
        try await withStack { stack in
            let http = stack.api.http
            let auth = ["Authorization": "Bearer \(stack.api.apiKey)"]
            func post(_ body: String, headers: [String: String]? = nil) async throws -> HTTPJSONClient.Reply {
                try await http.send(.POST, "/v1/receipts", headers: headers ?? auth, body: Data(body.utf8))
            }
            let cases: [(String, Int, String)] = [
                (#"{"appUserId":"a","receipt":"%%% not base64 %%%"}"#, 400, "invalid_receipt"),
                (#"{"appUserId":"a","receipt":""}"#, 400, "invalid_receipt"),
                (#"{"appUserId":"","receipt":"aGVsbG8="}"#, 400, "invalid_app_user_id"),
                (#"{"appUserId":42,"receipt":"aGVsbG8="}"#, 400, "invalid_request"),
                (#"{"appUserId":"a","receipt":["x"]}"#, 400, "invalid_request"),
                (#"{"receipt":"aGVsbG8="}"#, 400, "invalid_request"),
                (#"{"appUserId":null,"receipt":"aGVsbG8="}"#, 400, "invalid_request"),
                ("[1, 2]", 400, "invalid_request"),
                ("not json at all", 400, "invalid_json"),
                ("", 400, "invalid_json"),
            ]
            for (body, status, code) in cases {
                let reply = try await post(body)
                #expect(reply.status == status && reply.errorCode == code, "\(body) → \(reply.status) \(reply.text)")
                #expect((reply.json["error"] as? [String: Any])?["message"] is String)
                #expect(!Self.namesASwiftType(reply.text), "\(body) → \(reply.text)")
            }
            let huge = String(repeating: "A", count: 10 * 1024 * 1024)
            let tooLarge = try await post(#"{"appUserId":"a","receipt":"\#(huge)"}"#)
            #expect(tooLarge.status == 413 && tooLarge.errorCode == "payload_too_large")
            let noKey = try await post(#"{"appUserId":"a","receipt":"aGVsbG8="}"#, headers: [:])
            #expect(noKey.status == 401 && noKey.errorCode == "unauthorized")
            let wrongKey = try await post(#"{"appUserId":"a","receipt":"aGVsbG8="}"#, headers: ["Authorization": "Bearer nope"])
            #expect(wrongKey.status == 401 && wrongKey.errorCode == "unauthorized")
            let wrongAdmin = try await http.send(.GET, "/v1/admin/verifications", headers: ["Authorization": "Bearer \(stack.api.apiKey)"])
            #expect(wrongAdmin.status == 401 && wrongAdmin.errorCode == "unauthorized")
            let unknownRoute = try await http.send(.GET, "/v1/nothing-here", headers: auth)
            #expect(unknownRoute.status == 404 && unknownRoute.errorCode == "not_found")
            let badWait = try await http.send(
                .POST, "/v1/receipts?wait=soon", headers: auth, body: Data(#"{"appUserId":"a","receipt":"aGVsbG8="}"#.utf8))
            #expect(badWait.status == 400 && badWait.errorCode == "invalid_request")
            let unknownVerification = try await http.send(.GET, "/v1/verifications/does-not-exist", headers: auth)
            #expect(unknownVerification.status == 404 && unknownVerification.errorCode == "not_found")

            // Still healthy, and a real receipt still goes through.
            let health = try await http.send(.GET, "/healthz")
            #expect(health.status == 200 && health.json["status"] as? String == "ok")
            let device = try await stack.simulator.createDevice(bundleId: demoBundle)
            let purchase = try await stack.simulator.purchase(device: device, productId: "com.example.removeads")
            let ok = try await stack.api.postReceipt(appUserId: "after-abuse", receipt: purchase.receipt, wait: TestWait.seconds)
            #expect(ok.json["state"] as? String == "verified")
        }
    }

    @Test("receipts are checked locally when posted: garbage → 400, another app's receipt → 422, nothing stored")
    func localChecksAtPost() async throws {
        try await withStack(configure: { c in
            c.apps.append(
                AppConfiguration(
                    id: "other", bundleId: "com.example.other", sharedSecret: "s", apiKey: "other-app-key-0123456789",
                    products: [Product(productId: "gold", type: .nonConsumable)]))
        }) { stack in
            let garbage = try await stack.api.postReceipt(appUserId: "g", receipt: Data("definitely not a receipt".utf8).base64EncodedString())
            #expect(garbage.status == 400 && garbage.errorCode == "invalid_receipt", "\(garbage.text)")
            let device = try await stack.simulator.createDevice(bundleId: "com.example.other")
            let foreign = try await stack.simulator.purchase(device: device, productId: "gold")
            let mismatch = try await stack.api.postReceipt(appUserId: "g", receipt: foreign.receipt)
            #expect(mismatch.status == 422 && mismatch.errorCode == "receipt_bundle_mismatch", "\(mismatch.text)")
            #expect(try await stack.store.jobCounts().isEmpty)
            #expect(try await stack.simulator.stats().isEmpty, "Apple was never called")
        }
    }

    @Test("with local checks off, garbage goes to Apple and comes back invalid (21002), never granted")
    func garbageToApple() async throws {
        try await withStack(configure: { $0.receiptTrust.enabled = false }) { stack in
            let reply = try await stack.api.postReceipt(
                appUserId: "g", receipt: Data("definitely not a receipt".utf8).base64EncodedString(), wait: TestWait.seconds)
            #expect(reply.json["state"] as? String == "invalid")
            #expect(reply.json["reason"] as? String == "receipt_malformed")
            #expect(reply.json["appleStatuses"] as? [Int] == [21002])
        }
    }

    @Test("a receipt altered after signing is refused locally and never reaches Apple")
    func forgedReceipt() async throws {
        try await withStack { stack in
            let device = try await stack.simulator.createDevice(bundleId: demoBundle)
            let purchase = try await stack.simulator.purchase(device: device, productId: "com.example.removeads")
            var bytes = Array(Data(base64Encoded: purchase.receipt)!)
            // Flip one byte near the end: inside the ECDSA signature.
            bytes[bytes.count - 3] ^= 0x01
            let before = try await stack.simulator.stats()
            let reply = try await stack.api.postReceipt(appUserId: "forger", receipt: Data(bytes).base64EncodedString(), wait: TestWait.seconds)
            #expect(reply.json["state"] as? String == "invalid")
            #expect(reply.json["reason"] as? String == "receipt_signature_invalid")
            #expect(reply.json["appleStatuses"] as? [Int] == [])
            #expect(try await stack.simulator.stats() == before, "Apple was not called for a forged receipt")
            #expect(try await stack.api.subscriber("forger").activeEntitlements.isEmpty)
        }
    }

    @Test("admin: products CRUD, verifications by state, manual retry, metrics")
    func admin() async throws {
        try await withStack { stack in
            let http = stack.api.http
            let admin = ["Authorization": "Bearer \(stack.api.adminKey)"]
            let created = try await http.send(
                .POST, "/v1/admin/apps/demo/products", headers: admin,
                body: Data(#"{"productId":"com.example.gems","type":"consumable","status":"ready_for_sale","creditAmount":5}"#.utf8))
            #expect(created.status == 201)
            let duplicate = try await http.send(
                .POST, "/v1/admin/apps/demo/products", headers: admin,
                body: Data(#"{"productId":"com.example.gems","type":"consumable","status":"ready_for_sale"}"#.utf8))
            #expect(duplicate.status == 409 && duplicate.errorCode == "conflict")
            let invalid = try await http.send(
                .PUT, "/v1/admin/apps/demo/products/com.example.pass", headers: admin,
                body: Data(#"{"productId":"x","type":"non_renewing","status":"ready_for_sale"}"#.utf8))
            #expect(invalid.status == 400 && invalid.errorCode == "invalid_product")
            let hidden = try await http.send(
                .PUT, "/v1/admin/apps/demo/products/com.example.gems", headers: admin,
                body: Data(#"{"productId":"com.example.gems","type":"consumable","status":"developer_removed_from_sale","creditAmount":5}"#.utf8))
            #expect(hidden.status == 200)
            let offered = try await http.send(.GET, "/v1/products", headers: ["Authorization": "Bearer \(stack.api.apiKey)"])
            #expect(!offered.text.contains("com.example.gems"))
            #expect(try await http.send(.DELETE, "/v1/admin/apps/demo/products/com.example.gems", headers: admin).status == 204)
            #expect(try await http.send(.DELETE, "/v1/admin/apps/demo/products/com.example.gems", headers: admin).status == 404)
            #expect(try await http.send(.GET, "/v1/admin/apps/nope/products", headers: admin).status == 404)

            let device = try await stack.simulator.createDevice(bundleId: demoBundle)
            let purchase = try await stack.simulator.purchase(device: device, productId: "com.example.coins100")
            let verified = try await stack.api.postReceipt(appUserId: "dora", receipt: purchase.receipt, wait: TestWait.seconds)
            let id = verified.json["id"] as! String
            let list = try await stack.api.adminGet("/v1/admin/verifications?state=verified")
            #expect(((list.json["verifications"] as? [[String: Any]]) ?? []).compactMap { $0["id"] as? String } == [id])
            #expect(try await stack.api.adminGet("/v1/admin/verifications?state=bogus").status == 400)
            let retried = try await stack.api.adminPost("/v1/admin/verifications/\(id)/retry")
            #expect(retried.status == 202)
            let again = try await stack.api.waitForFinal(id)
            #expect(again["state"] as? String == "verified")
            #expect(((again["grant"] as? [String: Any])?["alreadyGranted"] as? [String]) == [purchase.transactionId])
            #expect(try await stack.api.subscriber("dora").creditBalance == 100)

            let expected = [
                "storekeeper_jobs{state=\"completed\"} 1", "storekeeper_verifications{state=\"verified\"} 1",
                "storekeeper_verifications_flagged 0", "storekeeper_apple_request_duration_seconds_bucket",
                "storekeeper_apple_responses_total{environment=\"production\",status=\"21007\"}",
                "storekeeper_apple_responses_total{environment=\"sandbox\",status=\"0\"} 2", "storekeeper_grants_total 1",
            ]
            // Counters are bumped just after the outcome they count is stored: polled, not read once.
            var metrics = ""
            _ = try await stack.whenSettled {
                metrics = try await http.send(.GET, "/metrics").text
                return expected.allSatisfy { metrics.contains($0) }
            }
            for series in expected {
                #expect(metrics.contains(series), "metrics lack \(series)")
            }
        }
    }

    @Test("verifications older than flagAfterSeconds are flagged for an operator, never dropped")
    func flagged() async throws {
        try await withStack(configure: { $0.flagAfterSeconds = 0.5 }) { stack in
            // Apple stays down for longer than the test can last: the verification cannot end.
            try await stack.simulator.outage(seconds: 3600)
            let device = try await stack.simulator.createDevice(bundleId: demoBundle)
            let purchase = try await stack.simulator.purchase(device: device, productId: "com.example.coins100")
            let id = try await stack.api.postReceipt(appUserId: "eve", receipt: purchase.receipt).json["id"] as! String
            // Older than flagAfterSeconds: the server reads the stack's clock.
            stack.clock.advance(by: 1)
            let v = try await stack.api.verification(id).json
            #expect(v["flagged"] as? Bool == true)
            let flagged = try await stack.api.adminGet("/v1/admin/verifications?flagged=true")
            #expect(((flagged.json["verifications"] as? [[String: Any]]) ?? []).compactMap { $0["id"] as? String } == [id])
            let metrics = try await stack.api.http.send(.GET, "/metrics")
            #expect(metrics.text.contains("storekeeper_verifications_flagged 1"))
        }
    }
}
