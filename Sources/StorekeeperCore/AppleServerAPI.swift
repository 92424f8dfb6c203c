public import AppStoreModels
public import Foundation
public import StorekeeperDomain
public import StorekeeperErrors
public import StorekeeperWire

/// Where a call about a transaction goes: the one environment the operator named, or production
/// first and the sandbox when production does not know the id.
public enum ApplePlacement: Sendable, Hashable {
    case either
    case only(AppStoreEnvironment)

    /// What an operator's `?environment=` asks for (`production`, `sandbox`, or nothing): with
    /// nothing, both where the app accepts the sandbox, else production alone.
    public static func asked(_ environment: String?, acceptsSandbox: Bool) -> ApplePlacement {
        switch environment {
        case "production"?: .only(.production)
        case "sandbox"?: .only(.sandbox)
        default: acceptsSandbox ? .either : .only(.production)
        }
    }

    /// The one environment of a call that names one (the extension calls): the one asked for,
    /// else production.
    public var single: AppStoreEnvironment {
        if case .only(let chosen) = self { chosen } else { .production }
    }
}

/// The App Store Server API calls an operator's Apple actions make, with one app's In-App
/// Purchase key. The server's adapter calls Apple (and answers at once while Apple is known to
/// be down); tests pass a fake. A call Apple refuses, or that does not reach Apple, throws
/// `AppleActionError` (`notFound`, `rejected`, `unavailable`).
public protocol AppleServerAPI: Sendable {
    func finishTransaction(_ transactionId: String, in placement: ApplePlacement) async throws -> AppStoreEnvironment
    func setAppAccountToken(_ originalTransactionId: String, _ token: String, in placement: ApplePlacement) async throws -> AppStoreEnvironment
    func sendConsumption(_ transactionId: String, _ body: ConsumptionRequestV2, in placement: ApplePlacement) async throws -> AppStoreEnvironment
    func appTransactionInfo(
        _ anyTransactionId: String, in placement: ApplePlacement
    ) async throws -> (AppTransactionInfoResponse, AppStoreEnvironment)
    /// One page; the previous page's `revision` asks for the next.
    func refundHistory(
        _ transactionId: String, revision: String?, in placement: ApplePlacement
    ) async throws
        -> (RefundHistoryResponse, AppStoreEnvironment)
    func lookUpOrder(_ orderId: String, in placement: ApplePlacement) async throws -> (OrderLookupResponse, AppStoreEnvironment)
    func extendRenewalDate(
        _ originalTransactionId: String, _ body: ExtendRenewalDateRequest, environment: AppStoreEnvironment
    ) async throws
        -> ExtendRenewalDateResponse
    func extendRenewalDates(
        _ body: MassExtendRenewalDateRequest, environment: AppStoreEnvironment
    ) async throws
        -> MassExtendRenewalDateResponse
    func massExtensionStatus(
        productId: String, requestIdentifier: String, environment: AppStoreEnvironment
    ) async throws
        -> MassExtendRenewalDateStatusResponse
}

/// Apple's signed answers, believed only once verified like every other signed payload: the
/// signature and chain, then `AppTrust` for the app and the environment that answered. The
/// server's adapter is its `SignedTransactionGate`; the payload comes back as JSON, every
/// field kept.
public protocol AppleSignedAnswers: Sendable {
    func verify(
        _ signed: String, kind: AppTrust.Kind, environment: AppStoreEnvironment, now: Date
    ) async
        -> Result<JSONValue?, AppTrust.Refusal>
}

/// Why an action at Apple was not done. The edge maps each code to one HTTP status
/// (`StorekeeperError`); the message says what to change, with Apple's error code when Apple
/// refused.
public typealias AppleActionError = CodedError<AppleActionCode>

public enum AppleActionCode: String, Sendable, Hashable, CustomStringConvertible {
    /// The operator's input, refused before Apple is called.
    case invalidRequest = "invalid_request"
    /// An id or product nobody knows: not in the catalog, or not at Apple.
    case notFound = "not_found"
    /// Apple refused the request (its error code in the message).
    case rejected
    /// Apple did not answer, answered out of bounds, or its answer did not verify.
    case unavailable

    public var description: String { rawValue }
}
