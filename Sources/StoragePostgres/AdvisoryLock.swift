import Logging
import PostgresNIO

/// Transaction-scoped advisory locks on names (an original transaction of an app):
/// PostgreSQL's way to serialize writers on a key that may not have a row yet. Two different
/// names may share a key; that only serializes them needlessly, it never breaks correctness.
enum AdvisoryLock {
    /// FNV-1a over the UTF-8 bytes: stable across processes, builds and machines.
    static func key(_ name: String) -> Int64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in name.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x0100_0000_01b3
        }
        return Int64(bitPattern: hash)
    }

    /// Takes the locks of `names` in one statement, in ascending key order, so two transactions
    /// locking overlapping sets queue behind each other instead of deadlocking. Released at commit.
    static func lock(_ names: [String], on connection: PostgresConnection, logger: Logger) async throws {
        let keys = Array(Set(names.map(key))).sorted()
        guard !keys.isEmpty else { return }
        if keys.count == 1 {
            try await connection.execute("SELECT pg_advisory_xact_lock(\(keys[0]))", prepared: true, logger: logger)
            return
        }
        try await connection.execute(
            "SELECT pg_advisory_xact_lock(k) FROM (SELECT k FROM unnest(\(keys)::bigint[]) AS k ORDER BY k) AS ordered",
            prepared: true, logger: logger)
    }
}
