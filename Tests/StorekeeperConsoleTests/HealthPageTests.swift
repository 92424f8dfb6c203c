import Foundation
import Persistence
import StorekeeperConsole
import StorekeeperCore
import StorekeeperDomain
import Testing

/// Apple's health page presented without a server: outages with how long they lasted (one not
/// over yet lasts until now), the queue's figures, and what the reads found.
@Suite("console: Apple's health and the queue presented")
struct HealthPageTests {
    static let now = Date(timeIntervalSince1970: 1_793_491_200)  // 2026-11-01T00:00:00Z

    @Test("outages last until they ended or until now; every verification state counted, the oldest wait in seconds")
    func health() throws {
        let counts = ReadOperations.Counts(
            jobs: [:], verifications: [.verified: 5, .retryScheduled: 2], flagged: 1, deliveries: [:], pausedEndpoints: 0, waiting: 2,
            oldestWaitingSeconds: 95.7)
        let page = HealthPage(
            endpoints: [(label: "verify_receipt_production", health: AppleHealth(now: Self.now.addingTimeInterval(-60)))], calls: [],
            callHours: 24,
            outages: [
                .init(endpoint: "verify_receipt_production", began: Self.now.addingTimeInterval(-7_500), ended: Self.now.addingTimeInterval(-3_600)),
                .init(endpoint: "server_api_production", began: Self.now.addingTimeInterval(-75), ended: nil),
            ],
            outageDays: 30, notifications: [NotificationCount(appId: "demo", notificationType: "REFUND", outcome: .submitted, count: 3)],
            gapFills: [], gapFillShown: 50, counts: counts, flagAfterSeconds: 300, now: Self.now)
        #expect(page.endpoints.map(\.state) == ["healthy"] && page.endpoints[0].nextProbe == "—" && page.endpoints[0].since == "2026-10-31T23:59:00Z")
        #expect(page.outages.map(\.lasted) == ["1 h 5 min", "1 min 15 s"])
        #expect(page.outages.map(\.ended) == ["2026-10-31T23:00:00Z", "not yet"])
        #expect(page.notifications.map(\.count) == [3] && page.notifications[0].outcome == "submitted")
        let verified = try #require(page.verificationStates.first { $0.state == "verified" })
        #expect(verified.count == 5 && page.verificationStates.count == VerificationState.allCases.count)
        #expect((page.flagAfter, page.flagged, page.waiting, page.oldestWaiting) == ("300 s", 1, 2, "95 s"))
        let html = try ConsoleRenderer().render(page, layout: .init(title: "Apple health and the queue", notice: nil))
        #expect(html.contains(#"<td class="state" data-state="healthy">healthy</td>"#))
        #expect(html.contains(#"<td class="ended">not yet</td>"#) && html.contains("No call to Apple in these hours."))
        #expect(html.contains(#"<dd id="oldest-waiting">95 s</dd>"#))
    }
}
