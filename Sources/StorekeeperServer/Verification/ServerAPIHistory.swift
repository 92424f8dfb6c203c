import AppStoreClient
import AppStoreModels
import Foundation
import StorekeeperDomain

/// What the App Store Server API says about a customer, verified like any signed data and
/// shaped as one verified answer for the grant planner: the transaction history of each given
/// transaction (one call covers every transaction of that Apple ID), plus the renewal info of
/// its subscriptions. Used when verifyReceipt is unavailable and to refresh a subscriber.
struct ServerAPIHistory: Sendable {
    let client: AppStoreServerAPIClient
    let gate: SignedTransactionGate

    enum Outcome: Sendable {
        case verified(PurchaseEvidence, environment: AppStoreEnvironment, transactions: Int)
        /// Apple answered, but what it signed cannot be granted (`code` says why).
        case rejected(reason: FailureReason, message: String)
    }

    /// Throws `ServerAPIError` when Apple cannot be asked (the caller retries later).
    /// Whether a failed Server API call still shows Apple up: an error of Apple's own (a 4xx
    /// answer, a refused token, a rate limit) does; no connection, a 5xx or an unreadable body
    /// does not.
    static func appleAnswered(_ error: any Error) -> Bool {
        guard let error = error as? ServerAPIError else { return true }
        return error.code != .unavailable && error.code != .malformedResponse
    }

    func fetch(transactionIds: [String], app: AppConfiguration, now: Date) async throws -> Outcome {
        // Ids whose customer history is already in hand, and transactions already collected.
        var covered = Set<String>()
        var collected = Set<String>()
        var transactions: [SignedTransaction] = []
        var environment: AppStoreEnvironment?
        for id in transactionIds where !covered.contains(id) {
            let (signed, answered) = try await client.completeTransactionHistory(
                id, in: environment.map { .only($0) } ?? .either)
            environment = environment ?? answered
            covered.insert(id)
            for jws in signed {
                switch try await gate.check(jws, app: app, now: now) {
                case .rejected(let reason, let message):
                    return .rejected(reason: reason, message: "history of \(id): \(message)")
                case .verified(let transaction, _, _, _):
                    guard let transactionId = transaction.transactionId else { continue }
                    covered.insert(transactionId)
                    if collected.insert(transactionId).inserted { transactions.append(transaction) }
                }
            }
        }
        guard let environment, !transactions.isEmpty else {
            return .rejected(reason: .serverAPINoTransactions, message: "Apple knows no transaction for these ids")
        }
        var renewals: [SignedRenewalInfo] = []
        if let subscription = transactions.first(where: { $0.type == .autoRenewable }), let id = subscription.transactionId {
            let (statuses, _) = try await client.subscriptionStatuses(id, in: .only(environment))
            for last in (statuses.data ?? []).flatMap({ $0.lastTransactions ?? [] }) {
                guard let signed = last.signedRenewalInfo else { continue }
                switch await gate.renewalInfo(signed, now: now) {
                case .success(let renewal): renewals.append(renewal)
                case .failure(let failure):
                    return .rejected(reason: FailureReason(rawValue: failure.code), message: "renewal info of \(last.originalTransactionId ?? "?")")
                }
            }
        }
        do {
            let evidence = try PurchaseEvidence(
                signedTransactions: transactions, renewals: renewals, environment: environment, source: .serverAPI)
            return .verified(evidence, environment: environment, transactions: transactions.count)
        } catch {
            return .rejected(reason: .jwsNotATransaction, message: "\(error)")
        }
    }
}
