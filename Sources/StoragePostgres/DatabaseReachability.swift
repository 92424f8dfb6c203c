import StorekeeperErrors
import Synchronization

/// Whether PostgreSQL answers, as last found, so that an app's request fails within a second
/// while the database is gone (503 `storage_unavailable` with `Retry-After`) instead of waiting.
///
/// PostgresNIO's pool queues a lease while it cannot connect, retrying with backoff, and fails the
/// queue only after 60 s of failures (its circuit breaker, which `PostgresClient` does not let us
/// tune): a POST made while the database restarts would hang that long and then fail as an
/// unknown error. So a lease on the requests' pool that has not come after `tick` asks for a
/// verdict (at most a few probes a second per process, however many leases wait): one probe at a
/// time opens a connection of its own, refused at once when nothing listens (a host that drops
/// packets takes the probe's 10 s connect timeout, while requests keep waiting for the pool);
/// "unreachable" fails the waiting lease and, until a later probe finds the database back, every
/// new one at once. Leases on the work pool wait for the pool instead: a job has nobody waiting on
/// it, and resumes when the database returns. A connection that breaks under any statement also
/// marks the database unreachable, so the next request probes before it queues.
final class DatabaseReachability: Sendable {
    private struct State {
        var reachable = true
        var checkedAt: ContinuousClock.Instant?
        var probing = false
        /// When the last probe began: probes begin at most every `reachableFor`, also when the
        /// last one was cut short.
        var probeBegan: ContinuousClock.Instant?
    }

    private let state = Mutex(State())
    private let probe: @Sendable () async -> Bool
    /// How long a lease may wait before a verdict is asked for, and how often while it waits.
    let tick: Duration
    /// How long a verdict stands before a caller probes again: "there" briefly (a database that
    /// just went away is found out soon), "gone" longer (while it is away, a few probes a second
    /// per process, not one per request).
    let reachableFor: Duration
    let unreachableFor: Duration

    init(
        tick: Duration = .milliseconds(100), reachableFor: Duration = .milliseconds(250), unreachableFor: Duration = .milliseconds(500),
        probe: @escaping @Sendable () async -> Bool
    ) {
        self.tick = tick
        self.reachableFor = reachableFor
        self.unreachableFor = unreachableFor
        self.probe = probe
    }

    /// Throws `.unavailable` at once while the database was last found unreachable, unless this
    /// caller's own probe (when the verdict is stale and nobody else is probing) finds it back.
    func admit() async throws {
        if state.withLock({ $0.reachable }) { return }
        if await verdict() == false { throw Self.unavailable() }
    }

    /// The database's state now: the last probe's while fresh; otherwise this caller probes, or
    /// `nil` while another caller's probe is under way.
    func verdict() async -> Bool? {
        let now = ContinuousClock.now
        let decision: Bool?? = state.withLock { state in
            if let checkedAt = state.checkedAt, checkedAt.duration(to: now) < (state.reachable ? reachableFor : unreachableFor) {
                return .some(state.reachable)
            }
            if state.probing { return .some(nil) }
            if let began = state.probeBegan, began.duration(to: now) < reachableFor { return .some(state.reachable) }
            state.probing = true
            state.probeBegan = now
            return nil
        }
        if let decision { return decision }
        let reachable = await probe()
        // A probe cut short (its lease came, and the wait that asked was cancelled) found nothing.
        let cancelled = Task.isCancelled
        state.withLock { state in
            state.probing = false
            guard !cancelled else { return }
            state.reachable = reachable
            state.checkedAt = .now
        }
        return cancelled ? nil : reachable
    }

    /// A connection broke or could not be made: the next caller probes (at once) before it queues.
    func lost() {
        state.withLock { state in
            state.reachable = false
            state.checkedAt = nil
            state.probeBegan = nil
        }
    }

    /// Runs `operation`, which calls its argument once it holds a connection. While it has none,
    /// every `tick` the database's state is asked for; unreachable fails the lease (the pool
    /// forgets a cancelled request) with `.unavailable`.
    func waitingForLease<T: Sendable>(_ operation: @escaping @Sendable (@escaping @Sendable () -> Void) async throws -> T) async throws -> T {
        let leased = LeaseFlag()
        return try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask { try await operation { leased.set() } }
            group.addTask {
                while true {
                    try await Task.sleep(for: self.tick)
                    if leased.isSet { return nil }
                    // A lease that came while the probe ran is not undone: its statement finds out.
                    if await self.verdict() == false, !leased.isSet { throw Self.unavailable() }
                }
            }
            defer { group.cancelAll() }
            while let result = try await group.next() {
                if let value = result { return value }
            }
            throw CancellationError()
        }
    }

    static func unavailable() -> PostgresStoreError {
        PostgresStoreError(.unavailable, "PostgreSQL cannot be reached right now; nothing was done")
    }
}

/// Set once a lease holds its connection.
private final class LeaseFlag: Sendable {
    private let value = Atomic(false)
    func set() { value.store(true, ordering: .releasing) }
    var isSet: Bool { value.load(ordering: .acquiring) }
}
