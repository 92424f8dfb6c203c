public import Foundation

/// Who holds a lease, precisely enough for another process on the same machine to prove the
/// holder is gone: host name, process id and the process's start time (a pid alone is reused,
/// and after a container restart the new process is often pid 1 again). Written as the lease
/// owner, `runner:<host>:<pid>:<start>:<random>`.
public struct ProcessIdentity: Sendable, Hashable {
    public var host: String
    public var pid: Int32
    /// Start time in clock ticks since boot (`/proc/<pid>/stat` field 22); 0 where unknown.
    public var startTicks: UInt64

    public static let current = ProcessIdentity(
        host: ProcessInfo.processInfo.hostName.replacingOccurrences(of: ":", with: "_"),
        pid: ProcessInfo.processInfo.processIdentifier,
        startTicks: startTicks(of: ProcessInfo.processInfo.processIdentifier) ?? 0)

    public func owner(tag: String = String(UUID().uuidString.prefix(8))) -> String {
        "runner:\(host):\(pid):\(startTicks):\(tag)"
    }

    /// The identity written in `owner`, or nil for owners in another format (older releases).
    public init?(owner: String) {
        let parts = owner.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 5, parts[0] == "runner", let pid = Int32(parts[2]), let ticks = UInt64(parts[3]) else { return nil }
        self.init(host: String(parts[1]), pid: pid, startTicks: ticks)
    }

    public init(host: String, pid: Int32, startTicks: UInt64) {
        self.host = host
        self.pid = pid
        self.startTicks = startTicks
    }

    /// True only when this machine can prove the process is gone: same host, and no process
    /// with that pid, or one that started at another time. Unknown start times prove nothing.
    public func isCertainlyGone(seenFrom observer: ProcessIdentity = .current) -> Bool {
        guard host == observer.host, startTicks != 0 else { return false }
        if pid == observer.pid { return startTicks != observer.startTicks }
        guard let running = Self.startTicks(of: pid) else { return true }
        return running != startTicks
    }

    /// Reads field 22 of `/proc/<pid>/stat`; nil when there is no such process (or no /proc).
    static func startTicks(of pid: Int32) -> UInt64? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8) else { return nil }
        // The command name (field 2) is parenthesised and may hold spaces: count after its ')'.
        guard let close = stat.lastIndex(of: ")") else { return nil }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        // fields[0] is field 3 (state), so field 22 is fields[19].
        guard fields.count > 19 else { return nil }
        return UInt64(fields[19])
    }
}
