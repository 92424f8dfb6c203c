public import Foundation
public import JobQueue
public import Persistence
public import StorekeeperDomain

/// A verification attempt, written once for every job kind (receipt, signed transaction,
/// Server API refresh) and every storage adapter: how it starts and how it ends (grant, refuse,
/// retry maybe with provisional access, hold, release). Each is one transaction of the
/// `LeasedTransactions` port: the verification and job state machines decide the next states
/// from what the transaction read, the grant planner decides the grants, and the adapter only
/// writes what they return. A job handler holds this, never a store.
public struct VerificationOutcomes: Sendable {
    public typealias Store = VerificationJobStore

    let store: any Store

    public init(store: any Store) {
        self.store = store
    }

    public enum Start<App: Sendable>: Sendable {
        /// The attempt runs: the verification (now verifying under this lease), what was
        /// submitted, and its app's configuration.
        case proceed(VerificationRecord, evidence: String, app: App)
        /// Nothing more to do in this run (already written in the start's transaction).
        case done
    }

    /// Starts an attempt in one transaction: reads the verification and what was submitted and
    /// marks it verifying under `lease`. An app not in `apps` (no longer configured) holds it
    /// for the operator; a verification gone discards the job; a lease another runner holds
    /// now, or a state no attempt may start from, ends this run.
    public func begin<App: Sendable>(_ lease: JobLease, apps: [String: App], now: Date) async throws -> Start<App> {
        try await store.withLease(lease, verificationId: lease.payload, reading: .submission, now: now) {
            verification, facts -> LeasedDecision<Start<App>> in
            guard let verification, let submitted = facts.submission else {
                let gone = JobLifecycle.ending(.discarded(reason: FailureReason.verificationMissing.rawValue))
                return LeasedDecision(writes: [.job(gone)], result: .done)
            }
            guard let app = apps[verification.appId] else {
                let report = AttemptReport(statuses: [], environment: nil, reason: .appNotConfigured)
                guard let (from, to) = Self.ending(verification, on: .appleConfigurationError) else {
                    return Self.refusal(verification, result: .done)
                }
                let held = VerificationChange(
                    id: verification.id, from: from, to: to, attempts: lease.attempt, report: report, configurationFingerprint: "")
                let job = JobLifecycle.ending(.held(reason: FailureReason.appNotConfigured.rawValue))
                return LeasedDecision(writes: [.job(job), .verification(held)], result: .done)
            }
            guard let change = Self.starting(verification, lease) else { return Self.refusal(verification, result: .done) }
            var record = submitted.record
            (record.state, record.attempts) = (change.to, lease.attempt)
            return LeasedDecision(writes: [.verification(change)], result: .proceed(record, evidence: submitted.evidence, app: app))
        } ?? .done
    }

    /// The app's catalog by product id, as provisional access is planned from it (a grant reads
    /// it in its own transaction).
    public func catalog(appId: String) async throws -> [String: Product] {
        Dictionary(try await store.products(appId: appId).map { ($0.productId, $0) }, uniquingKeysWith: { $1 })
    }

    /// Marks the verification as being verified by this lease. False when the lease is lost,
    /// or the verification is in a state no attempt may start from (its job is then discarded).
    public func markVerifying(_ lease: JobLease, verificationId: String, now: Date) async throws -> Bool {
        try await store.withLease(lease, verificationId: verificationId, reading: .nothing, now: now) { verification, _ in
            guard let verification else { return LeasedDecision(writes: [], result: true) }
            guard let change = Self.starting(verification, lease) else { return Self.refusal(verification, result: false) }
            return LeasedDecision(writes: [.verification(change)], result: true)
        } ?? false
    }

    /// The change that starts an attempt under `lease` (`begin`, `markVerifying`); nil when no
    /// attempt may start from the state stored.
    static func starting(_ verification: LeasedVerification, _ lease: JobLease) -> VerificationChange? {
        guard let next = VerificationLifecycle.next(from: verification.state, on: .leased) else { return nil }
        return VerificationChange(id: verification.id, from: verification.state, to: next, attempts: lease.attempt)
    }

    /// The process is stopping before the attempt ended: the job goes back to the queue and the
    /// verification back to `retry_scheduled`, due now, neither counting the attempt. False when
    /// the lease was lost meanwhile.
    public func release(_ lease: JobLease, verificationId: String, now: Date) async throws -> Bool {
        try await store.withLease(lease, verificationId: verificationId, reading: .nothing, now: now) { verification, _ in
            var writes = [LeasedWrite.job(JobLifecycle.ending(.released(at: now, reason: releasedReason)))]
            if let verification, let next = VerificationLifecycle.next(from: verification.state, on: .released) {
                let report = AttemptReport(statuses: [], environment: nil, reason: .releasedAtShutdown)
                writes.append(
                    .verification(
                        VerificationChange(
                            id: verification.id, from: verification.state, to: next, attempts: lease.attempt - 1, report: report,
                            nextAttemptAt: now)))
            }
            return LeasedDecision(writes: writes, result: true)
        } ?? false
    }

    /// Grants a verified answer, writes the ledger, finishes the verification and completes the
    /// job: one transaction. Evidence that is not ours to grant (another app's bundle) is refused
    /// in the same way.
    public func completeVerified(
        _ lease: JobLease, verificationId: String, evidence: PurchaseEvidence, report: AttemptReport, request: GrantRequest, now: Date
    ) async throws -> GrantResult {
        let ids = evidence.referencedIds
        let query = GrantFactsQuery(
            appId: request.appId, transactionIds: ids.transactionIds, originalTransactionIds: ids.originalIds, readsCatalog: true)
        let result = try await store.withLease(lease, verificationId: verificationId, reading: query, now: now) {
            verification, facts -> LeasedDecision<GrantResult> in
            guard let verification else { return LeasedDecision(writes: [], result: .rejected(reason: .verificationMissing)) }
            var context = GrantContext(
                appId: request.appId, bundleId: request.bundleId, appUserId: verification.appUserId, verificationId: verificationId, now: now,
                catalog: facts.catalog, bindingPolicy: request.bindingPolicy,
                existingTransactions: facts.transactions, bindings: facts.bindings, subscriptions: facts.subscriptions)
            context.evidenceSignedAt = request.evidenceSignedAt
            context.reversesRefunds = request.reversesRefunds
            context.claims = facts.claims
            context.imported = verification.hints[ImportCustomers.hint] != nil
            context.commission = request.commission
            switch GrantPlanner.plan(evidence, context: context) {
            case .wait(let reason, _):
                // Not an Apple failure: the answer is kept for the next attempt's own call.
                let at = request.waitRetryAt ?? now.addingTimeInterval(1)
                guard let (from, to) = Self.ending(verification, on: .transientFailure) else {
                    return Self.refusal(verification, result: .refused(state: verification.state))
                }
                var waiting = report
                waiting.reason = reason
                let change = VerificationChange(id: verification.id, from: from, to: to, report: waiting, nextAttemptAt: at)
                return LeasedDecision(
                    writes: [.job(JobLifecycle.ending(.retry(at: at, reason: reason.rawValue))), .verification(change)],
                    result: .waiting(reason: reason))
            case .reject(let reason):
                var rejected = report
                rejected.reason = reason
                return Self.finish(
                    verification, on: .appleInvalid, report: rejected, events: Self.invalidEvents(verification, reason: reason, now: now),
                    now: now, result: .rejected(reason: reason), refused: .refused(state: verification.state))
            case .grant(let plan):
                var verified = report
                verified.reason = nil
                let events =
                    EventRule.events(plan, context: context, evidence: evidence)
                    + EventRule.provisional(verification.provisionalGrants, removed: true, now: now)
                return Self.finish(
                    verification, on: .appleVerified, report: verified, grant: plan, appId: request.appId, events: events,
                    catalog: Array(facts.catalog.values), now: now, result: .granted(plan.summary),
                    refused: .refused(state: verification.state))
            }
        }
        return result ?? .leaseLost
    }

    /// Marks the verification invalid and completes the job; provisional access it gave ends.
    public func finishInvalid(_ lease: JobLease, verificationId: String, report: AttemptReport, now: Date) async throws -> Bool {
        try await store.withLease(lease, verificationId: verificationId, reading: .nothing, now: now) { verification, _ in
            guard let verification else { return Self.orphan(.completed(reason: report.reason?.rawValue)) }
            return Self.finish(
                verification, on: .appleInvalid, report: report, events: Self.invalidEvents(verification, reason: report.reason, now: now),
                now: now, result: true, refused: false)
        } ?? false
    }

    /// Schedules the next attempt at `at`. With `provisional` grants (the outage policy), they
    /// are recorded in the same transaction; Apple's answer later ends them in the transaction
    /// that grants or refuses.
    /// `countsAttempt` false: Apple was not called (it is down and another job probes), so the
    /// job's attempt is given back.
    public func scheduleRetry(
        _ lease: JobLease, verificationId: String, report: AttemptReport, at: Date, provisional: [ProvisionalGrant] = [],
        countsAttempt: Bool = true, now: Date
    ) async throws -> Bool {
        let reason = (report.reason ?? .retry).rawValue
        let event = countsAttempt ? JobLifecycle.Event.retry(at: at, reason: reason) : .released(at: at, reason: reason)
        return try await store.withLease(lease, verificationId: verificationId, reading: .nothing, now: now) { verification, _ in
            guard let verification else { return Self.orphan(event) }
            guard let (from, to) = Self.ending(verification, on: .transientFailure) else { return Self.refusal(verification, result: false) }
            let change = VerificationChange(id: verification.id, from: from, to: to, report: report, nextAttemptAt: at)
            var writes: [LeasedWrite] = [.job(JobLifecycle.ending(event)), .verification(change)]
            if !provisional.isEmpty {
                writes.append(.provisionalGrants(provisional))
                writes.append(.events(EventBatch(events: EventRule.provisional(provisional, removed: false, now: now))))
            }
            return LeasedDecision(writes: writes, result: true)
        } ?? false
    }

    /// Parks the job until the app's configuration changes (its fingerprint differs).
    public func holdForConfiguration(
        _ lease: JobLease, verificationId: String, report: AttemptReport, configurationFingerprint: String, now: Date
    ) async throws -> Bool {
        let event = JobLifecycle.Event.held(reason: (report.reason ?? .configurationError).rawValue)
        return try await store.withLease(lease, verificationId: verificationId, reading: .nothing, now: now) { verification, _ in
            guard let verification else { return Self.orphan(event) }
            guard let (from, to) = Self.ending(verification, on: .appleConfigurationError) else {
                return Self.refusal(verification, result: false)
            }
            let change = VerificationChange(
                id: verification.id, from: from, to: to, report: report, configurationFingerprint: configurationFingerprint)
            return LeasedDecision(writes: [.job(JobLifecycle.ending(event)), .verification(change)], result: true)
        } ?? false
    }

    // MARK: Decisions

    /// The state an attempt ends in. A lease holder is verifying whether or not it recorded so
    /// yet (its start is a transaction of its own), so the attempt's end is taken from
    /// `verifying`; the guarded write still names the state actually stored.
    static func ending(_ verification: LeasedVerification, on event: VerificationLifecycle.Event) -> (VerificationState, VerificationState)? {
        guard let verifying = VerificationLifecycle.next(from: verification.state, on: .leased),
            let next = VerificationLifecycle.next(from: verifying, on: event)
        else { return nil }
        return (verification.state, next)
    }

    /// A final outcome (verified or invalid): the job completes, provisional access ends, and a
    /// grant plan, when there is one, is applied first.
    static func finish<Result: Sendable>(
        _ verification: LeasedVerification, on event: VerificationLifecycle.Event, report: AttemptReport, grant plan: GrantPlan? = nil,
        appId: String = "", events: [SubscriberEvent], catalog: [Product]? = nil, now: Date, result: Result, refused: Result
    ) -> LeasedDecision<Result> {
        guard let (from, to) = ending(verification, on: event) else { return refusal(verification, result: refused) }
        var writes: [LeasedWrite] = []
        if let plan { writes.append(.grant(plan, appId: appId)) }
        // The leased read holds every provisional grant it gave, expired or not: none, nothing to end.
        if !verification.provisionalGrants.isEmpty { writes.append(.endProvisionalGrants(verificationId: verification.id)) }
        writes.append(.job(JobLifecycle.ending(.completed(reason: report.reason?.rawValue))))
        writes.append(
            .verification(
                VerificationChange(id: verification.id, from: from, to: to, report: report, finalizes: true, grant: plan?.summary)))
        if !events.isEmpty { writes.append(.events(EventBatch(events: events, catalog: catalog))) }
        return LeasedDecision(writes: writes, result: result)
    }

    /// A verification found invalid: its submitter is told, and provisional access it gave ends.
    static func invalidEvents(_ verification: LeasedVerification, reason: FailureReason?, now: Date) -> [SubscriberEvent] {
        [
            EventRule.invalid(
                appId: verification.appId, appUserId: verification.appUserId, verificationId: verification.id, reason: reason, now: now)
        ] + EventRule.provisional(verification.provisionalGrants, removed: true, now: now)
    }

    /// The job's verification is gone (deleted by hand): the job still ends as asked.
    static func orphan(_ event: JobLifecycle.Event) -> LeasedDecision<Bool> {
        LeasedDecision(writes: [.job(JobLifecycle.ending(event))], result: true)
    }

    /// The verification is in a state the attempt may not end from (a final state, changed by
    /// hand): nothing about it is written, and its job is discarded for the operator to see,
    /// rather than retried forever.
    static func refusal<Result: Sendable>(_ verification: LeasedVerification, result: Result) -> LeasedDecision<Result> {
        let reason = "verification_state_\(verification.state.rawValue)"
        return LeasedDecision(writes: [.job(JobLifecycle.ending(.discarded(reason: reason)))], result: result)
    }
}
