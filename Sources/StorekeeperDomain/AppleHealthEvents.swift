public import Foundation

/// The events that tell each app's backend that Apple went down or came back. Apple's health is
/// not a subscriber's: the events belong to the reserved app user `appUserId`, so they reach the
/// feed and the webhooks (with their own per-user sequence) like any other.
public enum AppleHealthEvents {
    public static let appUserId = "storekeeper_apple"

    /// One event per app: `apple_down` at `at`, or `apple_recovered` at `at` after being down
    /// since `downSince`. The id names the endpoint, the change and its instant, so the same
    /// change recorded twice is one event.
    public static func events(
        to state: AppleHealth.State, endpoint: String, environment: String, at: Date, downSince: Date?, appIds: [String]
    ) -> [SubscriberEvent] {
        let type: EventType
        switch state {
        case .down: type = .appleDown
        case .healthy: type = .appleRecovered
        case .degraded: return []
        }
        let instant = Int64((at.timeIntervalSince1970 * 1000).rounded())
        return appIds.map { appId in
            var details = SubscriberEvent.Details()
            details.appleEndpoint = endpoint
            details.downSince = state == .healthy ? downSince : nil
            return SubscriberEvent(
                id: "evt_apple_\(endpoint)_\(type.rawValue)_\(instant)_\(appId)", type: type, appId: appId, environment: environment,
                appUserId: appUserId, occurredAt: at, recordedAt: at, details: details)
        }
    }
}
