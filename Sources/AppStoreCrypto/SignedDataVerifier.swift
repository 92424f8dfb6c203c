import AppStoreModels
import Crypto
public import Foundation
import StorekeeperWire
import SwiftASN1
import Synchronization
@_spi(FixedExpiryValidationTime) public import X509

/// Verifies Apple's signed data (JWS compact, ES256, `x5c` chain) with no I/O: the signature
/// with the leaf's key, the chain against configured roots only (the root inside `x5c` is never
/// trusted by itself) with Apple's marker OIDs on leaf and intermediate, validity at
/// `signedDate` (offline) or at a given instant (online), and the app's bundle id, Apple id and
/// environment. A chain cache makes a steady stream cost one P-256 verification per item.
public struct SignedDataVerifier: Sendable {
    /// What the payload must say. Nil members are not checked.
    public struct Expectations: Sendable, Hashable {
        public var bundleId: String?
        /// Checked where the payload carries one (notifications, app transactions).
        public var appAppleId: Int64?
        /// Apple's spelling: "Production", "Sandbox".
        public var environment: String?

        public init(bundleId: String? = nil, appAppleId: Int64? = nil, environment: String? = nil) {
            self.bundleId = bundleId
            self.appAppleId = appAppleId
            self.environment = environment
        }
    }

    public enum ValidationTime: Sendable, Hashable {
        /// At the payload's `signedDate`, or at `fallback` when it has none (Apple's offline mode).
        case signedDate(fallback: Date)
        /// At this instant (online mode: now).
        case at(Date)
    }

    /// Online revocation checking (OCSP) of the leaf and intermediate, through a requester the
    /// caller provides (the verifier does no I/O itself).
    public struct RevocationCheck: Sendable {
        /// `.hard`: no answer from the responder refuses the data; `.soft`: only a `revoked`
        /// answer does.
        public var failureMode: OCSPFailureMode
        public var requester: any OCSPRequester
        /// A chain that passed is trusted this long before its status is asked again.
        public var recheckSeconds: TimeInterval

        public init(failureMode: OCSPFailureMode, requester: any OCSPRequester, recheckSeconds: TimeInterval = 3600) {
            self.failureMode = failureMode
            self.requester = requester
            self.recheckSeconds = recheckSeconds
        }
    }

    /// swift-certificates' policy is generic over a concrete requester.
    struct AnyRequester: OCSPRequester {
        let base: any OCSPRequester
        func query(request: [UInt8], uri: String) async -> OCSPRequesterQueryResult { await base.query(request: request, uri: uri) }
    }

    public let roots: [Certificate]
    public let chainCache: VerifiedChainCache?
    public let requireAppleMarkers: Bool
    public let revocation: RevocationCheck?
    /// Decoded headers with their leaf key and chain key, by header segment; used with the
    /// chain cache so a steady stream skips header decoding and certificate parsing.
    private let headers: HeaderCache?

    public init(
        roots: [Certificate], requireAppleMarkers: Bool = true, chainCache: VerifiedChainCache? = VerifiedChainCache(),
        revocation: RevocationCheck? = nil
    ) {
        self.roots = roots
        self.requireAppleMarkers = requireAppleMarkers
        self.chainCache = chainCache
        self.revocation = revocation
        headers = chainCache == nil ? nil : HeaderCache()
    }

    /// Reads and verifies `text`. Throws only when it is not a readable compact JWS.
    public func verify(_ text: String, expecting expectations: Expectations, time: ValidationTime) async throws -> SignedDataVerdict {
        var known: HeaderCache.Entry?
        let jws = try CompactJWS(
            text,
            knownHeader: { segment in
                known = headers?.entry(for: segment)
                return known?.header
            })
        // The payload is read once; the claims here and the caller's typed decode share it.
        let json = try? JSONValue.parse(jws.payload)
        let claims = json.flatMap(Claims.init(json:))
        let signedDate = claims?.signedDate.map { Date(timeIntervalSince1970: $0 / 1000) }
        // An app transaction without a signedDate is judged when its receipt was created, as
        // an app receipt is; never at the fallback (now), which an old one's leaf has outlived.
        let createdAt = claims?.receiptCreationDate.map { Date(timeIntervalSince1970: $0 / 1000) }
        let validationTime: Date
        switch time {
        case .signedDate(let fallback): validationTime = signedDate ?? createdAt ?? fallback
        case .at(let instant): validationTime = instant
        }
        var verdict = SignedDataVerdict(
            header: jws.header, payload: jws.payload, signedDate: signedDate, validationTime: validationTime, failures: [])
        verdict.json = json
        if let known, let chainCache, chainCache.contains(known.chainKey, at: validationTime) {
            // Same certificates as before, validated for a period covering this instant: one
            // signature check remains.
            var failures: [SignedDataVerdict.Failure] = []
            if jws.header.alg != "ES256" { failures.append(.unsupportedAlgorithm(jws.header.alg ?? "(none)")) }
            if let claims {
                failures += Self.claimFailures(claims, expectations)
            } else {
                failures.append(.badSignature("the payload is not a JSON object"))
            }
            if let signature = try? P256.Signing.ECDSASignature(rawRepresentation: jws.signature),
                known.leafKey.isValidSignature(signature, for: jws.signingInput)
            {
            } else {
                failures.append(.badSignature("the signature does not verify with the leaf's key"))
            }
            verdict.failures = failures
            return verdict
        }
        verdict.failures = await failures(jws, claims: claims, expectations: expectations, at: validationTime)
        return verdict
    }

    /// Reads `text` that this server verified before it stored it, checking only what the
    /// payload says against `expectations` (an app's settings may have changed since): no
    /// signature, no chain. For a job granting what its acceptance verified, so each signature
    /// is checked once per request path; never for data that did not pass `verify` first.
    /// Throws only when it is not a readable compact JWS.
    public func reread(_ text: String, expecting expectations: Expectations, now: Date) throws -> SignedDataVerdict {
        let jws = try CompactJWS(text, knownHeader: { _ in nil })
        let json = try? JSONValue.parse(jws.payload)
        let claims = json.flatMap(Claims.init(json:))
        let signedDate = claims?.signedDate.map { Date(timeIntervalSince1970: $0 / 1000) }
        var verdict = SignedDataVerdict(
            header: jws.header, payload: jws.payload, signedDate: signedDate, validationTime: signedDate ?? now, failures: [])
        verdict.json = json
        if let claims {
            verdict.failures = Self.claimFailures(claims, expectations)
        } else {
            verdict.failures = [.badSignature("the payload is not a JSON object")]
        }
        return verdict
    }

    private func failures(_ jws: CompactJWS, claims: Claims?, expectations: Expectations, at time: Date) async -> [SignedDataVerdict.Failure] {
        var failures: [SignedDataVerdict.Failure] = []
        if jws.header.alg != "ES256" { failures.append(.unsupportedAlgorithm(jws.header.alg ?? "(none)")) }
        if claims == nil { failures.append(.badSignature("the payload is not a JSON object")) }
        if let claims { failures += Self.claimFailures(claims, expectations) }

        guard let x5c = jws.header.x5c, !x5c.isEmpty else {
            failures.append(.missingCertificateChain("no x5c header"))
            return failures
        }
        var ders: [[UInt8]] = []
        var certificates: [Certificate] = []
        for entry in x5c {
            guard let der = Data(base64Encoded: entry).map(Array.init), let certificate = try? Certificate(derEncoded: der) else {
                failures.append(.missingCertificateChain("an x5c entry is not a base64 DER certificate"))
                return failures
            }
            ders.append(der)
            certificates.append(certificate)
        }
        // Apple's rule, which its own verifiers apply: exactly leaf, intermediate and root.
        // Without Apple's markers (Xcode's StoreKit test data, `inspect --no-apple-markers`),
        // any chain up to `CompactJWS.maximumCertificates` that builds is accepted.
        if requireAppleMarkers, certificates.count != 3 {
            failures.append(.missingCertificateChain("\(certificates.count) certificate(s); Apple sends exactly leaf, intermediate and root"))
        }

        // The signature: ES256 is ECDSA P-256 with SHA-256, raw r || s.
        let leaf = certificates[0]
        if jws.header.alg == "ES256" {
            if let key = P256.Signing.PublicKey(leaf.publicKey),
                let signature = try? P256.Signing.ECDSASignature(rawRepresentation: jws.signature)
            {
                if !key.isValidSignature(signature, for: jws.signingInput) {
                    failures.append(.badSignature("the signature does not verify with the leaf's key"))
                }
            } else {
                failures.append(.badSignature("the leaf has no P-256 key or the signature is not 64 bytes"))
            }
        }

        // The chain, unless this exact chain was validated before for a covering period.
        var hasher = SHA256()
        for der in ders { hasher.update(data: der) }
        let key = VerifiedChainCache.key(signerIndex: 0, certificatesDigest: Data(hasher.finalize()))
        if let chainCache, chainCache.contains(key, at: time) { return failures }
        let revocation = self.revocation
        var verifier = Verifier(rootCertificates: CertificateStore(roots)) {
            RFC5280Policy(fixedExpiryValidationTime: time)
            AppleMarkerPolicy(required: requireAppleMarkers)
            if let revocation {
                OCSPVerifierPolicy(
                    failureMode: revocation.failureMode, requester: AnyRequester(base: revocation.requester), fixedExpiryValidationTime: time)
            }
        }
        switch await verifier.validate(leaf: leaf, intermediates: CertificateStore(Array(certificates.dropFirst()))) {
        case .validCertificate(let path):
            // With revocation checks on, a passed chain is trusted only until the next check is due.
            chainCache?.insert(key, validatedPath: Array(path), until: revocation.map { time.addingTimeInterval($0.recheckSeconds) })
            if let leafKey = P256.Signing.PublicKey(leaf.publicKey) {
                headers?.insert(
                    HeaderCache.Entry(segment: Array(jws.headerSegment), header: jws.header, leafKey: leafKey, chainKey: key))
            }
        case .couldNotValidate(let policyFailures):
            let reasons = policyFailures.map { String(describing: $0.policyFailureReason) }
            failures.append(.untrustedChain(reasons.isEmpty ? ["no chain to a trusted root"] : reasons))
        }
        return failures
    }

    static func claimFailures(_ claims: Claims, _ expectations: Expectations) -> [SignedDataVerdict.Failure] {
        var failures: [SignedDataVerdict.Failure] = []
        if let expected = expectations.bundleId, claims.bundleId != expected {
            failures.append(.wrongBundleId(expected: expected, found: claims.bundleId))
        }
        if let expected = expectations.environment, let found = claims.environment, found != expected {
            failures.append(.wrongEnvironment(expected: expected, found: found))
        } else if let expected = expectations.environment, claims.environment == nil, claims.isNotification {
            failures.append(.wrongEnvironment(expected: expected, found: nil))
        }
        // Apple ids are checked where the payload carries one; sandbox data may have none.
        if let expected = expectations.appAppleId, let found = claims.appAppleId, found != expected {
            failures.append(.wrongAppAppleId(expected: expected, found: found))
        }
        return failures
    }

    /// What the checks read from any of Apple's payloads, wherever each kind keeps it.
    struct Claims {
        struct Nested {
            var bundleId: String?
            var environment: String?
            var appAppleId: Int64?
        }

        var signedDate: Double?
        /// An app transaction's; its validity instant when it has no `signedDate`.
        var receiptCreationDate: Double?
        var bundleId: String?
        var environment: String?
        var receiptType: String?
        var appAppleId: Int64?
        var notificationType: String?
        var data: Nested?
        var summary: Nested?
        var appData: Nested?
        var externalPurchaseToken: Nested?

        var isNotification: Bool { notificationType != nil }

        /// The same reading from an already parsed payload, by dictionary lookups (a wrongly
        /// typed field reads as absent, as `try?` does in the decoder below).
        init?(json: JSONValue) {
            guard case .object(let object) = json else { return nil }
            func string(_ key: String, in object: [String: JSONValue]) -> String? {
                if case .string(let text)? = object[key] { return text }
                return nil
            }
            func integer(_ key: String, in object: [String: JSONValue]) -> Int64? {
                if case .number(let number)? = object[key], number.rounded(.towardZero) == number { return Int64(exactly: number) }
                return nil
            }
            func nested(_ key: String) -> Nested? {
                guard case .object(let inner)? = object[key] else { return nil }
                return Nested(
                    bundleId: string("bundleId", in: inner), environment: string("environment", in: inner),
                    appAppleId: integer("appAppleId", in: inner))
            }
            if case .number(let number)? = object["signedDate"] { signedDate = number } else { signedDate = nil }
            if object["receiptType"] != nil || object["appTransactionId"] != nil, case .number(let number)? = object["receiptCreationDate"] {
                receiptCreationDate = number
            } else {
                receiptCreationDate = nil
            }
            notificationType = string("notificationType", in: object)
            receiptType = string("receiptType", in: object)
            data = nested("data")
            summary = nested("summary")
            appData = nested("appData")
            externalPurchaseToken = nested("externalPurchaseToken")
            let inner = data ?? summary ?? appData ?? externalPurchaseToken
            bundleId = string("bundleId", in: object) ?? inner?.bundleId
            appAppleId = integer("appAppleId", in: object) ?? inner?.appAppleId
            environment = string("environment", in: object) ?? inner?.environment ?? receiptType
        }

    }
}
