import Foundation

/// CPU time (user + system) of processes, from `/proc/<pid>/stat`, in milliseconds: what a
/// verification costs the server's processes and the database's, apart from the benchmark's own
/// simulator and load generator (issue #50, item 2).
enum CoreTime {
    /// Clock ticks per second of `/proc`'s times.
    static let ticksPerSecond = Double(sysconf(Int32(_SC_CLK_TCK)))

    /// The process's user + system time so far; nil when it is gone.
    static func milliseconds(pid: Int32) -> Double? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let end = stat.lastIndex(of: ")")
        else { return nil }
        // After the command's closing parenthesis: state is field 3, utime 14, stime 15.
        let fields = stat[stat.index(after: end)...].split(separator: " ")
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
        return (user + system) / ticksPerSecond * 1_000
    }

    /// The summed time of every process named `postgres` (the postmaster and its backends), so
    /// a benchmark reads what its statements cost the database.
    static func postgresMilliseconds() -> Double {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        var total = 0.0
        for entry in entries {
            guard let pid = Int32(entry),
                let name = try? String(contentsOfFile: "/proc/\(entry)/comm", encoding: .utf8),
                name.trimmingCharacters(in: .whitespacesAndNewlines) == "postgres"
            else { continue }
            total += milliseconds(pid: pid) ?? 0
        }
        return total
    }

    /// Times read at the start and end of a measured run.
    struct Sample {
        /// The server's own processes (`storekeeper serve`, `storekeeper worker`).
        var server: Double
        var postgres: Double
        /// This process: the simulator and the load generator.
        var bench: Double

        static func now(server: [Int32]) -> Sample {
            Sample(
                server: server.compactMap { milliseconds(pid: $0) }.reduce(0, +), postgres: postgresMilliseconds(),
                bench: milliseconds(pid: getpid()) ?? 0)
        }

        /// Per verification between `self` and `later`, as a line of the report; PostgreSQL only
        /// where it ran.
        func report(until later: Sample, verifications: Int) -> String {
            let count = Double(max(verifications, 1))
            func each(_ value: Double) -> String { String(format: "%.2f", value / count) }
            var parts = ["server processes \(each(later.server - server))"]
            if later.postgres > postgres { parts.append("PostgreSQL \(each(later.postgres - postgres))") }
            parts.append("server total \(each(later.server - server + later.postgres - postgres))")
            parts.append("this process (simulator, load) \(each(later.bench - bench))")
            return "core ms per verification: " + parts.joined(separator: "; ")
        }
    }
}
