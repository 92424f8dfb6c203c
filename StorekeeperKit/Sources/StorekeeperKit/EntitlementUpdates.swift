import Foundation

/// Tells every listener of `Storekeeper.entitlementUpdates()` each verified answer that changes
/// what the user owns. A lock rather than the actor: a stream ends from any thread
/// (`onTermination`), and its listener must be gone at once, not after a hop.
final class EntitlementUpdates: @unchecked Sendable {
    private let lock = NSLock()
    private var listeners: [UUID: AsyncStream<Entitlements>.Continuation] = [:]
    private var last: Entitlements?

    /// A new stream; it starts with the last answer published, if any, then each change.
    func stream() -> AsyncStream<Entitlements> {
        let (stream, continuation) = AsyncStream<Entitlements>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let id = UUID()
        continuation.onTermination = { [weak self] _ in self?.remove(id) }
        lock.lock()
        listeners[id] = continuation
        let current = last
        lock.unlock()
        if let current { continuation.yield(current) }
        return stream
    }

    /// Publishes `entitlements` when what it says differs from the last one published (the
    /// time it was verified at does not count as a change).
    func publish(_ entitlements: Entitlements) {
        lock.lock()
        var comparable = entitlements
        comparable.verifiedAt = last?.verifiedAt ?? entitlements.verifiedAt
        guard last != comparable else {
            lock.unlock()
            return
        }
        last = entitlements
        let targets = Array(listeners.values)
        lock.unlock()
        for continuation in targets { continuation.yield(entitlements) }
    }

    private func remove(_ id: UUID) {
        lock.lock()
        listeners[id] = nil
        lock.unlock()
    }
}
