import Foundation
import Persistence
import StorekeeperCore
import StorekeeperDomain
import StorekeeperTesting
import Testing

extension StorageConformanceTests {
    func appTransaction(_ id: String, version: String, signed: Date) -> CustomerAppTransaction {
        CustomerAppTransaction(
            appTransactionId: id, environment: "Sandbox", originalAppVersion: version, originalPurchaseDate: t0, originalPlatform: "iOS",
            signedDate: signed, receivedAt: signed)
    }

    @Test(
        "a customer's app transaction: the newest Apple signed is kept, an older copy posted later changes nothing; it follows an anonymous id to the user who logs in",
        arguments: StoreFactory.all)
    func appTransactions(factory: StoreFactory) async throws {
        let store = try await make(factory)
        #expect(try await store.appTransaction(appId: "app", appUserId: "dana") == nil)
        let first = appTransaction("7000000000000001", version: "1.0", signed: t0)
        #expect(try await store.recordAppTransaction(appId: "app", appUserId: "dana", first) == first)
        let newer = appTransaction("7000000000000001", version: "1.0", signed: t0 + 60)
        #expect(try await store.recordAppTransaction(appId: "app", appUserId: "dana", newer) == newer)
        // A replayed older copy, even of another account's app transaction, does not replace it.
        let older = appTransaction("7000000000000002", version: "3.0", signed: t0 + 30)
        #expect(try await store.recordAppTransaction(appId: "app", appUserId: "dana", older) == newer)
        #expect(try await store.appTransaction(appId: "app", appUserId: "dana") == newer)
        #expect(try await store.appTransaction(appId: "other", appUserId: "dana") == nil, "per app")

        // Posted while anonymous, then the user logs in: it moves, unless the user has their own.
        let anonymous = "$anon:" + UUID().uuidString.lowercased()
        let device = appTransaction("7000000000000003", version: "2.0", signed: t0)
        _ = try await store.recordAppTransaction(appId: "app", appUserId: anonymous, device)
        let identity = ManageIdentity(store: store)
        _ = try await identity.logIn(appId: "app", anonymousId: anonymous, appUserId: "erin", policy: .transfer, now: t0)
        #expect(try await store.appTransaction(appId: "app", appUserId: "erin") == device)
        #expect(try await store.appTransaction(appId: "app", appUserId: anonymous) == nil)
        let other = "$anon:" + UUID().uuidString.lowercased()
        _ = try await store.recordAppTransaction(appId: "app", appUserId: other, appTransaction("7000000000000004", version: "9", signed: t0))
        _ = try await identity.logIn(appId: "app", anonymousId: other, appUserId: "dana", policy: .transfer, now: t0)
        #expect(try await store.appTransaction(appId: "app", appUserId: "dana") == newer, "the user's own stays")
    }
}
