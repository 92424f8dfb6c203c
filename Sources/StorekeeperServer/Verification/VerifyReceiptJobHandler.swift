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
    let attempts: VerificationAttempts
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
        var environment = AppStoreRouting.firstEnvironment
        var statuses: [Int] = []
        var classification = AttemptClassification.transient(reason: .appleNotCalled, status: nil)
        var askedAt = now()
        /// Set when Apple is down and this job is not the probe: it waits, without calling.
        var waitUntil: Date?
        var endpoint = AppleHealthMonitor.Endpoint.verifyReceipt(environment.storageName)
        for _ in 0..<AppStoreRouting.maximumHops {
            endpoint = AppleHealthMonitor.Endpoint.verifyReceipt(environment.storageName)
            var probe = false
            let admittedAt = now()
            switch await health?.admitting(endpoint, now: admittedAt) ?? .call {
            case .call: break
            case .probe: probe = true
            case .wait(let until): waitUntil = until
            }
            if waitUntil != nil {
                classification = .transient(reason: .appleDown, status: nil)
                break
            }
            askedAt = now()
            let started = ContinuousClock.now
            let result = await client.verify(request, environment: environment, timeout: configuration.attemptTimeoutSeconds)
            let elapsed = started.duration(to: .now)
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            classification = AttemptClassification.classify(result, environment: environment)
            record(result: result, classification: classification, environment: environment, seconds: seconds)
            if let health {
                // Any answer of Apple's own (valid or not) shows it is up; a transient one does not.
                let answered = if case .transient = classification { false } else { true }
                await health.record(endpoint, answered: answered, probe: probe, sentAt: admittedAt, now: now())
            }
            if let status = classification.appleStatus { statuses.append(status.rawValue) }
            guard case .redirect(let next, _) = classification else { break }
            environment = next
        }

        let at = now()
        switch classification {
        case .verified(let response):
            try await complete(
                lease, verification: verification, app: app,
                evidence: PurchaseEvidence(verifyReceipt: response, environment: environment, askedAt: askedAt), environment: environment,
                report: AttemptReport(statuses: statuses, environment: environment.storageName, reason: nil), now: at)
        case .invalid(let reason, _):
            let report = AttemptReport(statuses: statuses, environment: environment.storageName, reason: reason)
            _ = try await outcomes.finishInvalid(lease, verificationId: verification.id, report: report, now: at)
            metrics.increment(Metric.verificationsFinishedTotal, labels: ["outcome": "invalid"])
        case .configurationError(let reason, _):
            logger.critical(
                "configuration error from Apple; verification held until the configuration changes",
                metadata: ["app": "\(app.id)", "reason": "\(reason)"])
            let report = AttemptReport(statuses: statuses, environment: environment.storageName, reason: reason)
            _ = try await outcomes.holdForConfiguration(
                lease, verificationId: verification.id, report: report, configurationFingerprint: app.fingerprint, now: at)
            metrics.increment(Metric.verificationsFinishedTotal, labels: ["outcome": "configuration_error"])
        case .transient, .redirect:
            // A redirect after the last hop means Apple sent us round in circles: transient.
            let reason = if case .transient(let reason, _) = classification { reason } else { FailureReason.appleEnvironmentLoop }
            if let (evidence, answered) = await standIn(local, app: app, reason: reason, now: at) {
                try await complete(
                    lease, verification: verification, app: app, evidence: evidence, environment: answered,
                    report: AttemptReport(statuses: statuses, environment: answered.storageName, reason: nil), now: at)
                return .finishedByHandler
            }
            // The backoff counts from the end of this attempt: the stand-in's own retries took time.
            let ended = now()
            let next: Date
            if let waitUntil {
                // Not called: back around the next probe, spread over the probe backoff's cap so
                // the waiting do not all come at once; Apple's recovery releases them sooner.
                next = max(waitUntil, ended).addingTimeInterval(Double.random(in: 0...configuration.appleHealth.probeCapSeconds))
                metrics.increment(Metric.verificationsWaitingForAppleTotal, labels: ["app": app.id])
            } else {
                // Apple came back while this call was out (it hung past the return): the release
                // has passed, so this one goes now, like the released ones. Apple down: back
                // round the probe. Otherwise the job's own backoff.
                let scheduled = configuration.retry.delay(afterAttempt: lease.attempt, unitRandom: Double.random(in: 0..<1))
                let delay =
                    await health?.delayAfterFailure(
                        endpoint, sentAt: askedAt, scheduled: scheduled, now: ended, unitRandom: Double.random(in: 0..<1)) ?? scheduled
                next = ended.addingTimeInterval(delay)
            }
            let report = AttemptReport(statuses: statuses, environment: nil, reason: reason)
            let provisional = try await provisionalGrants(local, verification: verification, app: app, now: ended)
            _ = try await outcomes.scheduleRetry(
                lease, verificationId: verification.id, report: report, at: next, provisional: provisional, countsAttempt: waitUntil == nil,
                now: ended)
            if !provisional.isEmpty {
                metrics.increment(Metric.provisionalGrantsTotal, labels: ["app": app.id], by: Double(provisional.count))
            }
            metrics.increment(Metric.verificationRetriesTotal, labels: ["reason": reason.rawValue])
        }
        return .finishedByHandler
    }

    /// Grants a verified answer (verifyReceipt's or the Server API's) in the transaction that ends
    /// the job. `evidence` is nil when Apple's answer held no receipt.
    private func complete(
        _ lease: JobLease, verification: VerificationRecord, app: AppConfiguration, evidence: PurchaseEvidence?,
        environment: AppStoreEnvironment, report: AttemptReport, now at: Date
    ) async throws {
        var report = report
        if environment == .sandbox, !app.acceptSandbox {
            report.reason = .sandboxNotAccepted
            _ = try await outcomes.finishInvalid(lease, verificationId: verification.id, report: report, now: at)
            return
        }
        guard let evidence else {
            report.reason = .appleResponseMissingReceipt
            _ = try await outcomes.finishInvalid(lease, verificationId: verification.id, report: report, now: at)
            metrics.increment(Metric.verificationsFinishedTotal, labels: ["outcome": "invalid"])
            return
        }
        try await VerifiedGrant(attempts: attempts, configuration: configuration, metrics: metrics).complete(
            lease, verification: verification, app: app, evidence: evidence, report: report, now: at)
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
        let catalog = try await attempts.catalog(appId: app.id)
        return ProvisionalPlanner.plan(
            purchases, catalog: catalog, policy: policy, appId: app.id, appUserId: verification.appUserId,
            verificationId: verification.id, now: now)
    }

    private func record(result: VerifyReceiptCallResult, classification: AttemptClassification, environment: AppStoreEnvironment, seconds: Double) {
        let env = environment.storageName
        metrics.observe(Metric.appleRequestDurationSeconds, labels: ["environment": env], value: seconds)
        let label: String =
            switch result {
            case .timedOut: "timeout"
            case .connectionFailed: "connection_failed"
            case .answered(let http, _):
                if let status = classification.appleStatus { String(status.rawValue) } else { "http_\(http)" }
            }
        metrics.increment(Metric.appleResponsesTotal, labels: ["environment": env, "status": label])
    }
}

extension AttemptClassification {
    var appleStatus: AppStoreStatus? {
        switch self {
        case .verified(let response): return response.status
        case .redirect(_, let status): return status
        case .invalid(_, let status), .transient(_, let status): return status
        case .configurationError(_, let status): return status
        }
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
