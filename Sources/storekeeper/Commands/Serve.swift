import AppStoreClient
import AppStoreSimulator
import ArgumentParser
import AsyncHTTPClient
import Foundation
import Logging
import ServiceLifecycle
import StorageSQLite
import StorekeeperServer
import StorekeeperTesting
import UnixSignals

struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run the HTTP API and the verification workers (SQLite by default).")

    @Option(help: "JSON configuration file (also STOREKEEPER_CONFIG).") var config: String?
    @Flag(help: "Embed the App Store simulator and point both Apple endpoints at it.") var simulator = false
    @Option(help: "Port of the embedded simulator.") var simulatorPort = 8090
    @Option(help: "SQLite database file.") var database: String?
    @Option(help: "Listen address.") var host: String?
    @Option(help: "Listen port.") var port: Int?
    @Option(help: "Verification jobs run at once.") var workers: Int?
    @Flag(help: "Serve the API without running verification workers.") var noWorkers = false
    @Option(help: "trace, debug, info, notice, warning, error, critical.") var logLevel = "info"

    func run() async throws {
        let logger = LogSetup.bootstrap(level: logLevel)
        let loader = ConfigurationLoader()
        let useDemo = simulator && config == nil && loader.environment["STOREKEEPER_CONFIG"] == nil
        var configuration: StorekeeperConfiguration
        do {
            configuration = try loader.load(file: config, base: useDemo ? DemoConfiguration.configuration() : .init()) { c in
                if let database { c.databasePath = database }
                if let host { c.host = host }
                if let port { c.port = port }
                if let workers { c.workers = workers }
                if noWorkers { c.runWorkers = false }
                if simulator {
                    c.appleEndpoints = VerifyReceiptEndpoints(
                        production: "http://127.0.0.1:\(simulatorPort)/verifyReceipt",
                        sandbox: "http://127.0.0.1:\(simulatorPort)/sandbox/verifyReceipt")
                }
            }
        } catch let failure as ConfigurationLoader.Failure {
            throw ValidationError(failure.description)
        }
        if useDemo {
            // Keys are never logged, demo ones included: the README lists them.
            logger.warning("using the built-in demo configuration with the demo keys from the README; never in production")
        }

        let store = try SQLiteStore(
            configuration: {
                var c = SQLiteStore.Configuration(path: configuration.databasePath)
                c.synchronousFull = configuration.sqliteSynchronousFull
                return c
            }())
        try store.migrate()
        let absolute = URL(fileURLWithPath: configuration.databasePath).standardizedFileURL.path
        logger.info("database ready", metadata: ["sqlite": "\(absolute)"])

        var services: [any Service] = []
        if simulator {
            var simConfiguration = SimulatorConfiguration()
            simConfiguration.port = simulatorPort
            simConfiguration.apps = configuration.apps.map(SimulatedApp.init)
            let sim = try SimulatorServer(configuration: simConfiguration)
            // The simulator signs receipts with its own CA: trust it, and only it besides Apple.
            configuration.receiptTrust.extraRootsPEM.append(try sim.store.pki.rootPEM())
            services.append(
                sim.makeApplication(logger: Logger(label: "simulator")) { port in
                    logger.info("App Store simulator listening", metadata: ["address": "http://127.0.0.1:\(port)/sim"])
                })
        }
        let httpClient = StorekeeperApplication.makeHTTPClient(configuration: configuration)
        let app = try await StorekeeperApplication.build(
            configuration: configuration, store: store, httpClient: httpClient, logger: logger)
        services.append(app)
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
