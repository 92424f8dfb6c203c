import Foundation
import JobQueue
import Logging
import Persistence
import StorekeeperDomain
import Synchronization

/// Apple's health in this process, one `AppleHealth` per endpoint, shared by every worker. A
/// change of state is logged once (not once per job) and counted; when an endpoint answers
/// again, the verifications waiting for it are made due in arrival order (at
/// `releasePerSecond`), every worker (on PostgreSQL, every worker process) is woken, and the
/// state is shared in the database: another process still down adopts the recovery instead of
/// sending the released work back to wait for its own probe, and each app's backend gets one
/// `apple_down` and one `apple_recovered` event per outage, however many processes see it.
final class AppleHealthMonitor: Sendable {
    /// One of Apple's endpoints: `verify_receipt` or `server_api`, per environment, or Apple's
    /// OCSP responder (`ocsp`), which answers for both environments; its events say production.
    struct Endpoint: Hashable, Sendable, Comparable {
        var api: String
        var environment: String
        var label: String { api == Self.ocsp.api ? api : "\(api)_\(environment)" }

        static func verifyReceipt(_ environment: String) -> Endpoint { Endpoint(api: "verify_receipt", environment: environment) }
        static func serverAPI(_ environment: String) -> Endpoint { Endpoint(api: "server_api", environment: environment) }
        static let ocsp = Endpoint(api: "ocsp", environment: "production")
        static func < (a: Endpoint, b: Endpoint) -> Bool { a.label < b.label }
    }

    let policy: AppleHealth.Policy
    let store: any AppleHealthStore
    let metrics: MetricsRegistry
    let logger: Logger
    /// Job kinds that wait for each of Apple's APIs (`Endpoint.api`), released when it answers
    /// again after being down: a recovery of the Server API does not release work that waits
    /// for verifyReceipt.
    let waitingKinds: [String: [String]]
    /// How fast released work becomes due; nil: all at once.
    let releasePerSecond: Double?
    /// The apps told of outages by events; of the sandbox's, only those that accept it.
    let appIds: [String]
    let sandboxAppIds: [String]
    private let states = Mutex<[Endpoint: AppleHealth]>([:])
    /// Each endpoint's shared row as this process last read it, and when: it reads at most once
    /// a second per endpoint, however many jobs ask.
    private let sharedReads = Mutex<[Endpoint: (at: Date, row: SharedAppleHealth?)]>([:])

    init(
        policy: AppleHealth.Policy, store: any AppleHealthStore, metrics: MetricsRegistry, logger: Logger,
        waitingKinds: [String: [String]] = ["verify_receipt": [verifyReceiptJobKind]], releasePerSecond: Double? = nil, appIds: [String] = [],
        sandboxAppIds: [String]? = nil
    ) {
        self.appIds = appIds
        self.sandboxAppIds = sandboxAppIds ?? appIds
        self.policy = policy
        self.store = store
        self.metrics = metrics
        self.logger = logger
        self.waitingKinds = waitingKinds
        self.releasePerSecond = releasePerSecond
    }

    func admit(_ endpoint: Endpoint, now: Date) -> AppleHealth.Admission {
        states.withLock { all in
            var health = all[endpoint] ?? AppleHealth(policy: policy, now: now)
            let admission = health.admit(at: now)
            all[endpoint] = health
            return admission
        }
    }

    /// Whether `endpoint` answered again after `sent`, as this process or another one saw it: a
    /// call sent before that and failing now (it hung past Apple's return) is not a sign of an
    /// outage, and its job should go with the released ones instead of sleeping out its backoff,
    /// which the release has already passed. Asked only after a failed call. A recovery already
    /// known (here, or in the shared row read within the second) needs no read; otherwise the
    /// row is read afresh, because a stale "down" would leave the job behind for its whole
    /// backoff, and failed calls are few while Apple is down (only probes go).
    func recovered(_ endpoint: Endpoint, after sent: Date, now: Date) async -> Bool {
        let known: Bool = states.withLock { all in
            guard let health = all[endpoint], health.state == .healthy, let recoveredAt = health.recoveredAt else { return false }
            return recoveredAt > sent
        }
        let recovery = { (row: SharedAppleHealth?) in row.map { $0.state == .healthy && Self.later($0.since, than: sent) } ?? false }
        if known || recovery(cachedRow(endpoint, now: now) ?? nil) { return true }
        return recovery(await readRow(endpoint, now: now))
    }

    /// How long a job whose call to `endpoint` failed waits before its next attempt, given the
    /// delay its own schedule asks for. Nothing when Apple answered again while the call was out
    /// (`recovered`). While the endpoint is down here, at most a probe step (spread by
    /// `unitRandom`): the gate keeps the job from calling when it comes due, so the short wait
    /// costs Apple nothing, and it keeps the job among those that come round to probe. Sleeping
    /// out a long backoff instead could leave a down endpoint with nobody due to probe it, and
    /// the job behind until its own retry. Otherwise the schedule's delay.
    func delayAfterFailure(_ endpoint: Endpoint, sentAt: Date, scheduled: TimeInterval, now: Date, unitRandom: Double) async -> TimeInterval {
        if await recovered(endpoint, after: sentAt, now: now) { return 0 }
        guard downSince(endpoint) != nil else { return scheduled }
        return min(scheduled, policy.probeCapSeconds * min(max(unitRandom, 0), 1))
    }

    /// Whether the shared row's instant is after `instant`, compared as the database keeps
    /// instants (whole milliseconds, rounded): the row's copy of this process's own `now` may
    /// read up to half a millisecond later than the original, and must not pass for a later
    /// change (with a frozen clock, a recovery and the next outage share an instant; read as a
    /// later recovery, every failure released the work again: a storm of calls).
    static func later(_ shared: Date, than instant: Date) -> Bool {
        StoredTime.ms(shared) > StoredTime.ms(instant)
    }

    /// The shared row of `endpoint` if read within the last second; nil when not.
    private func cachedRow(_ endpoint: Endpoint, now: Date) -> SharedAppleHealth?? {
        sharedReads.withLock { reads in
            guard let last = reads[endpoint], now >= last.at, now.timeIntervalSince(last.at) < 1 else { return nil }
            return .some(last.row)
        }
    }

    /// Reads the shared row of `endpoint` and keeps it as the latest read; nil when there is
    /// none or the read failed (it is tried again on the next ask).
    private func readRow(_ endpoint: Endpoint, now: Date) async -> SharedAppleHealth? {
        do {
            let row = try await store.sharedAppleHealth(endpoint: endpoint.label)
            sharedReads.withLock { $0[endpoint] = (now, row) }
            return row
        } catch {
            logger.warning("could not read Apple's shared health", metadata: ["endpoint": "\(endpoint.label)", "error": "\(error)"])
            return nil
        }
    }

    /// `admit`, but while the endpoint is down here, first whether another process saw it answer
    /// again (`adoptRecovery`): the one way every caller asks before calling Apple.
    func admitting(_ endpoint: Endpoint, now: Date) async -> AppleHealth.Admission {
        let admission = admit(endpoint, now: now)
        guard case .wait = admission, await adoptRecovery(endpoint, now: now) else { return admission }
        return admit(endpoint, now: now)
    }

    /// Since when `endpoint` has been down in this process; nil while it is not.
    func downSince(_ endpoint: Endpoint) -> Date? {
        states.withLock { all in all[endpoint].flatMap { $0.state == .down ? $0.since : nil } }
    }

    /// Since when `endpoint` has been down, as this process or (from the shared row, read at most
    /// once a second) another one sees it: for callers that do not probe (an operator's request
    /// answers at once instead of waiting on a host that is known to be gone). An API-only
    /// process, which calls Apple rarely, learns of an outage this way.
    func knownDown(_ endpoint: Endpoint, now: Date) async -> Date? {
        let local: (state: AppleHealth.State, since: Date)? = states.withLock { all in all[endpoint].map { ($0.state, $0.since) } }
        if let local, local.state == .down { return local.since }
        let row: SharedAppleHealth? = if let cached = cachedRow(endpoint, now: now) { cached } else { await readRow(endpoint, now: now) }
        guard let row, row.state == .down, Self.later(row.since, than: local?.since ?? .distantPast) else { return nil }
        return row.since
    }

    /// While `endpoint` is down here: has another process seen it answer since? Reads the shared
    /// row at most once a second per endpoint; when it is newer than this process's outage, this
    /// process is healthy again (without releasing anything: the other one did) and true.
    func adoptRecovery(_ endpoint: Endpoint, now: Date) async -> Bool {
        guard let downSince = downSince(endpoint) else { return false }
        // Every waiting job asks: the row is read at most once a second per endpoint.
        let row: SharedAppleHealth? = if let cached = cachedRow(endpoint, now: now) { cached } else { await readRow(endpoint, now: now) }
        guard let row, row.state == .healthy, Self.later(row.since, than: downSince) else { return false }
        await record(endpoint, answered: true, probe: false, now: now, announce: false)
        return true
    }

    /// Reports a call's outcome; on recovery, releases the waiting work before returning.
    /// `sentAt`: for a probe, when it was let through (so a stale one is told apart).
    func record(_ endpoint: Endpoint, answered: Bool, probe: Bool, sentAt: Date? = nil, now: Date) async {
        await record(endpoint, answered: answered, probe: probe, sentAt: sentAt, now: now, announce: true)
    }

    /// `announce`: this process saw the change itself, so it shares it (with its events, when it
    /// is the first to) and, on recovery, releases the waiting work; false when it adopts another
    /// process's recovery.
    private func record(_ endpoint: Endpoint, answered: Bool, probe: Bool, sentAt: Date? = nil, now: Date, announce: Bool) async {
        let transition: AppleHealth.Transition? = states.withLock { all in
            var health = all[endpoint] ?? AppleHealth(policy: policy, now: now)
            let transition = health.record(answered: answered, probe: probe, sentAt: sentAt, at: now)
            all[endpoint] = health
            return transition
        }
        guard let transition else { return }
        metrics.increment(
            Metric.appleHealthTransitionsTotal,
            labels: ["endpoint": endpoint.label, "from": transition.from.rawValue, "to": transition.to.rawValue])
        let metadata: Logger.Metadata = ["endpoint": "\(endpoint.label)", "from": "\(transition.from.rawValue)"]
        switch transition.to {
        case .down:
            logger.error("Apple is down: calls stop, one probe at a time until it answers", metadata: metadata)
            if announce { await share(endpoint, .down, at: now) }
        case .degraded:
            logger.warning("Apple is failing: calls continue", metadata: metadata)
        case .healthy where !announce:
            logger.notice("Apple answers again (seen by another process)", metadata: metadata)
        case .healthy:
            // Work waits only while an endpoint is down, here or (the shared row) in another
            // process; from degraded nothing waited, and nothing is released.
            let moved = await share(endpoint, .healthy, at: now)
            guard transition.from == .down || moved else {
                logger.notice("Apple answers again", metadata: metadata)
                return
            }
            var released = 0
            do {
                released = try await store.releaseWaitingJobs(
                    kinds: waitingKinds[endpoint.api] ?? [], now: now, perSecond: releasePerSecond)
            } catch {
                logger.error("could not release the verifications waiting for Apple", metadata: ["error": "\(error)"])
            }
            var recovered = metadata
            recovered["released"] = "\(released)"
            logger.notice("Apple answers again: waiting verifications released", metadata: recovered)
        }
    }

    /// Moves the shared state; the process that moves it records each app's event with it.
    /// True when this call moved it.
    @discardableResult
    private func share(_ endpoint: Endpoint, _ state: AppleHealth.State, at now: Date) async -> Bool {
        let (label, environment) = (endpoint.label, endpoint.environment)
        let appIds = environment == "sandbox" ? sandboxAppIds : appIds
        do {
            return try await store.moveSharedAppleHealth(endpoint: label, to: state, at: now) { previous in
                let events = AppleHealthEvents.events(
                    to: state, endpoint: label, environment: environment, at: now, downSince: previous?.since, appIds: appIds)
                return events.isEmpty ? nil : EventBatch(events: events)
            }
        } catch {
            logger.error("could not share Apple's health", metadata: ["endpoint": "\(label)", "error": "\(error)"])
            return false
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
