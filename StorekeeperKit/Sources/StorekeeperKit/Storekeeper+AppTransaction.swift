import Foundation

/// How the customer obtained the app, as the server verified and kept it from the device's app
/// transaction (docs/SDK.md): the version they first got, to grandfather those who bought the app
/// before it went free.
public struct AppTransactionInfo: Codable, Sendable, Hashable {
    public var appTransactionId: String
    /// `Production` or `Sandbox`.
    public var environment: String
    /// The app version first obtained (the build number on iOS, as Apple states it).
    public var originalAppVersion: String?
    public var originalPurchaseDate: Date?
    public var originalPlatform: String?
    /// When Apple signed the copy the server keeps (the newest it was sent).
    public var signedDate: Date
}

extension Storekeeper {
    /// Sends the device's app transaction to the server, which verifies Apple's signature and
    /// keeps it on this user; answers what the server keeps (nil where the store has none). Call
    /// it once per launch, or before deciding on grandfathered access: StoreKit caches the value.
    public func postAppTransaction() async throws -> AppTransactionInfo? {
        guard let jws = try await store.appTransaction() else { return nil }
        let body = try JSONSerialization.data(withJSONObject: ["signedAppTransaction": jws])
        let answer = try await call("POST", subscriberPath("app-transaction"), body: body)
        guard answer.status == 200 else { throw refusal(answer) }
        guard let info = try? Self.serverDecoder().decode(AppTransactionInfo.self, from: answer.body) else {
            throw StorekeeperKitError(.forgedAnswer, "not an app transaction answer")
        }
        return info
    }
}
