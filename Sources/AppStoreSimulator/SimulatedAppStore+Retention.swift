import AppStoreModels
import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1

/// What the simulator saw when it asked an app's Get Retention Message endpoint, as Apple would.
struct RetentionExchange: Codable, Sendable {
    var requestIdentifier: String
    /// The request as signed and posted (`{"signedPayload": …}`'s value).
    var signedPayload: String
    /// The endpoint's HTTP status; nil when it did not answer.
    var status: Int?
    var elapsedMilliseconds: Int
    /// `message`, `alternateProduct`, `promotionalOffer`, or `default` (Apple shows the app's default message).
    var kind: String
    var answer: RealtimeResponseBody?
    /// What Apple would refuse in the answer (empty: it is shown as is).
    var problems: [String]
    /// The promotional offer applied to the next renewal, when the answer carried one.
    var offerAppliedToNextRenewal: String?
}

extension SimulatedAppStore {
    /// An answer slower than this is a failure (an app's `retentionTimeoutSeconds` sets another),
    /// as Apple shows its default message when the developer's server is slow.
    static let retentionTimeout: TimeAmount = .seconds(2)

    /// A subscriber of `originalTransactionId` views their subscription and may cancel: Apple
    /// signs a realtime request, posts it to the app's realtime URL, checks the answer's shape
    /// (one kind, message UUIDs, a product to switch to, the offer's V2 signature as a purchase's
    /// is checked), and the customer takes an offer it carried: the next renewal is sold with it.
    func askRetention(originalTransactionId: String, locale: String, now: Date) async throws -> RetentionExchange {
        let (app, _, device) = try await state.retentionSubject(originalTransactionId)
        guard let url = retention.realtimeURL(app, device.environment) else {
            throw SimulatorState.Failure(
                status: 409, code: "no_realtime_url", message: "app \(app.bundleId) has no realtime URL (PUT /sim/retention/url)")
        }
        let (signed, requestIdentifier) = try await signedRealtimeRequest(originalTransactionId: originalTransactionId, locale: locale, now: now)
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.body = .bytes(ByteBuffer(bytes: try JSONEncoder().encode(RealtimeRequestBody(signedPayload: signed))))
        let timeout = app.retentionTimeoutSeconds.map { TimeAmount.milliseconds(Int64($0 * 1000)) } ?? Self.retentionTimeout
        let started = ContinuousClock.now
        var exchange = RetentionExchange(
            requestIdentifier: requestIdentifier, signedPayload: signed, status: nil, elapsedMilliseconds: 0, kind: "default", answer: nil,
            problems: [])
        do {
            let response = try await HTTPClient.shared.execute(request, timeout: timeout)
            let body = try await response.body.collect(upTo: 64 * 1024)
            exchange.status = Int(response.status.code)
            exchange.elapsedMilliseconds = Self.milliseconds(since: started)
            guard response.status == .ok else {
                exchange.problems.append("HTTP \(response.status.code): Apple shows the default message")
                return exchange
            }
            guard let answer = try? JSONDecoder().decode(RealtimeResponseBody.self, from: Data(body.readableBytesView)) else {
                exchange.problems.append("the answer is not a RealtimeResponseBody")
                return exchange
            }
            exchange.answer = answer
            try await judge(&exchange, answer: answer, app: app, originalTransactionId: originalTransactionId, now: now)
        } catch {
            exchange.elapsedMilliseconds = Self.milliseconds(since: started)
            exchange.problems.append("no answer within \(timeout.nanoseconds / 1_000_000) ms: \(error)")
        }
        return exchange
    }

    private func judge(
        _ exchange: inout RetentionExchange, answer: RealtimeResponseBody, app: SimulatedApp, originalTransactionId: String, now: Date
    ) async throws {
        let kinds = [answer.message != nil, answer.alternateProduct != nil, answer.promotionalOffer != nil].filter { $0 }.count
        guard kinds <= 1 else {
            exchange.problems.append("message, alternateProduct and promotionalOffer are mutually exclusive")
            return
        }
        if let message = answer.message {
            exchange.kind = "message"
            if UUID(uuidString: message.messageIdentifier) == nil { exchange.problems.append("messageIdentifier is not a UUID") }
        } else if let alternate = answer.alternateProduct {
            exchange.kind = "alternateProduct"
            if UUID(uuidString: alternate.messageIdentifier) == nil { exchange.problems.append("messageIdentifier is not a UUID") }
            if !app.products.contains(where: { $0.productId == alternate.productId && $0.kind == .autoRenewable }) {
                exchange.problems.append("productId \(alternate.productId) is not a subscription of the app")
            }
        } else if let offer = answer.promotionalOffer {
            exchange.kind = "promotionalOffer"
            if UUID(uuidString: offer.messageIdentifier) == nil { exchange.problems.append("messageIdentifier is not a UUID") }
            do {
                let taken = try await state.acceptRetentionOffer(
                    originalTransactionId: originalTransactionId, jws: offer.promotionalOfferSignatureV2, now: now)
                exchange.offerAppliedToNextRenewal = taken.id
            } catch let failure as SimulatorState.Failure {
                exchange.problems.append("promotionalOfferSignatureV2: \(failure.code): \(failure.message)")
            }
        }
    }

    /// The realtime request Apple posts for a subscriber of `originalTransactionId`, signed as
    /// the App Store signs it, with a fresh request identifier.
    func signedRealtimeRequest(originalTransactionId: String, locale: String, now: Date) async throws -> (signed: String, requestIdentifier: String) {
        let (app, subscription, device) = try await state.retentionSubject(originalTransactionId)
        let requestIdentifier = UUID().uuidString.lowercased()
        var payload: [String: Any] = [
            "originalTransactionId": originalTransactionId, "productId": subscription.productId, "userLocale": locale,
            "requestIdentifier": requestIdentifier, "signedDate": Int64((now.timeIntervalSince1970 * 1000).rounded()),
            "environment": device.environment == .production ? "Production" : "Sandbox",
        ]
        if let appAppleId = app.appAppleId { payload["appAppleId"] = appAppleId }
        let signed = try pki.signJWS(payload: Array(try JSONSerialization.data(withJSONObject: payload, options: [.sortedKeys])))
        return (signed, requestIdentifier)
    }

    static func milliseconds(since start: ContinuousClock.Instant) -> Int {
        let elapsed = ContinuousClock.now - start
        return Int(elapsed.components.seconds * 1_000 + elapsed.components.attoseconds / 1_000_000_000_000_000)
    }
}
