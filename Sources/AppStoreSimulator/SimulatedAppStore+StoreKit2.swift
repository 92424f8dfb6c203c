import AppStoreModels
import Foundation

extension SimulatedAppStore {
    /// The StoreKit 2 signed transaction a device receives for `transaction`: Apple's JSON
    /// shape (`JWSTransactionDecodedPayload`), signed by the simulator's chain.
    func signedTransaction(_ transaction: SimulatorState.Transaction, now: Date) async throws -> String {
        guard let device = await state.device(transaction.deviceId) else {
            throw SimulatorState.Failure(status: 404, code: "unknown_device", message: "no device")
        }
        let product = await state.app(device.bundleId)?.products.first { $0.productId == transaction.productId }
        func ms(_ date: Date) -> Int64 { Int64((date.timeIntervalSince1970 * 1000).rounded()) }
        var payload: [String: Any] = [
            "transactionId": transaction.transactionId,
            "originalTransactionId": transaction.originalTransactionId,
            "bundleId": device.bundleId,
            "productId": transaction.productId,
            "purchaseDate": ms(transaction.purchaseDate),
            "originalPurchaseDate": ms(transaction.originalPurchaseDate),
            "quantity": transaction.quantity,
            "type": Self.storeKitType(transaction.kind),
            "inAppOwnershipType": "PURCHASED",
            "signedDate": ms(now),
            "environment": device.environment == .production ? "Production" : "Sandbox",
            "transactionReason": transaction.transactionId == transaction.originalTransactionId ? "PURCHASE" : "RENEWAL",
            "storefront": "USA",
            "storefrontId": "143441",
        ]
        if let expires = transaction.expiresDate { payload["expiresDate"] = ms(expires) }
        if let revoked = transaction.cancellationDate {
            payload["revocationDate"] = ms(revoked)
            payload["revocationReason"] = 0
        }
        if let line = transaction.webOrderLineItemId { payload["webOrderLineItemId"] = line }
        if let token = transaction.appAccountToken { payload["appAccountToken"] = token }
        if let group = product?.subscriptionGroup { payload["subscriptionGroupIdentifier"] = group }
        // StoreKit 2 prices are in milli-units of the currency.
        if let micros = product?.priceMicros { payload["price"] = micros / 1000 }
        if let currency = product?.currency { payload["currency"] = currency }
        let json = try JSONSerialization.data(withJSONObject: payload, options: [.sortedKeys])
        return try pki.signJWS(payload: Array(json))
    }

    static func storeKitType(_ kind: SimulatedProduct.Kind) -> String {
        switch kind {
        case .consumable: SignedProductType.consumable.rawValue
        case .nonConsumable: SignedProductType.nonConsumable.rawValue
        case .autoRenewable: SignedProductType.autoRenewable.rawValue
        case .nonRenewing, .freeSubscription: SignedProductType.nonRenewing.rawValue
        }
    }
}
