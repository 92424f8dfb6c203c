import Foundation
public import Persistence
import ServiceLifecycle
import StorekeeperDomain

/// The wait behind `?wait=`: a caller that asked to wait gets the verification once it is
/// final (or held for the operator), when `deadline` passes, or at once when the process
/// begins to stop (so its answer, a 202, does not hold up the shutdown). Woken by the store's
/// watch when a commit changes the verification; it reads again at least every second in case
/// a wake-up was lost (another process committed and its notification did not arrive).
public struct AwaitVerification: Sendable {
    let store: any VerificationStore

    public init(store: any VerificationStore) {
        self.store = store
    }

    public func callAsFunction(
        _ verification: VerificationRecord, until deadline: ContinuousClock.Instant
    ) async throws
        -> VerificationRecord
    {
        let watch = store.verificationWatch
        let id = verification.id
        var current = verification
        while !Self.isSettled(current), ContinuousClock.now < deadline, !Task.isShuttingDownGracefully {
            let ticket = watch.register(id)
            defer { watch.unregister(id, ticket) }
            current = try await store.verification(id: id) ?? current
            if Self.isSettled(current) { break }
            let remaining = deadline - ContinuousClock.now
            await withGracefulShutdownHandler {
                await ticket.wait(timeout: min(remaining, .seconds(1)))
            } onGracefulShutdown: {
                watch.notify(id)
            }
        }
        return current
    }

    /// Nothing more happens without Apple or the operator.
    static func isSettled(_ verification: VerificationRecord) -> Bool {
        verification.state.isFinal || verification.state == .configurationError
    }
}
