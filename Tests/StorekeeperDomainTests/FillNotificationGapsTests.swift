import AppStoreModels
import Foundation
import Persistence
import StorekeeperCore
import StorekeeperDomain
import StorekeeperErrors
import Synchronization
import Testing

/// One pull of Apple's notification history as a use case over fake ports: every page of each
/// environment's window read, each notification counted by what ingest made of it, and the pull
/// kept whether it worked or not. Through the simulator in `NotificationDeliveryTests`.
@Suite("FillNotificationGaps: one pull of Apple's notification history, in process")
struct FillNotificationGapsTests {
    static let now = Date(timeIntervalSince1970: 1_767_225_600)  // 2026-01-01T00:00:00Z

    /// Two production pages, one sandbox page; fails in the sandbox when `failSandbox`.
    final class FakeHistory: AppleNotificationHistory {
        let failSandbox: Bool
        let asked = Mutex<[String]>([])

        init(failSandbox: Bool = false) { self.failSandbox = failSandbox }

        func page(
            _ request: NotificationHistoryRequest, paginationToken: String?, environment: AppStoreEnvironment
        ) async throws
            -> NotificationHistoryResponse
        {
            asked.withLock { $0.append("\(environment.storageName) \(paginationToken ?? "-")") }
            if environment == .sandbox {
                if failSandbox { throw AppleActionError(.unavailable, "App Store Server API: down") }
                return .init(paginationToken: nil, hasMore: false, notificationHistory: [.init(signedPayload: "new-3", sendAttempts: nil)])
            }
            if paginationToken == nil {
                return .init(
                    paginationToken: "p2", hasMore: true,
                    notificationHistory: [.init(signedPayload: "new-1", sendAttempts: nil), .init(signedPayload: nil, sendAttempts: nil)])
            }
            return .init(
                paginationToken: "ignored", hasMore: false,
                notificationHistory: [.init(signedPayload: "seen-1", sendAttempts: nil), .init(signedPayload: "bad-1", sendAttempts: nil)])
        }
    }

    /// `seen-…` is a duplicate, `bad-…` refused, anything else new.
    struct FakeIngest: NotificationReceiving {
        func receive(signedPayload: String) async throws -> Bool {
            if signedPayload.hasPrefix("bad") { throw AppleActionError(.invalidRequest, "refused") }
            return signedPayload.hasPrefix("seen")
        }
    }

    @Test("every page of each environment, each notification counted once by what ingest made of it; the pull kept")
    func pull() async throws {
        let kept = Mutex<[GapFillRun]>([])
        let history = FakeHistory()
        let fill = FillNotificationGaps(record: { run in kept.withLock { $0.append(run) } })
        let report = try await fill(
            appId: "demo", acceptsSandbox: true, onlyFailures: false, from: Self.now.addingTimeInterval(-3_600), to: Self.now, cause: "operator",
            apple: history, receiver: FakeIngest(), now: { Self.now }, unrecorded: { Issue.record("not kept: \($0)") })
        #expect(report.pages == 3 && report.examined == 4 && report.recovered == 2 && report.duplicates == 1 && report.failed == 1)
        #expect(history.asked.withLock { $0 } == ["production -", "production p2", "sandbox -"])
        let run = try #require(kept.withLock { $0.first })
        #expect(run.cause == "operator" && run.recovered == 2 && run.error == nil)
    }

    @Test("a pull that fails midway is kept with what it found and why, then fails; a result that cannot be kept is told")
    func failure() async throws {
        let kept = Mutex<[GapFillRun]>([])
        let fill = FillNotificationGaps(record: { run in kept.withLock { $0.append(run) } })
        await #expect(throws: AppleActionError.self) {
            _ = try await fill(
                appId: "demo", acceptsSandbox: true, onlyFailures: true, from: Self.now.addingTimeInterval(-3_600), to: Self.now,
                cause: "scheduled", apple: FakeHistory(failSandbox: true), receiver: FakeIngest(), now: { Self.now }, unrecorded: { _ in })
        }
        let run = try #require(kept.withLock { $0.first })
        #expect(run.pages == 2 && run.recovered == 1 && run.error?.contains("down") == true)

        let told = Mutex(0)
        let unkept = FillNotificationGaps(record: { _ in throw AppleActionError(.unavailable, "disk full") })
        _ = try await unkept(
            appId: "demo", acceptsSandbox: false, onlyFailures: false, from: Self.now.addingTimeInterval(-3_600), to: Self.now,
            cause: "scheduled", apple: FakeHistory(), receiver: FakeIngest(), now: { Self.now }, unrecorded: { _ in told.withLock { $0 += 1 } })
        #expect(told.withLock { $0 } == 1)
    }
}
