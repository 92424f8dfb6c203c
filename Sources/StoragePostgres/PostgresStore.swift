import Foundation
public import JobQueue
public import Logging
public import Persistence
import PostgresNIO
public import ServiceLifecycle
public import StorekeeperErrors
import Tracing

/// The shared storage adapter: any number of API and worker processes on one PostgreSQL
/// database. Correctness across processes comes from the database alone: leases are taken with
/// `FOR UPDATE SKIP LOCKED`, every lease-guarded write re-checks the lease token in its own
/// transaction, and grants serialize per original transaction id with transaction-scoped
/// advisory locks, so two workers granting receipts that share a purchase never both grant it.
///
/// The store is a `Service`: its `run()` runs the connection pool. Queries issued before
/// `run()` starts wait for it, so a process may prepare (migrate, seed) while the service
/// group starts.
public final class PostgresStore: Service, Sendable {
    public struct Configuration: Sendable {
        public var host: String = "127.0.0.1"
        public var port: Int = 5432
        public var username: String = "postgres"
        public var password: String?
        public var database: String = "storekeeper"
        /// Schema holding Storekeeper's tables; one database can host several isolated stores
        /// (the test suite gives each test its own).
        public var schema: String = "storekeeper"
        /// Connections this process may open, split between requests and work
        /// (`connectionSplit`). The sum over all processes must stay below the server's
        /// `max_connections` (docs/DEPLOYMENT.md).
        public var maximumConnections: Int = 20

        /// How `maximumConnections` is shared: a quarter (at least one) for requests (the app's
        /// POSTs and reads, the admin API), the rest (at least one) for work (job leases, the
        /// transactions of running jobs, the LISTEN connections).
        public var connectionSplit: (requests: Int, work: Int) {
            let requests = max(1, maximumConnections / 4)
            return (requests, max(1, maximumConnections - requests))
        }
        /// Idle connections above zero are closed after this long.
        public var idleTimeout: Duration = .seconds(60)
        /// TLS is off by default: the expected deployment is a private network or loopback.
        public var requireTLS: Bool = false

        public init() {}

        /// Reads `postgres://user:password@host:port/database?schema=name&max_connections=n`.
        public init(url text: String) throws {
            guard let components = URLComponents(string: text), let scheme = components.scheme,
                scheme == "postgres" || scheme == "postgresql"
            else { throw PostgresStoreError(.invalidURL, "not a postgres:// URL") }
            if let host = components.host, !host.isEmpty { self.host = host }
            if let port = components.port { self.port = port }
            if let user = components.user, !user.isEmpty { username = user.removingPercentEncoding ?? user }
            password = components.password?.removingPercentEncoding
            let path = components.path.trimmingCharacters(in: CharacterSet(charactersIn: "/"))
            if !path.isEmpty { database = path }
            for item in components.queryItems ?? [] {
                switch item.name {
                case "schema":
                    guard let value = item.value, Self.isIdentifier(value) else {
                        throw PostgresStoreError(.invalidURL, "schema must be a plain identifier ([a-z_][a-z0-9_]*)")
                    }
                    schema = value
                case "max_connections":
                    guard let value = item.value.flatMap(Int.init), value > 0 else {
                        throw PostgresStoreError(.invalidURL, "max_connections must be a positive integer")
                    }
                    maximumConnections = value
                case "sslmode":
                    requireTLS = item.value == "require"
                default:
                    throw PostgresStoreError(.invalidURL, "unknown URL parameter '\(item.name)'")
                }
            }
        }

        /// True for names safe to splice into SQL unquoted.
        public static func isIdentifier(_ name: String) -> Bool {
            guard let first = name.unicodeScalars.first, name.count <= 63 else { return false }
            let lower = CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyz_")
            let rest = lower.union(CharacterSet(charactersIn: "0123456789"))
            return lower.contains(first) && name.unicodeScalars.allSatisfy { rest.contains($0) }
        }

        /// The URL without its password, for logs.
        public var redactedDescription: String { "postgres://\(username)@\(host):\(port)/\(database)?schema=\(schema)" }
    }

    /// Which pool a statement runs on. Requests and work have pools of their own, so thousands
    /// of verifications in flight cannot hold every connection an app's POST is waiting for
    /// (measured: with one pool of 20, POST p99 was 1.8-3.1 s while 4,000 verifications ran,
    /// docs/BENCHMARKS.md).
    enum Pool: Sendable {
        case requests
        case work
    }

    /// The requests' pool.
    let client: PostgresClient
    /// The work's pool.
    let workClient: PostgresClient
    let logger: Logger
    public let configuration: Configuration
    /// Channel on which enqueues announce new jobs (`LISTEN`/`NOTIFY`), one per schema.
    let jobChannel: String
    /// Channel on which commits announce changed verifications (payload: the id), one per schema.
    let verificationChannel: String
    public let verificationWatch = VerificationWatch()
    /// Announce queued jobs on `jobChannel` and changed verifications on `verificationChannel`,
    /// after the commits (see `CommitAnnouncer` for why).
    let jobAnnouncer = CommitAnnouncer(spacing: .milliseconds(10))
    /// The payload of this store's job announcements: its own listener skips them (the commit
    /// already woke this process's runners), so only other processes wake.
    let announcerId = UUID().uuidString
    /// Woken after this process's commits that queued jobs (`QueuedJobs`) and, by
    /// `PostgresJobListener`, after other processes' announcements.
    public let queued = WakeSignal()
    let verificationAnnouncer = CommitAnnouncer()
    /// Opens right before the requests' pool runs; every statement on that pool (`migrate()`, the
    /// first call of every process, among them) waits for it, so that none is issued to a pool
    /// nobody runs yet.
    let requestsStarted = OneShotSignal()
    /// The same for the work pool.
    let workStarted = OneShotSignal()
    /// Whether the database answers, so that requests fail at once while it is gone.
    let reachability: DatabaseReachability

    public init(configuration: Configuration, logger: Logger) throws {
        guard Configuration.isIdentifier(configuration.schema) else {
            throw PostgresStoreError(.invalidURL, "schema must be a plain identifier ([a-z_][a-z0-9_]*)")
        }
        var pg = PostgresClient.Configuration(
            host: configuration.host, port: configuration.port, username: configuration.username,
            password: configuration.password, database: configuration.database,
            tls: configuration.requireTLS ? .require(.makeClientConfiguration()) : .disable)
        pg.options.minimumConnections = 0
        pg.options.connectionIdleTimeout = configuration.idleTimeout
        // Every connection resolves table names in this store's schema only.
        pg.options.additionalStartupParameters = [("search_path", configuration.schema)]
        self.configuration = configuration
        self.logger = logger
        self.jobChannel = "\(configuration.schema)_jobs"
        self.verificationChannel = "\(configuration.schema)_verifications"
        let split = configuration.connectionSplit
        pg.options.maximumConnections = split.requests
        client = PostgresClient(configuration: pg, backgroundLogger: logger)
        pg.options.maximumConnections = split.work
        workClient = PostgresClient(configuration: pg, backgroundLogger: logger)
        // The probe only asks whether the server answers: without TLS, a server that requires it
        // answers with a refusal of its own, which is an answer.
        var probe = PostgresConnection.Configuration(
            host: configuration.host, port: configuration.port, username: configuration.username,
            password: configuration.password, database: configuration.database, tls: .disable)
        // Refused or reset is the answer that counts, and it comes at once; a slow connect is a
        // busy machine, not a missing database (a short timeout here failed requests under load).
        probe.options.connectTimeout = .seconds(10)
        reachability = DatabaseReachability { [probe, logger] in await Self.answers(probe, logger: logger) }
    }

    func client(_ pool: Pool) -> PostgresClient {
        switch pool {
        case .requests: client
        case .work: workClient
        }
    }

    /// Runs the connection pool until cancelled or shut down gracefully.
    public func run() async throws {
        await cancelWhenGracefulShutdown {
            await self.runPool()
        }
    }

    /// Runs the pool until the calling task is cancelled: the service's body, and the child task
    /// of `withRunningPool`.
    public func runPool() async {
        await withDiscardingTaskGroup { group in
            group.addTask {
                // Opened right before `run()`, in the task that runs it, as for the requests below.
                self.workStarted.open()
                await self.workClient.run()
            }
            for (announcer, channel) in [(jobAnnouncer, jobChannel), (verificationAnnouncer, verificationChannel)] {
                group.addTask {
                    await announcer.run { payloads in
                        try await self.statement { connection in
                            try await connection.execute(
                                "SELECT pg_notify(\(channel), p) FROM unnest(\(payloads)::text[]) AS p", prepared: true, logger: self.logger)
                        }
                    }
                }
            }
            requestsStarted.open()
            await client.run()
        }
    }

    func started(_ pool: Pool) -> OneShotSignal {
        switch pool {
        case .requests: requestsStarted
        case .work: workStarted
        }
    }

    /// Runs `body` with the pool running as a child task, then stops it: for one-shot tools and
    /// tests outside a service group.
    public func withRunningPool<T: Sendable>(_ body: () async throws -> T) async throws -> T {
        try await withThrowingTaskGroup(of: Void.self, returning: T.self) { group in
            group.addTask { await self.runPool() }
            defer { group.cancelAll() }
            return try await body()
        }
    }

    // MARK: Transactions

    /// Conflicts after which the whole transaction is safely run again: serialization failure,
    /// deadlock, and unique violation (a concurrent writer got there first; the rerun reads its
    /// committed row and takes the "already done" path).
    static let retryableCodes: [PostgresError.Code] = [.serializationFailure, .deadlockDetected, .uniqueViolation]

    /// Runs `body` in one transaction, retrying it from scratch on the conflicts above. `body`
    /// must have no effects outside the database. Errors reach the caller unwrapped, as `BEGIN`,
    /// `body` or the commit threw them.
    func transaction<T: Sendable>(on pool: Pool = .requests, _ body: @Sendable (PostgresConnection) async throws -> T) async throws -> T {
        try await withSpan("postgresql transaction", ofKind: .client) { span in
            span.attributes["db.system.name"] = "postgresql"
            span.attributes["storekeeper.db.pool"] = pool == .requests ? "requests" : "work"
            return try await announcingQueuedJobs { try await retryingTransaction(on: pool, body) }
        }
    }

    private func retryingTransaction<T: Sendable>(on pool: Pool, _ body: @Sendable (PostgresConnection) async throws -> T) async throws -> T {
        await started(pool).wait()
        var attempt = 0
        while true {
            attempt += 1
            do {
                return try await leasing(pool) { [client = client(pool), logger] leased in
                    try await client.withConnection { connection in
                        leased()
                        return try await connection.transaction(logger: logger, body)
                    }
                }
            } catch {
                guard attempt < 8, Self.isRetryable(error) else { throw error }
                try await Task.sleep(for: .milliseconds(Int.random(in: 1...(5 * attempt))))
            }
        }
    }

    static func isRetryable(_ error: any Error) -> Bool {
        guard let error = error as? PSQLError, let state = error.serverInfo?[.sqlState] else { return false }
        return retryableCodes.contains(PostgresError.Code(raw: state))
    }

    /// Runs one statement outside an explicit transaction: PostgreSQL commits it on its own, so
    /// a write that fits in one statement costs one round trip. Not retried: callers fall back.
    func statement<T: Sendable>(on pool: Pool = .requests, _ body: @Sendable (PostgresConnection) async throws -> T) async throws -> T {
        try await announcingQueuedJobs { try await connection("postgresql statement", on: pool, body) }
    }

    /// Runs one read-only statement outside an explicit transaction (it queues nothing, so
    /// nothing is announced).
    func read<T: Sendable>(on pool: Pool = .requests, _ body: @Sendable (PostgresConnection) async throws -> T) async throws -> T {
        try await connection("postgresql read", on: pool, body)
    }

    private func connection<T: Sendable>(
        _ spanName: String, on pool: Pool, _ body: @Sendable (PostgresConnection) async throws -> T
    ) async throws -> T {
        try await withSpan(spanName, ofKind: .client) { span in
            span.attributes["db.system.name"] = "postgresql"
            await started(pool).wait()
            return try await leasing(pool) { [client = client(pool)] leased in
                try await client.withConnection { connection in
                    leased()
                    return try await body(connection)
                }
            }
        }
    }

    /// Runs `operation` on a lease of `pool`: at once `.unavailable` while the database is known
    /// to be gone; on the requests' pool, also when a lease waits and a probe finds it gone
    /// (`DatabaseReachability`). A connection lost under the statement tells the next caller to
    /// probe first.
    private func leasing<T: Sendable>(
        _ pool: Pool, _ operation: @Sendable (_ leased: @escaping @Sendable () -> Void) async throws -> T
    ) async throws -> T {
        try await reachability.admit()
        do {
            switch pool {
            case .requests:
                return try await withoutActuallyEscaping(operation) { operation in try await reachability.waitingForLease(operation) }
            case .work:
                return try await operation {}
            }
        } catch {
            if Self.isConnectionLost(error) { reachability.lost() }
            throw error
        }
    }
}

/// Errors of the PostgreSQL adapter itself (configuration, schema); database errors pass through.
public typealias PostgresStoreError = CodedError<PostgresStoreErrorCode>

public struct PostgresStoreErrorCode: Hashable, Sendable, CustomStringConvertible {
    private let name: String
    private init(_ name: String) { self.name = name }
    public static let invalidURL = PostgresStoreErrorCode("invalid_database_url")
    public static let unknownMigration = PostgresStoreErrorCode("unknown_migration")
    /// The database cannot be reached right now (`DatabaseReachability`); nothing was done.
    public static let unavailable = PostgresStoreErrorCode("database_unavailable")
    public var description: String { name }
}

// MARK: Row access

extension PostgresConnection {
    /// Runs `body` between `BEGIN` and `COMMIT`; `ROLLBACK` after a failure, unless the
    /// connection is gone (the server rolled back when it dropped it, and a statement sent now
    /// would never be answered: see `checkedQuery`).
    func transaction<T: Sendable>(logger: Logger, _ body: @Sendable (PostgresConnection) async throws -> T) async throws -> T {
        try await execute("BEGIN", prepared: true, logger: logger)
        let value: T
        do {
            value = try await body(self)
        } catch {
            if !isClosed { try? await execute("ROLLBACK", logger: logger) }
            throw error
        }
        try await execute("COMMIT", prepared: true, logger: logger)
        return value
    }

    /// `query`, refused at once on a connection the server has closed. PostgresNIO hands a query
    /// to its channel without a promise for the write, so one written after the channel closed
    /// is never answered and its caller waits forever (vapor/postgres-nio#487, reverted in #501;
    /// seen here as verification jobs that never ended after PostgreSQL restarted). A connection
    /// that closes between this check and the write is the window left.
    func checkedQuery(_ query: PostgresQuery, logger: Logger) async throws -> PostgresRowSequence {
        guard !isClosed else { throw PostgresStoreError(.unavailable, "the server closed this connection; nothing more was sent on it") }
        return try await self.query(query, logger: logger)
    }

    /// Runs `query` and reads its rows to the end; `prepared`, as a statement this connection
    /// prepared once (`PreparedQuery`).
    private func collected(_ query: PostgresQuery, prepared: Bool, logger: Logger) async throws -> [PostgresRow] {
        guard prepared, let types = PreparedQuery.types(of: query.binds) else {
            return try await checkedQuery(query, logger: logger).collect()
        }
        guard !isClosed else { throw PostgresStoreError(.unavailable, "the server closed this connection; nothing more was sent on it") }
        let (name, generation) = PreparedQuery.name(of: query.sql)
        do {
            return try await PreparedQuery.$current.withValue(PreparedQuery.Text(name: name, sql: query.sql, types: types)) {
                var rows: [PostgresRow] = []
                for try await row in try await self.execute(PreparedQuery(binds: query.binds), logger: logger) { rows.append(row) }
                return rows
            }
        } catch {
            PreparedQuery.failed(query.sql, generation: generation, error: error)
            throw error
        }
    }

    /// Runs a statement to completion. Its result is read to the end: an error PostgreSQL
    /// reports while executing arrives there, and an unread one would leave the transaction
    /// aborted while the caller believed the write done (COMMIT of an aborted transaction
    /// only rolls back).
    func execute(_ query: PostgresQuery, prepared: Bool = false, logger: Logger) async throws {
        _ = try await collected(query, prepared: prepared, logger: logger)
    }

    /// Runs a statement and collects its rows by column name.
    func rows(_ query: PostgresQuery, prepared: Bool = false, logger: Logger) async throws -> [PostgresRandomAccessRow] {
        try await collected(query, prepared: prepared, logger: logger).map { $0.makeRandomAccess() }
    }

    /// Runs a statement ending in `RETURNING` and says how many rows it touched.
    func count(_ query: PostgresQuery, prepared: Bool = false, logger: Logger) async throws -> Int {
        try await collected(query, prepared: prepared, logger: logger).count
    }
}

extension PostgresRandomAccessRow {
    func value<T: PostgresDecodable>(_ column: String, as type: T.Type = T.self) throws -> T {
        try self[column].decode(T.self)
    }
}
