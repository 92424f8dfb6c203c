import Foundation
import Logging
import PostgresNIO
import StorekeeperErrors

extension PostgresStore {
    /// What a failure says about the database, classified once for both questions below.
    enum Fault {
        /// The connection failed, or the server is going away or not yet back (SQLSTATE 08, 57P).
        case connectionLost
        /// The server is there but short of disk, memory or connections (53, 58), or the pool
        /// or a cancellation ended the statement: a later retry may cure it.
        case transient
        /// Anything else: the statement's own failure.
        case other
    }

    static func fault(of error: any Error) -> Fault {
        if let error = error as? PostgresStoreError { return error.code == .unavailable ? .connectionLost : .other }
        guard let error = error as? PSQLError else { return .other }
        switch error.code {
        case .connectionError, .serverClosedConnection, .uncleanShutdown: return .connectionLost
        case .clientClosedConnection, .poolClosed, .queryCancelled: return .transient
        case .server:
            let state = error.serverInfo?[.sqlState] ?? ""
            if state.hasPrefix("08") || state.hasPrefix("57P") { return .connectionLost }
            return state.hasPrefix("53") || state.hasPrefix("58") ? .transient : .other
        default: return .other
        }
    }

    /// True for failures a later retry may cure (`Fault.connectionLost` or `.transient`).
    /// Callers answer these with 503 and `Retry-After`, not 500.
    public static func isUnavailable(_ error: any Error) -> Bool { fault(of: error) != .other }

    /// True when the connection itself failed or the server is going away or not yet back: the
    /// next lease probes the database before it queues.
    static func isConnectionLost(_ error: any Error) -> Bool { fault(of: error) == .connectionLost }

    /// Whether a connection of its own can be opened: the probe of `DatabaseReachability`. A
    /// server that answers with a refusal of its own (too many connections, a bad password) is
    /// there; one that refuses the connection, is shutting down or still starting is not.
    static func answers(_ configuration: PostgresConnection.Configuration, logger: Logger) async -> Bool {
        do {
            let connection = try await PostgresConnection.connect(configuration: configuration, id: 0, logger: logger)
            try? await connection.close()
            return true
        } catch {
            let answered = !isConnectionLost(error) && (error as? PSQLError)?.code == .server
            if !answered, !Task.isCancelled { logger.warning("PostgreSQL probe: no answer", metadata: ["error": "\(String(reflecting: error))"]) }
            return answered
        }
    }
}
