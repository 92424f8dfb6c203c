import AppStoreClient
import AppStoreModels
import Foundation
import Hummingbird
import StorekeeperCore

/// Operator routes over Apple's Retention Messaging configuration calls, with the app's In-App
/// Purchase key: the messages and images Apple shows when a subscriber looks at cancelling,
/// the default message per product and locale, the realtime URL Apple calls
/// (`POST /v1/retention/{app}` here), and the performance test Apple runs against it before it
/// takes a production URL. Each names one environment (`?environment=`, production unless
/// asked; the test is always the sandbox's). What Apple's documentation states about a body is
/// checked here, so a mistake is a 400 naming the field; what only Apple knows (an identifier
/// already used, a message not yet approved) comes back as Apple's refusal with its code.
struct RetentionConfigurationController {
    let context: ServerContext

    /// An image is a PNG of up to 3840 × 2160 pixels; this bounds what is read of one.
    static let maximumImageBytes = 16 * 1024 * 1024

    func register(on router: RouteTable) {
        let retention = router.admin("v1/admin/apps/:app/retention")
        retention.get("messages") { request, ctx in
            let (app, client, environment) = try call(request, ctx)
            let list = try await context.apple(.only(environment)) { try await client.retentionMessages(environment: environment) }
            count("retention_messages", app)
            return try StorekeeperJSON.response(
                MessagesAnswer(environment: environment.storageName, messages: list.messageIdentifiers ?? []))
        }
        retention.put("messages/:messageIdentifier") { request, ctx in
            let (app, client, environment) = try call(request, ctx)
            let id = try identifier(ctx, "messageIdentifier")
            let message = try StorekeeperJSON.decode(UploadRetentionMessage.self, from: try await context.body(request))
            let problems = message.problems
            guard problems.isEmpty else { throw StorekeeperError(.invalidRequest, problems.joined(separator: "; ")) }
            try await context.apple(.only(environment)) { try await client.uploadRetentionMessage(id, message, environment: environment) }
            count("retention_message_upload", app)
            return try StorekeeperJSON.response(Answer(environment: environment.storageName, messageIdentifier: id, uploaded: true))
        }
        retention.delete("messages/:messageIdentifier") { request, ctx in
            let (app, client, environment) = try call(request, ctx)
            let id = try identifier(ctx, "messageIdentifier")
            try await context.apple(.only(environment)) { try await client.deleteRetentionMessage(id, environment: environment) }
            count("retention_message_delete", app)
            return try StorekeeperJSON.response(Answer(environment: environment.storageName, messageIdentifier: id, deleted: true))
        }
        retention.get("images") { request, ctx in
            let (app, client, environment) = try call(request, ctx)
            let list = try await context.apple(.only(environment)) { try await client.retentionImages(environment: environment) }
            count("retention_images", app)
            return try StorekeeperJSON.response(ImagesAnswer(environment: environment.storageName, images: list.imageIdentifiers ?? []))
        }
        retention.put("images/:imageIdentifier") { request, ctx in
            let (app, client, environment) = try call(request, ctx)
            let id = try identifier(ctx, "imageIdentifier")
            let size = try QueryInput(request).oneOf("imageSize", RetentionImageSize.known.map(\.rawValue)).map(RetentionImageSize.init(rawValue:))
            let png = try await image(request)
            try await context.apple(.only(environment)) {
                try await client.uploadRetentionImage(id, png: png, size: size, environment: environment)
            }
            count("retention_image_upload", app)
            return try StorekeeperJSON.response(Answer(environment: environment.storageName, imageIdentifier: id, uploaded: true))
        }
        retention.delete("images/:imageIdentifier") { request, ctx in
            let (app, client, environment) = try call(request, ctx)
            let id = try identifier(ctx, "imageIdentifier")
            try await context.apple(.only(environment)) { try await client.deleteRetentionImage(id, environment: environment) }
            count("retention_image_delete", app)
            return try StorekeeperJSON.response(Answer(environment: environment.storageName, imageIdentifier: id, deleted: true))
        }
        registerDefaults(on: retention)
        registerRealtimeURL(on: retention)
        registerPerformanceTest(on: retention)
    }

    private func registerDefaults(on retention: RouterGroup<AdminRequestContext>) {
        retention.get("default-messages/:productId/:locale") { request, ctx in
            let (app, client, environment) = try call(request, ctx)
            let (productId, locale) = try productAndLocale(ctx)
            let answer = try await context.apple(.only(environment)) {
                try await client.defaultRetentionMessage(productId: productId, locale: locale, environment: environment)
            }
            count("retention_default_get", app)
            return try StorekeeperJSON.response(
                DefaultAnswer(environment: environment.storageName, productId: productId, locale: locale, messageIdentifier: answer.messageIdentifier)
            )
        }
        retention.put("default-messages/:productId/:locale") { request, ctx in
            let (app, client, environment) = try call(request, ctx)
            let (productId, locale) = try productAndLocale(ctx)
            let body = try StorekeeperJSON.decode(RetentionDefaultMessage.self, from: try await context.body(request))
            guard let id = body.messageIdentifier, RetentionConfiguration.isUUID(id) else {
                throw StorekeeperError(.invalidRequest, "messageIdentifier must be the UUID of an uploaded message")
            }
            try await context.apple(.only(environment)) {
                try await client.configureDefaultRetentionMessage(
                    productId: productId, locale: locale, messageIdentifier: id, environment: environment)
            }
            count("retention_default_put", app)
            return try StorekeeperJSON.response(
                DefaultAnswer(environment: environment.storageName, productId: productId, locale: locale, messageIdentifier: id))
        }
        retention.delete("default-messages/:productId/:locale") { request, ctx in
            let (app, client, environment) = try call(request, ctx)
            let (productId, locale) = try productAndLocale(ctx)
            try await context.apple(.only(environment)) {
                try await client.deleteDefaultRetentionMessage(productId: productId, locale: locale, environment: environment)
            }
            count("retention_default_delete", app)
            return try StorekeeperJSON.response(
                DefaultAnswer(environment: environment.storageName, productId: productId, locale: locale, deleted: true))
        }
    }

    private func registerRealtimeURL(on retention: RouterGroup<AdminRequestContext>) {
        retention.get("realtime-url") { request, ctx in
            let (app, client, environment) = try call(request, ctx)
            let answer = try await context.apple(.only(environment)) { try await client.realtimeURL(environment: environment) }
            count("retention_realtime_url_get", app)
            return try StorekeeperJSON.response(URLAnswer(environment: environment.storageName, realtimeURL: answer.realtimeURL))
        }
        retention.put("realtime-url") { request, ctx in
            let (app, client, environment) = try call(request, ctx)
            let body = try StorekeeperJSON.decode(RetentionRealtimeURL.self, from: try await context.body(request))
            guard let url = body.realtimeURL, Self.isRealtimeURL(url) else {
                throw StorekeeperError(
                    .invalidRequest,
                    "realtimeURL must be an absolute http(s) URL of at most \(RetentionConfiguration.maximumRealtimeURLLength) bytes (this server's is …/v1/retention/\(app.id))"
                )
            }
            try await context.apple(.only(environment)) { try await client.configureRealtimeURL(url, environment: environment) }
            count("retention_realtime_url_put", app)
            return try StorekeeperJSON.response(URLAnswer(environment: environment.storageName, realtimeURL: url))
        }
        retention.delete("realtime-url") { request, ctx in
            let (app, client, environment) = try call(request, ctx)
            try await context.apple(.only(environment)) { try await client.deleteRealtimeURL(environment: environment) }
            count("retention_realtime_url_delete", app)
            return try StorekeeperJSON.response(URLAnswer(environment: environment.storageName, deleted: true))
        }
    }

    private func registerPerformanceTest(on retention: RouterGroup<AdminRequestContext>) {
        retention.post("performance-tests") { request, ctx in
            let (app, client, _) = try call(request, ctx)
            let body = try StorekeeperJSON.decode(RetentionPerformanceTestRequest.self, from: try await context.body(request))
            let id = body.originalTransactionId
            guard (1...20).contains(id.utf8.count), id.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else {
                throw StorekeeperError(.invalidRequest, "originalTransactionId must be a sandbox subscription's original transaction id (digits)")
            }
            let started = try await context.apple(.only(.sandbox)) { try await client.startRetentionPerformanceTest(originalTransactionId: id) }
            count("retention_performance_test", app)
            return try StorekeeperJSON.response(
                TestAnswer(environment: AppStoreEnvironment.sandbox.storageName, requestId: started.requestId, config: started.config),
                status: .accepted)
        }
        retention.get("performance-tests/:requestId") { request, ctx in
            let (app, client, _) = try call(request, ctx)
            let id = try identifier(ctx, "requestId")
            let result = try await context.apple(.only(.sandbox)) { try await client.retentionPerformanceTestResult(id) }
            count("retention_performance_result", app)
            return try StorekeeperJSON.response(
                TestAnswer(
                    environment: AppStoreEnvironment.sandbox.storageName, requestId: id, config: result.config, target: result.target,
                    result: result.result?.rawValue, successRate: result.successRate, numPending: result.numPending,
                    responseTimes: result.responseTimes, failures: result.failures))
        }
    }

    static func isRealtimeURL(_ url: String) -> Bool {
        guard url.utf8.count <= RetentionConfiguration.maximumRealtimeURLLength, let parsed = URLComponents(string: url),
            let scheme = parsed.scheme?.lowercased(), scheme == "https" || scheme == "http", let host = parsed.host, !host.isEmpty
        else { return false }
        return true
    }

    /// The app, its client and the one environment the call names.
    private func call(_ request: Request, _ ctx: AdminRequestContext) throws -> (AppConfiguration, AppStoreServerAPIClient, AppStoreEnvironment) {
        let (app, client, placement) = try context.appleCall(request, ctx)
        return (app, client, placement.single)
    }

    private func count(_ action: String, _ app: AppConfiguration) {
        context.metrics.increment(Metric.appleActionsTotal, labels: ["action": action, "app": app.id])
    }

    /// Apple's identifiers here are UUIDs the developer chooses; sent lowercased, as Apple lists them.
    private func identifier(_ ctx: AdminRequestContext, _ name: String) throws -> String {
        let id = try ctx.parameters.decoded(name)
        guard RetentionConfiguration.isUUID(id) else { throw StorekeeperError(.invalidRequest, "\(name) must be a UUID") }
        return id.lowercased()
    }

    private func productAndLocale(_ ctx: AdminRequestContext) throws -> (String, String) {
        let productId = try ctx.parameters.decoded("productId")
        let locale = try ctx.parameters.decoded("locale")
        var problems: [String] = []
        if productId.isEmpty || productId.utf8.count > 255 { problems.append("productId must be 1 to 255 bytes") }
        if !RetentionConfiguration.isLocale(locale) { problems.append("locale must be a locale such as en-US or fr_FR") }
        guard problems.isEmpty else { throw StorekeeperError(.invalidRequest, problems.joined(separator: "; ")) }
        return (productId, locale)
    }

    /// The PNG as sent (`Content-Type: image/png`), its signature checked here; Apple checks the rest.
    private func image(_ request: Request) async throws -> Data {
        if let type = request.headers[.contentType],
            type.split(separator: ";").first?.trimmingCharacters(in: .whitespaces).lowercased() != "image/png"
        {
            throw StorekeeperError(.unsupportedMediaType, "Content-Type must be image/png, not '\(type.prefix(100))'")
        }
        let bytes: ByteBuffer
        do {
            bytes = try await request.body.collect(upTo: Self.maximumImageBytes)
        } catch {
            throw StorekeeperError(.payloadTooLarge, "an image is at most \(Self.maximumImageBytes) bytes")
        }
        let data = Data(bytes.readableBytesView)
        guard data.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) else {
            throw StorekeeperError(.invalidRequest, "the body must be a PNG image (Apple takes PNG without transparency)")
        }
        return data
    }

    struct Answer: Encodable {
        var environment: String
        var messageIdentifier: String?
        var imageIdentifier: String?
        var uploaded: Bool?
        var deleted: Bool?
    }

    struct MessagesAnswer: Encodable {
        var environment: String
        var messages: [RetentionMessageList.Item]
    }

    struct ImagesAnswer: Encodable {
        var environment: String
        var images: [RetentionImageList.Item]
    }

    struct DefaultAnswer: Encodable {
        var environment: String
        var productId: String
        var locale: String
        var messageIdentifier: String?
        var deleted: Bool?
    }

    struct URLAnswer: Encodable {
        var environment: String
        var realtimeURL: String?
        var deleted: Bool?
    }

    struct TestAnswer: Encodable {
        var environment: String
        var requestId: String?
        var config: RetentionPerformanceTestConfig?
        var target: String?
        var result: String?
        var successRate: Int?
        var numPending: Int?
        var responseTimes: RetentionPerformanceTestResult.ResponseTimes?
        var failures: [String: Int]?
    }
}
