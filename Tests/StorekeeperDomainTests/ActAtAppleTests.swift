import AppStoreModels
import Foundation
import StorekeeperCore
import StorekeeperDomain
import StorekeeperErrors
import StorekeeperWire
import Synchronization
import Testing

/// The operator's Apple actions as a use case over fake ports: what is checked before Apple is
/// called, how refunds are paged, and that no signed answer is shown unverified. The routes are
/// tested against the simulator in `AppleActionsTests`.
@Suite("ActAtApple: an operator's actions at Apple, in process")
struct ActAtAppleTests {
    static let now = Date(timeIntervalSince1970: 1_767_225_600)  // 2026-01-01T00:00:00Z

    /// Apple as the tests script it: every call recorded; refund pages and an order answer as set.
    final class FakeApple: AppleServerAPI {
        struct State {
            var calls: [String] = []
            var refundPages: [String?: RefundHistoryResponse] = [:]
            var order = OrderLookupResponse(status: 0, signedTransactions: [])
            var appTransaction = AppTransactionInfoResponse(signedAppTransactionInfo: nil)
            var answering: AppStoreEnvironment = .sandbox
            var failure: AppleActionError?
        }

        let state = Mutex(State())
        var calls: [String] { state.withLock { $0.calls } }

        static func name(_ placement: ApplePlacement) -> String {
            switch placement {
            case .either: "either"
            case .only(let environment): environment.storageName
            }
        }

        private func called(_ call: String) throws -> AppStoreEnvironment {
            try state.withLock { state in
                state.calls.append(call)
                if let failure = state.failure { throw failure }
                return state.answering
            }
        }

        func finishTransaction(_ transactionId: String, in placement: ApplePlacement) async throws -> AppStoreEnvironment {
            try called("finish \(transactionId) \(Self.name(placement))")
        }

        func setAppAccountToken(
            _ originalTransactionId: String, _ token: String, in placement: ApplePlacement
        ) async throws
            -> AppStoreEnvironment
        {
            try called("token \(originalTransactionId) \(token)")
        }

        func sendConsumption(
            _ transactionId: String, _ body: ConsumptionRequestV2, in placement: ApplePlacement
        ) async throws
            -> AppStoreEnvironment
        {
            try called("consumption \(transactionId)")
        }

        func appTransactionInfo(
            _ anyTransactionId: String, in placement: ApplePlacement
        ) async throws
            -> (AppTransactionInfoResponse, AppStoreEnvironment)
        {
            let environment = try called("app transaction \(anyTransactionId)")
            return (state.withLock { $0.appTransaction }, environment)
        }

        func refundHistory(
            _ transactionId: String, revision: String?, in placement: ApplePlacement
        ) async throws
            -> (RefundHistoryResponse, AppStoreEnvironment)
        {
            let environment = try called("refunds \(transactionId) \(revision ?? "-") \(Self.name(placement))")
            return (state.withLock { $0.refundPages[revision] } ?? .init(signedTransactions: nil, revision: nil, hasMore: false), environment)
        }

        func lookUpOrder(_ orderId: String, in placement: ApplePlacement) async throws -> (OrderLookupResponse, AppStoreEnvironment) {
            let environment = try called("order \(orderId)")
            return (state.withLock { $0.order }, environment)
        }

        func extendRenewalDate(
            _ originalTransactionId: String, _ body: ExtendRenewalDateRequest, environment: AppStoreEnvironment
        )
            async throws -> ExtendRenewalDateResponse
        {
            _ = try called("extend \(originalTransactionId) \(environment.storageName)")
            return .init(originalTransactionId: originalTransactionId, webOrderLineItemId: nil, success: true, effectiveDate: nil)
        }

        func extendRenewalDates(
            _ body: MassExtendRenewalDateRequest, environment: AppStoreEnvironment
        ) async throws
            -> MassExtendRenewalDateResponse
        {
            _ = try called("extend all \(body.productId) \(environment.storageName)")
            return .init(requestIdentifier: body.requestIdentifier)
        }

        func massExtensionStatus(
            productId: String, requestIdentifier: String, environment: AppStoreEnvironment
        ) async throws
            -> MassExtendRenewalDateStatusResponse
        {
            _ = try called("status \(productId)")
            return .init(requestIdentifier: requestIdentifier, complete: true, completeDate: nil, succeededCount: 3, failedCount: 0)
        }
    }

    /// Verifies `ok:<id>` as `{"id": "<id>"}` for the environment Apple answered from; refuses
    /// anything else, as a forged answer would be.
    struct FakeSigned: AppleSignedAnswers {
        func verify(
            _ signed: String, kind: AppTrust.Kind, environment: AppStoreEnvironment, now: Date
        ) async
            -> Result<JSONValue?, AppTrust.Refusal>
        {
            guard signed.hasPrefix("ok:") else { return .failure(.init("signature_invalid", "not Apple's")) }
            return .success(.object(["id": .string(String(signed.dropFirst(3))), "environment": .string(environment.rawValue)]))
        }
    }

    let apple = FakeApple()

    static func field(_ value: JSONValue, _ key: String) -> String? {
        guard case .object(let object) = value, case .string(let text)? = object[key] else { return nil }
        return text
    }

    func actions() -> ActAtApple {
        let catalog: [String: Product] = [
            "monthly": Product(productId: "monthly", type: .autoRenewable), "coins": Product(productId: "coins", type: .consumable),
        ]
        return ActAtApple(apple: apple, signed: FakeSigned(), appId: "demo", product: { catalog[$0] })
    }

    func refused(_ kind: AppleActionCode, _ body: () async throws -> Void) async -> String? {
        do {
            try await body()
            return nil
        } catch let error as AppleActionError {
            #expect(error.code == kind, "\(error)")
            return error.message
        } catch {
            Issue.record("not an AppleActionError: \(error)")
            return nil
        }
    }

    @Test("input is refused naming the field before Apple is called: ids, tokens, consumption, extensions, products")
    func refusedBeforeApple() async throws {
        let act = actions()
        let message = await refused(.invalidRequest) { _ = try await act.finish(transactionId: "12a", in: .either) }
        #expect(message == "transactionId must be an App Store transaction id (up to 40 decimal digits)")
        _ = await refused(.invalidRequest) { _ = try await act.refunds(transactionId: String(repeating: "1", count: 21), in: .either, now: Self.now) }
        _ = await refused(.invalidRequest) { _ = try await act.setAppAccountToken(originalTransactionId: "1", token: "nope", in: .either) }
        _ = await refused(.invalidRequest) { _ = try await act.order(orderId: "MK-1", in: .either, now: Self.now) }
        let consumption = await refused(.invalidRequest) {
            _ = try await act.sendConsumption(transactionId: "1", ConsumptionRequestV2(customerConsented: false), in: .either)
        }
        #expect(consumption?.contains("customerConsented must be true") == true && consumption?.contains("deliveryStatus is required") == true)
        let extensionMessage = await refused(.invalidRequest) {
            _ = try await act.extendRenewal(
                originalTransactionId: "1", .init(extendByDays: 91, extendReasonCode: 4, requestIdentifier: "x"), in: .either)
        }
        #expect(extensionMessage?.split(separator: ";").count == 3)
        let mass = MassExtendRenewalDateRequest(
            extendByDays: 1, extendReasonCode: 0, requestIdentifier: UUID().uuidString, productId: "coins", storefrontCountryCodes: nil)
        let notRenewing = await refused(.notFound) { _ = try await act.extendRenewals(mass, in: .either) }
        #expect(notRenewing?.contains("it is consumable") == true)
        var unknown = mass
        unknown.productId = "yearly"
        _ = await refused(.notFound) { _ = try await act.extendRenewals(unknown, in: .either) }
        var badCountries = mass
        badCountries.productId = "monthly"
        badCountries.storefrontCountryCodes = ["us"]
        _ = await refused(.invalidRequest) { _ = try await act.extendRenewals(badCountries, in: .either) }
        _ = await refused(.invalidRequest) { _ = try await act.extensionStatus(productId: "monthly", requestIdentifier: "x", in: .either) }
        #expect(apple.calls.isEmpty, "Apple was called: \(apple.calls)")
    }

    @Test("refunds: every page read, the next ones from the environment that answered, until Apple says no more or repeats itself")
    func refundPages() async throws {
        apple.state.withLock {
            $0.refundPages = [
                nil: .init(signedTransactions: ["ok:1"], revision: "r1", hasMore: true),
                "r1": .init(signedTransactions: ["ok:2", "ok:3"], revision: "r2", hasMore: true),
                "r2": .init(signedTransactions: ["ok:4"], revision: "r2", hasMore: true),
            ]
        }
        let (refunds, environment) = try await actions().refunds(transactionId: "1000", in: .either, now: Self.now)
        #expect(environment == .sandbox)
        #expect(refunds.map { Self.field($0, "id") } == ["1", "2", "3", "4"])
        #expect(apple.calls == ["refunds 1000 - either", "refunds 1000 r1 sandbox", "refunds 1000 r2 sandbox"])

        // A page that never ends stops at the bound.
        apple.state.withLock { state in
            state.calls = []
            state.refundPages = [nil: .init(signedTransactions: [], revision: "0", hasMore: true)]
            for page in 0..<40 { state.refundPages["\(page)"] = .init(signedTransactions: [], revision: "\(page + 1)", hasMore: true) }
        }
        _ = try await actions().refunds(transactionId: "1000", in: .either, now: Self.now)
        #expect(apple.calls.count == ActAtApple.maximumRefundPages)
    }

    @Test("no signed answer is shown unverified: one forged refund, order transaction or app transaction fails the whole answer")
    func unverifiedAnswers() async throws {
        apple.state.withLock { $0.refundPages = [nil: .init(signedTransactions: ["ok:1", "forged"], revision: nil, hasMore: false)] }
        let refunds = await refused(.unavailable) { _ = try await actions().refunds(transactionId: "1", in: .either, now: Self.now) }
        #expect(refunds == "Apple's refunded transaction did not verify: signature_invalid: not Apple's")

        apple.state.withLock { $0.order = .init(status: 0, signedTransactions: ["ok:7"]) }
        let order = try await actions().order(orderId: "MK1", in: .either, now: Self.now)
        #expect(order.valid && order.transactions.count == 1)
        apple.state.withLock { $0.order = .init(status: 1, signedTransactions: ["forged"]) }
        _ = await refused(.unavailable) { _ = try await actions().order(orderId: "MK1", in: .either, now: Self.now) }

        _ = await refused(.unavailable) { _ = try await actions().appTransaction(transactionId: "1", in: .either, now: Self.now) }
        apple.state.withLock { $0.appTransaction = .init(signedAppTransactionInfo: "ok:app") }
        let (payload, _) = try await actions().appTransaction(transactionId: "1", in: .either, now: Self.now)
        #expect(Self.field(payload, "id") == "app")
    }

    @Test("the environment: asked for, or both where the app accepts the sandbox; an extension names one; Apple's refusal passes through")
    func environments() async throws {
        #expect(ApplePlacement.asked("sandbox", acceptsSandbox: false) == .only(.sandbox))
        #expect(ApplePlacement.asked(nil, acceptsSandbox: true) == .either)
        #expect(ApplePlacement.asked(nil, acceptsSandbox: false) == .only(.production))
        _ = try await actions().extendRenewal(
            originalTransactionId: "5", .init(extendByDays: 30, extendReasonCode: 1, requestIdentifier: UUID().uuidString), in: .either)
        #expect(apple.calls.last == "extend 5 production")
        let token = try await actions().setAppAccountToken(
            originalTransactionId: "5", token: "8E0B9C7A-1D6F-4C2B-9A51-3E2D4F6A7B8C", in: .only(.sandbox))
        #expect(token.token == "8e0b9c7a-1d6f-4c2b-9a51-3e2d4f6a7b8c")

        apple.state.withLock { $0.failure = AppleActionError(.rejected, "Apple error 4040010: transaction not consumable") }
        let message = await refused(.rejected) { _ = try await actions().finish(transactionId: "5", in: .either) }
        #expect(message == "Apple error 4040010: transaction not consumable")
    }
}
