import AppStoreModels
import Crypto
public import Foundation
public import JobQueue
import SwiftASN1
import Synchronization

/// Apple's behaviour, without HTTP: issues signed receipts and answers verifyReceipt.
/// Written independently of the server's verification code, so one bug cannot pass its own test.
public final class SimulatedAppStore: Sendable {
    let state: SimulatorState
    public let pki: SimulatorPKI
    /// Every instant the store acts at; tests move it forward.
    public let clock = SimulatorClock()
    let stats = SimulatorStats()
    /// Told by the notification sender after each pass whether it had nothing to do: nothing to
    /// notify, no delivery due or under way, no retention test running (tests wait on it).
    public let idle = IdleSignal()
    let configuration: SimulatorConfiguration
    /// Notifications created, with their delivery attempts (the notification history).
    let outbox = NotificationOutbox()
    let serverAPI = ServerAPIState()
    /// Retention Messaging's configuration (images, messages, defaults, realtime URLs, tests).
    let retention = RetentionConfigurationState()
    /// Serials of the simulator's certificates revoked through `/sim/pki/revoke`, with when.
    let revokedSerials = Mutex<[[UInt8]: Date]>([:])
    /// Receipts already read, by their bytes' SHA-256: a receipt never changes once signed, and
    /// reading one costs a CMS chain validation. Bounded; starts over when full.
    private let readReceipts = Mutex<[Data: DecodedSimulatorReceipt]>([:])

    public init(configuration: SimulatorConfiguration) throws {
        self.configuration = configuration
        state = SimulatorState(configuration: configuration)
        pki = try SimulatorPKI()
    }

    public func now() -> Date { clock.now() }

    // MARK: Receipts

    /// A fresh app receipt for everything the device bought so far, as the device would hold it.
    func receipt(deviceId: UUID, now: Date) async throws -> [UInt8] {
        await state.advance(to: now)
        guard let device = await state.device(deviceId) else {
            throw SimulatorState.Failure(status: 404, code: "unknown_device", message: "no device")
        }
        let transactions = await state.deviceTransactions(deviceId)
        var attributes: [ReceiptAttribute] = [
            try .utf8(ReceiptField.environment, device.environment.rawValue),
            try .utf8(ReceiptField.bundleId, device.bundleId),
            try .utf8(ReceiptField.applicationVersion, "1.0"),
            ReceiptAttribute(type: ReceiptField.opaqueValue, value: withUnsafeBytes(of: deviceId.uuid) { Array($0) }),
            ReceiptAttribute(type: ReceiptField.sha1Hash, value: (0..<20).map { _ in UInt8.random(in: 0...255) }),
            try .date(ReceiptField.creationDate, now),
            try .utf8(ReceiptField.originalApplicationVersion, "1.0"),
        ]
        for tx in transactions {
            var fields: [ReceiptAttribute] = [
                try .integer(ReceiptField.quantity, tx.quantity),
                try .utf8(ReceiptField.productId, tx.productId),
                try .utf8(ReceiptField.transactionId, tx.transactionId),
                try .date(ReceiptField.purchaseDate, tx.purchaseDate),
                try .utf8(ReceiptField.originalTransactionId, tx.originalTransactionId),
                try .date(ReceiptField.originalPurchaseDate, tx.originalPurchaseDate),
                try .integer(ReceiptField.trialPeriod, 0),
                try .integer(ReceiptField.introOfferPeriod, 0),
            ]
            if let expires = tx.expiresDate { fields.append(try .date(ReceiptField.subscriptionExpirationDate, expires)) }
            if let cancelled = tx.cancellationDate { fields.append(try .date(ReceiptField.cancellationDate, cancelled)) }
            if let line = tx.webOrderLineItemId, let value = Int(line) {
                fields.append(try .integer(ReceiptField.webOrderLineItemId, value))
            }
            attributes.append(ReceiptAttribute(type: ReceiptField.inAppPurchase, value: try ReceiptAttribute.serializeSet(fields)))
        }
        return try ReceiptEncoding.sign(payload: try ReceiptAttribute.serializeSet(attributes), pki: pki)
    }

    // MARK: verifyReceipt

    /// Apple's answer to a verifyReceipt body posted at `endpoint`, faults aside.
    func verifyReceipt(body: [UInt8], endpoint: AppStoreEnvironment, now: Date) async -> VerifyReceiptResponse {
        guard let request = try? JSONDecoder().decode(VerifyReceiptRequest.self, from: Data(body)) else {
            return VerifyReceiptResponse(status: .unreadableJSON)
        }
        let cleaned = request.receiptData.filter { !$0.isWhitespace }
        guard !cleaned.isEmpty, let bytes = Data(base64Encoded: cleaned) else {
            return VerifyReceiptResponse(status: .malformedReceipt)
        }
        let digest = Data(SHA256.hash(data: bytes))
        let decoded: DecodedSimulatorReceipt
        if let known = readReceipts.withLock({ $0[digest] }) {
            decoded = known
        } else {
            do {
                decoded = try await ReceiptEncoding.read(Array(bytes), pki: pki, now: now)
            } catch ReceiptEncoding.ReadError.notSignedBySimulator {
                return VerifyReceiptResponse(status: .notAuthenticated)
            } catch {
                return VerifyReceiptResponse(status: .malformedReceipt)
            }
            let remembered = decoded
            readReceipts.withLock { cache in
                if cache.count >= 100_000 { cache.removeAll(keepingCapacity: true) }
                cache[digest] = remembered
            }
        }
        let receiptEnvironment = AppStoreEnvironment(rawValue: decoded.environment)
        if receiptEnvironment == .sandbox, endpoint == .production {
            return VerifyReceiptResponse(status: .sandboxReceiptInProduction, environment: .production)
        }
        if receiptEnvironment == .production, endpoint == .sandbox {
            return VerifyReceiptResponse(status: .productionReceiptInSandbox, environment: .sandbox)
        }
        guard let app = await state.app(decoded.bundleId), let device = await state.device(decoded.deviceId),
            device.bundleId == decoded.bundleId
        else {
            return VerifyReceiptResponse(status: .notAuthenticated, environment: endpoint)
        }
        await state.advance(to: now)
        let all = await state.deviceTransactions(device.id)
        let subscriptionTransactions = all.filter { $0.kind == .autoRenewable }
        if !subscriptionTransactions.isEmpty, let secret = app.sharedSecret, request.password != secret {
            return VerifyReceiptResponse(status: .sharedSecretMismatch, environment: endpoint)
        }
        var inApp: [InAppTransaction] = []
        for id in decoded.transactionIds {
            if let tx = await state.transaction(id) { inApp.append(Self.wire(tx)) }
        }
        var response = VerifyReceiptResponse(
            status: .valid, environment: endpoint,
            receipt: ReceiptInfo(
                receiptType: endpoint == .sandbox ? "ProductionSandbox" : "Production", bundleId: decoded.bundleId,
                applicationVersion: "1.0", originalApplicationVersion: "1.0",
                receiptCreationDateMs: .milliseconds(now), originalPurchaseDateMs: .milliseconds(now), inApp: inApp))
        if !subscriptionTransactions.isEmpty {
            var latest = subscriptionTransactions
            if request.excludeOldTransactions == true {
                let newest = Dictionary(grouping: latest, by: \.originalTransactionId).compactMap { _, group in
                    group.max { ($0.expiresDate ?? .distantPast) < ($1.expiresDate ?? .distantPast) }
                }
                latest = newest
            }
            // Apple documents no order: shuffle so servers never rely on one.
            response.latestReceiptInfo = latest.shuffled().map(Self.wire)
            var pending: [PendingRenewalInfo] = []
            for originalId in Set(subscriptionTransactions.map(\.originalTransactionId)).sorted() {
                guard let sub = await state.subscription(originalId) else { continue }
                let inRetry = sub.billingFailedAt != nil
                // As in signed renewal info: a reason only once the subscription has lapsed.
                let intent = Self.expirationIntent(sub, latest: await state.transaction(sub.latestTransactionId), now: now)
                pending.append(
                    PendingRenewalInfo(
                        autoRenewProductId: sub.autoRenewProductId ?? sub.productId, productId: sub.productId, originalTransactionId: originalId,
                        autoRenewStatus: sub.autoRenew, expirationIntent: intent.map(String.init),
                        isInBillingRetryPeriod: inRetry, gracePeriodExpiresDate: sub.graceUntil, priceConsentStatus: sub.priceIncreaseStatus))
            }
            response.pendingRenewalInfo = pending
            if let fresh = try? await receipt(deviceId: device.id, now: now) {
                response.latestReceipt = Data(fresh).base64EncodedString()
            }
        }
        return response
    }

    /// A transaction as verifyReceipt lists it; an offer shows as the receipt's fields for it
    /// (`is_trial_period`, `is_in_intro_offer_period`, `promotional_offer_id`, `offer_code_ref_name`).
    static func wire(_ tx: SimulatorState.Transaction) -> InAppTransaction {
        let introductory = tx.offer?.type == 1
        var wire = InAppTransaction(
            quantity: tx.quantity, productId: tx.productId, transactionId: tx.transactionId,
            originalTransactionId: tx.originalTransactionId, purchaseDate: tx.purchaseDate,
            originalPurchaseDate: tx.originalPurchaseDate, expiresDate: tx.expiresDate,
            cancellationDate: tx.cancellationDate, cancellationReason: tx.cancellationDate == nil ? nil : "0",
            isTrialPeriod: tx.offer?.discountType == "FREE_TRIAL", isInIntroOfferPeriod: introductory && tx.offer?.discountType != "FREE_TRIAL",
            webOrderLineItemId: tx.webOrderLineItemId)
        if let offer = tx.offer, let identifier = offer.identifier {
            if offer.type == 2 { wire.promotionalOfferId = LenientString(identifier) }
            if offer.type == 3 { wire.offerCodeRefName = LenientString(identifier) }
        }
        return wire
    }
}

/// Counts of calls the simulator answered, for tests and operators.
final class SimulatorStats: Sendable {
    private let counters = LockedCounters()

    func record(_ key: String) { counters.increment(key) }
    func snapshot() -> [String: Int] { counters.snapshot() }
}

final class LockedCounters: Sendable {
    private let values = Mutex<[String: Int]>([:])
    func increment(_ key: String) { values.withLock { $0[key, default: 0] += 1 } }
    func snapshot() -> [String: Int] { values.withLock { $0 } }
}
