import AppStoreSimulator
import ArgumentParser
import Foundation
import JobQueue
import NIOHTTP1
import Persistence
import StorekeeperDomain
import StorekeeperServer
import StorekeeperTesting
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

extension Bench {
    /// The deployment of docs/DEPLOYMENT.md under load and faults: HAProxy in front of two
    /// `storekeeper serve --no-workers`, two `storekeeper worker`, one PostgreSQL; one API process
    /// and one worker killed with SIGKILL, then PostgreSQL stopped with `pg_ctl -m immediate` and
    /// started again. `scripts/cluster.sh` runs it on a throwaway cluster (CI runs it short).
    struct Cluster: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "cluster",
            abstract:
                "The cluster trial: HAProxy, 2 API + 2 worker processes, kill -9 of one of each and an immediate PostgreSQL restart under load; checks nothing is lost, doubled or owned by the wrong user."
        )
        @Option(help: "postgres:// URL of a cluster this trial may stop and start (a fresh schema per run).") var database: String
        @Option(help: "The state file `scripts/postgres.sh start` wrote (data directory, binaries).") var postgresState: String
        @Option(help: "The HAProxy executable.") var haproxy = "/usr/sbin/haproxy"
        @Option(help: "HAProxy's configuration (the addresses come from the environment).") var haproxyConfiguration = "deploy/haproxy/haproxy.cfg"
        @Option(help: "Purchases (one receipt each, one buyer each) posted through HAProxy.") var receipts = 600
        @Option(help: "Receipts posted per second (paced, so the faults fall under load).") var rate = 40.0
        @Option(help: "Concurrent HTTP clients.") var concurrency = 16
        @Option(help: "Simulator latency in ms, MIN-MAX.") var latency = "200-800"
        @Option(help: "Seconds PostgreSQL stays stopped.") var downSeconds = 3.0
        @Option(help: "Directory for the processes' logs and HAProxy's configuration (kept).") var directory: String?
        @Flag(
            help:
                "Also fail when an answer took over 1 s while PostgreSQL was down, or the last verification was final over 30 s after it returned (the aims; a benchmark's judgement, so off in CI, where the machine may be busy)."
        )
        var checkTiming = false

        func run() async throws {
            let bounds = latency.split(separator: "-").compactMap { Int($0) }
            guard let low = bounds.first else { throw ValidationError("latency: MIN-MAX in ms") }
            let postgres = try PostgresControl(stateFile: postgresState)
            let work = URL(
                fileURLWithPath: directory
                    ?? FileManager.default.temporaryDirectory.appendingPathComponent("storekeeper-cluster-\(UUID().uuidString)").path)
            try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)

            var configuration = LocalStack.testConfiguration(databasePath: benchDatabase(database))
            configuration.runWorkers = false
            configuration.workers = 200
            // A killed worker's jobs are taken up once its leases expire: short here so the trial
            // is short; the lease stays above three attempt timeouts, as the configuration requires.
            configuration.attemptTimeoutSeconds = 4
            configuration.leaseSeconds = 15
            configuration.retry = RetryPolicy(base: 0.5, cap: 3, jitter: 0.3)
            var simulator = LocalStack.simulatorConfiguration(for: configuration, secondsPerMonth: 86_400)
            simulator.faults = .none
            let stack = try await LocalStack.start(configuration: configuration, simulator: simulator, startServer: false)
            let app = configuration.apps[0]
            let purchases = try await buyConsumablePurchases(
                stack, count: receipts, bundleId: app.bundleId, environment: "production", concurrency: concurrency)
            simulator.faults.latencyMinMs = low
            simulator.faults.latencyMaxMs = bounds.last ?? low
            try await stack.simulator.setFaults(simulator.faults)

            var server = try ServerProcesses(configuration: stack.configuration, label: "cluster", directory: work)
            let apis = [try await server.serve("api-1", extra: ["--no-workers"]), try await server.serve("api-2", extra: ["--no-workers"])]
            let workers = [try await server.worker("worker-1"), try await server.worker("worker-2")]
            let balancer = try await LoadBalancer.start(
                executable: haproxy, configuration: haproxyConfiguration, backends: apis.map(\.baseURL), directory: work
            ) { url in
                (try? await HTTPJSONClient(httpClient: stack.httpClient, baseURL: url).send(.GET, "/healthz", timeout: 2).status) == 200
            }
            defer {
                balancer.process.send(SIGTERM)
                _ = balancer.process.waitUntilExit()
                server.stop()
            }
            let client = StorekeeperClient(
                http: HTTPJSONClient(httpClient: stack.httpClient, baseURL: balancer.baseURL), apiKey: stack.api.apiKey,
                adminKey: stack.api.adminKey)
            say("cluster: HAProxy at \(balancer.baseURL) → \(apis.map(\.baseURL).joined(separator: ", ")); logs in \(work.path)")

            // The load, paced, and the faults at fixed shares of it.
            let tally = Tally()
            let started = ContinuousClock.now
            let interval = 1 / rate
            func at(_ share: Double) -> ContinuousClock.Instant { started + .seconds(Double(receipts) * share * interval) }
            async let posted: Void = post(purchases, client: client, tally: tally, started: started, interval: interval)
            try await sleep(until: at(0.2))
            apis[0].killNine()
            say("cluster: api-1 killed (SIGKILL) at \(format(seconds(started.duration(to: .now)))) s")
            try await sleep(until: at(0.35))
            workers[0].killNine()
            say("cluster: worker-1 killed (SIGKILL) at \(format(seconds(started.duration(to: .now)))) s")
            try await sleep(until: at(0.5))
            try postgres.stopImmediately()
            tally.databaseDown(true)
            say("cluster: PostgreSQL stopped (-m immediate) at \(format(seconds(started.duration(to: .now)))) s")
            try await Task.sleep(for: .seconds(downSeconds))
            tally.databaseDown(false)
            try postgres.start()
            let returned = ContinuousClock.now
            say("cluster: PostgreSQL started again at \(format(seconds(started.duration(to: .now)))) s")
            try await posted

            // Every accepted receipt final, then the books.
            var final = try await stack.store.verificationCounts()
            while (final[.verified] ?? 0) + (final[.invalid] ?? 0) < receipts, returned.duration(to: .now) < .seconds(300) {
                try await Task.sleep(for: .milliseconds(200))
                final = try await stack.store.verificationCounts()
            }
            let finalAfter = seconds(returned.duration(to: .now))
            var problems: [String] = []
            let total = final.values.reduce(0, +)
            if total != receipts || final[.verified] != receipts {
                problems.append("verifications \(final.map { "\($0.key.rawValue)=\($0.value)" }.sorted()) for \(receipts) receipts")
            }
            if checkTiming, finalAfter > 30 {
                problems.append("the last verification was final \(format(finalAfter)) s after PostgreSQL returned (aim ≤ 30 s)")
            }
            let granted = try await stack.store.countTransactions(appId: app.id)
            if granted != receipts { problems.append("\(granted) transactions granted for \(receipts) purchases") }
            let ledger = try await stack.store.ledger(LedgerQuery(appId: app.id, environment: "production", from: .distantPast, to: .distantFuture))
            let booked = ledger.filter { $0.event == .purchase }.map(\.transactionId)
            if booked.count != receipts || Set(booked).count != receipts {
                problems.append("\(booked.count) purchases booked (\(Set(booked).count) distinct) for \(receipts)")
            }
            var wrongOwner = 0
            for (index, purchase) in purchases.enumerated() {
                let view = try await client.subscriber(Self.buyer(index))
                if view.consumables.map(\.transactionId) != [purchase.transactionId] { wrongOwner += 1 }
            }
            if wrongOwner > 0 { problems.append("\(wrongOwner) buyers do not own exactly their purchase") }
            let report = tally.report(checkTiming: checkTiming)
            problems += report.problems
            say("cluster: \(report.summary)")
            say(
                "cluster: \(receipts) receipts: verified \(final[.verified] ?? 0), invalid \(final[.invalid] ?? 0); granted \(granted), booked \(booked.count); wrong owner \(wrongOwner); all final \(format(finalAfter)) s after PostgreSQL returned"
            )
            try await stack.stop()
            guard problems.isEmpty else {
                throw ValidationError("cluster trial failed (logs in \(work.path)):\n- " + problems.joined(separator: "\n- "))
            }
            say("cluster: 0 lost, 0 doubled, 0 wrong owner")
        }

        static func buyer(_ index: Int) -> String { "cluster-\(index)" }

        /// Posts each receipt for its buyer at its turn, until an answer says it was accepted (202,
        /// or 200 when already final): a client that honours `Retry-After` (at most 1 s here, to
        /// keep the trial short) and tries again after a connection the balancer could not serve.
        func post(
            _ purchases: [SimulatorClient.Purchase], client: StorekeeperClient, tally: Tally, started: ContinuousClock.Instant,
            interval: Double
        ) async throws {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for lane in 0..<concurrency {
                    group.addTask {
                        for index in stride(from: lane, to: purchases.count, by: concurrency) {
                            try await sleep(until: started + .seconds(Double(index) * interval))
                            while true {
                                let down = tally.isDatabaseDown
                                let sent = ContinuousClock.now
                                let reply: HTTPJSONClient.Reply?
                                do {
                                    reply = try await client.postReceipt(appUserId: Self.buyer(index), receipt: purchases[index].receipt)
                                } catch {
                                    reply = nil
                                }
                                let took = seconds(sent.duration(to: .now))
                                let retryAfter = reply?.headers["retry-after"].flatMap(Double.init)
                                tally.answer(status: reply?.status, retryAfter: retryAfter, seconds: took, databaseDown: down || tally.isDatabaseDown)
                                if let status = reply?.status, status == 200 || status == 202 { break }
                                if let status = reply?.status, (400..<500).contains(status) {
                                    throw ValidationError("receipt \(index) refused with \(status): \(reply?.text ?? "")")
                                }
                                try await Task.sleep(for: .seconds(min(retryAfter ?? 0.2, 1)))
                            }
                        }
                    }
                }
                try await group.waitForAll()
            }
        }
    }
}

/// A line on standard output at once (`print` buffers when the output is a file).
private func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

private func sleep(until instant: ContinuousClock.Instant) async throws {
    try await Task.sleep(until: instant, clock: .continuous)
}

/// What the clients saw: answers by status, and while the database was down, whether each
/// came within a second and said when to try again.
final class Tally: Sendable {
    private struct State {
        var statuses: [String: Int] = [:]
        var down = false
        var downAnswers = 0
        var downSlowest = 0.0
        var downWithoutRetryAfter = 0
        var serverErrors = 0
        var downUnanswered = 0
    }
    private let state = Mutex(State())

    var isDatabaseDown: Bool { state.withLock { $0.down } }
    func databaseDown(_ down: Bool) { state.withLock { $0.down = down } }

    func answer(status: Int?, retryAfter: Double?, seconds: Double, databaseDown: Bool) {
        state.withLock { state in
            state.statuses[status.map(String.init) ?? "no answer", default: 0] += 1
            // 502/504: the balancer's own, for a request the killed process held. 500: ours.
            if status == 500 { state.serverErrors += 1 }
            guard databaseDown else { return }
            state.downAnswers += 1
            state.downSlowest = max(state.downSlowest, seconds)
            // The client waits a minute: unanswered then is a hang, not a slow answer.
            if status == nil { state.downUnanswered += 1 }
            if status == 503, retryAfter == nil { state.downWithoutRetryAfter += 1 }
        }
    }

    func report(checkTiming: Bool) -> (summary: String, problems: [String]) {
        state.withLock { state in
            var problems: [String] = []
            if state.serverErrors > 0 { problems.append("\(state.serverErrors) answers were 500") }
            if state.downUnanswered > 0 { problems.append("\(state.downUnanswered) requests sent while PostgreSQL was down got no answer") }
            if state.downAnswers == 0 { problems.append("no request was answered while PostgreSQL was down") }
            if checkTiming, state.downSlowest > 1 {
                problems.append("an answer took \(format(state.downSlowest)) s while PostgreSQL was down (aim ≤ 1 s)")
            }
            if state.downWithoutRetryAfter > 0 { problems.append("\(state.downWithoutRetryAfter) 503s without Retry-After") }
            let statuses = state.statuses.sorted { $0.key < $1.key }.map { "\($0.key) ×\($0.value)" }.joined(separator: ", ")
            return (
                "answers \(statuses); while PostgreSQL was down: \(state.downAnswers) answers, slowest \(String(format: "%.3f", state.downSlowest)) s, \(state.downWithoutRetryAfter) 503s without Retry-After",
                problems
            )
        }
    }
}
