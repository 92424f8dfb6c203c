public import Foundation
import Synchronization

/// Names seen within a sliding window, so a signed request is answered once: the first use of a
/// name within `window` is allowed, any later one refused. Entries older than the window are
/// dropped as new ones arrive, and at most `capacity` are kept (then the oldest go first), so a
/// flood cannot grow memory without bound. Time is an input.
public final class RetentionReplayGuard: Sendable {
    private struct State {
        var seen: [String: Date] = [:]
        /// Names in the order they were seen, to drop the oldest.
        var order: [(name: String, at: Date)] = []
        var start = 0
    }

    public let window: TimeInterval
    public let capacity: Int
    private let state = Mutex(State())

    public init(window: TimeInterval, capacity: Int = 100_000) {
        self.window = window
        self.capacity = capacity
    }

    /// Whether this is the first use of `name` within the window (and records it).
    public func first(_ name: String, now: Date) -> Bool {
        state.withLock { state in
            let horizon = now.addingTimeInterval(-window)
            while state.start < state.order.count,
                state.order[state.start].at <= horizon || state.order.count - state.start >= capacity
            {
                let old = state.order[state.start]
                if state.seen[old.name] == old.at { state.seen[old.name] = nil }
                state.start += 1
            }
            if state.start > 1_024, state.start * 2 > state.order.count {
                state.order.removeFirst(state.start)
                state.start = 0
            }
            if let at = state.seen[name], at > horizon { return false }
            state.seen[name] = now
            state.order.append((name, now))
            return true
        }
    }
}
