import AppStoreModels
import Foundation
import StorekeeperDomain
import TestFixtures
import Testing

@Suite("notification gap-fill windows, at fixed instants")
struct NotificationGapFillWindowsTests {
    let now = referenceTime
    let day = 86_400.0

    @Test("a scheduled pull starts where the last one ended, or a lookback before now, less five minutes of overlap")
    func start() {
        #expect(NotificationGapFillWindows.start(previousEnd: nil, now: now, lookbackSeconds: 3_600) == now.addingTimeInterval(-3_900))
        let previous = now.addingTimeInterval(-600)
        #expect(NotificationGapFillWindows.start(previousEnd: previous, now: now, lookbackSeconds: 3_600) == previous.addingTimeInterval(-300))
    }

    @Test("one window per environment the app accepts, clamped to the history Apple keeps (180 and 30 days, a minute's margin)")
    func windows() {
        let from = now.addingTimeInterval(-90 * day)
        #expect(
            NotificationGapFillWindows.windows(from: from, to: now, acceptsSandbox: false) == [
                .init(environment: .production, start: from, end: now)
            ])
        #expect(
            NotificationGapFillWindows.windows(from: from, to: now, acceptsSandbox: true) == [
                .init(environment: .production, start: from, end: now),
                .init(environment: .sandbox, start: now.addingTimeInterval(-30 * day + 60), end: now),
            ])
        let ancient = now.addingTimeInterval(-400 * day)
        #expect(
            NotificationGapFillWindows.windows(from: ancient, to: now, acceptsSandbox: false).map(\.start) == [
                now.addingTimeInterval(-180 * day + 60)
            ])
    }

    @Test("an empty window (Apple refuses one, 4000013) is never asked for")
    func empty() {
        #expect(NotificationGapFillWindows.windows(from: now, to: now, acceptsSandbox: true).isEmpty)
        #expect(NotificationGapFillWindows.windows(from: now.addingTimeInterval(1), to: now, acceptsSandbox: false).isEmpty)
    }
}
