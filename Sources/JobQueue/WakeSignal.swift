import Synchronization

/// Lets an enqueue wake idle runners at once instead of waiting for the next poll.
/// A wake with nobody waiting is remembered, so it is never lost between a check and a wait.
public final class WakeSignal: Sendable {
    private struct State {
        var pending = false
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Mutex(State())

    public init() {}

    public func wake() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            if state.waiters.isEmpty {
                state.pending = true
                return []
            }
            defer { state.waiters.removeAll() }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Returns after a wake or after `timeout` seconds, whichever is first.
    public func wait(timeout: Double) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                    let resumeNow = self.state.withLock { state -> Bool in
                        if state.pending {
                            state.pending = false
                            return true
                        }
                        state.waiters.append(continuation)
                        return false
                    }
                    if resumeNow { continuation.resume() }
                }
            }
            group.addTask {
                do {
                    try await Task.sleep(for: .seconds(max(0.001, timeout)))
                    self.wake()
                } catch {
                    // Cancelled because the wake came first.
                }
            }
            await group.next()
            group.cancelAll()
        }
    }
}
