import Foundation
import Logging
import PostgresNIO
import StorekeeperErrors

extension PostgresStore {
    /// True for failures a later retry may cure: the server is unreachable or shutting down, out
    /// of disk, memory or connections (SQLSTATE classes 08, 53, 57P, 58). Callers answer these
    /// with 503 and `Retry-After`, not 500.
    public static func isUnavailable(_ error: any Error) -> Bool {
        if let error = error as? PostgresStoreError { return error.code == .unavailable }
        guard let error = error as? PSQLError else { return false }
        switch error.code {
        case .connectionError, .serverClosedConnection, .clientClosedConnection, .uncleanShutdown, .poolClosed, .queryCancelled:
            return true
        case .server:
            let state = error.serverInfo?[.sqlState] ?? ""
            return state.hasPrefix("08") || state.hasPrefix("53") || state.hasPrefix("57P") || state.hasPrefix("58")
        default:
            return false
        }
    }

    /// True when the connection itself failed or the server is going away or not yet back
    /// (SQLSTATE classes 08 and 57P): the next lease probes the database before it queues.
    static func isConnectionLost(_ error: any Error) -> Bool {
        if let error = error as? PostgresStoreError { return error.code == .unavailable }
        guard let error = error as? PSQLError else { return false }
        switch error.code {
        case .connectionError, .serverClosedConnection, .uncleanShutdown:
            return true
        case .server:
            let state = error.serverInfo?[.sqlState] ?? ""
            return state.hasPrefix("08") || state.hasPrefix("57P")
        default:
            return false
        }
    }

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
