public import AppStoreModels
public import Foundation
import StorekeeperErrors

/// Apple's Retention Messaging configuration calls, with one app's In-App Purchase key. The
/// server's adapter calls Apple (answering at once while Apple is known to be down); tests pass
/// a fake. A call Apple refuses, or that does not reach Apple, throws `AppleActionError`.
public protocol AppleRetentionAPI: Sendable {
    func retentionMessages(environment: AppStoreEnvironment) async throws -> RetentionMessageList
    func uploadRetentionMessage(_ messageIdentifier: String, _ message: UploadRetentionMessage, environment: AppStoreEnvironment) async throws
    func deleteRetentionMessage(_ messageIdentifier: String, environment: AppStoreEnvironment) async throws
    func retentionImages(environment: AppStoreEnvironment) async throws -> RetentionImageList
    func uploadRetentionImage(_ imageIdentifier: String, png: Data, size: RetentionImageSize?, environment: AppStoreEnvironment) async throws
    func deleteRetentionImage(_ imageIdentifier: String, environment: AppStoreEnvironment) async throws
    func defaultRetentionMessage(productId: String, locale: String, environment: AppStoreEnvironment) async throws -> RetentionDefaultMessage
    func configureDefaultRetentionMessage(
        productId: String, locale: String, messageIdentifier: String, environment: AppStoreEnvironment)
        async throws
    func deleteDefaultRetentionMessage(productId: String, locale: String, environment: AppStoreEnvironment) async throws
    func realtimeURL(environment: AppStoreEnvironment) async throws -> RetentionRealtimeURL
    func configureRealtimeURL(_ url: String, environment: AppStoreEnvironment) async throws
    func deleteRealtimeURL(environment: AppStoreEnvironment) async throws
    /// Always the sandbox's: Apple tests a URL there before it takes a production one.
    func startRetentionPerformanceTest(originalTransactionId: String) async throws -> RetentionPerformanceTestStarted
    func retentionPerformanceTestResult(_ requestId: String) async throws -> RetentionPerformanceTestResult
}

/// An operator configures what Apple shows a subscriber who looks at cancelling: messages and
/// images, the default message per product and locale, the realtime URL Apple calls, and the
/// performance test Apple runs against it before it takes a production URL. What Apple's
/// documentation states about an input is checked here, before Apple is called, so a mistake is
/// refused naming the field; what only Apple knows (an identifier already used, a message not
/// yet approved) comes back as Apple's refusal with its code.
public struct ConfigureRetention: Sendable {
    let apple: any AppleRetentionAPI
    /// The one environment the calls name (the performance test's is always the sandbox).
    public let environment: AppStoreEnvironment

    public init(apple: any AppleRetentionAPI, environment: AppStoreEnvironment) {
        self.apple = apple
        self.environment = environment
    }

    public func messages() async throws -> [RetentionMessageList.Item] {
        try await apple.retentionMessages(environment: environment).messageIdentifiers ?? []
    }

    /// The identifier as Apple lists it (lowercased).
    public func uploadMessage(_ messageIdentifier: String, _ message: UploadRetentionMessage) async throws -> String {
        let id = try Self.identifier(messageIdentifier, "messageIdentifier")
        let problems = message.problems
        guard problems.isEmpty else { throw AppleActionError(.invalidRequest, problems.joined(separator: "; ")) }
        try await apple.uploadRetentionMessage(id, message, environment: environment)
        return id
    }

    public func deleteMessage(_ messageIdentifier: String) async throws -> String {
        let id = try Self.identifier(messageIdentifier, "messageIdentifier")
        try await apple.deleteRetentionMessage(id, environment: environment)
        return id
    }

    public func images() async throws -> [RetentionImageList.Item] {
        try await apple.retentionImages(environment: environment).imageIdentifiers ?? []
    }

    /// `png`: the bytes as sent; their PNG signature is checked here, Apple checks the rest.
    public func uploadImage(_ imageIdentifier: String, png: Data, size: RetentionImageSize?) async throws -> String {
        let id = try Self.identifier(imageIdentifier, "imageIdentifier")
        guard png.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) else {
            throw AppleActionError(.invalidRequest, "the body must be a PNG image (Apple takes PNG without transparency)")
        }
        try await apple.uploadRetentionImage(id, png: png, size: size, environment: environment)
        return id
    }

    public func deleteImage(_ imageIdentifier: String) async throws -> String {
        let id = try Self.identifier(imageIdentifier, "imageIdentifier")
        try await apple.deleteRetentionImage(id, environment: environment)
        return id
    }

    /// The message Apple shows for the product and locale when the realtime URL does not answer.
    public func defaultMessage(productId: String, locale: String) async throws -> String? {
        try Self.checkProductAndLocale(productId, locale)
        return try await apple.defaultRetentionMessage(productId: productId, locale: locale, environment: environment).messageIdentifier
    }

    public func setDefaultMessage(productId: String, locale: String, messageIdentifier: String?) async throws -> String {
        try Self.checkProductAndLocale(productId, locale)
        guard let id = messageIdentifier, RetentionConfiguration.isUUID(id) else {
            throw AppleActionError(.invalidRequest, "messageIdentifier must be the UUID of an uploaded message")
        }
        try await apple.configureDefaultRetentionMessage(productId: productId, locale: locale, messageIdentifier: id, environment: environment)
        return id
    }

    public func deleteDefaultMessage(productId: String, locale: String) async throws {
        try Self.checkProductAndLocale(productId, locale)
        try await apple.deleteDefaultRetentionMessage(productId: productId, locale: locale, environment: environment)
    }

    public func realtimeURL() async throws -> String? {
        try await apple.realtimeURL(environment: environment).realtimeURL
    }

    /// `appId` names this server's own realtime route in the refusal.
    public func setRealtimeURL(_ url: String?, appId: String) async throws -> String {
        guard let url, Self.isRealtimeURL(url) else {
            throw AppleActionError(
                .invalidRequest,
                "realtimeURL must be an absolute http(s) URL of at most \(RetentionConfiguration.maximumRealtimeURLLength) bytes (this server's is …/v1/retention/\(appId))"
            )
        }
        try await apple.configureRealtimeURL(url, environment: environment)
        return url
    }

    public func deleteRealtimeURL() async throws {
        try await apple.deleteRealtimeURL(environment: environment)
    }

    /// Apple calls the sandbox's realtime URL with the subscription's renewals and reports how it
    /// answered (`performanceTestResult`).
    public func startPerformanceTest(originalTransactionId id: String) async throws -> RetentionPerformanceTestStarted {
        guard (1...20).contains(id.utf8.count), id.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else {
            throw AppleActionError(.invalidRequest, "originalTransactionId must be a sandbox subscription's original transaction id (digits)")
        }
        return try await apple.startRetentionPerformanceTest(originalTransactionId: id)
    }

    public func performanceTestResult(requestId: String) async throws -> (requestId: String, result: RetentionPerformanceTestResult) {
        let id = try Self.identifier(requestId, "requestId")
        return (id, try await apple.retentionPerformanceTestResult(id))
    }

    // MARK: - Rules

    /// Apple's identifiers here are UUIDs the developer chooses; sent lowercased, as Apple lists them.
    static func identifier(_ id: String, _ name: String) throws -> String {
        guard RetentionConfiguration.isUUID(id) else { throw AppleActionError(.invalidRequest, "\(name) must be a UUID") }
        return id.lowercased()
    }

    static func checkProductAndLocale(_ productId: String, _ locale: String) throws {
        var problems: [String] = []
        if productId.isEmpty || productId.utf8.count > 255 { problems.append("productId must be 1 to 255 bytes") }
        if !RetentionConfiguration.isLocale(locale) { problems.append("locale must be a locale such as en-US or fr_FR") }
        guard problems.isEmpty else { throw AppleActionError(.invalidRequest, problems.joined(separator: "; ")) }
    }

    public static func isRealtimeURL(_ url: String) -> Bool {
        guard url.utf8.count <= RetentionConfiguration.maximumRealtimeURLLength, let parsed = URLComponents(string: url),
            let scheme = parsed.scheme?.lowercased(), scheme == "https" || scheme == "http", let host = parsed.host, !host.isEmpty
        else { return false }
        return true
    }
}
