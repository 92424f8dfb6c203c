public import Foundation
public import StorekeeperDomain

/// The one place a subscriber's stored rows become what they own: `GET /v1/subscribers/{id}`
/// reads it, and every event carries it as its `entitlements`, so the two cannot differ. Pure:
/// the adapters read the rows and write what it returns, and nothing else.
public struct SubscriberAssembly: Sendable {
    /// What the subscriber owns at `now`, their stored states (billing issue and unsubscribe
    /// first seen) annotated.
    public var view: SubscriberView
    /// The entitlement events `trigger` causes; none when the view is only read.
    public var events: [SubscriberEvent]
    /// The entitlement states to store for the next change; nil when they stay as stored.
    public var changedStates: [String: EntitlementState]?

    /// Assembles `rows` at `now`. With a `trigger` (an event being recorded), its entitlement
    /// changes are evaluated against the stored states and the view is annotated with the new ones.
    public init(_ rows: SubscriberRows, now: Date, trigger: SubscriberEvent? = nil) {
        var view = SubscriberView.build(
            appUserId: rows.appUserId, transactions: rows.transactions, subscriptions: rows.subscriptions,
            catalog: Dictionary(rows.catalog.map { ($0.productId, $0) }, uniquingKeysWith: { $1 }), now: now,
            provisional: rows.provisional, entitlements: rows.entitlements, promotional: rows.promotional)
        view.deductSpent(rows.creditsSpent)
        view.attributes = rows.attributes
        view.apply(rows.suspension)
        view.aliases = rows.aliases
        view.appTransaction = rows.appTransaction
        var states = rows.entitlementStates
        events = []
        changedStates = nil
        if let trigger, !(rows.entitlementStates.isEmpty && view.entitlements.isEmpty) {
            let outcome = EntitlementChanges.evaluate(
                before: rows.entitlementStates, after: view.entitlements, definitions: Set(rows.entitlements.map(\.id)), trigger: trigger,
                now: now)
            events = outcome.events
            if outcome.states != rows.entitlementStates { changedStates = outcome.states }
            states = outcome.states
        }
        EntitlementChanges.annotate(&view.entitlements, with: states)
        self.view = view
    }
}
