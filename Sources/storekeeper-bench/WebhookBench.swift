import ArgumentParser
import Foundation
import Persistence
import StorekeeperDomain
import StorekeeperServer
import StorekeeperTesting

extension Bench {
    struct Webhooks: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "webhooks",
            abstract: "Webhook deliveries per second to a fast local receiver (events recorded up front, then delivered by the workers).")
        @Option(help: "Events to deliver (one per app user, so none waits for another).") var events = 5_000
        @Option(help: "Delivery jobs in flight at once.") var workers = 256
        @Option(help: "postgres:// URL to measure PostgreSQL instead of SQLite (a fresh schema per run).") var database: String?

        func run() async throws {
            let receiver = try await WebhookReceiver.start()
            var configuration = LocalStack.testConfiguration(databasePath: benchDatabase(database))
            configuration.workers = workers
            // Events are recorded with no worker running; a second server on the same database
            // then delivers them, timed from its start.
            configuration.runWorkers = false
            let stack = try await LocalStack.start(configuration: configuration)
            let app = configuration.apps[0]
            let now = Date()
            let endpoint = WebhookEndpoint(
                id: "bench", appId: app.id, url: receiver.url,
                secrets: [.init(value: "whsec_" + Data(repeating: 7, count: 32).base64EncodedString(), createdAt: now)], createdAt: now,
                updatedAt: now)
            try await stack.store.createEndpoint(endpoint)
            let batchSize = 500
            for start in stride(from: 0, to: events, by: batchSize) {
                let batch = (start..<min(events, start + batchSize)).map { index in
                    SubscriberEvent(
                        id: "evt_bench_\(index)", type: .consumablePurchase, appId: app.id, environment: "sandbox", appUserId: "bench-\(index)",
                        productId: "com.example.coins100", occurredAt: now, recordedAt: now)
                }
                try await stack.store.recordEvents(EventBatch(events: batch), now: now)
            }
            var delivering = stack.configuration
            delivering.runWorkers = true
            let started = ContinuousClock.now
            let worker = try await stack.startAnotherServer(configuration: delivering)
            // Also timed from when the server is up (its start, migrations and seeding aside),
            // for the deliveries still to come then: short runs are otherwise mostly start-up.
            let ready = ContinuousClock.now
            let receivedAtReady = receiver.receivedCount
            // The receiver is polled (in memory) until it has every event, then the database
            // until every delivery is recorded: counting the deliveries table every few
            // milliseconds would scan it, and cost the delivery as much as it measures.
            while receiver.receivedCount < events { try await Task.sleep(for: .milliseconds(5)) }
            while (try await stack.store.deliveryCounts()[.delivered] ?? 0) < events {
                try await Task.sleep(for: .milliseconds(20))
            }
            let elapsed = started.duration(to: .now)
            let sinceReady = ready.duration(to: .now)
            let received = receiver.receivedCount
            try await worker.stop()
            try await stack.stop()
            await receiver.stop()
            print(
                "webhooks: \(events) deliveries in \(format(seconds(elapsed))) s = \(format(Double(events) / seconds(elapsed))) deliveries/s; once the server was up: \(events - receivedAtReady) in \(format(seconds(sinceReady))) s = \(format(Double(events - receivedAtReady) / seconds(sinceReady))) deliveries/s; workers \(workers), \(database == nil ? "sqlite" : "postgresql"); receiver saw \(received)"
            )
        }
    }
}
