public import Foundation
public import Persistence
public import StorekeeperDomain

/// The app's offerings as an operator edits them and an app reads them (docs/OFFERINGS.md).
/// Every change is audited in its own transaction; what an app is shown is chosen by
/// `OfferingSelection` from the stored offerings, targeting, the user's override and the
/// catalog's sellable products.
public struct ManageOfferings: Sendable {
    public typealias Store = OfferingStore & CatalogStore & ExperimentStore & IdentityStore

    let store: any Store

    public init(store: any Store) {
        self.store = store
    }

    public func offerings(appId: String) async throws -> (offerings: [Offering], targeting: OfferingTargeting) {
        try await store.offerings(appId: appId)
    }

    /// Creates or replaces one; its problems instead when invalid (nothing stored).
    public func save(appId: String, offering: Offering, actor: AuditActor, now: Date) async throws -> [String] {
        let problems = offering.problems()
        guard problems.isEmpty else { return problems }
        let before = try await store.offerings(appId: appId).offerings.first { $0.id == offering.id }
        try await store.upsertOffering(
            appId: appId, offering: offering,
            audit: AuditEntry.change(
                appId: appId, at: now, actor: actor.name, action: "offering_saved", reason: actor.reason, subject: offering.id, saved: offering
            ).attributed(to: actor).before(before),
            now: now)
        return []
    }

    public enum DeleteOutcome: Sendable, Hashable {
        case deleted
        case notFound
        /// The targeting names it (as current or in these rules): change that first.
        case referenced(current: Bool, rules: [String])
    }

    public func delete(appId: String, offeringId: String, actor: AuditActor, now: Date) async throws -> DeleteOutcome {
        let stored = try await store.offerings(appId: appId)
        let targeting = stored.targeting
        let rules = targeting.rules.filter { $0.offering == offeringId }.map(\.id)
        if targeting.current == offeringId || !rules.isEmpty { return .referenced(current: targeting.current == offeringId, rules: rules) }
        // A targeting saved between the read and the delete may still name it: selection then
        // skips the missing offering, so the app is never pointed at nothing it can show.
        let audit = AuditEntry.change(
            appId: appId, at: now, actor: actor.name, action: "offering_deleted", reason: actor.reason, subject: offeringId, saved: nil as Offering?
        ).attributed(to: actor).before(stored.offerings.first { $0.id == offeringId })
        return try await store.deleteOffering(appId: appId, offeringId: offeringId, audit: audit, now: now) ? .deleted : .notFound
    }

    public enum TargetingOutcome: Sendable, Hashable {
        case saved
        case invalid([String])
        /// Well formed, but naming offerings the app does not have.
        case unknownOfferings([String])
    }

    /// Replaces the targeting whole.
    public func save(appId: String, targeting: OfferingTargeting, actor: AuditActor, now: Date) async throws -> TargetingOutcome {
        let stored = try await store.offerings(appId: appId)
        let ids = Set(stored.offerings.map(\.id))
        let shape = targeting.problems(offerings: targeting.referencedOfferings)
        guard shape.isEmpty else { return .invalid(shape) }
        let unknown = targeting.referencedOfferings.subtracting(ids)
        guard unknown.isEmpty else { return .unknownOfferings(unknown.sorted()) }
        try await store.saveOfferingTargeting(
            appId: appId, targeting: targeting,
            audit: AuditEntry.change(
                appId: appId, at: now, actor: actor.name, action: "offering_targeting_saved", reason: actor.reason, subject: "targeting",
                saved: targeting
            ).attributed(to: actor).before(stored.targeting),
            now: now)
        return .saved
    }

    public enum OverrideOutcome: Sendable, Hashable {
        case set
        case cleared
        case unknownOffering
        case noOverride
    }

    /// Shows `offeringId` to one user whatever the targeting says; nil clears it.
    public func setOverride(appId: String, appUserId: String, offeringId: String?, actor: AuditActor, now: Date) async throws -> OverrideOutcome {
        if let offeringId, !(try await store.offerings(appId: appId).offerings.contains { $0.id == offeringId }) { return .unknownOffering }
        struct Override: Encodable { var offering: String? }
        let audit = AuditEntry.change(
            appId: appId, at: now, actor: actor.name, action: offeringId == nil ? "offering_override_cleared" : "offering_override_set",
            reason: actor.reason, subject: offeringId ?? "override", appUserId: appUserId, saved: Override(offering: offeringId)
        ).attributed(to: actor)
        let changed = try await store.saveOfferingOverride(appId: appId, appUserId: appUserId, offeringId: offeringId, audit: audit, now: now)
        return offeringId != nil ? .set : changed ? .cleared : .noOverride
    }

    public func override(appId: String, appUserId: String) async throws -> String? {
        try await store.offeringOverride(appId: appId, appUserId: appUserId)
    }

    /// What an app is shown. `appUserId` only when the caller proved who the user is (a user
    /// token, or the app's backend): an anonymous caller naming a user must not learn that
    /// user's override, nor be enrolled in an experiment (its arm is the user's). A proved user
    /// asking while an experiment shows is enrolled once, at `now`, in the arm the documented
    /// hash gives; an enrollment of an id linked to them since (an earlier device) wins.
    public func forApp(appId: String, appUserId: String?, audience: OfferingAudience, now: Date) async throws -> OfferingSelection {
        let (offerings, targeting) = try await store.offerings(appId: appId)
        let userOverride: String? = if let appUserId { try await store.offeringOverride(appId: appId, appUserId: appUserId) } else { nil }
        var enrollment: ExperimentEnrollment?
        if let appUserId, userOverride == nil {
            enrollment = try await enroll(appId: appId, appUserId: appUserId, offerings: Set(offerings.map(\.id)), now: now)
        }
        let sellable = try await ManageCatalog(store: store).sellable(appId: appId)
        return OfferingSelection.select(
            offerings: offerings, targeting: targeting, userOverride: userOverride, enrollment: enrollment, audience: audience,
            sellable: sellable)
    }

    /// The user's arm in the experiment showing now (the first by id), enrolling them when
    /// enrollment is open; nil when none shows, or they were never enrolled and it is closed.
    func enroll(appId: String, appUserId: String, offerings: Set<String>, now: Date) async throws -> ExperimentEnrollment? {
        guard let experiment = try await store.experiments(appId: appId).first(where: { $0.shows(at: now) }) else { return nil }
        let ids = [appUserId] + (try await store.aliases(appId: appId, appUserId: appUserId))
        if let enrolled = try await store.enrollment(appId: appId, experimentId: experiment.id, appUserIds: ids) { return enrolled }
        guard experiment.enrolls(at: now) else { return nil }
        let enrollment = experiment.enrollment(of: appUserId, at: now)
        return try await store.enroll(appId: appId, enrollment, events: EventBatch(events: [enrollment.event(appId: appId)]))
    }
}
