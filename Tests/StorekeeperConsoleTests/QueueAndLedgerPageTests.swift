import Foundation
import Persistence
import StorekeeperConsole
import StorekeeperDomain
import Testing

/// The verification queue's and the ledger's presenters, without a server or a browser.
@Suite("console: the queue and the ledger presented")
struct QueueAndLedgerPageTests {
    static let t0 = Date(timeIntervalSince1970: 1_793_491_200)  // 2026-11-01T00:00:00Z

    static func verification(_ id: String, _ state: VerificationState, statuses: [Int] = [], reason: FailureReason? = nil) -> VerificationRecord {
        VerificationRecord(
            id: id, appId: "demo", appUserId: "<b>ann</b>", receiptHash: "h", jobId: "j-\(id)", state: state, reason: reason,
            attempts: statuses.count,
            appleStatuses: statuses, environment: nil, nextAttemptAt: nil, grant: nil, createdAt: t0, updatedAt: t0, finalizedAt: nil)
    }

    @Test("retry offered to whoever may act, never on a verification being verified; the filter keeps its state")
    func queue() throws {
        let records = [
            Self.verification("v-1", .retryScheduled, statuses: [21005, 21005], reason: FailureReason(rawValue: "apple_receipt_server_unavailable")),
            Self.verification("v-2", .verifying),
        ]
        let admin = VerificationsPage(records, state: .retryScheduled, mayAct: true, csrf: "token")
        #expect(admin.states.filter(\.selected).map(\.value) == ["retry_scheduled"])
        #expect(admin.rows.map(\.canRetry) == [true, false])
        #expect(admin.rows[0].statuses == "21005 21005" && admin.rows[0].reason == "apple_receipt_server_unavailable")
        #expect(admin.rows[0].created == "2026-11-01T00:00:00Z" && admin.rows[0].csrf == "token")
        let reader = VerificationsPage(records, state: nil, mayAct: false, csrf: "token")
        #expect(reader.rows.allSatisfy { !$0.canRetry } && reader.states.allSatisfy { !$0.selected })
        let html = try ConsoleRenderer().render(admin, layout: .init(title: "Verifications", notice: nil))
        #expect(html.contains(#"<td class="state" data-state="retry_scheduled">retry_scheduled</td>"#))
        #expect(html.contains("&lt;b&gt;ann&lt;/b&gt;") && !html.contains("<b>ann</b>"), "a user id is text, never markup")
        #expect(html.components(separatedBy: #"class="retry""#).count == 2, "one retry button")
    }

    @Test("the ledger: the newest rows first up to the limit, the count of all, amounts exact, open ends empty")
    func ledger() {
        let entries = (0..<3).map { index in
            var entry = LedgerEntry(
                appId: "demo", appUserId: "u\(index)", productId: "coins", productType: .consumable, transactionId: "t\(index)",
                originalTransactionId: "t\(index)", environment: "production", purchaseDate: Self.t0.addingTimeInterval(Double(index) * 60),
                event: .purchase, quantity: 1, priceMicros: 990_000, currency: "EUR", state: "granted", recordedAt: Self.t0)
            entry.proceedsMicros = 841_500
            return entry
        }
        let query = LedgerQuery(appId: "demo", environment: "sandbox", from: .distantPast, to: Self.t0.addingTimeInterval(86_400))
        let page = LedgerPage(
            products: [], entries: entries, query: query, limit: 2, downloads: (path: "/console/apps/demo/ledger", query: "?environment=sandbox"))
        #expect(page.rows.map(\.transaction) == ["t2", "t1"])
        #expect((page.count, page.shown, page.cut) == (3, 2, true))
        #expect(page.rows[0].amount == "0.99 EUR" && page.rows[0].proceeds == "0.8415" && page.rows[0].estimated == "no")
        #expect(page.from == "" && page.to == "2026-11-02")
        #expect(page.csv == "/console/apps/demo/ledger.csv?environment=sandbox")
        #expect(page.environments.filter(\.selected).map(\.value) == ["sandbox"])
    }
}
