public import Foundation
public import StorekeeperDomain

/// One verification as stored and as shown by `GET /v1/verifications/{id}`.
public struct VerificationRecord: Codable, Hashable, Sendable {
    public var id: String
    public var appId: String
    public var appUserId: String
    public var receiptHash: String
    public var jobId: String
    public var state: VerificationState
    /// Why it is invalid, held, or waiting for a retry.
    public var reason: FailureReason?
    /// Leases taken so far (each may call Apple up to three times for environment routing).
    public var attempts: Int
    /// Every verifyReceipt status seen, in order.
    public var appleStatuses: [Int]
    public var environment: String?
    public var nextAttemptAt: Date?
    public var grant: GrantSummary?
    public var createdAt: Date
    public var updatedAt: Date
    public var finalizedAt: Date?

    public init(
        id: String, appId: String, appUserId: String, receiptHash: String, jobId: String, state: VerificationState,
        reason: FailureReason?, attempts: Int, appleStatuses: [Int], environment: String?, nextAttemptAt: Date?,
        grant: GrantSummary?, createdAt: Date, updatedAt: Date, finalizedAt: Date?
    ) {
        self.id = id
        self.appId = appId
        self.appUserId = appUserId
        self.receiptHash = receiptHash
        self.jobId = jobId
        self.state = state
        self.reason = reason
        self.attempts = attempts
        self.appleStatuses = appleStatuses
        self.environment = environment
        self.nextAttemptAt = nextAttemptAt
        self.grant = grant
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.finalizedAt = finalizedAt
    }
}

extension VerificationRecord {
    /// The record of a verification just submitted: what every adapter returns for it.
    public static func pending(_ pending: PendingVerification, submission: EvidenceSubmission, at now: Date) -> VerificationRecord {
        VerificationRecord(
            id: pending.id, appId: submission.appId, appUserId: submission.appUserId, receiptHash: submission.evidenceHash,
            jobId: pending.jobId, state: pending.state, reason: nil, attempts: 0, appleStatuses: [], environment: nil,
            nextAttemptAt: nil, grant: nil, createdAt: now, updatedAt: now, finalizedAt: nil)
    }
}

/// A receipt accepted from an app, to be verified.
/// What was submitted, by kind. Each kind is verified by a job of its own; storage keeps the
/// evidence as text (deduplicated by hash) and the job kind.
public enum SubmittedEvidence: Sendable, Hashable {
    /// An app receipt, base64: verified locally, then by Apple (`verify_receipt`).
    case receipt(base64: String)
    /// A StoreKit 2 signed transaction (`Transaction.jwsRepresentation`), verified locally.
    case signedTransaction(jws: String)
    /// A V2 notification's signed payload: its nested transaction and renewal info are granted.
    case notification(signedPayload: String)
    /// A subscriber refresh: the customer's history pulled from the App Store Server API for
    /// these transaction ids.
    case historyPull(transactionIds: [String])

    /// The job that verifies it.
    public var jobKind: String {
        switch self {
        case .receipt: verifyReceiptJobKind
        case .signedTransaction, .notification: verifySignedTransactionJobKind
        case .historyPull: refreshFromServerAPIJobKind
        }
    }

    /// The text stored and handed to the job.
    public var storedText: String {
        switch self {
        case .receipt(let base64): base64
        case .signedTransaction(let jws): jws
        case .notification(let payload): payload
        case .historyPull(let ids): ids.joined(separator: ",")
        }
    }
}

public struct EvidenceSubmission: Sendable {
    public var appId: String
    public var appUserId: String
    /// SHA-256 of the submitted evidence, hex: the deduplication key with app and user.
    public var evidenceHash: String
    public var evidence: SubmittedEvidence
    /// Verify again even when an earlier verification of the same evidence is final.
    public var refresh: Bool
    public var hints: [String: String]
    /// Original transaction ids the evidence names, as parsed at acceptance (empty when it could
    /// not be parsed locally): recorded as this user's claims in the accepting transaction.
    public var claims: [String]
    /// The operator's action that asked for it (a refresh), recorded in the accepting transaction
    /// when it creates a verification, with that verification's id as its subject.
    public var audit: AuditEntry?

    public init(
        appId: String, appUserId: String, evidenceHash: String, evidence: SubmittedEvidence, refresh: Bool = false,
        hints: [String: String] = [:], claims: [String] = []
    ) {
        self.appId = appId
        self.appUserId = appUserId
        self.evidenceHash = evidenceHash
        self.evidence = evidence
        self.refresh = refresh
        self.hints = hints
        self.claims = claims
    }
}

public struct SubmissionResult: Sendable {
    public var verification: VerificationRecord
    /// False when an existing verification of the same receipt and user was returned.
    public var created: Bool

    public init(verification: VerificationRecord, created: Bool) {
        self.verification = verification
        self.created = created
    }
}

/// What one lease of a verification job learned from Apple, written with its outcome.
public struct AttemptReport: Sendable {
    public var statuses: [Int]
    public var environment: String?
    public var reason: FailureReason?

    public init(statuses: [Int], environment: String?, reason: FailureReason?) {
        self.statuses = statuses
        self.environment = environment
        self.reason = reason
    }
}

/// Inputs for granting a verified receipt, besides what the store loads itself.
public struct GrantRequest: Sendable {
    public var appId: String
    public var bundleId: String
    public var bindingPolicy: BindingPolicy
    /// See `GrantContext.evidenceSignedAt`.
    public var evidenceSignedAt: Date?
    /// See `GrantContext.reversesRefunds`.
    public var reversesRefunds: Bool
    /// When to try again if an earlier submitter's verification must end first.
    public var waitRetryAt: Date?
    /// See `GrantContext.commission`.
    public var commission: CommissionProgram

    public init(
        appId: String, bundleId: String, bindingPolicy: BindingPolicy, evidenceSignedAt: Date? = nil,
        reversesRefunds: Bool = false, waitRetryAt: Date? = nil, commission: CommissionProgram = .standard
    ) {
        self.commission = commission
        self.waitRetryAt = waitRetryAt
        self.appId = appId
        self.bundleId = bundleId
        self.bindingPolicy = bindingPolicy
        self.evidenceSignedAt = evidenceSignedAt
        self.reversesRefunds = reversesRefunds
    }
}

/// How granting a verified answer ended.
public enum GrantResult: Sendable {
    case granted(GrantSummary)
    case rejected(reason: FailureReason)
    /// The lease was gone: another runner owns the job now. Nothing was written.
    case leaseLost
    /// The verification was in a state no attempt may end from (changed by hand): nothing was
    /// granted and its job was discarded.
    case refused(state: VerificationState)
    /// An earlier submitter's verification must end first: nothing granted, retried later.
    case waiting(reason: FailureReason)
}

public struct LedgerQuery: Sendable {
    public var appId: String
    public var environment: String
    public var from: Date
    public var to: Date
    /// Entries after this one in the ledger's order (purchase date, transaction id, event).
    public var after: LedgerPosition?
    /// At most this many; nil for all (the figures computed over a range).
    public var limit: Int?

    public init(appId: String, environment: String, from: Date, to: Date, after: LedgerPosition? = nil, limit: Int? = nil) {
        self.appId = appId
        self.environment = environment
        self.from = from
        self.to = to
        self.after = after
        self.limit = limit
    }
}

/// Where an entry stands in the ledger's order: its purchase date, transaction id and event,
/// which are unique together, so a page ends at an entry and the next starts after it however
/// many entries are added meanwhile (a keyset, not an offset).
public struct LedgerPosition: Sendable, Hashable {
    public var purchaseDate: Date
    public var transactionId: String
    public var event: LedgerEntry.Event

    public init(purchaseDate: Date, transactionId: String, event: LedgerEntry.Event) {
        self.purchaseDate = purchaseDate
        self.transactionId = transactionId
        self.event = event
    }

    public init(_ entry: LedgerEntry) {
        self.init(purchaseDate: entry.purchaseDate, transactionId: entry.transactionId, event: entry.event)
    }

    /// Opaque to a reader (``PageToken``).
    public var token: String { PageToken.make([String(StoredTime.ms(purchaseDate)), event.rawValue, transactionId]) }

    /// Nil for anything `token` did not write.
    public init?(token: String) {
        guard let parts = PageToken.parts(token, count: 3), let ms = Int64(parts[0]), let event = LedgerEntry.Event(rawValue: parts[1]) else {
            return nil
        }
        self.init(purchaseDate: StoredTime.date(ms), transactionId: parts[2], event: event)
    }
}

/// An App Store Server Notification as stored: what it said and what it led to.
public struct NotificationRecord: Sendable, Hashable {
    public var appId: String
    public var notificationUUID: String
    public var notificationType: String
    public var subtype: String?
    public var signedDate: Date?
    public var originalTransactionId: String?
    public var environment: String?
    /// The signed payload as received.
    public var payload: String
    /// What ingesting it decided.
    public var outcome: NotificationOutcome
    /// When the server stored it, and the verification its transaction went to (read back from
    /// the store; nil on a notification being written).
    public var receivedAt: Date?
    public var verificationId: String?

    public init(
        appId: String, notificationUUID: String, notificationType: String, subtype: String?, signedDate: Date?,
        originalTransactionId: String?, environment: String?, payload: String, outcome: NotificationOutcome
    ) {
        self.appId = appId
        self.notificationUUID = notificationUUID
        self.notificationType = notificationType
        self.subtype = subtype
        self.signedDate = signedDate
        self.originalTransactionId = originalTransactionId
        self.environment = environment
        self.payload = payload
        self.outcome = outcome
    }
}

public struct NotificationResult: Sendable {
    /// False when this notification (app, UUID) was stored before: a duplicate delivery.
    public var created: Bool
    /// The verification its signed transaction went to, when one was submitted now.
    public var verification: VerificationRecord?

    public init(created: Bool, verification: VerificationRecord?) {
        self.created = created
        self.verification = verification
    }
}
