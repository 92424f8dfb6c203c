import AppStoreModels
public import Foundation
public import StorekeeperWire

/// What happened to a subscriber, named for the developer of the app's backend. A string-backed
/// value: events stored by a later version may carry types this one does not list, and a
/// consumer must ignore types it does not know.
public struct EventType: RawStringValue, ExpressibleByStringLiteral {
    public let rawValue: String

    public init(rawValue: String) { self.rawValue = rawValue }
    public init(stringLiteral value: String) { self.rawValue = value }

    /// The first purchase of an auto-renewable subscription.
    public static let initialPurchase = EventType(rawValue: "initial_purchase")
    /// A further period of the same subscription product.
    public static let renewal = EventType(rawValue: "renewal")
    /// A further period of another product of the subscription's group (upgrade, downgrade, crossgrade).
    public static let productChange = EventType(rawValue: "product_change")
    public static let autoRenewDisabled = EventType(rawValue: "auto_renew_disabled")
    public static let autoRenewEnabled = EventType(rawValue: "auto_renew_enabled")
    /// Apple reports the subscription expired; `details.expirationReason` says why.
    public static let expiration = EventType(rawValue: "expiration")
    /// A renewal failed and Apple is retrying the payment.
    public static let billingIssue = EventType(rawValue: "billing_issue")
    /// A renewal failed and the app's grace period keeps access until `details.gracePeriodExpiresDate`.
    public static let gracePeriod = EventType(rawValue: "grace_period")
    /// Apple's billing retry succeeded: the subscription renews again.
    public static let billingRecovered = EventType(rawValue: "billing_recovered")
    public static let refund = EventType(rawValue: "refund")
    public static let refundReversed = EventType(rawValue: "refund_reversed")
    /// The customer asked Apple for a refund (CONSUMPTION_REQUEST; `details.reason`: Apple's
    /// reason); the app's refund policy answers it (docs/REFUNDS.md).
    public static let refundRequested = EventType(rawValue: "refund_requested")
    /// Apple took the answer to a refund request (`details.refundPreference`, and in
    /// `details.reason` the rule that chose it). Apple's decision follows as `refund`, or not.
    public static let refundRequestAnswered = EventType(rawValue: "refund_request_answered")
    /// The app reports the user opened its refund request sheet for a transaction of theirs
    /// (`details.reason`: `requested` or `cancelled`). Unsigned: for analytics and support only;
    /// Apple's own word follows as `refund_requested` when the request reached it.
    public static let refundRequestedInApp = EventType(rawValue: "refund_requested_in_app")
    /// The app reports the user opened the App Store's manage-subscriptions sheet from it. Unsigned.
    public static let manageSubscriptionsShownInApp = EventType(rawValue: "manage_subscriptions_shown_in_app")
    /// Apple announced a higher price for the subscription's next renewals that needs the
    /// customer's consent, and they have not given it: without it the subscription lapses at its
    /// renewal date (`expiration`, reason 3). StoreKit asks them in a price consent sheet.
    public static let priceIncreasePending = EventType(rawValue: "price_increase_pending")
    /// The customer agreed to the higher price, or was told of one that needs no consent: the
    /// subscription renews at it.
    public static let priceIncreaseAgreed = EventType(rawValue: "price_increase_agreed")
    /// Access through Family Sharing ended (the purchaser left the family, or stopped sharing).
    public static let revoke = EventType(rawValue: "revoke")
    public static let nonRenewingPurchase = EventType(rawValue: "non_renewing_purchase")
    /// A consumable purchase; `details.credits` is what it added to the balance.
    public static let consumablePurchase = EventType(rawValue: "consumable_purchase")
    /// Credits spent (`details.credits`, `details.reason`) under the caller's idempotency key
    /// (`details.spendId`), leaving `details.creditBalance`.
    public static let creditsSpent = EventType(rawValue: "credits_spent")
    public static let nonConsumablePurchase = EventType(rawValue: "non_consumable_purchase")
    /// Another app user submitted an original transaction bound to this one (`details.ownerAppUserId`): not granted.
    public static let ownershipConflict = EventType(rawValue: "ownership_conflict")
    /// An original transaction moved to this app user (`details.fromAppUserId`) under the transfer policy.
    public static let transfer = EventType(rawValue: "transfer")
    /// A submission of this app user was found invalid (`details.reason`).
    public static let verificationInvalid = EventType(rawValue: "verification_invalid")
    /// Apple could not be asked; the outage policy unlocked the product until `details.expiresDate`.
    public static let provisionalAccessGranted = EventType(rawValue: "provisional_access_granted")
    /// Apple answered: provisional access ends (the answer's own events follow).
    public static let provisionalAccessRemoved = EventType(rawValue: "provisional_access_removed")
    /// Apple's RESCIND_CONSENT: under age assurance, a minor's parent or guardian withdrew the
    /// consent given for the child's use of the app (Apple then keeps the app from launching).
    /// Sent to every app user holding a purchase of that Apple account (`details.appTransactionId`);
    /// what they own does not change.
    public static let consentRescinded = EventType(rawValue: "consent_rescinded")
    /// An Apple endpoint (`details.appleEndpoint`) stopped answering: verifications wait, and
    /// none is marked invalid. For the app, not a subscriber (app user `storekeeper_apple`).
    public static let appleDown = EventType(rawValue: "apple_down")
    /// It answers again (`details.downSince`: since when it had not); the waiting verifications
    /// are being released.
    public static let appleRecovered = EventType(rawValue: "apple_recovered")
    /// Sent on request to check an endpoint.
    public static let test = EventType(rawValue: "test")
    /// A named entitlement (`details.entitlementId`) gives access now and did not before.
    public static let entitlementGranted = EventType(rawValue: "entitlement_granted")
    /// It stays active with a later end (`details.expiresDate`).
    public static let entitlementRenewed = EventType(rawValue: "entitlement_renewed")
    /// A renewal behind it failed and Apple is retrying (access kept only in a grace period).
    public static let entitlementBillingIssue = EventType(rawValue: "entitlement_billing_issue")
    /// It no longer gives access (lapsed, or billing retry after the grace period).
    public static let entitlementExpired = EventType(rawValue: "entitlement_expired")
    /// A grace period behind an entitlement ran out with the renewal still failing: access ends
    /// (`entitlement_expired` alongside it; `details.gracePeriodExpiresDate` the instant).
    public static let gracePeriodExpired = EventType(rawValue: "grace_period_expired")
    /// A promotional grant reached its end (`details.grantId`, `details.expiresDate`); its
    /// entitlement's `entitlement_expired` alongside it unless something else still grants it.
    public static let promotionalGrantExpired = EventType(rawValue: "promotional_grant_expired")
    /// Every purchase behind it was refunded, revoked or moved to another user.
    public static let entitlementRevoked = EventType(rawValue: "entitlement_revoked")
    /// An operator granted an entitlement (`details.entitlementId`, `details.grantId`) until
    /// `details.expiresDate` (absent: for life), with `details.reason`. No money moved.
    public static let promotionalGrant = EventType(rawValue: "promotional_grant")
    /// An operator ended a promotional grant early (`details.grantId`, `details.reason`).
    public static let promotionalGrantRevoked = EventType(rawValue: "promotional_grant_revoked")
    /// Access withheld whatever the subscriber bought (`details.reason`: `consent_rescinded` or
    /// an operator's words); the entitlements' own `entitlement_revoked` events follow.
    public static let accessSuspended = EventType(rawValue: "access_suspended")
    /// An operator lifted the suspension; `entitlement_granted` follows for what is active again.
    public static let accessRestored = EventType(rawValue: "access_restored")
    /// The customer was enrolled in an experiment on offerings (`details.experimentId`,
    /// `details.arm`, `details.offeringId`), once per experiment: a backend joins its own data
    /// on the arm (docs/EXPERIMENTS.md).
    public static let experimentEnrolled = EventType(rawValue: "experiment_enrolled")

    /// Every type this version emits, in the order docs/EVENTS.md lists them.
    public static let all: [EventType] = [
        .initialPurchase, .renewal, .productChange, .autoRenewDisabled, .autoRenewEnabled, .expiration, .billingIssue,
        .gracePeriod, .billingRecovered, .refund, .refundReversed, .refundRequested, .refundRequestAnswered,
        .refundRequestedInApp, .manageSubscriptionsShownInApp, .priceIncreasePending, .priceIncreaseAgreed, .revoke, .nonRenewingPurchase,
        .consumablePurchase, .creditsSpent,
        .nonConsumablePurchase, .ownershipConflict, .transfer, .verificationInvalid, .provisionalAccessGranted,
        .provisionalAccessRemoved, .consentRescinded, .appleDown, .appleRecovered, .entitlementGranted, .entitlementRenewed,
        .entitlementBillingIssue, .entitlementExpired, .gracePeriodExpired, .entitlementRevoked, .promotionalGrant, .promotionalGrantRevoked,
        .promotionalGrantExpired, .accessSuspended,
        .accessRestored, .experimentEnrolled, .test,
    ]
}

/// One change of what a subscriber owns, as recorded in the outbox and published (feed,
/// webhooks). Written in the database transaction that made the change, so an event exists if
/// and only if its change committed.
public struct SubscriberEvent: Codable, Hashable, Sendable {
    /// Facts that only some types carry.
    public struct Details: Codable, Hashable, Sendable {
        /// `verification_invalid`: why; `expiration`: Apple's expiration intent.
        public var reason: String?
        public var expirationReason: String?
        public var previousProductId: String?
        /// `transfer`: the app user the original transaction moved from, and to.
        public var fromAppUserId: String?
        public var toAppUserId: String?
        /// `ownership_conflict`: the app user the original transaction is bound to.
        public var ownerAppUserId: String?
        public var expiresDate: Date?
        public var gracePeriodExpiresDate: Date?
        public var credits: Int?
        public var verificationId: String?
        /// `consent_rescinded`: the customer's Apple account in this app.
        public var appTransactionId: String?
        /// `refund`, `revoke`: Apple's `revocationType` and the share refunded (milliunits of a
        /// percent; 100000 = all), when Apple sent them.
        public var revocationType: String?
        public var revocationPercentage: Int?
        /// `apple_down`, `apple_recovered`: which of Apple's endpoints (`verify_receipt_production`, …).
        public var appleEndpoint: String?
        /// `apple_recovered`: since when the endpoint had been down.
        public var downSince: Date?
        /// `entitlement_*`, `promotional_grant*`: which of the app's named entitlements.
        public var entitlementId: String?
        /// `promotional_grant*`, and `entitlement_*` resting on one: the operator's grant.
        public var grantId: String?
        /// `refund_request_answered`: the preference sent to Apple (`GRANT_FULL`, `DECLINE`, …).
        public var refundPreference: String?
        /// `credits_spent`: the spend's idempotency key and the balance it left.
        public var spendId: String?
        public var creditBalance: Int?
        /// `experiment_enrolled`: the experiment, the arm (from 0) and its offering.
        public var experimentId: String?
        public var arm: Int?
        public var offeringId: String?

        public init(
            reason: String? = nil, expirationReason: String? = nil, previousProductId: String? = nil, fromAppUserId: String? = nil,
            ownerAppUserId: String? = nil, expiresDate: Date? = nil, gracePeriodExpiresDate: Date? = nil, credits: Int? = nil,
            verificationId: String? = nil, appTransactionId: String? = nil
        ) {
            self.reason = reason
            self.expirationReason = expirationReason
            self.previousProductId = previousProductId
            self.fromAppUserId = fromAppUserId
            self.ownerAppUserId = ownerAppUserId
            self.expiresDate = expiresDate
            self.gracePeriodExpiresDate = gracePeriodExpiresDate
            self.credits = credits
            self.verificationId = verificationId
            self.appTransactionId = appTransactionId
        }
    }

    /// Stable and unique: derived from the change (type, subject, the verification that made
    /// it), so the same change recorded twice is one event.
    public var id: String
    public var type: EventType
    public var appId: String
    public var environment: String?
    public var appUserId: String
    public var productId: String?
    public var transactionId: String?
    public var originalTransactionId: String?
    public var priceMicros: Int64?
    public var currency: String?
    /// When it happened by Apple's dates (purchase, cancellation, signing); `recordedAt` when unknown.
    public var occurredAt: Date
    public var recordedAt: Date
    /// 1, 2, 3 … per app user of an app, in commit order: deliveries and feeds keep this order.
    public var sequence: Int64
    /// How the facts arrived; nil for events no evidence caused (test, outage policy).
    public var source: PurchaseEvidence.Source?
    public var details: Details?
    /// What the subscriber owns once this event's transaction committed (`GET /v1/subscribers/{id}`).
    public var entitlements: SubscriberView?

    public init(
        id: String, type: EventType, appId: String, environment: String?, appUserId: String, productId: String? = nil,
        transactionId: String? = nil, originalTransactionId: String? = nil, priceMicros: Int64? = nil, currency: String? = nil,
        occurredAt: Date, recordedAt: Date, sequence: Int64 = 0, source: PurchaseEvidence.Source? = nil, details: Details? = nil,
        entitlements: SubscriberView? = nil
    ) {
        self.id = id
        self.type = type
        self.appId = appId
        self.environment = environment
        self.appUserId = appUserId
        self.productId = productId
        self.transactionId = transactionId
        self.originalTransactionId = originalTransactionId
        self.priceMicros = priceMicros
        self.currency = currency
        self.occurredAt = occurredAt
        self.recordedAt = recordedAt
        self.sequence = sequence
        self.source = source
        self.details = details
        self.entitlements = entitlements
    }

    /// The id of the event of `type` about `subject` (a transaction, original transaction or
    /// verification id) caused by the verification `cause`: built from the change itself, so the
    /// same change always gets the same id, and readable by an operator.
    public static func id(type: EventType, subject: String, cause: String) -> String {
        "evt_\(cause)_\(type.rawValue)_\(subject)"
    }

    /// 16 hex digits of a 64-bit FNV-1a hash of `parts` (joined by a zero byte): a stable, short
    /// stand-in for text of any kind (app user ids) in an event id, which travels in a
    /// `webhook-id` header.
    public static func fingerprint(_ parts: String...) -> String {
        let hex = String(StableHash.fnv1a(parts), radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }
}
