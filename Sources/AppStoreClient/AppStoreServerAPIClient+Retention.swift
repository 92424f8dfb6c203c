public import AppStoreModels
public import Foundation
import NIOHTTP1

/// The Retention Messaging API's configuration calls, on the Server API's hosts and token. Each
/// names one environment: what is uploaded to the sandbox is not in production. Identifiers are
/// the caller's UUIDs, so a retried upload after a timeout is the same upload (Apple answers
/// 409 "already exists" to the second).
extension AppStoreServerAPIClient {
    public func uploadRetentionImage(
        _ imageIdentifier: String, png: Data, size: RetentionImageSize?, environment: AppStoreEnvironment
    ) async throws {
        let _: (Empty, AppStoreEnvironment) = try await call(
            .retentionConfiguration, .PUT, "/inApps/v1/messaging/image/\(escape(imageIdentifier))",
            query: size.map { [("imageSize", $0.rawValue)] } ?? [], body: png, contentType: "image/png", placement: .only(environment))
    }

    public func deleteRetentionImage(_ imageIdentifier: String, environment: AppStoreEnvironment) async throws {
        let _: (Empty, AppStoreEnvironment) = try await call(
            .retentionConfiguration, .DELETE, "/inApps/v1/messaging/image/\(escape(imageIdentifier))", placement: .only(environment))
    }

    public func retentionImages(environment: AppStoreEnvironment) async throws -> RetentionImageList {
        try await call(.retentionConfiguration, .GET, "/inApps/v1/messaging/image/list", placement: .only(environment)).0
    }

    public func uploadRetentionMessage(
        _ messageIdentifier: String, _ message: UploadRetentionMessage, environment: AppStoreEnvironment
    ) async throws {
        let _: (Empty, AppStoreEnvironment) = try await call(
            .retentionConfiguration, .PUT, "/inApps/v1/messaging/message/\(escape(messageIdentifier))",
            body: try JSONEncoder().encode(message), placement: .only(environment))
    }

    public func deleteRetentionMessage(_ messageIdentifier: String, environment: AppStoreEnvironment) async throws {
        let _: (Empty, AppStoreEnvironment) = try await call(
            .retentionConfiguration, .DELETE, "/inApps/v1/messaging/message/\(escape(messageIdentifier))", placement: .only(environment))
    }

    public func retentionMessages(environment: AppStoreEnvironment) async throws -> RetentionMessageList {
        try await call(.retentionConfiguration, .GET, "/inApps/v1/messaging/message/list", placement: .only(environment)).0
    }

    public func configureDefaultRetentionMessage(
        productId: String, locale: String, messageIdentifier: String, environment: AppStoreEnvironment
    ) async throws {
        let _: (Empty, AppStoreEnvironment) = try await call(
            .retentionConfiguration, .PUT, defaultMessagePath(productId, locale),
            body: try JSONEncoder().encode(RetentionDefaultMessage(messageIdentifier: messageIdentifier)), placement: .only(environment))
    }

    public func deleteDefaultRetentionMessage(productId: String, locale: String, environment: AppStoreEnvironment) async throws {
        let _: (Empty, AppStoreEnvironment) = try await call(
            .retentionConfiguration, .DELETE, defaultMessagePath(productId, locale), placement: .only(environment))
    }

    public func defaultRetentionMessage(
        productId: String, locale: String, environment: AppStoreEnvironment
    ) async throws
        -> RetentionDefaultMessage
    {
        try await call(.retentionConfiguration, .GET, defaultMessagePath(productId, locale), placement: .only(environment)).0
    }

    /// Configure Realtime URL. Production takes one only after a passing performance test in
    /// the sandbox (Apple's 4030026 otherwise).
    public func configureRealtimeURL(_ url: String, environment: AppStoreEnvironment) async throws {
        let _: (Empty, AppStoreEnvironment) = try await call(
            .retentionConfiguration, .PUT, "/inApps/v1/messaging/realtime/url",
            body: try JSONEncoder().encode(RetentionRealtimeURL(realtimeURL: url)), placement: .only(environment))
    }

    public func deleteRealtimeURL(environment: AppStoreEnvironment) async throws {
        let _: (Empty, AppStoreEnvironment) = try await call(
            .retentionConfiguration, .DELETE, "/inApps/v1/messaging/realtime/url", placement: .only(environment))
    }

    public func realtimeURL(environment: AppStoreEnvironment) async throws -> RetentionRealtimeURL {
        try await call(.retentionConfiguration, .GET, "/inApps/v1/messaging/realtime/url", placement: .only(environment)).0
    }

    /// Initiate Performance Test: Apple calls the sandbox realtime URL for a sandbox subscription,
    /// many times and concurrently, and answers at once with the test's `requestId`.
    public func startRetentionPerformanceTest(originalTransactionId: String) async throws -> RetentionPerformanceTestStarted {
        try await call(
            .retentionConfiguration, .POST, "/inApps/v1/messaging/performanceTest",
            body: try JSONEncoder().encode(RetentionPerformanceTestRequest(originalTransactionId: originalTransactionId)),
            placement: .only(.sandbox)
        ).0
    }

    public func retentionPerformanceTestResult(_ requestId: String) async throws -> RetentionPerformanceTestResult {
        try await call(
            .retentionConfiguration, .GET, "/inApps/v1/messaging/performanceTest/result/\(escape(requestId))", placement: .only(.sandbox)
        ).0
    }

    private func defaultMessagePath(_ productId: String, _ locale: String) -> String {
        "/inApps/v1/messaging/default/\(escape(productId))/\(escape(locale))"
    }
}
