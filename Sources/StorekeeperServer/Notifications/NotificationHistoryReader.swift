import AppStoreClient
import AppStoreModels
import Foundation
import StorekeeperCore
import StorekeeperErrors

/// `FillNotificationGaps`' port to Apple over the app's `AppStoreServerAPIClient`; a failed call
/// is Apple unavailable (`AppleActionError`).
struct NotificationHistoryReader: AppleNotificationHistory {
    let client: AppStoreServerAPIClient

    func page(
        _ request: NotificationHistoryRequest, paginationToken: String?, environment: AppStoreEnvironment
    ) async throws
        -> NotificationHistoryResponse
    {
        do {
            return try await client.notificationHistory(request, paginationToken: paginationToken, environment: environment)
        } catch let error as ServerAPIError {
            throw AppleActionError(.unavailable, "App Store Server API: \(error)", cause: error)
        }
    }
}
