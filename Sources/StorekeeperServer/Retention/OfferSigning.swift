import AppStoreClient
import Foundation
import StorekeeperCore

/// `AnswerRetentionRequest`'s port for signing an offer: the app's `OfferSigner`, a fresh nonce each time.
struct OfferSigning: PromotionalOfferSigning {
    let signer: OfferSigner

    func promotionalV2(productId: String, offerId: String, transactionId: String, now: Date) async throws -> String {
        try await signer.promotionalV2(productId: productId, offerId: offerId, transactionId: transactionId, now: now, nonce: UUID())
    }
}
