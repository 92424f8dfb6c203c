import Foundation
import PostgresNIO

extension PostgresStore {
    /// True for failures a later retry may cure: the server is unreachable or shutting down, out
    /// of disk, memory or connections (SQLSTATE classes 08, 53, 57P, 58). Callers answer these
    /// with 503 and `Retry-After`, not 500.
    public static func isUnavailable(_ error: any Error) -> Bool {
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
}
