import StorekeeperWire

/// Why a purchase or a delivered transaction is not settled yet; it stays journaled (and
/// unfinished at the store) and is sent again.
public enum PendingReason: Sendable, Hashable, CustomStringConvertible {
    /// The store waits for someone: Ask to Buy, a bank's confirmation. The transaction arrives
    /// later through the store's updates.
    case awaitingApproval
    /// The server could not be reached, was overloaded (429, 5xx) or asked to wait.
    case serverUnavailable
    /// The answer did not verify with the pinned keys, or spoke of another user.
    case forgedAnswer
    /// The server took it but has not decided yet (`verifying`, `retry_scheduled`, …).
    case verifying(state: String)
    /// Decided, but this transaction was not among those granted.
    case notGranted
    /// Journaled while another user was signed in: it is sent when they sign in again.
    case anotherUser
    /// A reason a newer version reports.
    case other(String)

    public var description: String {
        switch self {
        case .awaitingApproval: "awaiting_approval"
        case .serverUnavailable: "server_unavailable"
        case .forgedAnswer: "forged_answer"
        case .verifying(let state): state
        case .notGranted: "not_granted"
        case .anotherUser: "another_user"
        case .other(let reason): reason
        }
    }
}

/// Why the server refused a transaction for good.
public enum RefusalCode: Sendable, Hashable, CustomStringConvertible {
    /// Bought for another account of the app (its `appAccountToken` is another user's).
    case appAccountTokenMismatch
    /// A client acted for a user its token does not name.
    case otherUser
    /// Not a genuine App Store transaction for this app (signature, chain, bundle, environment).
    case signedTransactionRejected
    /// The server's verification found it invalid (`reason`: its failure, e.g. `revoked`).
    case invalid(reason: String?)
    /// A code a newer server sends.
    case other(String)

    init(serverCode: String) {
        self =
            switch ErrorCode(rawValue: serverCode) {
            case .appAccountTokenMismatch: .appAccountTokenMismatch
            case .otherUser: .otherUser
            case .signedTransactionRejected: .signedTransactionRejected
            default: .other(serverCode)
            }
    }

    /// The transaction itself can never be granted to anyone: finishing it is right.
    public var isAboutTheTransaction: Bool {
        switch self {
        case .signedTransactionRejected, .invalid: true
        case .appAccountTokenMismatch, .otherUser, .other: false
        }
    }

    public var description: String {
        switch self {
        case .appAccountTokenMismatch: "app_account_token_mismatch"
        case .otherUser: "other_user"
        case .signedTransactionRejected: "signed_transaction_rejected"
        case .invalid(let reason): reason ?? "invalid"
        case .other(let code): code
        }
    }
}

/// What `logIn` did.
public enum LogInResult: Sendable, Hashable {
    /// The anonymous id was linked to the user; `transferred` purchases moved to them.
    case linked(transferred: [String])
    /// It was linked before.
    case alreadyLinked
    /// The app keeps anonymous purchases with their first owner: these stayed with the
    /// anonymous id, which was not linked.
    case keptWithAnonymous(transactionIds: [String])
    /// Another known user was signed in: nothing to link, the SDK now speaks for the new one.
    case switched
}
