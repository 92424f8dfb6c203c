// Only where the SDK's manifest declares StoreKit's interface for Linux (Sources/StoreKitForLinux).
#if canImport(StoreKit) && os(Linux)
import Foundation
import StoreKit
import StorekeeperKit
import UIKit

/// The App Store simulator behind the Linux declaration of StoreKit, so `StoreKitStoreFront` (the
/// file Xcode compiles) runs against real signed transactions: products from the simulator's
/// catalog, purchases charged there with the options StoreKit would send (the app account token,
/// the server's introductory-eligibility JWS, a promotional offer's JWS, which the simulator
/// checks as the App Store does), the unfinished queue, updates and current entitlements of the
/// device. Bind it for the calls that should reach it: `StandIn.$store.withValue(…) { … }`.
public struct SimulatorStoreKit: StandInStore {
    /// The device's store: the same queue, Ask to Buy and refunds a test drives directly.
    public let device: SimulatorStoreFront

    public init(device: SimulatorStoreFront) { self.device = device }

    public func products(for ids: [String]) async throws -> [Product] {
        try await device.catalog(for: ids).map { listed in
            let product = listed.product
            return Product(
                standInID: product.id, displayName: product.displayName, displayPrice: product.displayPrice, price: product.price,
                currencyCode: product.currencyCode ?? "USD",
                subscription: listed.autoRenewable
                    ? Product.SubscriptionInfo(standInWinBackOffers: listed.winBackOfferIds.map { .init(standInID: $0, type: .winBack) }) : nil)
        }
    }

    public func purchase(
        _ product: Product, options: Set<Product.PurchaseOption>, confirmedIn scene: UIScene?
    ) async throws
        -> Product.PurchaseResult
    {
        var token: UUID?
        var offer: StoreOffer?
        var billingPlan: BillingPlan?
        for option in options {
            switch option.standInValue {
            case .appAccountToken(let value): token = value
            case .introductoryOfferEligibility(let jws): offer = .introductoryEligibility(jws: jws)
            case .promotionalOffer(let offerID, let jws):
                // The simulator reads the V2 JWS alone; the V1 fields are not sent with it.
                offer = .promotional(
                    SignedPromotionalOffer(offerId: offerID, jws: jws, keyIdentifier: "", nonce: UUID(), timestamp: 0, signature: ""))
            case .winBackOffer(let offerID):
                guard let offerID else { throw StoreKitError.unsupported }
                offer = .winBack(offerId: offerID)
            case .billingPlanType(let raw):
                guard let plan = BillingPlan(rawValue: raw) else { throw StoreKitError.unsupported }
                billingPlan = plan
            case .promotionalOfferV1:
                // The simulator checks V2 offers only (docs/OFFERS.md); StoreKit 26 deprecates V1.
                throw StoreKitError.unsupported
            }
        }
        guard let token else {
            // Every purchase the SDK makes carries its token; one without would be granted to nobody.
            throw StoreKitError.unsupported
        }
        switch try await device.purchase(productId: product.id, appAccountToken: token, offer: offer, billingPlan: billingPlan) {
        case .purchased(let transaction): return .success(.verified(try Self.transaction(transaction)))
        case .pending: return .pending
        case .cancelled: return .userCancelled
        }
    }

    public func unfinished() async -> [VerificationResult<Transaction>] {
        ((try? await device.unfinished()) ?? []).compactMap { try? .verified(Self.transaction($0)) }
    }

    public func finish(_ transaction: Transaction) async {
        try? await device.finish(StoreTransaction(id: String(transaction.id), productId: transaction.productID, signedTransaction: ""))
    }

    public func updates() -> AsyncStream<VerificationResult<Transaction>> {
        let updates = device.updates()
        return AsyncStream { continuation in
            let relay = Task {
                for await transaction in updates {
                    if let transaction = try? Self.transaction(transaction) { continuation.yield(.verified(transaction)) }
                }
                continuation.finish()
            }
            continuation.onTermination = { _ in relay.cancel() }
        }
    }

    public func currentEntitlements() async -> [VerificationResult<Transaction>] {
        ((try? await device.restorable()) ?? []).compactMap { try? .verified(Self.transaction($0)) }
    }

    /// The simulator's device is always in step with its App Store.
    public func sync() async throws {}

    public func showManageSubscriptions() async throws { try await device.showManageSubscriptions() }

    public func beginRefundRequest(for transactionID: UInt64) async throws -> Transaction.RefundRequestStatus {
        switch try await device.beginRefundRequest(transactionId: String(transactionID)) {
        case .requested: .success
        case .cancelled: .userCancelled
        }
    }

    public func presentOfferCodeRedeemSheet() async throws { try await device.presentOfferCodeRedeemSheet() }

    public func messages() async throws -> [Message] {
        try await device.pendingMessages().map { pending in
            let reason: Message.Reason =
                switch pending.reason {
                case .priceIncreaseConsent: .priceIncreaseConsent
                case .billingIssue: .billingIssue
                case .winBackOffer: .winBackOffer
                case .generic: .generic
                }
            return Message(standInReason: reason, subject: pending.originalTransactionId)
        }
    }

    public func display(_ message: Message) throws {
        let reason: StoreMessage.Reason =
            switch message.reason {
            case .priceIncreaseConsent: .priceIncreaseConsent
            case .billingIssue: .billingIssue
            case .winBackOffer: .winBackOffer
            default: .generic
            }
        device.displayed(reason)
    }

    public func appTransaction() async throws -> VerificationResult<AppTransaction> {
        guard let jws = try await device.appTransaction() else { throw StoreKitError.unknown }
        return .verified(AppTransaction(standInOriginalAppVersion: Self.claim("originalApplicationVersion", of: jws) ?? "", jws: jws))
    }

    /// A string claim of a JWS's payload, read without checking it (StoreKit's decoded value).
    static func claim(_ name: String, of jws: String) -> String? {
        let parts = jws.split(separator: ".")
        guard parts.count == 3 else { return nil }
        var base64 = parts[1].replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        guard let data = Data(base64Encoded: base64), let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else { return nil }
        return object[name] as? String
    }

    /// `StoreKitStoreFront` buying from this device: what a test hands to `Storekeeper` in place
    /// of the device itself, to run the same steps through the adapter.
    public var storeFront: some StoreFront { StoreKitOnSimulator(store: self) }

    /// StoreKit's ids are numbers; the simulator's are numeric strings.
    static func transaction(_ transaction: StoreTransaction) throws -> Transaction {
        guard let id = UInt64(transaction.id) else { throw StoreKitError.unknown }
        return Transaction(standInID: id, productID: transaction.productId, jws: transaction.signedTransaction)
    }
}

/// `StoreKitStoreFront` with the stand-in bound to one simulated device for each of its calls
/// (and for the listener its `updates()` starts).
struct StoreKitOnSimulator: StoreFront {
    let store: SimulatorStoreKit
    /// With a window scene, as an app passes one: the customer center's sheets need it.
    let adapter = StoreKitStoreFront(confirmIn: { UIWindowScene() })

    func purchase(productId: String, appAccountToken: UUID, offer: StoreOffer?, billingPlan: BillingPlan?) async throws -> StorePurchaseResult {
        try await StandIn.$store.withValue(store) {
            try await adapter.purchase(productId: productId, appAccountToken: appAccountToken, offer: offer, billingPlan: billingPlan)
        }
    }

    func unfinished() async throws -> [StoreTransaction] {
        try await StandIn.$store.withValue(store) { try await adapter.unfinished() }
    }

    func finish(_ transaction: StoreTransaction) async throws {
        try await StandIn.$store.withValue(store) { try await adapter.finish(transaction) }
    }

    func updates() -> AsyncStream<StoreTransaction> { StandIn.$store.withValue(store) { adapter.updates() } }

    func restorable() async throws -> [StoreTransaction] {
        try await StandIn.$store.withValue(store) { try await adapter.restorable() }
    }

    func products(for ids: [String]) async throws -> [StoreProduct] {
        try await StandIn.$store.withValue(store) { try await adapter.products(for: ids) }
    }

    func appTransaction() async throws -> String? {
        try await StandIn.$store.withValue(store) { try await adapter.appTransaction() }
    }

    func showManageSubscriptions() async throws {
        try await StandIn.$store.withValue(store) { try await adapter.showManageSubscriptions() }
    }

    func beginRefundRequest(transactionId: String) async throws -> RefundRequestOutcome {
        try await StandIn.$store.withValue(store) { try await adapter.beginRefundRequest(transactionId: transactionId) }
    }

    func presentOfferCodeRedeemSheet() async throws {
        try await StandIn.$store.withValue(store) { try await adapter.presentOfferCodeRedeemSheet() }
    }

    /// The adapter's messages, each shown with the stand-in bound again: the app displays a
    /// message later, outside the call that listed it.
    func messages() -> AsyncStream<StoreMessage> {
        let listed = StandIn.$store.withValue(store) { adapter.messages() }
        let store = store
        return AsyncStream { continuation in
            let relay = Task {
                for await message in listed {
                    continuation.yield(
                        StoreMessage(reason: message.reason) { try await StandIn.$store.withValue(store) { try await message.display() } })
                }
                continuation.finish()
            }
            continuation.onTermination = { _ in relay.cancel() }
        }
    }
}
#endif
