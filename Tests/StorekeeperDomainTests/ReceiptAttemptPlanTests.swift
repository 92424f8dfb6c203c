import AppStoreModels
import Foundation
import StorekeeperDomain
import Testing

/// The receipt attempt's decisions with no network: each Apple answer, each admission, in the
/// order a job handler would feed them.
@Suite("receipt attempt plan")
struct ReceiptAttemptPlanTests {
    let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    func valid(_ environment: AppStoreEnvironment, inApp: [InAppTransaction]? = nil) -> AttemptClassification {
        let purchases =
            inApp ?? [
                InAppTransaction(productId: "coins", transactionId: "1", originalTransactionId: "1", purchaseDate: t0, originalPurchaseDate: t0)
            ]
        return .verified(VerifyReceiptResponse(status: .valid, environment: environment, receipt: ReceiptInfo(bundleId: "b", inApp: purchases)))
    }

    @Test("production first; 21007 goes to sandbox, which answers: granted there, statuses in order, asked at the last call")
    func redirectThenGrant() {
        var plan = ReceiptAttemptPlan(acceptsSandbox: true, now: t0)
        #expect(plan.start() == .admit(.production))
        #expect(plan.admitted(.call) == .call(.production, probe: false))
        let redirected = plan.answered(.redirect(to: .sandbox, status: .sandboxReceiptInProduction), askedAt: t0)
        #expect(redirected == .admit(.sandbox))
        #expect(plan.admitted(.probe) == .call(.sandbox, probe: true))
        guard case .conclude(.grant(let evidence, let environment)) = plan.answered(valid(.sandbox), askedAt: t0.addingTimeInterval(2)) else {
            Issue.record("a valid sandbox answer must be granted where sandbox is accepted")
            return
        }
        #expect(environment == .sandbox && evidence.purchases.map(\.transactionId) == ["1"])
        #expect(plan.statuses == [21007, 0] && plan.environment == .sandbox && plan.askedAt == t0.addingTimeInterval(2))
    }

    @Test("the sandbox rule holds for Apple's answer and for a stand-in; a valid answer without a receipt is refused")
    func refusals() {
        var plan = ReceiptAttemptPlan(acceptsSandbox: false, now: t0)
        _ = plan.admitted(.call)
        _ = plan.answered(.redirect(to: .sandbox, status: .sandboxReceiptInProduction), askedAt: t0)
        _ = plan.admitted(.call)
        #expect(plan.answered(valid(.sandbox), askedAt: t0) == .conclude(.invalid(.sandboxNotAccepted)))
        var standIn = ReceiptAttemptPlan(acceptsSandbox: false, now: t0)
        let evidence = PurchaseEvidence(source: .serverAPI, bundleId: "b", environment: "sandbox", purchases: [])
        #expect(standIn.stoodIn(evidence, environment: .sandbox) == .invalid(.sandboxNotAccepted))
        #expect(standIn.stoodIn(evidence, environment: .production) == .grant(evidence, environment: .production))
        var empty = ReceiptAttemptPlan(acceptsSandbox: true, now: t0)
        _ = empty.admitted(.call)
        let noReceipt = AttemptClassification.verified(VerifyReceiptResponse(status: .valid, environment: .production, receipt: nil))
        #expect(empty.answered(noReceipt, askedAt: t0) == .conclude(.invalid(.appleResponseMissingReceipt)))
    }

    @Test("Apple down: no call, the attempt waits until the probe's time; after a redirect too")
    func waiting() {
        var plan = ReceiptAttemptPlan(acceptsSandbox: true, now: t0)
        let until = t0.addingTimeInterval(30)
        #expect(plan.admitted(.wait(until: until)) == .conclude(.unanswered(.appleDown, waitUntil: until)))
        var second = ReceiptAttemptPlan(acceptsSandbox: true, now: t0)
        _ = second.admitted(.call)
        _ = second.answered(.redirect(to: .sandbox, status: .sandboxReceiptInProduction), askedAt: t0)
        #expect(second.admitted(.wait(until: until)) == .conclude(.unanswered(.appleDown, waitUntil: until)))
        #expect(second.statuses == [21007])
    }

    @Test("Apple's final no, a configuration error, a transient failure, and a loop of redirects")
    func endings() {
        var invalid = ReceiptAttemptPlan(acceptsSandbox: true, now: t0)
        _ = invalid.admitted(.call)
        #expect(
            invalid.answered(.invalid(reason: .receiptMalformed, status: .malformedReceipt), askedAt: t0)
                == .conclude(.invalid(.receiptMalformed)))
        var held = ReceiptAttemptPlan(acceptsSandbox: true, now: t0)
        _ = held.admitted(.call)
        #expect(
            held.answered(.configurationError(reason: .sharedSecretMismatch, status: .sharedSecretMismatch), askedAt: t0)
                == .conclude(.hold(.sharedSecretMismatch)))
        var failed = ReceiptAttemptPlan(acceptsSandbox: true, now: t0)
        _ = failed.admitted(.call)
        #expect(
            failed.answered(.transient(reason: .appleTimeout, status: nil), askedAt: t0) == .conclude(.unanswered(.appleTimeout, waitUntil: nil)))
        var loop = ReceiptAttemptPlan(acceptsSandbox: true, now: t0)
        var calls = 0
        var action = loop.start()
        while case .admit = action {
            action = loop.admitted(.call)
            calls += 1
            let to: AppStoreEnvironment = loop.environment == .production ? .sandbox : .production
            action = loop.answered(.redirect(to: to, status: .sandboxReceiptInProduction), askedAt: t0)
        }
        #expect(calls == AppStoreRouting.maximumHops)
        #expect(action == .conclude(.unanswered(.appleEnvironmentLoop, waitUntil: nil)))
    }

    @Test("a waiting verification comes back around the probe, spread over the probe cap, never before the attempt ended")
    func waitingRetry() {
        let until = t0.addingTimeInterval(10)
        #expect(ReceiptAttemptPlan.waitingRetry(until: until, ended: t0, probeCapSeconds: 4, unitRandom: 0) == until)
        #expect(ReceiptAttemptPlan.waitingRetry(until: until, ended: t0, probeCapSeconds: 4, unitRandom: 0.5) == until.addingTimeInterval(2))
        let late = t0.addingTimeInterval(20)
        #expect(ReceiptAttemptPlan.waitingRetry(until: until, ended: late, probeCapSeconds: 4, unitRandom: 0) == late)
    }
}
