import Foundation
import Logging
import ServiceLifecycle
import StorekeeperCore

/// Records the entitlements whose end has come (``RecordLapses``) every `intervalSeconds` (30 by
/// default: `lapseSweepSeconds`), so an `entitlement_expired` follows its instant within a minute. Runs in every process with
/// workers; the use case makes that safe.
struct EntitlementLapses: Service, CustomStringConvertible {
    let record: RecordLapses
    let intervalSeconds: Double
    let logger: Logger
    let now: @Sendable () -> Date
    var description: String { "EntitlementLapses" }

    static let batchSize = 200

    func run() async throws {
        while !Task.isCancelled, !Task.isShuttingDownGracefully {
            do {
                let assessed = try await sweep(at: now())
                if assessed > 0 { logger.debug("entitlements due to lapse assessed", metadata: ["count": "\(assessed)"]) }
            } catch {
                logger.warning("the lapse sweep failed; tried again shortly", metadata: ["error": "\(error)"])
            }
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: .seconds(intervalSeconds)) }
        }
    }

    /// Assesses every subscriber due at `now`, a batch at a time; returns how many.
    func sweep(at now: Date) async throws -> Int {
        var total = 0
        while !Task.isShuttingDownGracefully {
            let assessed = try await record(now: now, limit: Self.batchSize)
            total += assessed
            if assessed < Self.batchSize { break }
        }
        return total
    }
}
