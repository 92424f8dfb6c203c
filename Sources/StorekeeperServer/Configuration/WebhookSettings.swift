import AppStoreClient
import AppStoreCrypto
import Crypto
import Foundation
import JobQueue
public import StorekeeperDomain

/// How webhook deliveries are attempted.
public struct WebhookSettings: Encodable, Hashable, Sendable {
    /// Deadline of one attempt: connecting, sending and the answer's head.
    public var timeoutSeconds: Double = 10
    public var retrySchedule = WebhookRetrySchedule.standard
    /// Let endpoints point at loopback, private and link-local addresses (a receiver on the
    /// operator's own network; the test suite). Off: only public addresses.
    public var allowPrivateDestinations = false
    /// Networks allowed whatever their range (`10.20.0.0/16`): a narrower opening than
    /// `allowPrivateDestinations`.
    public var allowedDestinationNetworks: [IPNetwork] = []
    /// How often a held delivery (paused endpoint, dead earlier event) looks again; resume,
    /// replay and skip make held deliveries due at once, so this only bounds a rare late one.
    public var heldRecheckSeconds: Double = 60

    public init() {}

    var destinationPolicy: WebhookDestinationPolicy {
        WebhookDestinationPolicy(allowPrivate: allowPrivateDestinations, allowedNetworks: allowedDestinationNetworks)
    }

    enum CodingKeys: String, CodingKey {
        case timeoutSeconds, retrySchedule, allowPrivateDestinations, allowedDestinationNetworks, heldRecheckSeconds
    }
}
