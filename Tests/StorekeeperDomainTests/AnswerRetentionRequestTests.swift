import AppStoreModels
import Foundation
import StorekeeperCore
import StorekeeperDomain
import Testing

/// Answering Apple's Retention Messaging request as a use case over fake ports: every refusal
/// before the app's choice is read, one answer per request, and the answer each kind of choice
/// gives. Through HTTP and the simulator in `RetentionTests`.
@Suite("AnswerRetentionRequest: Apple's realtime request, in process")
struct AnswerRetentionRequestTests {
    static let now = Date(timeIntervalSince1970: 1_767_225_600)  // 2026-01-01T00:00:00Z

    /// Treats the signed text as the payload's JSON, except the two failures a verifier reports.
    struct FakePayloads: AppleSignedPayloads {
        func check(_ signed: String, now: Date) async -> SignedPayloadCheck {
            switch signed {
            case "garbage": .malformed
            case "forged": .failed(code: "jws_signature_invalid", message: "not Apple's")
            default: .verified(Data(signed.utf8))
            }
        }
    }

    /// Answers with `choice`, counting how often the app's choices were read.
    final class FakeChoice: RetentionChoosing, @unchecked Sendable {
        var choice: RetentionChoice?
        var asked = 0
        init(_ choice: RetentionChoice?) { self.choice = choice }
        func callAsFunction(
            appId: String, originalTransactionId: String, productId: String, locale: String, choices: [RetentionChoice],
            offers: [OfferDefinition], groups: [String: [String]], now: Date
        ) async throws -> RetentionChoice? {
            asked += 1
            return choice
        }
    }

    struct FakeSigner: PromotionalOfferSigning {
        func promotionalV2(productId: String, offerId: String, transactionId: String, now: Date) async throws -> String {
            "jws(\(productId),\(offerId),\(transactionId))"
        }
    }

    let app = AnswerRetentionRequest.App(
        id: "demo", trust: AppTrust(bundleId: "com.example.app", appAppleId: 42, acceptsSandbox: true), choices: [],
        offers: [OfferDefinition(id: "half", productId: "monthly")], groups: [:], signer: FakeSigner())

    static func request(
        id: String? = UUID().uuidString, appAppleId: Int64? = 42, signedAt: Date = now, environment: AppStoreEnvironment = .production,
        original: String? = "1000"
    ) -> String {
        let body = DecodedRealtimeRequestBody(
            originalTransactionId: original, appAppleId: appAppleId, productId: "monthly", userLocale: "en_US", requestIdentifier: id,
            signedDate: AppleDate(signedAt), environment: environment)
        return String(decoding: try! JSONEncoder().encode(body), as: UTF8.self)
    }

    func code(_ outcome: AnswerRetentionRequest.Outcome) -> String {
        switch outcome {
        case .refused(let code, _): code
        case .unanswerable: "unanswerable"
        case .answered(_, let kind): kind
        }
    }

    @Test("refused before the app's choice is read: not a JWS, forged, unreadable, not a realtime request, another app, stale, replayed")
    func refusals() async throws {
        let choice = FakeChoice(nil)
        let answer = AnswerRetentionRequest(payloads: FakePayloads(), choose: choice)
        #expect(code(try await answer("garbage", app: app, now: Self.now)) == "jws_malformed")
        #expect(code(try await answer("forged", app: app, now: Self.now)) == "jws_signature_invalid")
        #expect(code(try await answer("[1]", app: app, now: Self.now)) == "jws_payload_unreadable")
        #expect(code(try await answer(Self.request(id: nil), app: app, now: Self.now)) == "jws_not_a_realtime_request")
        #expect(code(try await answer(Self.request(appAppleId: 7), app: app, now: Self.now)) != "default")
        #expect(code(try await answer(Self.request(signedAt: Self.now.addingTimeInterval(-301)), app: app, now: Self.now)) == "jws_stale")
        #expect(code(try await answer(Self.request(signedAt: Self.now.addingTimeInterval(61)), app: app, now: Self.now)) == "jws_stale")
        #expect(choice.asked == 0)

        let once = Self.request()
        #expect(code(try await answer(once, app: app, now: Self.now)) == "default")
        #expect(code(try await answer(once, app: app, now: Self.now.addingTimeInterval(1))) == "jws_replayed")
        #expect(code(try await answer(Self.request(original: nil), app: app, now: Self.now)) == "unanswerable")
        #expect(choice.asked == 1)
    }

    @Test("the answer follows the choice: a switch of plan, an offer signed for this subscription, its message without a key")
    func answers() async throws {
        func answered(_ choice: RetentionChoice?, signer: Bool = true) async throws -> (String, RealtimeResponseBody?) {
            var app = app
            if !signer { app.signer = nil }
            let outcome = try await AnswerRetentionRequest(payloads: FakePayloads(), choose: FakeChoice(choice))(
                Self.request(), app: app, now: Self.now)
            if case .answered(let body, let kind) = outcome { return (kind, body) }
            return (code(outcome), nil)
        }
        let (switchKind, switched) = try await answered(RetentionChoice(messageId: "m1", switchToProductId: "yearly"))
        #expect(switchKind == "switch_plan" && switched?.alternateProduct?.productId == "yearly")
        let (offerKind, offered) = try await answered(RetentionChoice(messageId: "m2", offerId: "half"))
        #expect(offerKind == "promotional_offer" && offered?.promotionalOffer?.promotionalOfferSignatureV2 == "jws(monthly,half,1000)")
        let (unsignedKind, unsigned) = try await answered(RetentionChoice(messageId: "m2", offerId: "half"), signer: false)
        #expect(unsignedKind == "message" && unsigned?.message?.messageIdentifier == "m2")
    }
}
