public import Foundation
public import JobQueue
public import StorekeeperDomain

/// The narrow transaction port the verification use cases run over (StorekeeperCore). The
/// adapter checks the lease, reads, takes its locks and applies writes; every decision is the
/// use case's, made by a pure function between the reads and the writes. So what a verified
/// purchase means is written once, and each adapter only turns these values into SQL.
public protocol LeasedTransactions: Sendable {
    /// One database transaction on behalf of `lease`:
    /// 1. nothing happens unless the lease still holds its job (PostgreSQL locks the job row);
    /// 2. the verification is read, the original transactions of `query` are locked
    ///    (PostgreSQL: transaction-scoped advisory locks; SQLite: its single writer) and the
    ///    grant facts they name are loaded;
    /// 3. `decide` turns what was read into writes and a result;
    /// 4. the writes are applied in order. A guarded write that finds its row moved on throws
    ///    `StorageConflict`, and the whole transaction rolls back.
    ///
    /// Returns nil when the lease was lost (nothing written). `decide` must be pure: PostgreSQL
    /// runs the transaction again after a serialization failure.
    func withLease<T: Sendable>(
        _ lease: JobLease, verificationId: String, reading query: GrantFactsQuery, now: Date,
        _ decide: @escaping @Sendable (LeasedVerification?, GrantFacts) throws -> LeasedDecision<T>
    ) async throws -> T?
}

/// Which rows a use case reads inside its leased transaction.
public struct GrantFactsQuery: Sendable, Hashable {
    public var appId: String
    public var transactionIds: [String]
    public var originalTransactionIds: [String]
    /// The app's catalog: a grant is planned from the catalog as stored when it commits, so a
    /// product changed meanwhile cannot be granted from a stale copy read before.
    public var readsCatalog: Bool
    /// The verification as submitted, with its evidence: an attempt's start reads it in the
    /// transaction that marks it verifying, so the job crosses the port once to begin.
    public var readsSubmission: Bool

    public init(
        appId: String, transactionIds: [String], originalTransactionIds: [String], readsCatalog: Bool = false,
        readsSubmission: Bool = false
    ) {
        self.appId = appId
        self.transactionIds = transactionIds
        self.originalTransactionIds = originalTransactionIds
        self.readsCatalog = readsCatalog
        self.readsSubmission = readsSubmission
    }

    /// Reads no granted state (a refusal, a retry, a hold).
    public static let nothing = GrantFactsQuery(appId: "", transactionIds: [], originalTransactionIds: [])

    /// Reads the verification and what was submitted (an attempt's start).
    public static let submission = GrantFactsQuery(appId: "", transactionIds: [], originalTransactionIds: [], readsSubmission: true)
}

/// A verification as submitted: the record and the evidence stored with it (a receipt, a JWS,
/// transaction ids).
public struct SubmittedVerification: Sendable {
    public var record: VerificationRecord
    public var evidence: String

    public init(record: VerificationRecord, evidence: String) {
        self.record = record
        self.evidence = evidence
    }
}

/// What a leased transaction read: granted state keyed by transaction id and original
/// transaction id, and what the query asked for besides.
public struct GrantFacts: Sendable {
    public var transactions: [String: TransactionRecord]
    public var bindings: [String: OwnershipBinding]
    public var subscriptions: [String: SubscriptionFacts]
    /// Claims recorded at acceptance, by original transaction id, each with the state of the
    /// verification it came with.
    public var claims: [String: [OwnershipClaim]]
    /// The app's catalog by product id (`readsCatalog`).
    public var catalog: [String: Product]
    /// The leased verification as submitted (`readsSubmission`); nil when it is gone.
    public var submission: SubmittedVerification?

    public init(
        transactions: [String: TransactionRecord] = [:], bindings: [String: OwnershipBinding] = [:],
        subscriptions: [String: SubscriptionFacts] = [:], claims: [String: [OwnershipClaim]] = [:], catalog: [String: Product] = [:],
        submission: SubmittedVerification? = nil
    ) {
        self.transactions = transactions
        self.bindings = bindings
        self.subscriptions = subscriptions
        self.claims = claims
        self.catalog = catalog
        self.submission = submission
    }
}

/// The verification a lease works on, as stored when its transaction began.
public struct LeasedVerification: Sendable, Hashable {
    public var id: String
    public var appId: String
    public var appUserId: String
    public var state: VerificationState
    /// Provisional access this verification gave while Apple was unreachable (the outage
    /// policy), still recorded: an outcome that ends it says so in an event.
    public var provisionalGrants: [ProvisionalGrant]
    /// What the submitter said besides the evidence (`EvidenceSubmission.hints`), e.g. that an
    /// import made it.
    public var hints: [String: String]

    public init(
        id: String, appId: String, appUserId: String, state: VerificationState, provisionalGrants: [ProvisionalGrant] = [],
        hints: [String: String] = [:]
    ) {
        self.hints = hints
        self.id = id
        self.appId = appId
        self.appUserId = appUserId
        self.state = state
        self.provisionalGrants = provisionalGrants
    }
}

/// What a use case decided: the writes, in order, and what to answer.
public struct LeasedDecision<Result: Sendable>: Sendable {
    public var writes: [LeasedWrite]
    public var result: Result

    public init(writes: [LeasedWrite], result: Result) {
        self.writes = writes
        self.result = result
    }
}

extension LeasedDecision {
    /// Verifications these writes change: their waiters are told once the transaction commits.
    public var changedVerifications: [String] {
        writes.compactMap { write in
            if case .verification(let change) = write { change.id } else { nil }
        }
    }
}

/// What an adapter's leased transaction committed: the use case's result and the verifications
/// it changed.
public struct LeasedCommit<Result: Sendable>: Sendable {
    public var result: Result
    public var changed: [String]

    public init(result: Result, changed: [String]) {
        self.result = result
        self.changed = changed
    }
}

/// One write of a leased transaction.
public enum LeasedWrite: Sendable {
    /// The leased job ends its attempt (guarded by `from` and the lease token).
    case job(JobLifecycle.Transition)
    /// The verification moves on (guarded by `from`).
    case verification(VerificationChange)
    /// A grant plan: bindings, transfers, transactions, refunds, ledger, subscriptions.
    case grant(GrantPlan, appId: String)
    /// Provisional access of the verification, granted while Apple is unreachable.
    case provisionalGrants([ProvisionalGrant])
    /// Provisional access of the verification ends: Apple answered.
    case endProvisionalGrants(verificationId: String)
    /// Events of the change, recorded in the outbox. Apply it last: each event's entitlements
    /// are read from the rows the transaction's other writes left.
    case events(EventBatch)
}

/// A guarded change of one verification row.
public struct VerificationChange: Sendable {
    public var id: String
    public var from: VerificationState
    public var to: VerificationState
    /// Attempt number to show (set when verifying starts).
    public var attempts: Int?
    /// What the attempt learnt; nil leaves reason, statuses and environment as stored.
    public var report: AttemptReport?
    public var nextAttemptAt: Date?
    public var finalizes: Bool
    public var grant: GrantSummary?
    /// The app configuration a hold was taken under.
    public var configurationFingerprint: String?
    /// It starts over (requeued, released from a hold): no next attempt time, not finalized.
    public var restarts: Bool

    public init(
        id: String, from: VerificationState, to: VerificationState, attempts: Int? = nil, report: AttemptReport? = nil,
        nextAttemptAt: Date? = nil, finalizes: Bool = false, grant: GrantSummary? = nil, configurationFingerprint: String? = nil,
        restarts: Bool = false
    ) {
        self.id = id
        self.from = from
        self.to = to
        self.attempts = attempts
        self.report = report
        self.nextAttemptAt = nextAttemptAt
        self.finalizes = finalizes
        self.grant = grant
        self.configurationFingerprint = configurationFingerprint
        self.restarts = restarts
    }
}

/// A guarded write found its row in another state than the use case read: something else
/// changed it inside the same transaction window. The transaction is rolled back.
public struct StorageConflict: Error, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { "storage conflict: \(message)" }
}
