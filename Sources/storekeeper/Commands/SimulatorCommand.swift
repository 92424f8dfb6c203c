import AppStoreSimulator
import ArgumentParser
import Foundation
import Logging
import ServiceLifecycle
import SimulatorSetup
import StorekeeperServer
import UnixSignals

struct SimulatorCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "simulator", abstract: "Run the App Store simulator alone (verifyReceipt + /sim test API).")

    @Option(help: "Listen address.") var host = "127.0.0.1"
    @Option(help: "Listen port.") var port = 8090
    @Option(help: "Simulator JSON configuration (apps, faults, secondsPerMonth).") var config: String?
    @Option(help: "Injected verifyReceipt latency in ms, e.g. 3000-6000.") var latency: String?
    @Option(help: "Seconds one subscription month lasts.") var secondsPerMonth: Double?
    @Option var logLevel = "info"
    @Option(help: "Without --config: write each demo app's In-App Purchase key (SubscriptionKey_<id>.p8) and keys.json into this directory.")
    var exportKeys: String?

    func run() async throws {
        let logger = LogSetup.bootstrap(level: logLevel)
        var configuration = SimulatorConfiguration()
        if let config {
            guard let data = FileManager.default.contents(atPath: config) else { throw ValidationError("cannot read \(config)") }
            let decoder = JSONDecoder()
            decoder.dateDecodingStrategy = .iso8601
            configuration = try decoder.decode(SimulatorConfiguration.self, from: data)
        } else {
            // The demo apps, each with an In-App Purchase key this run generates: without one,
            // every Server API call would be refused (401).
            var apps = DemoConfiguration.configuration().apps
            SimulatorKeyExport.generateMissing(&apps)
            configuration.apps = apps.map(SimulatedApp.init)
            if let exportKeys {
                let written = try SimulatorKeyExport.write(apps, to: exportKeys)
                logger.notice(
                    "In-App Purchase keys written",
                    metadata: ["directory": "\(exportKeys)", "keys": "\(written.map(\.keyId).joined(separator: ", "))"])
            } else {
                logger.notice("each app has an In-App Purchase key for this run; --export-keys DIR writes them for your own tools")
            }
        }
        configuration.host = host
        configuration.port = port
        if let secondsPerMonth { configuration.secondsPerMonth = secondsPerMonth }
        if let latency {
            let parts = latency.split(separator: "-").compactMap { Int($0) }
            guard let low = parts.first, parts.count <= 2 else { throw ValidationError("latency: expected MS or MIN-MAX") }
            configuration.faults.latencyMinMs = low
            configuration.faults.latencyMaxMs = parts.last ?? low
        }
        let server = try SimulatorServer(configuration: configuration)
        let settings = configuration
        let app = server.makeApplication(logger: logger) { port in
            logger.info(
                "App Store simulator listening",
                metadata: [
                    "production": "http://\(settings.host):\(port)/verifyReceipt",
                    "sandbox": "http://\(settings.host):\(port)/sandbox/verifyReceipt",
                    "apps": "\(settings.apps.map { $0.bundleId }.joined(separator: ", "))",
                ])
        }
        let sender = NotificationSender(store: server.store, logger: logger)
        let group = ServiceGroup(services: [app, sender], gracefulShutdownSignals: [.sigterm, .sigint], cancellationSignals: [], logger: logger)
        try await group.run()
    }
}
