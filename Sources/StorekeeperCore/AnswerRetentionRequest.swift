public import AppStoreModels
public import Foundation
public import StorekeeperDomain

/// What checking one of Apple's compact JWS found: its signature, its chain to Apple's roots and
/// its validity at the instant given, before anything it says is read.
public enum SignedPayloadCheck: Sendable {
    /// Not a compact JWS at all.
    case malformed
    /// The first check that failed (`jws_signature_invalid`, …) and what it found.
    case failed(code: String, message: String)
    /// The payload's bytes, from a JWS that passed every check.
    case verified(Data)
}

/// Apple's signed payloads checked with no kind assumed: the server's adapter is its
/// `SignedTransactionGate`'s verifier.
public protocol AppleSignedPayloads: Sendable {
    func check(_ signed: String, now: Date) async -> SignedPayloadCheck
}

/// Signs a promotional offer (V2) for one subscription, with the app's In-App Purchase key.
public protocol PromotionalOfferSigning: Sendable {
    func promotionalV2(productId: String, offerId: String, transactionId: String, now: Date) async throws -> String
}

/// The app's choice for one subscription (`ChooseRetentionMessage`), nil for Apple's default.
public protocol RetentionChoosing: Sendable {
    func callAsFunction(
        appId: String, originalTransactionId: String, productId: String, locale: String, choices: [RetentionChoice],
        offers: [OfferDefinition], groups: [String: [String]], now: Date
    ) async throws -> RetentionChoice?
}

extension ChooseRetentionMessage: RetentionChoosing {}

/// Apple's Retention Messaging asks, while a subscriber looks at cancelling, what to show them.
/// The request is the App Store's signed payload, believed only once it is verified like any of
/// Apple's JWS, then held to its kind (a realtime request names its request identifier: any
/// other JWS Apple signs, a transaction or renewal info, names none), to the app (`AppTrust`),
/// to the moment (signed within the last five minutes) and to one answer per request
/// identifier. The answer is the app's first choice that applies (`ChooseRetentionMessage`), an
/// offer only for a subscriber in its audience, signed (V2) for this request only.
public struct AnswerRetentionRequest: Sendable {
    /// What of the app's configuration a request is answered from.
    public struct App: Sendable {
        public var id: String
        public var trust: AppTrust
        public var choices: [RetentionChoice]
        public var offers: [OfferDefinition]
        public var groups: [String: [String]]
        /// Nil when the app has no In-App Purchase key: an offer cannot be signed, so a choice
        /// of one is answered as its message.
        public var signer: (any PromotionalOfferSigning)?

        public init(
            id: String, trust: AppTrust, choices: [RetentionChoice], offers: [OfferDefinition], groups: [String: [String]],
            signer: (any PromotionalOfferSigning)?
        ) {
            self.id = id
            self.trust = trust
            self.choices = choices
            self.offers = offers
            self.groups = groups
            self.signer = signer
        }
    }

    public enum Outcome: Sendable {
        /// `kind`: `default` (Apple shows the app's default message), `switch_plan`,
        /// `promotional_offer` or `message`.
        case answered(RealtimeResponseBody, kind: String)
        /// Not the App Store's request for this app, now: the first check that failed.
        case refused(code: String, message: String)
        /// The App Store's request, but naming no subscription to answer for.
        case unanswerable(String)
    }

    /// How old a request may be: Apple calls at once and waits; an older one is a replay.
    public static let maximumAge: TimeInterval = 300
    /// How far ahead of this server's clock Apple's may be.
    public static let maximumSkew: TimeInterval = 60

    let payloads: any AppleSignedPayloads
    let choose: any RetentionChoosing
    /// Request identifiers answered within the last `maximumAge + maximumSkew`: a second post of
    /// the same request is a replay. Kept by this process; an older request is refused as stale.
    let answered: RetentionReplayGuard

    public init(payloads: any AppleSignedPayloads, choose: any RetentionChoosing) {
        self.payloads = payloads
        self.choose = choose
        answered = RetentionReplayGuard(window: Self.maximumAge + Self.maximumSkew)
    }

    public func callAsFunction(_ signed: String, app: App, now: Date) async throws -> Outcome {
        let payload: DecodedRealtimeRequestBody
        switch await verified(signed, app: app, now: now) {
        case .success(let verified): payload = verified
        case .failure(let refusal): return .refused(code: refusal.code, message: refusal.message)
        }
        guard let original = payload.originalTransactionId, !original.isEmpty, original.utf8.count <= 64,
            let productId = payload.productId, !productId.isEmpty, productId.utf8.count <= 200
        else { return .unanswerable("the signed request names no subscription (originalTransactionId, productId)") }
        let choice = try await choose(
            appId: app.id, originalTransactionId: original, productId: productId, locale: String((payload.userLocale ?? "").prefix(35)),
            choices: app.choices, offers: app.offers, groups: app.groups, now: now)
        guard let choice else { return .answered(RealtimeResponseBody(), kind: "default") }
        var answer = RealtimeResponseBody()
        if let switchTo = choice.switchToProductId {
            answer.alternateProduct = .init(messageIdentifier: choice.messageId, productId: switchTo)
            return .answered(answer, kind: "switch_plan")
        }
        if let offerId = choice.offerId, let offer = app.offers.first(where: { $0.id == offerId }), let signer = app.signer {
            let jws = try await signer.promotionalV2(productId: offer.productId, offerId: offer.id, transactionId: original, now: now)
            answer.promotionalOffer = .init(messageIdentifier: choice.messageId, promotionalOfferSignatureV2: jws)
            return .answered(answer, kind: "promotional_offer")
        }
        answer.message = .init(messageIdentifier: choice.messageId)
        return .answered(answer, kind: "message")
    }

    struct Refusal: Error {
        var code: String
        var message: String
    }

    /// The request's payload once every check passed; otherwise the first failure.
    private func verified(_ signed: String, app: App, now: Date) async -> Result<DecodedRealtimeRequestBody, Refusal> {
        let bytes: Data
        switch await payloads.check(signed, now: now) {
        case .malformed: return .failure(.init(code: "jws_malformed", message: "the signed request is not a compact JWS"))
        case .failed(let code, let message): return .failure(.init(code: code, message: message))
        case .verified(let verified): bytes = verified
        }
        guard let payload = try? JSONDecoder().decode(DecodedRealtimeRequestBody.self, from: bytes) else {
            return .failure(.init(code: "jws_payload_unreadable", message: "the signed request's payload is not a realtime request"))
        }
        guard let requestIdentifier = payload.requestIdentifier, UUID(uuidString: requestIdentifier) != nil else {
            return .failure(
                .init(code: "jws_not_a_realtime_request", message: "the signed payload names no request identifier: not a realtime request"))
        }
        let claims = AppTrust.Claims(kind: .retentionRequest, bundleId: nil, appAppleId: payload.appAppleId, environment: payload.environment)
        if let refusal = app.trust.refusal(of: claims) { return .failure(.init(code: refusal.reason.rawValue, message: refusal.message)) }
        guard let signedAt = payload.signedDate?.date, signedAt > now.addingTimeInterval(-Self.maximumAge),
            signedAt < now.addingTimeInterval(Self.maximumSkew)
        else {
            return .failure(
                .init(
                    code: "jws_stale",
                    message: "signed at \(payload.signedDate.map { "\($0.date)" } ?? "(no date)"), not within the last five minutes"))
        }
        guard answered.first(app.id + "/" + requestIdentifier.lowercased(), now: now) else {
            return .failure(.init(code: "jws_replayed", message: "request \(requestIdentifier) was answered already"))
        }
        return .success(payload)
    }
}
