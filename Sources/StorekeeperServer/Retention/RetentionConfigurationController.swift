import AppStoreModels
import Foundation
import Hummingbird
import StorekeeperCore
import StorekeeperErrors
import StorekeeperWire

/// Operator routes over Apple's Retention Messaging configuration calls, with the app's In-App
/// Purchase key (`ConfigureRetention`: what is checked before Apple is called): the messages and
/// images Apple shows when a subscriber looks at cancelling, the default message per product and
/// locale, the realtime URL Apple calls (`POST /v1/retention/{app}` here), and the performance
/// test Apple runs against it before it takes a production URL. Each names one environment
/// (`?environment=`, production unless asked; the test is always the sandbox's). Only
/// translation and the action's count.
struct RetentionConfigurationController {
    let context: ServerContext

    /// An image is a PNG of up to 3840 × 2160 pixels; this bounds what is read of one.
    static let maximumImageBytes = 16 * 1024 * 1024

    func register(on router: RouteTable) {
        let retention = router.admin("v1/admin/apps/:app/retention")
        retention.get("messages") { request, ctx in
            let (app, configure) = try configuring(request, ctx)
            let messages = try await configure.messages()
            context.countAppleAction("retention_messages", app)
            return try StorekeeperJSON.response(MessagesAnswer(environment: configure.environment.storageName, messages: messages))
        }
        retention.put("messages/:messageIdentifier") { request, ctx in
            let (app, configure) = try configuring(request, ctx)
            let message = try StorekeeperJSON.decode(UploadRetentionMessage.self, from: try await context.body(request))
            let id = try await configure.uploadMessage(try ctx.parameters.decoded("messageIdentifier"), message)
            context.countAppleAction("retention_message_upload", app)
            return try StorekeeperJSON.response(Answer(environment: configure.environment.storageName, messageIdentifier: id, uploaded: true))
        }
        retention.delete("messages/:messageIdentifier") { request, ctx in
            let (app, configure) = try configuring(request, ctx)
            let id = try await configure.deleteMessage(try ctx.parameters.decoded("messageIdentifier"))
            context.countAppleAction("retention_message_delete", app)
            return try StorekeeperJSON.response(Answer(environment: configure.environment.storageName, messageIdentifier: id, deleted: true))
        }
        retention.get("images") { request, ctx in
            let (app, configure) = try configuring(request, ctx)
            let images = try await configure.images()
            context.countAppleAction("retention_images", app)
            return try StorekeeperJSON.response(ImagesAnswer(environment: configure.environment.storageName, images: images))
        }
        retention.put("images/:imageIdentifier") { request, ctx in
            let (app, configure) = try configuring(request, ctx)
            let size = try QueryInput(request).oneOf("imageSize", RetentionImageSize.known.map(\.rawValue)).map(RetentionImageSize.init(rawValue:))
            let id = try await configure.uploadImage(try ctx.parameters.decoded("imageIdentifier"), png: try await image(request), size: size)
            context.countAppleAction("retention_image_upload", app)
            return try StorekeeperJSON.response(Answer(environment: configure.environment.storageName, imageIdentifier: id, uploaded: true))
        }
        retention.delete("images/:imageIdentifier") { request, ctx in
            let (app, configure) = try configuring(request, ctx)
            let id = try await configure.deleteImage(try ctx.parameters.decoded("imageIdentifier"))
            context.countAppleAction("retention_image_delete", app)
            return try StorekeeperJSON.response(Answer(environment: configure.environment.storageName, imageIdentifier: id, deleted: true))
        }
        registerDefaults(on: retention)
        registerRealtimeURL(on: retention)
        registerPerformanceTest(on: retention)
    }

    private func registerDefaults(on retention: RouterGroup<AdminRequestContext>) {
        retention.get("default-messages/:productId/:locale") { request, ctx in
            let (app, configure) = try configuring(request, ctx)
            let (productId, locale) = (try ctx.parameters.decoded("productId"), try ctx.parameters.decoded("locale"))
            let id = try await configure.defaultMessage(productId: productId, locale: locale)
            context.countAppleAction("retention_default_get", app)
            return try StorekeeperJSON.response(
                DefaultAnswer(environment: configure.environment.storageName, productId: productId, locale: locale, messageIdentifier: id))
        }
        retention.put("default-messages/:productId/:locale") { request, ctx in
            let (app, configure) = try configuring(request, ctx)
            let (productId, locale) = (try ctx.parameters.decoded("productId"), try ctx.parameters.decoded("locale"))
            let body = try StorekeeperJSON.decode(RetentionDefaultMessage.self, from: try await context.body(request))
            let id = try await configure.setDefaultMessage(productId: productId, locale: locale, messageIdentifier: body.messageIdentifier)
            context.countAppleAction("retention_default_put", app)
            return try StorekeeperJSON.response(
                DefaultAnswer(environment: configure.environment.storageName, productId: productId, locale: locale, messageIdentifier: id))
        }
        retention.delete("default-messages/:productId/:locale") { request, ctx in
            let (app, configure) = try configuring(request, ctx)
            let (productId, locale) = (try ctx.parameters.decoded("productId"), try ctx.parameters.decoded("locale"))
            try await configure.deleteDefaultMessage(productId: productId, locale: locale)
            context.countAppleAction("retention_default_delete", app)
            return try StorekeeperJSON.response(
                DefaultAnswer(environment: configure.environment.storageName, productId: productId, locale: locale, deleted: true))
        }
    }

    private func registerRealtimeURL(on retention: RouterGroup<AdminRequestContext>) {
        retention.get("realtime-url") { request, ctx in
            let (app, configure) = try configuring(request, ctx)
            let url = try await configure.realtimeURL()
            context.countAppleAction("retention_realtime_url_get", app)
            return try StorekeeperJSON.response(URLAnswer(environment: configure.environment.storageName, realtimeURL: url))
        }
        retention.put("realtime-url") { request, ctx in
            let (app, configure) = try configuring(request, ctx)
            let body = try StorekeeperJSON.decode(RetentionRealtimeURL.self, from: try await context.body(request))
            let url = try await configure.setRealtimeURL(body.realtimeURL, appId: app.id)
            context.countAppleAction("retention_realtime_url_put", app)
            return try StorekeeperJSON.response(URLAnswer(environment: configure.environment.storageName, realtimeURL: url))
        }
        retention.delete("realtime-url") { request, ctx in
            let (app, configure) = try configuring(request, ctx)
            try await configure.deleteRealtimeURL()
            context.countAppleAction("retention_realtime_url_delete", app)
            return try StorekeeperJSON.response(URLAnswer(environment: configure.environment.storageName, deleted: true))
        }
    }

    private func registerPerformanceTest(on retention: RouterGroup<AdminRequestContext>) {
        retention.post("performance-tests") { request, ctx in
            let (app, configure) = try configuring(request, ctx)
            let body = try StorekeeperJSON.decode(RetentionPerformanceTestRequest.self, from: try await context.body(request))
            let started = try await configure.startPerformanceTest(originalTransactionId: body.originalTransactionId)
            context.countAppleAction("retention_performance_test", app)
            return try StorekeeperJSON.response(
                TestAnswer(environment: AppStoreEnvironment.sandbox.storageName, requestId: started.requestId, config: started.config),
                status: .accepted)
        }
        retention.get("performance-tests/:requestId") { request, ctx in
            let (app, configure) = try configuring(request, ctx)
            let (id, result) = try await configure.performanceTestResult(requestId: try ctx.parameters.decoded("requestId"))
            context.countAppleAction("retention_performance_result", app)
            return try StorekeeperJSON.response(
                TestAnswer(
                    environment: AppStoreEnvironment.sandbox.storageName, requestId: id, config: result.config, target: result.target,
                    result: result.result?.rawValue, successRate: result.successRate, numPending: result.numPending,
                    responseTimes: result.responseTimes, failures: result.failures))
        }
    }

    /// The app in the path, and its retention configuration in the one environment the call names.
    private func configuring(_ request: Request, _ ctx: AdminRequestContext) throws -> (AppConfiguration, ConfigureRetention) {
        let (app, client, placement) = try context.appleCall(request, ctx)
        return (app, ConfigureRetention(apple: AppleRetentionAdapter(client: client, context: context), environment: placement.single))
    }

    /// The image as sent (`Content-Type: image/png`), at most `maximumImageBytes`.
    private func image(_ request: Request) async throws -> Data {
        if let type = request.headers[.contentType],
            type.split(separator: ";").first?.trimmingCharacters(in: .whitespaces).lowercased() != "image/png"
        {
            throw StorekeeperError(.unsupportedMediaType, "Content-Type must be image/png, not '\(type.prefix(100))'")
        }
        do {
            return Data(try await request.body.collect(upTo: Self.maximumImageBytes).readableBytesView)
        } catch {
            throw StorekeeperError(.payloadTooLarge, "an image is at most \(Self.maximumImageBytes) bytes")
        }
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
