import AppStoreModels
import Foundation
import Hummingbird
import StorekeeperCore
import StorekeeperDomain
import StorekeeperErrors
import StorekeeperWire

/// Apple's Retention Messaging calls this (the app's realtime URL, `POST /v1/retention/{app}`)
/// while a subscriber looks at cancelling, and shows what it answers. No key: the request is
/// the App Store's signed payload, which `AnswerRetentionRequest` verifies and holds to its
/// kind, the app, the moment and one answer per request. Only translation and the count.
struct RetentionController {
    let context: ServerContext
    let answer: AnswerRetentionRequest

    init(context: ServerContext) {
        self.context = context
        answer = AnswerRetentionRequest(payloads: GateSignedPayloads(gate: context.signedTransactionGate), choose: context.useCases.retention)
    }

    func register(on router: RouteTable) {
        router.group("v1/retention").post(":app") { request, ctx in try await realtime(request, appId: try ctx.parameters.decoded("app")) }
    }

    func realtime(_ request: Request, appId: String) async throws -> Response {
        let app = try context.app(id: appId)
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
        let signer = context.offerSigners[app.id].map(OfferSigning.init)
        let asked = AnswerRetentionRequest.App(
            id: app.id, trust: app.trust, choices: app.retentionMessages, offers: app.offers, groups: app.subscriptionGroups, signer: signer)
        switch try await answer(signed, app: asked, now: context.now()) {
        case .answered(let body, let kind):
            count(kind)
            return try StorekeeperJSON.response(body)
        case .refused(let code, let message):
            count("rejected")
            throw StorekeeperError(.retentionRequestRejected, "\(code): \(message)")
        case .unanswerable(let message):
            count("invalid")
            throw StorekeeperError(.invalidRequest, message)
        }
    }

    private func count(_ outcome: String) {
        context.metrics.increment(Metric.retentionRequestsTotal, labels: ["outcome": outcome])
    }
}
