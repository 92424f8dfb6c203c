// StoreKit 2 as used here exists on iOS 16+ and macOS 13+ (Package.swift's minimums); tvOS,
// watchOS and visionOS import StoreKit too, but this adapter declares no minimum for them and is
// not built there. On Linux, the SDK's manifest declares StoreKit and UIKit as Apple documents
// them (Sources/StoreKitForLinux), so CI type-checks and runs this same file.
#if canImport(StoreKit) && !(os(tvOS) || os(watchOS) || os(visionOS))
import Foundation
import StoreKit
#if canImport(UIKit)
import UIKit
#endif

/// The App Store through StoreKit 2, for apps on iOS 16+ and macOS 13+. Kept thin: every rule
/// (journal, post, finish after the grant) lives in `Storekeeper`, so this file only
/// translates. On Linux it is compiled against the SDK's declaration of StoreKit as Apple
/// documents it, and run over the App Store simulator (docs/SDK.md says what was verified where).
///
/// StoreKit's own on-device check (`VerificationResult.verified`) is not trusted here: the
/// signed form (`jwsRepresentation`) goes to the server, which verifies the signature, the
/// chain and the app, so a jailbroken device's forged "verified" transaction gains nothing.
public struct StoreKitStoreFront: StoreFront {
    #if canImport(UIKit)
    /// The scene that shows the purchase confirmation. Apple asks UIKit apps to name it
    /// (`purchase(confirmIn:options:)`, iOS 17+); nil, or on iOS 16, `purchase(options:)`.
    let confirmationScene: (@MainActor @Sendable () -> UIScene?)?

    public init(confirmIn scene: (@MainActor @Sendable () -> UIScene?)? = nil) {
        confirmationScene = scene
    }
    #else
    public init() {}
    #endif

    public func purchase(productId: String, appAccountToken: UUID, offer: StoreOffer?, billingPlan: BillingPlan?) async throws -> StorePurchaseResult
    {
        guard let product = try await Product.products(for: [productId]).first else {
            throw StorekeeperKitError(.refused, "unknown_product: the App Store does not sell \(productId) to this account")
        }
        var options: Set<Product.PurchaseOption> = [.appAccountToken(appAccountToken)]
        switch offer {
        case .introductoryEligibility(let jws)?:
            #if compiler(>=6.2)
            // The server's decision (Xcode 26's SDK; back-deployed by StoreKit). An older SDK
            // leaves the decision to StoreKit's own records.
            options.insert(.introductoryOfferEligibility(compactJWS: jws))
            #endif
        case .promotional(let offer)?:
            #if compiler(>=6.2)
            // The V2 JWS (Xcode 26's SDK; back-deployed by StoreKit to iOS 15 and macOS 12). Apple
            // documents this one as returning an array of options, the eligibility one as one.
            options.formUnion(Product.PurchaseOption.promotionalOffer(offer.offerId, compactJWS: offer.jws))
            #else
            guard let signature = Data(base64Encoded: offer.signature) else {
                throw StorekeeperKitError(.forgedAnswer, "the offer's signature is not base64")
            }
            options.insert(
                .promotionalOffer(
                    offerID: offer.offerId, keyID: offer.keyIdentifier, nonce: offer.nonce, signature: signature, timestamp: Int(offer.timestamp)))
            #endif
        case .winBack(let offerId)?:
            options.insert(try Self.winBackOption(offerId, of: product))
        case nil:
            break
        }
        if let billingPlan { options.insert(try Self.billingPlanOption(billingPlan)) }
        #if canImport(UIKit)
        let result = try await Self.purchase(product, options: options, confirmIn: confirmationScene)
        #else
        let result = try await product.purchase(options: options)
        #endif
        // Matched case by case rather than switched: StoreKit's enum may gain cases (an
        // unknown one is treated as pending: never granted, never finished), and a switch
        // would need an `@unknown default` that the Linux declaration, which is not built
        // with library evolution, warns can never run.
        if case .success(let signed) = result { return .purchased(Self.transaction(signed)) }
        if case .userCancelled = result { return .cancelled }
        return .pending
    }

    /// StoreKit takes a win-back offer as the product's offer value (iOS 18, macOS 15), which
    /// lists every win-back offer configured for it; whether this customer may take it is the
    /// store's decision at purchase.
    static func winBackOption(_ offerId: String, of product: Product) throws -> Product.PurchaseOption {
        guard #available(iOS 18.0, macOS 15.0, *) else {
            throw StorekeeperKitError(.refused, "win-back offers need iOS 18 or macOS 15", serverCode: "win_back_unsupported")
        }
        guard let offer = product.subscription?.winBackOffers.first(where: { $0.id == offerId }) else {
            throw StorekeeperKitError(
                .refused, "\(product.id) has no win-back offer \(offerId) at the store", serverCode: "invalidOfferIdentifier")
        }
        return .winBackOffer(offer)
    }

    /// StoreKit takes the plan as a purchase option from iOS 26.4 and macOS 26.4 (Xcode 26.4's
    /// SDK); where it cannot, the purchase is refused rather than made on a plan the user did not pick.
    static func billingPlanOption(_ plan: BillingPlan) throws -> Product.PurchaseOption {
        let unsupported = StorekeeperKitError(
            .refused, "choosing a billing plan needs iOS 26.4 or macOS 26.4", serverCode: "billing_plan_unsupported")
        #if compiler(>=6.3)
        guard #available(iOS 26.4, macOS 26.4, *) else { throw unsupported }
        return .billingPlanType(plan == .monthly ? .monthly : .upFront)
        #else
        throw unsupported
        #endif
    }

    #if canImport(UIKit)
    /// On the main actor, where the scene lives and both purchase calls run.
    @MainActor
    static func purchase(
        _ product: Product, options: Set<Product.PurchaseOption>, confirmIn scene: (@MainActor @Sendable () -> UIScene?)?
    ) async throws -> Product.PurchaseResult {
        if #available(iOS 17.0, *), let scene = scene?() {
            return try await product.purchase(confirmIn: scene, options: options)
        }
        return try await product.purchase(options: options)
    }
    #endif

    public func unfinished() async throws -> [StoreTransaction] {
        var found: [StoreTransaction] = []
        for await result in Transaction.unfinished { found.append(Self.transaction(result)) }
        return found
    }

    /// StoreKit finishes a `Transaction` value, not an id: the unfinished one with this id is
    /// looked up (none left means it was finished already, which is not an error).
    public func finish(_ transaction: StoreTransaction) async throws {
        for await result in Transaction.unfinished {
            let payload = result.unsafePayloadValue
            if String(payload.id) == transaction.id { await payload.finish() }
        }
    }

    public func updates() -> AsyncStream<StoreTransaction> {
        AsyncStream { continuation in
            // StoreKit's sequence is consumed on a task of its own that ends with the stream.
            let listening = Task {
                for await result in Transaction.updates { continuation.yield(Self.transaction(result)) }
                continuation.finish()
            }
            continuation.onTermination = { _ in listening.cancel() }
        }
    }

    public func restorable() async throws -> [StoreTransaction] {
        do {
            try await AppStore.sync()
        } catch StoreKitError.userCancelled {
            // The user declined to sign in: what this device already knows is still restored.
        }
        var found: [StoreTransaction] = []
        for await result in Transaction.currentEntitlements { found.append(Self.transaction(result)) }
        return found
    }

    public func products(for ids: [String]) async throws -> [StoreProduct] {
        try await Product.products(for: ids).map { product in
            StoreProduct(
                id: product.id, displayName: product.displayName, displayPrice: product.displayPrice, price: product.price,
                currencyCode: product.priceFormatStyle.currencyCode)
        }
    }

    public func showManageSubscriptions() async throws {
        #if canImport(UIKit)
        try await Self.showManageSubscriptions(in: confirmationScene)
        #else
        throw Self.needsAWindowScene
        #endif
    }

    public func beginRefundRequest(transactionId: String) async throws -> RefundRequestOutcome {
        guard let id = UInt64(transactionId) else {
            throw StorekeeperKitError(.refused, "\(transactionId) is not an App Store transaction id", serverCode: "invalid_transaction_id")
        }
        #if canImport(UIKit)
        return try await Self.beginRefundRequest(id, in: confirmationScene)
        #else
        throw Self.needsAWindowScene
        #endif
    }

    public func presentOfferCodeRedeemSheet() async throws {
        #if canImport(UIKit)
        try await Self.presentOfferCodeRedeemSheet(in: confirmationScene)
        #else
        throw Self.needsAWindowScene
        #endif
    }

    /// StoreKit's `Message.messages`, read on a task of its own that ends with the stream: from
    /// then on StoreKit leaves the messages to the app. Each is shown in the window scene the
    /// front was given. macOS has no App Store messages: the stream ends at once.
    public func messages() -> AsyncStream<StoreMessage> {
        #if canImport(UIKit)
        let scene = confirmationScene
        return AsyncStream { continuation in
            let listening = Task {
                for await message in Message.messages {
                    continuation.yield(StoreMessage(reason: Self.reason(message.reason)) { try await Self.display(message, in: scene) })
                }
                continuation.finish()
            }
            continuation.onTermination = { _ in listening.cancel() }
        }
        #else
        return AsyncStream { $0.finish() }
        #endif
    }

    /// The customer center's sheets are shown in a window scene (UIKit); elsewhere, or without
    /// one, the app shows Apple's pages itself.
    static let needsAWindowScene = StorekeeperKitError(
        .refused, "StoreKit shows this sheet in a UIWindowScene: pass one to StoreKitStoreFront(confirmIn:)", serverCode: "no_window_scene")

    #if canImport(UIKit)
    @MainActor
    static func showManageSubscriptions(in scene: (@MainActor @Sendable () -> UIScene?)?) async throws {
        guard let window = scene?() as? UIWindowScene else { throw needsAWindowScene }
        try await AppStore.showManageSubscriptions(in: window)
    }

    @MainActor
    static func presentOfferCodeRedeemSheet(in scene: (@MainActor @Sendable () -> UIScene?)?) async throws {
        guard let window = scene?() as? UIWindowScene else { throw needsAWindowScene }
        try await AppStore.presentOfferCodeRedeemSheet(in: window)
    }

    /// StoreKit's reasons by name; one this SDK does not know yet is `generic`.
    static func reason(_ reason: Message.Reason) -> StoreMessage.Reason {
        if reason == .priceIncreaseConsent { return .priceIncreaseConsent }
        if #available(iOS 16.4, *), reason == .billingIssue { return .billingIssue }
        if #available(iOS 18.0, *), reason == .winBackOffer { return .winBackOffer }
        return .generic
    }

    @MainActor
    static func display(_ message: Message, in scene: (@MainActor @Sendable () -> UIScene?)?) throws {
        guard let window = scene?() as? UIWindowScene else { throw needsAWindowScene }
        try message.display(in: window)
    }

    @MainActor
    static func beginRefundRequest(_ id: UInt64, in scene: (@MainActor @Sendable () -> UIScene?)?) async throws -> RefundRequestOutcome {
        guard let window = scene?() as? UIWindowScene else { throw needsAWindowScene }
        // Matched case by case, as the purchase result is: StoreKit's enum may gain cases.
        let status = try await Transaction.beginRefundRequest(for: id, in: window)
        if case .success = status { return .requested }
        return .cancelled
    }
    #endif

    /// Apple's signed form, whatever StoreKit's local check said: the server verifies it.
    public func appTransaction() async throws -> String? {
        try await AppTransaction.shared.jwsRepresentation
    }

    /// The id, the product and Apple's signed form, whatever StoreKit's local check said.
    static func transaction(_ result: VerificationResult<Transaction>) -> StoreTransaction {
        let payload = result.unsafePayloadValue
        return StoreTransaction(id: String(payload.id), productId: payload.productID, signedTransaction: result.jwsRepresentation)
    }
}
#endif
