public import Foundation
import Synchronization

/// What the process last learned about its database from real work: a read-only probe cannot
/// see a full disk, but the request or lease that failed to write did. `/healthz` reports it;
/// the next successful write clears it.
public final class StorageHealth: Sendable {
    public struct Failure: Sendable, Equatable {
        public var message: String
        public var since: Date
    }

    /// Seconds a client should wait before resending a request the database refused.
    public static let retryAfterSeconds = 5

    private let state = Mutex<Failure?>(nil)

    public init() {}

    public var failure: Failure? { state.withLock { $0 } }

    public func failed(_ error: any Error, now: Date) {
        state.withLock { current in
            if current == nil { current = Failure(message: "\(error)", since: now) } else { current?.message = "\(error)" }
        }
    }

    public func succeeded() {
        state.withLock { $0 = nil }
    }
}
