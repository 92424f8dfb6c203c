import AppStoreClient
import AppStoreCrypto
import AppStoreSimulator
import ArgumentParser
import AsyncHTTPClient
import Configuration
import Crypto
import Foundation
import JobQueue
import Logging
import Persistence
import ServiceLifecycle
import StoragePostgres
import StorekeeperCore
import StorekeeperDomain
import StorekeeperServer

struct Verify: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Send one receipt file through the verification pipeline and print the result.")

    @Argument(help: "File holding a base64 app receipt (or the raw receipt bytes).") var receiptFile: String
    @Option(help: "JSON configuration file (also STOREKEEPER_CONFIG).") var config: String?
    @Option(help: "App id from the configuration (default: the only app).") var app: String?
    @Option(help: "App user id the receipt belongs to.") var user = "cli"
    @Option(help: "SQLite database file, or postgres:// URL.") var database: String?
    @Option(help: "Give up waiting after this many seconds (the verification stays queued).") var timeout: Double = 300
    @Flag(help: "Verify again even if this receipt was verified before.") var refresh = false
    @Option var logLevel = "warning"

    func run() async throws {
        let logger = LogSetup.bootstrap(level: logLevel)
        let configuration: StorekeeperConfiguration
        do {
            var flags: [String: ConfigContent] = ["runWorkers": .bool(true)]
            if let database { flags["databasePath"] = .string(database) }
            configuration = try ConfigurationLoader().load(file: config, flags: flags)
        } catch let failure as ConfigurationLoader.Failure {
            throw ValidationError(failure.description)
        }
        guard
            let chosen = app.flatMap({ id in configuration.apps.first { $0.id == id } })
                ?? (configuration.apps.count == 1 ? configuration.apps.first : nil)
        else { throw ValidationError("--app is required: configured apps are \(configuration.apps.map(\.id).joined(separator: ", "))") }
        guard let raw = FileManager.default.contents(atPath: receiptFile) else { throw ValidationError("cannot read \(receiptFile)") }
        let text = String(decoding: raw, as: UTF8.self).filter { !$0.isWhitespace }
        let bytes = Data(base64Encoded: text) ?? raw
        let base64 = bytes.base64EncodedString()

        let backend = try StorageBackend.open(configuration: configuration, logger: logger)
        let final: VerificationRecord? = try await backend.whileRunning {
            try await backend.prepare()
            let store = backend.store
            try await store.seedProducts(appId: chosen.id, products: chosen.products, now: Date())
            try await store.seedEntitlements(appId: chosen.id, definitions: chosen.entitlements, now: Date())
            let hash = sha256Hex(bytes)
            let submitted = try await SubmitEvidence(store: store)(
                EvidenceSubmission(appId: chosen.id, appUserId: user, evidenceHash: hash, evidence: .receipt(base64: base64), refresh: refresh),
                now: Date())
            print("verification \(submitted.verification.id) \(submitted.created ? "queued" : "already known") for app \(chosen.id), user \(user)")
            print("apple: \(configuration.appleEndpoints.production) (sandbox \(configuration.appleEndpoints.sandbox))")

            let httpClient = StorekeeperApplication.makeHTTPClient(configuration: configuration)
            let runner = try StorekeeperApplication.makeRunner(configuration: configuration, store: store, httpClient: httpClient, logger: logger)
            let started = Date()
            let final: VerificationRecord? = try await withThrowingTaskGroup(of: VerificationRecord?.self) { group in
                group.addTask {
                    try await runner.run()
                    return nil
                }
                group.addTask {
                    var last = ""
                    while Date().timeIntervalSince(started) < timeout {
                        guard let v = try await store.verification(id: submitted.verification.id) else { return nil }
                        let elapsed = String(format: "%.1f", Date().timeIntervalSince(started))
                        var line = "[\(elapsed)s] \(v.state.rawValue), attempts \(v.attempts)"
                        if let reason = v.reason { line += ", reason \(reason)" }
                        if v.state == .retryScheduled, let next = v.nextAttemptAt {
                            line += ", next attempt in \(String(format: "%.1f", max(0, next.timeIntervalSinceNow)))s"
                        }
                        if line != last || Int(Date().timeIntervalSince(started) * 2) % 10 == 0 {
                            FileHandle.standardError.write(Data((line + "\n").utf8))
                            last = line
                        }
                        if v.state.isFinal || v.state == .configurationError { return v }
                        try await Task.sleep(for: .milliseconds(500))
                    }
                    return try await store.verification(id: submitted.verification.id)
                }
                let result = try await group.next() ?? nil
                group.cancelAll()
                return result
            }
            try await httpClient.shutdown()
            return final
        }
        guard let final else { throw ExitCode(2) }
        let encoder = StorekeeperJSON.makeEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        print(String(decoding: try encoder.encode(final), as: UTF8.self))
        switch final.state {
        case .verified: return
        case .invalid: throw ExitCode(1)
        default: throw ExitCode(2)
        }
    }
}
