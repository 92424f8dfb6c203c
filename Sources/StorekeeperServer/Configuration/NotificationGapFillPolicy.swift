import AppStoreClient
import AppStoreCrypto
import Crypto
import Foundation
import JobQueue
import StorekeeperDomain

/// Notifications Apple could not deliver are fetched from its notification history and processed
/// as if delivered (idempotent by notificationUUID, so overlap costs nothing but a call).
public struct NotificationGapFillPolicy: Encodable, Sendable, Hashable {
    public var enabled: Bool = true
    /// Time between pulls.
    public var intervalSeconds: Double = 3600
    /// How far back the first pull after start looks (Apple keeps 180 days).
    public var lookbackSeconds: Double = 3 * 86_400
    /// Ask only for notifications that have not reached this server (Apple's `onlyFailures`).
    public var onlyFailures: Bool = true

    public init() {}

    enum CodingKeys: String, CodingKey { case enabled, intervalSeconds, lookbackSeconds, onlyFailures }
}
