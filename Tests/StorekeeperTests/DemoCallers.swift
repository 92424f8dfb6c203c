import Foundation
import StorekeeperServer
import StorekeeperTesting

/// The demo app's callers as the route tests use them: its backend, and the app itself for one
/// user (the demo client key with a user token its backend would issue) or for nobody.
enum DemoCallers {
    static var backend: [String: String] { ["Authorization": "Bearer \(DemoConfiguration.appApiKey)"] }

    static var anonymous: [String: String] { ["Authorization": "Bearer \(DemoConfiguration.clientKey)"] }

    static func client(as user: String) throws -> [String: String] {
        let now = Int(Date().timeIntervalSince1970)
        let token = try UserTokens.hs256(["sub": user, "exp": now + 300], secret: DemoConfiguration.userTokenSecret)
        return ["Authorization": "Bearer \(DemoConfiguration.clientKey)", "Storekeeper-User-Token": token]
    }
}
