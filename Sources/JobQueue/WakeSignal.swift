import Synchronization

/// Lets an enqueue wake idle runners at once instead of waiting for the next poll.
/// A wake with nobody waiting is remembered, so it is never lost between a check and a wait.
public final class WakeSignal: Sendable {
    private struct State {
        var pending = false
        var nextToken = 0
        var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
    }

    private let state = Mutex(State())

    public init() {}

    /// Wakes every waiter, or the next one to wait if none is waiting.
    public func wake() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            if state.waiters.isEmpty {
                state.pending = true
                return []
            }
            defer { state.waiters.removeAll() }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Whether a wake came while nobody waited, forgetting it: for a caller that looks instead of
    /// waiting (what a store announced, checked right after the call that should have).
    public func takePending() -> Bool {
        state.withLock { state in
            defer { state.pending = false }
            return state.pending
        }
    }

    /// Returns after a wake, after `timeout` seconds, or when the task is cancelled.
    public func wait(timeout: Double) async {
        let token = state.withLock { state -> Int in
            state.nextToken += 1
            return state.nextToken
        }
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                await withTaskCancellationHandler {
                    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                        let resumeNow = self.state.withLock { state -> Bool in
                            if state.pending {
                                state.pending = false
                                return true
                            }
                            state.waiters[token] = continuation
                            return false
                        }
                        if resumeNow { continuation.resume() }
                    }
                } onCancel: {
                    self.resume(token)
                }
            }
            group.addTask {
                try? await Task.sleep(for: .seconds(max(0.001, timeout)))
                self.resume(token)
            }
            await group.next()
            group.cancelAll()
        }
    }

    /// Resumes one waiter if it is still waiting; later calls for the same token do nothing.
    private func resume(_ token: Int) {
        let waiter = state.withLock { $0.waiters.removeValue(forKey: token) }
        waiter?.resume()
    }
}
