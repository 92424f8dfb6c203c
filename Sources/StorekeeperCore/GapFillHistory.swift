public import Foundation
public import Persistence

/// The pulls of Apple's notification history, kept for the health page: which window each asked,
/// what it found (new, already seen, refused) or why it failed.
public struct GapFillHistory: Sendable {
    let store: any OperationsStore

    public init(store: any OperationsStore) {
        self.store = store
    }

    public func record(_ run: GapFillRun) async throws {
        try await store.recordGapFillRun(run)
    }

    /// Pulls started at or after `since`, newest first, at most `limit`.
    public func runs(since: Date, limit: Int) async throws -> [GapFillRun] {
        try await store.gapFillRuns(since: since, limit: limit)
    }
}
