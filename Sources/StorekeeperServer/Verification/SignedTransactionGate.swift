import AppStoreCrypto
import AppStoreModels
import AsyncHTTPClient
import Foundation
import StorekeeperDomain
import StorekeeperErrors
import StorekeeperWire
import SwiftASN1
import X509

/// Local verification of StoreKit 2 signed transactions for one server: Apple's roots plus the
/// configured extra roots (the simulator's under `serve --simulator`), Apple's marker OIDs as
/// configured, validity at the transaction's `signedDate`, the app's bundle id, and the sandbox
/// only when the app accepts it. Signatures are checked once, when the data arrives (posted by
/// the app, sent by Apple, fetched from the Server API); the job that grants what was stored
/// rereads it (`Signatures.verifiedAtAcceptance`), checking the claims against the app's
/// settings again but not the signatures: nothing is stored as evidence that did not verify.
struct SignedTransactionGate: Sendable {
    let verifier: SignedDataVerifier
    /// Revocation is checked online, so certificates are judged at now, not at `signedDate`.
    let online: Bool

    /// `httpClient` asks OCSP responders when `configuration.revocation` is on; `health` stops
    /// asking while the responder is down.
    init(
        configuration: ReceiptTrustConfiguration, httpClient: HTTPClient? = nil, health: AppleHealthMonitor? = nil,
        calls: AppleCallRecorder? = nil, now: @escaping @Sendable () -> Date = { Date() }
    ) throws {
        var roots: [Certificate] = configuration.appleRoots ? try ReceiptSignatureVerifier.appleRoots() : []
        for pem in configuration.extraRootsPEM { roots.append(try Certificate(pemEncoded: pem)) }
        let policy = configuration.revocation
        var revocation: SignedDataVerifier.RevocationCheck?
        if policy.mode != .off, let httpClient {
            revocation = SignedDataVerifier.RevocationCheck(
                failureMode: policy.mode == .hardFail ? .hard : .soft,
                requester: HTTPOCSPRequester(
                    httpClient: httpClient, responderOverride: policy.responderOverride, cacheSeconds: policy.cacheSeconds,
                    timeoutSeconds: policy.timeoutSeconds, hardFail: policy.mode == .hardFail, health: health, calls: calls, now: now),
                recheckSeconds: policy.cacheSeconds)
        }
        online = revocation != nil
        verifier = SignedDataVerifier(roots: roots, requireAppleMarkers: configuration.requireAppleMarkers, revocation: revocation)
    }

    /// Whether signatures are checked (data as it arrives) or were checked when the data was
    /// accepted and stored (the grant job's reread).
    enum Signatures: Sendable {
        case verify
        case verifiedAtAcceptance
    }

    /// Verifies `jws` or, when it was verified at acceptance, rereads it.
    private func verdict(
        _ jws: String, expecting expectations: SignedDataVerifier.Expectations, now: Date, signatures: Signatures
    ) async throws -> SignedDataVerdict {
        switch signatures {
        case .verify: try await verifier.verify(jws, expecting: expectations, time: validationTime(now: now))
        case .verifiedAtAcceptance: try verifier.reread(jws, expecting: expectations, now: now)
        }
    }

    /// When certificates must have been valid: at `signedDate` (Apple's offline rule), or now
    /// when revocation is checked online.
    func validationTime(now: Date) -> SignedDataVerifier.ValidationTime {
        online ? .at(now) : .signedDate(fallback: now)
    }

    enum Outcome: Sendable {
        /// `notification`: the verified V2 notification that carried the transaction, if any
        /// (its type and `signedDate` order refunds against their reversals).
        case verified(
            SignedTransaction, evidence: PurchaseEvidence, environment: AppStoreEnvironment, notification: NotificationPayload?)
        /// Readable but not to be granted; `reason` is the first failure's stable code.
        case rejected(reason: FailureReason, message: String)
    }

    /// Throws `StorekeeperError(.invalidSignedTransaction)` only for text that is not a JWS at all.
    /// A V2 notification (as stored by the notification endpoint) goes through `notification(_:apps:now:)`,
    /// the same function the notification endpoint uses.
    func check(_ jws: String, app: AppConfiguration, now: Date, signatures: Signatures = .verify) async throws -> Outcome {
        let verdict: SignedDataVerdict
        do {
            verdict = try await self.verdict(jws, expecting: .init(), now: now, signatures: signatures)
        } catch let error as SignedDataError {
            throw StorekeeperError(.invalidSignedTransaction, "not a signed transaction (\(error.code)): \(error.message)")
        }
        if let first = verdict.failures.first {
            return .rejected(reason: FailureReason(rawValue: first.code), message: verdict.failures.map(\.description).joined(separator: "; "))
        }
        guard let payload = Self.notificationPayload(verdict) else { return transactionOutcome(verdict, app: app, renewal: nil) }
        switch await notification(payload, apps: [app], now: now, signatures: signatures) {
        case .unknownApp(let bundleId):
            return .rejected(reason: .jwsWrongBundleId, message: "the notification is for '\(bundleId ?? "?")'")
        case .refused(let refusal):
            return .rejected(reason: refusal.reason, message: "the notification: \(refusal.message)")
        case .verified(let verified):
            switch verified.transaction {
            case nil:
                return .rejected(reason: .notificationWithoutTransaction, message: "the notification carries no signed transaction")
            case .rejected(let reason, let message)?:
                return .rejected(reason: reason, message: message)
            case .verified(let transaction, var evidence, let environment, _)?:
                evidence.source = .notification
                return .verified(transaction, evidence: evidence, environment: environment, notification: payload)
            }
        }
    }

    /// StoreKit's `AppTransaction.shared` as the app posts it: Apple's signature and chain, this
    /// app's bundle id (and Apple id in production), an environment the app accepts, and a payload
    /// that is an app transaction (a signed transaction or renewal info is refused).
    func appTransaction(_ jws: String, app: AppConfiguration, now: Date) async throws -> (SignedAppTransaction, AppStoreEnvironment) {
        let verdict: SignedDataVerdict
        do {
            verdict = try await verifier.verify(jws, expecting: .init(), time: validationTime(now: now))
        } catch let error as SignedDataError {
            throw StorekeeperError(.invalidAppTransaction, "not a signed app transaction (\(error.code)): \(error.message)")
        }
        guard verdict.failures.isEmpty else {
            throw StorekeeperError(.appTransactionRejected, verdict.failures.map(\.description).joined(separator: "; "))
        }
        guard let payload = try? verdict.decode(SignedAppTransaction.self), let environment = payload.receiptType,
            payload.appTransactionId?.isEmpty == false, payload.signedAt != nil
        else {
            throw StorekeeperError(
                .appTransactionRejected, "the signed payload is not an app transaction (receiptType, appTransactionId, receiptCreationDate)")
        }
        let claims = AppTrust.Claims(
            kind: .appTransaction, bundleId: payload.bundleId, appAppleId: payload.appAppleId, environment: environment)
        if let refusal = app.trust.refusal(of: claims) {
            throw StorekeeperError(.appTransactionRejected, "\(refusal.reason.rawValue): \(refusal.message)")
        }
        return (payload, environment)
    }

    /// Apple's signed data of `kind` (an answer of the Server API, the app transaction a
    /// notification carries), believed for `app` or refused: the signature and chain, then
    /// `AppTrust.refusal(of:)` on whose data the payload says it is.
    func trusted(
        _ jws: String, kind: AppTrust.Kind, app: AppConfiguration, expectedEnvironment: AppStoreEnvironment?, now: Date
    ) async -> Result<SignedDataVerdict, AppTrust.Refusal> {
        let verdict: SignedDataVerdict
        do {
            verdict = try await verifier.verify(jws, expecting: .init(), time: validationTime(now: now))
        } catch {
            return .failure(AppTrust.Refusal(.invalidSignedTransaction, "not a compact JWS: \(error)"))
        }
        if let first = verdict.failures.first {
            return .failure(AppTrust.Refusal(FailureReason(rawValue: first.code), verdict.failures.map(\.description).joined(separator: "; ")))
        }
        let identity = (try? verdict.decode(ClaimedIdentity.self)) ?? ClaimedIdentity()
        let claims = AppTrust.Claims(
            kind: kind, bundleId: identity.bundleId, appAppleId: identity.appAppleId, environment: identity.environment ?? identity.receiptType,
            expectedEnvironment: expectedEnvironment)
        if let refusal = app.trust.refusal(of: claims) { return .failure(refusal) }
        return .success(verdict)
    }

    /// Whose data a payload says it is, whatever its kind (an app transaction names its
    /// environment `receiptType`).
    private struct ClaimedIdentity: Decodable {
        var bundleId: String?
        var appAppleId: Int64?
        var environment: AppStoreEnvironment?
        var receiptType: AppStoreEnvironment?
    }

    /// A notification whose outer signature verified, with what it carries verified too.
    struct VerifiedNotification: Sendable {
        var payload: NotificationPayload
        var app: AppConfiguration
        /// The nested signed transaction (with the nested renewal info), verified for `app`; nil
        /// when the notification carries none (e.g. TEST).
        var transaction: Outcome?
    }

    enum NotificationVerdict: Sendable {
        case verified(VerifiedNotification)
        /// No app in the list has the notification's bundle id.
        case unknownApp(bundleId: String?)
        /// The app's trust rule refuses the notification (another Apple id, or none in production).
        case refused(AppTrust.Refusal)
    }

    /// The one notification verifier, used by the notification endpoint (and its gap-fill) and by
    /// the grant job: `payload` comes from an outer JWS already verified; the app is found by its
    /// bundle id, and the nested renewal info and transaction are verified for it.
    func notification(
        _ payload: NotificationPayload, apps: [AppConfiguration], now: Date, signatures: Signatures = .verify
    ) async -> NotificationVerdict {
        guard let app = apps.first(where: { $0.bundleId == payload.bundleId }) else { return .unknownApp(bundleId: payload.bundleId) }
        let claims = AppTrust.Claims(
            kind: .notification, bundleId: payload.bundleId, appAppleId: payload.appAppleId, environment: payload.environment)
        if let refusal = app.trust.refusal(of: claims) { return .refused(refusal) }
        guard let nested = payload.data?.signedTransactionInfo else {
            return .verified(VerifiedNotification(payload: payload, app: app, transaction: nil))
        }
        var renewal: SignedRenewalInfo?
        if let signedRenewal = payload.data?.signedRenewalInfo {
            switch await renewalInfo(signedRenewal, now: now, signatures: signatures) {
            case .success(let verified): renewal = verified
            case .failure(let failure):
                let rejected = Outcome.rejected(reason: FailureReason(rawValue: failure.code), message: "renewal info: \(failure.code)")
                return .verified(VerifiedNotification(payload: payload, app: app, transaction: rejected))
            }
        }
        let outcome: Outcome
        do {
            // The transaction must be of the environment the notification claims (Apple never
            // mixes them): a production notification cannot carry a sandbox purchase into the
            // production ledger.
            let verdict = try await self.verdict(nested, expecting: .init(), now: now, signatures: signatures)
            if let first = verdict.failures.first {
                outcome = .rejected(reason: FailureReason(rawValue: first.code), message: verdict.failures.map(\.description).joined(separator: "; "))
            } else {
                outcome = transactionOutcome(verdict, app: app, renewal: renewal, expectedEnvironment: payload.environment)
            }
        } catch {
            outcome = .rejected(reason: .jwsNotATransaction, message: "the nested transaction is not a JWS: \(error)")
        }
        return .verified(VerifiedNotification(payload: payload, app: app, transaction: outcome))
    }

    /// The verified payload as a V2 notification, when it is one.
    static func notificationPayload(_ verdict: SignedDataVerdict) -> NotificationPayload? {
        guard let payload = try? verdict.decode(NotificationPayload.self), payload.notificationType != nil else { return nil }
        return payload
    }

    /// A signed renewal info (Server API subscription statuses), verified; nil with the failure code otherwise.
    func renewalInfo(_ jws: String, now: Date, signatures: Signatures = .verify) async -> Result<SignedRenewalInfo, SignedDataFailureCode> {
        guard let verdict = try? await self.verdict(jws, expecting: .init(), now: now, signatures: signatures) else {
            return .failure(SignedDataFailureCode(code: FailureReason.invalidRenewalInfo.rawValue))
        }
        if let first = verdict.failures.first { return .failure(SignedDataFailureCode(code: first.code)) }
        guard let renewal = try? verdict.decode(SignedRenewalInfo.self) else {
            return .failure(SignedDataFailureCode(code: FailureReason.invalidRenewalInfo.rawValue))
        }
        return .success(renewal)
    }

    /// `expectedEnvironment`: the notification's, when one carried the transaction (Apple never
    /// mixes them, so a production notification cannot carry a sandbox purchase into the
    /// production ledger).
    private func transactionOutcome(
        _ verdict: SignedDataVerdict, app: AppConfiguration, renewal: SignedRenewalInfo?, expectedEnvironment: AppStoreEnvironment? = nil
    ) -> Outcome {
        guard let transaction = try? verdict.decode(SignedTransaction.self) else {
            return .rejected(reason: .jwsNotATransaction, message: "the signed payload is not a transaction")
        }
        let environment = transaction.environment ?? .production
        let claims = AppTrust.Claims(
            kind: .transaction, bundleId: transaction.bundleId, environment: environment, expectedEnvironment: expectedEnvironment)
        if let refusal = app.trust.refusal(of: claims) { return .rejected(reason: refusal.reason, message: refusal.message) }
        let evidence: PurchaseEvidence
        do {
            evidence = try PurchaseEvidence(
                signedTransactions: [transaction], renewals: renewal.map { [$0] } ?? [], environment: environment, source: .signedTransaction)
        } catch {
            return .rejected(reason: .jwsNotATransaction, message: "the signed transaction lacks a required field: \(error)")
        }
        return .verified(transaction, evidence: evidence, environment: environment, notification: nil)
    }
}

/// Why a piece of signed data was refused, as a stable code.
struct SignedDataFailureCode: Error, Hashable, Sendable {
    var code: String
}
