import Foundation
import StoragePostgres
import StorageSQLite
import Synchronization

/// What the process last learned about its database from real work: a read-only probe cannot
/// see a full disk, but the request or lease that failed to write did. `/healthz` reports it;
/// the next successful write clears it.
public final class StorageHealth: Sendable {
    public struct Failure: Sendable, Equatable {
        public var message: String
        public var since: Date
    }

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

extension StorageBackend {
    /// A storage failure that a retry may cure, on either database.
    public static func isUnavailable(_ error: any Error) -> Bool {
        SQLiteStore.isUnavailable(error) || PostgresStore.isUnavailable(error)
    }
}
