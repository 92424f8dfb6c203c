import AppStoreClient
import Foundation
import Hummingbird
import StorekeeperCore
import StorekeeperDomain
import StorekeeperErrors
import StorekeeperWire

/// What StoreKit needs from the server to apply an offer: a promotional offer's signatures (V1
/// and the V2 JWS) and the introductory-offer eligibility JWS, for the user the caller proved
/// (a client's user token, or the app's backend naming them). Only translation: `DecideOffers`
/// decides who may take what; nothing is signed for an offer the app did not configure.
struct OffersController {
    let context: ServerContext

    func register(on router: RouteTable) {
        let subscriber = router.callers("v1/subscribers/:appUserId/offers")
        subscriber.post("promotional") { request, ctx in
            try await promotional(request, ctx.caller, appUserId: try ctx.parameters.decoded("appUserId"))
        }
        subscriber.post("introductory") { request, ctx in
            try await introductory(request, ctx.caller, appUserId: try ctx.parameters.decoded("appUserId"))
        }
        subscriber.get("win-back") { request, ctx in try await winBack(request, ctx.caller, appUserId: try ctx.parameters.decoded("appUserId")) }
    }

    /// The win-back offers Apple would sell the user now. Nothing is signed: StoreKit takes a
    /// win-back offer by its id, and Apple decides again at purchase. A client still needs the
    /// user's token: which offers a user is shown says they lapsed.
    func winBack(_ request: Request, _ caller: Caller, appUserId: String) async throws -> Response {
        if case .client(_, nil) = caller {
            throw StorekeeperError(.userTokenRequired, "offers from the app need a user token in 'Storekeeper-User-Token'")
        }
        let user = try await context.identify(caller, appUserId)
        let app = caller.app
        let offers = try await context.useCases.offers.winBack(
            appId: app.id, appUserId: user, offers: app.offers, groups: app.subscriptionGroups, now: context.now())
        return try StorekeeperJSON.response(
            WinBackOffers(
                offers: offers.map {
                    WinBackOffer(
                        offerId: $0.offerId, productId: $0.productId, originalTransactionId: $0.originalTransactionId, configured: $0.configured)
                }))
    }

    /// Counts an offer signature for the user, or refuses it (429) past
    /// `offerSignaturesPerUserPerDay`, counted in the database for every process.
    private func countSignature(appId: String, user: String, now: Date) async throws {
        let key = "offers:\(appId):\(user)"
        let limit = AttemptLimit.offerSignatures(perDay: context.configuration.offerSignaturesPerUserPerDay)
        if let until = try await context.useCases.attempts.blockedUntil(key, limit: limit, now: now) {
            throw StorekeeperError.tooManyAttempts("this user was given as many offer signatures as a day allows", until: until, now: now)
        }
        try await context.useCases.attempts.record(key, limit: limit, now: now)
    }

    /// The user the caller acts for, and the app's offer signer. A client needs a user token:
    /// a signature lets whoever holds it buy at the offer's price.
    private func prepare(_ caller: Caller, appUserId: String) async throws -> (String, OfferSigner) {
        if case .client(_, nil) = caller {
            throw StorekeeperError(.userTokenRequired, "offers from the app need a user token in 'Storekeeper-User-Token'")
        }
        let user = try await context.identify(caller, appUserId)
        guard let signer = context.offerSigners[caller.app.id] else {
            throw StorekeeperError(.offerSigningNotConfigured, "app '\(caller.app.id)' has no In-App Purchase key to sign offers with")
        }
        return (user, signer)
    }

    func promotional(_ request: Request, _ caller: Caller, appUserId: String) async throws -> Response {
        let (user, signer) = try await prepare(caller, appUserId: appUserId)
        let data = try await context.body(request)
        try AdminInput.refuseFields(data, except: ["productId", "offerId"], note: nil)
        let body = try StorekeeperJSON.decode(PromotionalOfferRequest.self, from: data)
        let app = caller.app
        guard let offer = app.offers.first(where: { $0.productId == body.productId && $0.id == body.offerId }) else {
            throw StorekeeperError(.notFound, "no offer '\(body.offerId.prefix(64))' of product '\(body.productId.prefix(200))' is configured")
        }
        guard offer.kind == .promotional else {
            throw StorekeeperError(.offerNotEligible, "'\(offer.id)' is a win-back offer: Apple names who may take it (reason: win_back_offer)")
        }
        let now = context.now()
        let answer = try await context.useCases.offers.promotional(
            appId: app.id, appUserId: user, offer: offer, groups: app.subscriptionGroups, now: now)
        guard answer.decision.eligible else {
            throw StorekeeperError(.offerNotEligible, "the user may not take '\(offer.id)' (reason: \(answer.decision.reason))")
        }
        try await countSignature(appId: app.id, user: user, now: now)
        let token = AppAccountToken.derive(appUserId: user)
        let timestamp = Int64((now.timeIntervalSince1970 * 1000).rounded(.down))
        let v1 = try signer.promotionalV1(productId: offer.productId, offerId: offer.id, appAccountToken: token, nonce: UUID(), timestamp: timestamp)
        let jws = try await signer.promotionalV2(
            productId: offer.productId, offerId: offer.id, transactionId: answer.customerTransactionId, now: now, nonce: UUID())
        return try StorekeeperJSON.response(
            PromotionalOfferSignature(
                productId: offer.productId, offerId: offer.id, reason: answer.decision.reason, appAccountToken: token,
                v1: .init(keyIdentifier: v1.keyIdentifier, nonce: v1.nonce, timestamp: v1.timestamp, signature: v1.signature), jws: jws))
    }

    func introductory(_ request: Request, _ caller: Caller, appUserId: String) async throws -> Response {
        let (user, signer) = try await prepare(caller, appUserId: appUserId)
        let data = try await context.body(request)
        try AdminInput.refuseFields(data, except: ["productId"], note: nil)
        let body = try StorekeeperJSON.decode(IntroductoryOfferRequest.self, from: data)
        let app = caller.app
        guard
            let answer = try await context.useCases.offers.introductory(
                appId: app.id, appUserId: user, productId: body.productId, groups: app.subscriptionGroups)
        else { throw StorekeeperError(.notFound, "no auto-renewable product '\(body.productId.prefix(200))' in the catalog") }
        var jws: String?
        if let transactionId = answer.customerTransactionId {
            // Only a signature that allows the offer is worth hoarding; a refusal is not counted.
            if answer.decision.eligible { try await countSignature(appId: app.id, user: user, now: context.now()) }
            jws = try await signer.introductoryEligibility(
                productId: body.productId, allow: answer.decision.eligible, transactionId: transactionId, now: context.now(), nonce: UUID())
        }
        return try StorekeeperJSON.response(
            IntroductoryEligibility(productId: body.productId, eligible: answer.decision.eligible, reason: answer.decision.reason, jws: jws))
    }
}
