public import Foundation
import Synchronization

/// The simulated App Store's idea of now: the wall clock plus an offset that a test moves
/// forward (`POST /sim/clock/advance`), so a month of renewals, a grace period or an expiry
/// happens at the test's word instead of after real waiting. A server sharing this clock (the
/// in-process test stack passes `now` to both) sees the same instants Apple does.
///
/// A test that counts what happens per unit of time (probes per backoff step, calls per outage)
/// freezes it: then time moves only when the test advances it, and every bound it asserts is a
/// count of its own steps, whatever the load on the machine.
public final class SimulatorClock: Sendable {
    private struct State {
        var offset: TimeInterval = 0
        /// Set while frozen: the instant `now()` answers.
        var frozenAt: Date?
    }

    private let state = Mutex(State())

    public init() {}

    public func now() -> Date {
        state.withLock { $0.frozenAt ?? Date().addingTimeInterval($0.offset) }
    }

    /// Seconds the clock is ahead of the wall clock.
    public var offsetSeconds: TimeInterval {
        state.withLock { state in state.frozenAt.map { $0.timeIntervalSinceNow } ?? state.offset }
    }

    /// Whether only `advance` moves the clock.
    public var isFrozen: Bool { state.withLock { $0.frozenAt != nil } }

    /// Stops the clock at its current instant: from now on only `advance` moves it.
    public func freeze() {
        state.withLock { state in
            if state.frozenAt == nil { state.frozenAt = Date().addingTimeInterval(state.offset) }
        }
    }

    /// Lets a frozen clock run again with the wall clock, from the instant it stands at.
    public func thaw() {
        state.withLock { state in
            guard let frozenAt = state.frozenAt else { return }
            state.offset = frozenAt.timeIntervalSinceNow
            state.frozenAt = nil
        }
    }

    /// Moves the clock forward; time never runs backwards (Apple's dates only grow).
    public func advance(by seconds: TimeInterval) {
        guard seconds > 0, seconds.isFinite else { return }
        state.withLock { state in
            if let frozenAt = state.frozenAt {
                state.frozenAt = frozenAt.addingTimeInterval(seconds)
            } else {
                state.offset += seconds
            }
        }
    }
}
