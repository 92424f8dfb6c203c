import Foundation
import Hummingbird
import JobQueue
import NIOCore
import Persistence
import StorekeeperDomain

/// `/healthz` and `/metrics`: unauthenticated, no secrets, no user data.
struct OperationsController {
    let context: ServerContext
    let runner: JobRunner?

    func register(on router: Router<BasicRequestContext>) {
        router.get("healthz") { _, _ in
            do {
                _ = try await context.store.jobCounts()
                return try StorekeeperJSON.response(["status": "ok", "database": "ok"])
            } catch {
                return try StorekeeperJSON.response(["status": "unavailable", "database": "error"], status: .serviceUnavailable)
            }
        }
        router.get("metrics") { _, _ in
            let jobs = try await context.store.jobCounts()
            let verifications = try await context.store.verificationCounts()
            let flagged = try await context.store.countVerifications(
                states: VerificationState.allCases.filter { !$0.isFinal },
                createdBefore: context.now().addingTimeInterval(-context.configuration.flagAfterSeconds))
            let text = context.metrics.render(gauges: [
                (
                    "storekeeper_jobs", "Durable jobs by state.",
                    JobState.allCases.map { (["state": $0.rawValue], Double(jobs[$0] ?? 0)) }
                ),
                (
                    "storekeeper_verifications", "Verifications by state.",
                    VerificationState.allCases.map { (["state": $0.rawValue], Double(verifications[$0] ?? 0)) }
                ),
                ("storekeeper_verifications_flagged", "Verifications not final after flagAfterSeconds.", [([:], Double(flagged))]),
                ("storekeeper_jobs_in_flight", "Jobs running in this process.", [([:], Double(runner?.runningCount ?? 0))]),
            ])
            return Response(
                status: .ok, headers: [.contentType: "text/plain; version=0.0.4"], body: .init(byteBuffer: ByteBuffer(string: text)))
        }
    }
}
