import Foundation
import Logging
import ServiceLifecycle
import StorekeeperCore

/// Adds this process's tallied calls to Apple to the database every `intervalSeconds`, and once
/// more at a graceful shutdown. A failed write puts the tallies back for the next flush; a
/// process killed outright loses at most one interval of tallies (figures for the health page,
/// not money).
struct AppleCallFlusher: Service, CustomStringConvertible {
    let recorder: AppleCallRecorder
    let history: AppleCallHistory
    let logger: Logger
    let now: @Sendable () -> Date
    var intervalSeconds: Double = 10
    var description: String { "AppleCallFlusher" }

    func run() async throws {
        while !Task.isCancelled, !Task.isShuttingDownGracefully {
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: .seconds(intervalSeconds)) }
            await flush()
        }
    }

    /// Writes what is pending; true when nothing was left unwritten.
    @discardableResult
    func flush() async -> Bool {
        await recorder.exclusively {
            let tallies = recorder.drain()
            guard !tallies.isEmpty else { return true }
            do {
                try await history.add(tallies, now: now())
                return true
            } catch {
                recorder.restore(tallies)
                logger.warning("could not keep the tallies of calls to Apple; tried again next flush", metadata: ["error": "\(error)"])
                return false
            }
        }
    }
}
