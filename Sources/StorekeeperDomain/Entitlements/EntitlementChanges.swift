public import Foundation

/// What was last said about one entitlement of one subscriber, kept to tell what changed: an
/// entitlement event is the difference between this and the entitlement computed after the next
/// change of the subscriber's purchases.
public struct EntitlementState: Codable, Hashable, Sendable {
    public var isActive: Bool
    public var expiresAt: Date?
    /// The purchase or promotional grant behind it.
    public var transactionId: String?
    public var grantId: String? = nil
    public var billingIssue: Bool
    public var unsubscribed: Bool
    /// When the current billing issue was first seen (a renewal failed), while it lasts.
    public var billingIssueDetectedAt: Date?
    /// When auto-renew was first seen off, while it stays off.
    public var unsubscribeDetectedAt: Date?
    /// While active, when access ends by time alone if nothing more is heard (the period's end,
    /// or the grace period's); nil for access without an end. The lapse sweep tells
    /// `entitlement_expired` from it when Apple stays silent about a subscription, a non-renewing
    /// period runs out or a promotional grant ends: nobody else would.
    public var lapsesAt: Date? = nil

    /// The first instant after `now` at which one of `states` lapses.
    public static func nextLapse(_ states: [String: EntitlementState], after now: Date) -> Date? {
        states.values.compactMap(\.lapsesAt).filter { $0 > now }.min()
    }
}

/// The entitlement events of one change of a subscriber's purchases, decided from the states
/// last recorded and the entitlements now (docs/ENTITLEMENTS.md, "Entitlement events"):
/// - `entitlement_granted`: active now, and absent or inactive before;
/// - `entitlement_renewed`: active before and now, with a later end or none any more (a renewal,
///   a longer plan, a renewal-date extension, a lifetime purchase over a subscription);
/// - `entitlement_billing_issue`: a billing issue now that was not there before;
/// - `entitlement_expired`: inactive now after being active (lapsed, billing retry after grace);
/// - `entitlement_revoked`: gone (every purchase behind it refunded, revoked or moved away).
/// Entitlements whose definition no longer exists are forgotten without an event.
public enum EntitlementChanges {
    public struct Outcome: Sendable, Hashable {
        /// New events, each about one entitlement, in entitlement id order.
        public var events: [SubscriberEvent]
        /// What to record for the next change.
        public var states: [String: EntitlementState]

        public init(events: [SubscriberEvent], states: [String: EntitlementState]) {
            self.events = events
            self.states = states
        }
    }

    /// `trigger`: the first event of this change for the subscriber; the new events take its
    /// app, user, environment and source, and ids derived from it, so recording the same change
    /// again yields the same ids.
    public static func evaluate(
        before: [String: EntitlementState], after entitlements: [String: Entitlement], definitions: Set<String>,
        trigger: SubscriberEvent, now: Date
    ) -> Outcome {
        var events: [SubscriberEvent] = []
        var states: [String: EntitlementState] = [:]
        let cause = trigger.id.hasPrefix("evt_") ? String(trigger.id.dropFirst(4)) : trigger.id
        func event(_ type: EventType, _ id: String, _ entitlement: Entitlement?, _ previous: EntitlementState?) -> SubscriberEvent {
            var details = SubscriberEvent.Details(expiresDate: entitlement?.expiresAt ?? previous?.expiresAt)
            details.entitlementId = id
            details.grantId = entitlement?.grantId ?? previous?.grantId
            return SubscriberEvent(
                id: SubscriberEvent.id(type: type, subject: id, cause: cause), type: type, appId: trigger.appId,
                environment: entitlement?.environment ?? trigger.environment, appUserId: trigger.appUserId,
                productId: entitlement?.productId ?? trigger.productId,
                transactionId: entitlement?.transactionId ?? previous?.transactionId ?? trigger.transactionId,
                originalTransactionId: entitlement?.originalTransactionId ?? trigger.originalTransactionId, occurredAt: trigger.occurredAt,
                recordedAt: now, source: trigger.source, details: details)
        }
        for id in Set(before.keys).union(entitlements.keys).sorted() where definitions.contains(id) {
            let previous = before[id]
            guard let current = entitlements[id] else {
                if previous != nil { events.append(event(.entitlementRevoked, id, nil, previous)) }
                continue
            }
            let wasActive = previous?.isActive == true
            if current.isActive && !wasActive {
                events.append(event(.entitlementGranted, id, current, previous))
            } else if current.isActive, wasActive, let earlier = previous?.expiresAt, current.expiresAt.map({ $0 > earlier }) ?? true {
                // A later end, or none any more (a lifetime purchase or grant over a subscription).
                events.append(event(.entitlementRenewed, id, current, previous))
            }
            if current.billingIssue && previous?.billingIssue != true { events.append(event(.entitlementBillingIssue, id, current, previous)) }
            if !current.isActive && wasActive {
                events.append(event(.entitlementExpired, id, current, previous))
                // What ran out, where it was a grace period or an operator's grant.
                if let previous, previous.billingIssue, let graceEnd = previous.lapsesAt, previous.expiresAt.map({ graceEnd > $0 }) ?? false {
                    var ended = event(.gracePeriodExpired, id, current, previous)
                    ended.details?.gracePeriodExpiresDate = graceEnd
                    events.append(ended)
                }
                if current.source == .promotional, let grantId = current.grantId, previous?.grantId == grantId {
                    events.append(event(.promotionalGrantExpired, id, current, previous))
                }
            }
            states[id] = EntitlementState(
                isActive: current.isActive, expiresAt: current.expiresAt, transactionId: current.transactionId, grantId: current.grantId,
                billingIssue: current.billingIssue,
                unsubscribed: current.unsubscribed,
                billingIssueDetectedAt: current.billingIssue ? (previous?.billingIssueDetectedAt ?? now) : nil,
                unsubscribeDetectedAt: current.unsubscribed ? (previous?.unsubscribeDetectedAt ?? now) : nil,
                lapsesAt: current.isActive ? (current.gracePeriodExpiresAt ?? current.expiresAt) : nil)
        }
        return Outcome(events: events, states: states)
    }

    /// The instants first seen, from the recorded states, on the entitlements that still show
    /// them (a state recorded for an earlier purchase, or an issue since resolved, adds nothing).
    public static func annotate(_ entitlements: inout [String: Entitlement], with states: [String: EntitlementState]) {
        for (id, state) in states {
            guard var entitlement = entitlements[id] else { continue }
            if entitlement.billingIssue { entitlement.billingIssueDetectedAt = state.billingIssueDetectedAt }
            if entitlement.unsubscribed { entitlement.unsubscribeDetectedAt = state.unsubscribeDetectedAt }
            entitlements[id] = entitlement
        }
    }
}
