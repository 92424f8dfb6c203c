import Foundation
import Persistence
import StorekeeperConsole
import StorekeeperDomain
import Testing

/// A customer's page presented without a server: promotional access revocable only while it can
/// still matter and only by someone who may act, and a user id shown as text wherever it appears.
@Suite("console: a customer presented")
struct CustomerPageTests {
    static let now = Date(timeIntervalSince1970: 1_793_491_200)  // 2026-11-01T00:00:00Z
    static let user = "<i>x</i>"

    static func grant(_ id: String, starts: TimeInterval, ends: TimeInterval?, revoked: Bool = false) -> PromotionalGrant {
        PromotionalGrant(
            id: id, appId: "demo", appUserId: user, entitlementId: "pro", startsAt: now.addingTimeInterval(starts),
            expiresAt: ends.map { now.addingTimeInterval($0) }, revokedAt: revoked ? now.addingTimeInterval(-10) : nil, actor: "console:ann",
            reason: "support")
    }

    static func facts() -> CustomerPage.Facts {
        let grants = [
            grant("running", starts: -3_600, ends: 3_600), grant("later", starts: 3_600, ends: nil), grant("over", starts: -7_200, ends: -3_600),
            grant("revoked", starts: -3_600, ends: nil, revoked: true),
        ]
        let view = SubscriberView.build(
            appUserId: user, transactions: [], subscriptions: [], catalog: [:], now: now,
            entitlements: [EntitlementDefinition(id: "pro", products: [])],
            promotional: grants)
        return CustomerPage.Facts(
            appId: "demo", appUserId: user, view: view, grants: grants, entitlementIds: ["pro"], serverAPI: false, verifications: [], events: [],
            audit: [], deliveries: [], provisional: [], notifications: [], historyLimit: 200)
    }

    @Test("a grant is revocable until it is revoked or over, a later one included, and only by someone who may act")
    func grants() {
        let admin = CustomerPage(Self.facts(), mayAct: true, csrf: "t", now: Self.now)
        #expect(admin.grants.map(\.canRevoke) == [true, true, false, false])
        #expect(admin.grants.map(\.until) == ["2026-11-01T01:00:00Z", "for life", "2026-10-31T23:00:00Z", "for life"])
        #expect(admin.entitlements.map { $0["active"] } == ["yes"] && admin.entitlements.map { $0["source"] } == ["promotional"])
        let reader = CustomerPage(Self.facts(), mayAct: false, csrf: "t", now: Self.now)
        #expect(reader.grants.allSatisfy { !$0.canRevoke } && !reader.canAct)
    }

    @Test("the user id is text in the page and a single escaped segment in every form's address")
    func escaped() throws {
        let page = CustomerPage(Self.facts(), mayAct: true, csrf: "t", now: Self.now)
        #expect(page.userPath == "%3Ci%3Ex%3C%2Fi%3E")
        let html = try ConsoleRenderer().render(page, layout: .init(title: "demo: customer", notice: nil))
        #expect(html.contains(#"<span id="customer-id">&lt;i&gt;x&lt;/i&gt;</span>"#) && !html.contains("<i>x</i>"))
        #expect(html.contains(#"action="/console/apps/demo/customers/%3Ci%3Ex%3C%2Fi%3E/promotional-grants""#))
        #expect(html.components(separatedBy: #"class="revoke""#).count == 3, "two revoke buttons")
    }
}
