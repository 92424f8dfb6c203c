public import Foundation

/// What to do when a second app user submits an original transaction already bound to another.
public enum BindingPolicy: String, Codable, Sendable {
    /// Refuse the grant and report a conflict (the default: never guess who paid).
    case refuse
    /// Move the original transaction, and what it grants, to the new app user.
    case transfer
}

/// Everything the planner may read. The storage adapter loads it inside the same database
/// transaction in which it later applies the plan, so the plan cannot act on stale state.
public struct GrantContext: Sendable {
    public var appId: String
    public var bundleId: String
    public var appUserId: String
    public var verificationId: String
    public var now: Date
    public var catalog: [String: Product]
    public var bindingPolicy: BindingPolicy
    public var existingTransactions: [String: TransactionRecord]
    public var bindings: [String: OwnershipBinding]
    public var subscriptions: [String: SubscriptionFacts]
    /// When the answer was signed (a notification's or transaction's `signedDate`); nil means
    /// it is current (verifyReceipt, the Server API). Orders refunds against their reversals.
    public var evidenceSignedAt: Date? = nil
    /// The answer is a REFUND_REVERSED notification: a recorded refund it no longer shows is undone.
    public var reversesRefunds = false
    /// Claims recorded at acceptance on the original transactions the answer names, by original
    /// transaction id (`OwnershipClaimRule`).
    public var claims: [String: [OwnershipClaim]] = [:]
    /// The answer comes from an import of existing customers: what it grants and books is
    /// marked imported.
    public var imported = false
    /// The app's commission programme, for the ledger's proceeds.
    public var commission = CommissionProgram.standard

    public init(
        appId: String, bundleId: String, appUserId: String, verificationId: String, now: Date, catalog: [String: Product],
        bindingPolicy: BindingPolicy,
        existingTransactions: [String: TransactionRecord] = [:], bindings: [String: OwnershipBinding] = [:],
        subscriptions: [String: SubscriptionFacts] = [:]
    ) {
        self.appId = appId
        self.bundleId = bundleId
        self.appUserId = appUserId
        self.verificationId = verificationId
        self.now = now
        self.catalog = catalog
        self.bindingPolicy = bindingPolicy
        self.existingTransactions = existingTransactions
        self.bindings = bindings
        self.subscriptions = subscriptions
    }
}

/// A transaction that was not granted because another app user owns its original transaction.
public struct GrantConflict: Codable, Hashable, Sendable {
    public static let ownedByAnotherUser = "original_transaction_owned_by_another_user"
    public var code: String
    public var transactionId: String
    public var originalTransactionId: String
    public var productId: String
}

/// An original transaction moved from one app user to another under `BindingPolicy.transfer`.
public struct OwnershipTransfer: Codable, Hashable, Sendable {
    public var originalTransactionId: String
    public var fromAppUserId: String
    public var toAppUserId: String

    public init(originalTransactionId: String, fromAppUserId: String, toAppUserId: String) {
        self.originalTransactionId = originalTransactionId
        self.fromAppUserId = fromAppUserId
        self.toAppUserId = toAppUserId
    }
}

/// What a verification granted, shown on the verification.
public struct GrantSummary: Codable, Hashable, Sendable {
    public var granted: [String] = []
    public var alreadyGranted: [String] = []
    public var revoked: [String] = []
    public var conflicts: [GrantConflict] = []
    public var transfers: [OwnershipTransfer] = []
    public var unknownProducts: [String] = []
    public var creditsAdded: Int = 0
    public var subscriptionsUpdated: [String] = []
    /// Refunds undone by a REFUND_REVERSED (absent when none, so earlier summaries still read).
    public var reinstated: [String]?
    public init() {}
}

/// The writes one verified receipt causes. Applying it twice changes nothing the second time:
/// every insert is keyed by transaction id, every update is to a state already reached.
public struct GrantPlan: Sendable {
    public var newTransactions: [TransactionRecord] = []
    public var revokedTransactions: [TransactionRecord] = []
    /// Refunds reversed: cancellation cleared, `reinstatedAt` set.
    public var reinstatedTransactions: [TransactionRecord] = []
    /// Known transactions that learn their `appTransactionId` or `appAccountToken` (each set
    /// once, never changed).
    public var annotatedTransactions: [TransactionRecord] = []
    public var bindings: [OwnershipBinding] = []
    public var transfers: [OwnershipTransfer] = []
    public var ledger: [LedgerEntry] = []
    public var subscriptions: [SubscriptionFacts] = []
    public var summary = GrantSummary()
    /// The app's catalog as the plan read it (in the grant's transaction): the kept figures'
    /// billing periods and list prices come from it without reading it again.
    public var catalog: [String: Product] = [:]
    public init() {}
}

public enum GrantDecision: Sendable {
    case grant(GrantPlan)
    /// Apple vouched for the receipt, but it is not ours to grant (e.g. another app's bundle id).
    case reject(reason: FailureReason)
    /// An original transaction it names was submitted earlier by another user whose verification
    /// has not ended: nothing is granted now; the verification tries again later.
    case wait(reason: FailureReason, originalTransactionId: String)
}

/// Turns verified purchase evidence into grants. Pure: no clock, no database, no Apple wire model.
public enum GrantPlanner {
    public static func plan(_ evidence: PurchaseEvidence, context: GrantContext) -> GrantDecision {
        guard evidence.bundleId == context.bundleId else { return .reject(reason: .bundleIdMismatch) }

        var plan = GrantPlan()
        plan.catalog = context.catalog
        var bindings = context.bindings
        let env = evidence.environment
        let transactions = evidence.purchases

        if context.bindingPolicy == .refuse {
            for tx in transactions where bindings[tx.originalTransactionId] == nil {
                let claims = context.claims[tx.originalTransactionId] ?? []
                if case .wait = OwnershipClaimRule.verdict(for: context.appUserId, claims: claims) {
                    return .wait(reason: .earlierClaimPending, originalTransactionId: tx.originalTransactionId)
                }
            }
        }

        var grantedAutoRenewable: [String: [PurchaseEvidence.Purchase]] = [:]
        var staleRevocations = Set<String>()
        var reinstatedIds = Set<String>()
        for tx in transactions {
            let product = context.catalog[tx.productId]
            let type = product?.type ?? .unknown
            guard BindingRule.bind(tx, context: context, bindings: &bindings, plan: &plan) else { continue }
            if type == .autoRenewable { grantedAutoRenewable[tx.originalTransactionId, default: []].append(tx) }

            if let existing = context.existingTransactions[tx.transactionId] {
                if (existing.appTransactionId == nil && tx.appTransactionId != nil)
                    || (existing.appAccountToken == nil && tx.appAccountToken != nil)
                {
                    var annotated = existing
                    annotated.appTransactionId = existing.appTransactionId ?? tx.appTransactionId
                    annotated.appAccountToken = existing.appAccountToken ?? tx.appAccountToken
                    plan.annotatedTransactions.append(annotated)
                }
                let evidenceAt = context.evidenceSignedAt ?? context.now
                switch RefundRule.change(existing, seen: tx, evidenceAt: evidenceAt, reversesRefunds: context.reversesRefunds) {
                case .none:
                    plan.summary.alreadyGranted.append(tx.transactionId)
                case .staleRefund:
                    staleRevocations.insert(tx.transactionId)
                    plan.summary.alreadyGranted.append(tx.transactionId)
                case .revoke(let revoked):
                    plan.revokedTransactions.append(revoked)
                    plan.summary.revoked.append(tx.transactionId)
                    plan.ledger.append(
                        LedgerRule.entry(
                            revoked, product: product, event: .refund, state: "refunded", now: context.now,
                            refundedShare: revoked.revocationPercentage, commission: context.commission))
                case .reinstate(let reinstated, let wasRevoked):
                    plan.reinstatedTransactions.append(reinstated)
                    if wasRevoked {
                        reinstatedIds.insert(tx.transactionId)
                        plan.summary.reinstated = (plan.summary.reinstated ?? []) + [tx.transactionId]
                        plan.ledger.append(
                            LedgerRule.entry(
                                reinstated, product: product, event: .refundReversed, state: "granted", now: context.now,
                                refundedShare: existing.revocationPercentage, commission: context.commission))
                    } else {
                        plan.summary.alreadyGranted.append(tx.transactionId)
                    }
                }
                continue
            }

            if product == nil, !plan.summary.unknownProducts.contains(tx.productId) {
                plan.summary.unknownProducts.append(tx.productId)
            }
            let credits = (type == .consumable && tx.cancellationDate == nil) ? (product?.creditAmount ?? 1) * tx.quantity : 0
            var record = TransactionRecord(
                appId: context.appId, appUserId: bindings[tx.originalTransactionId]?.appUserId ?? context.appUserId,
                transactionId: tx.transactionId, originalTransactionId: tx.originalTransactionId,
                productId: tx.productId, productType: type, environment: env, purchaseDate: tx.purchaseDate,
                originalPurchaseDate: tx.originalPurchaseDate, expiresDate: tx.expiresDate,
                cancellationDate: tx.cancellationDate, quantity: tx.quantity, credits: credits,
                ownershipType: tx.ownershipType, verificationId: context.verificationId)
            if context.reversesRefunds, tx.cancellationDate == nil { record.reinstatedAt = context.evidenceSignedAt ?? context.now }
            record.appTransactionId = tx.appTransactionId
            record.appAccountToken = tx.appAccountToken
            record.revocationType = tx.revocationType
            record.revocationPercentage = tx.revocationPercentage
            record.billingPlanType = tx.billingPlanType
            record.commitment = tx.commitment
            record.offer = tx.offer
            record.price = tx.price
            record.storefront = tx.storefront
            record.imported = context.imported
            plan.newTransactions.append(record)
            plan.summary.granted.append(tx.transactionId)
            plan.summary.creditsAdded += credits
            let state = tx.cancellationDate == nil ? "granted" : "refunded"
            plan.ledger.append(
                LedgerRule.entry(record, product: product, event: .purchase, state: state, now: context.now, commission: context.commission))
            if tx.cancellationDate != nil {
                plan.summary.revoked.append(tx.transactionId)
                plan.ledger.append(
                    LedgerRule.entry(
                        record, product: product, event: .refund, state: "refunded", now: context.now,
                        refundedShare: record.revocationPercentage, commission: context.commission))
            }
        }

        for (originalId, group) in grantedAutoRenewable.sorted(by: { $0.key < $1.key }) {
            guard let owner = bindings[originalId]?.appUserId,
                let facts = SubscriptionFactsRule.facts(
                    originalId, purchases: group, owner: owner, evidence: evidence, context: context,
                    refundStands: { id in
                        // A refund already recorded stands, even when a later answer omits it (a
                        // late renewal notification, an older receipt), unless reversed now.
                        reinstatedIds.contains(id) ? nil : context.existingTransactions[id]?.cancellationDate
                    }, refundIsStale: { staleRevocations.contains($0) })
            else { continue }
            plan.subscriptions.append(facts)
            plan.summary.subscriptionsUpdated.append(originalId)
        }
        if context.imported {
            for index in plan.ledger.indices { plan.ledger[index].imported = true }
        }
        return .grant(plan)
    }
}
