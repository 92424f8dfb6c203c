import AppStoreClient
import AsyncHTTPClient
import Foundation

/// One App Store Server API client per app that has an In-App Purchase key. Each keeps its own
/// token (tokens name one bundle id).
enum ServerAPIClients {
    static func make(
        configuration: StorekeeperConfiguration, httpClient: HTTPClient, calls: AppleCallRecorder?, now: @escaping @Sendable () -> Date
    ) throws -> [String: AppStoreServerAPIClient] {
        var clients: [String: AppStoreServerAPIClient] = [:]
        var observer: (@Sendable (AppleCallObservation) -> Void)?
        if let calls { observer = { call in calls.record(call, at: now()) } }
        for app in configuration.apps {
            guard let credentials = app.serverAPICredentials else { continue }
            clients[app.id] = AppStoreServerAPIClient(
                httpClient: httpClient, endpoints: configuration.serverAPIEndpoints,
                tokens: try ServerAPITokenProvider(credentials: credentials),
                policy: ServerAPIRetryPolicy(timeoutSeconds: configuration.attemptTimeoutSeconds),
                throttle: ServerAPIThrottle(share: app.serverAPI?.rateLimitShare ?? configuration.serverAPIRateLimitShare), now: now,
                observer: observer)
        }
        return clients
    }
}
