import AppStoreCrypto
import Foundation
import StorekeeperDomain
import StorekeeperErrors
import StorekeeperWire
import SwiftASN1
import X509

/// The local checks every receipt passes before Apple sees it: it must parse (checked when it
/// is posted), belong to the app, and be signed by a trusted chain (checked by the worker, at
/// the receipt's creation date). A forged receipt is refused in microseconds, not after 3-6 s.
struct ReceiptGate: Sendable {
    let enabled: Bool
    let parser = AppReceiptParser()
    let verifier: ReceiptSignatureVerifier

    init(configuration: ReceiptTrustConfiguration) throws {
        var roots: [Certificate] = configuration.appleRoots ? try ReceiptSignatureVerifier.appleRoots() : []
        for pem in configuration.extraRootsPEM { roots.append(try Certificate(pemEncoded: pem)) }
        enabled = configuration.enabled
        verifier = ReceiptSignatureVerifier(roots: roots, requireAppleMarkers: configuration.requireAppleMarkers)
    }

    enum Admission {
        case parsed(AppReceipt)
        /// iOS 6 style transaction receipts (a plist, not PKCS#7): only Apple can check them.
        case legacy
        case disabled

        /// Original transaction ids the parsed receipt names: the submitting user's claims.
        /// The signature is checked later by the worker, so a claim only holds back another user
        /// while its verification may still succeed; a forged receipt's claim is void once refused.
        var claims: [String] {
            guard case .parsed(let receipt) = self else { return [] }
            return receipt.inAppPurchases.compactMap { $0.originalTransactionId ?? $0.transactionId }
        }
    }

    /// Checks made before anything is stored. Throws the API error to answer.
    func admit(_ bytes: [UInt8], bundleId: String) throws -> Admission {
        guard enabled else { return .disabled }
        do {
            let receipt = try parse(bytes)
            guard receipt.bundleId == bundleId else {
                throw StorekeeperError(
                    .receiptBundleMismatch, "the receipt is for '\(receipt.bundleId ?? "?")', not this app ('\(bundleId)')")
            }
            return .parsed(receipt)
        } catch let error as AppReceiptError {
            if bytes.first(where: { !$0.isWhitespaceByte }) == UInt8(ascii: "{") { return .legacy }
            throw StorekeeperError(.invalidReceipt, "not an app receipt (\(error.code)): \(error.message)")
        }
    }

    /// The one place a receipt is parsed: at acceptance, and again by the job from the stored
    /// bytes (the parse is microseconds; storing the parsed form would be a second copy of the
    /// evidence to keep in step with the bytes the signature covers).
    func parse(_ bytes: [UInt8]) throws -> AppReceipt {
        try parser.parse(bytes)
    }

    enum LocalCheck {
        /// Signature and chain hold: the receipt may go to Apple, and its contents can be trusted
        /// as far as a signed receipt goes (the outage policy relies on this).
        case verified(AppReceipt)
        case rejected(reason: FailureReason)
        /// Legacy receipts and disabled checks: only Apple can tell.
        case unchecked
    }

    /// The signature and chain, for the worker.
    func check(_ base64: String) async -> LocalCheck {
        guard enabled, let data = Data(base64Encoded: base64), let receipt = try? parse(Array(data)) else {
            return .unchecked
        }
        let verdict = await verifier.verify(Array(data), at: receipt.creationDate ?? Date())
        if case .invalid(let failures) = verdict {
            return .rejected(
                reason: failures.contains { if case .badSignature = $0 { true } else { false } }
                    ? .receiptSignatureInvalid : .receiptChainUntrusted)
        }
        return .verified(receipt)
    }
}

extension UInt8 {
    fileprivate var isWhitespaceByte: Bool { self == 0x20 || self == 0x0A || self == 0x0D || self == 0x09 }
}
