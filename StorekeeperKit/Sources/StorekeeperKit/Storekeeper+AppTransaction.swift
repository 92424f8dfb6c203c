import Foundation
public import StorekeeperWire

/// How the customer obtained the app, as the server verified and kept it from the device's app
/// transaction (docs/SDK.md; the wire type).
public typealias AppTransactionInfo = StorekeeperWire.AppTransactionInfo

extension Storekeeper {
    /// Sends the device's app transaction to the server, which verifies Apple's signature and
    /// keeps it on this user; answers what the server keeps (nil where the store has none). Call
    /// it once per launch, or before deciding on grandfathered access: StoreKit caches the value.
    public func postAppTransaction() async throws -> AppTransactionInfo? {
        guard let jws = try await store.appTransaction() else { return nil }
        let body = try JSONEncoder().encode(AppTransactionSubmission(signedAppTransaction: jws))
        let answer = try await call("POST", subscriberPath("app-transaction"), body: body)
        guard answer.status == 200 else { throw refusal(answer) }
        guard let info = try? WireJSON.makeDecoder().decode(AppTransactionInfo.self, from: answer.body) else {
            throw StorekeeperKitError(.forgedAnswer, "not an app transaction answer")
        }
        return info
    }
}

extension Storekeeper {
    /// A customer center's "manage subscription": the App Store's own sheet (StoreKit's
    /// `showManageSubscriptions(in:)`). What the user changes there reaches the server as Apple's
    /// notifications; call `entitlements()` when it returns. The server is told the sheet was
    /// shown (`manage_subscriptions_shown_in_app`).
    public func showManageSubscriptions() async throws {
        try await store.showManageSubscriptions()
        await reportCustomerCenter(CustomerCenterActionReport(id: Self.reportId(), action: CustomerCenterActionReport.manageSubscriptionsShown))
    }

    /// A customer center's "request a refund" for one of the user's transactions: the App
    /// Store's sheet (StoreKit's `beginRefundRequest(for:in:)`). Apple decides; the server hears
    /// the request from Apple itself (CONSUMPTION_REQUEST: a `refund_requested` event, answered by
    /// the app's refund policy) and the outcome (REFUND or REFUND_DECLINED). The app's own report,
    /// `refund_requested_in_app` with what the sheet came to, is for analytics and support only.
    public func beginRefundRequest(transactionId: String) async throws -> RefundRequestOutcome {
        guard !transactionId.isEmpty, transactionId.utf8.allSatisfy({ (0x30...0x39).contains($0) }), UInt64(transactionId) != nil else {
            throw StorekeeperKitError(.refused, "\(transactionId) is not an App Store transaction id", serverCode: "invalid_transaction_id")
        }
        let outcome = try await store.beginRefundRequest(transactionId: transactionId)
        await reportCustomerCenter(
            CustomerCenterActionReport(
                id: Self.reportId(), action: CustomerCenterActionReport.refundRequested, transactionId: transactionId,
                outcome: outcome == .requested ? "requested" : "cancelled"))
        return outcome
    }

    /// Tells the server what the user did in the customer center (`POST
    /// …/customer-center-actions`), under a fresh key. Best effort: the sheet was shown whatever
    /// the server says, and Apple's own notifications carry what changed.
    func reportCustomerCenter(_ report: CustomerCenterActionReport) async {
        guard let body = try? WireJSON.makeEncoder().encode(report) else { return }
        _ = try? await call("POST", subscriberPath("customer-center-actions"), body: body)
    }

    /// A fresh key for one report.
    static func reportId() -> String { UUID().uuidString.lowercased() }

    /// The App Store's offer code redemption sheet (StoreKit's `presentOfferCodeRedeemSheet(in:)`).
    /// StoreKit returns nothing from it: the purchase a code makes reaches the app as a store
    /// update, which `start()` or `listenForUpdates` journals, posts for this user and finishes
    /// once the server granted it, like any purchase. Keep one of them running while the sheet is up.
    public func presentOfferCodeRedeemSheet() async throws {
        try await store.presentOfferCodeRedeemSheet()
    }

    /// The App Store's messages for this customer, to show when the app chooses: a price
    /// increase to agree to, a billing issue. StoreKit shows them at launch unless the app
    /// listens; iterating this stream is listening, so start it early (at launch, beside
    /// `listenForUpdates`) and keep each message until a calm moment, then `display()` it. An app
    /// that never calls this leaves StoreKit to show them itself.
    ///
    ///     for await message in storekeeper.storeMessages() { deferred.append(message) }
    ///     // later, outside the purchase flow:
    ///     try await deferred.removeFirst().display()
    public nonisolated func storeMessages() -> AsyncStream<StoreMessage> { store.messages() }
}
