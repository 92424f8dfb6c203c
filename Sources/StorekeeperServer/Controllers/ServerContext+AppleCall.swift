import AppStoreClient
import AppStoreModels
import Foundation
import Hummingbird
import StorekeeperCore

/// What every operator route that calls Apple with the app's In-App Purchase key shares: the
/// app's client and the environment asked for, and Apple's answer in
/// Storekeeper's terms.
extension ServerContext {
    func appleCall(
        _ request: Request, _ ctx: AdminRequestContext
    ) throws -> (AppConfiguration, AppStoreServerAPIClient, AppStoreServerAPIClient.Placement) {
        let app = try self.app(id: try ctx.parameters.decoded("app"))
        guard let client = serverAPIClients[app.id] else {
            throw StorekeeperError(.serverAPINotConfigured, "app '\(app.id)' has no serverAPI key")
        }
        let placement: AppStoreServerAPIClient.Placement
        switch try QueryInput(request).oneOf("environment", ["production", "sandbox"]) {
        case "production"?: placement = .only(.production)
        case "sandbox"?: placement = .only(.sandbox)
        default: placement = app.acceptSandbox ? .either : .only(.production)
        }
        return (app, client, placement)
    }

    /// Apple's answer in Storekeeper's terms: an id Apple does not know is 404, a request Apple
    /// refuses is 422 with Apple's code, anything else (5xx, timeouts, 429 beyond the wait) 502.
    /// While the Server API is known to be down (in the environment asked first), answers
    /// `apple_unavailable` at once instead of holding the operator for a timeout.
    func apple<T>(_ placement: AppStoreServerAPIClient.Placement, _ call: () async throws -> T) async throws -> T {
        let first: AppStoreEnvironment = if case .only(let environment) = placement { environment } else { .production }
        if let health = appleHealth, let since = await health.knownDown(.serverAPI(first.storageName), now: now()) {
            throw StorekeeperError(
                .appleUnavailable,
                "App Store Server API (\(first.storageName)) is down since \(since.formatted(StorekeeperJSON.plainStyle)); not called (try again once it answers)"
            )
        }
        do {
            return try await call()
        } catch let error as ServerAPIError {
            let apple = error.apiErrorCode.map { "Apple error \($0): " } ?? ""
            switch error.code {
            case .apiError where error.httpStatus == 404:
                throw StorekeeperError(.notFound, "\(apple)\(error.message)", cause: error)
            case .apiError:
                throw StorekeeperError(.appleRejected, "\(apple)\(error.message)", cause: error)
            default:
                throw StorekeeperError(.appleUnavailable, "App Store Server API: \(error)", cause: error)
            }
        }
    }
}
