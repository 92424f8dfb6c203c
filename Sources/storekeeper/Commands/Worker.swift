import ArgumentParser
import Configuration
import Foundation
import JobQueue
import Logging
import ServiceLifecycle
import StorekeeperServer

struct Worker: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run verification workers only, no HTTP: scale them apart from `serve --no-workers` on one PostgreSQL database.")

    @Option(help: "JSON configuration file (also STOREKEEPER_CONFIG).") var config: String?
    @Option(help: "postgres://user@host:port/database URL (or an SQLite file shared with a server on this machine).") var database: String?
    @Option(help: "Verification jobs run at once in this process.") var workers: Int?
    @Option(help: "trace, debug, info, notice, warning, error, critical.") var logLevel = "info"

    func run() async throws {
        let logger = LogSetup.bootstrap(level: logLevel)
        var flags: [String: ConfigContent] = ["runWorkers": .bool(true)]
        if let database { flags["databasePath"] = .string(database) }
        if let workers { flags["workers"] = .int(workers) }
        let configuration = try CommandConfigurationLoading.load(file: config, flags: flags)
        let backend = try CommandConfigurationLoading.openDatabase(configuration: configuration, logger: logger)
        let httpClient = StorekeeperApplication.makeHTTPClient(configuration: configuration)
        let calls = AppleCallRecorder()
        var services = backend.services
        // Before the runner: services stop in reverse order, so its last flush follows the runner's last call.
        services.append(StorekeeperApplication.makeAppleCallFlusher(recorder: calls, store: backend.store, logger: logger))
        services.append(
            DeferredService {
                try await CommandConfigurationLoading.prepareDatabase(backend)
                try await StorekeeperApplication.prepareStorage(configuration: configuration, store: backend.store, logger: logger)
                logger.info(
                    "worker ready", metadata: ["database": "\(backend.description)", "concurrency": "\(configuration.workers)"])
                return try StorekeeperApplication.makeRunner(
                    configuration: configuration, store: backend.store, httpClient: httpClient, logger: logger, calls: calls)
            })
        if let listener = backend.makeListener(wakesRunners: true, answersHTTP: false, logger: logger) { services.append(listener) }
        if let gapFill = try StorekeeperApplication.makeGapFillService(
            configuration: configuration, store: backend.store, httpClient: httpClient, logger: logger)
        {
            services.append(gapFill)
        }
        // First in the group, so it stops last and flushes the others' spans.
        if let traces = try TraceExport.service(serviceName: "storekeeper-worker") { services.insert(traces, at: 0) }
        try await CommandConfigurationLoading.runGroup(services, httpClient: httpClient, logger: logger)
    }
}
