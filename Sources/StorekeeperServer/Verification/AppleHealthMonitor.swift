import Foundation
import JobQueue
import Logging
import Persistence
import StorekeeperDomain
import Synchronization

/// Apple's health in this process, one `AppleHealth` per endpoint, shared by every worker. A
/// change of state is logged once (not once per job) and counted; when an endpoint answers
/// again, the verifications waiting for it are made due at once, in arrival order, and every
/// worker (on PostgreSQL, every worker process) is woken.
final class AppleHealthMonitor: Sendable {
    /// One of Apple's endpoints: `verify_receipt` or `server_api`, per environment.
    struct Endpoint: Hashable, Sendable, Comparable {
        var api: String
        var environment: String
        var label: String { "\(api)_\(environment)" }

        static func verifyReceipt(_ environment: String) -> Endpoint { Endpoint(api: "verify_receipt", environment: environment) }
        static func < (a: Endpoint, b: Endpoint) -> Bool { a.label < b.label }
    }

    let policy: AppleHealth.Policy
    let store: any StorekeeperStore
    let signal: WakeSignal
    let metrics: MetricsRegistry
    let logger: Logger
    /// Job kinds that wait for Apple and are released when it answers again.
    let waitingKinds: [String]
    private let states = Mutex<[Endpoint: AppleHealth]>([:])

    init(
        policy: AppleHealth.Policy, store: any StorekeeperStore, signal: WakeSignal, metrics: MetricsRegistry, logger: Logger,
        waitingKinds: [String] = [verifyReceiptJobKind]
    ) {
        self.policy = policy
        self.store = store
        self.signal = signal
        self.metrics = metrics
        self.logger = logger
        self.waitingKinds = waitingKinds
    }

    func admit(_ endpoint: Endpoint, now: Date) -> AppleHealth.Admission {
        states.withLock { all in
            var health = all[endpoint] ?? AppleHealth(policy: policy, now: now)
            let admission = health.admit(at: now)
            all[endpoint] = health
            return admission
        }
    }

    /// Reports a call's outcome; on recovery, releases the waiting work before returning.
    func record(_ endpoint: Endpoint, answered: Bool, probe: Bool, now: Date) async {
        let transition: AppleHealth.Transition? = states.withLock { all in
            var health = all[endpoint] ?? AppleHealth(policy: policy, now: now)
            let transition = health.record(answered: answered, probe: probe, at: now)
            all[endpoint] = health
            return transition
        }
        guard let transition else { return }
        metrics.increment(
            "storekeeper_apple_health_transitions_total",
            labels: ["endpoint": endpoint.label, "from": transition.from.rawValue, "to": transition.to.rawValue])
        let metadata: Logger.Metadata = ["endpoint": "\(endpoint.label)", "from": "\(transition.from.rawValue)"]
        switch transition.to {
        case .down:
            logger.error("Apple is down: calls stop, one probe at a time until it answers", metadata: metadata)
        case .degraded:
            logger.warning("Apple is failing: calls continue", metadata: metadata)
        case .healthy:
            var released = 0
            do {
                released = try await store.releaseWaitingJobs(kinds: waitingKinds, now: now)
            } catch {
                logger.error("could not release the verifications waiting for Apple", metadata: ["error": "\(error)"])
            }
            signal.wake()
            var recovered = metadata
            recovered["released"] = "\(released)"
            logger.notice("Apple answers again: waiting verifications released", metadata: recovered)
        }
    }

    /// Every endpoint seen so far, for metrics and the admin API.
    func snapshot() -> [(Endpoint, AppleHealth)] {
        states.withLock { $0 }.sorted { $0.key < $1.key }
    }
}

/// `GET /v1/admin/apple-health`: each endpoint this process's workers have called, its state
/// and since when; while down, when the next probe may go.
struct AppleHealthView: Encodable {
    struct Endpoint: Encodable {
        var endpoint: String
        var state: String
        var since: Date
        var secondsInState: Double
        var consecutiveFailures: Int
        var nextProbeAt: Date?
        var probeOut: Bool
    }

    var endpoints: [Endpoint]

    init(_ snapshot: [(AppleHealthMonitor.Endpoint, AppleHealth)], now: Date) {
        endpoints = snapshot.map { endpoint, health in
            Endpoint(
                endpoint: endpoint.label, state: health.state.rawValue, since: health.since,
                secondsInState: max(0, now.timeIntervalSince(health.since)), consecutiveFailures: health.consecutiveFailures,
                nextProbeAt: health.state == .down ? health.nextProbeAt : nil, probeOut: health.probeOutSince != nil)
        }
    }
}
