import Synchronization

/// Wakes requests that hold a `?wait=` answer when their verification changes, instead of
/// polling the store. Adapters notify after the commit that changed it (in this process), and
/// PostgreSQL relays commits of other processes (`LISTEN`). A notification is a hint to read
/// again; waiters also read again after a bounded time, so a lost one costs latency, never a
/// wrong answer.
public final class VerificationWatch: Sendable {
    /// One waiter's interest in one verification; register before reading, so a change between
    /// the read and the wait is not missed.
    public final class Ticket: Sendable {
        private struct State {
            var fired = false
            var waiter: CheckedContinuation<Void, Never>?
        }

        private let state = Mutex(State())

        func fire() {
            let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
                state.fired = true
                defer { state.waiter = nil }
                return state.waiter
            }
            waiter?.resume()
        }

        /// Returns when fired, or after `timeout`, or when the task is cancelled.
        public func wait(timeout: Duration) async {
            await withTaskGroup(of: Void.self) { group in
                group.addTask {
                    await withTaskCancellationHandler {
                        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                            let fired = self.state.withLock { state -> Bool in
                                if state.fired { return true }
                                state.waiter = continuation
                                return false
                            }
                            if fired { continuation.resume() }
                        }
                    } onCancel: {
                        self.fire()
                    }
                }
                group.addTask { try? await Task.sleep(for: timeout) }
                await group.next()
                group.cancelAll()
            }
        }
    }

    private let tickets = Mutex<[String: [ObjectIdentifier: Ticket]]>([:])

    public init() {}

    public func register(_ verificationId: String) -> Ticket {
        let ticket = Ticket()
        tickets.withLock { $0[verificationId, default: [:]][ObjectIdentifier(ticket)] = ticket }
        return ticket
    }

    public func unregister(_ verificationId: String, _ ticket: Ticket) {
        tickets.withLock { tickets in
            tickets[verificationId]?[ObjectIdentifier(ticket)] = nil
            if tickets[verificationId]?.isEmpty == true { tickets[verificationId] = nil }
        }
    }

    public func notify(_ verificationId: String) {
        let waiting = tickets.withLock { $0.removeValue(forKey: verificationId) } ?? [:]
        for ticket in waiting.values { ticket.fire() }
    }

    /// Changes may have been missed (a listener reconnected): everyone reads again.
    public func notifyAll() {
        let waiting = tickets.withLock { tickets -> [Ticket] in
            defer { tickets = [:] }
            return tickets.values.flatMap(\.values)
        }
        for ticket in waiting { ticket.fire() }
    }
}
