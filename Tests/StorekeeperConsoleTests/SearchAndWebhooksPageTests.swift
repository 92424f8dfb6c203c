import Foundation
import Persistence
import StorekeeperConsole
import StorekeeperCore
import StorekeeperDomain
import Testing

/// Support's search and the webhooks page presented without a server: links that stay in their
/// segment, how each customer was found, and an endpoint's figures without its secrets.
@Suite("console: the customer search and the webhooks page presented")
struct SearchAndWebhooksPageTests {
    static let now = Date(timeIntervalSince1970: 1_793_491_200)

    @Test("each customer found links to their page with the id kept in its segment, and says how it was found")
    func search() throws {
        let page = CustomersPage(
            appId: "demo app", query: "1000",
            found: [.init(appUserId: "a/b?c", via: .matched(.transactionId)), .init(appUserId: "dana", via: .alias)])
        #expect(page.searched && page.found)
        #expect(page.results.map(\.encoded) == ["a%2Fb%3Fc", "dana"] && page.results[0].app == "demo%20app")
        #expect(page.results.map(\.how) == ["holds that transaction", "by an alias (an anonymous id they had)"])
        let none = CustomersPage(appId: "demo", query: "", found: [])
        #expect(!none.searched && !none.found)
        let html = try ConsoleRenderer().render(page, layout: .init(title: "Customers", notice: nil))
        #expect(html.contains(#"<a href="/console/apps/demo%20app/customers/a%2Fb%3Fc">a/b?c</a> holds that transaction"#))
    }

    @Test("an endpoint: its rate over the deliveries that ended, why it is paused, every event when it names none, never a secret")
    func webhooks() throws {
        let endpoint = WebhookEndpoint(
            id: "whep_1", appId: "demo", url: "https://example.com/hook", secrets: [.init(value: "whsec_secret", createdAt: Self.now)],
            state: .paused, pausedReason: "endpoint_gone", createdAt: Self.now, updatedAt: Self.now)
        let page = WebhooksPage(
            appId: "demo", watched: [.init(endpoint: endpoint, delivered: 3, ended: 4, dead: [])], deliveryCounts: [.delivered: 3, .dead: 1],
            mayAct: true, csrf: "token")
        let shown = try #require(page.endpoints.first)
        #expect(shown.successRate == "75% of 4" && shown.paused == "endpoint_gone" && shown.types == "every event")
        #expect(!shown.hasDead && !shown.canAct, "nothing to replay, no button")
        #expect(page.deliveries.first { $0.state == "dead" }?.count == 1)
        let html = try ConsoleRenderer().render(page, layout: .init(title: "Webhooks", notice: nil))
        #expect(html.contains(#"<td class="success-rate">75% of 4</td>"#) && !html.contains("whsec_secret"))
    }
}
