import Foundation
import GRDB
import Persistence

extension SQLiteStore {
    /// True for failures a later retry may cure and that say nothing about the request: the disk
    /// is full, the file cannot be written or opened, the database stayed locked beyond the busy
    /// timeout, or SQLite rolled the transaction back because of one of these (`SQLITE_ABORT`).
    /// Callers answer these with 503 and `Retry-After`, not 500.
    public static func isUnavailable(_ error: any Error) -> Bool {
        guard let error = error as? DatabaseError else { return false }
        switch error.resultCode {
        case .SQLITE_FULL, .SQLITE_IOERR, .SQLITE_BUSY, .SQLITE_LOCKED, .SQLITE_CANTOPEN, .SQLITE_READONLY, .SQLITE_NOMEM, .SQLITE_ABORT,
            .SQLITE_PROTOCOL:
            return true
        default:
            return false
        }
    }
}
