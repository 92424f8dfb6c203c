import AppStoreClient
import AppStoreCrypto
import Crypto
import Foundation
import JobQueue
import StorekeeperDomain

/// An In-App Purchase key from App Store Connect (Users and Access → Integrations).
public struct ServerAPIKeyConfiguration: Codable, Sendable, Hashable {
    public var issuerId: String
    public var keyId: String
    /// Contents of the `.p8` file.
    public var privateKeyPEM: String
    /// The share of Apple's published request limits Storekeeper uses for this app (default 1:
    /// all of them; 0.5 leaves half to other systems calling with the app's key). Above 1 only
    /// against a simulator configured with higher limits (benchmarks).
    public var rateLimitShare: Double?

    static let largestRateLimitShare: Double = 1_000

    public init(issuerId: String, keyId: String, privateKeyPEM: String) {
        self.issuerId = issuerId
        self.keyId = keyId
        self.privateKeyPEM = privateKeyPEM
    }
}
