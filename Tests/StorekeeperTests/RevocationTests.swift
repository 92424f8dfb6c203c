import AppStoreSimulator
import Foundation
import NIOHTTP1
import StorekeeperServer
import StorekeeperTesting
import Testing

/// Online revocation checks (OCSP) of StoreKit 2 signed data, against the simulator's
/// responder over HTTP: answers cached per certificate, a revoked leaf refused once the cached
/// answer is due again, an unreachable responder refused only in hard-fail mode.
///
/// A signed transaction is checked when it is posted and again by the job that grants it. Both
/// checks share one chain cache and one answer cache, each entry kept `cacheSeconds`; nothing
/// rechecks in the background, so the responder is asked only when a check finds its entry due.
@Suite("revocation (OCSP) of signed data")
struct RevocationTests {
    func purchase(_ stack: LocalStack, device: UUID) async throws -> String {
        try await stack.simulator.purchase(device: device, productId: "com.example.coins100").signedTransaction
    }

    @Test("hard fail: good answers are cached, so a second purchase (post and grant) asks the responder nothing")
    func answersCached() async throws {
        try await withStack(configure: {
            $0.receiptTrust.revocation.mode = .hardFail
            // Far longer than the test: no cached answer falls due during it, however slow the machine.
            $0.receiptTrust.revocation.cacheSeconds = 3600
        }) { stack in
            let device = try await stack.simulator.createDevice(bundleId: demoBundle, environment: "production")
            let first = try await stack.api.postSignedTransaction(
                appUserId: "alice", signedTransaction: try await purchase(stack, device: device), wait: TestWait.seconds)
            #expect(first.status == 200 && first.json["state"] as? String == "verified", "\(first.text)")
            // The leaf (asked of the intermediate) and the intermediate (asked of the root), once
            // each: the grant job's own check of the chain was answered from the cache.
            let asked = try await stack.simulator.stats()["ocsp.requests"] ?? 0
            #expect(asked == 2)
            let second = try await stack.api.postSignedTransaction(
                appUserId: "alice", signedTransaction: try await purchase(stack, device: device), wait: TestWait.seconds)
            #expect(second.status == 200 && second.json["state"] as? String == "verified", "\(second.text)")
            #expect(
                try await stack.simulator.stats()["ocsp.requests"] == asked,
                "the second purchase's checks (the post's and the grant job's) were answered from the cache")

            // The health page counts the responder's answers as sent, none from the cache.
            let browser = ConsoleBrowser(baseURL: stack.api.http.baseURL)
            #expect(try await browser.signIn(account: "", password: stack.api.adminKey).status == 303)
            let health = try await browser.get("/console/health")
            let ocsp = health.text.components(separatedBy: "<tr data-endpoint=\"ocsp\">").dropFirst().first ?? ""
            #expect(ocsp.contains("<td class=\"count\">\(asked)</td><td class=\"outcomes\">http_200 × \(asked)</td>"), "\(health.text.prefix(3000))")
            try await browser.shutdown()
        }
    }

    @Test("hard fail: a revoked leaf is refused when its cached good answer is due again")
    func revokedLeaf() async throws {
        try await withStack(configure: {
            $0.receiptTrust.revocation.mode = .hardFail
            $0.receiptTrust.revocation.cacheSeconds = 1
        }) { stack in
            let device = try await stack.simulator.createDevice(bundleId: demoBundle, environment: "production")
            let first = try await stack.api.postSignedTransaction(
                appUserId: "alice", signedTransaction: try await purchase(stack, device: device), wait: TestWait.seconds)
            #expect(first.status == 200, "\(first.text)")
            let asked = try await stack.simulator.stats()["ocsp.requests"] ?? 0
            #expect(asked >= 2, "the leaf and the intermediate were asked about")

            _ = try await stack.simulator.http.send(.POST, "/sim/pki/revoke", json: ["certificate": "leaf"])
            // Everything cached so far was cached before the revocation (the post above answered
            // after its grant job's check), for 1 s of the server's clock, which the stack moves.
            stack.clock.advance(by: 1.2)
            let refused = try await stack.api.postSignedTransaction(appUserId: "alice", signedTransaction: try await purchase(stack, device: device))
            #expect(refused.status == 422 && refused.errorCode == "signed_transaction_rejected", "\(refused.text)")
            #expect(refused.text.contains("revoked"), "\(refused.text)")
            #expect(try await stack.simulator.stats()["ocsp.requests"] ?? 0 > asked, "the responder was asked again")
        }
    }

    @Test("an unreachable responder refuses in hard-fail mode and not in soft-fail mode")
    func unreachable() async throws {
        for (mode, expected) in [(RevocationPolicy.Mode.hardFail, 422), (.softFail, 200)] {
            try await withStack(configure: {
                $0.receiptTrust.revocation.mode = mode
                $0.receiptTrust.revocation.responderOverride = "http://127.0.0.1:9/ocsp"
                $0.receiptTrust.revocation.timeoutSeconds = 0.5
            }) { stack in
                let device = try await stack.simulator.createDevice(bundleId: demoBundle, environment: "production")
                let answer = try await stack.api.postSignedTransaction(
                    appUserId: "alice", signedTransaction: try await purchase(stack, device: device), wait: TestWait.seconds)
                #expect(answer.status == expected, "\(mode): \(answer.text)")
            }
        }
    }

    @Test("a responder that is down is not asked (one probe at a time): soft-fail purchases go on at once; once it answers, it is asked again")
    func responderDown() async throws {
        try await withStack(configure: {
            $0.receiptTrust.revocation.mode = .softFail
            // Nothing cached: without the health state, every check would ask.
            $0.receiptTrust.revocation.cacheSeconds = 0
            $0.appleHealth.degradedAfterFailures = 1
            $0.appleHealth.downAfterFailures = 2
            $0.appleHealth.probeBaseSeconds = 1
            $0.appleHealth.probeCapSeconds = 1
        }) { stack in
            let device = try await stack.simulator.createDevice(bundleId: demoBundle, environment: "production")
            try await stack.simulator.outage(seconds: 3_600)
            // Time moves only when this test moves it: no probe is due until it does.
            stack.clock.freeze()
            let purchases = 6
            for i in 0..<purchases {
                let answer = try await stack.api.postSignedTransaction(
                    appUserId: "u\(i)", signedTransaction: try await purchase(stack, device: device), wait: TestWait.seconds)
                #expect(answer.status == 200 && answer.json["state"] as? String == "verified", "\(answer.text)")
            }
            let health = try await stack.api.adminGet("/v1/admin/apple-health")
            let endpoints = try #require(health.json["endpoints"] as? [[String: Any]])
            #expect(endpoints.contains { $0["endpoint"] as? String == "ocsp" && $0["state"] as? String == "down" }, "\(health.text)")
            // Each purchase is checked twice (posted, granted), each check asks of two
            // certificates: 24 requests without the state. With it: the failures that made it
            // down and what was in flight then (the two certificates of one check); with the clock
            // standing, no probe is due.
            let failed = try await stack.simulator.stats()["ocsp.outage", default: 0]
            let bound = 2 + 2
            #expect(failed >= 2 && failed <= bound, "\(failed) requests to a responder that was down; at most \(bound)")

            // The responder answers again: a probe finds out, and checks ask it again.
            try await stack.simulator.setFaults(.none)
            let deadline = Date().addingTimeInterval(60)
            var answered = 0
            var i = purchases
            while Date() < deadline, answered == 0 {
                let answer = try await stack.api.postSignedTransaction(
                    appUserId: "u\(i)", signedTransaction: try await purchase(stack, device: device), wait: TestWait.seconds)
                #expect(answer.status == 200, "\(answer.text)")
                answered = try await stack.simulator.stats()["ocsp.requests", default: 0]
                i += 1
                // The next probe is due a probe interval later on the server's clock: move it there.
                if answered == 0 { stack.clock.advance(by: 1) }
            }
            #expect(answered > 0, "the responder was asked again once it answered")
            let after = try await stack.api.adminGet("/v1/admin/apple-health")
            let ocsp = try #require((after.json["endpoints"] as? [[String: Any]])?.first { $0["endpoint"] as? String == "ocsp" })
            #expect(ocsp["state"] as? String == "healthy", "\(after.text)")
        }
    }
}
