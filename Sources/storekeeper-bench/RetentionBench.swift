import AppStoreSimulator
import ArgumentParser
import Foundation
import NIOHTTP1
import SimulatorSetup
import StorekeeperDomain
import StorekeeperServer
import StorekeeperTesting

extension Bench {
    /// Issue #29's Retention Messaging: Apple's realtime requests, signed by the simulator's CA
    /// as the App Store signs them, posted to `POST /v1/retention/{app}` by 200 clients at once;
    /// half are answered with a message, half with a promotional offer signed (V2) per request.
    struct Retention: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Retention Messaging realtime answers: latency (p50, p99) under concurrent signed requests.")
        @Option(help: "Requests to time (after a warm-up of 10%).") var requests = 20_000
        @Option(help: "Concurrent clients (Apple's performance test sends many at once).") var concurrency = 200
        @Option(help: "Subscriptions the requests are about.") var subscriptions = 200
        @Option(help: "postgres:// URL to measure PostgreSQL instead of SQLite (a fresh schema per run).") var database: String?

        func run() async throws {
            var configuration = LocalStack.testConfiguration(databasePath: benchDatabase(database))
            configuration.apps[0].serverAPI = .generated()
            configuration.apps[0].offers = [.init(id: "pro_comeback", productId: "com.example.pro.monthly")]
            configuration.apps[0].retentionMessages = [
                RetentionChoice(messageId: "7f1f5a37-9a53-4e0b-8f5d-000000000003", locales: ["fr"], offerId: "pro_comeback"),
                RetentionChoice(messageId: "7f1f5a37-9a53-4e0b-8f5d-000000000001"),
            ]
            let stack = try await LocalStack.start(configuration: configuration)
            var originals: [String] = []
            for i in 0..<subscriptions {
                let device = try await stack.simulator.createDevice(bundleId: DemoConfiguration.bundleId, environment: "production")
                let bought = try await stack.simulator.purchase(device: device, productId: "com.example.pro.monthly")
                let reply = try await stack.api.postSignedTransaction(
                    appUserId: "retained-\(i)", signedTransaction: bought.signedTransaction, wait: 30)
                guard reply.status == 200 else { throw ValidationError("the purchase was not granted: \(reply.text)") }
                originals.append(bought.originalTransactionId)
            }
            let total = requests + requests / 10
            // Signed before timing (Apple signs, not the server): fresh, so none is stale.
            var bodies: [Data] = []
            bodies.reserveCapacity(total)
            let now = Int64((stack.clock.now().timeIntervalSince1970 * 1000).rounded())
            for i in 0..<total {
                let payload: [String: Any] = [
                    "originalTransactionId": originals[i % originals.count], "appAppleId": DemoConfiguration.appAppleId,
                    "productId": "com.example.pro.monthly", "userLocale": i.isMultiple(of: 2) ? "fr_FR" : "en_US",
                    "requestIdentifier": UUID().uuidString.lowercased(), "signedDate": now, "environment": "Production",
                ]
                let signed = try stack.simulatorPKI.signJWS(payload: Array(try JSONSerialization.data(withJSONObject: payload)))
                bodies.append(Data(#"{"signedPayload":"\#(signed)"}"#.utf8))
            }
            let http = stack.api.http
            _ = try await Self.post(http, Array(bodies.prefix(requests / 10)), concurrency: concurrency)
            let started = ContinuousClock.now
            let latencies = try await Self.post(http, Array(bodies.suffix(requests)), concurrency: concurrency)
            let elapsed = started.duration(to: .now)
            report(
                "retention", count: requests, elapsed: elapsed, latencies: latencies,
                extra:
                    "concurrency \(concurrency), \(subscriptions) subscriptions, half answered with an offer signed per request, \(database == nil ? "sqlite" : "postgresql")"
            )
            // The ceiling: the same clients and bodies against a server that only reads them.
            let client = stack.httpClient
            let (warm, measured) = (Array(bodies.prefix(requests / 10)), Array(bodies.suffix(requests)))
            let (bareElapsed, bareLatencies) = try await BareServer.with { baseURL in
                let bare = HTTPJSONClient(httpClient: client, baseURL: baseURL)
                _ = try await Self.post(bare, warm, concurrency: concurrency)
                let started = ContinuousClock.now
                let latencies = try await Self.post(bare, measured, concurrency: concurrency)
                return (started.duration(to: .now), latencies)
            }
            report(
                "ceiling (bare Hummingbird, same clients and bodies)", count: requests, elapsed: bareElapsed, latencies: bareLatencies,
                extra: "storekeeper at \(String(format: "%.1f", 100 * seconds(bareElapsed) / seconds(elapsed))) % of it")
            try await stack.stop()
        }

        /// Each body posted once, `concurrency` at a time; each answer must be a 200 with a choice.
        static func post(_ http: HTTPJSONClient, _ bodies: [Data], concurrency: Int) async throws -> [Double] {
            try await withThrowingTaskGroup(of: [Double].self) { group in
                let per = (bodies.count + concurrency - 1) / concurrency
                for lane in 0..<concurrency {
                    let slice = Array(bodies.dropFirst(lane * per).prefix(per))
                    group.addTask {
                        var out: [Double] = []
                        for body in slice {
                            let t = ContinuousClock.now
                            let reply = try await http.send(.POST, "/v1/retention/demo", body: body, timeout: 120)
                            out.append(seconds(t.duration(to: .now)))
                            guard reply.status == 200, reply.json["message"] != nil || reply.json["promotionalOffer"] != nil else {
                                throw ValidationError("POST /v1/retention/demo answered \(reply.status): \(reply.text)")
                            }
                        }
                        return out
                    }
                }
                var all: [Double] = []
                for try await part in group { all += part }
                return all
            }
        }
    }
}
