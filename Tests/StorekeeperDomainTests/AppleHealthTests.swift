import Foundation
import StorekeeperDomain
import TestFixtures
import Testing

/// Apple's health per endpoint, at fixed instants.
@Suite("Apple health state machine")
struct AppleHealthTests {
    let t0 = referenceTime
    func at(_ seconds: Double) -> Date { t0.addingTimeInterval(seconds) }
    let policy = AppleHealth.Policy(degradedAfterFailures: 2, downAfterFailures: 4, probeBaseSeconds: 1, probeCapSeconds: 8, probeTimeoutSeconds: 20)

    @Test("failures degrade, then stop the calls; an answer heals at once, with one transition each way")
    func states() {
        var health = AppleHealth(policy: policy, now: t0)
        #expect(health.admit(at: t0) == .call)
        #expect(health.record(answered: false, at: at(1)) == nil)
        #expect(health.record(answered: false, at: at(2)) == AppleHealth.Transition(from: .healthy, to: .degraded, at: at(2)))
        #expect(health.record(answered: false, at: at(3)) == nil)
        #expect(health.admit(at: at(3)) == .call, "degraded still calls")
        #expect(health.record(answered: false, at: at(4)) == AppleHealth.Transition(from: .degraded, to: .down, at: at(4)))
        #expect(health.state == .down && health.since == at(4))
        // A success in between resets the count: failures must be consecutive.
        var flaky = AppleHealth(policy: policy, now: t0)
        for second in 0..<20 { flaky.record(answered: second % 2 == 0, at: at(Double(second))) }
        #expect(flaky.state != .down)
    }

    @Test("while down: one probe at a time on its own backoff, everything else waits for it; a lost probe is replaced")
    func probes() {
        var health = AppleHealth(policy: policy, now: t0)
        for second in 1...4 { health.record(answered: false, at: at(Double(second))) }
        #expect(health.admit(at: at(4.5)) == .wait(until: at(5)), "the first probe is 1 s after going down")
        #expect(health.admit(at: at(5)) == .probe)
        // The probe is out: nobody else calls, however many ask.
        for _ in 0..<100 { #expect(health.admit(at: at(5.5)) != .probe) }
        #expect(health.record(answered: false, probe: true, at: at(6)) == nil)
        // Failed probes back off 1, 2, 4, 8, 8 s (the first after the probe at 6 s: 7 s).
        var probeTimes: [Double] = []
        var now = 6.0
        while probeTimes.count < 5 {
            switch health.admit(at: at(now)) {
            case .probe:
                probeTimes.append(now)
                health.record(answered: false, probe: true, at: at(now))
            case .wait(let until):
                now = until.timeIntervalSince(t0)
            case .call:
                Issue.record("a call while down")
                return
            }
        }
        #expect(probeTimes == [7, 9, 13, 21, 29])
        // A probe that never reports (its process died) is replaced after the timeout.
        let lost = probeTimes.last! + 8
        #expect(health.admit(at: at(lost)) == .probe)
        #expect(health.admit(at: at(lost + 19)) != .probe)
        #expect(health.admit(at: at(lost + 20)) == .probe)
        // Apple answers the probe: healthy, and the transition says so once.
        let healed = health.record(answered: true, probe: true, at: at(lost + 21))
        #expect(healed?.from == .down && healed?.to == .healthy && healed?.recovered == true)
        #expect(health.admit(at: at(lost + 21)) == .call && health.nextProbeAt == nil && health.failedProbes == 0)
        #expect(health.record(answered: true, at: at(lost + 22)) == nil)
    }

    @Test("a hung probe that was replaced fails late without ending the later probe or pushing the next one back")
    func staleProbe() {
        var health = AppleHealth(policy: policy, now: t0)
        for second in 1...4 { health.record(answered: false, at: at(Double(second))) }
        #expect(health.state == .down)
        let first = at(5)
        #expect(health.admit(at: first) == .probe)
        // It hangs past the probe timeout: a second probe replaces it.
        let second = first.addingTimeInterval(20)
        #expect(health.admit(at: second) == .probe)
        let nextBefore = health.nextProbeAt
        // The first finally fails: counted, but it is not the probe out now.
        #expect(health.record(answered: false, probe: true, sentAt: first, at: second.addingTimeInterval(1)) == nil)
        #expect(health.probeOutSince == second, "the later probe is still out")
        #expect(health.nextProbeAt == nextBefore, "the next probe is not pushed back")
        #expect(health.failedProbes == 0)
        // The later probe's own failure does move the backoff.
        #expect(health.record(answered: false, probe: true, sentAt: second, at: second.addingTimeInterval(2)) == nil)
        #expect(health.probeOutSince == nil && health.failedProbes == 1)
        #expect(health.nextProbeAt == second.addingTimeInterval(2 + policy.probeBaseSeconds))
    }

    @Test("after a return from down, late failures of calls sent before it are not counted: they cannot put it down again")
    func lateFailuresAfterReturn() {
        var health = AppleHealth(policy: policy, now: t0)
        let sent = at(1)
        for second in 1...4 { health.record(answered: false, at: at(Double(second))) }
        #expect(health.state == .down)
        #expect(health.admit(at: at(5)) == .probe)
        #expect(health.record(answered: true, probe: true, sentAt: at(5), at: at(6))?.to == .healthy)
        // Calls that hung through the outage fail now, one after another.
        for second in 7...20 { #expect(health.record(answered: false, sentAt: sent, at: at(Double(second))) == nil) }
        #expect(health.state == .healthy && health.consecutiveFailures == 0)
        // Failures of calls sent after the return count as ever.
        for second in 21...24 { health.record(answered: false, sentAt: at(Double(second)), at: at(Double(second))) }
        #expect(health.state == .down)
    }
}
