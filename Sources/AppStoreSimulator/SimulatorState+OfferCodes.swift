import Foundation

extension SimulatorState {
    /// A code App Store Connect generated for a subscription offer: a one-time code redeems
    /// once, for anyone; a custom code once per customer. Redeemed in StoreKit's offer code
    /// redemption sheet, it buys the product with the offer (offer type 3, the offer's reference
    /// name as `offerIdentifier`) and no app account token, which the sheet cannot pass.
    struct OfferCode: Sendable {
        var bundleId: String
        var productId: String
        var referenceName: String
        var discountType: String
        var period: String?
        var priceMicros: Int64?
        var oneTime: Bool
        var redeemedBy: Set<UUID> = []
    }

    /// Adds an offer code for an auto-renewable product of `bundleId`; a code already known is
    /// refused (409), whatever app it is for.
    func addOfferCode(_ code: String, _ offer: OfferCode) throws {
        let key = code.uppercased()
        guard !key.isEmpty, key.count <= 64, key.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" }) else {
            throw Failure(status: 400, code: "invalid_code", message: "an offer code is 1-64 letters, digits and dashes")
        }
        guard app(offer.bundleId)?.products.first(where: { $0.productId == offer.productId })?.kind == .autoRenewable else {
            throw Failure(status: 400, code: "offer_not_applicable", message: "offer codes here are for auto-renewable subscriptions")
        }
        guard offerCodes[key] == nil else { throw Failure(status: 409, code: "code_exists", message: "offer code \(key) exists") }
        offerCodes[key] = offer
    }

    /// The customer of `deviceId` redeems `code` in StoreKit's sheet: OFFER_REDEEMED
    /// (`INITIAL_BUY`). An unknown code, or one of another app, is `invalidOfferCode`; one already
    /// redeemed (by anyone for a one-time code, by this customer for a custom one),
    /// `offerCodeAlreadyRedeemed`: nothing is charged.
    func redeem(code: String, deviceId: UUID, now: Date) throws -> Transaction {
        let key = code.uppercased()
        guard let device = device(deviceId), var offer = offerCodes[key], offer.bundleId == device.bundleId else {
            throw Failure(status: 400, code: "invalidOfferCode", message: "no offer code \(code) for this app")
        }
        guard offer.oneTime ? offer.redeemedBy.isEmpty : !offer.redeemedBy.contains(deviceId) else {
            throw Failure(status: 409, code: "offerCodeAlreadyRedeemed", message: "offer code \(code) was redeemed")
        }
        let sold = Offer(
            type: 3, identifier: offer.referenceName, discountType: offer.discountType, period: offer.period, priceMicros: offer.priceMicros)
        let transaction = try purchase(deviceId: deviceId, productId: offer.productId, quantity: 1, now: now, offer: sold, redeemingCode: true)
        offer.redeemedBy.insert(deviceId)
        offerCodes[key] = offer
        return transaction
    }
}
