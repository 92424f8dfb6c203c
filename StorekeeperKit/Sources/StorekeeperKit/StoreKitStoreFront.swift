#if canImport(StoreKit)
import Foundation
import StoreKit

/// The App Store through StoreKit 2, for apps on iOS 16+ and macOS 13+. Kept thin: every rule
/// (journal, post, finish after the grant) lives in `Storekeeper`, so this file only
/// translates. Only compiled where StoreKit exists; this repository's CI runs on Linux, where
/// `SimulatorStoreFront` takes its place (docs/SDK.md says what was verified where).
///
/// StoreKit's own on-device check (`VerificationResult.verified`) is not trusted here: the
/// signed form (`jwsRepresentation`) goes to the server, which verifies the signature, the
/// chain and the app, so a jailbroken device's forged "verified" transaction gains nothing.
public struct StoreKitStoreFront: StoreFront {
    public init() {}

    public func purchase(productId: String, appAccountToken: UUID) async throws -> StorePurchaseResult {
        guard let product = try await Product.products(for: [productId]).first else {
            throw StorekeeperKitError(.refused, "unknown_product: the App Store does not sell \(productId) to this account")
        }
        switch try await product.purchase(options: [.appAccountToken(appAccountToken)]) {
        case .success(let result): return .purchased(Self.transaction(result))
        case .pending: return .pending
        case .userCancelled: return .cancelled
        @unknown default: return .pending
        }
    }

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
        try await AppStore.sync()
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

    /// The id, the product and Apple's signed form, whatever StoreKit's local check said.
    static func transaction(_ result: VerificationResult<Transaction>) -> StoreTransaction {
        let payload = result.unsafePayloadValue
        return StoreTransaction(id: String(payload.id), productId: payload.productID, signedTransaction: result.jwsRepresentation)
    }
}
#endif
