import Foundation
import PostgresNIO
import Synchronization

/// A statement PostgreSQL parses and plans once per connection, then only binds and executes.
/// A verification's hot statements (a grant's facts, a subscriber's rows, the lease, the
/// writes of a grant) spent about 45 % of PostgreSQL's CPU time parsing, analysing and planning
/// the same texts again on every call (perf, 2026-11-29; docs/BENCHMARKS.md).
///
/// PostgresNIO prepares a statement type's `sql` under its `name` the first time a connection
/// runs it and reuses it after; both are static. This type serves any query: its name and text
/// are read from a task-local set around the one call that reads them
/// (`PostgresConnection.execute(_:logger:)` reads them before its first suspension and keeps
/// them). The name is a digest of the text, so two texts never share a prepared statement.
///
/// PostgresNIO remembers a preparation that failed and fails every later use of its name on
/// that connection; a text is prepared under a new name (`generation`) after an error that may
/// have come from its preparation (an aborted transaction, a missing table, a cancellation), so
/// a passing fault cannot refuse a statement for the connection's whole life.
///
/// Only statements whose result columns are fixed may run this way: a prepared `SELECT *`
/// fails ("cached plan must not change result type") once a migration adds a column.
struct PreparedQuery: PostgresPreparedStatement {
    struct Text: Sendable {
        var name: String
        var sql: String
        var types: [PostgresDataType]
    }

    @TaskLocal static var current = Text(name: "", sql: "", types: [])

    static var name: String { current.name }
    static var sql: String { current.sql }
    static var bindingDataTypes: [PostgresDataType] { current.types }

    let binds: PostgresBindings

    func makeBindings() throws -> PostgresBindings { binds }
    func decodeRow(_ row: PostgresRow) throws -> PostgresRow { row }

    /// Per text, how many times its name changed after a failure.
    private static let generations = Mutex<[String: Int]>([:])

    /// The text's current name.
    static func name(of sql: String) -> (name: String, generation: Int) {
        let generation = generations.withLock { $0[sql] ?? 0 }
        return (digest(of: sql) + (generation == 0 ? "" : "_\(generation)"), generation)
    }

    /// After `error` from a run under `generation`, the next run prepares the text afresh if
    /// the error may have been its preparation's.
    static func failed(_ sql: String, generation: Int, error: any Error) {
        guard let error = error as? PSQLError, error.code == .server else { return }
        let state = error.serverInfo?[.sqlState] ?? ""
        guard state.hasPrefix("25") || state.hasPrefix("42") || state.hasPrefix("0A") || state == "57014" else { return }
        generations.withLock { if $0[sql] ?? 0 == generation { $0[sql] = generation + 1 } }
    }

    /// "sk_" and a 128-bit FNV-1a digest of the text (two seeds), well inside PostgreSQL's
    /// 63-byte names.
    static func digest(of sql: String) -> String {
        var first: UInt64 = 0xcbf2_9ce4_8422_2325
        var second: UInt64 = 0x8422_2325_cbf2_9ce4
        for byte in sql.utf8 {
            first = (first ^ UInt64(byte)) &* 0x0000_0100_0000_01b3
            second = (second ^ UInt64(byte)) &* 0x0000_0100_0000_01b3
            second = (second << 7) | (second >> 57)
        }
        return "sk_" + String(first, radix: 16) + "_" + String(second, radix: 16)
    }

    /// The parameter types PostgresNIO recorded for each bind (a NULL has none: PostgreSQL
    /// infers it from its place, as for an unprepared statement). PostgresBindings keeps them
    /// internal, so they are read by reflection; nil when its layout is not the one expected,
    /// and the caller then runs the statement unprepared.
    static func types(of binds: PostgresBindings) -> [PostgresDataType]? {
        guard let metadata = Mirror(reflecting: binds).children.first(where: { $0.label == "metadata" })?.value as? [Any] else {
            return nil
        }
        var types: [PostgresDataType] = []
        types.reserveCapacity(metadata.count)
        for entry in metadata {
            guard let type = Mirror(reflecting: entry).children.first(where: { $0.label == "dataType" })?.value as? PostgresDataType
            else { return nil }
            types.append(type)
        }
        return types
    }
}
