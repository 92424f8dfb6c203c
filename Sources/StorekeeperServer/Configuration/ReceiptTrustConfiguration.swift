import AppStoreClient
import AppStoreCrypto
import Crypto
import Foundation
import JobQueue
import StorekeeperDomain

/// Which certificate authorities may sign app receipts. Apple's roots by default; test roots
/// (the simulator's, Xcode's StoreKit certificate) only when configured.
public struct ReceiptTrustConfiguration: Encodable, Sendable, Hashable {
    /// Parse and signature-check receipts before calling Apple. Forged receipts then never reach Apple.
    public var enabled: Bool = true
    /// Trust Apple's published roots (shipped in the code).
    public var appleRoots: Bool = true
    /// More trusted roots, PEM.
    public var extraRootsPEM: [String] = []
    /// Require Apple's marker extensions on the signing chain.
    public var requireAppleMarkers: Bool = true
    /// Online revocation checks (OCSP) of StoreKit 2 signed data. Off by default.
    public var revocation = RevocationPolicy()

    public init() {}

    enum CodingKeys: String, CodingKey { case enabled, appleRoots, extraRootsPEM, requireAppleMarkers, revocation }
}

/// Whether and how the certificates that sign StoreKit 2 data are checked for revocation
/// (OCSP, at the URL each certificate names). When on, certificates are judged at now (online)
/// instead of at `signedDate`.
public struct RevocationPolicy: Encodable, Sendable, Hashable {
    public enum Mode: String, Codable, Sendable {
        case off
        /// Only a `revoked` answer refuses; an unreachable responder does not.
        case softFail = "soft_fail"
        /// No valid `good` answer refuses.
        case hardFail = "hard_fail"
    }

    public var mode: Mode = .off
    /// How long an answer (and a chain that passed) is trusted before the responder is asked again.
    public var cacheSeconds: Double = 3600
    /// Send every OCSP request here instead of the certificate's responder (a proxy; the simulator's `/ocsp`).
    public var responderOverride: String?
    /// Longest wait for one responder answer.
    public var timeoutSeconds: Double = 5

    public init() {}

    enum CodingKeys: String, CodingKey { case mode, cacheSeconds, responderOverride, timeoutSeconds }
}
