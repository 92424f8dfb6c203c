public import Foundation
import Synchronization

/// The simulated App Store's idea of now: the wall clock plus an offset that a test moves
/// forward (`POST /sim/clock/advance`), so a month of renewals, a grace period or an expiry
/// happens at the test's word instead of after real waiting. A server sharing this clock (the
/// in-process test stack passes `now` to both) sees the same instants Apple does.
public final class SimulatorClock: Sendable {
    private let offset = Mutex<TimeInterval>(0)

    public init() {}

    public func now() -> Date { Date().addingTimeInterval(offset.withLock { $0 }) }

    /// Seconds the clock is ahead of the wall clock.
    public var offsetSeconds: TimeInterval { offset.withLock { $0 } }

    /// Moves the clock forward; time never runs backwards (Apple's dates only grow).
    public func advance(by seconds: TimeInterval) {
        guard seconds > 0, seconds.isFinite else { return }
        offset.withLock { $0 += seconds }
    }
}
