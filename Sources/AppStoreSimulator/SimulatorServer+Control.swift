import AppStoreModels
import Foundation
import Hummingbird
import Logging
import NIOCore
import Synchronization

extension SimulatorServer {
    /// The `/sim` test API: devices and purchases, renewals, billing, refunds and revocations,
    /// faults, the clock, notifications, the certificate authority.
    static func addControlRoutes(to sim: RouterGroup<BasicRequestContext>, store: SimulatedAppStore) {
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
                /// The app version this customer first obtained (default "1").
                var originalApplicationVersion: String?
            }
            let body: Body = try await Self.decode(request)
            let env = AppStoreEnvironment(storageName: body.environment ?? "sandbox") ?? .sandbox
            return try await Self.guarded {
                let device = try await store.state.createDevice(
                    bundleId: body.bundleId, environment: env, originalApplicationVersion: body.originalApplicationVersion)
                return Self.json(DeviceView(deviceId: device.id, bundleId: device.bundleId, environment: env.storageName), status: .created)
            }
        }
        sim.post("devices/:device/purchases") { request, context in
            struct Body: Decodable {
                var productId: String
                var quantity: Int?
                var appAccountToken: String?
                var offer: SimulatorState.Offer?
                /// A promotional offer with its signature (V1 fields or the V2 `jws`).
                var promotionalOffer: SignedPromotionalOffer?
                /// StoreKit's `introductoryOfferEligibility(compactJWS:)`: the server's eligibility JWS.
                var introductoryOfferEligibility: String?
                /// StoreKit's `winBackOffer(_:)`: the id of one of the product's win-back offers.
                var winBackOffer: String?
                /// StoreKit's `billingPlanType(_:)`: `MONTHLY` or `BILLED_UPFRONT`.
                var billingPlanType: String?
            }
            let body: Body = try await Self.decode(request)
            let deviceId = try Self.deviceId(context)
            return try await Self.guarded {
                let now = store.now()
                let tx = try await store.state.purchase(
                    deviceId: deviceId, productId: body.productId, quantity: body.quantity ?? 1, now: now, appAccountToken: body.appAccountToken,
                    offer: body.offer, promotionalOffer: body.promotionalOffer, introductoryEligibility: body.introductoryOfferEligibility,
                    winBackOffer: body.winBackOffer, billingPlanType: body.billingPlanType)
                return try await Self.sold(tx, by: store, now: now)
            }
        }
        // App Store Connect's offer codes for a subscription offer of an app.
        sim.post("apps/:bundleId/offer-codes") { request, context in
            struct Body: Decodable {
                var code: String
                var productId: String
                var referenceName: String
                var discountType: String?
                var period: String?
                var priceMicros: Int64?
                var oneTime: Bool?
            }
            let bundleId = try context.parameters.require("bundleId")
            let body: Body = try await Self.decode(request)
            return try await Self.guarded {
                try await store.state.addOfferCode(
                    body.code,
                    .init(
                        bundleId: bundleId, productId: body.productId, referenceName: body.referenceName,
                        discountType: body.discountType ?? "FREE_TRIAL", period: body.period, priceMicros: body.priceMicros,
                        oneTime: body.oneTime ?? true))
                return Self.json(["code": body.code.uppercased()], status: .created)
            }
        }
        // The customer types a code into StoreKit's offer code redemption sheet.
        sim.post("devices/:device/offer-code-redemptions") { request, context in
            struct Body: Decodable { var code: String }
            let body: Body = try await Self.decode(request)
            let deviceId = try Self.deviceId(context)
            return try await Self.guarded {
                let now = store.now()
                let tx = try await store.state.redeem(code: body.code, deviceId: deviceId, now: now)
                return try await Self.sold(tx, by: store, now: now)
            }
        }
        // StoreKit's `AppTransaction.shared` on the device: its app transaction, signed now.
        sim.get("devices/:device/app-transaction") { _, context in
            let deviceId = try Self.deviceId(context)
            return try await Self.guarded {
                guard let device = await store.state.device(deviceId), let app = await store.state.app(device.bundleId) else {
                    throw SimulatorState.Failure(status: 404, code: "unknown_device", message: "no device")
                }
                return Self.json(["signedAppTransaction": try await store.signedAppTransaction(device, app: app, now: store.now())])
            }
        }
        // StoreKit's `Message.messages` on the device at launch: the App Store's sheets waiting
        // for this customer (a price increase to agree to, a billing issue).
        sim.get("devices/:device/messages") { _, context in
            struct Message: Encodable {
                var reason: String
                var originalTransactionId: String
            }
            let deviceId = try Self.deviceId(context)
            await store.state.advance(to: store.now())
            let messages = await store.state.pendingMessages(deviceId).map {
                Message(reason: $0.reason, originalTransactionId: $0.originalTransactionId)
            }
            return Self.json(["messages": messages])
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
        // The subscriber cancels. Where the app has a realtime URL, Apple first asks it what to
        // show (Retention Messaging); a promotional offer it answers with is taken, and the
        // subscriber stays (`kept_with_offer`); anything else, and they cancel.
        sim.post("subscriptions/:original/cancel-auto-renew") { _, context in
            let id = try context.parameters.require("original")
            return try await Self.guarded {
                struct Answer: Encodable {
                    var status: String
                    var retention: RetentionExchange?
                }
                var retention: RetentionExchange?
                let subject = try await store.state.retentionSubject(id)
                if store.retention.realtimeURL(subject.app, subject.device.environment) != nil {
                    retention = try await store.askRetention(originalTransactionId: id, locale: "en_US", now: store.now())
                }
                if retention?.offerAppliedToNextRenewal != nil { return Self.json(Answer(status: "kept_with_offer", retention: retention)) }
                try await store.state.setAutoRenew(originalTransactionId: id, enabled: false, now: store.now())
                return Self.json(Answer(status: "auto_renew_off", retention: retention))
            }
        }
        sim.post("subscriptions/:original/resume-auto-renew") { _, context in
            let id = try context.parameters.require("original")
            return try await Self.guarded {
                try await store.state.setAutoRenew(originalTransactionId: id, enabled: true, now: store.now())
                return Self.json(["status": "auto_renew_on"])
            }
        }
        // The customer changes plans in the App Store's settings, effective at the next renewal.
        sim.post("subscriptions/:original/renewal-product") { request, context in
            struct Body: Decodable { var productId: String }
            let id = try context.parameters.require("original")
            let body: Body = try await Self.decode(request)
            return try await Self.guarded {
                try await store.state.changeRenewalProduct(originalTransactionId: id, to: body.productId, now: store.now())
                return Self.json(["autoRenewProductId": body.productId])
            }
        }
        // App Store Connect's new price for existing subscribers, effective at the next renewal.
        sim.post("subscriptions/:original/price-increase") { request, context in
            struct Body: Decodable {
                var priceMicros: Int64
                var consentRequired: Bool?
            }
            let id = try context.parameters.require("original")
            let body: Body = try await Self.decode(request)
            return try await Self.guarded {
                let consent = body.consentRequired ?? true
                try await store.state.raisePrice(originalTransactionId: id, to: body.priceMicros, consentRequired: consent, now: store.now())
                return Self.json(["priceIncreaseStatus": consent ? 0 : 1])
            }
        }
        // The customer agrees in StoreKit's price consent sheet.
        sim.post("subscriptions/:original/price-increase/consent") { _, context in
            let id = try context.parameters.require("original")
            return try await Self.guarded {
                try await store.state.agreeToPriceIncrease(originalTransactionId: id, now: store.now())
                return Self.json(["priceIncreaseStatus": 1])
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
        // The customer asks Apple for a refund: CONSUMPTION_REQUEST now, Apple's decision once the
        // developer's consumption information arrives or 12 hours pass. Optional body
        // `{"reason": "UNINTENDED_PURCHASE"}` (Apple's consumptionRequestReason; that by default).
        sim.post("transactions/:transaction/refund-request") { request, context in
            let id = try context.parameters.require("transaction")
            let body = try await request.body.collect(upTo: 64 * 1024)
            return try await Self.guarded {
                struct Body: Decodable { var reason: String? }
                let data = Data(body.readableBytesView)
                let reason: String
                if Self.isBlank(data) {
                    reason = "UNINTENDED_PURCHASE"
                } else if let decoded = try? JSONDecoder().decode(Body.self, from: data) {
                    reason = decoded.reason ?? "UNINTENDED_PURCHASE"
                } else {
                    throw SimulatorState.Failure(status: 400, code: "invalid_body", message: "the body must be empty or {\"reason\": \"…\"}")
                }
                return Self.json(SimulatedAppStore.wire(try await store.state.requestRefund(transactionId: id, reason: reason, now: store.now())))
            }
        }
        sim.get("transactions") { _, _ in
            await store.state.advance(to: store.now())
            var views: [SoldTransactionView] = []
            for tx in await store.state.allTransactions() {
                let bundleId = await store.state.device(tx.deviceId)?.bundleId ?? ""
                let (catalogPrice, currency) = await store.state.price(bundleId: bundleId, productId: tx.productId)
                let price = (tx.priceMicros ?? catalogPrice).map { $0 * (tx.billedUpfront ? Int64(SimulatorState.paymentsPerCommitment) : 1) }
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
        sim.put("server-api/rate-limits") { request, _ in
            let limits: ServerAPIRateLimits = try await Self.decode(request)
            store.serverAPI.rateLimits.withLock { $0 = limits.scale > 0 ? limits : nil }
            store.serverAPI.windows.withLock { $0.removeAll() }
            return Self.json(limits)
        }
        sim.put("notifications/faults") { request, _ in
            let faults: NotificationOutbox.Faults = try await Self.decode(request)
            await store.outbox.setFaults(faults)
            return Self.json(faults)
        }
        sim.post("notifications/release") { _, _ in
            Self.json(["released": await store.outbox.releaseParked(now: store.now())])
        }
        // Retention Messaging's realtime URL of an app (Apple's Configure Realtime URL).
        sim.put("retention/url") { request, _ in
            try await Self.setURL(request, store: store) {
                $0.retentionURL = $1
                $0.retentionTimeoutSeconds = $2
                store.retention.forgetRealtimeURLs($0.bundleId)
            }
        }
        // Apple's review of an uploaded message or image, decided here: uploads are approved at
        // once; `{"bundleId", "environment", "messageIdentifier" | "imageIdentifier", "state"}`
        // sets another state (REJECTED, PENDING) to see what Apple then refuses.
        sim.put("retention/review") { request, _ in
            struct Body: Decodable {
                var bundleId: String
                var environment: String?
                var messageIdentifier: String?
                var imageIdentifier: String?
                var state: String
            }
            let body: Body = try await Self.decode(request)
            return try await Self.guarded {
                let environment: AppStoreEnvironment = body.environment?.lowercased() == "sandbox" ? .sandbox : .production
                let state = RetentionReviewState(rawValue: body.state)
                let found = store.retention.withSpace(body.bundleId, environment) { space -> Bool in
                    if let id = body.messageIdentifier?.lowercased(), space.messages[id] != nil {
                        space.messages[id]?.state = state
                        return true
                    }
                    if let id = body.imageIdentifier?.lowercased(), space.images[id] != nil {
                        space.images[id]?.state = state
                        return true
                    }
                    return false
                }
                guard found else { throw SimulatorState.Failure(status: 404, code: "not_found", message: "no such message or image") }
                return Self.json(["state": state.rawValue])
            }
        }
        // Returns once a Retention Messaging performance test has sent every request, with
        // Apple's result: a harness waits on this rather than polling.
        sim.get("retention/performance-tests/:id/finished") { _, context in
            let id = try context.parameters.require("id").lowercased()
            await store.retention.waitUntilFinished(id)
            return try await Self.guarded {
                guard let test = store.retention.anyTest(id) else {
                    throw SimulatorState.Failure(status: 404, code: "not_found", message: "no performance test \(id)")
                }
                return Self.json(test.result)
            }
        }
        // A subscriber views their subscription and may cancel: Apple asks the realtime URL what
        // to show (optional body `{"locale": "fr_FR"}`, `en_US` by default) and answers what it saw.
        sim.post("subscriptions/:original/retention-request") { request, context in
            let id = try context.parameters.require("original")
            let body = try await request.body.collect(upTo: 64 * 1024)
            return try await Self.guarded {
                struct Body: Decodable { var locale: String? }
                let data = Data(body.readableBytesView)
                let locale = Self.isBlank(data) ? "en_US" : ((try? JSONDecoder().decode(Body.self, from: data))?.locale ?? "en_US")
                return Self.json(try await store.askRetention(originalTransactionId: id, locale: locale, now: store.now()))
            }
        }
        sim.put("notifications/url") { request, _ in try await Self.setURL(request, store: store) { app, url, _ in app.notificationURL = url }
        }
        // What Apple still has to tell: events not yet made notifications (while an app listens),
        // deliveries still to make (retries included; lost ones are not). Both zero after a test's
        // last step: the server was told everything.
        sim.get("notifications/backlog") { _, _ in
            let undrained = await store.state.sendsNotifications ? await store.state.undrainedEvents : 0
            return Self.json(["undrained": undrained, "deliveries": await store.outbox.pendingDeliveries])
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
                return try await Self.sold(shared, by: store, now: now)
            }
        }
        sim.post("transactions/:transaction/reverse-refund") { _, context in
            let id = try context.parameters.require("transaction")
            return try await Self.guarded {
                Self.json(SimulatedAppStore.wire(try await store.state.reverseRefund(transactionId: id, now: store.now())))
            }
        }
        // A transaction as it stands now, signed: what StoreKit's `Transaction.updates` hands the
        // app after a refund or revocation (the SDK's simulator store front delivers it).
        sim.get("transactions/:transaction/signed") { _, context in
            let id = try context.parameters.require("transaction")
            return try await Self.guarded {
                let now = store.now()
                guard let tx = await store.state.transaction(id) else {
                    throw SimulatorState.Failure(status: 404, code: "unknown_transaction", message: "no transaction \(id)")
                }
                return Self.json(
                    CurrentEntitlementView(
                        transactionId: tx.transactionId, productId: tx.productId, signedTransaction: try await store.signedTransaction(tx, now: now)))
            }
        }
        sim.post("transactions/:transaction/revoke") { _, context in
            let id = try context.parameters.require("transaction")
            return try await Self.guarded {
                Self.json(SimulatedAppStore.wire(try await store.state.revoke(transactionId: id, now: store.now())))
            }
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
}
