public import Foundation
public import StorekeeperDomain

/// Each app's experiments on offerings and who is enrolled in which arm (docs/EXPERIMENTS.md).
/// An operator's change is written with its audit entry in one transaction.
public protocol ExperimentStore: Sendable {
    /// The app's experiments by id.
    func experiments(appId: String) async throws -> [Experiment]
    /// False (nothing written, no audit entry) when the app has an experiment of this id.
    func createExperiment(appId: String, experiment: Experiment, audit: AuditEntry, now: Date) async throws -> Bool
    /// Records `now` as its stop. False (no audit entry) when there is none or it is stopped.
    func stopExperiment(appId: String, experimentId: String, audit: AuditEntry, now: Date) async throws -> Bool
    /// Records `arm` as shipped, stops the experiment if it runs, and replaces the app's offering
    /// targeting with `targeting`, audited, in one transaction; false (nothing written) when
    /// there is no such experiment or one of its arms was shipped already.
    func shipExperiment(
        appId: String, experimentId: String, arm: Int, targeting: OfferingTargeting, audit: AuditEntry, now: Date
    )
        async throws -> Bool
    /// The earliest enrollment in the experiment of any of these ids (a customer's known id and
    /// the anonymous ids linked to it); equal instants: the smallest id.
    func enrollment(appId: String, experimentId: String, appUserIds: [String]) async throws -> ExperimentEnrollment?
    /// Records the enrollment and `events` (its `experiment_enrolled`) in one transaction unless
    /// its user is enrolled in the experiment already; the one stored either way (two devices
    /// asking at once get one answer, and one event).
    func enroll(appId: String, _ enrollment: ExperimentEnrollment, events: EventBatch) async throws -> ExperimentEnrollment
    /// What the experiment's results are counted from, in one snapshot: every enrollment with its
    /// user replaced by the known user an anonymous id was linked to (whose id the purchases
    /// moved to), oldest first, and those customers' ledger entries (of `environment` only, when
    /// given), by purchase date.
    func experimentCohort(
        appId: String, experimentId: String, environment: String?
    ) async throws -> (
        enrollments: [ExperimentEnrollment], ledger: [LedgerEntry]
    )
}
