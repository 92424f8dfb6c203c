import ArgumentParser
import Crypto
import Foundation
import StorekeeperKit
import StorekeeperKitSimulator

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A small command-line "app" using StorekeeperKit against `storekeeper serve --simulator`:
/// each run is one launch of the app. State (the purchase journal, the cached entitlements, the
/// simulated device and its unfinished transactions) lives in `--state` between runs.
@main
struct Example: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "storekeeperkit-example",
        abstract: "An app's purchases through StorekeeperKit, against storekeeper serve --simulator.",
        subcommands: [Buy.self, Paywall.self, Launch.self, Show.self, Restore.self])

    struct Options: ParsableArguments {
        @Option(help: "The Storekeeper server.") var server = "http://127.0.0.1:8080"
        @Option(help: "The App Store simulator.") var simulator = "http://127.0.0.1:8090"
        @Option(help: "The signed-in app user.") var user = "alice"
        @Option(help: "Directory that keeps the app's state between runs.") var state = "storekeeperkit-example-state"
    }

    /// One launch: the SDK configured as an app would, with the demo's client key, a user
    /// token minted here as the app's backend would, and the demo's pinned signing key.
    static func launch(_ options: Options, serverReachable: Bool = true) async throws -> Storekeeper {
        let state = URL(fileURLWithPath: options.state, isDirectory: true)
        try FileManager.default.createDirectory(at: state, withIntermediateDirectories: true)
        let simulator = URL(string: options.simulator)!
        let deviceFile = state.appendingPathComponent("device.txt")
        let device: UUID
        if let saved = try? String(contentsOf: deviceFile, encoding: .utf8), let id = UUID(uuidString: saved) {
            device = id
        } else {
            device = try await SimulatorStoreFront.createDevice(simulatorURL: simulator, bundleId: "com.example.storekeeper.demo")
            try device.uuidString.write(to: deviceFile, atomically: true, encoding: .utf8)
        }
        let user = options.user
        let configuration = Storekeeper.Configuration(
            serverURL: URL(string: options.server)!, clientKey: "demo-client-key-0123456789", appUserId: user,
            userToken: { Self.userToken(for: user) },
            signingKeys: ["demo-1": try P256.Signing.PublicKey(pemRepresentation: Self.pinnedKey)], stateDirectory: state)
        let store = SimulatorStoreFront(simulatorURL: simulator, device: device, stateDirectory: state)
        return Storekeeper(configuration: configuration, store: store, transport: serverReachable ? URLSessionTransport() : Unreachable())
    }

    /// What the app's backend would issue after sign-in: HS256, five minutes.
    static func userToken(for user: String) -> String {
        func base64URL(_ data: Data) -> String {
            data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
                .replacingOccurrences(of: "=", with: "")
        }
        let now = Int(Date().timeIntervalSince1970)
        let header = base64URL(Data(#"{"alg":"HS256","typ":"JWT"}"#.utf8))
        let escaped = user.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
        let payload = base64URL(Data(#"{"exp":\#(now + 300),"iat":\#(now),"sub":"\#(escaped)"}"#.utf8))
        let key = SymmetricKey(data: Data("demo-user-token-secret-0123456789abcdef".utf8))
        let mac = HMAC<SHA256>.authenticationCode(for: Data("\(header).\(payload)".utf8), using: key)
        return "\(header).\(payload).\(base64URL(Data(mac)))"
    }

    static let pinnedKey = """
        -----BEGIN PUBLIC KEY-----
        MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEMWniK4yBAGSv0QnrIMOlGZQNnxTq
        x0Q/GFUzXdnk/oKiZyqHfWL0bjlOCQZYpybXppWIWbvoEZOIVWAg7e8YYg==
        -----END PUBLIC KEY-----
        """

    /// The network gone, as for an app killed between paying and posting.
    struct Unreachable: ServerTransport {
        func send(_ request: URLRequest) async throws -> ServerAnswer { throw URLError(.notConnectedToInternet) }
    }

    static func describe(_ outcome: Storekeeper.Outcome) -> String {
        switch outcome {
        case .granted(let entitlements): "granted; owns \(entitlements.activeEntitlements.sorted())"
        case .pending(let reason): "pending (\(reason)); it is sent again at the next launch"
        case .cancelled: "cancelled"
        case .refused(let code, let message): "refused: \(code) (\(message))"
        case .ownedByAnotherAccount(let message): "owned by another account: \(message); left unfinished for support"
        }
    }

    struct Buy: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Buy a product (optionally dying after paying, before posting).")
        @OptionGroup var options: Options
        @Argument(help: "Product id, e.g. com.example.removeads.") var product: String
        @Flag(help: "Pay at the store, then lose the server before posting (as if the app were killed).") var dieBeforePost = false

        func run() async throws {
            let keeper = try await Example.launch(options, serverReachable: !dieBeforePost)
            print("buy \(product): \(Example.describe(try await keeper.purchase(productId: product)))")
        }
    }

    struct Paywall: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show the current offering as the server chose it (optionally for a storefront), and buy one of its packages.")
        @OptionGroup var options: Options
        @Option(help: "Apple's storefront code, e.g. FRA.") var storefront: String?
        @Option(help: "Buy this package of the current offering, e.g. $monthly.") var buy: String?

        func run() async throws {
            let keeper = try await Example.launch(options)
            let offerings = try await keeper.offerings(storefront: storefront)
            guard let current = offerings.current else {
                print("paywall: no current offering")
                return
            }
            print(
                "paywall \(current.id): "
                    + current.packages.map { "\($0.id) \($0.productId) \($0.storeProduct.displayPrice)" }.joined(separator: ", "))
            guard let buy else { return }
            guard let package = current.package(buy) else { throw ValidationError("offering \(current.id) has no package \(buy)") }
            print("buy \(package.id): \(Example.describe(try await keeper.purchase(package: package)))")
        }
    }

    struct Launch: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Start the app: send every unfinished purchase to the server.")
        @OptionGroup var options: Options

        func run() async throws {
            let keeper = try await Example.launch(options)
            let outcomes = try await keeper.deliverPendingWithBackoff(attempts: 3, baseDelay: .milliseconds(500))
            if outcomes.isEmpty { print("launch: nothing pending") }
            for (id, outcome) in outcomes.sorted(by: { $0.key < $1.key }) { print("launch: transaction \(id) \(Example.describe(outcome))") }
        }
    }

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "What the user owns (verified answer, or the cache offline).")
        @OptionGroup var options: Options

        func run() async throws {
            let entitlements = try await Example.launch(options).entitlements()
            print("entitlements of \(entitlements.appUserId): \(entitlements.activeEntitlements.sorted())")
        }
    }

    struct Restore: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Restore on the user's request: everything the store says the user owns is sent, then entitlements refreshed.")
        @OptionGroup var options: Options

        func run() async throws {
            let restored = try await Example.launch(options).restore()
            for (id, outcome) in restored.outcomes.sorted(by: { $0.key < $1.key }) { print("transaction \(id): \(Example.describe(outcome))") }
            print("restored: \(restored.entitlements.activeEntitlements.sorted())")
        }
    }
}
