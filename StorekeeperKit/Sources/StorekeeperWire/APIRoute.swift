/// Every route of the API (the operator console's HTML pages aside), with the credential it
/// needs: the table the server's registered routes and docs/openapi.yaml are each checked against
/// (a route added to one and not the others fails a test), and the paths the SDK calls.
public struct APIRoute: Sendable, Hashable, CustomStringConvertible {
    /// Who may call a route.
    public enum Access: String, Sendable, Hashable, CaseIterable {
        /// Anyone: the probe and the metrics.
        case open
        /// No key: the body must be signed by Apple (notifications, retention requests).
        case appleSigned
        /// The app's secret key (its backend); a client key is refused.
        case backend
        /// The app's secret key, or its client key with the user's token.
        case caller
        /// The admin key or an admin token.
        case admin
    }

    /// `GET`, `POST`, `PUT`, `PATCH` or `DELETE`.
    public var method: String
    /// The path with its captures in braces (`/v1/subscribers/{appUserId}`).
    public var path: String
    public var access: Access

    public init(_ method: String, _ path: String, _ access: Access) {
        self.method = method
        self.path = path
        self.access = access
    }

    /// `METHOD /path/{capture}`.
    public var description: String { "\(method) \(path)" }

    public static let all: [APIRoute] = [
        APIRoute("GET", "/healthz", .open),
        APIRoute("GET", "/metrics", .open),
        APIRoute("POST", "/v1/notifications/appstore", .appleSigned),
        APIRoute("POST", "/v1/retention/{app}", .appleSigned),
        APIRoute("GET", "/v1/events", .backend),
        APIRoute("GET", "/v1/subscribers/{appUserId}/events", .backend),
        APIRoute("GET", "/v1/offerings", .caller),
        APIRoute("GET", "/v1/products", .caller),
        APIRoute("POST", "/v1/receipts", .caller),
        APIRoute("GET", "/v1/subscribers/{appUserId}", .caller),
        APIRoute("POST", "/v1/subscribers/{appUserId}/aliases", .caller),
        APIRoute("POST", "/v1/subscribers/{appUserId}/app-transaction", .caller),
        APIRoute("PATCH", "/v1/subscribers/{appUserId}/attributes", .caller),
        APIRoute("GET", "/v1/subscribers/{appUserId}/credits", .caller),
        APIRoute("POST", "/v1/subscribers/{appUserId}/credits/spend", .caller),
        APIRoute("POST", "/v1/subscribers/{appUserId}/customer-center-actions", .caller),
        APIRoute("POST", "/v1/subscribers/{appUserId}/offers/introductory", .caller),
        APIRoute("POST", "/v1/subscribers/{appUserId}/offers/promotional", .caller),
        APIRoute("GET", "/v1/subscribers/{appUserId}/offers/win-back", .caller),
        APIRoute("POST", "/v1/transactions", .caller),
        APIRoute("GET", "/v1/verifications/{id}", .caller),
        APIRoute("GET", "/v1/admin/apple-health", .admin),
        APIRoute("GET", "/v1/admin/apps/{app}/app-transactions/{appTransactionId}", .admin),
        APIRoute("GET", "/v1/admin/apps/{app}/audit", .admin),
        APIRoute("GET", "/v1/admin/apps/{app}/entitlements", .admin),
        APIRoute("DELETE", "/v1/admin/apps/{app}/entitlements/{entitlementId}", .admin),
        APIRoute("PUT", "/v1/admin/apps/{app}/entitlements/{entitlementId}", .admin),
        APIRoute("GET", "/v1/admin/apps/{app}/experiments", .admin),
        APIRoute("PUT", "/v1/admin/apps/{app}/experiments/{experimentId}", .admin),
        APIRoute("GET", "/v1/admin/apps/{app}/experiments/{experimentId}/results", .admin),
        APIRoute("POST", "/v1/admin/apps/{app}/experiments/{experimentId}/stop", .admin),
        APIRoute("POST", "/v1/admin/apps/{app}/experiments/{experimentId}/ship", .admin),
        APIRoute("POST", "/v1/admin/apps/{app}/imports", .admin),
        APIRoute("GET", "/v1/admin/apps/{app}/ledger", .admin),
        APIRoute("GET", "/v1/admin/apps/{app}/metrics/cohorts", .admin),
        APIRoute("GET", "/v1/admin/apps/{app}/metrics/ltv", .admin),
        APIRoute("GET", "/v1/admin/apps/{app}/metrics/revenue", .admin),
        APIRoute("GET", "/v1/admin/apps/{app}/metrics/subscriptions", .admin),
        APIRoute("POST", "/v1/admin/apps/{app}/notifications/gap-fill", .admin),
        APIRoute("PUT", "/v1/admin/apps/{app}/offering-targeting", .admin),
        APIRoute("GET", "/v1/admin/apps/{app}/offerings", .admin),
        APIRoute("DELETE", "/v1/admin/apps/{app}/offerings/{offeringId}", .admin),
        APIRoute("PUT", "/v1/admin/apps/{app}/offerings/{offeringId}", .admin),
        APIRoute("GET", "/v1/admin/apps/{app}/orders/{orderId}", .admin),
        APIRoute("GET", "/v1/admin/apps/{app}/products", .admin),
        APIRoute("POST", "/v1/admin/apps/{app}/products", .admin),
        APIRoute("DELETE", "/v1/admin/apps/{app}/products/{productId}", .admin),
        APIRoute("PUT", "/v1/admin/apps/{app}/products/{productId}", .admin),
        APIRoute("POST", "/v1/admin/apps/{app}/products/{productId}/renewal-extension", .admin),
        APIRoute("GET", "/v1/admin/apps/{app}/products/{productId}/renewal-extension/{requestIdentifier}", .admin),
        APIRoute("POST", "/v1/admin/apps/{app}/promotional-grants/{grantId}/revoke", .admin),
        APIRoute("GET", "/v1/admin/apps/{app}/refund-requests", .admin),
        APIRoute("DELETE", "/v1/admin/apps/{app}/retention/default-messages/{productId}/{locale}", .admin),
        APIRoute("GET", "/v1/admin/apps/{app}/retention/default-messages/{productId}/{locale}", .admin),
        APIRoute("PUT", "/v1/admin/apps/{app}/retention/default-messages/{productId}/{locale}", .admin),
        APIRoute("GET", "/v1/admin/apps/{app}/retention/images", .admin),
        APIRoute("DELETE", "/v1/admin/apps/{app}/retention/images/{imageIdentifier}", .admin),
        APIRoute("PUT", "/v1/admin/apps/{app}/retention/images/{imageIdentifier}", .admin),
        APIRoute("GET", "/v1/admin/apps/{app}/retention/messages", .admin),
        APIRoute("DELETE", "/v1/admin/apps/{app}/retention/messages/{messageIdentifier}", .admin),
        APIRoute("PUT", "/v1/admin/apps/{app}/retention/messages/{messageIdentifier}", .admin),
        APIRoute("POST", "/v1/admin/apps/{app}/retention/performance-tests", .admin),
        APIRoute("GET", "/v1/admin/apps/{app}/retention/performance-tests/{requestId}", .admin),
        APIRoute("DELETE", "/v1/admin/apps/{app}/retention/realtime-url", .admin),
        APIRoute("GET", "/v1/admin/apps/{app}/retention/realtime-url", .admin),
        APIRoute("PUT", "/v1/admin/apps/{app}/retention/realtime-url", .admin),
        APIRoute("GET", "/v1/admin/apps/{app}/storekit-config", .admin),
        APIRoute("DELETE", "/v1/admin/apps/{app}/subscribers/{appUserId}", .admin),
        APIRoute("DELETE", "/v1/admin/apps/{app}/subscribers/{appUserId}/offering-override", .admin),
        APIRoute("GET", "/v1/admin/apps/{app}/subscribers/{appUserId}/offering-override", .admin),
        APIRoute("PUT", "/v1/admin/apps/{app}/subscribers/{appUserId}/offering-override", .admin),
        APIRoute("GET", "/v1/admin/apps/{app}/subscribers/{appUserId}/promotional-grants", .admin),
        APIRoute("POST", "/v1/admin/apps/{app}/subscribers/{appUserId}/promotional-grants", .admin),
        APIRoute("DELETE", "/v1/admin/apps/{app}/subscribers/{appUserId}/suspension", .admin),
        APIRoute("PUT", "/v1/admin/apps/{app}/subscribers/{appUserId}/suspension", .admin),
        APIRoute("PUT", "/v1/admin/apps/{app}/subscriptions/{originalTransactionId}/renewal-extension", .admin),
        APIRoute("PUT", "/v1/admin/apps/{app}/transactions/{transactionId}/app-account-token", .admin),
        APIRoute("GET", "/v1/admin/apps/{app}/transactions/{transactionId}/app-transaction", .admin),
        APIRoute("PUT", "/v1/admin/apps/{app}/transactions/{transactionId}/consumption", .admin),
        APIRoute("POST", "/v1/admin/apps/{app}/transactions/{transactionId}/finish", .admin),
        APIRoute("GET", "/v1/admin/apps/{app}/transactions/{transactionId}/refunds", .admin),
        APIRoute("POST", "/v1/admin/apps/{app}/users/{appUserId}/refresh", .admin),
        APIRoute("GET", "/v1/admin/apps/{app}/webhooks", .admin),
        APIRoute("POST", "/v1/admin/apps/{app}/webhooks", .admin),
        APIRoute("DELETE", "/v1/admin/apps/{app}/webhooks/{endpointId}", .admin),
        APIRoute("GET", "/v1/admin/apps/{app}/webhooks/{endpointId}", .admin),
        APIRoute("PATCH", "/v1/admin/apps/{app}/webhooks/{endpointId}", .admin),
        APIRoute("GET", "/v1/admin/apps/{app}/webhooks/{endpointId}/deliveries", .admin),
        APIRoute("POST", "/v1/admin/apps/{app}/webhooks/{endpointId}/deliveries/{deliveryId}/replay", .admin),
        APIRoute("POST", "/v1/admin/apps/{app}/webhooks/{endpointId}/deliveries/{deliveryId}/skip", .admin),
        APIRoute("POST", "/v1/admin/apps/{app}/webhooks/{endpointId}/replay", .admin),
        APIRoute("POST", "/v1/admin/apps/{app}/webhooks/{endpointId}/rotate-secret", .admin),
        APIRoute("POST", "/v1/admin/apps/{app}/webhooks/{endpointId}/test", .admin),
        APIRoute("GET", "/v1/admin/audit", .admin),
        APIRoute("GET", "/v1/admin/tokens", .admin),
        APIRoute("POST", "/v1/admin/tokens", .admin),
        APIRoute("POST", "/v1/admin/tokens/{tokenId}/revoke", .admin),
        APIRoute("POST", "/v1/admin/tokens/{tokenId}/rotate", .admin),
        APIRoute("GET", "/v1/admin/verifications", .admin),
        APIRoute("POST", "/v1/admin/verifications/{id}/retry", .admin),
        APIRoute("GET", "/v1/admin/whoami", .admin),
    ]
}
