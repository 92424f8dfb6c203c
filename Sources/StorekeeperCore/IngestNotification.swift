public import Foundation
public import Persistence
public import StorekeeperDomain

/// One App Store Server Notification, V2 or V1, however it arrived (Apple's POST, or the
/// gap-fill reading Apple's notification history), after the edge verified what it could:
/// decides what it leads to (a submission for the owner of its purchase, the events of a
/// rescinded consent, forwards to the endpoints that take notifications) and stores it once per
/// (app, notificationUUID) with all of that, in one transaction.
public struct IngestNotification: Sendable {
    /// Owners and stored notifications, the ledger for a rescinded consent's customer, and the
    /// customers' store to apply the app's consent policy.
    public typealias Store = NotificationStore & LedgerStore & CustomerStore & IdentityStore

    let store: any Store

    public init(store: any Store) {
        self.store = store
    }

    /// The format the notification came in: Apple's V2 (signed) or the legacy V1 (unsigned).
    public enum Version: String, Sendable {
        case v1 = "1"
        case v2 = "2"
    }

    /// What the notification's purchase amounts to, as the edge verified it.
    public enum Purchase: Sendable {
        /// Nothing to grant; `outcome` unless a rescinded consent decides one.
        case none(NotificationOutcome)
        /// A signed transaction that must not be granted.
        case rejected(FailureReason)
        /// CONSUMPTION_REQUEST: Apple asks for consumption information before deciding a refund;
        /// recorded with its answering job (by the app's policy), nothing about the purchase has
        /// changed yet.
        case consumptionRequest(RefundRequestNotice)
        /// Evidence to verify and grant for the owner of `Notification.originalTransactionId`.
        case grant(SubmittedEvidence, evidenceHash: String)
    }

    /// A refund request's verified transaction, Apple's reason and the app's policy.
    public struct RefundRequestNotice: Sendable {
        public var transactionId: String
        public var reason: String?
        public var policy: RefundPolicy

        public init(transactionId: String, reason: String?, policy: RefundPolicy) {
            self.transactionId = transactionId
            self.reason = reason
            self.policy = policy
        }
    }

    /// RESCIND_CONSENT names no purchase, only the customer's signed app transaction.
    public enum Consent: Sendable {
        /// The app transaction was missing or did not verify: why.
        case unverified(NotificationOutcome)
        /// Verified for this app: the customer's `appTransactionId`, and when Apple said so.
        case appTransaction(id: String, occurredAt: Date)
    }

    public struct Notification: Sendable {
        public var appId: String
        public var notificationUUID: String
        public var notificationType: String
        public var subtype: String?
        public var signedDate: Date?
        public var originalTransactionId: String?
        /// The environment's storage name.
        public var environment: String?
        /// The notification as received (V2: the signed payload; V1: the body).
        public var payload: String
        public var version: Version
        public var purchase: Purchase
        public var consent: Consent?
        /// What the app does with a rescinded consent beyond recording it.
        public var consentPolicy: RescindConsentPolicy = .record

        public init(
            appId: String, notificationUUID: String, notificationType: String, subtype: String?, signedDate: Date?,
            originalTransactionId: String?, environment: String?, payload: String, version: Version, purchase: Purchase,
            consent: Consent? = nil
        ) {
            self.appId = appId
            self.notificationUUID = notificationUUID
            self.notificationType = notificationType
            self.subtype = subtype
            self.signedDate = signedDate
            self.originalTransactionId = originalTransactionId
            self.environment = environment
            self.payload = payload
            self.version = version
            self.purchase = purchase
            self.consent = consent
        }
    }

    public struct Result: Sendable, Hashable {
        /// False when the notification was stored before: nothing was done again.
        public var created: Bool
        /// What ingesting it decided (for a duplicate: what this delivery would have decided).
        public var outcome: NotificationOutcome
        /// The verification its purchase went to, when one was submitted now.
        public var verificationId: String?
    }

    public func callAsFunction(_ notification: Notification, now: Date) async throws -> Result {
        var outcome: NotificationOutcome
        var submission: EvidenceSubmission?
        var refundRequest: RefundRequest?
        var events: EventBatch?
        switch notification.purchase {
        case .none(let nothing):
            outcome = nothing
        case .rejected(let reason):
            outcome = .rejected(reason)
        case .consumptionRequest(let notice):
            outcome = .consumptionRequested
            let request = try await Self.refundRequest(notice, notification, store: store, now: now)
            refundRequest = request
            if let requested = request.event(.refundRequested, now: now) { events = EventBatch(events: [requested]) }
        case .grant(let evidence, let hash):
            if let original = notification.originalTransactionId,
                let owner = try await store.owner(appId: notification.appId, originalTransactionId: original)
            {
                outcome = .submitted
                // The whole notification goes to the grant job: it verifies and applies the
                // nested transaction together with the renewal info (billing retry, grace).
                submission = EvidenceSubmission(
                    appId: notification.appId, appUserId: owner, evidenceHash: hash, evidence: evidence,
                    hints: ["notification": notification.notificationUUID])
            } else {
                // Nobody has claimed this purchase yet; their receipt or transaction will grant it.
                outcome = .unowned
            }
        }
        if let consent = notification.consent {
            let told = try await rescinded(consent, notification, now: now)
            events = told.events
            if case .none = notification.purchase { outcome = told.outcome }
        }
        let record = NotificationRecord(
            appId: notification.appId, notificationUUID: notification.notificationUUID, notificationType: notification.notificationType,
            subtype: notification.subtype, signedDate: notification.signedDate, originalTransactionId: notification.originalTransactionId,
            environment: notification.environment, payload: notification.payload, outcome: outcome)
        var write = NotificationWrite(
            record: record, submission: submission.map { DecidedSubmission($0, decide: SubmitEvidence.decision(for: $0)) },
            events: events, forwards: Self.forwards)
        write.refundRequest = refundRequest
        let stored = try await store.recordNotification(write, now: now)
        // After the notification and its events are stored, and again for each redelivery
        // (the policy is safe to repeat): a crash before this point leaves the notification
        // unanswered, so Apple sends it again and the policy runs then.
        if case .appTransaction(let id, _)? = notification.consent, notification.consentPolicy != .record {
            let holders = try await store.transactions(appId: notification.appId, appTransactionId: id).map(\.appUserId)
            try await ManageCustomers(store: store).applyConsentPolicy(
                notification.consentPolicy, appId: notification.appId, holders: holders, notificationUUID: notification.notificationUUID, now: now)
        }
        return Result(created: stored.created, outcome: outcome, verificationId: stored.verification?.id)
    }

    /// The request as stored: for the purchase's holder, due by Apple's deadline from when Apple
    /// signed it, with its answering job unless the app's policy is off.
    static func refundRequest(
        _ notice: RefundRequestNotice, _ notification: Notification, store: any NotificationStore, now: Date
    ) async throws -> RefundRequest {
        let original = notification.originalTransactionId ?? notice.transactionId
        let answers = notice.policy.mode != .off
        return RefundRequest(
            appId: notification.appId, notificationUUID: notification.notificationUUID, transactionId: notice.transactionId,
            originalTransactionId: original, appUserId: try await store.owner(appId: notification.appId, originalTransactionId: original),
            environment: notification.environment ?? "production", reason: notice.reason, requestedAt: notification.signedDate ?? now,
            state: answers ? .pending : .skipped, note: answers ? nil : "policy_off", jobId: answers ? UUID().uuidString.lowercased() : nil)
    }

    /// Every stored notification goes to each endpoint of its app that takes notifications.
    @Sendable static func forwards(_ endpoints: [WebhookEndpoint]) -> [String] {
        endpoints.filter(\.forwardsNotifications).map(\.id)
    }

    /// The app users holding the customer's purchases (by `appTransactionId`) are each told
    /// (`consent_rescinded`, id from the notification and the user, so a second delivery adds
    /// nothing). Nothing they own changes.
    func rescinded(
        _ consent: Consent, _ notification: Notification, now: Date
    ) async throws -> (
        outcome: NotificationOutcome, events: EventBatch?
    ) {
        let appTransactionId: String
        let occurredAt: Date
        switch consent {
        case .unverified(let outcome): return (outcome, nil)
        case .appTransaction(let id, let at): (appTransactionId, occurredAt) = (id, at)
        }
        var users: [String] = []
        for tx in try await store.transactions(appId: notification.appId, appTransactionId: appTransactionId)
        where !users.contains(tx.appUserId) {
            users.append(tx.appUserId)
        }
        guard !users.isEmpty else { return (.consentRescindedUnknownCustomer, nil) }
        let events = users.map { user in
            SubscriberEvent(
                id: SubscriberEvent.id(type: .consentRescinded, subject: user, cause: notification.notificationUUID),
                type: .consentRescinded, appId: notification.appId, environment: notification.environment, appUserId: user,
                occurredAt: occurredAt, recordedAt: now, source: .notification, details: .init(appTransactionId: appTransactionId))
        }
        return (.consentRescinded, EventBatch(events: events))
    }
}
