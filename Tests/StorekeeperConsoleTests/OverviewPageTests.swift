import Foundation
import StorekeeperConsole
import StorekeeperDomain
import Testing

/// The overview's presenter and its templates, without a server or a browser: the figures the
/// reports carry, written exactly, and drawn. The page against the API's figures in a browser is
/// scripts/console-check.sh.
@Suite("console: the overview presented and rendered")
struct OverviewPageTests {
    /// Seconds since 2001-01-01 (Foundation's `Date` as Codable writes it).
    static let october = 812_505_600
    static let november = 815_184_000
    static let december = 817_776_000

    static func snapshot(active: Int, trials: Int, mrr: String) -> String {
        #"{"at": \#(december), "activeSubscriptions": \#(active), "activeTrials": \#(trials), "mrr": \#(mrr)}"#
    }

    static func period(_ start: Int, _ end: Int, closing: Int, new: Int, trials: Int, credits: Int) -> String {
        #"""
        {"start": \#(start), "end": \#(end), "activeAtStart": 0, "closing": \#(snapshot(active: closing, trials: trials, mrr: "[]")),
         "newSubscriptions": \#(new), "trialsStarted": \#(trials), "trialsConverted": 0, "trialsPending": \#(trials), "churned": 0,
         "creditsSold": \#(credits), "creditsRefunded": 0}
        """#
    }

    static let metrics = try! JSONDecoder().decode(
        SubscriptionMetrics.self,
        from: Data(
            #"""
            {"interval": "month",
             "periods": [\#(period(october, november, closing: 0, new: 0, trials: 0, credits: 0)),
                         \#(period(november, december, closing: 3, new: 3, trials: 1, credits: 100))],
             "current": {"snapshot": \#(snapshot(active: 3, trials: 1, mrr: #"[{"currency": "USD", "micros": 14970000}]"#)),
                         "inBillingRetry": 0, "inGracePeriod": 1}}
            """#.utf8))

    static let usd =
        #"{"currency": "USD", "sales": 7, "grossMicros": 21940000, "refunds": 1, "refundsMicros": 2990000, "netMicros": 18950000, "proceedsMicros": 13265000, "estimatedMicros": 0}"#
    static let revenue = try! JSONDecoder().decode(
        RevenueReport.self,
        from: Data(#"{"interval": "month", "periods": [{"start": \#(november), "currencies": [\#(usd)]}], "totals": [\#(usd)]}"#.utf8))

    static func page() -> OverviewPage {
        OverviewPage(
            metrics: metrics, revenue: revenue, environment: "sandbox", interval: .month,
            from: Date(timeIntervalSinceReferenceDate: TimeInterval(october)), to: Date(timeIntervalSinceReferenceDate: TimeInterval(december)))
    }

    @Test("the figures now, the revenue rows and the periods, amounts exact to the micro-unit")
    func figures() {
        let page = Self.page()
        #expect(page.environments.filter(\.selected).map(\.value) == ["sandbox"])
        #expect(page.intervals.filter(\.selected).map(\.value) == ["month"])
        #expect((page.from, page.to) == ("2026-10-01", "2026-12-01"))
        #expect((page.active, page.trials, page.billingRetry, page.grace) == (3, 1, 0, 1))
        #expect(page.mrr.map(\.currency) == ["USD"] && page.mrr.map(\.micros) == ["14970000"] && page.mrr.map(\.amount) == ["14.97"])
        #expect(page.revenue.count == 1)
        let row = page.revenue[0]
        #expect((row.period, row.currency, row.sales, row.gross) == ("2026-11-01", "USD", 7, "21.94"))
        #expect((row.refunds, row.net, row.netMicros, row.proceeds) == ("1 (2.99)", "18.95", "18950000", "13.265"))
        #expect(page.periods.map(\.activeAtClose) == [0, 3] && page.periods.map(\.creditsSold) == [0, 100])
    }

    @Test("each chart has a bar per period of the range, the tallest full height, a period without sales at zero")
    func charts() {
        let page = Self.page()
        #expect(page.activeChart.bars.map(\.label) == ["2026-10", "2026-11"])
        #expect(page.revenueChart.title == "Net revenue by month in USD")
        #expect(page.revenueChart.bars.map(\.text) == ["0.00", "18.95"])
        let (empty, full) = (page.revenueChart.bars[0], page.revenueChart.bars[1])
        #expect(empty.barHeight == 0 && empty.y == page.revenueChart.baseline)
        #expect(full.barHeight == page.revenueChart.baseline - 18 && full.y == 18)
        #expect(full.x > empty.x + empty.barWidth, "bars do not touch")
    }

    @Test("rendered in the layout: every figure in its place, what an operator typed escaped, the chart drawn as SVG")
    func rendered() throws {
        let html = try ConsoleRenderer().render(
            Self.page(),
            layout: .init(title: "demo <b>overview</b>", notice: nil, operator: "ann&co", role: "admin", csrf: "t", appIds: ["demo"]))
        #expect(html.contains(#"<dd id="active-subscriptions">3</dd>"#))
        #expect(html.contains(#"data-currency="USD" data-micros="14970000">14.97</dd>"#))
        #expect(html.contains(#"<td class="net" data-micros="18950000">18.95</td>"#))
        #expect(html.contains("<title>demo &lt;b&gt;overview&lt;/b&gt; · Storekeeper</title>") && !html.contains("<b>overview</b>"))
        #expect(html.contains(#"<span id="operator">ann&amp;co (admin)</span>"#))
        #expect(html.contains(#"<svg class="chart" role="img" viewBox="0 0 600 200""#))
        #expect(html.contains("<title>2026-11: 18.95</title>"))
        #expect(html.contains(#"<option value="sandbox" selected>sandbox</option>"#))
        #expect(html.contains(#"<a class="app" href="/console/apps/demo">demo</a>"#))
    }

    @Test("signed out: the frame shows no navigation, no operator and no form token")
    func signedOut() throws {
        let html = try ConsoleRenderer().render(MessagePage("Signed out."), layout: .init(title: "Bye", notice: "done"))
        #expect(html.contains("<p>Signed out.</p>") && html.contains(#"<p role="status" class="notice">done</p>"#))
        #expect(!html.contains("<nav") && !html.contains("operator") && !html.contains("csrf"))
    }
}
