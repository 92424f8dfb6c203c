import UIKit

/// Not StoreKit's. This module declares, for Linux only, the StoreKit symbols StorekeeperKit's
/// adapter (`StoreKitStoreFront.swift`) uses, each with the signature Apple documents, so that CI
/// type-checks the same file Xcode compiles. Behind the declarations, the calls go to the store
/// bound here (in tests, the App Store simulator: `StorekeeperKitSimulator.SimulatorStoreKit`);
/// with none, purchases throw `StoreKitError.notAvailableInStorefront` and the sequences are
/// empty. It is a stand-in for type-checking and for running the adapter's logic, never
/// shipped to apps.
public enum StandIn {
    /// The store the stand-in's calls go to: task-local, so tests running side by side each buy
    /// from their own device (`StandIn.$store.withValue(store) { … }`); a task started inside,
    /// as the adapter's updates listener is, inherits it.
    @TaskLocal public static var store: (any StandInStore)?
}

/// Not StoreKit's: what the stand-in asks of the store behind it.
public protocol StandInStore: Sendable {
    func products(for ids: [String]) async throws -> [Product]
    /// `scene` is the window the confirmation would show near (nil: `purchase(options:)`).
    func purchase(
        _ product: Product, options: Set<Product.PurchaseOption>, confirmedIn scene: UIScene?
    ) async throws
        -> Product.PurchaseResult
    func unfinished() async -> [VerificationResult<Transaction>]
    func finish(_ transaction: Transaction) async
    /// A new stream per call, as each read of `Transaction.updates` is one.
    func updates() -> AsyncStream<VerificationResult<Transaction>>
    func currentEntitlements() async -> [VerificationResult<Transaction>]
    func sync() async throws
    /// The device's app transaction (`AppTransaction.shared`).
    func appTransaction() async throws -> VerificationResult<AppTransaction>
    /// The manage-subscriptions sheet was shown (`AppStore.showManageSubscriptions(in:)`).
    func showManageSubscriptions() async throws
    /// The customer asks for a refund of `transactionID` (`Transaction.beginRefundRequest(for:in:)`).
    func beginRefundRequest(for transactionID: UInt64) async throws -> Transaction.RefundRequestStatus
    /// The offer code redemption sheet was shown (`AppStore.presentOfferCodeRedeemSheet(in:)`).
    func presentOfferCodeRedeemSheet() async throws
    /// The App Store's messages pending for the customer (`Message.messages`).
    func messages() async throws -> [Message]
    /// A message's sheet was shown (`Message.display(in:)`, which does not wait for the customer).
    func display(_ message: Message) throws
}
