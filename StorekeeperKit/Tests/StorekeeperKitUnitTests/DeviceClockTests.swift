import Crypto
import Foundation
import StorekeeperWire
import Testing

@testable import StorekeeperKit

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The offline window against the device's clock (no server: answers signed here as the
/// server signs them, at the server's time, which the device's clock does not follow). A user
/// who sets the clock back must not stretch how long a kept answer is shown, nor bring back a
/// purchase refunded since by putting an older copy of the app's files back; a genuine live
/// answer is believed whatever the clock says.
@Suite struct DeviceClockTests {
    /// The server: signs each subscriber answer with its key at its own time, or is unreachable.
    final class Server: ServerTransport, @unchecked Sendable {
        let key = P256.Signing.PrivateKey()
        private let lock = NSLock()
        private var state = (now: Date(timeIntervalSince1970: 1_790_000_000), owns: ["pro"], reachable: true)

        func set(now: Date? = nil, owns: [String]? = nil, reachable: Bool? = nil) {
            lock.withLock {
                if let now { state.now = now }
                if let owns { state.owns = owns }
                if let reachable { state.reachable = reachable }
            }
        }

        var now: Date { lock.withLock { state.now } }

        func send(_ request: URLRequest) async throws -> ServerAnswer {
            let (now, owns, reachable) = lock.withLock { (state.now, state.owns, state.reachable) }
            guard reachable else { throw URLError(.cannotConnectToHost) }
            let target = String(request.url!.absoluteString.dropFirst("https://sk.example".count))
            let nonce = request.value(forHTTPHeaderField: "Storekeeper-Nonce") ?? ""
            let body = try WireJSON.makeEncoder().encode(Subscriber(appUserId: "amy", asOf: now, activeEntitlements: owns))
            let ts = Int64(now.timeIntervalSince1970)
            let message =
                Data("storekeeper-response-v2\n\(nonce)\nGET \(target)\n\(AnswerCheck.digest(nil))\n200\n\(ts)\nk1\n".utf8) + body
            let signature = try key.signature(for: message).rawRepresentation.base64EncodedString()
            return ServerAnswer(status: 200, headers: ["storekeeper-signature": "v2,kid=k1,ts=\(ts),sig=\(signature)"], body: body)
        }
    }

    /// This device's clock, which its user can set anywhere.
    final class DeviceClock: @unchecked Sendable {
        private let lock = NSLock()
        private var value: Date
        init(_ value: Date) { self.value = value }
        var now: Date {
            get { lock.withLock { value } }
            set { lock.withLock { value = newValue } }
        }
    }

    /// A store with nothing in it: these tests only read entitlements.
    struct EmptyStore: StoreFront {
        func purchase(productId: String, appAccountToken: UUID, offer: StoreOffer?, billingPlan: BillingPlan?) async throws -> StorePurchaseResult {
            .cancelled
        }
        func unfinished() async throws -> [StoreTransaction] { [] }
        func finish(_ transaction: StoreTransaction) async throws {}
        func updates() -> AsyncStream<StoreTransaction> { AsyncStream { $0.finish() } }
        func restorable() async throws -> [StoreTransaction] { [] }
        func products(for ids: [String]) async throws -> [StoreProduct] { [] }
        func appTransaction() async throws -> String? { nil }
        func showManageSubscriptions() async throws {}
        func beginRefundRequest(transactionId: String) async throws -> RefundRequestOutcome { .cancelled }
        func messages() -> AsyncStream<StoreMessage> { AsyncStream { $0.finish() } }
        func presentOfferCodeRedeemSheet() async throws {}
    }

    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("storekeeperkit-clock-\(UUID().uuidString)")

    func sdk(_ server: Server, _ clock: DeviceClock) -> Storekeeper {
        var configuration = Storekeeper.Configuration(
            serverURL: URL(string: "https://sk.example")!, clientKey: "pk_test", appUserId: "amy", signingKeys: ["k1": server.key.publicKey],
            stateDirectory: directory)
        // The file store, on every platform: a test must not write to the Keychain.
        configuration.newestAnswers = FileNewestAnswers(file: directory.appendingPathComponent("newest-answers.json"))
        return Storekeeper(configuration: configuration, store: EmptyStore(), transport: server, now: { clock.now })
    }

    func isUnavailable(_ attempt: () async throws -> Entitlements) async -> Bool {
        do {
            _ = try await attempt()
            return false
        } catch let error as StorekeeperKitError {
            return error.code == .serverUnavailable
        } catch {
            return false
        }
    }

    @Test("the clock right: a live answer is kept and shown offline, dated by the server's signature")
    func clockRight() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = Server()
        let clock = DeviceClock(server.now)
        let sdk = sdk(server, clock)
        let live = try await sdk.entitlements()
        #expect(live.activeEntitlements == ["pro"] && live.verifiedAt == server.now)
        server.set(reachable: false)
        clock.now = server.now.addingTimeInterval(3_600)
        #expect(try await sdk.entitlements().activeEntitlements == ["pro"], "the cache is served while the server is away")
        clock.now = server.now.addingTimeInterval(3 * 86_400 + 1)
        #expect(await isUnavailable { try await sdk.entitlements() }, "past the staleness limit, by the server's time")
    }

    @Test(
        "the clock set back an hour, a day, a year: the live answer is believed; the kept one is not shown offline",
        arguments: [3_600, 86_400, 365 * 86_400] as [Double])
    func clockSetBack(by seconds: Double) async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = Server()
        let clock = DeviceClock(server.now.addingTimeInterval(-seconds))
        let sdk = sdk(server, clock)
        let live = try await sdk.entitlements()
        #expect(live.activeEntitlements == ["pro"] && live.verifiedAt == server.now, "a genuine answer is never called forged")
        server.set(reachable: false)
        #expect(await isUnavailable { try await sdk.entitlements() }, "signed ahead of the device's clock: the window would stretch by \(seconds) s")
        #expect(await sdk.cachedEntitlements() == nil)
        // The clock right again: the same kept answer is shown.
        clock.now = server.now.addingTimeInterval(60)
        #expect(try await sdk.entitlements().activeEntitlements == ["pro"])
    }

    @Test("a refund seen is never undone: an older copy of the cache put back, the clock set to its time, is discarded")
    func restoredCopy() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = Server()
        let clock = DeviceClock(server.now)
        let sdk = sdk(server, clock)
        let bought = server.now
        _ = try await sdk.entitlements()
        let cacheFile = directory.appendingPathComponent("entitlements.json")
        let copy = try Data(contentsOf: cacheFile)
        // An hour later the purchase is refunded, and this device sees it.
        server.set(now: bought.addingTimeInterval(3_600), owns: [])
        clock.now = server.now
        #expect(try await sdk.entitlements().activeEntitlements == [])
        // The user puts the older file back, sets the clock to just after it, goes offline.
        try copy.write(to: cacheFile)
        server.set(reachable: false)
        clock.now = bought.addingTimeInterval(60)
        #expect(await isUnavailable { try await sdk.entitlements() })
        #expect(await sdk.cachedEntitlements() == nil)
        #expect(!FileManager.default.fileExists(atPath: cacheFile.path), "discarded")
        clock.now = bought.addingTimeInterval(7_200)
        #expect(await sdk.cachedEntitlements() == nil, "nor at any other time")
    }

    #if canImport(SecurityForLinux)
    /// The Keychain store's own calls, run on Linux against the Security stand-in (on Apple
    /// platforms a test would write to the real Keychain).
    @Test("the Keychain store keeps the newest time per key: added once, then updated, never moved back")
    func keychainStore() {
        let store = KeychainNewestAnswers(service: "test-\(UUID().uuidString)")
        let t = Date(timeIntervalSince1970: 1_790_000_000)
        #expect(store.newest(for: "a") == nil)
        store.record(t, for: "a")
        store.record(t.addingTimeInterval(-10), for: "a")
        #expect(store.newest(for: "a") == t)
        store.record(t.addingTimeInterval(10), for: "a")
        #expect(store.newest(for: "a") == t.addingTimeInterval(10) && store.newest(for: "b") == nil)
    }
    #endif

    @Test("a cache file that does not decode is deleted")
    func unreadableCache() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let server = Server()
        let sdk = sdk(server, DeviceClock(server.now))
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let cacheFile = directory.appendingPathComponent("entitlements.json")
        try Data("{\"nonce\": \"cut short".utf8).write(to: cacheFile)
        #expect(await sdk.cachedEntitlements() == nil)
        #expect(!FileManager.default.fileExists(atPath: cacheFile.path))
    }
}
