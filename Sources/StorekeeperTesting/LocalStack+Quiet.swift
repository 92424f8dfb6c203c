import AppStoreSimulator
import Foundation
import JobQueue
import Persistence

extension LocalStack {
    /// Returns once everything caused so far has run at the clocks' current instant: every
    /// notification the simulator had to send was sent and answered (the server stores a
    /// notification with the job it causes before it answers), and the server's job runner
    /// then found no job due and none running. A job may make Apple notify again (a refund
    /// answer, an extension) and a delivery makes jobs, so both are awaited in turn until a
    /// round in which the simulator did no work (the server's periodic work, a held delivery
    /// looked at again, does not hold it up: a runner's pass with nothing due is idle). Waits on
    /// the two loops' idle signals, never on a timer. A notification Apple will send again (a
    /// delivery the server did not take, on a busy machine) is awaited while the clock runs; on
    /// a frozen clock it waits for the test to move time, as a job due later does.
    /// Throws `TestWaitExpired` if that did not happen within `TestWait.seconds`.
    public func settle() async throws {
        let (simulatorIdle, serverIdle, serverWake) = (simulatorIdle, serverIdle, serverWake)
        try await withTestWait("the simulator and the server to settle") {
            while true {
                let before = simulatorIdle.busyPasses
                await simulatorIdle.nextIdle()
                guard let serverIdle else { return }
                serverWake.wake()
                await serverIdle.nextIdle()
                // What the server's jobs asked of Apple (a refund answer, an extension) is seen
                // by the simulator's next pass: settled when that pass, too, found nothing.
                await simulatorIdle.nextIdle()
                if simulatorIdle.busyPasses == before { return }
            }
        }
    }

    /// `condition` read once everything caused so far has run (`settle()`): what a test asks
    /// after an action whose effects another loop carries out.
    public func whenSettled(_ condition: () async throws -> Bool) async throws -> Bool {
        try await settle()
        return try await condition()
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
