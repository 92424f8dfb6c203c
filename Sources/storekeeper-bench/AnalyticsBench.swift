import AppStoreSimulator
import ArgumentParser
import Foundation
import JobQueue
import Persistence
import StorekeeperCore
import StorekeeperDomain
import StorekeeperServer
import StorekeeperTesting

extension Bench {
    /// Issue #28's ceiling: the console's overview and a customer page on a large history. The
    /// history is granted through the real grant path (submission, lease, `VerificationOutcomes`)
    /// without Apple: each customer a monthly subscription renewed `renewals` times, so the ledger
    /// holds customers × (renewals + 1) rows. Then each page is asked `requests` times over HTTP,
    /// signed in as an operator, and the latencies printed (docs/BENCHMARKS.md).
    struct Analytics: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "analytics",
            abstract: "The console's overview, the metrics API and a customer page, timed on a generated history of customers × renewals.")
        @Option(help: "Customers, each with one subscription.") var customers = 100_000
        @Option(help: "Renewals of each subscription (ledger rows: customers × (renewals + 1)).") var renewals = 9
        @Option(help: "postgres:// URL (default: an SQLite file).") var database: String?
        @Option(help: "Requests per page timed.") var requests = 20
        @Option(help: "Customers granted at once.") var concurrency = 8
        @Flag(help: "Build the kept figures on the first read after the history (timed) instead of keeping them with each grant.")
        var buildOnRead = false

        func run() async throws {
            var configuration = LocalStack.testConfiguration(databasePath: benchDatabase(database))
            configuration.runWorkers = false
            configuration.notificationGapFill.enabled = false
            let stack = try await LocalStack.start(configuration: configuration)
            let app = configuration.apps[0]
            let now = stack.clock.now()
            let month = 30.0 * 86_400
            // The oldest subscriptions began renewals + 1 months ago, spread over a month.
            let firstStart = now.addingTimeInterval(-Double(renewals + 1) * month)
            if !buildOnRead {
                // Built while the database is empty: from here each grant keeps them.
                _ = try await stack.store.metricReadout(appId: app.id, environment: "production", now: now, interval: .month)
            }
            var clock = ContinuousClock.now
            let granted = try await grant(stack.store, app: app, firstStart: firstStart, month: month, now: now)
            let grantSeconds = seconds(clock.duration(to: .now))
            let rows = try await stack.store.ledger(LedgerQuery(appId: app.id, environment: "production", from: .distantPast, to: .distantFuture))
                .count
            print(
                "generated: \(granted) customers, \(rows) ledger rows in \(format(grantSeconds)) s (\(format(Double(rows) / grantSeconds)) rows/s)")

            let browser = ConsoleBrowser(baseURL: stack.api.http.baseURL)
            guard try await browser.signIn(account: "", password: stack.api.adminKey).status == 303 else {
                throw ValidationError("the admin key did not sign in")
            }
            let first = ContinuousClock.now
            _ = try await stack.store.metricReadout(appId: app.id, environment: "production", now: now, interval: .month)
            print("first read of the kept figures\(buildOnRead ? " (builds them)" : ""): \(format(seconds(first.duration(to: .now)) * 1_000)) ms")
            for (name, path) in [
                ("overview", "/console/apps/\(app.id)"), ("metrics API", "/v1/admin/apps/\(app.id)/metrics/subscriptions"),
                ("revenue API", "/v1/admin/apps/\(app.id)/metrics/revenue?interval=month"),
                ("customer page", "/console/apps/\(app.id)/customers/customer-\(granted / 2)"),
            ] {
                var latencies: [Double] = []
                clock = .now
                for _ in 0..<requests {
                    let started = ContinuousClock.now
                    let reply = try await browser.get(path, headers: ["Authorization": "Bearer \(stack.api.adminKey)"])
                    guard reply.status == 200 else { throw ValidationError("\(path): \(reply.status) \(reply.text.prefix(300))") }
                    latencies.append(seconds(started.duration(to: .now)))
                }
                report(name, count: requests, elapsed: clock.duration(to: .now), latencies: latencies, extra: "\(rows) ledger rows")
            }
            try await browser.shutdown()
            try await stack.stop()
        }

        /// Every customer's subscription and its renewals, granted as one verified submission each:
        /// a batch submitted, its jobs leased, each completed with its customer's purchases.
        func grant(_ store: any StorekeeperStore, app: AppConfiguration, firstStart: Date, month: Double, now: Date) async throws -> Int {
            let submit = SubmitEvidence(store: store)
            let outcomes = VerificationOutcomes(store: store)
            let request = GrantRequest(appId: app.id, bundleId: app.bundleId, bindingPolicy: .refuse)
            let batch = 256
            var done = 0
            var reported = ContinuousClock.now
            for first in stride(from: 0, to: customers, by: batch) {
                let range = first..<min(first + batch, customers)
                var waiting: [String: (verification: String, customer: Int)] = [:]
                for customer in range {
                    let submitted = try await submit(
                        EvidenceSubmission(
                            appId: app.id, appUserId: "customer-\(customer)", evidenceHash: "bench-\(customer)",
                            evidence: .receipt(base64: "YmVuY2g="), refresh: false), now: now)
                    waiting[submitted.verification.jobId] = (submitted.verification.id, customer)
                }
                let leases = try await store.leaseJobs(
                    kinds: ["verify_receipt"], limit: range.count, owner: "bench", now: now, leaseDuration: 600)
                try await withThrowingTaskGroup(of: Void.self) { group in
                    var running = 0
                    for lease in leases {
                        guard let (verification, customer) = waiting[lease.jobId] else { continue }
                        if running >= concurrency {
                            try await group.next()
                            running -= 1
                        }
                        running += 1
                        group.addTask {
                            _ = try await outcomes.completeVerified(
                                lease, verificationId: verification, evidence: evidence(customer, app: app, firstStart: firstStart, month: month),
                                report: AttemptReport(statuses: [0], environment: "production", reason: nil), request: request, now: now)
                        }
                    }
                    try await group.waitForAll()
                }
                done = range.upperBound
                if reported.duration(to: .now) > .seconds(5) {
                    reported = .now
                    FileHandle.standardError.write(Data("granted \(done) of \(customers)\n".utf8))
                }
            }
            return done
        }

        /// A customer's monthly subscription from its start, renewed `renewals` times, at 4.99 USD.
        func evidence(_ customer: Int, app: AppConfiguration, firstStart: Date, month: Double) -> PurchaseEvidence {
            let start = firstStart.addingTimeInterval(Double(customer % 30) * 86_400)
            let purchases = (0...renewals).map { k -> PurchaseEvidence.Purchase in
                let bought = start.addingTimeInterval(Double(k) * month)
                var purchase = PurchaseEvidence.Purchase(
                    transactionId: "\(customer)-\(k)", originalTransactionId: "\(customer)-0", productId: "com.example.pro.monthly",
                    purchaseDate: bought)
                purchase.expiresDate = bought.addingTimeInterval(month)
                purchase.price = ChargedPrice(milliunits: 4_990, currency: "USD")
                return purchase
            }
            return PurchaseEvidence(source: .signedTransaction, bundleId: app.bundleId, environment: "production", purchases: purchases)
        }

    }
}
