public import AppStoreModels
public import Foundation
public import StorekeeperDomain
import StorekeeperErrors
public import StorekeeperWire

/// An operator acts at Apple on one customer's purchase through the app's App Store Server API
/// key: the calls Apple added in 2025-2026 (App Store Server API 1.20). Every input is checked
/// here before Apple is called, so a mistake is refused naming the field rather than by Apple
/// later; every signed answer is verified before it is shown; Apple's refunds are read page by
/// page up to a bound, so a misbehaving answer cannot hold the request.
public struct ActAtApple: Sendable {
    let apple: any AppleServerAPI
    let signed: any AppleSignedAnswers
    let appId: String
    /// The app's catalog entry of a product id, nil when the catalog holds none.
    let product: @Sendable (_ productId: String) async throws -> Product?

    /// Refund history pages read at most: a customer's refunds are few.
    public static let maximumRefundPages = 20

    public init(
        apple: any AppleServerAPI, signed: any AppleSignedAnswers, appId: String,
        product: @escaping @Sendable (_ productId: String) async throws -> Product?
    ) {
        self.apple = apple
        self.signed = signed
        self.appId = appId
        self.product = product
    }

    public func finish(transactionId: String, in placement: ApplePlacement) async throws -> AppStoreEnvironment {
        try await apple.finishTransaction(try Self.transactionId(transactionId, "transactionId"), in: placement)
    }

    /// `token`: a UUID, stored lowercased as Apple lists it. Setting it binds an older purchase to
    /// the user it was derived for, so a later StoreKit 2 post of it passes the token check.
    public func setAppAccountToken(
        originalTransactionId: String, token: String, in placement: ApplePlacement
    ) async throws
        -> (token: String, environment: AppStoreEnvironment)
    {
        let id = try Self.transactionId(originalTransactionId, "transactionId")
        guard let uuid = UUID(uuidString: token) else { throw AppleActionError(.invalidRequest, "appAccountToken must be a UUID") }
        let token = uuid.uuidString.lowercased()
        return (token, try await apple.setAppAccountToken(id, token, in: placement))
    }

    public func sendConsumption(
        transactionId: String, _ body: ConsumptionRequestV2, in placement: ApplePlacement
    ) async throws
        -> AppStoreEnvironment
    {
        let id = try Self.transactionId(transactionId, "transactionId")
        let problems = Self.consumptionProblems(body)
        guard problems.isEmpty else { throw AppleActionError(.invalidRequest, problems.joined(separator: "; ")) }
        return try await apple.sendConsumption(id, body, in: placement)
    }

    /// Apple's decoded app transaction, every field as Apple sent it.
    public func appTransaction(
        transactionId: String, in placement: ApplePlacement, now: Date
    ) async throws
        -> (appTransaction: JSONValue, environment: AppStoreEnvironment)
    {
        let id = try Self.transactionId(transactionId, "transactionId")
        let (answer, environment) = try await apple.appTransactionInfo(id, in: placement)
        guard let jws = answer.signedAppTransactionInfo else {
            throw AppleActionError(.unavailable, "Apple answered without a signed app transaction")
        }
        return (try await verified(jws, kind: .appTransaction, environment: environment, what: "signed app transaction", now: now), environment)
    }

    /// Apple's refunded transactions of the customer, decoded and verified, oldest refund first as
    /// Apple lists them.
    public func refunds(
        transactionId: String, in placement: ApplePlacement, now: Date
    ) async throws
        -> (refunds: [JSONValue], environment: AppStoreEnvironment)
    {
        let id = try Self.transactionId(transactionId, "transactionId", digits: 20)
        var signedTransactions: [String] = []
        var revision: String?
        var environment = AppStoreEnvironment.production
        for _ in 0..<Self.maximumRefundPages {
            // The first page finds the environment; the next pages ask that one.
            let (page, answered) = try await apple.refundHistory(id, revision: revision, in: revision == nil ? placement : .only(environment))
            environment = answered
            signedTransactions += page.signedTransactions ?? []
            guard page.hasMore == true, let next = page.revision, next != revision else { break }
            revision = next
        }
        var refunds: [JSONValue] = []
        for jws in signedTransactions {
            refunds.append(try await verified(jws, kind: .transaction, environment: environment, what: "refunded transaction", now: now))
        }
        return (refunds, environment)
    }

    /// An order on the customer's invoice: valid when Apple's status is 0, with its transactions
    /// decoded and verified.
    public func order(
        orderId: String, in placement: ApplePlacement, now: Date
    ) async throws
        -> (valid: Bool, transactions: [JSONValue], environment: AppStoreEnvironment)
    {
        // Apple's order ids are letters and digits.
        guard (1...40).contains(orderId.utf8.count), orderId.utf8.allSatisfy(Self.isLetterOrDigit) else {
            throw AppleActionError(.invalidRequest, "orderId must be an App Store order id (up to 40 letters and digits)")
        }
        let (answer, environment) = try await apple.lookUpOrder(orderId, in: placement)
        var transactions: [JSONValue] = []
        for jws in answer.signedTransactions ?? [] {
            transactions.append(try await verified(jws, kind: .transaction, environment: environment, what: "order's transaction", now: now))
        }
        return (answer.status == 0, transactions, environment)
    }

    /// One subscription's renewal date moved later. The request identifier makes a retry
    /// idempotent at Apple: send the same one again after a timeout, never a new one.
    public func extendRenewal(
        originalTransactionId: String, _ body: ExtendRenewalDateRequest, in placement: ApplePlacement
    ) async throws
        -> (answer: ExtendRenewalDateResponse, environment: AppStoreEnvironment)
    {
        let id = try Self.transactionId(originalTransactionId, "originalTransactionId", digits: 20)
        let problems = Self.extensionProblems(days: body.extendByDays, reason: body.extendReasonCode, requestIdentifier: body.requestIdentifier)
        guard problems.isEmpty else { throw AppleActionError(.invalidRequest, problems.joined(separator: "; ")) }
        let environment = placement.single
        return (try await apple.extendRenewalDate(id, body, environment: environment), environment)
    }

    /// Every active subscriber of a product extended: Apple answers at once and works through
    /// the subscribers later (`extensionStatus`). Only a product of the app's catalog that renews:
    /// extending anything else means nothing at Apple.
    public func extendRenewals(
        _ body: MassExtendRenewalDateRequest, in placement: ApplePlacement
    ) async throws
        -> (answer: MassExtendRenewalDateResponse, environment: AppStoreEnvironment)
    {
        try await requireSubscription(body.productId)
        var problems = Self.extensionProblems(days: body.extendByDays, reason: body.extendReasonCode, requestIdentifier: body.requestIdentifier)
        if let codes = body.storefrontCountryCodes,
            codes.isEmpty || codes.count > 300 || !codes.allSatisfy({ $0.utf8.count == 3 && $0.utf8.allSatisfy { (0x41...0x5A).contains($0) } })
        {
            problems.append("storefrontCountryCodes must be 1 to 300 ISO 3166-1 alpha-3 codes (USA, FRA, ...)")
        }
        guard problems.isEmpty else { throw AppleActionError(.invalidRequest, problems.joined(separator: "; ")) }
        let environment = placement.single
        return (try await apple.extendRenewalDates(body, environment: environment), environment)
    }

    /// How far Apple is with a mass extension (`complete`, `succeededCount`, `failedCount`).
    public func extensionStatus(
        productId: String, requestIdentifier: String, in placement: ApplePlacement
    ) async throws
        -> (status: MassExtendRenewalDateStatusResponse, environment: AppStoreEnvironment)
    {
        guard UUID(uuidString: requestIdentifier) != nil else { throw AppleActionError(.invalidRequest, "requestIdentifier must be a UUID") }
        let environment = placement.single
        return (
            try await apple.massExtensionStatus(productId: productId, requestIdentifier: requestIdentifier, environment: environment), environment
        )
    }

    // MARK: - Rules

    /// A product of the app's catalog that renews; any other product id is, here, a subscription
    /// that does not exist.
    func requireSubscription(_ productId: String) async throws {
        guard let product = try await product(productId) else {
            throw AppleActionError(.notFound, "no product '\(productId)' in app '\(appId)'")
        }
        guard product.type == .autoRenewable else {
            throw AppleActionError(.notFound, "no auto-renewable subscription '\(productId)' in app '\(appId)' (it is \(product.type.rawValue))")
        }
    }

    /// Apple's transaction ids (original, renewal and app transaction ids alike) are decimal
    /// digits; anything else is refused here rather than sent to Apple. Calls that take only a
    /// transaction id (not an app transaction id) take at most 20 digits, as Apple does (a 64-bit
    /// number).
    static func transactionId(_ id: String, _ name: String, digits: Int = 40) throws -> String {
        guard (1...digits).contains(id.utf8.count), id.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else {
            throw AppleActionError(.invalidRequest, "\(name) must be an App Store transaction id (up to \(digits) decimal digits)")
        }
        return id
    }

    public static func extensionProblems(days: Int, reason: Int, requestIdentifier: String) -> [String] {
        var problems: [String] = []
        if !(1...90).contains(days) { problems.append("extendByDays must be from 1 to 90") }
        if !(0...3).contains(reason) {
            problems.append("extendReasonCode must be 0 (undeclared), 1 (customer satisfaction), 2 (other) or 3 (service issue or outage)")
        }
        if UUID(uuidString: requestIdentifier) == nil { problems.append("requestIdentifier must be a UUID") }
        return problems
    }

    /// Apple's v2 consumption body: Apple takes the data only with consent, and refuses values
    /// outside its lists.
    public static func consumptionProblems(_ body: ConsumptionRequestV2) -> [String] {
        var problems: [String] = []
        if !body.customerConsented { problems.append("customerConsented must be true: Apple takes the data only with consent") }
        if body.sampleContentProvided == nil { problems.append("sampleContentProvided is required") }
        if let status = body.deliveryStatus {
            if !ConsumptionRequestV2.deliveryStatuses.contains(status) {
                problems.append("deliveryStatus must be one of \(ConsumptionRequestV2.deliveryStatuses.sorted().joined(separator: ", "))")
            }
        } else {
            problems.append("deliveryStatus is required")
        }
        if let share = body.consumptionPercentage, !(0...100_000).contains(share) {
            problems.append("consumptionPercentage must be from 0 to 100000 (milliunits of a percent)")
        }
        if let preference = body.refundPreference, !ConsumptionRequestV2.refundPreferences.contains(preference) {
            problems.append("refundPreference must be one of \(ConsumptionRequestV2.refundPreferences.sorted().joined(separator: ", "))")
        }
        return problems
    }

    static func isLetterOrDigit(_ byte: UInt8) -> Bool {
        (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
    }

    private func verified(
        _ jws: String, kind: AppTrust.Kind, environment: AppStoreEnvironment, what: String, now: Date
    ) async throws -> JSONValue {
        switch await signed.verify(jws, kind: kind, environment: environment, now: now) {
        case .success(let payload?): return payload
        case .success(nil): throw AppleActionError(.unavailable, "Apple's \(what) is not JSON")
        case .failure(let refusal):
            throw AppleActionError(.unavailable, "Apple's \(what) did not verify: \(refusal.reason.rawValue): \(refusal.message)")
        }
    }
}
