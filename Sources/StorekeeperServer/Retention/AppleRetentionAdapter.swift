import AppStoreClient
import AppStoreModels
import Foundation
import StorekeeperCore

/// `ConfigureRetention`'s port to Apple over the app's `AppStoreServerAPIClient`: each call
/// through `ServerContext.apple` (answered at once while Apple is known to be down; Apple's
/// refusals as `AppleActionError`).
struct AppleRetentionAdapter: AppleRetentionAPI {
    let client: AppStoreServerAPIClient
    let context: ServerContext

    func retentionMessages(environment: AppStoreEnvironment) async throws -> RetentionMessageList {
        try await context.apple(.only(environment)) { try await client.retentionMessages(environment: environment) }
    }

    func uploadRetentionMessage(_ messageIdentifier: String, _ message: UploadRetentionMessage, environment: AppStoreEnvironment) async throws {
        try await context.apple(.only(environment)) { try await client.uploadRetentionMessage(messageIdentifier, message, environment: environment) }
    }

    func deleteRetentionMessage(_ messageIdentifier: String, environment: AppStoreEnvironment) async throws {
        try await context.apple(.only(environment)) { try await client.deleteRetentionMessage(messageIdentifier, environment: environment) }
    }

    func retentionImages(environment: AppStoreEnvironment) async throws -> RetentionImageList {
        try await context.apple(.only(environment)) { try await client.retentionImages(environment: environment) }
    }

    func uploadRetentionImage(_ imageIdentifier: String, png: Data, size: RetentionImageSize?, environment: AppStoreEnvironment) async throws {
        try await context.apple(.only(environment)) {
            try await client.uploadRetentionImage(imageIdentifier, png: png, size: size, environment: environment)
        }
    }

    func deleteRetentionImage(_ imageIdentifier: String, environment: AppStoreEnvironment) async throws {
        try await context.apple(.only(environment)) { try await client.deleteRetentionImage(imageIdentifier, environment: environment) }
    }

    func defaultRetentionMessage(productId: String, locale: String, environment: AppStoreEnvironment) async throws -> RetentionDefaultMessage {
        try await context.apple(.only(environment)) {
            try await client.defaultRetentionMessage(productId: productId, locale: locale, environment: environment)
        }
    }

    func configureDefaultRetentionMessage(
        productId: String, locale: String, messageIdentifier: String, environment: AppStoreEnvironment
    )
        async throws
    {
        try await context.apple(.only(environment)) {
            try await client.configureDefaultRetentionMessage(
                productId: productId, locale: locale, messageIdentifier: messageIdentifier, environment: environment)
        }
    }

    func deleteDefaultRetentionMessage(productId: String, locale: String, environment: AppStoreEnvironment) async throws {
        try await context.apple(.only(environment)) {
            try await client.deleteDefaultRetentionMessage(productId: productId, locale: locale, environment: environment)
        }
    }

    func realtimeURL(environment: AppStoreEnvironment) async throws -> RetentionRealtimeURL {
        try await context.apple(.only(environment)) { try await client.realtimeURL(environment: environment) }
    }

    func configureRealtimeURL(_ url: String, environment: AppStoreEnvironment) async throws {
        try await context.apple(.only(environment)) { try await client.configureRealtimeURL(url, environment: environment) }
    }

    func deleteRealtimeURL(environment: AppStoreEnvironment) async throws {
        try await context.apple(.only(environment)) { try await client.deleteRealtimeURL(environment: environment) }
    }

    func startRetentionPerformanceTest(originalTransactionId: String) async throws -> RetentionPerformanceTestStarted {
        try await context.apple(.only(.sandbox)) { try await client.startRetentionPerformanceTest(originalTransactionId: originalTransactionId) }
    }

    func retentionPerformanceTestResult(_ requestId: String) async throws -> RetentionPerformanceTestResult {
        try await context.apple(.only(.sandbox)) { try await client.retentionPerformanceTestResult(requestId) }
    }
}
