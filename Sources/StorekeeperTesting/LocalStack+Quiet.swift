import AppStoreSimulator
import Foundation
import JobQueue
import Persistence

extension LocalStack {
    /// Returns once everything caused so far has run at the clocks' current instant: every
    /// notification the simulator had to send was sent and answered (the server stores a
    /// notification with the job it causes before it answers), and the server's job runner
    /// then found no job due and none running. A job may make Apple notify again (a refund
    /// answer, an extension) and a delivery makes jobs, so both are awaited in turn until one
    /// round in which neither did any work. Waits on the two loops' idle signals, never on a
    /// timer; work scheduled for later (a retry, a duplicate sent moments after) is not awaited.
    /// Throws `TestWaitExpired` if that did not happen within `TestWait.seconds`.
    public func settle() async throws {
        let (simulatorIdle, serverIdle, serverWake) = (simulatorIdle, serverIdle, serverWake)
        try await withTestWait("the simulator and the server to settle") {
            while true {
                let before = (simulatorIdle.busyPasses, serverIdle?.busyPasses)
                await simulatorIdle.nextIdle()
                if let serverIdle {
                    serverWake.wake()
                    await serverIdle.nextIdle()
                }
                if simulatorIdle.busyPasses == before.0, serverIdle?.busyPasses == before.1 { return }
            }
        }
    }

    /// Waits until the queue has nothing to do at the clock's current instant: no job due and
    /// none running. Meant for a frozen clock (`clock.freeze()`), where nothing becomes due
    /// until the test moves time. True once the runner says so (a pass begun after this call
    /// found nothing to do); false if it did not within `TestWait.seconds`.
    public func quiet() async throws -> Bool {
        guard let serverIdle else { return true }
        let serverWake = serverWake
        do {
            try await withTestWait("the server's job runner to go idle") {
                serverWake.wake()
                await serverIdle.nextIdle()
            }
            return true
        } catch is TestWaitExpired {
            return false
        }
    }
}
