import Foundation
import JobQueue
import Persistence
import StorekeeperCore
import StorekeeperDomain
import StorekeeperTesting
import Testing

extension UseCaseTests {
    @Test(
        "refund requests: stored with their notification and job, once; answered once, guarded, with its event; off means no job",
        arguments: StoreFactory.all)
    func refundRequests(factory: StoreFactory) async throws {
        let store = try await factory.make()
        let ingest = IngestNotification(store: store)
        let answers = AnswerRefundRequests(store: store)
        let policy = RefundPolicy(mode: .preferDecline, customersConsented: true)
        var request = notification("rr", original: "1", purchase: .consumptionRequest(.init(transactionId: "1", reason: "OTHER", policy: policy)))
        request.notificationType = "CONSUMPTION_REQUEST"
        #expect(try await ingest(request, now: t0).outcome == .consumptionRequested)
        #expect(!(try await ingest(request, now: t0).created), "a redelivery stores nothing more")
        let stored = try #require(try await store.refundRequest(appId: "app", notificationUUID: "rr"))
        #expect(stored.state == .pending && stored.deadline == t0.addingTimeInterval(RefundRequest.answerWindow) && stored.reason == "OTHER")
        let jobs = try await store.leaseJobs(kinds: [answerRefundRequestJobKind], limit: 10, owner: "t", now: t0, leaseDuration: 30)
        #expect(jobs.map(\.jobId) == [stored.jobId] && jobs.first?.payload == "rr", "one job, in the notification's transaction")

        let step = try await answers.prepare(jobId: try #require(stored.jobId), policy: { $0 == "app" ? policy : nil }, now: t0)
        guard case .send(let pending, let answer, let note) = step else {
            Issue.record("expected an answer to send: \(step)")
            return
        }
        #expect(answer.refundPreference == "DECLINE" && answer.deliveryStatus == "UNDELIVERED_OTHER" && note == "prefer_decline")
        #expect(try await answers.sent(pending, answer: answer, note: note, now: t0.addingTimeInterval(5)))
        #expect(!(try await answers.sent(pending, answer: answer, note: note, now: t0.addingTimeInterval(6))), "answered once")
        let answered = try #require(try await store.refundRequests(appId: "app", transactionId: "1", limit: 5).first)
        #expect(answered.state == .sent && answered.answer == answer && answered.answeredAt == t0.addingTimeInterval(5))
        #expect(try await answers.prepare(jobId: stored.jobId!, policy: { _ in policy }, now: t0) == .done(.sent))

        // Off: recorded as skipped, no job; past its deadline: expired without sending.
        var off = notification("off", original: "2", purchase: .consumptionRequest(.init(transactionId: "2", reason: nil, policy: RefundPolicy())))
        off.notificationType = "CONSUMPTION_REQUEST"
        _ = try await ingest(off, now: t0)
        let skipped = try #require(try await store.refundRequest(appId: "app", notificationUUID: "off"))
        #expect(skipped.state == .skipped && skipped.note == "policy_off" && skipped.jobId == nil)
        var late = notification("late", original: "3", purchase: .consumptionRequest(.init(transactionId: "3", reason: nil, policy: policy)))
        late.notificationType = "CONSUMPTION_REQUEST"
        _ = try await ingest(late, now: t0)
        let lateJob = try #require(try await store.refundRequest(appId: "app", notificationUUID: "late")?.jobId)
        #expect(
            try await answers.prepare(jobId: lateJob, policy: { _ in policy }, now: t0.addingTimeInterval(RefundRequest.answerWindow))
                == .done(.expired))
        #expect(
            try await store.refundRequests(appId: "app", transactionId: nil, limit: 10).map(\.state).sorted { $0.rawValue < $1.rawValue } == [
                .expired, .sent, .skipped,
            ])
        #expect(try await store.refundRequests(appId: "other", transactionId: nil, limit: 10).isEmpty)
    }
}
