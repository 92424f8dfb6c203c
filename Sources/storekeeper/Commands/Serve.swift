import AppStoreClient
import AppStoreSimulator
import ArgumentParser
import AsyncHTTPClient
import Configuration
import Foundation
import JobQueue
import Logging
import ServiceLifecycle
import SimulatorSetup
import StorekeeperServer
import UnixSignals

struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run the HTTP API and the verification workers (SQLite by default, or PostgreSQL).")

    @Option(help: "JSON configuration file (also STOREKEEPER_CONFIG).") var config: String?
    @Flag(help: "Embed the App Store simulator and point both Apple endpoints at it.") var simulator = false
    @Option(help: "Port of the embedded simulator.") var simulatorPort = 8090
    @Option(help: "With --simulator: write each app's In-App Purchase key (SubscriptionKey_<id>.p8) and keys.json into this directory.")
    var exportKeys: String?
    @Option(help: "SQLite database file, or postgres://user@host:port/database URL.") var database: String?
    @Option(help: "Listen address.") var host: String?
    @Option(help: "Listen port.") var port: Int?
    @Option(help: "Verification jobs run at once.") var workers: Int?
    @Flag(help: "Serve the API without running verification workers (run `storekeeper worker` elsewhere).") var noWorkers = false
    @Option(help: "trace, debug, info, notice, warning, error, critical.") var logLevel = "info"
    @Flag(help: "Let webhook endpoints point at loopback and private addresses (a receiver on this machine or your own network).")
    var allowPrivateWebhooks = false

    func run() async throws {
        let logger = LogSetup.bootstrap(level: logLevel)
        let loader = ConfigurationLoader()
        let useDemo = simulator && config == nil && loader.environment["STOREKEEPER_CONFIG"] == nil
        var flags: [String: ConfigContent] = [:]
        if let database { flags["databasePath"] = .string(database) }
        if let host { flags["host"] = .string(host) }
        if let port { flags["port"] = .int(port) }
        if let workers { flags["workers"] = .int(workers) }
        if noWorkers { flags["runWorkers"] = .bool(false) }
        if allowPrivateWebhooks { flags["webhooks.allowPrivateDestinations"] = .bool(true) }
        var configuration = try CommandConfigurationLoading.load(
            loader: loader, file: config, base: useDemo ? DemoConfiguration.configuration() : .init(), flags: flags
        ) { c in
            if simulator {
                c.appleEndpoints = VerifyReceiptEndpoints(
                    production: "http://127.0.0.1:\(simulatorPort)/verifyReceipt",
                    sandbox: "http://127.0.0.1:\(simulatorPort)/sandbox/verifyReceipt")
                c.serverAPIEndpoints = ServerAPIEndpoints(
                    production: "http://127.0.0.1:\(simulatorPort)", sandbox: "http://127.0.0.1:\(simulatorPort)/sandbox-api")
                if c.receiptTrust.revocation.mode != .off, c.receiptTrust.revocation.responderOverride == nil {
                    c.receiptTrust.revocation.responderOverride = "http://127.0.0.1:\(simulatorPort)/ocsp"
                }
                // The simulator's App Store Connect issues a key per app for this run.
                SimulatorKeyExport.generateMissing(&c.apps)
            }
        }
        if useDemo {
            // Keys are never logged, demo ones included: the README lists them.
            logger.warning("using the built-in demo configuration with the demo keys from the README; never in production")
        }

        try StartupCheck.portIsFree(host: configuration.host, port: configuration.port, what: "the API")
        if simulator { try StartupCheck.portIsFree(host: "127.0.0.1", port: simulatorPort, what: "the simulator") }
        let backend = try CommandConfigurationLoading.openDatabase(configuration: configuration, logger: logger)
        var services: [any Service] = backend.services
        if simulator {
            var simConfiguration = SimulatorConfiguration()
            simConfiguration.port = simulatorPort
            let notificationHost = configuration.host == "0.0.0.0" ? "127.0.0.1" : configuration.host
            simConfiguration.apps = configuration.apps.map { app in
                var simulated = SimulatedApp(app)
                // Notifications V2 go to this server, as App Store Connect would be set up.
                simulated.notificationURL = "http://\(notificationHost):\(configuration.port)/v1/notifications/appstore"
                return simulated
            }
            let sim = try SimulatorServer(configuration: simConfiguration)
            if let exportKeys {
                let written = try SimulatorKeyExport.write(configuration.apps, to: exportKeys)
                logger.notice(
                    "the simulator's In-App Purchase keys written (they sign calls to the simulator only)",
                    metadata: ["directory": "\(exportKeys)", "keys": "\(written.map { "\($0.bundleId): \($0.keyId)" }.joined(separator: ", "))"])
            }
            services.append(NotificationSender(store: sim.store, logger: Logger(label: "simulator.notifications")))
            // The simulator signs receipts with its own CA: trust it, and only it besides Apple.
            configuration.receiptTrust.extraRootsPEM.append(try sim.store.pki.rootPEM())
            services.append(
                sim.makeApplication(logger: Logger(label: "simulator")) { port in
                    logger.info("App Store simulator listening", metadata: ["address": "http://127.0.0.1:\(port)/sim"])
                })
        }
        let httpClient = StorekeeperApplication.makeHTTPClient(configuration: configuration)
        let metrics = MetricsRegistry()
        metrics.bootstrapProcess()
        let listener = backend.makeListener(wakesRunners: configuration.runWorkers, answersHTTP: true, logger: logger)
        let ready = configuration
        services.append(
            DeferredService {
                try await CommandConfigurationLoading.prepareDatabase(backend)
                logger.info("database ready", metadata: ["database": "\(backend.description)"])
                return try await StorekeeperApplication.build(
                    configuration: ready, store: backend.store, httpClient: httpClient, logger: logger,
                    extraServices: listener.map { [$0] } ?? [], metrics: metrics)
            })
        // First in the group, so it stops last and flushes the others' spans.
        if let traces = try TraceExport.service(serviceName: "storekeeper") { services.insert(traces, at: 0) }
        try await CommandConfigurationLoading.runGroup(services, httpClient: httpClient, logger: logger)
    }
}

/// What `serve` and `worker` share: configuration errors as usage errors, and a service group
/// stopped by SIGTERM or SIGINT that closes the HTTP client however it ends.
enum CommandConfigurationLoading {
    static func load(
        loader: ConfigurationLoader = ConfigurationLoader(), file: String?, base: StorekeeperConfiguration = .init(),
        flags: [String: ConfigContent], overrides: (inout StorekeeperConfiguration) -> Void = { _ in }
    ) throws -> StorekeeperConfiguration {
        do {
            return try loader.load(file: file, base: base, flags: flags, overrides: overrides)
        } catch let failure as ConfigurationLoader.Failure {
            throw StartupFailure(description: "invalid configuration: \(failure.problems.joined(separator: "; "))")
        }
    }

    /// Opens the database, or fails with one line naming it (missing directory, unreadable
    /// file, not a database).
    static func openDatabase(configuration: StorekeeperConfiguration, logger: Logger) throws -> StorageBackend {
        do {
            return try StorageBackend.open(configuration: configuration, logger: logger)
        } catch {
            throw StartupFailure(description: "cannot open the database '\(configuration.databasePath)': \(error)")
        }
    }

    /// Migrates, or fails with one line (the file is not a database, the server refused us).
    static func prepareDatabase(_ backend: StorageBackend) async throws {
        do {
            try await backend.prepare()
        } catch {
            throw StartupFailure(description: "cannot prepare the database \(backend.description): \(error)")
        }
    }

    static func runGroup(_ services: [any Service], httpClient: HTTPClient, logger: Logger) async throws {
        let group = ServiceGroup(services: services, gracefulShutdownSignals: [.sigterm, .sigint], cancellationSignals: [], logger: logger)
        do {
            try await group.run()
        } catch {
            try? await httpClient.shutdown()
            throw error
        }
        try await httpClient.shutdown()
    }
}
