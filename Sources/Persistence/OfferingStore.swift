public import Foundation
public import StorekeeperDomain

/// Each app's offerings, its targeting and users' overrides. Every operator change is written
/// with its audit entry in one transaction.
public protocol OfferingStore: Sendable {
    /// The app's offerings by id, and its targeting (empty when none was ever stored).
    func offerings(appId: String) async throws -> (offerings: [Offering], targeting: OfferingTargeting)
    /// Inserts offerings not stored yet and the targeting when none is stored; stored ones
    /// (maybe edited) are kept, as for products.
    func seedOfferings(appId: String, offerings: [Offering], targeting: OfferingTargeting?, now: Date) async throws
    func upsertOffering(appId: String, offering: Offering, audit: AuditEntry, now: Date) async throws
    /// False (and no audit entry) when there was no such offering.
    func deleteOffering(appId: String, offeringId: String, audit: AuditEntry, now: Date) async throws -> Bool
    func saveOfferingTargeting(appId: String, targeting: OfferingTargeting, audit: AuditEntry, now: Date) async throws
    /// The offering one user is shown whatever the targeting says.
    func offeringOverride(appId: String, appUserId: String) async throws -> String?
    /// Sets (`offeringId`) or clears (nil) a user's override. False (and no audit entry) when
    /// clearing one that did not exist.
    func saveOfferingOverride(appId: String, appUserId: String, offeringId: String?, audit: AuditEntry, now: Date) async throws -> Bool
}
