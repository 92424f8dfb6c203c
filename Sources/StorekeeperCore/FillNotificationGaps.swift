public import AppStoreModels
public import Foundation
public import Persistence
import StorekeeperDomain

/// Apple's notification history, one page at a time, with one app's In-App Purchase key.
public protocol AppleNotificationHistory: Sendable {
    func page(
        _ request: NotificationHistoryRequest, paginationToken: String?, environment: AppStoreEnvironment
    ) async throws
        -> NotificationHistoryResponse
}

/// Takes one of Apple's signed notifications through the same ingest as a delivered one.
public protocol NotificationReceiving: Sendable {
    /// True when it was stored before (a duplicate); throws when it is refused or unreadable.
    func receive(signedPayload: String) async throws -> Bool
}

/// Recovers notifications Apple could not deliver: one pull of `[from, to)` reads every page of
/// each window of Apple's notification history (`NotificationGapFillWindows`) and takes each
/// notification through the same ingest as a delivered one, idempotent by its UUID, so
/// overlapping pulls, several processes and Apple's own late retries change nothing twice. Each
/// pull is kept with what it found, or why it failed (`GapFillHistory`).
public struct FillNotificationGaps: Sendable {
    /// What one pull found.
    public struct Report: Codable, Sendable, Equatable {
        public var examined = 0
        /// Notifications not seen before, now stored and processed.
        public var recovered = 0
        public var duplicates = 0
        /// Refused or unreadable entries.
        public var failed = 0
        public var pages = 0

        public init() {}
    }

    /// Keeps a pull with what it found (`GapFillHistory.record`).
    let record: @Sendable (GapFillRun) async throws -> Void

    public init(record: @escaping @Sendable (GapFillRun) async throws -> Void) {
        self.record = record
    }

    /// `cause`: `scheduled` or `operator`. `unrecorded` hears why a pull's result could not be
    /// kept (the pull itself counts: its notifications are stored).
    public func callAsFunction(
        appId: String, acceptsSandbox: Bool, onlyFailures: Bool, from: Date, to: Date, cause: String, apple: any AppleNotificationHistory,
        receiver: any NotificationReceiving, now: @Sendable () -> Date, unrecorded: (any Error) -> Void
    ) async throws -> Report {
        let startedAt = now()
        var report = Report()
        var failure: (any Error)?
        do {
            for window in NotificationGapFillWindows.windows(from: from, to: to, acceptsSandbox: acceptsSandbox) {
                let request = NotificationHistoryRequest(startDate: window.start, endDate: window.end, onlyFailures: onlyFailures ? true : nil)
                var token: String?
                repeat {
                    let page = try await apple.page(request, paginationToken: token, environment: window.environment)
                    report.pages += 1
                    for item in page.notificationHistory ?? [] {
                        guard let signed = item.signedPayload else { continue }
                        report.examined += 1
                        do {
                            if try await receiver.receive(signedPayload: signed) { report.duplicates += 1 } else { report.recovered += 1 }
                        } catch {
                            report.failed += 1
                        }
                    }
                    token = page.hasMore == true ? page.paginationToken : nil
                } while token != nil
            }
        } catch {
            failure = error
        }
        let run = GapFillRun(
            cause: cause, appId: appId, startedAt: startedAt, from: from, to: to, examined: report.examined, recovered: report.recovered,
            duplicates: report.duplicates, failed: report.failed, pages: report.pages, error: failure.map { String("\($0)".prefix(500)) })
        do {
            try await record(run)
        } catch {
            unrecorded(error)
        }
        if let failure { throw failure }
        return report
    }
}
