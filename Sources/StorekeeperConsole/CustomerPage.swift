public import Foundation
public import Persistence
public import StorekeeperDomain

/// One customer as support sees them: what they hold and why, what they bought, and everything
/// that happened to them, with the actions an admin may take.
public struct CustomerPage: Sendable {
    /// What the page reads through the use cases, newest first where a history is cut.
    public struct Facts: Sendable {
        public var appId: String
        public var appUserId: String
        public var view: SubscriberView
        public var grants: [PromotionalGrant]
        public var entitlementIds: [String]
        /// The app has an In-App Purchase key: a refresh from the Server API can be asked.
        public var serverAPI: Bool
        public var verifications: [VerificationRecord]
        public var events: [RecordedEvent]
        public var audit: [RecordedAuditEntry]
        public var deliveries: [WebhookDelivery]
        public var provisional: [ProvisionalGrant]
        public var notifications: [NotificationRecord]
        /// Rows each history was read with.
        public var historyLimit: Int

        public init(
            appId: String, appUserId: String, view: SubscriberView, grants: [PromotionalGrant], entitlementIds: [String], serverAPI: Bool,
            verifications: [VerificationRecord], events: [RecordedEvent], audit: [RecordedAuditEntry], deliveries: [WebhookDelivery],
            provisional: [ProvisionalGrant], notifications: [NotificationRecord], historyLimit: Int
        ) {
            self.appId = appId
            self.appUserId = appUserId
            self.view = view
            self.grants = grants
            self.entitlementIds = entitlementIds
            self.serverAPI = serverAPI
            self.verifications = verifications
            self.events = events
            self.audit = audit
            self.deliveries = deliveries
            self.provisional = provisional
            self.notifications = notifications
            self.historyLimit = historyLimit
        }
    }

    /// Every cell of every table is text, written once here: `{{…}}` escapes it.
    public typealias Row = [String: String]

    public var id: String
    public var aliases: [String]
    public var credits: Int
    public var entitlements: [Row]
    public var subscriptions: [Row]
    public var transactions: [Row]
    public var canAct: Bool
    public var csrf: String
    public var appPath: String
    public var userPath: String
    public var userId: String
    public var entitlementIds: [String]
    public var serverAPI: Bool
    public var grants: [GrantRow]
    public var notifications: [Row]
    public var provisional: [Row]
    public var verifications: [VerificationRow]
    public var events: [Row]
    public var deliveries: [Row]
    public var audit: [Row]
    public var historyLimit: Int

    /// A promotional grant, revocable by an admin until it is revoked or over.
    public struct GrantRow: Sendable, Hashable {
        public var id: String
        public var entitlement: String
        public var from: String
        public var until: String
        public var revoked: String
        public var by: String
        public var reason: String
        public var canRevoke: Bool
    }

    public init(_ facts: Facts, mayAct: Bool, csrf: String, now: Date) {
        let view = facts.view
        id = facts.appUserId
        aliases = view.aliases ?? []
        credits = view.creditBalance
        entitlements = view.entitlements.keys.sorted().compactMap { key in
            view.entitlements[key].map { entitlement in
                [
                    "id": key, "active": entitlement.isActive ? "yes" : "no", "expires": entitlement.expiresAt.map(ConsoleFormat.instant) ?? "never",
                    "renewal": ConsoleFormat.renewal(entitlement), "product": entitlement.productId ?? "—", "source": entitlement.source.rawValue,
                ]
            }
        }
        subscriptions = view.subscriptions.map { subscription in
            [
                "product": subscription.productId, "original": subscription.originalTransactionId, "status": subscription.status.rawValue,
                "expires": subscription.expiresDate.map(ConsoleFormat.instant) ?? "—",
                "renews": subscription.autoRenewEnabled.map { $0 ? "yes" : "no" } ?? "—",
            ]
        }
        transactions = view.history.map { record in
            [
                "id": record.transactionId, "product": record.productId, "purchased": ConsoleFormat.instant(record.purchaseDate),
                "charged": record.price.map { "\(ConsoleFormat.money(($0.micros ?? 0) * Int64(record.quantity))) \($0.currency)" } ?? "—",
                "storefront": record.storefront ?? "—", "refunded": record.cancellationDate.map(ConsoleFormat.instant) ?? "—",
                "environment": record.environment,
            ]
        }
        canAct = mayAct
        self.csrf = csrf
        appPath = ConsoleFormat.pathSegment(facts.appId)
        userPath = ConsoleFormat.pathSegment(facts.appUserId)
        userId = facts.appUserId
        entitlementIds = facts.entitlementIds
        serverAPI = facts.serverAPI
        grants = facts.grants.map { grant in
            // Revocable until revoked or over, a grant that starts later included.
            let over = grant.revokedAt != nil || grant.expiresAt.map { $0 <= now } ?? false
            return GrantRow(
                id: grant.id, entitlement: grant.entitlementId, from: ConsoleFormat.instant(grant.startsAt),
                until: grant.expiresAt.map(ConsoleFormat.instant) ?? "for life", revoked: grant.revokedAt.map(ConsoleFormat.instant) ?? "—",
                by: grant.actor, reason: grant.reason, canRevoke: mayAct && !over)
        }
        notifications = facts.notifications.map { notification in
            [
                "type": notification.notificationType + (notification.subtype.map { " / \($0)" } ?? ""),
                "signed": notification.signedDate.map(ConsoleFormat.instant) ?? "—",
                "received": notification.receivedAt.map(ConsoleFormat.instant) ?? "—",
                "original": notification.originalTransactionId ?? "—", "outcome": notification.outcome.rawValue,
                "verification": notification.verificationId ?? "—",
            ]
        }
        provisional = facts.provisional.map { grant in
            [
                "product": grant.productId, "transaction": grant.transactionId, "verification": grant.verificationId,
                "until": ConsoleFormat.instant(grant.expiresAt),
            ]
        }
        verifications = facts.verifications.map { VerificationRow($0, mayAct: mayAct, csrf: csrf) }
        events = facts.events.map { recorded in
            let event = recorded.event
            return [
                "sequence": "\(event.sequence)", "type": event.type.rawValue, "occurred": ConsoleFormat.instant(event.occurredAt),
                "product": event.productId ?? "—", "transaction": event.transactionId ?? "—", "source": event.source?.rawValue ?? "—",
            ]
        }
        deliveries = facts.deliveries.map { delivery in
            [
                "endpoint": delivery.endpointId, "sequence": "\(delivery.sequence)", "event": delivery.eventId, "state": delivery.state.rawValue,
                "attempts": "\(delivery.attempts)", "last": delivery.lastStatus.map { "HTTP \($0)" } ?? delivery.lastError ?? "—",
                "updated": ConsoleFormat.instant(delivery.updatedAt),
            ]
        }
        audit = facts.audit.map { recorded in
            let entry = recorded.entry
            return [
                "at": ConsoleFormat.instant(entry.at), "actor": entry.actor, "action": entry.action, "subject": entry.subject, "reason": entry.reason,
            ]
        }
        historyLimit = facts.historyLimit
    }
}
