import AppStoreModels
import Foundation
import Hummingbird
import Logging
import NIOCore
import NIOHTTP1
import Synchronization

extension SimulatorServer {
    // MARK: App Store Server API

    static func addServerAPIRoutes<Routes: RouterMethods<BasicRequestContext>>(
        to routes: Routes, environment: AppStoreEnvironment, store: SimulatedAppStore
    ) {
        let env = environment
        routes.get("inApps/v1/transactions/:id") { request, context in
            let id = try context.parameters.require("id")
            return await serverAPI(request, "transaction_info", .getTransactionInfo, env, store) { app, now in
                try await store.transactionInfo(id, app: app, environment: env, now: now)
            }
        }
        routes.get("inApps/v1/transactions/appTransactions/:id") { request, context in
            let id = try context.parameters.require("id")
            return await serverAPI(request, "app_transaction", .getAppTransactionInfo, env, store) { app, now in
                try await store.appTransactionInfo(id, app: app, environment: env, now: now)
            }
        }
        routes.put("inApps/v1/transactions/:id/appAccountToken") { request, context in
            let id = try context.parameters.require("id")
            let body = try await request.body.collect(upTo: 64 * 1024)
            return await serverAPI(request, "app_account_token", .setAppAccountToken, env, store) { app, now in
                try await store.setAppAccountToken(id, body: Data(body.readableBytesView), app: app, environment: env, now: now)
            }
        }
        routes.get("inApps/v2/history/:id") { request, context in
            let id = try context.parameters.require("id")
            return await serverAPI(request, "history", .getTransactionHistory, env, store) { app, now in
                try await store.history(id, query: query(request), app: app, environment: env, now: now)
            }
        }
        routes.get("inApps/v1/subscriptions/:id") { request, context in
            let id = try context.parameters.require("id")
            return await serverAPI(request, "subscriptions", .getAllSubscriptionStatuses, env, store) { app, now in
                try await store.subscriptionStatuses(id, query: query(request), app: app, environment: env, now: now)
            }
        }
        routes.get("inApps/v2/refund/lookup/:id") { request, context in
            let id = try context.parameters.require("id")
            return await serverAPI(request, "refund_lookup", .getRefundHistory, env, store) { app, now in
                try await store.refundHistory(id, app: app, environment: env, now: now)
            }
        }
        routes.get("inApps/v1/lookup/:order") { request, context in
            let id = try context.parameters.require("order")
            return await serverAPI(request, "order_lookup", .lookUpOrderId, env, store) { app, now in
                try await store.lookUpOrder(id, app: app, environment: env, now: now)
            }
        }
        routes.post("inApps/v1/notifications/history") { request, _ in
            let body = try await request.body.collect(upTo: 64 * 1024)
            let token = request.uri.queryParameters.get("paginationToken")
            return await serverAPI(request, "notification_history", .getNotificationHistory, env, store) { app, now in
                try await store.notificationHistory(
                    body: Data(body.readableBytesView), paginationToken: token, app: app, environment: env, now: now)
            }
        }
        routes.post("inApps/v1/notifications/test") { request, _ in
            await serverAPI(request, "test_notification", .requestTestNotification, env, store) { app, now in
                try await store.sendTestNotification(app: app, environment: env, now: now)
            }
        }
        routes.get("inApps/v1/notifications/test/:token") { request, context in
            let token = try context.parameters.require("token")
            return await serverAPI(request, "test_notification_status", .getTestNotificationStatus, env, store) { app, _ in
                await store.testNotificationStatus(token, app: app)
            }
        }
        routes.put("inApps/v1/transactions/consumption/:id") { request, context in
            let id = try context.parameters.require("id")
            let body = try await request.body.collect(upTo: 64 * 1024)
            return await serverAPI(request, "consumption", .sendConsumptionInformationV1, env, store) { app, _ in
                try await store.recordConsumption(id, body: Data(body.readableBytesView), app: app, environment: env)
            }
        }
        routes.put("inApps/v2/transactions/consumption/:id") { request, context in
            let id = try context.parameters.require("id")
            let body = try await request.body.collect(upTo: 64 * 1024)
            return await serverAPI(request, "consumption_v2", .sendConsumptionInformation, env, store) { app, _ in
                try await store.recordConsumptionV2(id, body: Data(body.readableBytesView), app: app, environment: env)
            }
        }
        routes.post("inApps/v1/transactions/:id/finish") { request, context in
            let id = try context.parameters.require("id")
            return await serverAPI(request, "finish", .finishTransaction, env, store) { app, _ in
                try await store.finishTransaction(id, app: app, environment: env)
            }
        }
        routes.post("inApps/v1/subscriptions/extend/mass") { request, _ in
            let body = try await request.body.collect(upTo: 64 * 1024)
            return await serverAPI(request, "extend_mass", .extendRenewalDatesForAllActiveSubscribers, env, store) { app, now in
                try await store.massExtendRenewalDates(body: Data(body.readableBytesView), app: app, environment: env, now: now)
            }
        }
        routes.get("inApps/v1/subscriptions/extend/mass/:product/:request") { request, context in
            let product = try context.parameters.require("product")
            let identifier = try context.parameters.require("request")
            return await serverAPI(request, "extend_mass_status", .getRenewalDateExtensionStatus, env, store) { _, _ in
                store.massExtensionStatus(productId: product, requestIdentifier: identifier)
            }
        }
        addRetentionConfigurationRoutes(to: routes, environment: environment, store: store)
        routes.put("inApps/v1/subscriptions/extend/:id") { request, context in
            let id = try context.parameters.require("id")
            let body = try await request.body.collect(upTo: 64 * 1024)
            return await serverAPI(request, "extend", .extendSubscriptionRenewalDate, env, store) { app, now in
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
        _ request: Request, _ name: String, _ endpoint: ServerAPIEndpoint, _ environment: AppStoreEnvironment,
        _ store: SimulatedAppStore, _ body: (SimulatedApp, Date) async throws -> ServerAPIAnswer
    ) async -> Response {
        let now = store.now()
        let env = environment.storageName
        var answer: ServerAPIAnswer
        if let fault = store.serverAPIFault(now: now) {
            answer = fault
        } else if let app = await store.authorize(request.headers[.authorization], now: now) {
            if let limited = store.overRateLimit(app: app, endpoint, environment: environment) {
                answer = limited
            } else {
                do {
                    answer = try await body(app, now)
                } catch let rejection as ServerAPIRejection {
                    answer = rejection.answer
                } catch let failure as SimulatorState.Failure {
                    answer = .error(failure.status, 4_040_005, failure.message)
                } catch {
                    answer = .error(500, 5_000_000, "An unknown error occurred.")
                }
            }
        } else {
            answer = .unauthorized
        }
        store.stats.record("serverapi.\(env).\(name).\(answer.status)")
        var headers: HTTPFields = [.contentType: "application/json"]
        if let retryAfter = answer.retryAfter { headers[.retryAfter] = retryAfter }
        return Response(status: .init(code: answer.status), headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: answer.body)))
    }
}

extension SimulatorServer {
    /// The Retention Messaging API's configuration calls, on the Server API's hosts and token.
    static func addRetentionConfigurationRoutes<Routes: RouterMethods<BasicRequestContext>>(
        to routes: Routes, environment env: AppStoreEnvironment, store: SimulatedAppStore
    ) {
        let messaging = routes.group("inApps/v1/messaging")
        messaging.get("image/list") { request, _ in
            await serverAPI(request, "retention_images", .retentionConfiguration, env, store) { app, _ in
                store.retentionImages(app: app, environment: env)
            }
        }
        messaging.put("image/:id") { request, context in
            let id = try context.parameters.require("id")
            let body = try await request.body.collect(upTo: 16 * 1024 * 1024)
            let size = request.uri.queryParameters.get("imageSize")
            return await serverAPI(request, "retention_image_upload", .retentionConfiguration, env, store) { app, _ in
                try store.uploadRetentionImage(id, png: Data(body.readableBytesView), size: size, app: app, environment: env)
            }
        }
        messaging.delete("image/:id") { request, context in
            let id = try context.parameters.require("id")
            return await serverAPI(request, "retention_image_delete", .retentionConfiguration, env, store) { app, _ in
                try store.deleteRetentionImage(id, app: app, environment: env)
            }
        }
        messaging.get("message/list") { request, _ in
            await serverAPI(request, "retention_messages", .retentionConfiguration, env, store) { app, _ in
                store.retentionMessages(app: app, environment: env)
            }
        }
        messaging.put("message/:id") { request, context in
            let id = try context.parameters.require("id")
            let body = try await request.body.collect(upTo: 64 * 1024)
            return await serverAPI(request, "retention_message_upload", .retentionConfiguration, env, store) { app, _ in
                try store.uploadRetentionMessage(id, body: Data(body.readableBytesView), app: app, environment: env)
            }
        }
        messaging.delete("message/:id") { request, context in
            let id = try context.parameters.require("id")
            return await serverAPI(request, "retention_message_delete", .retentionConfiguration, env, store) { app, _ in
                try store.deleteRetentionMessage(id, app: app, environment: env)
            }
        }
        for method in [HTTPRequest.Method.put, .get, .delete] {
            messaging.on("default/:product/:locale", method: method) { request, context in
                let product = try context.parameters.require("product")
                let locale = try context.parameters.require("locale")
                let body = try await request.body.collect(upTo: 64 * 1024)
                return await serverAPI(request, "retention_default", .retentionConfiguration, env, store) { app, _ in
                    try store.defaultRetentionMessage(
                        .init(rawValue: method.rawValue), productId: product, locale: locale, body: Data(body.readableBytesView), app: app,
                        environment: env)
                }
            }
            messaging.on("realtime/url", method: method) { request, _ in
                let body = try await request.body.collect(upTo: 64 * 1024)
                return await serverAPI(request, "retention_realtime_url", .retentionConfiguration, env, store) { app, _ in
                    try store.realtimeURL(.init(rawValue: method.rawValue), body: Data(body.readableBytesView), app: app, environment: env)
                }
            }
        }
        guard env == .sandbox else { return }  // Apple runs the performance test in the sandbox only.
        messaging.post("performanceTest") { request, _ in
            let body = try await request.body.collect(upTo: 64 * 1024)
            return await serverAPI(request, "retention_performance_test", .retentionConfiguration, env, store) { app, _ in
                try await store.startPerformanceTest(body: Data(body.readableBytesView), app: app)
            }
        }
        messaging.get("performanceTest/result/:id") { request, context in
            let id = try context.parameters.require("id")
            return await serverAPI(request, "retention_performance_result", .retentionConfiguration, env, store) { app, _ in
                try store.performanceTestResult(id, app: app)
            }
        }
    }
}
