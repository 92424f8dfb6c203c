import AppStoreModels
import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1

/// Apple's side of the Retention Messaging API's configuration calls, checked as Apple documents
/// them: lengths, UUIDs, PNG images without transparency at the documented sizes, messages that
/// name images that exist, defaults that name approved messages, and a production realtime URL
/// only after a passing performance test.
extension SimulatedAppStore {
    typealias Codes = RetentionConfiguration.ErrorCode

    static func rejection(_ status: Int, _ code: Int, _ message: String) -> ServerAPIRejection {
        ServerAPIRejection(status: status, code: code, message: message)
    }

    func uploadRetentionImage(
        _ id: String, png: Data, size: String?, app: SimulatedApp, environment: AppStoreEnvironment
    ) throws -> ServerAPIAnswer {
        guard RetentionConfiguration.isUUID(id) else { throw Self.rejection(400, Codes.invalidImage, "Invalid image identifier.") }
        let size = size.map(RetentionImageSize.init(rawValue:)) ?? .fullSize
        guard RetentionImageSize.known.contains(size) else { throw Self.rejection(400, Codes.badImageSize, "Invalid image size.") }
        guard let header = PNGHeader(png) else { throw Self.rejection(400, Codes.invalidImage, "The image is not a PNG.") }
        guard !header.hasAlpha else { throw Self.rejection(400, Codes.invalidImage, "The image has transparency.") }
        let fits =
            size == .fullSize
            ? header.width == 3840 && (160...2160).contains(header.height)
            : header.width == header.height && (1...1024).contains(header.width)
        guard fits else { throw Self.rejection(400, Codes.badImageSize, "The image's dimensions do not fit its size \(size).") }
        try retention.withSpace(app.bundleId, environment) { space in
            guard space.images[id.lowercased()] == nil else { throw Self.rejection(409, Codes.imageAlreadyExists, "The image already exists.") }
            guard space.images.count < RetentionConfiguration.maximumImages else {
                throw Self.rejection(403, Codes.maximumImagesReached, "The maximum number of images is reached.")
            }
            space.images[id.lowercased()] = .init(size: size, state: .approved)
        }
        return ServerAPIAnswer(status: 200, body: Data())
    }

    func deleteRetentionImage(_ id: String, app: SimulatedApp, environment: AppStoreEnvironment) throws -> ServerAPIAnswer {
        try retention.withSpace(app.bundleId, environment) { space in
            let key = id.lowercased()
            guard space.images[key] != nil else { throw Self.rejection(404, Codes.imageNotFound, "Image not found.") }
            let used = space.messages.values.contains {
                $0.body.image?.imageIdentifier.lowercased() == key || ($0.body.bulletPoints ?? []).contains { $0.imageIdentifier.lowercased() == key }
            }
            guard !used else { throw Self.rejection(403, Codes.imageInUse, "The image is used by a message.") }
            space.images[key] = nil
        }
        return ServerAPIAnswer(status: 200, body: Data())
    }

    func retentionImages(app: SimulatedApp, environment: AppStoreEnvironment) -> ServerAPIAnswer {
        let items = retention.withSpace(app.bundleId, environment) { space in
            space.images.sorted { $0.key < $1.key }.map {
                RetentionImageList.Item(imageIdentifier: $0.key, imageState: $0.value.state, imageSize: $0.value.size)
            }
        }
        return .json(RetentionImageList(imageIdentifiers: items))
    }

    func uploadRetentionMessage(_ id: String, body: Data, app: SimulatedApp, environment: AppStoreEnvironment) throws -> ServerAPIAnswer {
        guard RetentionConfiguration.isUUID(id) else { throw Self.rejection(400, Codes.messageNotFound, "Invalid message identifier.") }
        guard let message = try? JSONDecoder().decode(UploadRetentionMessage.self, from: body) else {
            throw Self.rejection(400, Codes.bodyTooLong, "The message is not an UploadMessageRequestBody.")
        }
        if let problem = Self.messageProblem(message) { throw problem }
        try retention.withSpace(app.bundleId, environment) { space in
            guard space.messages[id.lowercased()] == nil else {
                throw Self.rejection(409, Codes.messageAlreadyExists, "The message already exists.")
            }
            guard space.messages.count < RetentionConfiguration.maximumMessages else {
                throw Self.rejection(403, Codes.maximumMessagesReached, "The maximum number of messages is reached.")
            }
            let images = [message.image?.imageIdentifier].compactMap { $0 } + (message.bulletPoints ?? []).map(\.imageIdentifier)
            for image in images where space.images[image.lowercased()] == nil {
                throw Self.rejection(404, Codes.imageNotFound, "Image \(image) not found.")
            }
            space.messages[id.lowercased()] = .init(body: message, state: .approved)
        }
        return ServerAPIAnswer(status: 200, body: Data())
    }

    /// Apple's first refusal of a message body, in the order its documentation lists them.
    static func messageProblem(_ message: UploadRetentionMessage) -> ServerAPIRejection? {
        typealias C = RetentionConfiguration
        if message.header.count > C.maximumHeaderLength { return rejection(400, Codes.headerTooLong, "The header is too long.") }
        if message.body.count > C.maximumBodyLength { return rejection(400, Codes.bodyTooLong, "The body is too long.") }
        let alts = [message.image?.altText].compactMap { $0 } + (message.bulletPoints ?? []).map(\.altText)
        if alts.contains(where: { $0.count > C.maximumAltTextLength }) {
            return rejection(400, Codes.altTextTooLong, "The alternative text is too long.")
        }
        if let bullets = message.bulletPoints {
            if bullets.count > C.maximumBulletPoints { return rejection(400, Codes.tooManyBulletPoints, "Too many bullet points.") }
            if bullets.contains(where: { $0.text.count > C.maximumBulletPointTextLength }) {
                return rejection(400, Codes.bulletPointTextTooLong, "A bullet point's text is too long.")
            }
        }
        if message.headerPosition == .aboveImage, message.image == nil {
            return rejection(400, Codes.aboveImageRequiresAnImage, "ABOVE_IMAGE needs an image.")
        }
        return nil
    }

    func deleteRetentionMessage(_ id: String, app: SimulatedApp, environment: AppStoreEnvironment) throws -> ServerAPIAnswer {
        try retention.withSpace(app.bundleId, environment) { space in
            guard space.messages.removeValue(forKey: id.lowercased()) != nil else {
                throw Self.rejection(404, Codes.messageNotFound, "Message not found.")
            }
            space.defaults = space.defaults.filter { $0.value != id.lowercased() }
        }
        return ServerAPIAnswer(status: 200, body: Data())
    }

    func retentionMessages(app: SimulatedApp, environment: AppStoreEnvironment) -> ServerAPIAnswer {
        let items = retention.withSpace(app.bundleId, environment) { space in
            space.messages.sorted { $0.key < $1.key }.map { RetentionMessageList.Item(messageIdentifier: $0.key, messageState: $0.value.state) }
        }
        return .json(RetentionMessageList(messageIdentifiers: items))
    }

    /// PUT (a body naming an approved message), GET or DELETE of the default message of a
    /// product of the app in a locale.
    func defaultRetentionMessage(
        _ method: HTTPMethod, productId: String, locale: String, body: Data, app: SimulatedApp, environment: AppStoreEnvironment
    ) throws -> ServerAPIAnswer {
        guard app.products.contains(where: { $0.productId == productId && $0.kind == .autoRenewable }) else {
            throw Self.rejection(404, ServerAPIErrorBody.originalTransactionIdNotFound, "Product not found.")
        }
        guard RetentionConfiguration.isLocale(locale) else { throw Self.rejection(400, Codes.invalidLocale, "Invalid locale.") }
        let key = "\(productId)|\(locale)"
        return try retention.withSpace(app.bundleId, environment) { space in
            switch method {
            case .PUT:
                guard let request = try? JSONDecoder().decode(RetentionDefaultMessage.self, from: body),
                    let id = request.messageIdentifier?.lowercased(),
                    let message = space.messages[id]
                else { throw Self.rejection(404, Codes.messageNotFound, "Message not found.") }
                guard message.state == .approved else { throw Self.rejection(403, Codes.messageNotApproved, "The message is not approved.") }
                let images = [message.body.image?.imageIdentifier].compactMap { $0 } + (message.body.bulletPoints ?? []).map(\.imageIdentifier)
                guard images.allSatisfy({ space.images[$0.lowercased()]?.state == .approved }) else {
                    throw Self.rejection(403, Codes.imageNotApproved, "An image of the message is not approved.")
                }
                space.defaults[key] = id
                return ServerAPIAnswer(status: 200, body: Data())
            case .DELETE:
                guard space.defaults.removeValue(forKey: key) != nil else {
                    throw Self.rejection(404, Codes.defaultMessageNotFound, "Default message not found.")
                }
                return ServerAPIAnswer(status: 200, body: Data())
            default:
                guard let id = space.defaults[key] else { throw Self.rejection(404, Codes.defaultMessageNotFound, "Default message not found.") }
                return .json(RetentionDefaultMessage(messageIdentifier: id))
            }
        }
    }

    /// PUT, GET or DELETE of the realtime URL. Production takes one only after a passing test.
    func realtimeURL(_ method: HTTPMethod, body: Data, app: SimulatedApp, environment: AppStoreEnvironment) throws -> ServerAPIAnswer {
        switch method {
        case .PUT:
            guard let request = try? JSONDecoder().decode(RetentionRealtimeURL.self, from: body), let url = request.realtimeURL,
                url.utf8.count <= RetentionConfiguration.maximumRealtimeURLLength, let parsed = URL(string: url),
                ["https", "http"].contains(parsed.scheme?.lowercased() ?? ""), parsed.host != nil
            else { throw Self.rejection(400, Codes.badRealtimeURL, "Invalid realtime URL.") }
            let passed = retention.withSpace(app.bundleId, .sandbox) { $0.passedPerformanceTest }
            guard environment == .sandbox || passed else {
                throw Self.rejection(403, Codes.noPassingPerformanceTest, "A passing performance test is required for production.")
            }
            retention.withSpace(app.bundleId, environment) { $0.realtimeURL = .some(url) }
            return ServerAPIAnswer(status: 200, body: Data())
        case .DELETE:
            guard retention.realtimeURL(app, environment) != nil else {
                throw Self.rejection(404, Codes.realtimeURLNotFound, "Realtime URL not found.")
            }
            retention.withSpace(app.bundleId, environment) { $0.realtimeURL = .some(nil) }
            return ServerAPIAnswer(status: 200, body: Data())
        default:
            guard let url = retention.realtimeURL(app, environment) else {
                throw Self.rejection(404, Codes.realtimeURLNotFound, "Realtime URL not found.")
            }
            return .json(RetentionRealtimeURL(realtimeURL: url))
        }
    }

    /// Initiate Performance Test: a sandbox subscription of the app, and a sandbox realtime URL
    /// to call. The requests are sent by `NotificationSender`, as Apple's are, after the answer.
    func startPerformanceTest(body: Data, app: SimulatedApp) async throws -> ServerAPIAnswer {
        guard let request = try? JSONDecoder().decode(RetentionPerformanceTestRequest.self, from: body),
            let subject = try? await state.retentionSubject(request.originalTransactionId),
            subject.app.bundleId == app.bundleId, subject.device.environment == .sandbox
        else {
            throw Self.rejection(
                400, Codes.invalidPerformanceTestRequest, "originalTransactionId must be a sandbox subscription of the app.")
        }
        guard let target = retention.realtimeURL(app, .sandbox) else {
            throw Self.rejection(404, Codes.realtimeURLNotFound, "Realtime URL not found.")
        }
        let config = configuration.retentionPerformanceTest
        let id = try retention.start(
            .init(
                bundleId: app.bundleId, originalTransactionId: request.originalTransactionId, target: target, config: config,
                pending: max(0, config.totalRequests ?? 0)))
        return .json(RetentionPerformanceTestStarted(config: config, requestId: id))
    }

    func performanceTestResult(_ id: String, app: SimulatedApp) throws -> ServerAPIAnswer {
        guard RetentionConfiguration.isUUID(id) else { throw Self.rejection(400, Codes.invalidRequestId, "Invalid request identifier.") }
        guard let test = retention.test(id.lowercased(), bundleId: app.bundleId) else {
            throw Self.rejection(404, Codes.performanceTestNotFound, "Performance test not found.")
        }
        return .json(test.result)
    }

    /// Sends one test's requests, `maxConcurrentRequests` at a time, each a realtime request
    /// signed as the App Store signs them. One succeeds when answered 200 with a
    /// `RealtimeResponseBody` within the threshold; a failure counts under Apple's
    /// send-attempt result.
    func runPerformanceTest(_ id: String, _ test: RetentionConfigurationState.PerformanceTest, client: HTTPClient) async {
        let total = test.config.totalRequests ?? 0
        let concurrency = max(1, test.config.maxConcurrentRequests ?? 1)
        let threshold = Int64(test.config.responseTimeThreshold ?? 700)
        await withTaskGroup(of: Void.self) { group in
            for index in 0..<total {
                if index >= concurrency { await group.next() }
                group.addTask {
                    let (elapsed, failure) = await self.performanceRequest(test, client: client, thresholdMilliseconds: threshold)
                    self.retention.record(id, elapsedMilliseconds: elapsed, failure: failure)
                }
            }
        }
    }

    private func performanceRequest(
        _ test: RetentionConfigurationState.PerformanceTest, client: HTTPClient, thresholdMilliseconds: Int64
    ) async -> (Int?, String?) {
        let started = ContinuousClock.now
        do {
            let signed = try await signedRealtimeRequest(originalTransactionId: test.originalTransactionId, locale: "en_US", now: now()).signed
            var request = HTTPClientRequest(url: test.target)
            request.method = .POST
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(bytes: try JSONEncoder().encode(RealtimeRequestBody(signedPayload: signed))))
            let response = try await client.execute(request, timeout: .milliseconds(thresholdMilliseconds))
            let body = try await response.body.collect(upTo: 64 * 1024)
            let elapsed = Self.milliseconds(since: started)
            guard response.status == .ok else { return (nil, "UNSUCCESSFUL_HTTP_RESPONSE_CODE") }
            guard (try? JSONDecoder().decode(RealtimeResponseBody.self, from: Data(body.readableBytesView))) != nil else {
                return (nil, "INVALID_RESPONSE")
            }
            return elapsed <= thresholdMilliseconds ? (elapsed, nil) : (nil, "TIMED_OUT")
        } catch let error as HTTPClientError where error == .deadlineExceeded || error == .readTimeout {
            return (nil, "TIMED_OUT")
        } catch {
            return (nil, "NO_RESPONSE")
        }
    }
}

/// What the simulator reads of a PNG: its signature and IHDR (size and colour type). Apple
/// decodes the whole image; these are the facts its documented rules need.
struct PNGHeader {
    var width: Int
    var height: Int
    /// Colour types 4 and 6 carry an alpha channel: transparency, which Apple refuses.
    var hasAlpha: Bool

    init?(_ data: Data) {
        let bytes = [UInt8](data.prefix(33))
        let signature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
        guard bytes.count == 33, Array(bytes[0..<8]) == signature, Array(bytes[12..<16]) == Array("IHDR".utf8) else { return nil }
        func int(_ at: Int) -> Int { bytes[at..<at + 4].reduce(0) { $0 << 8 | Int($1) } }
        width = int(16)
        height = int(20)
        guard width > 0, height > 0 else { return nil }
        hasAlpha = bytes[25] == 4 || bytes[25] == 6
    }
}
