import AppStoreClient
import AppStoreCrypto
import AppStoreModels
import Foundation
import StorekeeperCore
import StorekeeperDomain
import StorekeeperWire

/// `ActAtApple`'s port to Apple over the app's `AppStoreServerAPIClient`: each call through
/// `ServerContext.apple` (answered at once while Apple is known to be down; Apple's refusals as
/// `AppleActionError`).
struct AppleServerAPIAdapter: AppleServerAPI {
    let client: AppStoreServerAPIClient
    let context: ServerContext

    func finishTransaction(_ transactionId: String, in placement: ApplePlacement) async throws -> AppStoreEnvironment {
        try await context.apple(placement) { try await client.finishTransaction(transactionId, in: .init(placement)) }
    }

    func setAppAccountToken(_ originalTransactionId: String, _ token: String, in placement: ApplePlacement) async throws -> AppStoreEnvironment {
        try await context.apple(placement) { try await client.setAppAccountToken(originalTransactionId, token, in: .init(placement)) }
    }

    func sendConsumption(_ transactionId: String, _ body: ConsumptionRequestV2, in placement: ApplePlacement) async throws -> AppStoreEnvironment {
        try await context.apple(placement) { try await client.sendConsumptionInformation(transactionId, body, in: .init(placement)) }
    }

    func appTransactionInfo(
        _ anyTransactionId: String, in placement: ApplePlacement
    ) async throws -> (AppTransactionInfoResponse, AppStoreEnvironment) {
        try await context.apple(placement) { try await client.appTransactionInfo(anyTransactionId, in: .init(placement)) }
    }

    func refundHistory(
        _ transactionId: String, revision: String?, in placement: ApplePlacement
    ) async throws
        -> (RefundHistoryResponse, AppStoreEnvironment)
    {
        try await context.apple(placement) { try await client.refundHistory(transactionId, revision: revision, in: .init(placement)) }
    }

    func lookUpOrder(_ orderId: String, in placement: ApplePlacement) async throws -> (OrderLookupResponse, AppStoreEnvironment) {
        try await context.apple(placement) { try await client.lookUpOrder(orderId, in: .init(placement)) }
    }

    func extendRenewalDate(
        _ originalTransactionId: String, _ body: ExtendRenewalDateRequest, environment: AppStoreEnvironment
    ) async throws
        -> ExtendRenewalDateResponse
    {
        try await context.apple(.only(environment)) { try await client.extendRenewalDate(originalTransactionId, body, environment: environment) }
    }

    func extendRenewalDates(
        _ body: MassExtendRenewalDateRequest, environment: AppStoreEnvironment
    ) async throws
        -> MassExtendRenewalDateResponse
    {
        try await context.apple(.only(environment)) { try await client.extendRenewalDates(body, environment: environment) }
    }

    func massExtensionStatus(
        productId: String, requestIdentifier: String, environment: AppStoreEnvironment
    ) async throws
        -> MassExtendRenewalDateStatusResponse
    {
        try await context.apple(.only(environment)) {
            try await client.massExtensionStatus(productId: productId, requestIdentifier: requestIdentifier, environment: environment)
        }
    }
}

/// `ActAtApple`'s port for Apple's signed answers: the process's `SignedTransactionGate`, with
/// the app's trust rule.
struct GateSignedAnswers: AppleSignedAnswers {
    let gate: SignedTransactionGate
    let app: AppConfiguration

    func verify(_ signed: String, kind: AppTrust.Kind, environment: AppStoreEnvironment, now: Date) async -> Result<JSONValue?, AppTrust.Refusal> {
        await gate.trusted(signed, kind: kind, app: app, expectedEnvironment: environment, now: now).map(\.json)
    }
}

extension AppStoreServerAPIClient.Placement {
    init(_ placement: ApplePlacement) {
        switch placement {
        case .either: self = .either
        case .only(let environment): self = .only(environment)
        }
    }
}
