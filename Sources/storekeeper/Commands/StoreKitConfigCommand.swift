import ArgumentParser
import Foundation
import NIOHTTP1

/// `storekeeper storekit-config --app ID > Products.storekit`: the catalog a running server sells,
/// as an Xcode StoreKit configuration file (docs/SDK.md, "Testing in Xcode"), read through
/// `GET /v1/admin/apps/{app}/storekit-config` so it is the catalog as edited, not as first
/// configured.
struct StoreKitConfigCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "storekit-config",
        abstract: "Print the app's catalog as an Xcode StoreKit configuration file (Products.storekit).")

    @Option(help: "The server's base URL (also STOREKEEPER_URL).") var url: String?
    @Option(help: "An admin key or admin token (also STOREKEEPER_ADMIN_KEY).") var adminKey: String?
    @Option(help: "The app's id in the configuration.") var app: String

    func run() async throws {
        let file = try await AdminRequest(url: url, adminKey: adminKey, app: app).send(.GET, "/storekit-config", json: nil)
        FileHandle.standardOutput.write(file)
    }
}
