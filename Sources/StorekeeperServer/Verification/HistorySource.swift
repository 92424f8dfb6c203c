import AppStoreClient
import AppStoreModels
import Foundation
import StorekeeperCore
import StorekeeperDomain

/// `RefreshFromServerAPI`'s port to Apple: the app's `ServerAPIHistory`, its client's failures as
/// `AppleCallFailure`.
struct HistorySource: AppleHistoryFetching {
    let history: ServerAPIHistory
    let app: AppConfiguration

    func fetch(transactionIds: [String], now: Date) async throws -> AppleHistoryOutcome {
        do {
            switch try await history.fetch(transactionIds: transactionIds, app: app, now: now) {
            case .verified(let evidence, let environment, _): return .verified(evidence, environment: environment)
            case .rejected(let reason, let message): return .rejected(reason: reason, message: message)
            }
        } catch let error as ServerAPIError {
            throw AppleCallFailure(
                code: error.code.rawValue, isTransient: error.isTransient, retryAfter: error.retryAfter,
                appleAnswered: ServerAPIHistory.appleAnswered(error), credentialsRefused: error.code == .unauthorized)
        }
    }
}
