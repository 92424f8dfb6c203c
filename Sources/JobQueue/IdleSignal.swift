import Synchronization

/// Says when a worker loop (the job runner, the simulator's notification sender) has found
/// nothing to do, so a test can wait for "everything caused so far has run" on a signal instead
/// of polling. The loop numbers its passes; a pass that found no work and had none under way
/// reports itself idle. A waiter is resumed only by a pass that began after it started waiting:
/// a pass that began earlier may have looked before the waiter's own work was committed.
public final class IdleSignal: Sendable {
    private struct State {
        var passes = 0
        var lastIdlePass = 0
        var busyPasses = 0
        var nextToken = 0
        var waiters: [Int: (after: Int, continuation: CheckedContinuation<Void, Never>)] = [:]
    }

    private let state = Mutex(State())

    public init() {}

    /// The loop starts a pass (before it looks for work); returns the pass's number.
    public func passBegins() -> Int {
        state.withLock { state in
            state.passes += 1
            return state.passes
        }
    }

    /// The loop ends pass `number`: idle when it found no work and none was under way.
    public func pass(_ number: Int, wasIdle: Bool) {
        let ready = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            guard wasIdle else {
                state.busyPasses += 1
                return []
            }
            state.lastIdlePass = max(state.lastIdlePass, number)
            let due = state.waiters.filter { $0.value.after < number }
            for token in due.keys { state.waiters.removeValue(forKey: token) }
            return due.values.map(\.continuation)
        }
        for waiter in ready { waiter.resume() }
    }

    /// Passes so far that found work: unchanged across a wait means the loop did nothing meanwhile.
    public var busyPasses: Int { state.withLock { $0.busyPasses } }

    /// Returns once a pass that began after this call found nothing to do, or when the task is
    /// cancelled.
    public func nextIdle() async {
        let (token, after) = state.withLock { state -> (Int, Int) in
            state.nextToken += 1
            return (state.nextToken, state.passes)
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { state -> Bool in
                    if Task.isCancelled || state.lastIdlePass > after { return true }
                    state.waiters[token] = (after, continuation)
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let waiter = state.withLock { $0.waiters.removeValue(forKey: token) }
            waiter?.continuation.resume()
        }
    }
}
