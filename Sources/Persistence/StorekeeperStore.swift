public import Foundation
public import JobQueue
public import StorekeeperDomain

/// The storage ports of the server, one per kind of consumer, so each part asks for what it
/// uses. Each method that changes money-relevant state is one database transaction; the
/// verification use cases change state through `LeasedTransactions` only.
public protocol CatalogStore: Sendable {
    func products(appId: String) async throws -> [Product]
    func product(appId: String, productId: String) async throws -> Product?
    /// Inserts catalog entries that are not stored yet; stored ones (maybe edited) are kept.
    func seedProducts(appId: String, products: [Product], now: Date) async throws
    func upsertProduct(appId: String, product: Product, now: Date) async throws
    func deleteProduct(appId: String, productId: String) async throws -> Bool
    /// The app's named entitlements, by id.
    func entitlementDefinitions(appId: String) async throws -> [EntitlementDefinition]
    /// Inserts definitions not stored yet; stored ones (maybe edited) are kept, as for products.
    func seedEntitlements(appId: String, definitions: [EntitlementDefinition], now: Date) async throws
    /// Writes `definition` and its audit entry in one transaction.
    func upsertEntitlement(appId: String, definition: EntitlementDefinition, audit: AuditEntry, now: Date) async throws
    /// False (and no audit entry) when there was no such entitlement.
    func deleteEntitlement(appId: String, entitlementId: String, audit: AuditEntry, now: Date) async throws -> Bool
}

/// Submissions and the verifications they start.
public protocol VerificationStore: SubmissionTransactions, QueuedVerificationTransactions {
    func verification(id: String) async throws -> VerificationRecord?
    func verifications(appId: String?, states: [VerificationState], createdBefore: Date?, limit: Int) async throws -> [VerificationRecord]
    /// A customer's verifications, newest first, at most `limit` (a customer's page).
    func verifications(appId: String, appUserId: String, limit: Int) async throws -> [VerificationRecord]
    /// The verification a job is about and its receipt, for the job handler.
    func verificationForJob(jobId: String) async throws -> (VerificationRecord, evidence: String)?
    /// Provisional grants of a user still running at `now`.
    func provisionalGrants(appId: String, appUserId: String, now: Date) async throws -> [ProvisionalGrant]
    /// Told of every committed change of a verification, for answers that wait on one.
    var verificationWatch: VerificationWatch { get }
}

/// App Store Server Notifications as received.
public protocol NotificationStore: Sendable {
    /// Who owns an original transaction (the app user it is bound to), if anyone yet.
    func owner(appId: String, originalTransactionId: String) async throws -> String?
    /// Stores a verified App Store Server Notification once per (app, notificationUUID) and, in
    /// the same transaction, what `write` says it causes: its forwards to webhook endpoints, the
    /// events it causes by itself (RESCIND_CONSENT) and the submission of its signed transaction
    /// for the owner. A notification already stored changes nothing and returns
    /// `created == false`.
    func recordNotification(_ write: NotificationWrite, now: Date) async throws -> NotificationResult
    /// The notifications stored about these original transactions, newest signed first (then
    /// newest received), at most `limit`.
    func notifications(appId: String, originalTransactionIds: [String], limit: Int) async throws -> [NotificationRecord]
}

/// What subscribers own and what was paid.
public protocol LedgerStore: Sendable {
    /// Everything one subscriber's view is built from (``SubscriberAssembly``), read in one
    /// transaction so the parts agree with each other.
    func subscriberRows(appId: String, appUserId: String, now: Date) async throws -> SubscriberRows
    func transactions(appId: String, appUserId: String) async throws -> [TransactionRecord]
    /// Every transaction of one customer's Apple account in this app, whichever app user
    /// holds it (Apple's `appTransactionId`), oldest first.
    func transactions(appId: String, appTransactionId: String) async throws -> [TransactionRecord]
    func subscriptions(appId: String, appUserId: String) async throws -> [SubscriptionFacts]
    func ledger(_ query: LedgerQuery) async throws -> [LedgerEntry]
    /// Every transaction of an app in one environment bought before `before`, oldest first
    /// (subscription figures and cohorts, docs/ANALYTICS.md; through `transactions_period`).
    func transactions(appId: String, environment: String, purchasedBefore before: Date) async throws -> [TransactionRecord]
    /// Every subscription of an app in one environment, as last told.
    func subscriptions(appId: String, environment: String) async throws -> [SubscriptionFacts]
    /// The kept figures of an app's environment (docs/ANALYTICS.md, "How the figures are kept"):
    /// day totals and the contributions that depend on where `now` falls in `interval`'s period.
    /// Built from the history on the first read (and after a catalog change), then kept by each grant.
    func metricReadout(appId: String, environment: String, now: Date, interval: ReportInterval) async throws -> MetricReadout
    /// Revenue day totals for the midnights in [from, to), kept likewise.
    func revenueDays(appId: String, environment: String, from: Date, to: Date) async throws -> [RevenueDay]
}

/// Counts for metrics and the operator.
public protocol OperationsStore: Sendable {
    func verificationCounts() async throws -> [VerificationState: Int]
    /// Verifications in `states` created before `createdBefore` (the operator's "flagged" list).
    func countVerifications(states: [VerificationState], createdBefore: Date) async throws -> Int
    func countTransactions(appId: String?) async throws -> Int

    /// Apple's health as the worker processes share it (one row per endpoint); nil before any
    /// process saw the endpoint go down. Each process keeps its own; this row is how one still
    /// waiting for its own probe learns that another one's succeeded.
    func sharedAppleHealth(endpoint: String) async throws -> SharedAppleHealth?
    /// Moves the shared state of `endpoint` to `state` at `at` unless it is there already (no
    /// row counts as healthy), and then only records `events(previous)` in the same
    /// transaction: an outage is announced once, however many processes see it. True when
    /// this call moved it.
    func moveSharedAppleHealth(
        endpoint: String, to state: AppleHealth.State, at: Date, events: @Sendable (SharedAppleHealth?) -> EventBatch?
    ) async throws -> Bool
    /// The moves of every endpoint's shared state at or after `since`, newest first, at most
    /// `limit`: the outage history (each move is kept in the transaction that makes it).
    func appleHealthHistory(since: Date, limit: Int) async throws -> [AppleHealthMove]
    /// App Store Server Notifications received at or after `since` (pushed by Apple or pulled by
    /// the gap-fill), counted by app, type and outcome (through `notifications_received`).
    func notificationCounts(since: Date) async throws -> [NotificationCount]
    /// Keeps one pull of Apple's notification history; pulls started more than 30 days before
    /// `run.startedAt` are deleted in the same transaction.
    func recordGapFillRun(_ run: GapFillRun) async throws
    /// Pulls started at or after `since`, newest first, at most `limit`.
    func gapFillRuns(since: Date, limit: Int) async throws -> [GapFillRun]
    /// Adds each tally to the stored one with the same endpoint, outcome and period (storing it
    /// when there is none), and deletes tallies whose period began before `keptSince`, in one
    /// transaction: every process adds its own calls, and the sums are the whole fleet's.
    func addAppleCalls(_ tallies: [AppleCallTally], keptSince: Date) async throws
    /// The stored tallies whose period began at or after `since`, oldest first.
    func appleCalls(since: Date) async throws -> [AppleCallTally]
}

/// One pull of Apple's notification history for one app: the window asked, what it found, or
/// why it failed.
public struct GapFillRun: Sendable, Hashable {
    /// Why it ran: `scheduled` (every interval) or `operator` (the admin route).
    public var cause: String
    public var appId: String
    public var startedAt: Date
    public var from: Date
    public var to: Date
    public var examined: Int
    /// Notifications not seen before, now stored and processed.
    public var recovered: Int
    public var duplicates: Int
    /// Entries refused or unreadable.
    public var failed: Int
    public var pages: Int
    /// Why the pull itself failed (Apple unavailable, a page refused); nil when it ended.
    public var error: String?

    public init(
        cause: String, appId: String, startedAt: Date, from: Date, to: Date, examined: Int = 0, recovered: Int = 0, duplicates: Int = 0,
        failed: Int = 0, pages: Int = 0, error: String? = nil
    ) {
        self.cause = cause
        self.appId = appId
        self.startedAt = startedAt
        self.from = from
        self.to = to
        self.examined = examined
        self.recovered = recovered
        self.duplicates = duplicates
        self.failed = failed
        self.pages = pages
        self.error = error
    }

    /// How long pulls are kept.
    public static let keptSeconds: TimeInterval = 30 * 86_400
}

/// How many notifications of one type an app received, and what ingesting them decided.
public struct NotificationCount: Sendable, Hashable {
    public var appId: String
    public var notificationType: String
    public var outcome: NotificationOutcome
    public var count: Int

    public init(appId: String, notificationType: String, outcome: NotificationOutcome, count: Int) {
        self.appId = appId
        self.notificationType = notificationType
        self.outcome = outcome
        self.count = count
    }
}

/// One move of an Apple endpoint's shared health: to `state` at `at`.
public struct AppleHealthMove: Sendable, Hashable {
    public var endpoint: String
    public var state: AppleHealth.State
    public var at: Date

    public init(endpoint: String, state: AppleHealth.State, at: Date) {
        self.endpoint = endpoint
        self.state = state
        self.at = at
    }
}

/// One Apple endpoint's shared state and since when.
public struct SharedAppleHealth: Sendable, Hashable {
    public var state: AppleHealth.State
    public var since: Date

    public init(state: AppleHealth.State, since: Date) {
        self.state = state
        self.since = since
    }
}

/// Everything an adapter provides; the server wires one of these into each part.
public protocol StorekeeperStore: CatalogStore, VerificationStore, NotificationStore, LedgerStore, OperationsStore, JobStore,
    LeasedTransactions, EventStore, WebhookStore, PromotionalGrantStore, OfferingStore, CustomerStore, IdentityStore, ConsoleSessionStore,
    LedgerRecomputeStore, CreditStore, RefundRequestStore, AdminTokenStore, AttemptStore, AppTransactionStore, ExperimentStore
{}

/// What a verification job reads and writes: the verification and its evidence, the catalog it
/// grants from, and the leased transactions its outcomes run in.
public typealias VerificationJobStore = VerificationStore & CatalogStore & LeasedTransactions

/// What Apple's shared health reads and writes: the shared row, and the jobs it releases.
public typealias AppleHealthStore = OperationsStore & JobStore
