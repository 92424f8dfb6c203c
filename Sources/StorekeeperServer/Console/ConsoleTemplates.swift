import Mustache

/// The console's pages as Mustache templates, compiled once at start. Every value goes through
/// `{{…}}`, which escapes HTML; `{{{…}}}` only takes HTML the console rendered itself (a page's
/// body, an SVG chart built by `ConsoleChart`). No script anywhere: the Content-Security-Policy
/// forbids it.
enum ConsoleTemplates {
    static func library() throws -> MustacheLibrary {
        var library = MustacheLibrary()
        for (name, text) in all { try library.register(text, named: name) }
        return library
    }

    static let all: [(String, String)] = [
        ("layout", layout), ("login", login), ("overview", overview), ("customers", customers), ("customer", customer),
        ("verifications", verifications), ("message", message), ("ledger", ledger), ("health", health), ("webhooks", webhooks),
        ("verificationHead", verificationHead), ("verificationRow", verificationRow),
    ]

    /// A verification's row, on the verifications page and a customer's (partials).
    static let verificationHead = """
        <thead><tr><th scope="col">Verification</th><th scope="col">App user</th><th scope="col">State</th><th scope="col">Attempts</th><th scope="col">Apple statuses</th><th scope="col">Reason</th><th scope="col">Created</th><th scope="col">Action</th></tr></thead>
        """
    static let verificationRow = """
        <tr id="verification-{{id}}"><td>{{id}}</td><td>{{user}}</td><td class="state">{{state}}</td><td>{{attempts}}</td><td>{{statuses}}</td><td>{{reason}}</td><td>{{created}}</td>
        <td>{{#canRetry}}<form method="post" action="/console/verifications/{{id}}/retry"><input type="hidden" name="csrf" value="{{csrf}}"><button type="submit" class="retry">Retry</button></form>{{/canRetry}}</td></tr>

        """

    static let layout = """
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>{{title}} · Storekeeper</title>
        <link rel="stylesheet" href="/console/static/console.css">
        </head>
        <body>
        <a class="skip" href="#main">Skip to content</a>
        {{#signedIn}}
        <header>
        <nav aria-label="Main">
        <a href="/console">Storekeeper</a>
        {{#apps}}<a href="/console/apps/{{id}}">{{id}}</a> <a href="/console/apps/{{id}}/customers">Customers</a>
        <a href="/console/apps/{{id}}/ledger">Catalog and ledger</a> <a href="/console/apps/{{id}}/webhooks">Webhooks</a>{{/apps}}
        <a href="/console/verifications">Verifications</a> <a href="/console/health">Apple health</a>
        </nav>
        <form method="post" action="/console/logout" class="signout">
        <input type="hidden" name="csrf" value="{{csrf}}">
        <span id="operator">{{operator}} ({{role}})</span> <button type="submit">Sign out</button>
        </form>
        </header>
        {{/signedIn}}
        <main id="main">
        <h1>{{title}}</h1>
        {{#notice}}<p role="status" class="notice">{{notice}}</p>{{/notice}}
        {{{body}}}
        </main>
        </body>
        </html>
        """

    static let login = """
        <form method="post" action="/console/login" class="login">
        <input type="hidden" name="csrf" value="{{csrf}}">
        <p><label for="account">Operator (empty for the admin key)</label>
        <input id="account" name="account" autocomplete="username" value="{{account}}"></p>
        <p><label for="password">Password or admin key</label>
        <input id="password" name="password" type="password" autocomplete="current-password" required></p>
        <p><button type="submit" id="sign-in">Sign in</button></p>
        </form>
        """

    static let message = """
        <p>{{text}}</p>
        <p><a href="{{back}}">Back</a></p>
        """

    static let overview = """
        <form method="get" class="range" aria-label="Range">
        <label>Environment <select name="environment">{{#environments}}<option value="{{value}}"{{#selected}} selected{{/selected}}>{{value}}</option>{{/environments}}</select></label>
        <label>Interval <select name="interval">{{#intervals}}<option value="{{value}}"{{#selected}} selected{{/selected}}>{{value}}</option>{{/intervals}}</select></label>
        <label>From <input type="date" name="from" value="{{from}}"></label>
        <label>To <input type="date" name="to" value="{{to}}"></label>
        <button type="submit">Show</button>
        </form>
        <section aria-labelledby="now-heading">
        <h2 id="now-heading">Now</h2>
        <dl class="figures">
        <div><dt>Active subscriptions</dt><dd id="active-subscriptions">{{active}}</dd></div>
        <div><dt>Active trials</dt><dd id="active-trials">{{trials}}</dd></div>
        <div><dt>In billing retry</dt><dd id="billing-retry">{{billingRetry}}</dd></div>
        <div><dt>In grace period</dt><dd id="grace-period">{{grace}}</dd></div>
        {{#mrr}}<div><dt>MRR {{currency}}</dt><dd class="mrr" data-currency="{{currency}}" data-micros="{{micros}}">{{amount}}</dd></div>{{/mrr}}
        </dl>
        </section>
        <section aria-labelledby="active-heading">
        <h2 id="active-heading">Paying subscriptions at each {{interval}}'s close</h2>
        {{{activeChart}}}
        </section>
        <section aria-labelledby="revenue-heading">
        <h2 id="revenue-heading">Revenue by {{interval}}</h2>
        {{{revenueChart}}}
        <table id="revenue">
        <caption>Sales less refunds, by purchase date (docs/ANALYTICS.md)</caption>
        <thead><tr><th scope="col">Period</th><th scope="col">Currency</th><th scope="col">Sales</th><th scope="col">Gross</th><th scope="col">Refunds</th><th scope="col">Net</th><th scope="col">Proceeds</th></tr></thead>
        <tbody>
        {{#revenue}}<tr><td>{{period}}</td><td>{{currency}}</td><td>{{sales}}</td><td>{{gross}}</td><td>{{refunds}}</td><td class="net" data-micros="{{netMicros}}">{{net}}</td><td>{{proceeds}}</td></tr>
        {{/revenue}}
        </tbody>
        </table>
        </section>
        <section aria-labelledby="subs-heading">
        <h2 id="subs-heading">Subscriptions by {{interval}}</h2>
        <table id="subscriptions">
        <thead><tr><th scope="col">Period</th><th scope="col">Paying at start</th><th scope="col">Paying at close</th><th scope="col">New</th><th scope="col">Trials started</th><th scope="col">Converted</th><th scope="col">Churned</th><th scope="col">Credits sold</th></tr></thead>
        <tbody>
        {{#periods}}<tr><td>{{period}}</td><td>{{activeAtStart}}</td><td>{{activeAtClose}}</td><td>{{newSubscriptions}}</td><td>{{trialsStarted}}</td><td>{{trialsConverted}}</td><td>{{churned}}</td><td>{{creditsSold}}</td></tr>
        {{/periods}}
        </tbody>
        </table>
        </section>
        """

    static let customers = """
        <form method="get" role="search" aria-label="Customers">
        <label for="q">App user id, alias, transaction id, original transaction id, app transaction id, appAccountToken or e-mail</label>
        <input id="q" name="q" value="{{query}}">
        <button type="submit" id="search">Search</button>
        </form>
        {{#searched}}
        {{#found}}<ul id="results">{{#results}}<li><a href="/console/apps/{{app}}/customers/{{encoded}}">{{id}}</a> {{how}}</li>{{/results}}</ul>{{/found}}
        {{^found}}<p id="no-results">No customer matches “{{query}}”.</p>{{/found}}
        {{/searched}}
        """

    static let customer = """
        <p>App user id: <span id="customer-id">{{id}}</span>{{#aliases}} · alias {{.}}{{/aliases}} · credit balance <span id="credits">{{credits}}</span></p>
        <section aria-labelledby="ent-heading">
        <h2 id="ent-heading">Entitlements</h2>
        <table id="entitlements">
        <thead><tr><th scope="col">Entitlement</th><th scope="col">Active</th><th scope="col">Until</th><th scope="col">Renewal</th><th scope="col">Product</th><th scope="col">Source</th></tr></thead>
        <tbody>{{#entitlements}}<tr id="entitlement-{{id}}"><td>{{id}}</td><td>{{active}}</td><td>{{expires}}</td><td class="renewal">{{renewal}}</td><td>{{product}}</td><td>{{source}}</td></tr>
        {{/entitlements}}</tbody>
        </table>
        </section>
        <section aria-labelledby="sub-heading">
        <h2 id="sub-heading">Subscriptions</h2>
        <table id="customer-subscriptions">
        <thead><tr><th scope="col">Product</th><th scope="col">Original transaction</th><th scope="col">Status</th><th scope="col">Expires</th><th scope="col">Renews</th></tr></thead>
        <tbody>{{#subscriptions}}<tr><td>{{product}}</td><td>{{original}}</td><td>{{status}}</td><td>{{expires}}</td><td>{{renews}}</td></tr>
        {{/subscriptions}}</tbody>
        </table>
        </section>
        <section aria-labelledby="promo-heading">
        <h2 id="promo-heading">Promotional access</h2>
        <table id="promotional-grants">
        <thead><tr><th scope="col">Entitlement</th><th scope="col">From</th><th scope="col">Until</th><th scope="col">Revoked</th><th scope="col">By</th><th scope="col">Reason</th><th scope="col">Action</th></tr></thead>
        <tbody>{{#grants}}<tr><td>{{entitlement}}</td><td>{{from}}</td><td>{{until}}</td><td>{{revoked}}</td><td>{{by}}</td><td>{{reason}}</td>
        <td>{{#canRevoke}}<form method="post" action="/console/apps/{{appPath}}/promotional-grants/{{id}}/revoke"><input type="hidden" name="csrf" value="{{csrf}}"><input type="hidden" name="appUserId" value="{{userId}}"><label>Reason <input name="reason" required></label> <button type="submit" class="revoke">Revoke</button></form>{{/canRevoke}}</td></tr>
        {{/grants}}</tbody>
        </table>
        {{#canAct}}
        <form method="post" action="/console/apps/{{appPath}}/customers/{{userPath}}/promotional-grants" id="grant-form">
        <input type="hidden" name="csrf" value="{{csrf}}">
        <label>Entitlement <select name="entitlementId">{{#entitlementIds}}<option value="{{.}}">{{.}}</option>{{/entitlementIds}}</select></label>
        <label>For (ISO 8601, empty: for life) <input name="duration" placeholder="P1M"></label>
        <label>Reason <input name="reason" required></label>
        <button type="submit" id="grant">Grant</button>
        </form>
        {{#serverAPI}}<form method="post" action="/console/apps/{{appPath}}/customers/{{userPath}}/refresh"><input type="hidden" name="csrf" value="{{csrf}}"><button type="submit" id="refresh">Refresh from the App Store Server API</button></form>{{/serverAPI}}
        {{/canAct}}
        </section>
        <section aria-labelledby="tx-heading">
        <h2 id="tx-heading">Transactions</h2>
        <table id="transactions">
        <thead><tr><th scope="col">Transaction</th><th scope="col">Product</th><th scope="col">Bought</th><th scope="col">Charged</th><th scope="col">Storefront</th><th scope="col">Refunded</th><th scope="col">Environment</th></tr></thead>
        <tbody>{{#transactions}}<tr><td>{{id}}</td><td>{{product}}</td><td>{{purchased}}</td><td>{{charged}}</td><td>{{storefront}}</td><td>{{refunded}}</td><td>{{environment}}</td></tr>
        {{/transactions}}</tbody>
        </table>
        </section>
        <section aria-labelledby="ver-heading">
        <h2 id="ver-heading">Verifications (newest {{historyLimit}})</h2>
        <table id="customer-verifications">
        {{> verificationHead}}
        <tbody>
        {{#verifications}}{{> verificationRow}}{{/verifications}}
        </tbody>
        </table>
        </section>
        <section aria-labelledby="events-heading">
        <h2 id="events-heading">Events (first {{historyLimit}})</h2>
        <table id="customer-events">
        <thead><tr><th scope="col">#</th><th scope="col">Event</th><th scope="col">When</th><th scope="col">Product</th><th scope="col">Transaction</th><th scope="col">From</th></tr></thead>
        <tbody>{{#events}}<tr><td>{{sequence}}</td><td>{{type}}</td><td>{{occurred}}</td><td>{{product}}</td><td>{{transaction}}</td><td>{{source}}</td></tr>
        {{/events}}</tbody>
        </table>
        </section>
        <section aria-labelledby="provisional-heading">
        <h2 id="provisional-heading">Provisional access (granted while Apple could not be asked)</h2>
        <table id="customer-provisional">
        <thead><tr><th scope="col">Product</th><th scope="col">Transaction</th><th scope="col">Verification</th><th scope="col">Until</th></tr></thead>
        <tbody>{{#provisional}}<tr><td>{{product}}</td><td>{{transaction}}</td><td>{{verification}}</td><td>{{until}}</td></tr>
        {{/provisional}}</tbody>
        </table>
        </section>
        <section aria-labelledby="notifications-heading">
        <h2 id="notifications-heading">Apple's notifications about their purchases (newest {{historyLimit}})</h2>
        <table id="customer-notifications">
        <thead><tr><th scope="col">Notification</th><th scope="col">Signed</th><th scope="col">Received</th><th scope="col">Original transaction</th><th scope="col">Outcome</th><th scope="col">Verification</th></tr></thead>
        <tbody>{{#notifications}}<tr><td>{{type}}</td><td>{{signed}}</td><td>{{received}}</td><td>{{original}}</td><td>{{outcome}}</td><td>{{verification}}</td></tr>
        {{/notifications}}</tbody>
        </table>
        </section>
        <section aria-labelledby="deliveries-heading">
        <h2 id="deliveries-heading">Webhook deliveries (latest {{historyLimit}} per endpoint)</h2>
        <table id="customer-deliveries">
        <thead><tr><th scope="col">Endpoint</th><th scope="col">#</th><th scope="col">Event</th><th scope="col">State</th><th scope="col">Attempts</th><th scope="col">Last answer</th><th scope="col">Updated</th></tr></thead>
        <tbody>{{#deliveries}}<tr><td>{{endpoint}}</td><td>{{sequence}}</td><td>{{event}}</td><td>{{state}}</td><td>{{attempts}}</td><td>{{last}}</td><td>{{updated}}</td></tr>
        {{/deliveries}}</tbody>
        </table>
        </section>
        <section aria-labelledby="audit-heading">
        <h2 id="audit-heading">Operators' actions (newest {{historyLimit}})</h2>
        <table id="customer-audit">
        <thead><tr><th scope="col">When</th><th scope="col">Who</th><th scope="col">What</th><th scope="col">On</th><th scope="col">Why</th></tr></thead>
        <tbody>{{#audit}}<tr><td>{{at}}</td><td>{{actor}}</td><td>{{action}}</td><td>{{subject}}</td><td>{{reason}}</td></tr>
        {{/audit}}</tbody>
        </table>
        </section>
        """

    static let verifications = """
        <form method="get" aria-label="Filter">
        <label>State <select name="state"><option value="">any</option>{{#states}}<option value="{{value}}"{{#selected}} selected{{/selected}}>{{value}}</option>{{/states}}</select></label>
        <button type="submit">Filter</button>
        </form>
        <table id="verifications">
        {{> verificationHead}}
        <tbody>
        {{#rows}}{{> verificationRow}}{{/rows}}
        </tbody>
        </table>
        """

    static let ledger = """
        <section aria-labelledby="catalog-heading">
        <h2 id="catalog-heading">Catalog</h2>
        <table id="catalog">
        <thead><tr><th scope="col">Product</th><th scope="col">Type</th><th scope="col">Status</th><th scope="col">List price</th><th scope="col">Billing period or length</th></tr></thead>
        <tbody>{{#products}}<tr><td>{{id}}</td><td>{{type}}</td><td>{{status}}</td><td>{{price}}</td><td>{{duration}}</td></tr>
        {{/products}}</tbody>
        </table>
        </section>
        <section aria-labelledby="ledger-heading">
        <h2 id="ledger-heading">Ledger</h2>
        <form method="get" class="range" aria-label="Ledger range">
        <label>Environment <select name="environment">{{#environments}}<option value="{{value}}"{{#selected}} selected{{/selected}}>{{value}}</option>{{/environments}}</select></label>
        <label>From <input type="date" name="from" value="{{from}}"></label>
        <label>To <input type="date" name="to" value="{{to}}"></label>
        <button type="submit">Show</button>
        </form>
        <p><a id="download-csv" href="{{csv}}" download>Download CSV</a> · <a id="download-json" href="{{json}}" download>Download JSON</a> · <span id="ledger-count">{{count}}</span> rows{{#cut}}, the latest {{shown}} shown{{/cut}}</p>
        <table id="ledger">
        <thead><tr><th scope="col">Bought</th><th scope="col">App user</th><th scope="col">Product</th><th scope="col">Transaction</th><th scope="col">Event</th><th scope="col">Amount</th><th scope="col">Proceeds</th><th scope="col">Storefront</th><th scope="col">Estimated</th></tr></thead>
        <tbody>{{#rows}}<tr><td>{{purchased}}</td><td>{{user}}</td><td>{{product}}</td><td>{{transaction}}</td><td>{{event}}</td><td>{{amount}}</td><td>{{proceeds}}</td><td>{{storefront}}</td><td>{{estimated}}</td></tr>
        {{/rows}}</tbody>
        </table>
        </section>
        """

    static let health = """
        <section aria-labelledby="apple-heading">
        <h2 id="apple-heading">Apple, as this process's workers see it</h2>
        <table id="apple-health">
        <thead><tr><th scope="col">Endpoint</th><th scope="col">State</th><th scope="col">Since</th><th scope="col">Failures in a row</th><th scope="col">Next probe</th></tr></thead>
        <tbody>{{#endpoints}}<tr><td>{{endpoint}}</td><td class="state">{{state}}</td><td>{{since}}</td><td>{{failures}}</td><td>{{nextProbe}}</td></tr>
        {{/endpoints}}</tbody>
        </table>
        {{^endpoints}}<p>No call to Apple yet in this process.</p>{{/endpoints}}
        </section>
        <section aria-labelledby="calls-heading">
        <h2 id="calls-heading">Calls to Apple by hour, the last {{callHours}} hours, every process</h2>
        <table id="apple-calls">
        <caption>How each call ended (Apple's verifyReceipt status, the HTTP status, or no answer) and its latency; a percentile is the bound of the latency bucket it falls in</caption>
        <thead><tr><th scope="col">Hour</th><th scope="col">Endpoint</th><th scope="col">Calls</th><th scope="col">Answers</th><th scope="col">p50</th><th scope="col">p95</th><th scope="col">p99</th><th scope="col">Mean</th></tr></thead>
        <tbody>{{#calls}}<tr data-endpoint="{{endpoint}}"><td>{{hour}}</td><td>{{endpoint}}</td><td class="count">{{calls}}</td><td class="outcomes">{{outcomes}}</td><td class="p50">{{p50}}</td><td>{{p95}}</td><td>{{p99}}</td><td>{{mean}}</td></tr>
        {{/calls}}</tbody>
        </table>
        {{^calls}}<p>No call to Apple in these hours.</p>{{/calls}}
        </section>
        <section aria-labelledby="outages-heading">
        <h2 id="outages-heading">Outages of the last {{outageDays}} days, as every process shared them</h2>
        <table id="outages">
        <thead><tr><th scope="col">Endpoint</th><th scope="col">Down from</th><th scope="col">Answering again</th><th scope="col">Lasted</th></tr></thead>
        <tbody>{{#outages}}<tr><td>{{endpoint}}</td><td>{{began}}</td><td class="ended">{{ended}}</td><td>{{lasted}}</td></tr>
        {{/outages}}</tbody>
        </table>
        {{^outages}}<p>No outage.</p>{{/outages}}
        </section>
        <section aria-labelledby="notifications-heading">
        <h2 id="notifications-heading">Apple's notifications received in the last 24 hours</h2>
        <table id="notifications-received">
        <caption>Pushed by Apple or pulled by the gap-fill; the outcome is what ingesting them decided</caption>
        <thead><tr><th scope="col">App</th><th scope="col">Type</th><th scope="col">Outcome</th><th scope="col">Received</th></tr></thead>
        <tbody>{{#notifications}}<tr><td>{{app}}</td><td>{{type}}</td><td>{{outcome}}</td><td class="count">{{count}}</td></tr>
        {{/notifications}}</tbody>
        </table>
        {{^notifications}}<p>None.</p>{{/notifications}}
        </section>
        <section aria-labelledby="gap-fill-heading">
        <h2 id="gap-fill-heading">Pulls of Apple's notification history (the gap-fill), latest {{gapFillShown}}</h2>
        <table id="gap-fill-runs">
        <thead><tr><th scope="col">App</th><th scope="col">Started</th><th scope="col">Why</th><th scope="col">Window</th><th scope="col">Examined</th><th scope="col">New</th><th scope="col">Seen before</th><th scope="col">Refused</th><th scope="col">Failed with</th></tr></thead>
        <tbody>{{#gapFills}}<tr><td>{{app}}</td><td>{{started}}</td><td>{{cause}}</td><td>{{window}}</td><td>{{examined}}</td><td class="recovered">{{recovered}}</td><td>{{duplicates}}</td><td>{{failed}}</td><td class="error">{{error}}</td></tr>
        {{/gapFills}}</tbody>
        </table>
        {{^gapFills}}<p>No pull yet (apps with an In-App Purchase key pull every interval).</p>{{/gapFills}}
        </section>
        <section aria-labelledby="queue-heading">
        <h2 id="queue-heading">Verifications and queue</h2>
        <dl class="figures">
        {{#verificationStates}}<div><dt>{{state}}</dt><dd data-state="{{state}}">{{count}}</dd></div>{{/verificationStates}}
        <div><dt>Flagged (not final after {{flagAfter}})</dt><dd id="flagged">{{flagged}}</dd></div>
        <div><dt>Waiting for Apple</dt><dd id="waiting">{{waiting}}</dd></div>
        <div><dt>Oldest waiting</dt><dd id="oldest-waiting">{{oldestWaiting}}</dd></div>
        </dl>
        </section>
        """

    static let webhooks = """
        <table id="webhook-endpoints">
        <thead><tr><th scope="col">Endpoint</th><th scope="col">URL</th><th scope="col">State</th><th scope="col">Why paused</th><th scope="col">Events</th><th scope="col">Delivered (latest 200 that ended)</th></tr></thead>
        <tbody>{{#endpoints}}<tr><td>{{id}}</td><td>{{url}}</td><td>{{state}}</td><td>{{paused}}</td><td>{{types}}</td><td class="success-rate">{{successRate}}</td></tr>
        {{/endpoints}}</tbody>
        </table>
        {{^endpoints}}<p>No webhook endpoint.</p>{{/endpoints}}
        {{#endpoints}}{{#hasDead}}
        <section aria-label="Dead letters of {{id}}">
        <h2>Dead letters of {{id}} (latest 50)</h2>
        <table class="dead-letters" id="dead-{{id}}">
        <thead><tr><th scope="col">Delivery</th><th scope="col">Event</th><th scope="col">App user</th><th scope="col">Attempts</th><th scope="col">Last answer</th><th scope="col">At</th><th scope="col">Action</th></tr></thead>
        <tbody>{{#dead}}<tr><td>{{id}}</td><td>{{event}}</td><td>{{user}}</td><td>{{attempts}}</td><td>{{last}}</td><td>{{at}}</td>
        <td>{{#canAct}}<form method="post" action="/console/apps/{{app}}/webhooks/{{endpointPath}}/replay"><input type="hidden" name="csrf" value="{{csrf}}"><input type="hidden" name="deliveryId" value="{{id}}"><button type="submit" class="replay">Replay</button></form> <form method="post" action="/console/apps/{{app}}/webhooks/{{endpointPath}}/skip"><input type="hidden" name="csrf" value="{{csrf}}"><input type="hidden" name="deliveryId" value="{{id}}"><button type="submit" class="skip-delivery">Skip</button></form>{{/canAct}}</td></tr>
        {{/dead}}</tbody>
        </table>
        {{#canAct}}<form method="post" action="/console/apps/{{app}}/webhooks/{{path}}/replay"><input type="hidden" name="csrf" value="{{csrf}}"><button type="submit" class="replay-all">Replay every dead delivery of {{id}}</button></form>{{/canAct}}
        </section>
        {{/hasDead}}{{/endpoints}}
        <dl class="figures">{{#deliveries}}<div><dt>Deliveries {{state}} (every app)</dt><dd data-delivery-state="{{state}}">{{count}}</dd></div>{{/deliveries}}</dl>
        """

    /// Served at /console/static/console.css: a page carries no inline style either.
    static let stylesheet = """
        :root { color-scheme: light dark; font-family: system-ui, sans-serif; line-height: 1.4; }
        body { margin: 0; }
        .skip { position: absolute; left: -10000px; }
        .skip:focus { left: 1rem; top: 1rem; }
        header { display: flex; flex-wrap: wrap; justify-content: space-between; gap: .5rem; padding: .5rem 1rem; border-bottom: 1px solid #8884; }
        nav a { margin-right: .75rem; }
        main { padding: 1rem; max-width: 72rem; }
        .figures { display: grid; grid-template-columns: repeat(auto-fit, minmax(10rem, 1fr)); gap: .75rem; }
        .figures div { border: 1px solid #8884; border-radius: .5rem; padding: .5rem .75rem; }
        .figures dd { margin: 0; font-size: 1.5rem; font-variant-numeric: tabular-nums; }
        table { border-collapse: collapse; width: 100%; margin: .5rem 0 1.5rem; display: block; overflow-x: auto; }
        th, td { text-align: left; padding: .25rem .5rem; border-bottom: 1px solid #8884; white-space: nowrap; }
        .range, form[role=search] { display: flex; flex-wrap: wrap; gap: .5rem; align-items: end; margin-bottom: 1rem; }
        .notice { padding: .5rem; border: 1px solid #8888; border-radius: .25rem; }
        svg.chart { width: 100%; max-width: 48rem; height: auto; }
        svg.chart rect { fill: #3b6fb6; }
        svg.chart text { font-size: 10px; fill: currentColor; }
        .login { max-width: 24rem; }
        .login input { width: 100%; }
        """
}
