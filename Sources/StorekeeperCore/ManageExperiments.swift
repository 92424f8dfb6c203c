public import Foundation
public import Persistence
public import StorekeeperDomain

/// Experiments on offerings as an operator starts and stops them (docs/EXPERIMENTS.md). At most
/// one experiment of an app is not stopped at a time (a database constraint), so a customer is in one arm, never two,
/// and its arms are fixed once created (a new split is a new experiment). Every change is
/// audited in its own transaction.
public struct ManageExperiments: Sendable {
    public typealias Store = ExperimentStore & OfferingStore

    let store: any Store

    public init(store: any Store) {
        self.store = store
    }

    public func experiments(appId: String) async throws -> [Experiment] {
        try await store.experiments(appId: appId)
    }

    public enum CreateOutcome: Sendable, Hashable {
        case created
        case invalid([String])
        case unknownOfferings([String])
        /// An experiment of this id exists (stopped or not): ids are never reused, so results
        /// and enrollments stay one experiment's.
        case exists
        /// This one is not stopped yet.
        case another(String)
    }

    public func create(appId: String, experiment: Experiment, actor: AuditActor, now: Date) async throws -> CreateOutcome {
        var experiment = experiment
        experiment.stoppedAt = nil
        // Offerings the app lacks first: what a schema cannot say (an offering twice, the end
        // before the start) is only worth telling about arms that could run.
        let offerings = Set(try await store.offerings(appId: appId).offerings.map(\.id))
        let unknown = Set(experiment.arms.map(\.offering)).subtracting(offerings)
        guard unknown.isEmpty else { return .unknownOfferings(unknown.sorted()) }
        let problems = experiment.problems()
        guard problems.isEmpty else { return .invalid(problems) }
        let existing = try await store.experiments(appId: appId)
        if existing.contains(where: { $0.id == experiment.id }) { return .exists }
        if let open = existing.first(where: { $0.stoppedAt == nil }) { return .another(open.id) }
        let audit = AuditEntry.change(
            appId: appId, at: now, actor: actor.name, action: "experiment_created", reason: actor.reason, subject: experiment.id,
            saved: experiment
        ).attributed(to: actor)
        guard try await store.createExperiment(appId: appId, experiment: experiment, audit: audit, now: now) else {
            // Refused by the database: this id was taken, or another experiment was created in
            // the meantime (one not stopped per app is a constraint, so a race has one winner).
            let stored = try await store.experiments(appId: appId)
            if stored.contains(where: { $0.id == experiment.id }) { return .exists }
            return stored.first(where: { $0.stoppedAt == nil }).map { .another($0.id) } ?? .exists
        }
        return .created
    }

    /// Each arm's results at `now` (nil: no such experiment), counted from the ledger of
    /// `environment` (every environment when nil); revenue also in the app's `reporting`
    /// currency when it has one.
    public func results(
        appId: String, experimentId: String, environment: String?, now: Date, reporting: ReportingCurrency? = nil
    ) async throws -> ExperimentResults? {
        guard let experiment = try await store.experiments(appId: appId).first(where: { $0.id == experimentId }) else { return nil }
        let cohort = try await store.experimentCohort(appId: appId, experimentId: experimentId, environment: environment)
        return ExperimentResults.compute(
            experiment: experiment, enrollments: cohort.enrollments, ledger: cohort.ledger, now: now, reporting: reporting)
    }

    public enum StopOutcome: Sendable, Hashable {
        case stopped
        case notFound
        case stoppedAlready
    }

    public func stop(appId: String, experimentId: String, actor: AuditActor, now: Date) async throws -> StopOutcome {
        let now = Experiment.instant(now)
        guard let experiment = try await store.experiments(appId: appId).first(where: { $0.id == experimentId }) else { return .notFound }
        guard experiment.stoppedAt == nil else { return .stoppedAlready }
        var stopped = experiment
        stopped.stoppedAt = now
        let audit = AuditEntry.change(
            appId: appId, at: now, actor: actor.name, action: "experiment_stopped", reason: actor.reason, subject: experimentId, saved: stopped
        ).attributed(to: actor)
        // Stopped by another operator between the read and the write: the same answer.
        return try await store.stopExperiment(appId: appId, experimentId: experimentId, audit: audit, now: now) ? .stopped : .stoppedAlready
    }
}

extension ManageExperiments {
    public enum ShipOutcome: Sendable, Hashable {
        case shipped
        case notFound
        /// The experiment has no such arm.
        case unknownArm
        case shippedAlready(Int)
        /// The arm's offering was deleted since the experiment began.
        case unknownOffering(String)
    }

    /// The operator's decision: the arm's offering becomes what the targeting shows everyone no
    /// rule or override chooses for (the current offering), and the experiment stops if it still
    /// runs, in one change, audited with the targeting before it. Shipped once.
    public func ship(appId: String, experimentId: String, arm: Int, actor: AuditActor, now: Date) async throws -> ShipOutcome {
        let now = Experiment.instant(now)
        guard let experiment = try await store.experiments(appId: appId).first(where: { $0.id == experimentId }) else { return .notFound }
        if let shipped = experiment.shippedArm { return .shippedAlready(shipped) }
        guard experiment.arms.indices.contains(arm) else { return .unknownArm }
        let offering = experiment.arms[arm].offering
        let stored = try await store.offerings(appId: appId)
        guard stored.offerings.contains(where: { $0.id == offering }) else { return .unknownOffering(offering) }
        var targeting = stored.targeting
        targeting.current = offering
        var shipped = experiment
        shipped.shippedArm = arm
        shipped.stoppedAt = experiment.stoppedAt ?? now
        let audit = AuditEntry.change(
            appId: appId, at: now, actor: actor.name, action: "experiment_shipped", reason: actor.reason, subject: experimentId,
            saved: Shipped(experiment: shipped, targeting: targeting)
        ).attributed(to: actor).before(stored.targeting)
        // Shipped by another operator between the read and the write: theirs stands.
        guard try await store.shipExperiment(appId: appId, experimentId: experimentId, arm: arm, targeting: targeting, audit: audit, now: now)
        else {
            let winner = try await store.experiments(appId: appId).first { $0.id == experimentId }?.shippedArm
            return winner.map(ShipOutcome.shippedAlready) ?? .notFound
        }
        return .shipped
    }

    /// What the audit keeps of a ship: the experiment as stopped and the targeting it left.
    struct Shipped: Encodable {
        var experiment: Experiment
        var targeting: OfferingTargeting
    }
}
