"""The console driven by a real browser (scripts/console-check.sh starts the server).

Arguments: server URL, simulator URL, the read-only operator's password, the screenshot folder.
Every check raises on failure; the exit status is the verdict.
"""

import json
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

from axe_selenium_python import Axe
from selenium import webdriver
from selenium.common.exceptions import NoAlertPresentException, StaleElementReferenceException, WebDriverException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

API, SIM, READER_PASSWORD, SHOTS = sys.argv[1:5]
ADMIN_KEY = "demo-admin-key-0123456789"
APP_KEY = "demo-app-key-0123456789"
BUNDLE = "com.example.storekeeper.demo"
# The second app of console-check.sh's configuration: its bundle and key.
PUZZLES = ("com.example.puzzles", "puzzles-app-key-0123456789")
# The third: a daily subscription, ten seconds long on the simulator's clock.
QUICK = ("com.example.quick", "quick-app-key-0123456789")
HOSTILE = "<img src=x onerror=alert(1)><script>alert(2)</script>"


def call(url, body=None, headers=None, method=None):
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(
        url, data=data, method=method, headers={"Content-Type": "application/json", **(headers or {})})
    with urllib.request.urlopen(request, timeout=60) as response:
        text = response.read()
        return json.loads(text) if text else {}


def admin(path):
    return call(API + path, headers={"Authorization": "Bearer " + ADMIN_KEY})


CURRENT = []


def check(condition, what):
    if not condition:
        for driver in CURRENT:
            try:
                print(f"(the browser was at {driver.current_url}:)\n{driver.page_source[:3000]}", file=sys.stderr)
            except Exception:  # the browser is closed already
                pass
        raise SystemExit(f"console check failed: {what}")
    print(f"ok: {what}")


def until(condition, what, seconds=60):
    """Waits for what another process does (the server's workers): bounded, polled."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.2)
    check(condition(), what)


# ---- A scripted history, bought through the simulator and told to the server.
def buy(user, product, environment="production", offer=None, app=(BUNDLE, APP_KEY)):
    bundle, key = app
    device = call(SIM + "/sim/devices", {"bundleId": bundle, "environment": environment})["deviceId"]
    body = {"productId": product}
    if offer:
        body["offer"] = offer
    purchase = call(SIM + f"/sim/devices/{device}/purchases", body)
    verification = call(API + "/v1/transactions?wait=30", {"appUserId": user, "signedTransaction": purchase["signedTransaction"]},
                        {"Authorization": "Bearer " + key})
    check(verification.get("state") == "verified", f"{user} bought {product}")
    return purchase


alices = buy("alice", "com.example.pro.monthly")
buy("bob", "com.example.pro.monthly")
buy("trial-taker", "com.example.pro.monthly", offer={"type": 1, "discountType": "FREE_TRIAL", "period": "P1W"})
buy("coin-buyer", "com.example.coins100")
refunded = buy("refunded", "com.example.removeads")
call(SIM + f"/sim/transactions/{refunded['transaction']['transaction_id']}/refund", {})
buy(HOSTILE, "com.example.removeads")
# A subscriber who turned renewal off: Apple says so by notification, which the simulator sends
# to the server. (A billing issue shows only once the period has ended: ConsoleTests moves the
# clock for that; here the month lasts five minutes.)
quitter = buy("quitter", "com.example.pro.monthly")["transaction"]["original_transaction_id"]
call(SIM + f"/sim/subscriptions/{quitter}/cancel-auto-renew", {})
# The second app sells in euros; alice is a customer of both.
buy("alice", "com.example.puzzles.yearly", app=PUZZLES)
buy("dana", "com.example.puzzles.yearly", app=PUZZLES)
buy("hint-buyer", "com.example.puzzles.hints10", app=PUZZLES)


def pro_of(user):
    subscriber = call(API + f"/v1/subscribers/{user}", headers={"Authorization": "Bearer " + APP_KEY})
    return subscriber.get("entitlements", {}).get("pro", {})


until(lambda: pro_of("quitter").get("unsubscribed"), "Apple's notification that quitter turned renewal off is applied")

# Ten-second subscriptions: one turned off (it lapses), one Apple cannot charge (billing retry),
# one it cannot charge with a grace period (a minute of grace). Bought last, just before the
# browser starts, which looks at them first.
for user, change in (("lapsed", ("cancel-auto-renew", {})), ("retrying", ("billing-failure", {"gracePeriod": False})),
                     ("graceful", ("billing-failure", {"gracePeriod": True}))):
    original = buy(user, "com.example.quick.daily", app=QUICK)["transaction"]["original_transaction_id"]
    call(SIM + f"/sim/subscriptions/{original}/{change[0]}", change[1])


def quick_status(user):
    subscriber = call(API + f"/v1/subscribers/{user}", headers={"Authorization": "Bearer " + QUICK[1]})
    return [s.get("status") for s in subscriber.get("subscriptions", [])]


# A verification stuck while Apple answers 503 (verifyReceipt, and the Server API, its stand-in).
call(SIM + "/sim/faults", {"http503Rate": 1}, method="PUT")
call(SIM + "/sim/server-api/faults", {"rateLimitNext": 0, "retryAfterMs": 200, "failNext": 0, "down": True}, method="PUT")
device = call(SIM + "/sim/devices", {"bundleId": BUNDLE, "environment": "production"})["deviceId"]
stuck_receipt = call(SIM + f"/sim/devices/{device}/purchases", {"productId": "com.example.season.pass"})["receipt"]
stuck = call(API + "/v1/receipts", {"appUserId": "stuck", "receipt": stuck_receipt}, {"Authorization": "Bearer " + APP_KEY})
until(lambda: admin("/v1/admin/verifications?state=retry_scheduled")["verifications"], "a verification waits for Apple")
# More customers' receipts fail the same way: six failures in a row, and the server calls Apple
# down (an outage, in the health page's history once Apple answers again).
for n in range(6):
    device = call(SIM + "/sim/devices", {"bundleId": BUNDLE, "environment": "production"})["deviceId"]
    receipt = call(SIM + f"/sim/devices/{device}/purchases", {"productId": "com.example.removeads"})["receipt"]
    call(API + "/v1/receipts", {"appUserId": f"waiting-{n}", "receipt": receipt}, {"Authorization": "Bearer " + APP_KEY})


def apple_down():
    return any(e.get("state") == "down" for e in admin("/v1/admin/apple-health").get("endpoints", []))


until(apple_down, "Apple is called down after failures in a row")

# ---- The browser.
options = webdriver.ChromeOptions()
options.binary_location = "/usr/bin/chromium"
for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1280,1400"):
    options.add_argument(argument)


def browser():
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    CURRENT[:] = [driver]
    return driver


def click(driver, element):
    """Clicks what navigates, and waits for the next page: the old one gone, the new one loaded."""
    element.click()

    def gone(_):
        try:
            element.is_enabled()
            return False
        except StaleElementReferenceException:
            return True
        except WebDriverException as error:
            # chromedriver's way of saying the same while the old document is being replaced.
            return "does not belong to the document" in str(error)

    WebDriverWait(driver, 60).until(gone)
    WebDriverWait(driver, 60).until(lambda d: d.execute_script("return document.readyState") == "complete")


def sign_in(driver, account, password):
    driver.get(API + "/console/login")
    driver.find_element(By.ID, "account").send_keys(account)
    driver.find_element(By.ID, "password").send_keys(password)
    click(driver, driver.find_element(By.ID, "sign-in"))


def no_alert(driver):
    try:
        driver.switch_to.alert
        return False
    except NoAlertPresentException:
        return True


def post_form(driver, path, fields):
    """A form post made outside the page, with the browser's session cookie: the HTTP status."""
    session = driver.get_cookie("storekeeper_console")["value"]
    request = urllib.request.Request(API + path, data=urllib.parse.urlencode(fields).encode(), method="POST",
                                     headers={"Cookie": f"storekeeper_console={session}",
                                              "Content-Type": "application/x-www-form-urlencoded"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


# Every page shot is also judged by axe-core (as axe-selenium-python 2.1.6 bundles it, 3.1.1), the
# accessibility engine browsers' own tools use: its WCAG 2.0 A and AA rules (this axe-core has no
# 2.1 tags); any violation fails the check, named with its page and elements.
VIOLATIONS = []


def shot(driver, name):
    """The page as it is now, in light and in dark (the stylesheet follows the system's setting),
    each judged by axe: contrast is checked in both palettes."""
    driver.execute_script("window.scrollTo(0, 0)")
    driver.save_screenshot(f"{SHOTS}/{name}.png")
    judge(driver, name)
    driver.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": [{"name": "prefers-color-scheme", "value": "dark"}]})
    try:
        check(driver.execute_script("return matchMedia('(prefers-color-scheme: dark)').matches"), f"{name}: shown dark")
        driver.execute_script("window.scrollTo(0, 0)")
        driver.save_screenshot(f"{SHOTS}/{name}-dark.png")
        judge(driver, f"{name} (dark)")
    finally:
        driver.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": [{"name": "prefers-color-scheme", "value": "light"}]})


def judge(driver, name):
    Axe(driver).inject()
    # The whole document (axe's own `run` wrapper would pass the options where axe-core reads a
    # context). One rule is off: `dlitem` in this axe-core does not know that the HTML standard lets
    # a `<div>` group a `<dt>` and its `<dd>` inside a `<dl>` (the console's figure cards), which
    # axe-core accepts from 3.2 on; its `definition-list` rule, which checks the same structure
    # from the list's side, stays on.
    results = driver.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "axe.run(document, {runOnly: {type: 'tag', values: ['wcag2a', 'wcag2aa']}, rules: {dlitem: {enabled: false}}})"
        ".then(done, error => done({violations: [{id: 'axe-error', impact: 'critical', help: String(error), nodes: []}], passes: []}));")
    for violation in results["violations"]:
        targets = [" ".join(node["target"]) for node in violation["nodes"]][:5]
        VIOLATIONS.append(f"{name}: {violation['id']} ({violation['impact']}): {violation['help']} at {targets}")
    print(f"ok: axe judged the page '{name}': {len(results['violations'])} violations, {len(results['passes'])} rules passed")


driver = browser()
try:
    driver.get(API + "/console/apps/demo")
    check(driver.current_url.endswith("/console/login"), "a page asked signed out shows the sign-in")
    shot(driver, "sign-in")
    sign_in(driver, "", "wrong-key")
    check("Unknown operator or wrong password." in driver.page_source, "a wrong admin key is refused")
    sign_in(driver, "", ADMIN_KEY)
    check("/console/apps/demo" in driver.current_url, "the admin key signs in and lands on the overview")

    # Customers in every state of a subscription, as support sees them: their periods end ten
    # seconds after they were bought; the grace period lasts a minute after that.
    for user, status, renewal in (("graceful", "in_grace_period", "billing issue, grace until "), ("retrying", "in_billing_retry", "billing issue"),
                                  ("lapsed", "expired", None)):
        until(lambda: quick_status(user) == [status], f"{user}'s subscription is {status}")
        driver.get(API + f"/console/apps/quick/customers/{user}")
        shown = driver.find_element(By.CSS_SELECTOR, "#customer-subscriptions tbody td:nth-child(3)").text
        said = [e.text for e in driver.find_elements(By.CSS_SELECTOR, "#entitlement-quick .renewal")]
        check(shown == status and (renewal is None or (said and said[0].startswith(renewal))),
              f"{user}'s page shows the subscription {shown}, its renewal {said}")
        shot(driver, f"customer-{user}")
    driver.get(API + "/console/apps/demo")

    # The overview's figures are the API's.
    figures = admin("/v1/admin/apps/demo/metrics/subscriptions")["current"]["snapshot"]
    check(driver.find_element(By.ID, "active-subscriptions").text == str(figures["activeSubscriptions"]),
          f"active subscriptions shown = API ({figures['activeSubscriptions']})")
    check(driver.find_element(By.ID, "active-trials").text == str(figures["activeTrials"]),
          f"active trials shown = API ({figures['activeTrials']})")
    shown_mrr = {e.get_attribute("data-currency"): int(e.get_attribute("data-micros")) for e in driver.find_elements(By.CSS_SELECTOR, ".mrr")}
    check(shown_mrr == {m["currency"]: m["micros"] for m in figures["mrr"]}, f"MRR shown = API ({shown_mrr})")
    revenue = admin("/v1/admin/apps/demo/metrics/revenue?interval=month")
    shown_net = sum(int(e.get_attribute("data-micros")) for e in driver.find_elements(By.CSS_SELECTOR, "#revenue .net"))
    api_net = sum(f["netMicros"] for f in revenue["totals"])
    check(shown_net == api_net, f"net revenue shown = API ({api_net} micros)")
    check(len(driver.find_elements(By.CSS_SELECTOR, "svg.chart")) == 2, "two charts drawn")
    shot(driver, "overview")

    # The range picker.
    driver.find_element(By.CSS_SELECTOR, "select[name=interval] option[value=day]").click()
    click(driver, driver.find_element(By.CSS_SELECTOR, ".range button"))
    check("interval=day" in driver.current_url and "by day" in driver.page_source, "the range picker shows days")

    # Customers: the injected id is text, and nothing runs.
    driver.get(API + "/console/apps/demo/customers")
    driver.find_element(By.ID, "q").send_keys(HOSTILE)
    click(driver, driver.find_element(By.ID, "search"))
    results = driver.find_elements(By.CSS_SELECTOR, "#results a")
    check(len(results) == 1 and results[0].text == HOSTILE, "the injected id is found and shown as text")
    click(driver, results[0])
    check(driver.find_element(By.ID, "customer-id").text == HOSTILE and no_alert(driver), "the customer page shows it as text; no script ran")
    check(not driver.find_elements(By.CSS_SELECTOR, "main img, main script"), "no element was injected")
    shot(driver, "customer")
    # Found by a transaction id, as a customer's e-mail from Apple would name it.
    driver.get(API + "/console/apps/demo/customers")
    driver.find_element(By.ID, "q").send_keys(alices["transaction"]["transaction_id"])
    click(driver, driver.find_element(By.ID, "search"))
    results = driver.find_elements(By.CSS_SELECTOR, "#results a")
    check(len(results) == 1 and results[0].text == "alice", "alice is found by her transaction id")
    click(driver, results[0])
    check("com.example.pro.monthly" in driver.find_element(By.ID, "transactions").text, "alice's transaction with its charged price")
    check("verified" in driver.find_element(By.ID, "customer-verifications").text
          and "initial_purchase" in driver.find_element(By.ID, "customer-events").text,
          "alice's page lists her verification and her events")
    # Promotional access, granted from the page in the operator's name.
    driver.find_element(By.CSS_SELECTOR, "#grant-form select[name=entitlementId] option[value=no_ads]").click()
    driver.find_element(By.CSS_SELECTOR, "#grant-form input[name=duration]").send_keys("P7D")
    driver.find_element(By.CSS_SELECTOR, "#grant-form input[name=reason]").send_keys("a support case")
    click(driver, driver.find_element(By.ID, "grant"))
    check("Granted no_ads" in driver.page_source and "console:admin key" in driver.find_element(By.ID, "promotional-grants").text,
          "promotional access granted from the customer's page, in the operator's name")
    audit = admin("/v1/admin/apps/demo/audit")
    check(any(e["entry"].get("actor") == "console:admin key" for e in audit.get("entries", [])), "the grant is in the audit log with who did it")

    # Catalog and ledger: the download is the API's ledger, byte for byte.
    driver.get(API + "/console/apps/demo/ledger")
    link = driver.find_element(By.ID, "download-csv").get_attribute("href")
    shown = int(driver.find_element(By.ID, "ledger-count").text)
    session = driver.get_cookie("storekeeper_console")["value"]
    with urllib.request.urlopen(urllib.request.Request(link, headers={"Cookie": f"storekeeper_console={session}"}), timeout=30) as response:
        downloaded = response.read()
        disposition = response.headers.get("Content-Disposition", "")
    request = urllib.request.Request(API + "/v1/admin/apps/demo/ledger?format=csv", headers={"Authorization": "Bearer " + ADMIN_KEY})
    with urllib.request.urlopen(request, timeout=30) as response:
        expected = response.read()
    check(downloaded == expected and disposition.startswith("attachment"), f"the ledger's CSV download is the API's ({len(expected)} bytes)")
    check(shown == len(expected.decode().strip().splitlines()) - 1, f"the ledger page counts every row ({shown})")
    shot(driver, "ledger")
    driver.get(API + "/console/health")
    check(driver.find_element(By.CSS_SELECTOR, "dd[data-state=verified]").text.isdigit(), "Apple health and the queue")
    shot(driver, "health")
    driver.get(API + "/console/apps/demo/webhooks")
    check("webhooks" in driver.title, "the webhooks page")
    shot(driver, "webhooks")

    # What support sees of a renewal turned off.
    driver.get(API + "/console/apps/demo/customers/quitter")
    renewal = driver.find_element(By.CSS_SELECTOR, "#entitlement-pro .renewal").text
    check(renewal == "turned off", f"quitter's page says the renewal is {renewal!r}")

    # The second app: reached from the navigation, its own figures (in euros), its own customers.
    click(driver, driver.find_element(By.CSS_SELECTOR, "nav a[href='/console/apps/puzzles']"))
    check(driver.current_url.endswith("/console/apps/puzzles"), "the navigation leads to the second app's overview")
    puzzles = admin("/v1/admin/apps/puzzles/metrics/subscriptions")["current"]["snapshot"]
    check(driver.find_element(By.ID, "active-subscriptions").text == str(puzzles["activeSubscriptions"]) == "2",
          "the second app's active subscriptions shown = API (2)")
    shown_mrr = {e.get_attribute("data-currency"): int(e.get_attribute("data-micros")) for e in driver.find_elements(By.CSS_SELECTOR, ".mrr")}
    check(shown_mrr == {m["currency"]: m["micros"] for m in puzzles["mrr"]} and set(shown_mrr) == {"EUR"},
          f"the second app's MRR shown = API, in euros only ({shown_mrr})")
    revenue = admin("/v1/admin/apps/puzzles/metrics/revenue?interval=month")
    shown_net = sum(int(e.get_attribute("data-micros")) for e in driver.find_elements(By.CSS_SELECTOR, "#revenue .net"))
    check(shown_net == sum(f["netMicros"] for f in revenue["totals"]) == 2 * 29_990_000 + 1_990_000,
          f"the second app's net revenue shown = API ({shown_net} micros)")
    shot(driver, "overview-second-app")
    driver.get(API + "/console/apps/puzzles/customers")
    driver.find_element(By.ID, "q").send_keys(alices["transaction"]["transaction_id"])
    click(driver, driver.find_element(By.ID, "search"))
    check(not driver.find_elements(By.CSS_SELECTOR, "#results a"), "the first app's transaction id finds no one in the second")
    driver.get(API + "/console/apps/puzzles/customers/alice")
    check("com.example.puzzles.yearly" in driver.find_element(By.ID, "transactions").text
          and "com.example.pro.monthly" not in driver.page_source,
          "alice's page in the second app shows only what she bought there")

    # The stuck verification: retried, and seen verified.
    # Between its attempts (Apple still fails: each ends in retry_scheduled again).
    def listed():
        driver.get(API + "/console/verifications?state=retry_scheduled")
        return bool(driver.find_elements(By.ID, f"verification-{stuck['id']}"))
    until(listed, "the stuck verification is listed, waiting for Apple")
    # The operator presses retry while Apple still fails. Its own next attempt (a probe of the
    # down endpoint, every few seconds) may start between the listing and the press: the retry
    # is then refused as busy ("being verified right now"), and the operator presses again.
    def retried():
        if not listed():
            return False
        click(driver, driver.find_element(By.ID, f"verification-{stuck['id']}").find_element(By.CSS_SELECTOR, "button.retry"))
        return "was requeued" in driver.page_source
    until(retried, "retry requeues the verification")
    # Apple answers again; the requeued verification is verified without waiting out its backoff.
    call(SIM + "/sim/faults", {}, method="PUT")
    call(SIM + "/sim/server-api/faults", {"rateLimitNext": 0, "retryAfterMs": 200, "failNext": 0, "down": False}, method="PUT")
    until(lambda: call(API + f"/v1/verifications/{stuck['id']}", headers={"Authorization": "Bearer " + APP_KEY})["state"] == "verified",
          "the retried verification is verified")
    driver.get(API + "/console/verifications")
    check(driver.find_element(By.CSS_SELECTOR, f"#verification-{stuck['id']} .state").text == "verified", "the page shows it verified")
    # Shot (and judged by axe, which takes a while) only now: between listing the row and pressing
    # retry, the verification's own next attempt could start, and the retry be refused as busy.
    shot(driver, "verifications")
    # The outage, over: in the health page's history with when Apple answered again.
    # (Only waiting work probes: an endpoint nothing waits for any more stays down until a call
    # needs it, so which of the two outages is over depends on which one the retry went through.)
    def outage_over():
        driver.get(API + "/console/health")
        return any(e.text != "not yet" for e in driver.find_elements(By.CSS_SELECTOR, "#outages td.ended"))
    until(outage_over, "the health page lists an outage, over, with when Apple answered again")
    # Calls to Apple by hour: verifyReceipt's 503s during the outage, and the Server API's
    # answers (the retried verification went through it, its stand-in), with latency percentiles.
    def answers(prefix):
        return " ".join(e.text for e in driver.find_elements(By.CSS_SELECTOR, f"#apple-calls tr[data-endpoint^={prefix}] td.outcomes"))
    check("http_503 ×" in answers("verify_receipt"), f"the health page counts verifyReceipt's 503s by hour ({answers('verify_receipt')!r})")
    check("http_200 ×" in answers("server_api"), f"the health page counts the Server API's answers by hour ({answers('server_api')!r})")
    check(all(cell.text.startswith(("≤", ">")) for cell in driver.find_elements(By.CSS_SELECTOR, "#apple-calls td.p50")),
          "each hour of calls has its median latency")
    shot(driver, "health-outage")

    # A form posted without its CSRF token, with the session's cookie: refused.
    check(post_form(driver, f"/console/verifications/{stuck['id']}/retry", {}) == 403,
          "a form without its CSRF token is refused (403)")

    click(driver, driver.find_element(By.CSS_SELECTOR, "form.signout button"))
    check(driver.current_url.endswith("/console/login"), "sign-out")
    driver.get(API + "/console/apps/demo")
    check(driver.current_url.endswith("/console/login"), "signed out, pages ask to sign in again")
finally:
    driver.quit()

# A read-only operator looks but cannot act.
reader = browser()
try:
    sign_in(reader, "reader", READER_PASSWORD)
    check("/console/apps/demo" in reader.current_url, "a read-only operator signs in")
    reader.get(API + "/console/verifications")
    check(not reader.find_elements(By.CSS_SELECTOR, "button.retry"), "a read-only operator sees no retry button")
    csrf = reader.find_element(By.CSS_SELECTOR, "input[name=csrf]").get_attribute("value")
    check(post_form(reader, f"/console/verifications/{stuck['id']}/retry", {"csrf": csrf}) == 403,
          "a read-only operator's action is refused (403), its token valid")
    shot(reader, "read-only")
finally:
    reader.quit()
check(not VIOLATIONS, "no accessibility violations on any page judged:\n  " + "\n  ".join(VIOLATIONS))
print("console check: every page as an operator sees it")
