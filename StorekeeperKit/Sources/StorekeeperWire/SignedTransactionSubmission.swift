/// A StoreKit 2 transaction posted for a user (`POST /v1/transactions`).
public struct SignedTransactionSubmission: WireMessage {
    public static let location = WireLocation.schema("SignedTransactionSubmission")
    public var appUserId: String
    /// The JWS from StoreKit 2 (`Transaction.jwsRepresentation`).
    public var signedTransaction: String
    /// The UUID the purchase carried as `appAccountToken`. Only the backend's secret key may
    /// vouch for a token that is not the one derived from the user id; from the app it must
    /// equal the transaction's.
    public var appAccountToken: String?

    public init(appUserId: String, signedTransaction: String, appAccountToken: String? = nil) {
        self.appUserId = appUserId
        self.signedTransaction = signedTransaction
        self.appAccountToken = appAccountToken
    }
}
