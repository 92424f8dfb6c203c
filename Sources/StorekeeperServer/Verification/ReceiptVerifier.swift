import AppStoreClient
import AppStoreModels
import Foundation
import StorekeeperCore
import StorekeeperDomain

/// `RunReceiptAttempt`'s port to verifyReceipt: one call with the app's request, its duration,
/// Apple's status and the call's tally kept for the metrics and the health page.
struct ReceiptVerifier: AppleReceiptVerifying {
    let client: VerifyReceiptClient
    let request: VerifyReceiptRequest
    let timeout: Double
    let metrics: MetricsRegistry
    let calls: AppleCallRecorder?
    let now: @Sendable () -> Date

    func verify(in environment: AppStoreEnvironment) async -> AttemptClassification {
        let started = ContinuousClock.now
        let result = await client.verify(request, environment: environment, timeout: timeout)
        let elapsed = started.duration(to: .now)
        let classification = AttemptClassification.classify(result, environment: environment)
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
        return classification
    }
}

/// Composition's maker of the verifyReceipt port: the client and the call's settings are held
/// here, so a job handler only hands over the request its job carries.
struct ReceiptVerifiers: Sendable {
    let client: VerifyReceiptClient
    let timeout: Double
    let metrics: MetricsRegistry
    let calls: AppleCallRecorder?
    let now: @Sendable () -> Date

    func callAsFunction(_ request: VerifyReceiptRequest) -> ReceiptVerifier {
        ReceiptVerifier(client: client, request: request, timeout: timeout, metrics: metrics, calls: calls, now: now)
    }
}
