public import Foundation
public import Persistence

/// Time that passes is a change: an entitlement whose end has come (a subscription Apple stays
/// silent about, a non-renewing period, a grace period, a promotional grant) is told as
/// `entitlement_expired` at once, not at the subscriber's next purchase, which may never come.
/// Each due subscriber is assessed again in a transaction of its own at `now`; the event ids
/// derive from the subscriber and the instant due, and the adapter takes the subscriber's event
/// locks first, so any number of processes sweeping at once record each lapse once.
public struct RecordLapses: Sendable {
    let store: any EventStore & WebhookStore

    public init(store: any EventStore & WebhookStore) {
        self.store = store
    }

    /// Assesses up to `limit` due subscribers; returns how many (fewer than `limit`: none left).
    public func callAsFunction(now: Date, limit: Int) async throws -> Int {
        let due = try await store.dueLapses(at: now, limit: limit)
        for lapse in due { try await store.recordEvents(.reassessment(lapse, now: now), now: now) }
        return due.count
    }
}
