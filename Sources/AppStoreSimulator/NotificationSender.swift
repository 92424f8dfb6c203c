import AppStoreModels
import AsyncHTTPClient
import Foundation
import JobQueue
public import Logging
import NIOCore
import NIOHTTP1
public import ServiceLifecycle

/// Sends App Store Server Notifications V2 the way Apple does: each event of the simulated store
/// becomes a signed notification POSTed to the app's `notificationURL`; a delivery that is not
/// answered 2xx is retried on Apple's schedule (1, 12, 24, 48, 72 hours, accelerated). Every
/// notification is kept for the Server API's notification history.
public struct NotificationSender: Service, CustomStringConvertible {
    /// ServiceLifecycle logs every service: its name only, never the configuration and keys it holds.
    public var description: String { "NotificationSender" }

    let store: SimulatedAppStore
    let logger: Logger
    /// How often renewals are computed and due deliveries sent.
    let tick: Duration
    /// Deliveries under way at once, at most; the rest wait their turn in order.
    static let concurrentDeliveries = 32

    public init(store: SimulatedAppStore, logger: Logger, tick: Duration = .milliseconds(50)) {
        self.store = store
        self.logger = logger
        self.tick = tick
    }

    public func run() async throws {
        var configuration = HTTPClient.Configuration()
        configuration.timeout = .init(connect: .seconds(2), read: .seconds(10))
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        await withGracefulShutdownHandler {
            await withDiscardingTaskGroup { group in
                while !Task.isCancelled, !Task.isShuttingDownGracefully {
                    let pass = store.idle.passBegins()
                    let now = store.now()
                    var found = false
                    if await store.state.sendsNotifications {
                        await store.state.advance(to: now)
                        let events = await store.state.drainEvents()
                        found = !events.isEmpty
                        for event in events {
                            do {
                                try await store.enqueueNotification(for: event, now: now)
                            } catch {
                                logger.warning("could not build a notification", metadata: ["type": "\(event.type)", "error": "\(error)"])
                            }
                        }
                    }
                    let retryDelays = store.configuration.notificationRetryHours.map { store.configuration.acceleratedSeconds(hours: $0) }
                    for (delivery, item) in await store.outbox.takeDue(now: now, concurrency: Self.concurrentDeliveries) {
                        group.addTask {
                            let result = await deliver(item, client: client)
                            await store.outbox.finished(delivery, result: result, at: store.now(), retryDelays: retryDelays)
                            store.stats.record("notifications.attempt.\(result)")
                        }
                    }
                    // Retention Messaging performance tests started through the Server API.
                    for (id, test) in store.retention.takeUnstarted() {
                        group.addTask { await store.runPerformanceTest(id, test, client: client) }
                    }
                    let underWay = await store.outbox.hasWork(now: now, retriesToCome: !store.clock.isFrozen) || store.retention.hasWork
                    store.idle.pass(pass, wasIdle: !found && !underWay)
                    try? await Task.sleep(for: tick)
                }
            }
        } onGracefulShutdown: {
        }
        try? await client.shutdown()
    }

    /// One POST; the result names Apple's send-attempt outcomes.
    private func deliver(_ item: NotificationOutbox.Item, client: HTTPClient) async -> String {
        guard let url = await store.state.app(item.bundleId)?.notificationURL else { return "NO_RESPONSE" }
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        let body = (try? JSONEncoder().encode(["signedPayload": item.signedPayload])) ?? Data()
        request.body = .bytes(ByteBuffer(bytes: body))
        do {
            let response = try await client.execute(request, timeout: .seconds(10))
            _ = try? await response.body.collect(upTo: 1024 * 1024)
            return (200..<300).contains(response.status.code) ? "SUCCESS" : "UNSUCCESSFUL_HTTP_RESPONSE_CODE"
        } catch let error as HTTPClientError where error == .deadlineExceeded || error == .readTimeout {
            return "TIMED_OUT"
        } catch {
            return "NO_RESPONSE"
        }
    }
}

extension SimulatedAppStore {
    /// Builds and signs the V2 notification for `event` and hands it to the outbox.
    func enqueueNotification(for event: SimulatorState.Event, now: Date) async throws {
        let current = await state.transaction(event.transactionId)
        guard let tx = event.snapshot ?? current, let device = await state.device(tx.deviceId),
            let app = await state.app(device.bundleId), app.notificationURL != nil
        else { return }
        var data: [String: Any] = [
            "bundleId": device.bundleId,
            "bundleVersion": "1.0",
            "environment": device.environment == .production ? "Production" : "Sandbox",
            "signedTransactionInfo": try await signedTransaction(tx, now: event.at),
        ]
        if let appAppleId = app.appAppleId { data["appAppleId"] = appAppleId }
        if let reason = event.consumptionRequestReason { data["consumptionRequestReason"] = reason }
        let subscription: SimulatorState.Subscription?
        if let snapshot = event.subscription { subscription = snapshot } else { subscription = await state.subscription(tx.originalTransactionId) }
        if tx.kind == .autoRenewable, let sub = subscription {
            data["signedRenewalInfo"] = try await signedRenewalInfo(sub, now: event.at)
            data["status"] = await subscriptionStatus(sub, now: event.at)
        }
        let uuid = UUID().uuidString.lowercased()
        var payload: [String: Any] = [
            "notificationType": event.type,
            "notificationUUID": uuid,
            "version": "2.0",
            "signedDate": Int64((now.timeIntervalSince1970 * 1000).rounded()),
            "data": data,
        ]
        if let subtype = event.subtype { payload["subtype"] = subtype }
        let json = try JSONSerialization.data(withJSONObject: payload, options: [.sortedKeys])
        let signed = try pki.signJWS(payload: Array(json))
        await outbox.add(
            NotificationOutbox.Item(
                uuid: uuid, bundleId: device.bundleId, environment: device.environment, type: event.type, subtype: event.subtype,
                transactionId: tx.transactionId, originalTransactionId: tx.originalTransactionId, signedPayload: signed,
                createdAt: now),
            now: now)
        stats.record("notifications.created.\(event.type)")
    }

    /// RESCIND_CONSENT: the customer behind `deviceId` withdrew consent to share their data
    /// with the app. Apple sends `appData` (the signed app transaction), no `data`. Answers the
    /// notification's UUID and signed payload.
    func enqueueRescindConsent(deviceId: UUID, now: Date) async throws -> (uuid: String, signedPayload: String) {
        guard let device = await state.device(deviceId), let app = await state.app(device.bundleId) else {
            throw SimulatorState.Failure(status: 404, code: "unknown_device", message: "no device")
        }
        let uuid = UUID().uuidString.lowercased()
        var appData: [String: Any] = [
            "bundleId": device.bundleId, "environment": device.environment == .production ? "Production" : "Sandbox",
            "signedAppTransactionInfo": try await signedAppTransaction(device, app: app, now: now),
        ]
        if let appAppleId = app.appAppleId { appData["appAppleId"] = appAppleId }
        let payload: [String: Any] = [
            "notificationType": "RESCIND_CONSENT", "notificationUUID": uuid, "version": "2.0",
            "signedDate": Int64((now.timeIntervalSince1970 * 1000).rounded()), "appData": appData,
        ]
        let json = try JSONSerialization.data(withJSONObject: payload, options: [.sortedKeys])
        let signed = try pki.signJWS(payload: Array(json))
        await outbox.add(
            NotificationOutbox.Item(
                uuid: uuid, bundleId: device.bundleId, environment: device.environment, type: "RESCIND_CONSENT", transactionId: nil,
                originalTransactionId: nil, signedPayload: signed, createdAt: now),
            now: now)
        stats.record("notifications.created.RESCIND_CONSENT")
        return (uuid, signed)
    }

    /// Apple's TEST notification, sent on request through the Server API.
    func enqueueTestNotification(app: SimulatedApp, environment: AppStoreEnvironment, now: Date) async throws -> String {
        let uuid = UUID().uuidString.lowercased()
        var data: [String: Any] = [
            "bundleId": app.bundleId, "environment": environment == .production ? "Production" : "Sandbox",
        ]
        if let appAppleId = app.appAppleId { data["appAppleId"] = appAppleId }
        let payload: [String: Any] = [
            "notificationType": "TEST", "notificationUUID": uuid, "version": "2.0",
            "signedDate": Int64((now.timeIntervalSince1970 * 1000).rounded()), "data": data,
        ]
        let json = try JSONSerialization.data(withJSONObject: payload, options: [.sortedKeys])
        await outbox.add(
            NotificationOutbox.Item(
                uuid: uuid, bundleId: app.bundleId, environment: environment, type: "TEST", transactionId: nil,
                originalTransactionId: nil, signedPayload: try pki.signJWS(payload: Array(json)), createdAt: now),
            now: now)
        return uuid
    }
}
