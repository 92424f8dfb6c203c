import AppStoreClient
import AppStoreCrypto
import AppStoreModels
import Foundation
import JobQueue
import Logging
import Persistence
import StorekeeperCore
import StorekeeperDomain

/// Verifies one receipt with Apple per lease: production first, following 21007/21008, then
/// records the outcome. A verified receipt is granted in the same transaction that completes
/// the job; every other outcome reschedules, holds or ends the job in one transaction too.
struct VerifyReceiptJobHandler: VerificationJobHandler {
    let kind = verifyReceiptJobKind
    let outcomes: VerificationOutcomes
    let client: VerifyReceiptClient
    let gate: ReceiptGate?
    /// Per app with a Server API key: stands in for verifyReceipt while it fails.
    let serverAPIs: [String: ServerAPIHistory]
    let apps: [String: AppConfiguration]
    let configuration: StorekeeperConfiguration
    let metrics: MetricsRegistry
    let logger: Logger
    let now: @Sendable () -> Date
    /// Apple's health in this process: while verifyReceipt is down, only probes call it.
    var health: AppleHealthMonitor? = nil
    /// Tallies each call to verifyReceipt for the health page.
    var calls: AppleCallRecorder? = nil

    func verify(
        _ lease: JobLease, verification: VerificationRecord, data receipt: String, app: AppConfiguration
    ) async throws -> JobOutcome {

        let local = await gate?.check(receipt) ?? .unchecked
        if case .rejected(let reason) = local {
            // Forged or untrusted: decided locally, Apple never sees it.
            let report = AttemptReport(statuses: [], environment: nil, reason: reason)
            _ = try await outcomes.finishInvalid(lease, verificationId: verification.id, report: report, now: now())
            metrics.increment(Metric.verificationsFinishedTotal, labels: ["outcome": "invalid"])
            metrics.increment(Metric.receiptsRejectedLocallyTotal, labels: ["reason": reason.rawValue])
            return .finishedByHandler
        }
        let request = VerifyReceiptRequest(
            receiptData: receipt, password: app.sharedSecret, excludeOldTransactions: configuration.excludeOldTransactions)
        var plan = ReceiptAttemptPlan(acceptsSandbox: app.acceptSandbox, now: now())
        var action = plan.start()
        var admittedAt = now()
        while true {
            switch action {
            case .admit(let environment):
                admittedAt = now()
                action = plan.admitted(await health?.admitting(.verifyReceipt(environment.storageName), now: admittedAt) ?? .call)
            case .call(let environment, let probe):
                let askedAt = now()
                let started = ContinuousClock.now
                let result = await client.verify(request, environment: environment, timeout: configuration.attemptTimeoutSeconds)
                let elapsed = started.duration(to: .now)
                let classification = AttemptClassification.classify(result, environment: environment)
                record(result: result, classification: classification, environment: environment, elapsed: elapsed)
                // Any answer of Apple's own (valid or not) shows it is up; a transient one does not.
                let answered = if case .transient = classification { false } else { true }
                await health?.record(.verifyReceipt(environment.storageName), answered: answered, probe: probe, sentAt: admittedAt, now: now())
                action = plan.answered(classification, askedAt: askedAt)
            case .conclude(let conclusion):
                try await conclude(conclusion, plan: &plan, lease, verification: verification, app: app, local: local)
                return .finishedByHandler
            }
        }
    }

    /// Writes how the attempt ended, in the transaction that ends the job.
    private func conclude(
        _ conclusion: ReceiptAttemptPlan.Conclusion, plan: inout ReceiptAttemptPlan, _ lease: JobLease, verification: VerificationRecord,
        app: AppConfiguration, local: ReceiptGate.LocalCheck
    ) async throws {
        let at = now()
        let (statuses, environment) = (plan.statuses, plan.environment.storageName)
        let report = { (reason: FailureReason?) in AttemptReport(statuses: statuses, environment: environment, reason: reason) }
        switch conclusion {
        case .grant(let evidence, _):
            try await grant(
                lease, verification: verification, app: app, evidence: evidence, report: report(nil), now: at)
        case .invalid(let reason):
            _ = try await outcomes.finishInvalid(lease, verificationId: verification.id, report: report(reason), now: at)
            metrics.increment(Metric.verificationsFinishedTotal, labels: ["outcome": "invalid"])
        case .hold(let reason):
            logger.critical(
                "configuration error from Apple; verification held until the configuration changes",
                metadata: ["app": "\(app.id)", "reason": "\(reason)"])
            _ = try await outcomes.holdForConfiguration(
                lease, verificationId: verification.id, report: report(reason), configurationFingerprint: app.fingerprint, now: at)
            metrics.increment(Metric.verificationsFinishedTotal, labels: ["outcome": "configuration_error"])
        case .unanswered(let reason, let waitUntil):
            if let (evidence, answered) = await standIn(local, app: app, reason: reason, now: at) {
                // `stoodIn` concludes with a grant or a refusal, never `unanswered`: no second stand-in.
                try await conclude(
                    plan.stoodIn(evidence, environment: answered), plan: &plan, lease, verification: verification, app: app, local: local)
                return
            }
            try await scheduleRetry(
                reason: reason, waitUntil: waitUntil, plan: plan, lease, verification: verification, app: app, local: local)
        }
    }

    /// No answer to act on and no stand-in: the verification waits for its next attempt,
    /// maybe with provisional access (the outage policy).
    private func scheduleRetry(
        reason: FailureReason, waitUntil: Date?, plan: ReceiptAttemptPlan, _ lease: JobLease, verification: VerificationRecord,
        app: AppConfiguration, local: ReceiptGate.LocalCheck
    ) async throws {
        // The backoff counts from the end of this attempt: the stand-in's own retries took time.
        let ended = now()
        let next: Date
        if let waitUntil {
            next = ReceiptAttemptPlan.waitingRetry(
                until: waitUntil, ended: ended, probeCapSeconds: configuration.appleHealth.probeCapSeconds, unitRandom: Double.random(in: 0..<1))
            metrics.increment(Metric.verificationsWaitingForAppleTotal, labels: ["app": app.id])
        } else {
            // Apple came back while this call was out (it hung past the return): the release
            // has passed, so this one goes now, like the released ones. Apple down: back
            // round the probe. Otherwise the job's own backoff.
            let scheduled = configuration.retry.delay(afterAttempt: lease.attempt, unitRandom: Double.random(in: 0..<1))
            let delay =
                await health?.delayAfterFailure(
                    .verifyReceipt(plan.environment.storageName), sentAt: plan.askedAt, scheduled: scheduled, now: ended,
                    unitRandom: Double.random(in: 0..<1)) ?? scheduled
            next = ended.addingTimeInterval(delay)
        }
        let report = AttemptReport(statuses: plan.statuses, environment: nil, reason: reason)
        let provisional = try await provisionalGrants(local, verification: verification, app: app, now: ended)
        _ = try await outcomes.scheduleRetry(
            lease, verificationId: verification.id, report: report, at: next, provisional: provisional, countsAttempt: waitUntil == nil,
            now: ended)
        if !provisional.isEmpty {
            metrics.increment(Metric.provisionalGrantsTotal, labels: ["app": app.id], by: provisional.count)
        }
        metrics.increment(Metric.verificationRetriesTotal, labels: ["reason": reason.rawValue])
    }

    /// verifyReceipt failed: when the receipt's signature and chain checked locally (so its
    /// transaction ids are Apple's) and the app has a Server API key, ask the Server API for the
    /// customer's history instead. Only a positive, verified answer is used; anything else
    /// leaves the verification to its retry schedule.
    private func standIn(
        _ local: ReceiptGate.LocalCheck, app: AppConfiguration, reason: FailureReason, now: Date
    ) async -> (PurchaseEvidence, AppStoreEnvironment)? {
        guard case .verified(let receipt) = local, receipt.bundleId == app.bundleId, let history = serverAPIs[app.id] else { return nil }
        var ids: [String] = []
        for purchase in receipt.inAppPurchases {
            if let id = purchase.originalTransactionId ?? purchase.transactionId, !ids.contains(id) { ids.append(id) }
        }
        guard !ids.isEmpty else { return nil }
        // The Server API has a health of its own: while it is down too, only its probe calls it.
        let endpoint = AppleHealthMonitor.Endpoint.serverAPI(receipt.environment == .production ? "production" : "sandbox")
        let admittedAt = self.now()
        let admission = await health?.admitting(endpoint, now: admittedAt) ?? .call
        if case .wait = admission {
            metrics.increment(Metric.serverApiStandInTotal, labels: ["outcome": "apple_down", "reason": reason.rawValue])
            return nil
        }
        let probe = if case .probe = admission { true } else { false }
        var answered = true
        var result: (PurchaseEvidence, AppStoreEnvironment)?
        do {
            switch try await history.fetch(transactionIds: ids, app: app, now: now) {
            case .verified(let response, let environment, _):
                metrics.increment(Metric.serverApiStandInTotal, labels: ["outcome": "verified", "reason": reason.rawValue])
                result = (response, environment)
            case .rejected(let refusal, let message):
                logger.warning("Server API answer not usable", metadata: ["app": "\(app.id)", "code": "\(refusal)", "message": "\(message)"])
                metrics.increment(Metric.serverApiStandInTotal, labels: ["outcome": refusal.rawValue, "reason": reason.rawValue])
            }
        } catch {
            answered = ServerAPIHistory.appleAnswered(error)
            metrics.increment(Metric.serverApiStandInTotal, labels: ["outcome": "unavailable", "reason": reason.rawValue])
            logger.info("Server API unavailable too", metadata: ["app": "\(app.id)", "error": "\(error)"])
        }
        await health?.record(endpoint, answered: answered, probe: probe, sentAt: admittedAt, now: self.now())
        return result
    }

    /// The outage policy: after Apple has failed for `afterSeconds`, a receipt whose signature
    /// and chain verified locally unlocks what it shows, provisionally. Nothing when the policy is
    /// off (the default), the receipt was not checked locally, or the outage is still young.
    ///
    /// With Apple's health kept, the outage's age is how long verifyReceipt has been down (a
    /// receipt that arrives an hour into an outage is covered at once; one that meets a single
    /// failed call while Apple is up is not); without, it is how long this receipt has waited.
    private func provisionalGrants(
        _ local: ReceiptGate.LocalCheck, verification: VerificationRecord, app: AppConfiguration, now: Date
    ) async throws -> [ProvisionalGrant] {
        let policy = configuration.outagePolicy
        let outageAge: TimeInterval? =
            if let health {
                health.downSince(.verifyReceipt(AppStoreRouting.firstEnvironment.storageName)).map { now.timeIntervalSince($0) }
            } else {
                now.timeIntervalSince(verification.createdAt)
            }
        guard policy.enabled, case .verified(let receipt) = local, receipt.bundleId == app.bundleId,
            let outageAge, outageAge >= policy.afterSeconds
        else { return [] }
        let purchases = receipt.inAppPurchases.compactMap { purchase -> ProvisionalPlanner.Purchase? in
            guard let productId = purchase.productId, let transactionId = purchase.transactionId,
                let purchaseDate = purchase.purchaseDate
            else { return nil }
            return ProvisionalPlanner.Purchase(
                productId: productId, transactionId: transactionId,
                originalTransactionId: purchase.originalTransactionId ?? transactionId, purchaseDate: purchaseDate,
                expiresDate: purchase.expiresDate, cancellationDate: purchase.cancellationDate)
        }
        let catalog = try await outcomes.catalog(appId: app.id)
        return ProvisionalPlanner.plan(
            purchases, catalog: catalog, policy: policy, appId: app.id, appUserId: verification.appUserId,
            verificationId: verification.id, now: now)
    }

    private func record(result: VerifyReceiptCallResult, classification: AttemptClassification, environment: AppStoreEnvironment, elapsed: Duration) {
        let env = environment.storageName
        metrics.observe(Metric.appleRequestDurationSeconds, labels: ["environment": env], duration: elapsed)
        let label: String =
            switch result {
            case .timedOut: "timeout"
            case .connectionFailed: "connection_failed"
            case .answered(let http, _):
                if let status = classification.appleStatus { String(status.rawValue) } else { "http_\(http)" }
            }
        metrics.increment(Metric.appleResponsesTotal, labels: ["environment": env, "status": label])
        calls?.record(endpoint: .verifyReceipt(env), outcome: label, elapsed: elapsed, at: now())
    }
}

extension GrantResult {
    var outcomeLabel: String {
        switch self {
        case .granted: "verified"
        case .rejected: "invalid"
        case .leaseLost: "lease_lost"
        case .refused: "refused"
        case .waiting: "waiting"
        }
    }
}
