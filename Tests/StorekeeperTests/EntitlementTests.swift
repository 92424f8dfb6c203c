import AppStoreSimulator
import Foundation
import Logging
import NIOHTTP1
import Persistence
import StorekeeperCore
import StorekeeperDomain
import StorekeeperTesting
import TestFixtures
import Testing

@testable import StorekeeperServer

/// Named entitlements over real HTTP with the simulator: what a purchase unlocks, as the
/// subscriber answer, the event feed and a webhook say it, and the admin routes that define them.
@Suite("entitlements: the subscriber answer, the feed and webhooks agree; definitions edited by an operator")
struct EntitlementTests {
    func admin(_ stack: LocalStack) -> [String: String] { ["Authorization": "Bearer \(stack.api.adminKey)"] }

    @Test(
        "a free trial unlocks pro (trial) and no_ads; the subscriber answer, the feed and the webhook carry the same entitlements",
        arguments: WebhookTests.backends)
    func purchaseUnlocks(backend: String) async throws {
        let receiver = try await WebhookReceiver.start()
        let database = backend == "postgresql" ? try PostgresTestDatabase.freshURL(prefix: "entitlements") : nil
        do {
            try await withStack(configure: { configuration in
                WebhookTests.configure(&configuration)
                if let database { configuration.databasePath = database }
            }) { stack in
                let api = stack.api
                _ = try await WebhookTests().createEndpoint(api, url: receiver.url)
                let device = try await stack.simulator.createDevice(bundleId: demoBundle)
                let trial = try await stack.simulator.purchase(
                    device: device, productId: "com.example.pro.monthly",
                    offer: SimulatorClient.Offer(type: 1, discountType: "FREE_TRIAL", period: "P1W"))
                let posted = try await api.postSignedTransaction(
                    appUserId: "tess", signedTransaction: trial.signedTransaction, wait: TestWait.seconds)
                #expect(posted.status == 200, "\(posted.text)")

                let view = try await api.subscriber("tess")
                let pro = try #require(view.entitlements["pro"], "\(view.entitlements)")
                #expect(pro.isActive && pro.periodType == .trial && pro.productId == "com.example.pro.monthly")
                // A signed transaction comes without renewal info: whether it renews is not known yet.
                #expect(pro.willRenew == nil)
                #expect(pro.transactionId == trial.transactionId && pro.ownership == .purchased && pro.source == .purchase)
                #expect(view.entitlements["no_ads"]?.isActive == true && Set(view.entitlements.keys) == ["pro", "no_ads"])
                let stored = try #require(view.history.first)
                #expect(stored.offer?.type == 1 && stored.offer?.discountType == "FREE_TRIAL" && stored.offer?.period == "P1W")

                // The feed's event was recorded with the same entitlements.
                let events = try await api.events("?limit=10")
                let recorded = try #require(events.last { $0.event.appUserId == "tess" })
                #expect(recorded.event.entitlements?.entitlements == view.entitlements)

                // And the webhook carries them as sent.
                #expect(try await stack.whenSettled { receiver.received.contains { $0.json["appUserId"] as? String == "tess" } })
                let hook = try #require(receiver.received.last { $0.json["appUserId"] as? String == "tess" })
                let sent = (hook.json["entitlements"] as? [String: Any])?["entitlements"] as? [String: Any]
                let sentPro = try #require(sent?["pro"] as? [String: Any], "\(hook.json)")
                #expect(sentPro["periodType"] as? String == "trial" && sentPro["isActive"] as? Bool == true)
                #expect(Set(sent?.keys.map { $0 } ?? []) == ["pro", "no_ads"])
            }
        } catch {
            await receiver.stop()
            throw error
        }
        await receiver.stop()
    }

    @Test("an operator lists, adds, replaces and deletes definitions; the next answer follows; bad bodies and other keys are refused")
    func adminDefinitions() async throws {
        try await withStack { stack in
            let http = stack.api.http
            let base = "/v1/admin/apps/demo/entitlements"
            let listed = try await http.send(.GET, base, headers: admin(stack))
            let ids = (listed.json["entitlements"] as? [[String: Any]])?.compactMap { $0["id"] as? String }
            #expect(listed.status == 200 && ids == ["no_ads", "pro"], "\(listed.text)")

            let device = try await stack.simulator.createDevice(bundleId: demoBundle)
            let ads = try await stack.simulator.purchase(device: device, productId: "com.example.removeads")
            #expect(try await stack.api.postReceipt(appUserId: "olga", receipt: ads.receipt, wait: TestWait.seconds).status == 200)
            #expect(Set(try await stack.api.subscriber("olga").entitlements.keys) == ["no_ads"])

            let vip = try await http.send(.PUT, "\(base)/vip", headers: admin(stack), body: Data(#"{"products":["com.example.removeads"]}"#.utf8))
            #expect(vip.status == 200 && vip.json["id"] as? String == "vip", "\(vip.text)")
            let withVip = try await stack.api.subscriber("olga").entitlements
            #expect(withVip["vip"]?.isActive == true && withVip["vip"]?.expiresAt == nil && withVip["vip"]?.transactionId == ads.transactionId)

            // Replaced whole: vip no longer unlocked by what olga bought.
            let replaced = try await http.send(
                .PUT, "\(base)/vip", headers: admin(stack), body: Data(#"{"products":["com.example.season.pass"]}"#.utf8))
            #expect(replaced.status == 200)
            #expect(try await stack.api.subscriber("olga").entitlements["vip"] == nil)

            for (body, field) in [
                (#"{"products":[]}"#, "products"), (#"{"products":["a","a"]}"#, "twice"), (#"{"id":"other","products":["a"]}"#, "path"),
                (#"{"products":"a"}"#, "products"),
            ] {
                let bad = try await http.send(.PUT, "\(base)/vip", headers: admin(stack), body: Data(body.utf8))
                #expect(bad.status == 400 && bad.text.contains(field), "\(body): \(bad.text)")
            }
            let badId = try await http.send(.PUT, "\(base)/Not%20An%20Id", headers: admin(stack), body: Data(#"{"products":["a"]}"#.utf8))
            #expect(badId.status == 400 && badId.errorCode == "invalid_request", "\(badId.text)")
            // The app's own keys cannot define what unlocks what.
            for key in [DemoConfiguration.appApiKey, DemoConfiguration.clientKey] {
                let refused = try await http.send(
                    .PUT, "\(base)/free", headers: ["Authorization": "Bearer \(key)"], body: Data(#"{"products":["com.example.removeads"]}"#.utf8))
                #expect(refused.status == 401 || refused.status == 403, "\(refused.status)")
            }
            #expect(try await stack.api.subscriber("olga").entitlements["free"] == nil)

            #expect(try await http.send(.DELETE, "\(base)/vip", headers: admin(stack)).status == 204)
            #expect(try await http.send(.DELETE, "\(base)/vip", headers: admin(stack)).status == 404)
            #expect(try await http.send(.GET, "/v1/admin/apps/nope/entitlements", headers: admin(stack)).status == 404)
        }
    }

    @Test("a grant's end passes in silence: the lapse sweep tells entitlement_expired at once, in the feed and the answer")
    func lapseSweep() async throws {
        try await withStack { stack in
            stack.clock.freeze()
            defer { stack.clock.thaw() }
            let body = #"{"entitlementId":"pro","duration":"P1D","actor":"support@example.com","reason":"a day on us"}"#
            let created = try await stack.api.http.send(
                .POST, "/v1/admin/apps/demo/subscribers/lena/promotional-grants", headers: admin(stack), body: Data(body.utf8))
            #expect(created.status == 201, "\(created.text)")
            let sweep = EntitlementLapses(
                record: RecordLapses(store: stack.store), intervalSeconds: 30, logger: Logger(label: "test"), now: stack.clock.now)
            #expect(try await sweep.sweep(at: stack.clock.now()) == 0, "a day to go")

            stack.clock.advance(by: 86_400 + 30)
            #expect(try await sweep.sweep(at: stack.clock.now()) == 1)
            let expired = try await stack.api.events("?types=entitlement_expired").map(\.event).filter { $0.appUserId == "lena" }
            #expect(expired.count == 1 && expired.first?.details?.entitlementId == "pro")
            #expect(try await stack.api.subscriber("lena").entitlements["pro"]?.isActive == false)
            #expect(try await sweep.sweep(at: stack.clock.now()) == 0, "told once")
        }
    }

    @Test("an operator grants pro for a week and revokes it: the answer, the feed and the audit log say so; the ledger does not")
    func promotionalGrants() async throws {
        try await withStack { stack in
            let http = stack.api.http
            let grants = "/v1/admin/apps/demo/subscribers/rosa/promotional-grants"
            let body = #"{"entitlementId":"pro","duration":"P7D","actor":"support@example.com","reason":"outage compensation"}"#
            // The app's own keys cannot give access.
            for key in [DemoConfiguration.appApiKey, DemoConfiguration.clientKey] {
                let refused = try await http.send(.POST, grants, headers: ["Authorization": "Bearer \(key)"], body: Data(body.utf8))
                #expect(refused.status == 401 || refused.status == 403, "\(refused.status)")
            }
            #expect(try await stack.api.subscriber("rosa").entitlements.isEmpty)

            let created = try await http.send(.POST, grants, headers: admin(stack), body: Data(body.utf8))
            #expect(created.status == 201, "\(created.text)")
            let grantId = try #require(created.json["id"] as? String)
            let pro = try #require(try await stack.api.subscriber("rosa").entitlements["pro"])
            #expect(pro.isActive && pro.source == .promotional && pro.grantId == grantId && pro.productId == nil && pro.expiresAt != nil)

            // Retried with the same grant id: one grant.
            let retryBody =
                #"{"entitlementId":"pro","actor":"support@example.com","reason":"for life","grantId":"0A1B2C3D-1111-4222-8333-444455556666"}"#
            #expect(try await http.send(.POST, grants, headers: admin(stack), body: Data(retryBody.utf8)).status == 201)
            #expect(try await http.send(.POST, grants, headers: admin(stack), body: Data(retryBody.utf8)).status == 200)
            let listed = try await http.send(.GET, grants, headers: admin(stack))
            #expect((listed.json["grants"] as? [Any])?.count == 2, "\(listed.text)")

            for (bad, status) in [
                (#"{"entitlementId":"vip","actor":"a","reason":"b"}"#, 404), (#"{"entitlementId":"pro","actor":"","reason":"b"}"#, 400),
                (#"{"entitlementId":"pro","actor":"a","reason":"b","duration":"a week"}"#, 400),
                (#"{"entitlementId":"pro","actor":"a","reason":"b","grantId":"not-a-uuid"}"#, 400), (#"{"entitlementId":"pro"}"#, 400),
            ] {
                let reply = try await http.send(.POST, grants, headers: admin(stack), body: Data(bad.utf8))
                #expect(reply.status == status, "\(bad): \(reply.text)")
            }

            // Both revoked: pro goes.
            for id in [grantId, "0a1b2c3d-1111-4222-8333-444455556666"] {
                let revoked = try await http.send(
                    .POST, "/v1/admin/apps/demo/promotional-grants/\(id)/revoke", headers: admin(stack),
                    body: Data(#"{"actor":"lead@example.com","reason":"given by mistake"}"#.utf8))
                #expect(revoked.status == 200 && revoked.json["revokedAt"] is String, "\(revoked.text)")
            }
            #expect(try await stack.api.subscriber("rosa").entitlements["pro"] == nil)
            let missing = try await http.send(
                .POST, "/v1/admin/apps/demo/promotional-grants/nope/revoke", headers: admin(stack), body: Data(#"{"actor":"a","reason":"b"}"#.utf8))
            #expect(missing.status == 404)

            let types = try await stack.api.events("?limit=50").filter { $0.event.appUserId == "rosa" }.map(\.event.type)
            #expect(
                types == [
                    // The grant for life over the week's: pro renewed (no end any more); the week's
                    // revoked changes nothing (the one for life stands), the second ends pro.
                    .promotionalGrant, .entitlementGranted, .promotionalGrant, .entitlementRenewed, .promotionalGrantRevoked,
                    .promotionalGrantRevoked, .entitlementRevoked,
                ], "\(types)")
            let audit = try await http.send(.GET, "/v1/admin/apps/demo/audit", headers: admin(stack))
            let actions = (audit.json["entries"] as? [[String: Any]])?.compactMap { ($0["entry"] as? [String: Any])?["action"] as? String }
            #expect(actions == ["promotional_grant", "promotional_grant", "promotional_grant_revoked", "promotional_grant_revoked"], "\(audit.text)")
            let ledger = try await http.send(.GET, "/v1/admin/apps/demo/ledger?environment=sandbox", headers: admin(stack))
            #expect(!ledger.text.contains("rosa"), "no money moved: \(ledger.text)")
            #expect(try await http.send(.GET, "/v1/admin/apps/demo/audit?limit=0", headers: admin(stack)).status == 400)
        }
    }

    @Test("auto-renew turned off: the entitlement says unsubscribed, since when it was seen, in the answer and the event; on again clears it")
    func unsubscribeDetected() async throws {
        try await withStack { stack in
            let device = try await stack.simulator.createDevice(bundleId: demoBundle)
            let bought = try await stack.simulator.purchase(device: device, productId: "com.example.pro.monthly")
            #expect(try await stack.api.postReceipt(appUserId: "uma", receipt: bought.receipt, wait: TestWait.seconds).status == 200)
            #expect(try await stack.api.subscriber("uma").entitlements["pro"]?.willRenew == true)

            let path = "/sim/subscriptions/\(bought.originalTransactionId)"
            #expect(try await stack.simulator.http.send(.POST, "\(path)/cancel-auto-renew").status == 200)
            let seenAt = stack.clock.now()
            let receipt = try await stack.simulator.receipt(device: device)
            #expect(try await stack.api.postReceipt(appUserId: "uma", receipt: receipt, refresh: true, wait: TestWait.seconds).status == 200)
            let answeredAt = stack.clock.now()
            let pro = try #require(try await stack.api.subscriber("uma").entitlements["pro"])
            #expect(pro.isActive && pro.unsubscribed && pro.willRenew == false)
            // Seen while the refresh was verified: between the clock read before and after it
            // (stored in whole milliseconds).
            let detected = try #require(pro.unsubscribeDetectedAt)
            #expect(detected >= seenAt.addingTimeInterval(-0.001) && detected <= answeredAt, "\(detected) vs \(seenAt)…\(answeredAt)")
            let events = try await stack.api.events("?limit=50").filter { $0.event.appUserId == "uma" }
            #expect(events.last?.event.type == .autoRenewDisabled)
            #expect(events.last?.event.entitlements?.entitlements["pro"]?.unsubscribeDetectedAt == pro.unsubscribeDetectedAt)

            #expect(try await stack.simulator.http.send(.POST, "\(path)/resume-auto-renew").status == 200)
            let again = try await stack.simulator.receipt(device: device)
            #expect(try await stack.api.postReceipt(appUserId: "uma", receipt: again, refresh: true, wait: TestWait.seconds).status == 200)
            let resumed = try await stack.api.subscriber("uma").entitlements["pro"]
            #expect(resumed?.unsubscribed == false && resumed?.unsubscribeDetectedAt == nil && resumed?.willRenew == true)
        }
    }
}
