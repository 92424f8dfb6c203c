import AppStoreCrypto
import AppStoreModels
import Crypto
import Foundation
import Hummingbird
import JobQueue
import NIOCore
import Persistence
import StorekeeperCore
import StorekeeperDomain
import StorekeeperErrors
import StorekeeperWire
import Tracing

/// Routes an app's backend calls, authenticated by the app's API key.
struct AppController {
    let context: ServerContext

    func register(on router: RouteTable) {
        let v1 = router.callers("v1")
        v1.get("products") { request, ctx in try await products(request, ctx.caller) }
        v1.post("receipts") { request, ctx in try await submitReceipt(request, ctx.caller) }
        v1.post("transactions") { request, ctx in try await submitSignedTransaction(request, ctx.caller) }
        v1.get("verifications/:id") { request, ctx in try await verification(request, ctx.caller, id: try ctx.parameters.decoded("id")) }
        v1.get("subscribers/:appUserId") { request, ctx in
            try await subscriber(request, ctx.caller, appUserId: try ctx.parameters.decoded("appUserId"))
        }
    }

    /// Server-mode step 1: the products the app may offer (Ready for Sale only).
    func products(_ request: Request, _ caller: Caller) async throws -> Response {
        let sellable = try await context.useCases.catalog.sellable(appId: caller.app.id)
        return try StorekeeperJSON.response(ProductList(products: sellable.map(CatalogProduct.init)))
    }

    struct ReceiptBody: Decodable {
        var appUserId: String
        var receipt: String
        /// Verify again even if this receipt was verified before (renewals, refunds).
        var refresh: Bool?
        /// Client hints (product id, transaction id…): stored for support, never trusted.
        var hints: [String: String]?
    }

    func submitReceipt(_ request: Request, _ caller: Caller) async throws -> Response {
        let app = caller.app
        // Every input is checked before anything is stored.
        let wait = try waitSeconds(request)
        let posted = try await context.body(request)
        let body = try StorekeeperJSON.decode(ReceiptBody.self, from: posted)
        let user = try await context.identify(caller, body.appUserId)
        if case .client(_, nil) = caller {
            // A receipt names no user: only a user token can say whose it is.
            throw StorekeeperError(.userTokenRequired, "receipts from the app need a user token in 'Storekeeper-User-Token'")
        }
        var submission = try receiptSubmission(body.receipt, app: app, appUserId: user)
        if let hints = body.hints,
            hints.count > 16 || hints.contains(where: { $0.key.unicodeScalars.count > 64 || $0.value.unicodeScalars.count > 256 })
        {
            throw StorekeeperError(.invalidRequest, "hints: at most 16 entries, keys ≤ 64 and values ≤ 256 characters")
        }
        submission.refresh = body.refresh ?? false
        submission.hints = body.hints ?? [:]
        let result = try await submit(submission)
        if result.created {
            context.metrics.increment(Metric.receiptsAcceptedTotal, labels: ["app": app.id])
        } else {
            context.metrics.increment(Metric.receiptsDeduplicatedTotal, labels: ["app": app.id])
        }
        var verification = result.verification
        if let wait {
            verification = try await context.waitForFinal(verification, seconds: wait)
        }
        let done = verification.state.isFinal || verification.state == .configurationError
        return try StorekeeperJSON.response(
            context.view(verification), status: done ? .ok : .accepted,
            headers: [.location: "/v1/verifications/\(verification.id)"])
    }

    /// The submission use case in a span of its own, named by the verification it made or found:
    /// the job that verifies it runs later, in its own trace, with the same id as its subject.
    private func submit(_ submission: EvidenceSubmission) async throws -> SubmissionResult {
        try await withSpan("submit evidence") { span in
            span.attributes["storekeeper.app"] = submission.appId
            let result = try await context.useCases.submitEvidence(submission, now: context.now())
            span.attributes["storekeeper.verification.id"] = result.verification.id
            span.attributes["storekeeper.verification.created"] = result.created
            return result
        }
    }

    /// StoreKit 2: verified locally at once (no Apple call), granted by a job with the same rules
    /// as receipts. Answers when granted (normally milliseconds), or 202 after `wait` seconds.
    func submitSignedTransaction(_ request: Request, _ caller: Caller) async throws -> Response {
        let app = caller.app
        let wait = try waitSeconds(request) ?? min(5, context.configuration.maxWaitSeconds)
        let posted = try await context.body(request)
        let body = try StorekeeperJSON.decode(SignedTransactionSubmission.self, from: posted)
        let user = try await context.identify(caller, body.appUserId)
        let ids = try await context.useCases.identity.ids(appId: app.id, appUserId: user)
        let submission = try await signedTransactionSubmission(body.signedTransaction, app: app, appUserId: user) { transaction in
            // A purchase made under any of the user's ids (an anonymous id linked to them) is theirs.
            try AppAccountToken.checkOwnership(
                carried: transaction.appAccountToken, appUserIds: ids, caller: caller, backendToken: body.appAccountToken)
        }
        let result = try await submit(submission)
        let verification = try await context.waitForFinal(result.verification, seconds: wait)
        let done = verification.state.isFinal || verification.state == .configurationError
        return try StorekeeperJSON.response(
            context.view(verification), status: done ? .ok : .accepted,
            headers: [.location: "/v1/verifications/\(verification.id)"])
    }

    /// A receipt as the server takes it from anyone (the app, its backend, an import): white
    /// space dropped, strict base64, admitted for the app (its claims read); the submission.
    func receiptSubmission(_ receipt: String, app: AppConfiguration, appUserId: String) throws -> EvidenceSubmission {
        let cleaned = Self.withoutWhitespace(receipt)
        guard !cleaned.isEmpty else { throw StorekeeperError(.invalidReceipt, "receipt is empty") }
        guard let bytes = AppReceiptParser.strictBase64(cleaned) else {
            throw StorekeeperError(.invalidReceipt, "receipt is not base64")
        }
        let admission = try context.receiptGate.admit(Array(bytes), bundleId: app.bundleId)
        return EvidenceSubmission(
            appId: app.id, appUserId: appUserId, evidenceHash: sha256Hex(bytes), evidence: .receipt(base64: cleaned), claims: admission.claims)
    }

    /// A signed transaction as the server takes it from anyone: verified for the app, then
    /// `owned` decides whether it may be this user's (an import's operator vouches for it);
    /// the submission, claiming its original transaction.
    func signedTransactionSubmission(
        _ signed: String, app: AppConfiguration, appUserId: String, owned: (SignedTransaction) throws -> Void
    ) async throws -> EvidenceSubmission {
        let jws = Self.withoutWhitespace(signed)
        guard !jws.isEmpty else { throw StorekeeperError(.invalidSignedTransaction, "signedTransaction is empty") }
        let verifier = GateSignedTransactions(gate: context.signedTransactionGate, app: app)
        switch try await AcceptSignedTransaction()(jws, appId: app.id, appUserId: appUserId, verifier: verifier, now: context.now(), owned: owned) {
        case .rejected(let reason, let message):
            context.metrics.increment(Metric.signedTransactionsRejectedTotal, labels: ["reason": reason.rawValue])
            throw StorekeeperError(.signedTransactionRejected, "\(reason.rawValue): \(message)")
        case .submission(let submission):
            return submission
        }
    }

    /// `?wait=S`, capped by `maxWaitSeconds`; nil when absent.
    func waitSeconds(_ request: Request) throws -> Double? {
        try QueryInput(request).wait(cap: context.configuration.maxWaitSeconds)
    }

    /// Base64 as apps send it may be wrapped in lines. Works on bytes: receipts are large and
    /// per-character Unicode checks dominated the ingest profile.
    static func withoutWhitespace(_ text: String) -> String {
        let isSpace: (UInt8) -> Bool = { $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }
        guard text.utf8.contains(where: isSpace) else { return text }
        return String(decoding: text.utf8.filter { !isSpace($0) }, as: UTF8.self)
    }

    func verification(_ request: Request, _ caller: Caller, id: String) async throws -> Response {
        guard let verification = try await context.useCases.verifications.verification(id: id, appId: caller.app.id) else {
            throw StorekeeperError(.notFound, "no verification '\(id)'")
        }
        _ = try await context.identify(caller, verification.appUserId)
        return try StorekeeperJSON.response(context.view(verification))
    }

    func subscriber(_ request: Request, _ caller: Caller, appUserId: String) async throws -> Response {
        let app = caller.app
        let user = try await context.identify(caller, appUserId)
        let view = try await context.useCases.readSubscriber(appId: app.id, appUserId: user, now: context.now())
        return try StorekeeperJSON.response(Subscriber(view))
    }
}
