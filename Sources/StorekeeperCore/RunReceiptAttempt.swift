public import AppStoreModels
public import Foundation
public import JobQueue
public import Persistence
public import StorekeeperDomain

/// verifyReceipt: one call to one environment, classified. The server's adapter sends the
/// receipt with the app's shared secret and keeps the call's metrics.
public protocol AppleReceiptVerifying: Sendable {
    func verify(in environment: AppStoreEnvironment) async -> AttemptClassification
}

/// What a receipt attempt tells the metrics and the logs.
public protocol ReceiptAttemptObserver: Sendable {
    /// Forged or untrusted: decided locally, Apple never saw it.
    func rejectedLocally(_ reason: FailureReason)
    func finishedInvalid()
    /// Apple says the configuration is wrong: held until it changes.
    func held(_ reason: FailureReason)
    /// What asking the Server API in verifyReceipt's place came to.
    func standIn(_ outcome: RunReceiptAttempt.StandIn, reason: FailureReason)
    /// Rescheduled: waiting for Apple's probe, or on the job's backoff; `provisional` grants made.
    func retried(reason: FailureReason, waitingForApple: Bool, provisional: Int)
}

/// One of Apple's endpoints whose health the attempt asks.
public enum AppleEndpointName: Sendable, Hashable {
    case verifyReceipt(AppStoreEnvironment)
    case serverAPI(AppStoreEnvironment)
}

/// Verifies one receipt with Apple per lease: production first, following 21007/21008
/// (`ReceiptAttemptPlan`), each environment only as Apple's health admits. A verified receipt is
/// handed back to be granted in the transaction that completes the job; every other outcome
/// ends, holds or reschedules the job here, in one transaction. While verifyReceipt fails, a
/// receipt whose signature and chain checked locally may be answered by the Server API instead
/// (the stand-in), and the outage policy may grant what it shows provisionally.
public struct RunReceiptAttempt: Sendable {
    /// A receipt whose signature and chain verified locally: its contents are Apple's as far as a
    /// signed receipt goes.
    public struct LocalReceipt: Sendable, Hashable {
        public struct Purchase: Sendable, Hashable {
            public var productId: String?
            public var transactionId: String?
            public var originalTransactionId: String?
            public var purchaseDate: Date?
            public var expiresDate: Date?
            public var cancellationDate: Date?

            public init(
                productId: String?, transactionId: String?, originalTransactionId: String?, purchaseDate: Date?, expiresDate: Date?,
                cancellationDate: Date?
            ) {
                self.productId = productId
                self.transactionId = transactionId
                self.originalTransactionId = originalTransactionId
                self.purchaseDate = purchaseDate
                self.expiresDate = expiresDate
                self.cancellationDate = cancellationDate
            }
        }

        public var bundleId: String?
        /// The environment the receipt says it is from.
        public var environment: AppStoreEnvironment
        public var purchases: [Purchase]

        public init(bundleId: String?, environment: AppStoreEnvironment, purchases: [Purchase]) {
            self.bundleId = bundleId
            self.environment = environment
            self.purchases = purchases
        }
    }

    /// What the local check of the receipt found.
    public enum LocalCheck: Sendable {
        case verified(LocalReceipt)
        case rejected(FailureReason)
        /// Legacy receipts and disabled checks: only Apple can tell.
        case unchecked
    }

    public struct App: Sendable {
        public var id: String
        public var bundleId: String
        public var acceptsSandbox: Bool
        public var fingerprint: String

        public init(id: String, bundleId: String, acceptsSandbox: Bool, fingerprint: String) {
            self.id = id
            self.bundleId = bundleId
            self.acceptsSandbox = acceptsSandbox
            self.fingerprint = fingerprint
        }
    }

    public struct Settings: Sendable {
        public var retry: RetryPolicy
        public var probeCapSeconds: Double
        public var outagePolicy: OutagePolicy

        public init(retry: RetryPolicy, probeCapSeconds: Double, outagePolicy: OutagePolicy) {
            self.retry = retry
            self.probeCapSeconds = probeCapSeconds
            self.outagePolicy = outagePolicy
        }
    }

    public enum StandIn: Sendable {
        /// The Server API is down too: not called.
        case appleDown
        case verified
        /// Apple answered, but what it signed cannot be granted.
        case rejected(FailureReason, message: String)
        case unavailable(String)
    }

    public enum Step: Sendable {
        /// Verified: grant it in the transaction that completes the job.
        case grant(PurchaseEvidence, report: AttemptReport)
        /// Ended, held or rescheduled here.
        case ended
    }

    /// The ports of one attempt.
    public struct Apple: Sendable {
        public var verifyReceipt: any AppleReceiptVerifying
        /// The app's Server API, when it has a key: the stand-in.
        public var serverAPI: (any AppleHistoryFetching)?
        /// Apple's health per endpoint; nil without a health monitor.
        public var health: @Sendable (AppleEndpointName) -> (any AppleAvailability)?

        public init(
            verifyReceipt: any AppleReceiptVerifying, serverAPI: (any AppleHistoryFetching)?,
            health: @escaping @Sendable (AppleEndpointName) -> (any AppleAvailability)?
        ) {
            self.verifyReceipt = verifyReceipt
            self.serverAPI = serverAPI
            self.health = health
        }
    }

    let outcomes: VerificationOutcomes
    let settings: Settings
    let observer: any ReceiptAttemptObserver
    let unitRandom: @Sendable () -> Double
    let now: @Sendable () -> Date

    public init(
        outcomes: VerificationOutcomes, settings: Settings, observer: any ReceiptAttemptObserver, unitRandom: @escaping @Sendable () -> Double,
        now: @escaping @Sendable () -> Date
    ) {
        self.outcomes = outcomes
        self.settings = settings
        self.observer = observer
        self.unitRandom = unitRandom
        self.now = now
    }

    public func callAsFunction(
        _ lease: JobLease, verification: VerificationRecord, local: LocalCheck, app: App, apple: Apple
    ) async throws
        -> Step
    {
        if case .rejected(let reason) = local {
            let report = AttemptReport(statuses: [], environment: nil, reason: reason)
            _ = try await outcomes.finishInvalid(lease, verificationId: verification.id, report: report, now: now())
            observer.rejectedLocally(reason)
            return .ended
        }
        var plan = ReceiptAttemptPlan(acceptsSandbox: app.acceptsSandbox, now: now())
        var action = plan.start()
        var admittedAt = now()
        while true {
            switch action {
            case .admit(let environment):
                admittedAt = now()
                action = plan.admitted(await apple.health(.verifyReceipt(environment))?.admitting(now: admittedAt) ?? .call)
            case .call(let environment, let probe):
                let askedAt = now()
                let classification = await apple.verifyReceipt.verify(in: environment)
                // Any answer of Apple's own (valid or not) shows it is up; a transient one does not.
                let answered = if case .transient = classification { false } else { true }
                await apple.health(.verifyReceipt(environment))?.record(answered: answered, probe: probe, sentAt: admittedAt, now: now())
                action = plan.answered(classification, askedAt: askedAt)
            case .conclude(let conclusion):
                return try await conclude(conclusion, plan: &plan, lease, verification: verification, app: app, local: local, apple: apple)
            }
        }
    }

    /// Writes how the attempt ended, in the transaction that ends the job.
    private func conclude(
        _ conclusion: ReceiptAttemptPlan.Conclusion, plan: inout ReceiptAttemptPlan, _ lease: JobLease, verification: VerificationRecord,
        app: App, local: LocalCheck, apple: Apple
    ) async throws -> Step {
        let at = now()
        let (statuses, environment) = (plan.statuses, plan.environment.storageName)
        let report = { (reason: FailureReason?) in AttemptReport(statuses: statuses, environment: environment, reason: reason) }
        switch conclusion {
        case .grant(let evidence, _):
            return .grant(evidence, report: report(nil))
        case .invalid(let reason):
            _ = try await outcomes.finishInvalid(lease, verificationId: verification.id, report: report(reason), now: at)
            observer.finishedInvalid()
        case .hold(let reason):
            observer.held(reason)
            _ = try await outcomes.holdForConfiguration(
                lease, verificationId: verification.id, report: report(reason), configurationFingerprint: app.fingerprint, now: at)
        case .unanswered(let reason, let waitUntil):
            if let (evidence, answered) = await standIn(local, app: app, reason: reason, apple: apple, now: at) {
                // `stoodIn` concludes with a grant or a refusal, never `unanswered`: no second stand-in.
                return try await conclude(
                    plan.stoodIn(evidence, environment: answered), plan: &plan, lease, verification: verification, app: app, local: local,
                    apple: apple)
            }
            try await scheduleRetry(
                reason: reason, waitUntil: waitUntil, plan: plan, lease, verification: verification, app: app, local: local, apple: apple)
        }
        return .ended
    }

    /// No answer to act on and no stand-in: the verification waits for its next attempt, maybe
    /// with provisional access (the outage policy).
    private func scheduleRetry(
        reason: FailureReason, waitUntil: Date?, plan: ReceiptAttemptPlan, _ lease: JobLease, verification: VerificationRecord, app: App,
        local: LocalCheck, apple: Apple
    ) async throws {
        // The backoff counts from the end of this attempt: the stand-in's own retries took time.
        let ended = now()
        let next: Date
        if let waitUntil {
            next = ReceiptAttemptPlan.waitingRetry(
                until: waitUntil, ended: ended, probeCapSeconds: settings.probeCapSeconds, unitRandom: unitRandom())
        } else {
            // Apple came back while this call was out (it hung past the return): the release has
            // passed, so this one goes now, like the released ones. Apple down: back round the
            // probe. Otherwise the job's own backoff.
            let scheduled = settings.retry.delay(afterAttempt: lease.attempt, unitRandom: unitRandom())
            let delay =
                await apple.health(.verifyReceipt(plan.environment))?.delayAfterFailure(
                    sentAt: plan.askedAt, scheduled: scheduled, now: ended, unitRandom: unitRandom()) ?? scheduled
            next = ended.addingTimeInterval(delay)
        }
        let report = AttemptReport(statuses: plan.statuses, environment: nil, reason: reason)
        let provisional = try await provisionalGrants(local, verification: verification, app: app, apple: apple, now: ended)
        _ = try await outcomes.scheduleRetry(
            lease, verificationId: verification.id, report: report, at: next, provisional: provisional, countsAttempt: waitUntil == nil,
            now: ended)
        observer.retried(reason: reason, waitingForApple: waitUntil != nil, provisional: provisional.count)
    }

    /// verifyReceipt failed: when the receipt's signature and chain checked locally (so its
    /// transaction ids are Apple's) and the app has a Server API key, ask the Server API for the
    /// customer's history instead. Only a positive, verified answer is used; anything else leaves
    /// the verification to its retry schedule.
    private func standIn(
        _ local: LocalCheck, app: App, reason: FailureReason, apple: Apple, now at: Date
    ) async
        -> (PurchaseEvidence, AppStoreEnvironment)?
    {
        guard case .verified(let receipt) = local, receipt.bundleId == app.bundleId, let history = apple.serverAPI else { return nil }
        var ids: [String] = []
        for purchase in receipt.purchases {
            if let id = purchase.originalTransactionId ?? purchase.transactionId, !ids.contains(id) { ids.append(id) }
        }
        guard !ids.isEmpty else { return nil }
        // The Server API has a health of its own: while it is down too, only its probe calls it.
        let health = apple.health(.serverAPI(receipt.environment == .production ? .production : .sandbox))
        let admittedAt = now()
        let admission = await health?.admitting(now: admittedAt) ?? .call
        if case .wait = admission {
            observer.standIn(.appleDown, reason: reason)
            return nil
        }
        let probe = if case .probe = admission { true } else { false }
        var answered = true
        var result: (PurchaseEvidence, AppStoreEnvironment)?
        do {
            switch try await history.fetch(transactionIds: ids, now: at) {
            case .verified(let evidence, let environment):
                observer.standIn(.verified, reason: reason)
                result = (evidence, environment)
            case .rejected(let refusal, let message):
                observer.standIn(.rejected(refusal, message: message), reason: reason)
            }
        } catch {
            answered = (error as? AppleCallFailure)?.appleAnswered ?? true
            observer.standIn(.unavailable("\(error)"), reason: reason)
        }
        await health?.record(answered: answered, probe: probe, sentAt: admittedAt, now: now())
        return result
    }

    /// The outage policy: after Apple has failed for `afterSeconds`, a receipt whose signature and
    /// chain verified locally unlocks what it shows, provisionally. Nothing when the policy is off
    /// (the default), the receipt was not checked locally, or the outage is still young.
    ///
    /// With Apple's health kept, the outage's age is how long verifyReceipt has been down (a
    /// receipt that arrives an hour into an outage is covered at once; one that meets a single
    /// failed call while Apple is up is not); without, it is how long this receipt has waited.
    private func provisionalGrants(
        _ local: LocalCheck, verification: VerificationRecord, app: App, apple: Apple, now: Date
    ) async throws
        -> [ProvisionalGrant]
    {
        let policy = settings.outagePolicy
        let outageAge: TimeInterval? =
            if let health = apple.health(.verifyReceipt(AppStoreRouting.firstEnvironment)) {
                health.downSince().map { now.timeIntervalSince($0) }
            } else {
                now.timeIntervalSince(verification.createdAt)
            }
        guard policy.enabled, case .verified(let receipt) = local, receipt.bundleId == app.bundleId, let outageAge,
            outageAge >= policy.afterSeconds
        else { return [] }
        let purchases = receipt.purchases.compactMap { purchase -> ProvisionalPlanner.Purchase? in
            guard let productId = purchase.productId, let transactionId = purchase.transactionId, let purchaseDate = purchase.purchaseDate
            else { return nil }
            return ProvisionalPlanner.Purchase(
                productId: productId, transactionId: transactionId, originalTransactionId: purchase.originalTransactionId ?? transactionId,
                purchaseDate: purchaseDate, expiresDate: purchase.expiresDate, cancellationDate: purchase.cancellationDate)
        }
        let catalog = try await outcomes.catalog(appId: app.id)
        return ProvisionalPlanner.plan(
            purchases, catalog: catalog, policy: policy, appId: app.id, appUserId: verification.appUserId, verificationId: verification.id,
            now: now)
    }
}
