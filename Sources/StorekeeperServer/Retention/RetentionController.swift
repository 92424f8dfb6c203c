import AppStoreClient
import AppStoreCrypto
import AppStoreModels
import Foundation
import Hummingbird
import StorekeeperCore
import StorekeeperDomain

/// Apple's Retention Messaging calls this (the app's realtime URL, `POST /v1/retention/{app}`)
/// while a subscriber looks at cancelling, and shows what it answers. No key: the request is
/// the App Store's signed payload, verified like any of Apple's JWS (chain to Apple's roots,
/// ES256), then held to its kind (a realtime request names its request identifier: any other
/// JWS Apple signs, a transaction or renewal info, names none), to the app (its Apple id in
/// production, and in the sandbox where the request names one; sandbox only where accepted),
/// to the moment (signed within the last five minutes) and to one answer per request
/// identifier. The answer is the app's first choice that applies (`ChooseRetentionMessage`),
/// an offer only for a subscriber in its audience, signed (V2) for this request only.
struct RetentionController {
    let context: ServerContext
    /// Request identifiers answered within the last `maximumAge + maximumSkew`: a second post
    /// of the same request is a replay. Kept by this process; a request older than the window
    /// is refused as stale anyway.
    let answered = RetentionReplayGuard(window: maximumAge + maximumSkew)

    /// How old a request may be: Apple calls at once and waits; an older one is a replay.
    static let maximumAge: TimeInterval = 300
    /// How far ahead of this server's clock Apple's may be.
    static let maximumSkew: TimeInterval = 60

    func register(on router: RouteTable) {
        router.group("v1/retention").post(":app") { request, ctx in try await realtime(request, appId: try ctx.parameters.decoded("app")) }
    }

    func realtime(_ request: Request, appId: String) async throws -> Response {
        let app = try context.app(id: appId)
        let now = context.now()
        let signed: String
        do {
            let body = try StorekeeperJSON.decode(RealtimeRequestBody.self, from: try await context.body(request))
            guard let payload = body.signedPayload, !payload.isEmpty else {
                throw StorekeeperError(.invalidRequest, "signedPayload: the App Store's signed request is required")
            }
            signed = payload
        } catch {
            count("invalid")
            throw error
        }
        let payload = try await verified(signed, app: app, now: now)
        guard let original = payload.originalTransactionId, !original.isEmpty, original.utf8.count <= 64,
            let productId = payload.productId, !productId.isEmpty, productId.utf8.count <= 200
        else {
            count("invalid")
            throw StorekeeperError(.invalidRequest, "the signed request names no subscription (originalTransactionId, productId)")
        }
        let choice = try await context.useCases.retention(
            appId: app.id, originalTransactionId: original, productId: productId, locale: String((payload.userLocale ?? "").prefix(35)),
            choices: app.retentionMessages, offers: app.offers, groups: app.subscriptionGroups, now: now)
        var answer = RealtimeResponseBody()
        var outcome = "default"
        if let choice {
            if let switchTo = choice.switchToProductId {
                answer.alternateProduct = .init(messageIdentifier: choice.messageId, productId: switchTo)
                outcome = "switch_plan"
            } else if let offerId = choice.offerId, let offer = app.offers.first(where: { $0.id == offerId }),
                let signer = context.offerSigners[app.id]
            {
                let jws = try await signer.promotionalV2(
                    productId: offer.productId, offerId: offer.id, transactionId: original, now: now, nonce: UUID())
                answer.promotionalOffer = .init(messageIdentifier: choice.messageId, promotionalOfferSignatureV2: jws)
                outcome = "promotional_offer"
            } else {
                answer.message = .init(messageIdentifier: choice.messageId)
                outcome = "message"
            }
        }
        count(outcome)
        return try StorekeeperJSON.response(answer)
    }

    /// The request's payload once every check passed; otherwise 403 naming the first failure.
    private func verified(_ signed: String, app: AppConfiguration, now: Date) async throws -> DecodedRealtimeRequestBody {
        func refuse(_ code: String, _ message: String) -> StorekeeperError {
            count("rejected")
            return StorekeeperError(.retentionRequestRejected, "\(code): \(message)")
        }
        let gate = context.signedTransactionGate
        guard let verdict = try? await gate.verifier.verify(signed, expecting: .init(), time: gate.validationTime(now: now)) else {
            throw refuse("jws_malformed", "the signed request is not a compact JWS")
        }
        if let failure = verdict.failures.first { throw refuse(failure.code, failure.description) }
        guard let payload = try? JSONDecoder().decode(DecodedRealtimeRequestBody.self, from: Data(verdict.payload)) else {
            throw refuse("jws_payload_unreadable", "the signed request's payload is not a realtime request")
        }
        guard let requestIdentifier = payload.requestIdentifier, UUID(uuidString: requestIdentifier) != nil else {
            throw refuse("jws_not_a_realtime_request", "the signed payload names no request identifier: not a realtime request")
        }
        let claims = AppTrust.Claims(kind: .retentionRequest, bundleId: nil, appAppleId: payload.appAppleId, environment: payload.environment)
        if let refusal = app.trust.refusal(of: claims) { throw refuse(refusal.reason.rawValue, refusal.message) }
        guard let signedAt = payload.signedDate?.date, signedAt > now.addingTimeInterval(-Self.maximumAge),
            signedAt < now.addingTimeInterval(Self.maximumSkew)
        else { throw refuse("jws_stale", "signed at \(payload.signedDate.map { "\($0.date)" } ?? "(no date)"), not within the last five minutes") }
        guard answered.first(app.id + "/" + requestIdentifier.lowercased(), now: now) else {
            throw refuse("jws_replayed", "request \(requestIdentifier) was answered already")
        }
        return payload
    }

    private func count(_ outcome: String) {
        context.metrics.increment(Metric.retentionRequestsTotal, labels: ["outcome": outcome])
    }
}
