import Foundation
import NIOHTTP1
import Persistence
import StorekeeperDomain
import StorekeeperTesting
import Testing

/// The outbox read over real HTTP: what a backend polling `GET /v1/events` sees.
@Suite("event feed")
struct EventFeedTests {
    @Test("purchases become events once; a refreshed replay adds none; pages, filters and bad input")
    func feed() async throws {
        try await withStack { stack in
            let api = stack.api
            let device = try await stack.simulator.createDevice(bundleId: demoBundle)
            let unlock = try await stack.simulator.purchase(device: device, productId: "com.example.removeads")
            #expect(try await api.postReceipt(appUserId: "frank smith", receipt: unlock.receipt, wait: TestWait.seconds).status == 200)
            let coins = try await stack.simulator.purchase(device: device, productId: "com.example.coins100")
            #expect(try await api.postReceipt(appUserId: "frank smith", receipt: coins.receipt, wait: TestWait.seconds).status == 200)
            // The same receipt verified again: Apple's answer is unchanged, so nothing happened.
            #expect(try await api.postReceipt(appUserId: "frank smith", receipt: coins.receipt, refresh: true, wait: TestWait.seconds).status == 200)

            // The unlock also grants the demo's entitlement no_ads, an event of its own.
            let all = try await api.events("")
            #expect(all.map(\.event.type) == [.nonConsumablePurchase, .entitlementGranted, .consumablePurchase], "\(all.map(\.event.type))")
            #expect(all.map(\.event.sequence) == [1, 2, 3] && all[0].cursor < all[1].cursor && all[1].cursor < all[2].cursor)
            #expect(all.map(\.event.transactionId) == [unlock.transactionId, unlock.transactionId, coins.transactionId])
            #expect(all[1].event.details?.entitlementId == "no_ads")
            let last = try #require(all.last?.event)
            #expect(last.appUserId == "frank smith" && last.priceMicros == 990_000 && last.currency == "USD" && last.details?.credits == 100)
            #expect(last.entitlements?.creditBalance == 100 && last.entitlements?.activeEntitlements == ["com.example.removeads"])

            #expect(try await api.events("?after=\(all[1].cursor)").map(\.event.id) == [last.id])
            #expect(try await api.events("?limit=1").map(\.event.id) == [all[0].event.id])
            #expect(try await api.events("?types=refund").isEmpty)
            let page = try await api.http.send(.GET, "/v1/events?after=\(all[2].cursor)", headers: ["Authorization": "Bearer \(api.apiKey)"])
            #expect(page.status == 200 && page.json["nextCursor"] as? Int == Int(all[2].cursor), "an empty page keeps the cursor")

            let mine = try await api.http.send(
                .GET, "/v1/subscribers/frank%20smith/events?after=2", headers: ["Authorization": "Bearer \(api.apiKey)"])
            let entries = try mine.decode(StorekeeperClient.EventPageBody.self)
            #expect(entries.events.map(\.event.id) == [last.id] && entries.nextCursor == 3)

            for (query, code) in [
                ("?types=refund,bogus", "unknown_event_type"), ("?limit=0", "invalid_request"), ("?limit=501", "invalid_request"),
                ("?after=-1", "invalid_request"), ("?after=abc", "invalid_request"),
            ] {
                let reply = try await api.http.send(.GET, "/v1/events\(query)", headers: ["Authorization": "Bearer \(api.apiKey)"])
                #expect(reply.status == 400 && reply.errorCode == code, "\(query): \(reply.text)")
            }
            #expect(try await api.http.send(.GET, "/v1/events").status == 401)
        }
    }
}
