import Foundation
import JobQueue
import Persistence
import StorekeeperDomain
import TestFixtures
import Testing

@testable import StorekeeperCore

@Suite("job lifecycle")
struct JobLifecycleTests {
    let at = referenceTime

    @Test("every way an attempt ends starts from running and says what the row becomes")
    func endings() {
        let completed = JobLifecycle.ending(.completed(reason: nil))
        #expect(completed.from == .running && completed.to == .completed && completed.finalizes && completed.lastError == nil)
        let refused = JobLifecycle.ending(.completed(reason: "bundle_id_mismatch"))
        #expect(refused.to == .completed && refused.lastError == "bundle_id_mismatch")
        let retry = JobLifecycle.ending(.retry(at: at, reason: "apple_http_503"))
        #expect(retry.to == .available && retry.runAt == at && !retry.finalizes && !retry.uncountsAttempt)
        let held = JobLifecycle.ending(.held(reason: "configuration_error"))
        #expect(held.to == .held && held.runAt == nil && !held.finalizes)
        let discarded = JobLifecycle.ending(.discarded(reason: "no handler"))
        #expect(discarded.to == .discarded && discarded.finalizes)
        let released = JobLifecycle.ending(.released(at: at, reason: releasedReason))
        #expect(released.to == .available && released.runAt == at && released.uncountsAttempt && !released.finalizes)
    }

    @Test("a job that no lease holds cannot end an attempt", arguments: [JobState.available, .completed, .discarded, .held])
    func refusedOutsideRunning(state: JobState) {
        let events: [JobLifecycle.Event] = [
            .completed(reason: nil), .discarded(reason: "x"), .retry(at: referenceTime, reason: "x"), .held(reason: "x"),
            .released(at: referenceTime, reason: "x"),
        ]
        for event in events { #expect(JobLifecycle.next(from: state, on: event) == nil) }
        #expect(JobLifecycle.next(from: .running, on: .completed(reason: nil)) != nil)
    }
}

@Suite("verification outcomes (decisions)")
struct VerificationOutcomeDecisionTests {
    func verification(_ state: VerificationState) -> LeasedVerification {
        LeasedVerification(id: "v", appId: "app", appUserId: "alice", state: state)
    }

    @Test("an attempt ends from the state actually stored; a lease holder counts as verifying")
    func endingFromStoredState() throws {
        for state in [VerificationState.pending, .retryScheduled, .verifying] {
            let (from, to) = try #require(VerificationOutcomes.ending(verification(state), on: .appleVerified))
            #expect(from == state && to == .verified)
        }
        #expect(VerificationOutcomes.ending(verification(.verifying), on: .transientFailure)?.1 == .retryScheduled)
        #expect(VerificationOutcomes.ending(verification(.verifying), on: .appleConfigurationError)?.1 == .configurationError)
    }

    @Test("a final verification is not changed by a late attempt: only its job is discarded", arguments: [VerificationState.verified, .invalid])
    func finalIsRefused(state: VerificationState) {
        #expect(VerificationOutcomes.ending(verification(state), on: .appleVerified) == nil)
        let decision = VerificationOutcomes.finish(
            verification(state), on: .appleVerified, report: AttemptReport(statuses: [0], environment: nil, reason: nil),
            grant: GrantPlan(), appId: "app", events: [], now: referenceTime, result: "granted", refused: "refused")
        #expect(decision.result == "refused")
        #expect(decision.writes.count == 1)
        guard case .job(let transition) = decision.writes.first else {
            Issue.record("expected the job's discard only")
            return
        }
        #expect(transition.to == .discarded && transition.lastError == "verification_state_\(state.rawValue)")
    }

    @Test(
        "a grant writes the plan, ends the provisional access it gave (only when it gave some), completes the job, finalizes the verification, then records its events"
    )
    func grantWrites() {
        var plan = GrantPlan()
        plan.summary.granted = ["t1"]
        let event = EventRule.invalid(appId: "app", appUserId: "alice", verificationId: "v", reason: nil, now: referenceTime)
        func kinds(_ leased: LeasedVerification) -> (LeasedDecision<Bool>, [String]) {
            let decision = VerificationOutcomes.finish(
                leased, on: .appleVerified, report: AttemptReport(statuses: [0], environment: "sandbox", reason: nil),
                grant: plan, appId: "app", events: [event], now: referenceTime, result: true, refused: false)
            return (
                decision,
                decision.writes.map { write -> String in
                    switch write {
                    case .grant(_, let appId): "grant:\(appId)"
                    case .endProvisionalGrants(let id): "end:\(id)"
                    case .job(let transition): "job:\(transition.to.rawValue)"
                    case .verification(let change): "verification:\(change.from.rawValue)->\(change.to.rawValue):\(change.finalizes)"
                    case .provisionalGrants: "provisional"
                    case .events(let batch): "events:\(batch.events.count)"
                    }
                }
            )
        }
        var withAccess = verification(.verifying)
        withAccess.provisionalGrants = [
            ProvisionalGrant(
                appId: "app", appUserId: "alice", verificationId: "v", transactionId: "t1", originalTransactionId: "t1", productId: "ads",
                expiresAt: referenceTime.addingTimeInterval(3600))
        ]
        let (decision, written) = kinds(withAccess)
        #expect(decision.result)
        #expect(written == ["grant:app", "end:v", "job:completed", "verification:verifying->verified:true", "events:1"])
        #expect(kinds(verification(.verifying)).1 == ["grant:app", "job:completed", "verification:verifying->verified:true", "events:1"])
        guard case .verification(let change) = decision.writes.dropLast().last else { return }
        #expect(change.grant?.granted == ["t1"])
    }
}
