public import AppStoreModels

/// What Apple's signed data must claim before this server believes it for one app. A valid
/// signature proves only that Apple signed it, for some app in some environment: a transaction of
/// another app, a sandbox purchase sent to a production-only app, or a retention request meant
/// for another app's server is signed just as well. Every place that believes Apple's signed data
/// (a posted transaction or app transaction, a notification and what it carries, a retention
/// request, an answer to an operator's Apple action) asks `refusal(of:)`, so the rule is written
/// once.
public struct AppTrust: Sendable, Hashable {
    public var bundleId: String
    /// The app's Apple id, when configured (production data names it).
    public var appAppleId: Int64?
    public var acceptsSandbox: Bool

    public init(bundleId: String, appAppleId: Int64?, acceptsSandbox: Bool) {
        self.bundleId = bundleId
        self.appAppleId = appAppleId
        self.acceptsSandbox = acceptsSandbox
    }

    /// Which of Apple's payloads: each names the app differently.
    public enum Kind: Sendable, Hashable {
        /// A signed transaction: a bundle id, an environment, no Apple id.
        case transaction
        /// A signed app transaction: a bundle id, `receiptType` as environment, an Apple id in production.
        case appTransaction
        /// A V2 notification: a bundle id and an Apple id in production; its environment is judged
        /// on the transaction it carries (Apple's TEST notification carries none).
        case notification
        /// A Retention Messaging request: an Apple id and an environment, no bundle id.
        case retentionRequest
    }

    /// What a verified payload says about whose it is.
    public struct Claims: Sendable, Hashable {
        public var kind: Kind
        public var bundleId: String?
        public var appAppleId: Int64?
        public var environment: AppStoreEnvironment?
        /// The environment the data must be of, when the context fixes one: the environment of
        /// the notification that carries a transaction, or of the Apple endpoint that answered.
        public var expectedEnvironment: AppStoreEnvironment?

        public init(
            kind: Kind, bundleId: String?, appAppleId: Int64? = nil, environment: AppStoreEnvironment?,
            expectedEnvironment: AppStoreEnvironment? = nil
        ) {
            self.kind = kind
            self.bundleId = bundleId
            self.appAppleId = appAppleId
            self.environment = environment
            self.expectedEnvironment = expectedEnvironment
        }
    }

    /// Why data is not believed for this app: a stable code and a sentence.
    public struct Refusal: Error, Sendable, Hashable {
        public var reason: FailureReason
        public var message: String

        public init(_ reason: FailureReason, _ message: String) {
            self.reason = reason
            self.message = message
        }
    }

    /// Nil when `claims` are this app's in an environment it accepts; otherwise the first reason not to believe them.
    /// - The payload must name this app: by bundle id where its kind carries one; a retention
    ///   request carries none, so in production it is believed only with a configured Apple id
    ///   that it names.
    /// - An Apple id, where the kind carries one, must be the configured one: in production it
    ///   must be present; in the sandbox (where Apple may leave it out) one named must match.
    /// - Production is accepted; the sandbox only when the app accepts it; any other environment
    ///   (Xcode, local testing) never. A fixed context environment must be matched exactly.
    public func refusal(of claims: Claims) -> Refusal? {
        if claims.kind != .retentionRequest, claims.bundleId != bundleId {
            return Refusal(.jwsWrongBundleId, "bundle id \(claims.bundleId ?? "(none)"), expected \(bundleId)")
        }
        if let expected = claims.expectedEnvironment, claims.environment != expected {
            return Refusal(
                .jwsWrongEnvironment, "environment \(claims.environment?.rawValue ?? "(none)"), expected \(expected.rawValue)")
        }
        if claims.kind != .notification {
            switch claims.environment {
            case .production?: break
            case .sandbox? where acceptsSandbox: break
            case .sandbox?: return Refusal(.sandboxNotAccepted, "this app does not accept the sandbox")
            default:
                return Refusal(.jwsWrongEnvironment, "environment \(claims.environment?.rawValue ?? "(none)") is never believed")
            }
        }
        guard claims.kind != .transaction else { return nil }
        let production = claims.environment == .production
        switch (appAppleId, claims.appAppleId) {
        case (let expected?, let named?) where named != expected:
            return Refusal(.jwsWrongAppAppleId, "the data names app \(named), not \(expected)")
        case (let expected?, nil) where production:
            return Refusal(.jwsWrongAppAppleId, "production data names no app Apple id, expected \(expected)")
        case (nil, _) where production && claims.kind == .retentionRequest:
            return Refusal(.jwsWrongAppAppleId, "no app Apple id is configured, so a production request cannot be tied to this app")
        default: return nil
        }
    }
}
