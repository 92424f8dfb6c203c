import AppStoreModels
import Foundation

/// The simulated App Store's memory: apps, devices (one Apple ID each), their transactions and
/// subscriptions. Renewals are computed lazily from the clock, so a month can last seconds.
actor SimulatorState {
    struct Transaction: Codable, Sendable {
        var transactionId: String
        var originalTransactionId: String
        var productId: String
        var kind: SimulatedProduct.Kind
        var quantity: Int
        var purchaseDate: Date
        var originalPurchaseDate: Date
        var expiresDate: Date?
        var cancellationDate: Date?
        var webOrderLineItemId: String?
        var deviceId: UUID
        /// The UUID the app passed to StoreKit 2's purchase, if any (`appAccountToken`).
        var appAccountToken: String? = nil
        /// `PURCHASED`, or `FAMILY_SHARED` for a family member's access to another's purchase.
        var ownership: String = "PURCHASED"
        /// Apple's revocation reason: 0 other (family sharing stopped), 1 app issue.
        var revocationReason: Int? = nil
        /// How it was revoked (`REFUND_FULL`, `REFUND_PRORATED`, `FAMILY_REVOKE`) and what share,
        /// in milliunits of a percent; both set with `cancellationDate` and cleared with it.
        var revocationType: String? = nil
        var revocationPercentage: Int? = nil
        /// When Apple last changed the transaction after selling it (refund, revocation,
        /// renewal extension, new app account token); nil if never.
        var modifiedDate: Date? = nil
        /// The offer the first period was bought with; renewals carry none.
        var offer: Offer? = nil
        /// What this period was charged where it is not the catalog's price: a renewal after a
        /// price increase took effect.
        var priceMicros: Int64? = nil
        /// A commitment product bought for the year at once (`BILLED_UPFRONT`) rather than by
        /// the month: one 12-month period at twelve monthly prices, no commitment payments.
        var billedUpfront = false

        /// What Get Transaction History sorts by.
        var lastModified: Date { modifiedDate ?? purchaseDate }
    }

    /// An offer applied to a subscription's first period, as Apple signs it (`offerType` 1
    /// introductory, 2 promotional, 3 offer code, 4 win-back). With a `period`, the first period
    /// lasts that long (accelerated like every period). Eligibility and offer signatures are not
    /// checked here.
    struct Offer: Codable, Sendable, Hashable {
        var type: Int
        var identifier: String?
        var discountType: String
        var period: String?
        /// What the offer's period is charged, in micros (a signed promotional offer's price).
        var priceMicros: Int64? = nil
    }

    /// Something that makes Apple send a V2 notification, in the order it happened.
    struct Event: Sendable {
        var type: String
        var subtype: String?
        var transactionId: String
        var at: Date
        /// The transaction as it was when the event happened (a notification shows that state,
        /// even when it is built or delivered later).
        var snapshot: Transaction?
        /// The subscription as it was then: the renewal info and status a notification carries
        /// are those of its event, not of a later one drained in the same tick.
        var subscription: Subscription? = nil
        /// CONSUMPTION_REQUEST: why the customer asked (`data.consumptionRequestReason`).
        var consumptionRequestReason: String? = nil
    }

    struct Subscription: Sendable {
        var originalTransactionId: String
        var deviceId: UUID
        var productId: String
        var period: Double
        var autoRenew: Bool
        var renewals: Int
        /// Set while Apple fails to charge; renewals stop.
        var billingFailedAt: Date?
        var graceUntil: Date?
        var latestTransactionId: String
        /// EXPIRED was announced for the current lapse.
        var expiryAnnounced = false
        /// A promotional offer the customer took from a retention message: the next renewal
        /// is sold with it, once.
        var nextRenewalOffer: Offer? = nil
        /// Another product of the group the customer chose for the next renewal (a downgrade or
        /// crossgrade waits for it): Apple's `autoRenewProductId` then names it.
        var autoRenewProductId: String? = nil
        /// A price increase Apple announced for this subscriber, taking effect at the next renewal.
        var priceIncrease: PriceIncrease? = nil
        /// What each period costs since a price increase took effect (nil: the catalog's price).
        var priceMicros: Int64? = nil
        /// The renewal date came with a price increase the customer had not agreed to: the
        /// subscription lapsed instead (expiration intent 3, EXPIRED `PRICE_INCREASE`).
        var declinedPriceIncrease = false
        /// Bought `BILLED_UPFRONT`: every period is a year, charged at once.
        var billedUpfront = false

        /// Apple's `priceIncreaseStatus`: 0 while an increase that needs consent waits for it, 1
        /// once agreed (or for one that needs none); nil without an increase.
        var priceIncreaseStatus: Int? { priceIncrease.map { $0.consentRequired && !$0.agreed ? 0 : 1 } }
    }

    /// A new price for an existing subscriber (App Store Connect's price change for existing
    /// subscribers). An increase beyond Apple's limits needs the customer's consent before the
    /// renewal it applies to; one within them is only announced.
    struct PriceIncrease: Sendable {
        var priceMicros: Int64
        var consentRequired: Bool
        var agreed = false
    }

    struct Device: Sendable {
        var id: UUID
        var bundleId: String
        var environment: AppStoreEnvironment
        var transactionIds: [String]
        /// The app version the customer first obtained (the app transaction's
        /// `originalApplicationVersion`): a test makes a customer who bought before a change.
        var originalApplicationVersion = "1"

        /// Apple's per-customer app transaction id: a number, the same for the device every
        /// time (FNV-1a 64 of its UUID, in a 16-digit range).
        var appTransactionId: String {
            var hash: UInt64 = 0xcbf2_9ce4_8422_2325
            for byte in withUnsafeBytes(of: id.uuid, Array.init) { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
            return String(7_000_000_000_000_000 + hash % 1_000_000_000_000_000)
        }
    }

    /// Where a payment of a monthly plan with a 12-month commitment falls.
    struct CommitmentPosition: Sendable {
        /// Which monthly payment of its commitment this is, 1 to `paymentsPerCommitment`.
        var billingPeriod: Int
        /// When that commitment began: the purchase date of its first payment.
        var start: Date
    }

    /// Monthly payments in one commitment.
    static let paymentsPerCommitment = 12

    struct Failure: Error, CustomStringConvertible {
        var status: Int
        var code: String
        var message: String
        var description: String { "\(code): \(message)" }
    }

    private(set) var configuration: SimulatorConfiguration
    /// Nonces of promotional offer signatures already used, per app: Apple takes each once.
    private var usedOfferNonces: Set<String> = []
    private var apps: [String: SimulatedApp]
    private var devices: [UUID: Device] = [:]
    private var transactions: [String: Transaction] = [:]
    private var subscriptions: [String: Subscription] = [:]
    private var nextId: UInt64
    var faults: FaultConfiguration
    /// Events not yet turned into notifications (only kept while some app has a notification URL).
    private var events: [Event] = []
    /// Refund requests Apple is deciding: transaction id → when it decides without an answer.
    private var refundRequests: [String: Date] = [:]
    /// Offer codes by code, upper-cased (``OfferCode``).
    var offerCodes: [String: OfferCode] = [:]

    init(configuration: SimulatorConfiguration) {
        self.configuration = configuration
        self.apps = Dictionary(configuration.apps.map { ($0.bundleId, $0) }, uniquingKeysWith: { $1 })
        self.faults = configuration.faults
        // Ids unique across simulator restarts: start from the clock.
        self.nextId = UInt64(Date().timeIntervalSince1970 * 1000) * 1000
    }

    func setFaults(_ faults: FaultConfiguration) { self.faults = faults }

    func upsertApp(_ app: SimulatedApp) { apps[app.bundleId] = app }

    func app(_ bundleId: String) -> SimulatedApp? { apps[bundleId] }

    func allApps() -> [SimulatedApp] { apps.values.sorted { $0.bundleId < $1.bundleId } }

    private func newId() -> String {
        nextId += 1
        return String(nextId)
    }

    func createDevice(bundleId: String, environment: AppStoreEnvironment, originalApplicationVersion: String? = nil) throws -> Device {
        guard apps[bundleId] != nil else { throw Failure(status: 404, code: "unknown_app", message: "no app \(bundleId)") }
        var device = Device(id: UUID(), bundleId: bundleId, environment: environment, transactionIds: [])
        if let originalApplicationVersion { device.originalApplicationVersion = originalApplicationVersion }
        devices[device.id] = device
        return device
    }

    func device(_ id: UUID) -> Device? { devices[id] }

    func device(appTransactionId: String) -> Device? { devices.values.first { $0.appTransactionId == appTransactionId } }

    /// Set App Account Token: the token goes on every transaction of the purchase, so what is
    /// signed from now on carries it.
    func setAppAccountToken(originalTransactionId: String, token: String, now: Date) {
        for (id, transaction) in transactions where transaction.originalTransactionId == originalTransactionId {
            transactions[id]?.appAccountToken = token
            transactions[id]?.modifiedDate = now
        }
    }

    func purchase(
        deviceId: UUID, productId: String, quantity: Int, now: Date, appAccountToken: String? = nil, offer: Offer? = nil,
        promotionalOffer: SignedPromotionalOffer? = nil, introductoryEligibility: String? = nil, winBackOffer: String? = nil,
        redeemingCode: Bool = false, billingPlanType: String? = nil
    ) throws -> Transaction {
        guard var device = devices[deviceId] else { throw Failure(status: 404, code: "unknown_device", message: "no device") }
        guard let app = apps[device.bundleId], let product = app.products.first(where: { $0.productId == productId }) else {
            throw Failure(status: 404, code: "unknown_product", message: "no product \(productId)")
        }
        var offer = offer
        // The developer's server decides introductory eligibility in place of the App Store's own
        // reckoning: not eligible, the purchase is made at the full price.
        if let introductoryEligibility,
            try !OfferSignatureCheck.introductoryEligibility(introductoryEligibility, app: app, product: product, now: now), offer?.type == 1
        {
            offer = nil
        }
        if let promotionalOffer {
            guard offer == nil, product.kind == .autoRenewable else {
                throw Failure(status: 400, code: "offer_not_applicable", message: "one offer, on an auto-renewable subscription")
            }
            var nonces = usedOfferNonces
            let sold = try OfferSignatureCheck.check(
                promotionalOffer, app: app, product: product, appAccountToken: appAccountToken, now: now, usedNonces: &nonces)
            usedOfferNonces = nonces
            offer = Offer(type: 2, identifier: sold.id, discountType: sold.discountType, period: sold.period, priceMicros: sold.priceMicros)
        }
        if let winBackOffer {
            offer = try winBack(winBackOffer, product: product, device: device, alongside: offer, now: now)
        }
        // StoreKit's `billingPlanType(_:)`: only a product sold with a 12-month commitment has
        // plans to choose from; without the option it is bought by the month.
        if let billingPlanType, !configuration.commitmentProductIds.contains(productId) || !["MONTHLY", "BILLED_UPFRONT"].contains(billingPlanType) {
            throw Failure(status: 400, code: "invalidBillingPlan", message: "\(productId) is not sold on the plan '\(billingPlanType)'")
        }
        let upfront = billingPlanType == "BILLED_UPFRONT"
        if let offer {
            guard product.kind == .autoRenewable else {
                throw Failure(status: 400, code: "offer_not_applicable", message: "offers apply to auto-renewable subscriptions")
            }
            guard (1...4).contains(offer.type) else { throw Failure(status: 400, code: "invalid_offer", message: "offer type must be 1-4") }
        }
        advance(to: now)
        if product.kind == .nonConsumable || product.kind == .freeSubscription,
            let owned = device.transactionIds.compactMap({ transactions[$0] }).first(where: {
                $0.productId == productId && $0.cancellationDate == nil
            })
        {
            return owned  // Buying again restores, as on a device.
        }
        if product.kind == .autoRenewable,
            let active = subscriptions.values.first(where: {
                $0.deviceId == deviceId && $0.productId == productId
                    && (transactions[$0.latestTransactionId]?.expiresDate ?? .distantPast) > now
                    && transactions[$0.latestTransactionId]?.cancellationDate == nil
            })
        {
            throw Failure(
                status: 409, code: "already_subscribed",
                message: "device already subscribed (original transaction \(active.originalTransactionId))")
        }
        let id = newId()
        var tx = Transaction(
            transactionId: id, originalTransactionId: id, productId: productId, kind: product.kind,
            quantity: product.kind == .consumable ? max(1, quantity) : 1, purchaseDate: now, originalPurchaseDate: now,
            expiresDate: nil, cancellationDate: nil, webOrderLineItemId: nil, deviceId: deviceId, appAccountToken: appAccountToken)
        if product.kind == .autoRenewable {
            let period = configuration.acceleratedSeconds(forPeriod: product.period) * (upfront ? Double(Self.paymentsPerCommitment) : 1)
            tx.billedUpfront = upfront
            tx.offer = offer
            tx.expiresDate = now.addingTimeInterval(offer?.period.map { configuration.acceleratedSeconds(forPeriod: $0) } ?? period)
            tx.webOrderLineItemId = newId()
            subscriptions[id] = Subscription(
                originalTransactionId: id, deviceId: deviceId, productId: productId, period: period, autoRenew: true,
                renewals: 0, billingFailedAt: nil, graceUntil: nil, latestTransactionId: id)
            subscriptions[id]?.billedUpfront = upfront
        }
        transactions[id] = tx
        device.transactionIds.append(id)
        devices[deviceId] = device
        let type = redeemingCode ? "OFFER_REDEEMED" : product.kind == .autoRenewable ? "SUBSCRIBED" : "ONE_TIME_CHARGE"
        record(type, product.kind == .autoRenewable ? "INITIAL_BUY" : nil, id, now)
        return tx
    }

    /// A family member's device gains access to another device's purchase (Family Sharing):
    /// a transaction of its own, `FAMILY_SHARED`, that nobody paid for.
    func shareWithFamily(transactionId: String, memberDeviceId: UUID, now: Date) throws -> Transaction {
        guard let purchased = transactions[transactionId], var member = devices[memberDeviceId],
            devices[purchased.deviceId]?.bundleId == member.bundleId
        else { throw Failure(status: 404, code: "unknown_transaction", message: "no transaction \(transactionId) for this app") }
        let id = newId()
        var shared = purchased
        shared.transactionId = id
        shared.originalTransactionId = id
        shared.deviceId = memberDeviceId
        shared.ownership = "FAMILY_SHARED"
        shared.appAccountToken = nil
        transactions[id] = shared
        member.transactionIds.append(id)
        devices[memberDeviceId] = member
        return shared
    }

    /// Family Sharing stopped for a shared transaction: Apple revokes it and sends REVOKE.
    func revoke(transactionId: String, now: Date) throws -> Transaction {
        guard var tx = transactions[transactionId] else {
            throw Failure(status: 404, code: "unknown_transaction", message: "no transaction \(transactionId)")
        }
        tx.cancellationDate = tx.cancellationDate ?? now
        tx.revocationReason = 0
        tx.revocationType = "FAMILY_REVOKE"
        tx.revocationPercentage = 100_000
        tx.modifiedDate = now
        transactions[transactionId] = tx
        record("REVOKE", nil, transactionId, now)
        return tx
    }

    /// `subscription`: the subscription's state at the event when the caller holds it unsaved
    /// (renewals computed in `advance`); otherwise it is read as stored.
    private func record(
        _ type: String, _ subtype: String?, _ transactionId: String, _ at: Date, subscription: Subscription? = nil, reason: String? = nil
    ) {
        guard apps.values.contains(where: { $0.notificationURL != nil }) else { return }
        let snapshot = transactions[transactionId]
        events.append(
            Event(
                type: type, subtype: subtype, transactionId: transactionId, at: at, snapshot: snapshot,
                subscription: subscription ?? snapshot.flatMap { subscriptions[$0.originalTransactionId] },
                consumptionRequestReason: reason))
    }

    /// Events since the last call, oldest first.
    /// Events not yet turned into notifications (the sender's next tick does).
    var undrainedEvents: Int { events.count }

    func drainEvents() -> [Event] {
        defer { events.removeAll() }
        return events
    }

    /// Some app wants notifications: the sender's clock has work to do.
    var sendsNotifications: Bool { apps.values.contains { $0.notificationURL != nil } }

    /// How long Apple waits for consumption information before it decides a refund request alone.
    static let refundRequestWindow: TimeInterval = 12 * 3_600

    /// The customer asks Apple for a refund: Apple sends CONSUMPTION_REQUEST and waits 12 hours
    /// for the developer's consumption information (`answerRefundRequest`), then decides.
    func requestRefund(transactionId: String, reason: String, now: Date) throws -> Transaction {
        advance(to: now)
        guard let tx = transactions[transactionId] else {
            throw Failure(status: 404, code: "unknown_transaction", message: "no transaction \(transactionId)")
        }
        guard tx.cancellationDate == nil else {
            throw Failure(status: 409, code: "already_refunded", message: "transaction \(transactionId) is refunded")
        }
        guard refundRequests[transactionId] == nil else {
            throw Failure(status: 409, code: "refund_requested", message: "a refund of \(transactionId) is being decided")
        }
        refundRequests[transactionId] = now.addingTimeInterval(Self.refundRequestWindow)
        record("CONSUMPTION_REQUEST", nil, transactionId, now, reason: reason)
        return tx
    }

    /// The developer's consumption information reached Apple: a request being decided is decided
    /// now, by the developer's preference (`DECLINE`: REFUND_DECLINED; `GRANT_PRORATED`: the
    /// share not consumed refunded; `GRANT_FULL`, or none: refunded). Information about a
    /// transaction no request is open for is only kept. True when a request was decided.
    @discardableResult
    func answerRefundRequest(transactionId: String, preference: String?, consumptionPercentage: Int?, now: Date) -> Bool {
        guard refundRequests.removeValue(forKey: transactionId) != nil else { return false }
        switch preference {
        case "DECLINE":
            record("REFUND_DECLINED", nil, transactionId, now)
        case "GRANT_PRORATED":
            let share = 100_000 - min(max(consumptionPercentage ?? 0, 0), 99_999)
            _ = try? refund(transactionId: transactionId, percentage: share, now: now)
        default:
            _ = try? refund(transactionId: transactionId, now: now)
        }
        return true
    }

    /// What a Retention Messaging request about `originalTransactionId` is built from.
    func retentionSubject(_ originalTransactionId: String) throws -> (app: SimulatedApp, subscription: Subscription, device: Device) {
        guard let sub = subscriptions[originalTransactionId], let device = devices[sub.deviceId], let app = apps[device.bundleId] else {
            throw unknownSubscription()
        }
        return (app, sub, device)
    }

    /// The customer takes a promotional offer a retention message carried: its V2 signature is
    /// checked as a purchase's is (the app's keys, the claims, a day's validity, each nonce
    /// once), then the subscription's next renewal is sold with it.
    func acceptRetentionOffer(originalTransactionId: String, jws: String, now: Date) throws -> SimulatedOffer {
        let (app, sub, _) = try retentionSubject(originalTransactionId)
        guard let product = app.products.first(where: { $0.productId == sub.productId }) else {
            throw Failure(status: 404, code: "unknown_product", message: "no product \(sub.productId)")
        }
        var nonces = usedOfferNonces
        let offer = try OfferSignatureCheck.check(
            SignedPromotionalOffer(jws: jws), app: app, product: product, appAccountToken: nil, now: now, usedNonces: &nonces)
        usedOfferNonces = nonces
        subscriptions[originalTransactionId]?.nextRenewalOffer = Offer(
            type: 2, identifier: offer.id, discountType: offer.discountType, period: offer.period, priceMicros: offer.priceMicros)
        return offer
    }

    /// Creates the renewal transactions that Apple would have created by `now`.
    func advance(to now: Date) {
        // Refund requests nobody answered in time: Apple decides alone, at the deadline, and refunds.
        for (id, deadline) in refundRequests.sorted(by: { $0.key < $1.key }) where deadline <= now {
            refundRequests[id] = nil
            _ = try? refund(transactionId: id, now: deadline)
        }
        for key in subscriptions.keys.sorted() {
            guard var sub = subscriptions[key] else { continue }
            while sub.autoRenew, sub.billingFailedAt == nil, sub.renewals < configuration.maximumRenewals,
                let latest = transactions[sub.latestTransactionId], latest.cancellationDate == nil,
                let expires = latest.expiresDate, expires <= now
            {
                // A price increase the customer never agreed to: Apple does not renew.
                if let increase = sub.priceIncrease, increase.consentRequired, !increase.agreed {
                    sub.autoRenew = false
                    sub.declinedPriceIncrease = true
                    break
                }
                if let increase = sub.priceIncrease {
                    sub.priceMicros = increase.priceMicros
                    sub.priceIncrease = nil
                }
                // A plan change waiting for this renewal takes effect now, in the same subscription.
                if let next = sub.autoRenewProductId, let product = product(next, of: sub.deviceId) {
                    sub.productId = next
                    sub.period = configuration.acceleratedSeconds(forPeriod: product.period)
                    sub.autoRenewProductId = nil
                }
                let id = newId()
                let renewal = Transaction(
                    transactionId: id, originalTransactionId: sub.originalTransactionId, productId: sub.productId,
                    kind: .autoRenewable, quantity: 1, purchaseDate: expires, originalPurchaseDate: latest.originalPurchaseDate,
                    expiresDate: expires.addingTimeInterval(sub.period), cancellationDate: nil, webOrderLineItemId: newId(),
                    deviceId: sub.deviceId, offer: sub.nextRenewalOffer, priceMicros: sub.priceMicros, billedUpfront: sub.billedUpfront)
                sub.nextRenewalOffer = nil
                transactions[id] = renewal
                devices[sub.deviceId]?.transactionIds.append(id)
                sub.latestTransactionId = id
                sub.renewals += 1
                record("DID_RENEW", nil, id, expires, subscription: sub)
            }
            if !sub.expiryAnnounced, sub.billingFailedAt == nil, let latest = transactions[sub.latestTransactionId],
                latest.cancellationDate == nil, let expires = latest.expiresDate, expires <= now
            {
                sub.expiryAnnounced = true
                let subtype = sub.declinedPriceIncrease ? "PRICE_INCREASE" : sub.autoRenew ? "PRODUCT_NOT_FOR_SALE" : "VOLUNTARY"
                record("EXPIRED", subtype, sub.latestTransactionId, expires, subscription: sub)
            }
            subscriptions[key] = sub
        }
    }

    func setAutoRenew(originalTransactionId: String, enabled: Bool, now: Date) throws {
        advance(to: now)
        guard let sub = subscriptions[originalTransactionId] else { throw unknownSubscription() }
        guard sub.autoRenew != enabled else { return }
        subscriptions[originalTransactionId]!.autoRenew = enabled
        record("DID_CHANGE_RENEWAL_STATUS", enabled ? "AUTO_RENEW_ENABLED" : "AUTO_RENEW_DISABLED", sub.latestTransactionId, now)
    }

    /// The customer picks another plan of the subscription's group for the next renewal (App
    /// Store settings' downgrade or crossgrade): DID_CHANGE_RENEWAL_PREF, `DOWNGRADE`; picking
    /// the current plan again withdraws the change (DID_CHANGE_RENEWAL_PREF with no subtype).
    func changeRenewalProduct(originalTransactionId: String, to productId: String, now: Date) throws {
        advance(to: now)
        guard var sub = subscriptions[originalTransactionId] else { throw unknownSubscription() }
        guard let current = product(sub.productId, of: sub.deviceId), let chosen = product(productId, of: sub.deviceId),
            chosen.kind == .autoRenewable, chosen.subscriptionGroupIdentifier == current.subscriptionGroupIdentifier
        else { throw Failure(status: 400, code: "not_in_group", message: "\(productId) is not a plan of the subscription's group") }
        let next = productId == sub.productId ? nil : productId
        guard next != sub.autoRenewProductId else { return }
        sub.autoRenewProductId = next
        subscriptions[originalTransactionId] = sub
        record("DID_CHANGE_RENEWAL_PREF", next == nil ? nil : "DOWNGRADE", sub.latestTransactionId, now, subscription: sub)
    }

    /// Apple announces a new price for the subscriber's next renewals: PRICE_INCREASE, `PENDING`
    /// while an increase that needs consent waits for it, `ACCEPTED` for one that needs none.
    func raisePrice(originalTransactionId: String, to priceMicros: Int64, consentRequired: Bool, now: Date) throws {
        advance(to: now)
        guard var sub = subscriptions[originalTransactionId] else { throw unknownSubscription() }
        guard priceMicros > 0, sub.billingFailedAt == nil, sub.autoRenew else {
            throw Failure(status: 400, code: "not_renewing", message: "a price increase applies to a renewing subscription, at a positive price")
        }
        sub.priceIncrease = PriceIncrease(priceMicros: priceMicros, consentRequired: consentRequired)
        subscriptions[originalTransactionId] = sub
        record("PRICE_INCREASE", consentRequired ? "PENDING" : "ACCEPTED", sub.latestTransactionId, now, subscription: sub)
    }

    /// The customer agrees to the new price in StoreKit's price consent sheet: PRICE_INCREASE
    /// `ACCEPTED`. Nothing waits for consent: 409.
    func agreeToPriceIncrease(originalTransactionId: String, now: Date) throws {
        advance(to: now)
        guard var sub = subscriptions[originalTransactionId] else { throw unknownSubscription() }
        guard var increase = sub.priceIncrease, increase.consentRequired, !increase.agreed else {
            throw Failure(status: 409, code: "no_consent_pending", message: "no price increase waits for this customer's consent")
        }
        increase.agreed = true
        sub.priceIncrease = increase
        subscriptions[originalTransactionId] = sub
        record("PRICE_INCREASE", "ACCEPTED", sub.latestTransactionId, now, subscription: sub)
    }

    /// What StoreKit's `Message.messages` hands a device at launch: a sheet per subscription
    /// whose price increase waits for consent, and per one in billing retry.
    func pendingMessages(_ deviceId: UUID) -> [(reason: String, originalTransactionId: String)] {
        subscriptions.values.filter { $0.deviceId == deviceId }.sorted { $0.originalTransactionId < $1.originalTransactionId }
            .compactMap { sub in
                if sub.priceIncreaseStatus == 0 { return ("priceIncreaseConsent", sub.originalTransactionId) }
                if sub.billingFailedAt != nil { return ("billingIssue", sub.originalTransactionId) }
                return nil
            }
    }

    /// A product of the app a device belongs to.
    func product(_ productId: String, of deviceId: UUID) -> SimulatedProduct? {
        devices[deviceId].flatMap { apps[$0.bundleId] }?.products.first { $0.productId == productId }
    }

    /// Apple cannot charge at the next renewal: renewals stop and billing retry starts.
    func failBilling(originalTransactionId: String, grace: Bool, now: Date) throws {
        advance(to: now)
        guard var sub = subscriptions[originalTransactionId] else { throw unknownSubscription() }
        let expires = transactions[sub.latestTransactionId]?.expiresDate ?? now
        sub.billingFailedAt = expires
        sub.graceUntil = grace ? expires.addingTimeInterval(configuration.gracePeriodSeconds) : nil
        subscriptions[originalTransactionId] = sub
        record("DID_FAIL_TO_RENEW", grace ? "GRACE_PERIOD" : nil, sub.latestTransactionId, now)
    }

    /// Apple finally charged: a new period starts now.
    func recoverBilling(originalTransactionId: String, now: Date) throws -> Transaction {
        advance(to: now)
        guard var sub = subscriptions[originalTransactionId], let latest = transactions[sub.latestTransactionId] else {
            throw unknownSubscription()
        }
        let id = newId()
        let start = max(now, latest.expiresDate ?? now)
        let renewal = Transaction(
            transactionId: id, originalTransactionId: originalTransactionId, productId: sub.productId, kind: .autoRenewable,
            quantity: 1, purchaseDate: start, originalPurchaseDate: latest.originalPurchaseDate,
            expiresDate: start.addingTimeInterval(sub.period), cancellationDate: nil, webOrderLineItemId: newId(),
            deviceId: sub.deviceId, priceMicros: sub.priceMicros, billedUpfront: sub.billedUpfront)
        transactions[id] = renewal
        devices[sub.deviceId]?.transactionIds.append(id)
        sub.latestTransactionId = id
        sub.billingFailedAt = nil
        sub.graceUntil = nil
        sub.expiryAnnounced = false
        subscriptions[originalTransactionId] = sub
        record("DID_RENEW", "BILLING_RECOVERY", id, now)
        return renewal
    }

    /// Apple reverses a refund it granted: the transaction counts again (REFUND_REVERSED).
    func reverseRefund(transactionId: String, now: Date) throws -> Transaction {
        guard var tx = transactions[transactionId], tx.cancellationDate != nil else {
            throw Failure(status: 404, code: "not_refunded", message: "transaction \(transactionId) is not refunded")
        }
        tx.cancellationDate = nil
        tx.revocationReason = nil
        tx.revocationType = nil
        tx.revocationPercentage = nil
        tx.modifiedDate = now
        transactions[transactionId] = tx
        record("REFUND_REVERSED", nil, transactionId, now)
        return tx
    }

    /// Apple's renewal-date extension: the current period lasts `seconds` longer.
    func extendRenewal(originalTransactionId: String, by seconds: Double, now: Date) throws -> Transaction {
        advance(to: now)
        guard let sub = subscriptions[originalTransactionId], var latest = transactions[sub.latestTransactionId] else {
            throw unknownSubscription()
        }
        latest.expiresDate = (latest.expiresDate ?? now).addingTimeInterval(seconds)
        latest.modifiedDate = now
        transactions[latest.transactionId] = latest
        subscriptions[originalTransactionId]?.expiryAnnounced = false
        record("RENEWAL_EXTENDED", nil, latest.transactionId, now)
        return latest
    }

    /// Apple's mass renewal-date extension: every subscription to `productId` in this app and
    /// environment whose period is running (not expired, not in billing retry) lasts `seconds`
    /// longer; the others are counted as failed, as Apple counts them.
    func extendRenewals(
        productId: String, bundleId: String, environment: AppStoreEnvironment, by seconds: Double, now: Date
    ) -> (succeeded: Int, failed: Int) {
        advance(to: now)
        var succeeded = 0
        var failed = 0
        for (originalId, sub) in subscriptions.sorted(by: { $0.key < $1.key }) where sub.productId == productId {
            guard let device = devices[sub.deviceId], device.bundleId == bundleId, device.environment == environment,
                let latest = transactions[sub.latestTransactionId]
            else { continue }
            guard let expires = latest.expiresDate, expires > now, sub.billingFailedAt == nil,
                (try? extendRenewal(originalTransactionId: originalId, by: seconds, now: now)) != nil
            else {
                failed += 1
                continue
            }
            succeeded += 1
        }
        return (succeeded, failed)
    }

    /// Apple refunds `percentage` of the transaction, in milliunits of a percent (100000 is all
    /// of it; less is a prorated refund). A later refund of the same transaction replaces the
    /// type and share but keeps the first revocation date.
    func refund(transactionId: String, percentage: Int = 100_000, now: Date) throws -> Transaction {
        advance(to: now)
        guard var tx = transactions[transactionId] else {
            throw Failure(status: 404, code: "unknown_transaction", message: "no transaction \(transactionId)")
        }
        tx.cancellationDate = tx.cancellationDate ?? now
        tx.revocationType = percentage < 100_000 ? "REFUND_PRORATED" : "REFUND_FULL"
        tx.revocationPercentage = percentage
        tx.modifiedDate = now
        transactions[transactionId] = tx
        if tx.kind == .autoRenewable { subscriptions[tx.originalTransactionId]?.autoRenew = false }
        record("REFUND", nil, transactionId, now)
        return tx
    }

    private func unknownSubscription() -> Failure {
        Failure(status: 404, code: "unknown_subscription", message: "no such original transaction")
    }

    func deviceTransactions(_ deviceId: UUID) -> [Transaction] {
        (devices[deviceId]?.transactionIds ?? []).compactMap { transactions[$0] }
    }

    func transaction(_ id: String) -> Transaction? { transactions[id] }

    /// What StoreKit's `Transaction.currentEntitlements` lists on the device: per product not
    /// consumed, its latest transaction, unless refunded or revoked or, for a subscription,
    /// expired.
    func currentEntitlements(_ deviceId: UUID, now: Date) -> [Transaction] {
        var latest: [String: Transaction] = [:]
        for tx in deviceTransactions(deviceId) where tx.kind != .consumable {
            if let seen = latest[tx.productId], (seen.purchaseDate, seen.transactionId) > (tx.purchaseDate, tx.transactionId) { continue }
            latest[tx.productId] = tx
        }
        return latest.values.filter { tx in tx.cancellationDate == nil && (tx.expiresDate.map { $0 > now } ?? true) }
            .sorted { $0.transactionId < $1.transactionId }
    }

    func subscription(_ originalTransactionId: String) -> Subscription? { subscriptions[originalTransactionId] }

    func setCommitmentProductIds(_ productIds: Set<String>) { configuration.commitmentProductIds = productIds }

    /// The commitment payment `transaction` is, when its product is billed monthly over 12-month
    /// commitments; nil otherwise. The purchase is payment 1 and each renewal the next, so
    /// renewals after the twelfth start a new commitment. Counted from the purchase's history
    /// rather than stored, so it holds for renewals made lazily and after billing recovery.
    /// StoreKit's `winBackOffer(_:)`: the App Store sells a win-back offer of the product only to
    /// a customer whose subscription in its group lapsed (let expire: not refunded, not in billing
    /// retry) and who has none active there now, failing with StoreKit's purchase errors.
    func winBack(_ offerId: String, product: SimulatedProduct, device: Device, alongside other: Offer?, now: Date) throws -> Offer {
        guard other == nil, product.kind == .autoRenewable else {
            throw Failure(status: 400, code: "offer_not_applicable", message: "one offer, on an auto-renewable subscription")
        }
        guard let sold = product.offers?.first(where: { $0.id == offerId && $0.winBack == true }) else {
            throw Failure(status: 400, code: "invalidOfferIdentifier", message: "no win-back offer '\(offerId)' of \(product.productId)")
        }
        let group = apps[device.bundleId]?.products.filter { $0.subscriptionGroupIdentifier == product.subscriptionGroupIdentifier }.map(\.productId)
        let inGroup = subscriptions.values.filter { $0.deviceId == device.id && (group ?? [product.productId]).contains($0.productId) }
        let latest = inGroup.compactMap { subscription in transactions[subscription.latestTransactionId].map { (subscription: subscription, tx: $0) }
        }
        let active = latest.contains { ($0.tx.expiresDate ?? .distantPast) > now && $0.tx.cancellationDate == nil }
        let lapsed = latest.contains {
            $0.subscription.billingFailedAt == nil && $0.tx.cancellationDate == nil && ($0.tx.expiresDate.map { $0 <= now } ?? false)
        }
        guard lapsed, !active else {
            throw Failure(status: 400, code: "ineligibleForOffer", message: "win-back offers are for customers whose subscription lapsed")
        }
        return Offer(type: 4, identifier: sold.id, discountType: sold.discountType, period: sold.period, priceMicros: sold.priceMicros)
    }

    func commitmentPosition(of transaction: Transaction) -> CommitmentPosition? {
        guard transaction.kind == .autoRenewable, !transaction.billedUpfront, configuration.commitmentProductIds.contains(transaction.productId)
        else { return nil }
        let payments = deviceTransactions(transaction.deviceId)
            .filter { $0.originalTransactionId == transaction.originalTransactionId }
            .sorted { ($0.purchaseDate, $0.transactionId) < ($1.purchaseDate, $1.transactionId) }
        guard let index = payments.firstIndex(where: { $0.transactionId == transaction.transactionId }) else {
            return CommitmentPosition(billingPeriod: 1, start: transaction.purchaseDate)
        }
        let paid = index % Self.paymentsPerCommitment
        return CommitmentPosition(billingPeriod: paid + 1, start: payments[index - paid].purchaseDate)
    }

    /// Every transaction ever sold, for reconciling a server's ledger against what was bought.
    func allTransactions() -> [Transaction] {
        transactions.values.sorted { ($0.purchaseDate, $0.transactionId) < ($1.purchaseDate, $1.transactionId) }
    }

    func price(bundleId: String, productId: String) -> (Int64?, String?) {
        let product = apps[bundleId]?.products.first { $0.productId == productId }
        return (product?.priceMicros, product?.currency)
    }
}
