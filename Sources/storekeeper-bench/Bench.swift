import AppStoreCrypto
import AppStoreModels
import AppStoreSimulator
import ArgumentParser
import Crypto
import Foundation
import Logging
import NIOHTTP1
import Persistence
import StorekeeperDomain
import StorekeeperServer
import StorekeeperTesting
import SwiftASN1
import X509

/// Measures over loopback, against the real server and simulator in this process.
/// Figures go to docs/BENCHMARKS.md with the exact command line. A binary of its own, so the
/// shipped `storekeeper` links none of the test support it needs.
@main
struct Bench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "storekeeper-bench",
        abstract: "Benchmarks: receipt ingest (POST /v1/receipts) and end-to-end verification.",
        subcommands: [
            Ingest.self, EndToEnd.self, ScaleOut.self, Receipts.self, SignedData.self, Webhooks.self, Outage.self, Import.self, Analytics.self,
            Retention.self, Cluster.self,
        ])

    struct Receipts: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "App receipts parsed, and parsed + signature-checked, per second on one core.")
        @Option(help: "Base64 receipt file (default: one made by the simulator, ECDSA P-256 chain).") var file: String?
        @Option(help: "Trusted root for --file (PEM or DER); Apple's roots are always trusted.") var root: String?
        @Option var iterations = 3_000
        @Flag(help: "Validate the certificate chain in full for every receipt (no verified-chain cache).") var noChainCache = false

        func run() async throws {
            var bytes: [UInt8]
            var roots = try ReceiptSignatureVerifier.appleRoots()
            var label = "simulator receipt (ECDSA P-256 leaf/intermediate/root)"
            if let file {
                guard let raw = FileManager.default.contents(atPath: file) else { throw ValidationError("cannot read \(file)") }
                bytes = Array(Data(base64Encoded: String(decoding: raw, as: UTF8.self), options: .ignoreUnknownCharacters) ?? raw)
                label = file
                if let root, let data = FileManager.default.contents(atPath: root) {
                    roots.append(try CertificateFile.certificate(fileContents: data))
                }
            } else {
                var configuration = LocalStack.testConfiguration(databasePath: LocalStack.temporaryDatabasePath())
                configuration.runWorkers = false
                let stack = try await LocalStack.start(configuration: configuration, startServer: false)
                let device = try await stack.simulator.createDevice(bundleId: configuration.apps[0].bundleId)
                for product in ["com.example.coins100", "com.example.removeads", "com.example.pro.monthly"] {
                    bytes = Array(Data(base64Encoded: try await stack.simulator.purchase(device: device, productId: product).receipt)!)
                }
                bytes = Array(Data(base64Encoded: try await stack.simulator.receipt(device: device))!)
                let pem = try await stack.simulator.http.send(.GET, "/sim/pki/root.pem").text
                roots.append(try Certificate(pemEncoded: pem))
                try await stack.stop()
            }
            let parser = AppReceiptParser()
            let receipt = try parser.parse(bytes)
            let verifier = ReceiptSignatureVerifier(roots: roots, chainCache: noChainCache ? nil : VerifiedChainCache())
            let at = receipt.creationDate ?? Date()
            guard await verifier.verify(bytes, at: at).isValid else { throw ValidationError("the receipt does not verify") }
            var started = ContinuousClock.now
            for _ in 0..<iterations { _ = try parser.parse(bytes) }
            let parseSeconds = seconds(started.duration(to: .now))
            started = .now
            for _ in 0..<iterations {
                let r = try parser.parse(bytes)
                guard await verifier.verify(bytes, at: r.creationDate ?? at).isValid else { throw ValidationError("verify failed") }
            }
            let bothSeconds = seconds(started.duration(to: .now))
            print(
                "receipts: \(label), \(bytes.count) bytes, \(receipt.inAppPurchases.count) purchases; parse \(format(Double(iterations) / parseSeconds))/s; parse + signature + chain \(format(Double(iterations) / bothSeconds))/s (one task, \(iterations) iterations, chain cache \(noChainCache ? "off" : "on"))"
            )
        }
    }

    struct Ingest: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Receipts accepted per second and POST latency, workers off.")
        @Option(help: "Receipts to post (after a warm-up of 10%).") var receipts = 20_000
        @Option(help: "Concurrent HTTP clients.") var concurrency = 32
        @Flag(help: "SQLite synchronous=FULL (fsync each commit) instead of NORMAL.") var fullSync = false
        @Option(help: "postgres:// URL to measure PostgreSQL instead of SQLite (a fresh schema per run).") var database: String?
        @Flag(help: "Then post the same receipts to a bare Hummingbird server that only reads the body and answers 202 (the ceiling).")
        var ceiling = false

        func run() async throws {
            var configuration = LocalStack.testConfiguration(databasePath: benchDatabase(database))
            configuration.runWorkers = false
            configuration.sqliteSynchronousFull = fullSync
            let stack = try await LocalStack.start(configuration: configuration)
            let api = stack.api
            // Real receipts signed by the simulator, one consumable on a new device each, so the
            // server's local parse and bundle check are part of what is measured.
            let total = receipts + receipts / 10
            let bundleId = configuration.apps[0].bundleId
            let payloads = try await buyConsumables(
                stack, count: total, bundleId: bundleId, environment: "sandbox", concurrency: concurrency)
            _ = try await post(api, Array(payloads.prefix(receipts / 10)), concurrency: concurrency)
            let measured = Array(payloads.suffix(receipts))
            let started = ContinuousClock.now
            let latencies = try await post(api, measured, concurrency: concurrency)
            let elapsed = started.duration(to: .now)
            report(
                "ingest", count: receipts, elapsed: elapsed, latencies: latencies,
                extra:
                    "concurrency \(concurrency), simulator receipts of \(payloads[0].count) base64 chars, \(database == nil ? "sqlite synchronous=\(fullSync ? "FULL" : "NORMAL")" : "postgresql")"
            )
            if ceiling {
                let (apiKey, adminKey) = (stack.api.apiKey, stack.api.adminKey)
                let (bareElapsed, bareLatencies) = try await BareServer.with { baseURL in
                    let bare = StorekeeperClient(
                        http: HTTPJSONClient(httpClient: stack.httpClient, baseURL: baseURL), apiKey: apiKey, adminKey: adminKey)
                    _ = try await postAll(bare, Array(payloads.prefix(receipts / 10)), concurrency: concurrency, prefix: "warm")
                    let started = ContinuousClock.now
                    let latencies = try await postAll(bare, measured, concurrency: concurrency, prefix: "bare")
                    return (started.duration(to: .now), latencies)
                }
                report(
                    "ceiling (bare Hummingbird, same clients and receipts)", count: receipts, elapsed: bareElapsed, latencies: bareLatencies,
                    extra: "storekeeper at \(String(format: "%.1f", 100 * seconds(bareElapsed) / seconds(elapsed))) % of it")
            }
            try await stack.stop()
        }

        func post(_ api: StorekeeperClient, _ payloads: [String], concurrency: Int) async throws -> [Double] {
            try await postAll(api, payloads, concurrency: concurrency, prefix: "bench")
        }
    }

    struct EndToEnd: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "e2e", abstract: "Verifications per second end to end with slow Apple (simulator latency).")
        @Option(help: "Purchases (one receipt each) to verify.") var receipts = 3_000
        @Option(help: "Simulator latency in ms, MIN-MAX.") var latency = "3000-6000"
        @Option(help: "Verification jobs in flight at once.") var workers = 3_000
        @Option(help: "Concurrent HTTP clients posting receipts.") var concurrency = 32
        @Option(help: "Receipt environment: production (one Apple call) or sandbox (21007, then a second call).")
        var environment = "production"
        @Option(help: "postgres:// URL to measure PostgreSQL instead of SQLite (a fresh schema per run).") var database: String?

        func run() async throws {
            let bounds = latency.split(separator: "-").compactMap { Int($0) }
            guard let low = bounds.first else { throw ValidationError("latency: MIN-MAX in ms") }
            var configuration = LocalStack.testConfiguration(databasePath: benchDatabase(database))
            configuration.workers = workers
            configuration.attemptTimeoutSeconds = 20
            configuration.leaseSeconds = 120
            var simulator = LocalStack.simulatorConfiguration(for: configuration)
            // The server runs as a `storekeeper serve` process of its own (below); this process
            // keeps the simulator, the load and a store handle for counting.
            let stack = try await LocalStack.start(configuration: configuration, simulator: simulator, startServer: false)
            let app = configuration.apps[0]
            // Buy first (no latency), then turn on Apple's slowness and measure verification.
            let purchases = try await buyConsumables(
                stack, count: receipts, bundleId: app.bundleId, environment: environment, concurrency: concurrency)
            simulator.faults.latencyMinMs = low
            simulator.faults.latencyMaxMs = bounds.last ?? low
            try await stack.simulator.setFaults(simulator.faults)

            var server = try ServerProcesses(configuration: stack.configuration, label: "e2e")
            let api = StorekeeperClient(
                http: HTTPJSONClient(httpClient: stack.httpClient, baseURL: try await server.serve("server").baseURL), apiKey: stack.api.apiKey,
                adminKey: stack.api.adminKey)
            let before = CoreTime.Sample.now(server: server.pids)
            let started = ContinuousClock.now
            let latencies = try await postAll(api, purchases, concurrency: concurrency, prefix: "e2e")
            let posted = started.duration(to: .now)
            _ = try await waitUntilFinal(stack.store, total: purchases.count, since: started)
            let elapsed = started.duration(to: .now)
            let after = CoreTime.Sample.now(server: server.pids)
            server.stop()
            let counts = try await stack.store.verificationCounts()
            let granted = try await stack.store.countTransactions(appId: app.id)
            try await stack.stop()
            report("post during e2e", count: purchases.count, elapsed: posted, latencies: latencies, extra: "")
            print(
                "e2e: \(purchases.count) receipts verified in \(format(seconds(elapsed))) s = \(format(Double(purchases.count) / seconds(elapsed))) verifications/s; latency \(latency) ms, \(environment) receipts, workers \(workers), \(database == nil ? "sqlite" : "postgresql"); verified \(counts[.verified] ?? 0), invalid \(counts[.invalid] ?? 0), transactions granted \(granted)"
            )
            print("e2e: " + before.report(until: after, verifications: counts[.verified] ?? 0))
        }
    }
}

extension Bench {
    struct ScaleOut: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "scale",
            abstract:
                "Verifications per second with N `storekeeper worker` processes and one `serve --no-workers` on one PostgreSQL database (simulator and load in this process)."
        )
        @Option(help: "postgres:// URL (a fresh schema per run).") var database: String
        @Option(help: "Worker processes to start.") var workerProcesses = 1
        @Option(help: "Verification jobs in flight per worker process.") var workersPerProcess = 500
        @Option(help: "Purchases (one receipt each) to verify.") var receipts = 5_000
        @Option(help: "Simulator latency in ms, MIN-MAX.") var latency = "3000-6000"
        @Option(help: "Concurrent HTTP clients posting receipts.") var concurrency = 32

        func run() async throws {
            let bounds = latency.split(separator: "-").compactMap { Int($0) }
            guard let low = bounds.first else { throw ValidationError("latency: MIN-MAX in ms") }
            var configuration = LocalStack.testConfiguration(databasePath: benchDatabase(database))
            configuration.runWorkers = false
            configuration.workers = workersPerProcess
            configuration.attemptTimeoutSeconds = 20
            configuration.leaseSeconds = 120
            var simulator = LocalStack.simulatorConfiguration(for: configuration, secondsPerMonth: 86_400)
            let stack = try await LocalStack.start(configuration: configuration, simulator: simulator, startServer: false)
            let app = configuration.apps[0]
            let purchases = try await buyConsumables(
                stack, count: receipts, bundleId: app.bundleId, environment: "production", concurrency: concurrency)
            simulator.faults.latencyMinMs = low
            simulator.faults.latencyMaxMs = bounds.last ?? low
            try await stack.simulator.setFaults(simulator.faults)

            var server = try ServerProcesses(configuration: stack.configuration, label: "scale")
            let api = StorekeeperClient(
                http: HTTPJSONClient(httpClient: stack.httpClient, baseURL: try await server.serve("api", extra: ["--no-workers"]).baseURL),
                apiKey: stack.api.apiKey, adminKey: stack.api.adminKey)
            for index in 0..<workerProcesses { try await server.worker("worker-\(index)") }
            let before = CoreTime.Sample.now(server: server.pids)
            let started = ContinuousClock.now
            _ = try await postAll(api, purchases, concurrency: concurrency, prefix: "scale")
            let counts = try await waitUntilFinal(stack.store, total: purchases.count, since: started)
            let elapsed = started.duration(to: .now)
            let after = CoreTime.Sample.now(server: server.pids)
            server.stop()
            let granted = try await stack.store.countTransactions(appId: app.id)
            try await stack.stop()
            print(
                "scale: \(workerProcesses) worker process(es) × \(workersPerProcess) in flight: \(purchases.count) receipts verified in \(format(seconds(elapsed))) s = \(format(Double(purchases.count) / seconds(elapsed))) verifications/s; latency \(latency) ms; verified \(counts[.verified] ?? 0), transactions granted \(granted)"
            )
            print("scale: " + before.report(until: after, verifications: counts[.verified] ?? 0))
        }
    }
}

extension Bench {
    struct SignedData: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "jws",
            abstract:
                "Signed transactions verified and decoded per second on one core, with and without the chain cache, next to a bare ES256 verify loop."
        )
        @Option(help: "Compact JWS file (default: a transaction signed by the simulator's P-256 chain). Apple's roots are trusted.")
        var file: String?
        @Option(help: "Extra trusted root (PEM or DER) for --file.") var root: String?
        @Option var iterations = 5_000

        func run() async throws {
            var roots = try ReceiptSignatureVerifier.appleRoots()
            var text: String
            var label = "simulator transaction (P-256 leaf, intermediate, root)"
            if let file {
                guard let data = FileManager.default.contents(atPath: file) else { throw ValidationError("cannot read \(file)") }
                text = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
                label = file
                if let root, let data = FileManager.default.contents(atPath: root) {
                    roots.append(try CertificateFile.certificate(fileContents: data))
                }
            } else {
                let pki = try SimulatorPKI()
                roots.append(pki.root)
                let ms = Int64(Date().timeIntervalSince1970 * 1000)
                let payload =
                    #"{"bundleId":"com.example","environment":"Sandbox","transactionId":"2000000000000001","originalTransactionId":"2000000000000001","productId":"coins","type":"Consumable","quantity":1,"#
                    + #""purchaseDate":\#(ms),"signedDate":\#(ms),"price":990000,"currency":"USD","inAppOwnershipType":"PURCHASED"}"#
                text = try pki.signJWS(payload: Array(payload.utf8))
            }
            let time = SignedDataVerifier.ValidationTime.signedDate(fallback: Date())
            let cached = SignedDataVerifier(roots: roots, chainCache: VerifiedChainCache())
            let uncached = SignedDataVerifier(roots: roots, chainCache: nil)
            let first = try await cached.verify(text, expecting: .init(), time: time)
            guard first.isValid else { throw ValidationError("does not verify: \(first.failures)") }

            // The ceiling: the one ES256 check a cached chain still needs, and nothing else.
            let jws = try CompactJWS(text)
            let leafDER = Data(base64Encoded: jws.header.x5c?.first ?? "") ?? Data()
            guard let key = P256.Signing.PublicKey(try Certificate(derEncoded: Array(leafDER)).publicKey) else {
                throw ValidationError("the leaf has no P-256 key")
            }
            let signature = try P256.Signing.ECDSASignature(rawRepresentation: jws.signature)
            let started = ContinuousClock.now
            for _ in 0..<iterations where !key.isValidSignature(signature, for: jws.signingInput) { throw ValidationError("verify failed") }
            let bare = Double(iterations) / seconds(started.duration(to: .now))

            // A notification is verified with its nested transaction and renewal info: three JWS,
            // so its ceiling is a third of the bare loop.
            let notification = try? first.decode(NotificationPayload.self)
            let isNotification = notification?.notificationType != nil
            func measure(_ verifier: SignedDataVerifier, count: Int) async throws -> Double {
                let started = ContinuousClock.now
                for _ in 0..<count {
                    let verdict = try await verifier.verify(text, expecting: .init(), time: time)
                    guard verdict.isValid else { throw ValidationError("verify failed") }
                    if isNotification {
                        let payload = try verdict.decode(NotificationPayload.self)
                        if let nested = payload.data?.signedTransactionInfo {
                            let inner = try await verifier.verify(nested, expecting: .init(), time: time)
                            guard inner.isValid else { throw ValidationError("nested transaction does not verify") }
                            _ = try inner.decode(SignedTransaction.self)
                        }
                        if let nested = payload.data?.signedRenewalInfo {
                            let inner = try await verifier.verify(nested, expecting: .init(), time: time)
                            guard inner.isValid else { throw ValidationError("nested renewal info does not verify") }
                            _ = try inner.decode(SignedRenewalInfo.self)
                        }
                    } else {
                        _ = try verdict.decode(SignedTransaction.self)
                    }
                }
                return Double(count) / seconds(started.duration(to: .now))
            }
            let signatures = 1 + (notification?.data?.signedTransactionInfo == nil ? 0 : 1) + (notification?.data?.signedRenewalInfo == nil ? 0 : 1)
            let ceiling = bare / Double(signatures)
            let withCache = try await measure(cached, count: iterations)
            let withoutCache = try await measure(uncached, count: max(200, iterations / 10))
            let unit = isNotification ? "notifications (with \(signatures - 1) nested JWS)" : "transactions"
            print(
                "jws: \(label); bare ES256 verify \(format(bare))/s (ceiling \(format(ceiling)) \(unit)/s); verify + decode with chain cache \(format(withCache)) \(unit)/s (\(format(100 * withCache / ceiling))% of ceiling); without cache \(format(withoutCache))/s (one task)"
            )
        }
    }
}

/// An SQLite file in a new temporary directory, or the given PostgreSQL URL with a fresh schema
/// (unless the URL names one), so each run starts empty.
func benchDatabase(_ url: String?) -> String {
    guard let url else { return LocalStack.temporaryDatabasePath() }
    if url.contains("schema=") { return url }
    let schema = "bench_\(UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "").prefix(12))"
    return url + (url.contains("?") ? "&" : "?") + "schema=\(schema)"
}

/// Polls until every verification is final, printing progress each second; returns the counts.
func waitUntilFinal(
    _ store: any StorekeeperStore, total: Int, since started: ContinuousClock.Instant
) async throws
    -> [VerificationState: Int]
{
    var lastPrint = ContinuousClock.now
    while true {
        let counts = try await store.verificationCounts()
        if (counts[.verified] ?? 0) + (counts[.invalid] ?? 0) >= total { return counts }
        if lastPrint.duration(to: .now) > .seconds(1) {
            lastPrint = .now
            let states = counts.sorted { $0.key.rawValue < $1.key.rawValue }.map { "\($0.key.rawValue)=\($0.value)" }
            FileHandle.standardError.write(Data("[\(format(seconds(started.duration(to: .now))))s] \(states.joined(separator: " "))\n".utf8))
        }
        try await Task.sleep(for: .milliseconds(100))
    }
}

/// Posts every receipt with `concurrency` clients (user ids `prefix-lane-i`); returns each POST's latency.
func postAll(_ api: StorekeeperClient, _ receipts: [String], concurrency: Int, prefix: String) async throws -> [Double] {
    try await withThrowingTaskGroup(of: [Double].self) { group in
        let per = (receipts.count + concurrency - 1) / concurrency
        for lane in 0..<concurrency {
            let slice = Array(receipts.dropFirst(lane * per).prefix(per))
            group.addTask {
                var out: [Double] = []
                for (i, receipt) in slice.enumerated() {
                    let t = ContinuousClock.now
                    let reply = try await api.postReceipt(appUserId: "\(prefix)-\(lane)-\(i)", receipt: receipt)
                    out.append(seconds(t.duration(to: .now)))
                    guard reply.status == 202 else { throw ValidationError("POST answered \(reply.status): \(reply.text)") }
                }
                return out
            }
        }
        var all: [Double] = []
        for try await part in group { all += part }
        return all
    }
}

/// Receipts for `count` consumable purchases, each on a new simulated device, bought with
/// `concurrency` clients through the simulator's HTTP API (setup, never timed).
func buyConsumables(
    _ stack: LocalStack, count: Int, bundleId: String, environment: String, concurrency: Int
) async throws
    -> [String]
{
    try await buyConsumablePurchases(stack, count: count, bundleId: bundleId, environment: environment, concurrency: concurrency)
        .map(\.receipt)
}

/// `count` consumables, each bought on a new device (its own buyer), `concurrency` at a time,
/// in the order asked for.
func buyConsumablePurchases(
    _ stack: LocalStack, count: Int, bundleId: String, environment: String, concurrency: Int
) async throws -> [SimulatorClient.Purchase] {
    try await withThrowingTaskGroup(of: (Int, SimulatorClient.Purchase).self) { group in
        var purchases: [SimulatorClient.Purchase?] = Array(repeating: nil, count: count)
        for index in 0..<count {
            if index >= concurrency, let (done, purchase) = try await group.next() { purchases[done] = purchase }
            group.addTask {
                let device = try await stack.simulator.createDevice(bundleId: bundleId, environment: environment)
                return (index, try await stack.simulator.purchase(device: device, productId: "com.example.coins100"))
            }
        }
        for try await (done, purchase) in group { purchases[done] = purchase }
        return purchases.compactMap { $0 }
    }
}

func seconds(_ d: Duration) -> Double {
    Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
}

func format(_ x: Double) -> String { String(format: "%.1f", x) }

func report(_ name: String, count: Int, elapsed: Duration, latencies: [Double], extra: String) {
    let sorted = latencies.sorted()
    func pct(_ p: Double) -> Double { sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))] * 1000 }
    print(
        "\(name): \(count) requests in \(format(seconds(elapsed))) s = \(format(Double(count) / seconds(elapsed)))/s; p50 \(String(format: "%.2f", pct(0.5))) ms, p99 \(String(format: "%.2f", pct(0.99))) ms, max \(String(format: "%.2f", (sorted.last ?? 0) * 1000)) ms; \(extra)"
    )
}
