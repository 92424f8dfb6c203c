import Foundation
import Logging
import Persistence
import ServiceLifecycle

/// Deletes events older than the retention (`eventRetentionDays`, 30 by default) every hour, in
/// small batches so no transaction holds the writer for long. An event a delivery still needs
/// (pending, or dead and waiting for a replay) is kept; delivered deliveries go with their event.
struct EventRetention: Service, CustomStringConvertible {
    let store: any EventStore
    let retentionDays: Double
    let logger: Logger
    let now: @Sendable () -> Date
    var description: String { "EventRetention" }

    static let intervalSeconds: Double = 3_600
    static let batchSize = 1_000

    func run() async throws {
        while !Task.isCancelled, !Task.isShuttingDownGracefully {
            do {
                let deleted = try await sweep(at: now())
                if deleted > 0 { logger.info("old events deleted", metadata: ["count": "\(deleted)", "retentionDays": "\(retentionDays)"]) }
            } catch {
                logger.warning("deleting old events failed; tried again in an hour", metadata: ["error": "\(error)"])
            }
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: .seconds(Self.intervalSeconds)) }
        }
    }

    /// Deletes every event recorded before the cutoff that nothing needs; returns how many.
    func sweep(at now: Date) async throws -> Int {
        let cutoff = now.addingTimeInterval(-retentionDays * 86_400)
        var total = 0
        while !Task.isShuttingDownGracefully {
            let deleted = try await store.deleteEvents(recordedBefore: cutoff, limit: Self.batchSize)
            total += deleted
            if deleted < Self.batchSize { break }
        }
        return total
    }
}
