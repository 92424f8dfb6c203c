import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import StorekeeperDomain
import StorekeeperErrors
import StorekeeperWire

/// Who is calling an app route.
enum Caller: Sendable {
    /// The app's backend, with the app's secret key: any user.
    case backend(AppConfiguration)
    /// The app itself, with the publishable client key. `appUserId` is the user a user token
    /// named; nil when the app allows anonymous users and no token came.
    case client(AppConfiguration, appUserId: String?)

    var app: AppConfiguration {
        switch self {
        case .backend(let app), .client(let app, _): app
        }
    }
}

/// Admits client-key calls: the user token (when the app uses them), then the rate limits per
/// client key and per user.
struct ClientGate: Sendable {
    static let userTokenHeader = HTTPField.Name("Storekeeper-User-Token")!

    let verifiers: [String: UserTokenVerifier]
    /// By app id: the key that signs answers to its client calls.
    let signers: [String: ResponseSigner]
    let limiter = RateLimiter()

    init(apps: [AppConfiguration]) {
        var verifiers: [String: UserTokenVerifier] = [:]
        var signers: [String: ResponseSigner] = [:]
        for app in apps {
            if let policy = app.client?.userTokens { verifiers[app.id] = UserTokenVerifier(policy: policy, appId: app.id) }
            // Validated at start (`ClientAccess.problems`).
            if let first = app.client?.signingKeys.first, let signer = try? ResponseSigner(first) { signers[app.id] = signer }
        }
        self.verifiers = verifiers
        self.signers = signers
    }

    /// The order is the point: nothing a caller without a valid user token sends may spend a
    /// budget that real users share. The token is checked first; a failed or missing one is
    /// limited by the caller's address (`sourceRatePerSecond`), a verified user by their own
    /// bucket, and only then, for admitted calls, the client key's overload guard.
    func admit(_ app: AppConfiguration, request: Request, source: String?, now: Date) async throws -> Caller {
        guard let access = app.client else { throw StorekeeperError(.unauthorized, "unknown API key") }
        _ = try ResponseSigner.nonce(request)  // a malformed nonce is refused before any work
        // Failed calls and anonymous calls from one address have budgets of their own: a flood
        // of bad tokens never spends what anonymous users at the same address need.
        let address = source ?? "unknown"
        let failed = "failed:\(app.id):\(address)"
        let source = "anonymous:\(app.id):\(address)"
        let sourceBurst = max(10, 10 * access.sourceRatePerSecond)
        let token = request.headers[Self.userTokenHeader].flatMap { $0.isEmpty ? nil : $0 }
        var user: String?
        if let token, let verifier = verifiers[app.id] {
            do {
                user = try await verifier.user(from: token, now: now)
            } catch {
                try limit(failed, rate: access.sourceRatePerSecond, burst: sourceBurst, now: now, what: "failed calls from this address")
                // The verifier's own refusals say what is wrong; a JWT library's error would name
                // its Swift types, so any other failure is told in one sentence.
                let message =
                    (error as? UserTokenVerifier.Refusal)?.description
                    ?? "user token does not verify (malformed, or signed with another key or algorithm)"
                throw StorekeeperError(.invalidUserToken, message)
            }
        } else if verifiers[app.id] != nil, !access.allowAnonymous {
            try limit(failed, rate: access.sourceRatePerSecond, burst: sourceBurst, now: now, what: "failed calls from this address")
            throw StorekeeperError(.userTokenRequired, "send the user token from your backend in 'Storekeeper-User-Token'")
        }
        if let user {
            try limit(
                "user:\(app.id):\(user)", rate: access.userRatePerSecond, burst: max(10, 10 * access.userRatePerSecond), now: now,
                what: "this user")
        } else {
            // Anonymous: nobody proved who they are, so the address is what can be limited.
            try limit(source, rate: access.sourceRatePerSecond, burst: sourceBurst, now: now, what: "anonymous calls from this address")
        }
        try limit("key:\(app.id)", rate: access.keyRatePerSecond, burst: max(10, 2 * access.keyRatePerSecond), now: now, what: "this client key")
        return .client(app, appUserId: user)
    }

    private func limit(_ name: String, rate: Double, burst: Double, now: Date, what: String) throws {
        guard let wait = limiter.take(name, ratePerSecond: rate, burst: burst, now: now) else { return }
        let seconds = max(1, Int(wait.rounded(.up)))
        throw StorekeeperError(.rateLimited, "too many requests for \(what); retry in \(seconds) s", cause: RetryAfter(seconds: seconds))
    }
}
