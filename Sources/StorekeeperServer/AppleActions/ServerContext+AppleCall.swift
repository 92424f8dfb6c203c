import AppStoreClient
import AppStoreModels
import Foundation
import Hummingbird
import StorekeeperCore
import StorekeeperErrors
import StorekeeperWire

/// What every operator route that calls Apple with the app's In-App Purchase key shares: the
/// app's client and the environment asked for, and Apple's answer in Storekeeper's terms.
extension ServerContext {
    /// The app in the path, its client, and the placement its `?environment=` asks for.
    func appleCall(_ request: Request, _ ctx: AdminRequestContext) throws -> (AppConfiguration, AppStoreServerAPIClient, ApplePlacement) {
        let app = try self.app(id: try ctx.parameters.decoded("app"))
        guard let client = serverAPIClients[app.id] else {
            throw StorekeeperError(.serverAPINotConfigured, "app '\(app.id)' has no serverAPI key")
        }
        let asked = try QueryInput(request).oneOf("environment", ["production", "sandbox"])
        return (app, client, ApplePlacement.asked(asked, acceptsSandbox: app.acceptSandbox))
    }

    /// An operator's action at Apple done, in `/metrics` by action and app.
    func countAppleAction(_ action: String, _ app: AppConfiguration) {
        metrics.increment(Metric.appleActionsTotal, labels: ["action": action, "app": app.id])
    }

    /// The operator's Apple actions on the app in the path, and the placement asked for.
    func appleActions(_ request: Request, _ ctx: AdminRequestContext) throws -> (AppConfiguration, ActAtApple, ApplePlacement) {
        let (app, client, placement) = try appleCall(request, ctx)
        let actions = ActAtApple(
            apple: AppleServerAPIAdapter(client: client, context: self), signed: GateSignedAnswers(gate: signedTransactionGate, app: app),
            appId: app.id, product: { [catalog = useCases.catalog] in try await catalog.product(appId: app.id, productId: $0) })
        return (app, actions, placement)
    }

    /// Apple's answer in Storekeeper's terms: an id Apple does not know is 404, a request Apple
    /// refuses is 422 with Apple's code, anything else (5xx, timeouts, 429 beyond the wait) 502.
    /// While the Server API is known to be down (in the environment asked first), answers
    /// `apple_unavailable` at once instead of holding the operator for a timeout.
    func apple<T>(_ placement: ApplePlacement, _ call: () async throws -> T) async throws -> T {
        let first = placement.single
        if let health = appleHealth, let since = await health.knownDown(.serverAPI(first.storageName), now: now()) {
            throw AppleActionError(
                .unavailable,
                "App Store Server API (\(first.storageName)) is down since \(since.formatted(StorekeeperJSON.plainStyle)); not called (try again once it answers)"
            )
        }
        do {
            return try await call()
        } catch let error as ServerAPIError {
            let apple = error.apiErrorCode.map { "Apple error \($0): " } ?? ""
            switch error.code {
            case .apiError where error.httpStatus == 404:
                throw AppleActionError(.notFound, "\(apple)\(error.message)", cause: error)
            case .apiError:
                throw AppleActionError(.rejected, "\(apple)\(error.message)", cause: error)
            default:
                throw AppleActionError(.unavailable, "App Store Server API: \(error)", cause: error)
            }
        }
    }
}
