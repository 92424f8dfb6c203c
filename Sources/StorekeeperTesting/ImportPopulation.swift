import Foundation
import Persistence
public import StorekeeperDomain

/// Customers in every state an App Store purchase can reach, bought at the simulator and told to
/// a server live (the app posts each purchase, Apple's notifications follow): what an import of
/// the same customers into an empty server must reproduce (docs/IMPORT.md, "How it is checked").
public struct ImportPopulation: Sendable {
    /// One state per customer, given in turn.
    public enum Kind: String, CaseIterable, Sendable {
        case consumable, lifetime, seasonPass, subscription, trial, cancelled, billingRetry, gracePeriod, refunded, proratedRefund,
            refundReversed, familyShared, familyRevoked
    }

    public struct Customer: Sendable {
        public var appUserId: String
        public var kind: Kind
        /// The purchase the customer made (for Family Sharing: the member's copy).
        public var transactionId: String
        public var originalTransactionId: String
    }

    public var customers: [Customer]

    /// What the simulator sells for each kind.
    static func product(_ kind: Kind) -> String {
        switch kind {
        case .consumable, .proratedRefund: "com.example.coins100"
        case .lifetime, .refunded, .familyShared, .familyRevoked: "com.example.removeads"
        case .seasonPass, .refundReversed: "com.example.season.pass"
        case .subscription, .trial, .cancelled, .billingRetry, .gracePeriod: "com.example.pro.monthly"
        }
    }

    /// Buys a purchase for each of `count` customers (kinds in turn, users `prefix-N`), each on a
    /// device of its own, and posts its signed transaction to `live` as its user, `concurrency`
    /// at a time. Family Sharing customers are the members: another device buys, then shares.
    public static func buy(
        count: Int, simulator: SimulatorClient, bundleId: String, live: StorekeeperClient, prefix: String = "customer",
        concurrency: Int = 8
    ) async throws -> ImportPopulation {
        let kinds = Kind.allCases
        var customers: [Customer?] = Array(repeating: nil, count: count)
        try await withThrowingTaskGroup(of: (Int, Customer).self) { group in
            var next = 0
            func add() {
                guard next < count else { return }
                let index = next
                next += 1
                group.addTask {
                    let kind = kinds[index % kinds.count]
                    let device = try await simulator.createDevice(bundleId: bundleId, environment: "production")
                    var offer: SimulatorClient.Offer?
                    if kind == .trial { offer = SimulatorClient.Offer(type: 1, discountType: "FREE_TRIAL", period: "P1W") }
                    var bought = try await simulator.purchase(device: device, productId: product(kind), offer: offer)
                    if kind == .familyShared || kind == .familyRevoked {
                        let member = try await simulator.createDevice(bundleId: bundleId, environment: "production")
                        bought = try await simulator.shareWithFamily(transactionId: bought.transactionId, member: member)
                    }
                    let user = "\(prefix)-\(index)"
                    let reply = try await live.postSignedTransaction(appUserId: user, signedTransaction: bought.signedTransaction)
                    guard (200..<300).contains(reply.status) else {
                        throw SimulatorClient.Failure(description: "posting \(user)'s purchase: \(reply.status) \(reply.text)")
                    }
                    return (
                        index,
                        Customer(
                            appUserId: user, kind: kind, transactionId: bought.transactionId,
                            originalTransactionId: bought.originalTransactionId)
                    )
                }
            }
            for _ in 0..<max(1, concurrency) { add() }
            while let (index, customer) = try await group.next() {
                customers[index] = customer
                add()
            }
        }
        return ImportPopulation(customers: customers.compactMap { $0 })
    }

    /// Apple's side of each kind (refunds, a refund reversed, billing failures with and without
    /// a grace period, auto-renew off, a family purchase revoked), then `seconds` pass: the
    /// subscriptions renew, convert from their trial, lapse or fall into billing retry.
    public func age(simulator: SimulatorClient, seconds: Double) async throws {
        for customer in customers {
            switch customer.kind {
            case .cancelled: try await simulator.cancelAutoRenew(originalTransactionId: customer.originalTransactionId)
            case .billingRetry: try await simulator.failBilling(originalTransactionId: customer.originalTransactionId, gracePeriod: false)
            case .gracePeriod: try await simulator.failBilling(originalTransactionId: customer.originalTransactionId, gracePeriod: true)
            case .refunded: try await simulator.refund(transactionId: customer.transactionId)
            case .proratedRefund: try await simulator.refund(transactionId: customer.transactionId, percentage: 25_000)
            case .refundReversed:
                try await simulator.refund(transactionId: customer.transactionId)
                try await simulator.reverseRefund(transactionId: customer.transactionId)
            case .familyRevoked: try await simulator.revoke(transactionId: customer.transactionId)
            case .consumable, .lifetime, .seasonPass, .subscription, .trial, .familyShared: break
            }
        }
        try await simulator.advanceClock(seconds: seconds)
    }

    /// The rows `storekeeper import` reads (JSON lines): each customer's original transaction id.
    public var importLines: [String] {
        customers.map { #"{"appUserId":"\#($0.appUserId)","originalTransactionId":"\#($0.originalTransactionId)"}"# }
    }

    /// What a server says of each customer, in the terms a live server and an import must agree
    /// on: every entitlement and subscription as computed, the credit balance, and the ledger's
    /// rows with their amounts. Left out: when the server learnt each thing (`recordedAt`, the
    /// detected-at instants), where it learnt it (`source`, `imported`), and the row's `state`
    /// (the transaction's state when the row was written: a purchase imported after its refund
    /// reads `refunded`). A refund Apple later reversed is absent from Apple's history, so its
    /// refund and reversal rows (summing to nothing) are left out of both.
    public func snapshot(
        subscriber: (String) async throws -> SubscriberView, ledger: [LedgerEntry]
    ) async throws -> [String: [String]] {
        var result: [String: [String]] = [:]
        let byUser = Dictionary(grouping: ledger, by: \.appUserId)
        for customer in customers {
            let view = try await subscriber(customer.appUserId)
            var lines = view.entitlements.sorted { $0.key < $1.key }.map { Self.describe($0.value) }
            lines += view.subscriptions.map { sub in
                "subscription \(sub.originalTransactionId) \(sub.productId) \(sub.status.rawValue) expires \(Self.ms(sub.expiresDate)) "
                    + "autoRenew \(String(describing: sub.autoRenewEnabled))"
            }
            lines.append("active \(view.activeEntitlements.joined(separator: ",")) credits \(view.creditBalance)")
            lines += Self.ledgerLines(byUser[customer.appUserId] ?? [])
            result[customer.appUserId] = lines
        }
        return result
    }

    static func ms(_ date: Date?) -> String {
        date.map { String(Int64(($0.timeIntervalSince1970 * 1000).rounded())) } ?? "-"
    }

    static func describe(_ e: Entitlement) -> String {
        "entitlement \(e.id) active \(e.isActive) expires \(ms(e.expiresAt)) willRenew \(String(describing: e.willRenew)) "
            + "\(e.periodType.rawValue) \(e.productId ?? "-") \(e.transactionId ?? "-")/\(e.originalTransactionId ?? "-") "
            + "bought \(ms(e.purchaseDate)) \(e.environment ?? "-") \(e.ownership?.rawValue ?? "-") billingIssue \(e.billingIssue) "
            + "grace \(ms(e.gracePeriodExpiresAt)) unsubscribed \(e.unsubscribed)"
    }

    static func ledgerLines(_ entries: [LedgerEntry]) -> [String] {
        let reversed = Set(entries.filter { $0.event == .refundReversed }.map(\.transactionId))
        return entries.filter { !reversed.contains($0.transactionId) || $0.event == .purchase }.map { entry in
            "ledger \(entry.transactionId) \(entry.event.rawValue) \(entry.productId) x\(entry.quantity) "
                + "\(entry.priceMicros.map(String.init) ?? "-") \(entry.currency ?? "-") bought \(ms(entry.purchaseDate))"
        }.sorted()
    }
}
