import AppStoreModels
import Foundation
public import Hummingbird
public import Logging
import NIOCore
import Synchronization

/// The simulator as a real HTTP server: Apple's `/verifyReceipt` at a production and a sandbox
/// path, plus a `/sim` test API to buy, renew, fail billing, refund and inject faults.
public struct SimulatorServer: Sendable {
    public let store: SimulatedAppStore
    public let configuration: SimulatorConfiguration

    public init(configuration: SimulatorConfiguration) throws {
        self.configuration = configuration
        self.store = try SimulatedAppStore(configuration: configuration)
    }

    /// The Hummingbird application; `onRunning` receives the bound port (useful with port 0).
    public func makeApplication(
        logger: Logger, onRunning: @escaping @Sendable (Int) async -> Void = { _ in }
    )
        -> some ApplicationProtocol
    {
        let router = Router()
        addRoutes(to: router)
        return Application(
            router: router,
            configuration: .init(
                address: .hostname(configuration.host, port: configuration.port), serverName: "AppStoreSimulator", backlog: 4096),
            onServerRunning: { channel in await onRunning(channel.localAddress?.port ?? 0) },
            logger: logger)
    }

    func addRoutes(to router: Router<BasicRequestContext>) {
        let store = self.store
        router.post("/verifyReceipt") { request, _ in
            try await Self.verifyReceipt(request, endpoint: .production, store: store)
        }
        router.post("/sandbox/verifyReceipt") { request, _ in
            try await Self.verifyReceipt(request, endpoint: .sandbox, store: store)
        }

        Self.addServerAPIRoutes(to: router, environment: .production, store: store)
        Self.addServerAPIRoutes(to: router.group("sandbox-api"), environment: .sandbox, store: store)

        let sim = router.group("sim")
        sim.get("health") { _, _ in Self.json(["status": "ok"]) }
        sim.get("clock") { _, _ in Self.clockView(store) }
        // Time passes at the test's word: renewals, expiries and the notifications they cause
        // happen as if the wall clock had moved (on the sender's next tick).
        sim.post("clock/advance") { request, _ in
            struct Body: Decodable { var seconds: Double }
            let body: Body = try await Self.decode(request)
            guard body.seconds.isFinite, body.seconds >= 0 else {
                return Self.json(["error": "invalid_seconds", "message": "seconds must be a finite number ≥ 0"], status: .badRequest)
            }
            store.clock.advance(by: body.seconds)
            await store.state.advance(to: store.now())
            return Self.clockView(store)
        }
        sim.get("apps") { _, _ in Self.json(await store.state.allApps()) }
        sim.post("apps") { request, _ in
            let app: SimulatedApp = try await Self.decode(request)
            await store.state.upsertApp(app)
            return Self.json(app, status: .created)
        }
        sim.post("devices") { request, _ in
            struct Body: Decodable {
                var bundleId: String
                var environment: String?
            }
            let body: Body = try await Self.decode(request)
            let env = AppStoreEnvironment(storageName: body.environment ?? "sandbox") ?? .sandbox
            return try await Self.guarded {
                let device = try await store.state.createDevice(bundleId: body.bundleId, environment: env)
                return Self.json(DeviceView(deviceId: device.id, bundleId: device.bundleId, environment: env.storageName), status: .created)
            }
        }
        sim.post("devices/:device/purchases") { request, context in
            struct Body: Decodable {
                var productId: String
                var quantity: Int?
                var appAccountToken: String?
            }
            let body: Body = try await Self.decode(request)
            let deviceId = try Self.deviceId(context)
            return try await Self.guarded {
                let now = store.now()
                let tx = try await store.state.purchase(
                    deviceId: deviceId, productId: body.productId, quantity: body.quantity ?? 1, now: now, appAccountToken: body.appAccountToken)
                let receipt = try await store.receipt(deviceId: deviceId, now: now)
                let signed = try await store.signedTransaction(tx, now: now)
                return Self.json(
                    PurchaseView(
                        transaction: SimulatedAppStore.wire(tx), receipt: Data(receipt).base64EncodedString(), signedTransaction: signed),
                    status: .created)
            }
        }
        sim.get("devices/:device/receipt") { _, context in
            let deviceId = try Self.deviceId(context)
            return try await Self.guarded {
                let receipt = try await store.receipt(deviceId: deviceId, now: store.now())
                return Self.json(["receipt": Data(receipt).base64EncodedString()])
            }
        }
        sim.get("devices/:device/transactions") { _, context in
            let deviceId = try Self.deviceId(context)
            await store.state.advance(to: store.now())
            return Self.json(await store.state.deviceTransactions(deviceId).map(SimulatedAppStore.wire))
        }
        // What StoreKit's `Transaction.currentEntitlements` would list on the device, signed:
        // the SDK's restore on Linux.
        sim.get("devices/:device/current-entitlements") { _, context in
            let deviceId = try Self.deviceId(context)
            return try await Self.guarded {
                let now = store.now()
                await store.state.advance(to: now)
                var views: [CurrentEntitlementView] = []
                for tx in await store.state.currentEntitlements(deviceId, now: now) {
                    views.append(
                        CurrentEntitlementView(
                            transactionId: tx.transactionId, productId: tx.productId,
                            signedTransaction: try await store.signedTransaction(tx, now: now)))
                }
                return Self.json(views)
            }
        }
        sim.post("subscriptions/:original/cancel-auto-renew") { _, context in
            let id = try context.parameters.require("original")
            return try await Self.guarded {
                try await store.state.setAutoRenew(originalTransactionId: id, enabled: false, now: store.now())
                return Self.json(["status": "auto_renew_off"])
            }
        }
        sim.post("subscriptions/:original/resume-auto-renew") { _, context in
            let id = try context.parameters.require("original")
            return try await Self.guarded {
                try await store.state.setAutoRenew(originalTransactionId: id, enabled: true, now: store.now())
                return Self.json(["status": "auto_renew_on"])
            }
        }
        sim.post("subscriptions/:original/billing-failure") { request, context in
            struct Body: Decodable { var gracePeriod: Bool? }
            let body: Body = (try? await Self.decode(request)) ?? Body(gracePeriod: false)
            let id = try context.parameters.require("original")
            return try await Self.guarded {
                try await store.state.failBilling(originalTransactionId: id, grace: body.gracePeriod ?? false, now: store.now())
                return Self.json(["status": "billing_retry"])
            }
        }
        sim.post("subscriptions/:original/billing-recovery") { _, context in
            let id = try context.parameters.require("original")
            return try await Self.guarded {
                let tx = try await store.state.recoverBilling(originalTransactionId: id, now: store.now())
                return Self.json(SimulatedAppStore.wire(tx))
            }
        }
        // Optional body `{"percentage": 25000}`: a prorated refund (milliunits of a percent).
        sim.post("transactions/:transaction/refund") { request, context in
            let id = try context.parameters.require("transaction")
            let body = try await request.body.collect(upTo: 64 * 1024)
            return try await Self.guarded {
                let percentage = try Self.refundPercentage(Data(body.readableBytesView))
                return Self.json(
                    SimulatedAppStore.wire(try await store.state.refund(transactionId: id, percentage: percentage, now: store.now())))
            }
        }
        sim.get("transactions") { _, _ in
            await store.state.advance(to: store.now())
            var views: [SoldTransactionView] = []
            for tx in await store.state.allTransactions() {
                let bundleId = await store.state.device(tx.deviceId)?.bundleId ?? ""
                let (price, currency) = await store.state.price(bundleId: bundleId, productId: tx.productId)
                let env = await store.state.device(tx.deviceId)?.environment.storageName ?? ""
                views.append(
                    SoldTransactionView(
                        bundleId: bundleId, environment: env, transaction: SimulatedAppStore.wire(tx), priceMicros: price,
                        currency: currency))
            }
            return Self.json(views)
        }
        sim.get("commitment-products") { _, _ in
            let productIds = await store.state.configuration.commitmentProductIds
            return Self.json(["productIds": productIds.sorted()])
        }
        // The configuration's `commitmentProductIds` at run time: what is signed from now on
        // follows it, earlier payments of the same subscriptions included.
        sim.put("commitment-products") { request, _ in
            struct Body: Decodable { var productIds: Set<String> }
            let body: Body = try await Self.decode(request)
            await store.state.setCommitmentProductIds(body.productIds)
            return Self.json(["productIds": body.productIds.sorted()])
        }
        sim.get("faults") { _, _ in Self.json(await store.state.faults) }
        sim.put("faults") { request, _ in
            let faults: FaultConfiguration = try await Self.decode(request)
            await store.state.setFaults(faults)
            return Self.json(faults)
        }
        sim.post("outage") { request, _ in
            struct Body: Decodable { var seconds: Double }
            let body: Body = try await Self.decode(request)
            var faults = await store.state.faults
            let now = store.now()
            faults.outages.append(.init(start: now, end: now.addingTimeInterval(body.seconds)))
            await store.state.setFaults(faults)
            return Self.json(faults)
        }
        sim.get("stats") { _, _ in Self.json(store.stats.snapshot()) }
        sim.put("server-api/faults") { request, _ in
            let faults: ServerAPIFaults = try await Self.decode(request)
            store.serverAPI.faults.withLock { $0 = faults }
            return Self.json(faults)
        }
        sim.put("notifications/faults") { request, _ in
            let faults: NotificationOutbox.Faults = try await Self.decode(request)
            await store.outbox.setFaults(faults)
            return Self.json(faults)
        }
        sim.put("notifications/url") { request, _ in
            struct Body: Decodable {
                var bundleId: String
                var url: String?
            }
            let body: Body = try await Self.decode(request)
            return try await Self.guarded {
                guard var app = await store.state.app(body.bundleId) else {
                    throw SimulatorState.Failure(status: 404, code: "unknown_app", message: "no app \(body.bundleId)")
                }
                app.notificationURL = body.url
                await store.state.upsertApp(app)
                return Self.json(app)
            }
        }
        sim.get("notifications") { _, _ in
            struct View: Encodable {
                var notificationUUID: String
                var notificationType: String
                var transactionId: String?
                var delivered: Bool
                var attempts: [NotificationHistoryItem.SendAttempt]
            }
            return Self.json(
                await store.outbox.items.map {
                    View(
                        notificationUUID: $0.uuid, notificationType: $0.type, transactionId: $0.transactionId, delivered: $0.delivered,
                        attempts: $0.attempts)
                })
        }
        sim.get("consumption/:transaction") { _, context in
            let id = try context.parameters.require("transaction")
            guard let body = store.serverAPI.consumption.withLock({ $0[id] }) else { throw HTTPError(.notFound) }
            return Self.json(body)
        }
        sim.get("transactions/:transaction/finished") { _, context in
            let id = try context.parameters.require("transaction")
            return Self.json(["finished": store.serverAPI.finished.withLock { $0.contains(id) }])
        }
        sim.get("consumption-v2/:transaction") { _, context in
            let id = try context.parameters.require("transaction")
            guard let body = store.serverAPI.consumptionV2.withLock({ $0[id] }) else { throw HTTPError(.notFound) }
            return Self.json(body)
        }
        sim.post("devices/:device/rescind-consent") { _, context in
            let deviceId = try Self.deviceId(context)
            return try await Self.guarded {
                let sent = try await store.enqueueRescindConsent(deviceId: deviceId, now: store.now())
                return Self.json(["notificationUUID": sent.uuid, "signedPayload": sent.signedPayload], status: .accepted)
            }
        }
        sim.post("devices/:device/family-share") { request, context in
            struct Body: Decodable { var transactionId: String }
            let body: Body = try await Self.decode(request)
            let deviceId = try Self.deviceId(context)
            return try await Self.guarded {
                let now = store.now()
                let shared = try await store.state.shareWithFamily(transactionId: body.transactionId, memberDeviceId: deviceId, now: now)
                return Self.json(
                    PurchaseView(
                        transaction: SimulatedAppStore.wire(shared),
                        receipt: Data(try await store.receipt(deviceId: deviceId, now: now)).base64EncodedString(),
                        signedTransaction: try await store.signedTransaction(shared, now: now)),
                    status: .created)
            }
        }
        sim.post("transactions/:transaction/reverse-refund") { _, context in
            let id = try context.parameters.require("transaction")
            return try await Self.guarded {
                Self.json(SimulatedAppStore.wire(try await store.state.reverseRefund(transactionId: id, now: store.now())))
            }
        }
        sim.post("transactions/:transaction/revoke") { _, context in
            let id = try context.parameters.require("transaction")
            return try await Self.guarded {
                Self.json(SimulatedAppStore.wire(try await store.state.revoke(transactionId: id, now: store.now())))
            }
        }
        router.post("/ocsp") { request, _ in
            let body = try await request.body.collect(upTo: 64 * 1024)
            // An outage takes Apple's responder down with verifyReceipt.
            let now = store.now()
            if await store.state.faults.outages.contains(where: { $0.start <= now && now < $0.end }) {
                store.stats.record("ocsp.outage")
                return Self.html(status: .serviceUnavailable)
            }
            let answer = store.ocspResponse(to: Array(body.readableBytesView), now: store.now())
            return Response(
                status: .ok, headers: [.contentType: "application/ocsp-response"], body: .init(byteBuffer: ByteBuffer(bytes: answer)))
        }
        sim.post("pki/revoke") { request, _ in
            struct Body: Decodable { var certificate: SimulatedAppStore.RevocableCertificate }
            let body: Body = try await Self.decode(request)
            store.revoke(body.certificate, at: store.now())
            return Self.json(["revoked": body.certificate.rawValue])
        }
        sim.get("pki/root.pem") { _, _ in
            Response(
                status: .ok, headers: [.contentType: "application/x-pem-file"],
                body: .init(byteBuffer: ByteBuffer(string: try store.pki.rootPEM())))
        }
    }

    // MARK: App Store Server API

    static func addServerAPIRoutes<Routes: RouterMethods<BasicRequestContext>>(
        to routes: Routes, environment: AppStoreEnvironment, store: SimulatedAppStore
    ) {
        let env = environment
        routes.get("inApps/v1/transactions/:id") { request, context in
            let id = try context.parameters.require("id")
            return await serverAPI(request, "transaction_info", env, store) { app, now in
                try await store.transactionInfo(id, app: app, environment: env, now: now)
            }
        }
        routes.get("inApps/v1/transactions/appTransactions/:id") { request, context in
            let id = try context.parameters.require("id")
            return await serverAPI(request, "app_transaction", env, store) { app, now in
                try await store.appTransactionInfo(id, app: app, environment: env, now: now)
            }
        }
        routes.put("inApps/v1/transactions/:id/appAccountToken") { request, context in
            let id = try context.parameters.require("id")
            let body = try await request.body.collect(upTo: 64 * 1024)
            return await serverAPI(request, "app_account_token", env, store) { app, now in
                try await store.setAppAccountToken(id, body: Data(body.readableBytesView), app: app, environment: env, now: now)
            }
        }
        routes.get("inApps/v2/history/:id") { request, context in
            let id = try context.parameters.require("id")
            return await serverAPI(request, "history", env, store) { app, now in
                try await store.history(id, query: query(request), app: app, environment: env, now: now)
            }
        }
        routes.get("inApps/v1/subscriptions/:id") { request, context in
            let id = try context.parameters.require("id")
            return await serverAPI(request, "subscriptions", env, store) { app, now in
                try await store.subscriptionStatuses(id, query: query(request), app: app, environment: env, now: now)
            }
        }
        routes.get("inApps/v2/refund/lookup/:id") { request, context in
            let id = try context.parameters.require("id")
            return await serverAPI(request, "refund_lookup", env, store) { app, now in
                try await store.refundHistory(id, app: app, environment: env, now: now)
            }
        }
        routes.get("inApps/v1/lookup/:order") { request, context in
            let id = try context.parameters.require("order")
            return await serverAPI(request, "order_lookup", env, store) { app, now in
                try await store.lookUpOrder(id, app: app, environment: env, now: now)
            }
        }
        routes.post("inApps/v1/notifications/history") { request, _ in
            let body = try await request.body.collect(upTo: 64 * 1024)
            let token = request.uri.queryParameters.get("paginationToken")
            return await serverAPI(request, "notification_history", env, store) { app, now in
                try await store.notificationHistory(
                    body: Data(body.readableBytesView), paginationToken: token, app: app, environment: env, now: now)
            }
        }
        routes.post("inApps/v1/notifications/test") { request, _ in
            await serverAPI(request, "test_notification", env, store) { app, now in
                try await store.sendTestNotification(app: app, environment: env, now: now)
            }
        }
        routes.get("inApps/v1/notifications/test/:token") { request, context in
            let token = try context.parameters.require("token")
            return await serverAPI(request, "test_notification_status", env, store) { app, _ in await store.testNotificationStatus(token, app: app) }
        }
        routes.put("inApps/v1/transactions/consumption/:id") { request, context in
            let id = try context.parameters.require("id")
            let body = try await request.body.collect(upTo: 64 * 1024)
            return await serverAPI(request, "consumption", env, store) { app, _ in
                try await store.recordConsumption(id, body: Data(body.readableBytesView), app: app, environment: env)
            }
        }
        routes.put("inApps/v2/transactions/consumption/:id") { request, context in
            let id = try context.parameters.require("id")
            let body = try await request.body.collect(upTo: 64 * 1024)
            return await serverAPI(request, "consumption_v2", env, store) { app, _ in
                try await store.recordConsumptionV2(id, body: Data(body.readableBytesView), app: app, environment: env)
            }
        }
        routes.post("inApps/v1/transactions/:id/finish") { request, context in
            let id = try context.parameters.require("id")
            return await serverAPI(request, "finish", env, store) { app, _ in
                try await store.finishTransaction(id, app: app, environment: env)
            }
        }
        routes.put("inApps/v1/subscriptions/extend/:id") { request, context in
            let id = try context.parameters.require("id")
            let body = try await request.body.collect(upTo: 64 * 1024)
            return await serverAPI(request, "extend", env, store) { app, now in
                try await store.extendRenewalDate(id, body: Data(body.readableBytesView), app: app, environment: env, now: now)
            }
        }
    }

    /// The request's query, repeated keys kept (`productId=a&productId=b`).
    static func query(_ request: Request) -> ServerAPIQuery {
        ServerAPIQuery(request.uri.queryParameters.map { (String($0.key), String($0.value)) })
    }

    static func clockView(_ store: SimulatedAppStore) -> Response {
        json(["nowMs": Int64(store.now().timeIntervalSince1970 * 1000), "offsetSeconds": Int64(store.clock.offsetSeconds)])
    }

    /// Faults first (as Apple's edge would), then the token, then the call.
    static func serverAPI(
        _ request: Request, _ name: String, _ environment: AppStoreEnvironment, _ store: SimulatedAppStore,
        _ body: (SimulatedApp, Date) async throws -> ServerAPIAnswer
    ) async -> Response {
        let now = store.now()
        let env = environment.storageName
        var answer: ServerAPIAnswer
        if let fault = store.serverAPIFault(now: now) {
            answer = fault
        } else if let app = await store.authorize(request.headers[.authorization], now: now) {
            do {
                answer = try await body(app, now)
            } catch let rejection as ServerAPIRejection {
                answer = rejection.answer
            } catch let failure as SimulatorState.Failure {
                answer = .error(failure.status, 4_040_005, failure.message)
            } catch {
                answer = .error(500, 5_000_000, "An unknown error occurred.")
            }
        } else {
            answer = .unauthorized
        }
        store.stats.record("serverapi.\(env).\(name).\(answer.status)")
        var headers: HTTPFields = [.contentType: "application/json"]
        if let retryAfter = answer.retryAfter { headers[.retryAfter] = retryAfter }
        return Response(status: .init(code: answer.status), headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: answer.body)))
    }

    // MARK: verifyReceipt with faults

    static func verifyReceipt(_ request: Request, endpoint: AppStoreEnvironment, store: SimulatedAppStore) async throws -> Response {
        let body = try await request.body.collect(upTo: 8 * 1024 * 1024)
        let faults = await store.state.faults
        let now = store.now()
        let env = endpoint.storageName
        if faults.outages.contains(where: { $0.start <= now && now < $0.end }) {
            store.stats.record("\(env).outage")
            return html(status: .serviceUnavailable)
        }
        if faults.latencyMaxMs > 0 {
            let ms = Int.random(in: faults.latencyMinMs...max(faults.latencyMinMs, faults.latencyMaxMs))
            try await Task.sleep(for: .milliseconds(ms))
        }
        var roll = Double.random(in: 0..<1)
        func hit(_ rate: Double) -> Bool {
            if roll < rate { return true }
            roll -= rate
            return false
        }
        if hit(faults.status21005Rate) {
            store.stats.record("\(env).fault.21005")
            return json(VerifyReceiptResponse(status: .serverUnavailable, environment: endpoint))
        }
        if hit(faults.http500Rate) {
            store.stats.record("\(env).fault.500")
            return html(status: .internalServerError)
        }
        if hit(faults.http503Rate) {
            store.stats.record("\(env).fault.503")
            return html(status: .serviceUnavailable)
        }
        if hit(faults.http429Rate) {
            store.stats.record("\(env).fault.429")
            return Response(status: .tooManyRequests, headers: [.retryAfter: "1"])
        }
        if hit(faults.html200Rate) {
            store.stats.record("\(env).fault.html200")
            return html(status: .ok)
        }
        if hit(faults.hangRate) {
            store.stats.record("\(env).fault.hang")
            try await Task.sleep(for: .seconds(faults.hangSeconds))
            return html(status: .serviceUnavailable)
        }
        let response = await store.verifyReceipt(body: Array(buffer: body), endpoint: endpoint, now: store.now())
        store.stats.record("\(env).status.\(response.status.rawValue)")
        return json(response)
    }

    // MARK: Helpers

    struct DeviceView: Codable {
        var deviceId: UUID
        var bundleId: String
        var environment: String
    }

    struct CurrentEntitlementView: Codable {
        var transactionId: String
        var productId: String
        var signedTransaction: String
    }

    struct PurchaseView: Codable {
        var transaction: InAppTransaction
        /// The app receipt (StoreKit 1) after this purchase.
        var receipt: String
        /// The StoreKit 2 signed transaction (JWS) of this purchase.
        var signedTransaction: String
    }

    struct SoldTransactionView: Codable {
        var bundleId: String
        var environment: String
        var transaction: InAppTransaction
        var priceMicros: Int64?
        var currency: String?
    }

    static func deviceId(_ context: BasicRequestContext) throws -> UUID {
        guard let id = context.parameters.get("device").flatMap(UUID.init(uuidString:)) else {
            throw HTTPError(.badRequest, message: "device id must be a UUID")
        }
        return id
    }

    static func decode<T: Decodable>(_ request: Request) async throws -> T {
        let buffer = try await request.body.collect(upTo: 1024 * 1024)
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        do {
            return try decoder.decode(T.self, from: Data(buffer.readableBytesView))
        } catch {
            throw HTTPError(.badRequest, message: "invalid JSON body: \(error)")
        }
    }

    /// The share a refund returns, in milliunits of a percent, from its optional body
    /// `{"percentage": N}`: no body, or no percentage, is a full refund (100000).
    static func refundPercentage(_ body: Data) throws -> Int {
        struct Body: Decodable { var percentage: Int? }
        let invalid = SimulatorState.Failure(
            status: 400, code: "invalid_percentage",
            message: "the body must be empty or {\"percentage\": N}, N an integer from 1 to 100000 (milliunits of a percent)")
        if body.allSatisfy({ [0x20, 0x09, 0x0A, 0x0D].contains($0) }) { return 100_000 }
        guard let decoded = try? JSONDecoder().decode(Body.self, from: body) else { throw invalid }
        let percentage = decoded.percentage ?? 100_000
        guard (1...100_000).contains(percentage) else { throw invalid }
        return percentage
    }

    static func guarded(_ body: () async throws -> Response) async throws -> Response {
        do {
            return try await body()
        } catch let failure as SimulatorState.Failure {
            return json(
                ["error": ["code": failure.code, "message": failure.message]],
                status: HTTPResponse.Status(code: failure.status))
        }
    }

    static func json<T: Encodable>(_ value: T, status: HTTPResponse.Status = .ok) -> Response {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = [.sortedKeys]
        let data = (try? encoder.encode(value)) ?? Data("{}".utf8)
        return Response(
            status: status, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }

    static func html(status: HTTPResponse.Status) -> Response {
        Response(
            status: status, headers: [.contentType: "text/html"],
            body: .init(byteBuffer: ByteBuffer(string: "<html><body><h1>\(status.code) Service Unavailable</h1></body></html>")))
    }
}
