import AppStoreSimulator
import Foundation
import JobQueue
import Persistence

extension LocalStack {
    /// Waits until the queue has nothing to do at the clock's current instant: no job due and
    /// none running. Meant for a frozen clock (`clock.freeze()`), where nothing becomes due
    /// until the test moves time. A job that ends may make another due (a recovery releases
    /// the waiting), so the two reads are taken twice in turn: a job due after the first read is
    /// running or due at the second, and one running then is seen by the last. False if that
    /// did not happen within a minute.
    public func quiet() async throws -> Bool {
        try await eventually {
            for _ in 0..<2 {
                // Compared as the store compares when it leases: in whole milliseconds, rounded.
                if let due = try await store.nextJobDue(), StoredTime.ms(due) <= StoredTime.ms(clock.now()) { return false }
                if try await store.jobCounts()[.running, default: 0] > 0 { return false }
            }
            return true
        }
    }
}
