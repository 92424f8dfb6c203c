/// Runs one kind of job. Handlers must be idempotent: delivery is at least once, because a
/// runner can die after the work and before recording it.
public protocol JobHandler: Sendable {
    var kind: String { get }
    func run(_ lease: JobLease) async -> JobOutcome
}
