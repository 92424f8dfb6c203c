import Logging
import StorekeeperCore
import StorekeeperDomain

/// What a receipt attempt came to, in `/metrics` and the log.
struct ReceiptAttemptMetrics: ReceiptAttemptObserver {
    let metrics: MetricsRegistry
    let logger: Logger
    let appId: String

    func rejectedLocally(_ reason: FailureReason) {
        metrics.increment(Metric.verificationsFinishedTotal, labels: ["outcome": "invalid"])
        metrics.increment(Metric.receiptsRejectedLocallyTotal, labels: ["reason": reason.rawValue])
    }

    func finishedInvalid() {
        metrics.increment(Metric.verificationsFinishedTotal, labels: ["outcome": "invalid"])
    }

    func held(_ reason: FailureReason) {
        logger.critical(
            "configuration error from Apple; verification held until the configuration changes", metadata: ["app": "\(appId)", "reason": "\(reason)"])
        metrics.increment(Metric.verificationsFinishedTotal, labels: ["outcome": "configuration_error"])
    }

    func standIn(_ outcome: RunReceiptAttempt.StandIn, reason: FailureReason) {
        let label: String
        switch outcome {
        case .appleDown: label = "apple_down"
        case .verified: label = "verified"
        case .rejected(let refusal, let message):
            logger.warning("Server API answer not usable", metadata: ["app": "\(appId)", "code": "\(refusal)", "message": "\(message)"])
            label = refusal.rawValue
        case .unavailable(let error):
            logger.info("Server API unavailable too", metadata: ["app": "\(appId)", "error": "\(error)"])
            label = "unavailable"
        }
        metrics.increment(Metric.serverApiStandInTotal, labels: ["outcome": label, "reason": reason.rawValue])
    }

    func retried(reason: FailureReason, waitingForApple: Bool, provisional: Int) {
        if waitingForApple { metrics.increment(Metric.verificationsWaitingForAppleTotal, labels: ["app": appId]) }
        if provisional > 0 { metrics.increment(Metric.provisionalGrantsTotal, labels: ["app": appId], by: provisional) }
        metrics.increment(Metric.verificationRetriesTotal, labels: ["reason": reason.rawValue])
    }
}
