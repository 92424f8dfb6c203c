import AppStoreCrypto
import AppStoreModels
import AsyncHTTPClient
import Foundation
import StorekeeperDomain
import SwiftASN1
import X509

/// Local verification of StoreKit 2 signed transactions for one server: Apple's roots plus the
/// configured extra roots (the simulator's under `serve --simulator`), Apple's marker OIDs as
/// configured, validity at the transaction's `signedDate`, the app's bundle id, and the sandbox
/// only when the app accepts it. Checked when posted and again by the job that grants.
struct SignedTransactionGate: Sendable {
    let verifier: SignedDataVerifier
    /// Revocation is checked online, so certificates are judged at now, not at `signedDate`.
    let online: Bool

    /// `httpClient` asks OCSP responders when `configuration.revocation` is on.
    init(configuration: ReceiptTrustConfiguration, httpClient: HTTPClient? = nil) throws {
        var roots: [Certificate] = configuration.appleRoots ? try ReceiptSignatureVerifier.appleRoots() : []
        for pem in configuration.extraRootsPEM { roots.append(try Certificate(pemEncoded: pem)) }
        let policy = configuration.revocation
        var revocation: SignedDataVerifier.RevocationCheck?
        if policy.mode != .off, let httpClient {
            revocation = SignedDataVerifier.RevocationCheck(
                failureMode: policy.mode == .hardFail ? .hard : .soft,
                requester: HTTPOCSPRequester(
                    httpClient: httpClient, responderOverride: policy.responderOverride, cacheSeconds: policy.cacheSeconds,
                    timeoutSeconds: policy.timeoutSeconds, hardFail: policy.mode == .hardFail),
                recheckSeconds: policy.cacheSeconds)
        }
        online = revocation != nil
        verifier = SignedDataVerifier(roots: roots, requireAppleMarkers: configuration.requireAppleMarkers, revocation: revocation)
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
        /// Readable but not to be granted; `code` is the first failure's stable code.
        case rejected(code: String, message: String)
    }

    /// Throws `StorekeeperError(.invalidSignedTransaction)` only for text that is not a JWS at all.
    /// A V2 notification (as stored by the notification endpoint) is checked through its nested
    /// signed transaction, with its renewal info.
    func check(_ jws: String, app: AppConfiguration, now: Date) async throws -> Outcome {
        try await check(jws, app: app, now: now, renewal: nil, acceptNotification: true)
    }

    private func check(
        _ jws: String, app: AppConfiguration, now: Date, renewal: SignedRenewalInfo?, acceptNotification: Bool
    ) async throws -> Outcome {
        let verdict: SignedDataVerdict
        do {
            verdict = try await verifier.verify(jws, expecting: .init(bundleId: app.bundleId), time: validationTime(now: now))
        } catch let error as SignedDataError {
            throw StorekeeperError(.invalidSignedTransaction, "not a signed transaction (\(error.code)): \(error.message)")
        }
        if let first = verdict.failures.first {
            return .rejected(code: first.code, message: verdict.failures.map(\.description).joined(separator: "; "))
        }
        guard acceptNotification,
            let notification = try? verdict.decode(NotificationPayload.self),
            notification.notificationType != nil
        else { return transactionOutcome(verdict, app: app, renewal: renewal) }
        guard let nested = notification.data?.signedTransactionInfo else {
            return .rejected(code: FailureReason.notificationWithoutTransaction.rawValue, message: "the notification carries no signed transaction")
        }
        var nestedRenewal: SignedRenewalInfo?
        if let signedRenewal = notification.data?.signedRenewalInfo {
            switch await renewalInfo(signedRenewal, now: now) {
            case .success(let renewal): nestedRenewal = renewal
            case .failure(let failure): return .rejected(code: failure.code, message: "renewal info: \(failure.code)")
            }
        }
        switch try await check(nested, app: app, now: now, renewal: nestedRenewal, acceptNotification: false) {
        case .verified(let transaction, var evidence, let environment, _):
            evidence.source = .notification
            return .verified(transaction, evidence: evidence, environment: environment, notification: notification)
        case .rejected(let code, let message):
            return .rejected(code: code, message: message)
        }
    }

    /// A signed renewal info (Server API subscription statuses), verified; nil with the failure code otherwise.
    func renewalInfo(_ jws: String, now: Date) async -> Result<SignedRenewalInfo, SignedDataFailureCode> {
        guard let verdict = try? await verifier.verify(jws, expecting: .init(), time: validationTime(now: now)) else {
            return .failure(SignedDataFailureCode(code: FailureReason.invalidRenewalInfo.rawValue))
        }
        if let first = verdict.failures.first { return .failure(SignedDataFailureCode(code: first.code)) }
        guard let renewal = try? verdict.decode(SignedRenewalInfo.self) else {
            return .failure(SignedDataFailureCode(code: FailureReason.invalidRenewalInfo.rawValue))
        }
        return .success(renewal)
    }

    private func transactionOutcome(_ verdict: SignedDataVerdict, app: AppConfiguration, renewal: SignedRenewalInfo?) -> Outcome {
        guard let transaction = try? verdict.decode(SignedTransaction.self) else {
            return .rejected(code: FailureReason.jwsNotATransaction.rawValue, message: "the signed payload is not a transaction")
        }
        let environment = transaction.environment ?? .production
        let evidence: PurchaseEvidence
        do {
            evidence = try PurchaseEvidence(
                signedTransactions: [transaction], renewals: renewal.map { [$0] } ?? [], environment: environment, source: .signedTransaction)
        } catch {
            return .rejected(code: FailureReason.jwsNotATransaction.rawValue, message: "the signed transaction lacks a required field: \(error)")
        }
        switch environment {
        case .production: break
        case .sandbox where app.acceptSandbox: break
        case .sandbox: return .rejected(code: FailureReason.sandboxNotAccepted.rawValue, message: "this app does not accept sandbox purchases")
        default:
            // Xcode and LocalTesting data never reach here signed by a trusted root; anything else is refused.
            return .rejected(code: FailureReason.jwsWrongEnvironment.rawValue, message: "environment \(environment.rawValue) is not granted")
        }
        return .verified(transaction, evidence: evidence, environment: environment, notification: nil)
    }
}

/// Why a piece of signed data was refused, as a stable code.
struct SignedDataFailureCode: Error, Hashable, Sendable {
    var code: String
}
