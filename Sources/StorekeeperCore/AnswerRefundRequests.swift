public import Foundation
public import Persistence
public import StorekeeperDomain

/// Answers refund requests by the app's policy: what to send is decided here from what
/// Storekeeper knows of the purchase and its holder (`RefundAnswerRule`), and each way a request
/// ends (sent, skipped, expired, failed) is written once, guarded by "still pending", with its
/// event in the same transaction. The job handler only sends what `prepare` returns.
public struct AnswerRefundRequests: Sendable {
    public typealias Store = RefundRequestStore & LedgerStore & CreditStore

    let store: any Store

    public init(store: any Store) {
        self.store = store
    }

    public enum Step: Sendable, Hashable {
        /// Nothing to send: ended now or before.
        case done(RefundRequest.State)
        case send(RefundRequest, ConsumptionAnswer, note: String)
    }

    /// The next step for the request `jobId` answers, at `now`, by its app's policy (nil: the
    /// app is no longer configured); a request that ends without sending anything is ended here.
    public func prepare(jobId: String, policy: (_ appId: String) -> RefundPolicy?, now: Date) async throws -> Step {
        guard let request = try await store.refundRequest(jobId: jobId) else { return .done(.skipped) }
        guard request.state == .pending else { return .done(request.state) }
        guard let policy = policy(request.appId) else { return .done(try await end(request, as: .failed, note: "unknown_app", now: now)) }
        var facts = RefundAnswerRule.Facts(transaction: nil, creditBalance: 0)
        if let holder = request.appUserId {
            let owned = try await store.transactions(appId: request.appId, appUserId: holder)
            facts.transaction = owned.first { $0.transactionId == request.transactionId }
            let purchased = owned.filter { !$0.isRevoked }.reduce(0) { $0 + $1.credits }
            facts.creditBalance = purchased - (try await store.creditsSpent(appId: request.appId, appUserId: holder))
            // Requests Apple made before this one, for other purchases still not refunded: the
            // order is the stored one, the same for every run that answers either, so of two at
            // once the first counts the balance as its own and the second what is left.
            let earlier = Set(
                try await store.openRefundRequests(appId: request.appId, appUserId: holder).filter {
                    ($0.requestedAt, $0.notificationUUID) < (request.requestedAt, request.notificationUUID)
                        && $0.transactionId != request.transactionId
                }.map(\.transactionId))
            facts.claimedByEarlierRequests = owned.filter { !$0.isRevoked && earlier.contains($0.transactionId) }.reduce(0) { $0 + $1.credits }
        }
        switch RefundAnswerRule.decide(policy, request: request, facts: facts, now: now) {
        case .send(let answer, let note): return .send(request, answer, note: note)
        case .skip(let note): return .done(try await end(request, as: .skipped, note: note, now: now))
        case .expired: return .done(try await end(request, as: .expired, note: "deadline_passed", now: now))
        }
    }

    /// Apple took `answer`: the request is answered, with its `refund_request_answered` event.
    @discardableResult
    public func sent(_ request: RefundRequest, answer: ConsumptionAnswer, note: String, now: Date) async throws -> Bool {
        var answered = request
        answered.state = .sent
        answered.answer = answer
        answered.note = note
        answered.answeredAt = now
        let events = answered.event(.refundRequestAnswered, now: now).map { EventBatch(events: [$0]) }
        return try await store.finishRefundRequest(answered, events: events, now: now)
    }

    /// Apple refused the answer for good, or the app cannot call Apple: nothing more is tried.
    @discardableResult
    public func failed(_ request: RefundRequest, note: String, now: Date) async throws -> RefundRequest.State {
        try await end(request, as: .failed, note: note, now: now)
    }

    private func end(_ request: RefundRequest, as state: RefundRequest.State, note: String, now: Date) async throws -> RefundRequest.State {
        var ended = request
        ended.state = state
        ended.note = note
        ended.answeredAt = now
        // False when another run ended it first; either way it has ended.
        _ = try await store.finishRefundRequest(ended, events: nil, now: now)
        return state
    }

    public func requests(appId: String, transactionId: String?, limit: Int) async throws -> [RefundRequest] {
        try await store.refundRequests(appId: appId, transactionId: transactionId, limit: limit)
    }
}
