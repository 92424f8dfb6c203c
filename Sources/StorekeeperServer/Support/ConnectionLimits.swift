import Foundation
public import Logging

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// How many connections the server may hold, derived from the file limit. A process out of
/// file descriptors does not fail politely (libdispatch aborts when it cannot open a file), so
/// the cap keeps room for everything else a server opens: the database, one connection per
/// verification worker to Apple, log files, the simulator.
public struct ConnectionLimits: Sendable, Equatable {
    /// The soft limit after raising it.
    public var fileLimit: Int
    public var maxConnections: Int
    /// Descriptors kept free for everything but client connections.
    public var reserved: Int

    /// Raises the soft file limit to the hard one where the system allows, then derives the
    /// connection cap unless the configuration set one.
    public static func establish(configuration: StorekeeperConfiguration) -> ConnectionLimits {
        let fileLimit = raiseFileLimit()
        return derive(fileLimit: fileLimit, workers: configuration.runWorkers ? configuration.workers : 0, configured: configuration.maxConnections)
    }

    /// Pure, for tests: a quarter of what remains after the reserve is left for bursts of
    /// short-lived files; never below 16 so a small limit still serves.
    public static func derive(fileLimit: Int, workers: Int, configured: Int?) -> ConnectionLimits {
        let reserved = 128 + workers
        let derived = max(16, (fileLimit - reserved) * 3 / 4)
        return ConnectionLimits(fileLimit: fileLimit, maxConnections: configured ?? derived, reserved: reserved)
    }

    static func raiseFileLimit() -> Int {
        var limit = rlimit()
        #if canImport(Glibc)
        let resource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
        #else
        let resource = RLIMIT_NOFILE
        #endif
        guard getrlimit(resource, &limit) == 0 else { return 1024 }
        if limit.rlim_cur < limit.rlim_max {
            var raised = limit
            // An unlimited hard limit is capped: some kernels refuse rlim_t.max for files.
            raised.rlim_cur = limit.rlim_max == rlim_t.max ? max(limit.rlim_cur, 1_048_576) : limit.rlim_max
            if setrlimit(resource, &raised) == 0 { limit = raised }
        }
        return limit.rlim_cur == rlim_t.max ? 1_048_576 : Int(clamping: limit.rlim_cur)
    }

    public func log(to logger: Logger, idleTimeoutSeconds: Double) {
        logger.info(
            "connection limits",
            metadata: [
                "files": "\(fileLimit)", "maxConnections": "\(maxConnections)", "reserved": "\(reserved)",
                "idleTimeoutSeconds": "\(idleTimeoutSeconds)",
            ])
    }
}
