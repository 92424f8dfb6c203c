import AppStoreModels
import Foundation
import Synchronization

/// What an app configured through Apple's Retention Messaging API, per environment: images,
/// messages, default messages, the realtime URL, and the performance tests run against it.
/// Apple reviews what is uploaded; the simulator approves at once (`/sim/retention/review`
/// sets another state, to see a rejection's effect).
final class RetentionConfigurationState: Sendable {
    struct Image: Sendable {
        var size: RetentionImageSize
        var state: RetentionReviewState
    }

    struct Message: Sendable {
        var body: UploadRetentionMessage
        var state: RetentionReviewState
    }

    /// One app in one environment.
    struct Space: Sendable {
        var images: [String: Image] = [:]
        var messages: [String: Message] = [:]
        /// `productId|locale` → message identifier.
        var defaults: [String: String] = [:]
        /// Set through Configure Realtime URL; nil: deleted. Absent: the app's configured one.
        var realtimeURL: String?? = .none
        /// A sandbox performance test passed: production may take a realtime URL.
        var passedPerformanceTest = false
    }

    /// A performance test as it runs: Apple's answers are built from it.
    struct PerformanceTest: Sendable {
        var bundleId: String
        var originalTransactionId: String
        var target: String
        var config: RetentionPerformanceTestConfig
        var elapsedMilliseconds: [Int] = []
        var failures: [String: Int] = [:]
        var pending: Int
        var started = false

        var finished: Bool { pending == 0 }

        var result: RetentionPerformanceTestResult {
            let succeeded = elapsedMilliseconds.count
            let total = config.totalRequests ?? 0
            let rate = total == 0 ? 0 : succeeded * 100 / total
            let status: RetentionPerformanceTestStatus =
                !finished ? .pending : rate >= (config.successRateThreshold ?? 100) ? .pass : .fail
            let sorted = elapsedMilliseconds.sorted()
            func percentile(_ p: Int) -> Int? { sorted.isEmpty ? nil : sorted[min(sorted.count - 1, (sorted.count * p + 99) / 100 - 1)] }
            let times = RetentionPerformanceTestResult.ResponseTimes(
                average: sorted.isEmpty ? nil : sorted.reduce(0, +) / sorted.count, p50: percentile(50), p90: percentile(90),
                p95: percentile(95), p99: percentile(99))
            return RetentionPerformanceTestResult(
                config: config, target: target, result: status, successRate: finished ? rate : nil, numPending: pending,
                responseTimes: times, failures: failures.isEmpty ? nil : failures)
        }
    }

    private let spaces = Mutex<[String: Space]>([:])
    private let tests = Mutex<[String: PerformanceTest]>([:])
    /// Callers waiting for a test to finish (`/sim/retention/performance-tests/{id}/finished`).
    private let waiters = Mutex<[String: [CheckedContinuation<Void, Never>]]>([:])

    private static func key(_ bundleId: String, _ environment: AppStoreEnvironment) -> String { "\(bundleId)|\(environment.storageName)" }

    func withSpace<T>(_ bundleId: String, _ environment: AppStoreEnvironment, _ body: (inout Space) throws -> T) rethrows -> T {
        try spaces.withLock { try body(&$0[Self.key(bundleId, environment), default: Space()]) }
    }

    /// The realtime URL Apple calls for a device in `environment`: the one configured through the
    /// API, else the app's own (`/sim/retention/url`, or the configuration file).
    func realtimeURL(_ app: SimulatedApp, _ environment: AppStoreEnvironment) -> String? {
        withSpace(app.bundleId, environment) { space in
            switch space.realtimeURL {
            case .none: app.retentionURL
            case .some(let configured): configured
            }
        }
    }

    /// The control route set the app's own URL: it holds in both environments again.
    func forgetRealtimeURLs(_ bundleId: String) {
        for environment in [AppStoreEnvironment.production, .sandbox] { withSpace(bundleId, environment) { $0.realtimeURL = .none } }
    }

    // MARK: Performance tests

    func start(_ test: PerformanceTest) throws -> String {
        try tests.withLock { tests in
            if tests.values.contains(where: { $0.bundleId == test.bundleId && !$0.finished }) {
                throw ServerAPIRejection(
                    status: 400, code: RetentionConfiguration.ErrorCode.existingPerformanceTestRun, message: "A performance test is already running.")
            }
            let id = UUID().uuidString.lowercased()
            tests[id] = test
            return id
        }
    }

    func test(_ id: String, bundleId: String) -> PerformanceTest? {
        tests.withLock { $0[id].flatMap { $0.bundleId == bundleId ? $0 : nil } }
    }

    func anyTest(_ id: String) -> PerformanceTest? { tests.withLock { $0[id] } }

    /// Tests not yet under way, marked started: the sender runs each once.
    /// Whether a performance test is waiting or under way.
    var hasWork: Bool { tests.withLock { tests in tests.values.contains { !$0.finished } } }

    func takeUnstarted() -> [(String, PerformanceTest)] {
        tests.withLock { tests in
            let waiting = tests.filter { !$0.value.started && !$0.value.finished }
            for id in waiting.keys { tests[id]?.started = true }
            return waiting.map { ($0.key, $0.value) }
        }
    }

    /// One request's outcome: its time when it succeeded, else Apple's send-attempt result.
    func record(_ id: String, elapsedMilliseconds: Int?, failure: String?) {
        let done: PerformanceTest? = tests.withLock { tests in
            guard var test = tests[id], test.pending > 0 else { return nil }
            if let failure {
                test.failures[failure, default: 0] += 1
            } else if let elapsedMilliseconds {
                test.elapsedMilliseconds.append(elapsedMilliseconds)
            }
            test.pending -= 1
            tests[id] = test
            return test.finished ? test : nil
        }
        guard let done else { return }
        if done.result.result == .pass { withSpace(done.bundleId, .sandbox) { $0.passedPerformanceTest = true } }
        for waiter in waiters.withLock({ $0.removeValue(forKey: id) ?? [] }) { waiter.resume() }
    }

    /// Returns once the test has finished (at once when it has, or is unknown).
    func waitUntilFinished(_ id: String) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let finished = tests.withLock { $0[id]?.finished ?? true }
            if finished {
                continuation.resume()
                return
            }
            waiters.withLock { $0[id, default: []].append(continuation) }
            // A request may have finished the test between the two looks.
            if tests.withLock({ $0[id]?.finished ?? true }), let waiting = waiters.withLock({ $0.removeValue(forKey: id) }) {
                for waiter in waiting { waiter.resume() }
            }
        }
    }
}
