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

    public init(issuerId: String, keyId: String, privateKeyPEM: String) {
        self.issuerId = issuerId
        self.keyId = keyId
        self.privateKeyPEM = privateKeyPEM
    }
}
