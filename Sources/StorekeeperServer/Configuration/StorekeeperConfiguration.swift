public import AppStoreClient
import AppStoreCrypto
import Crypto
import Foundation
public import JobQueue
public import StorekeeperDomain

/// Everything the server needs, with documented defaults. Reading files, environment and flags
/// is `ConfigurationLoader`'s job; this type only holds and validates values.
public struct StorekeeperConfiguration: Encodable, Sendable {
    /// Address the HTTP API listens on.
    public var host: String = "127.0.0.1"
    public var port: Int = 8080
    /// The database: an SQLite file path (the embedded default, one process), or a
    /// `postgres://user:password@host:port/database?schema=storekeeper&max_connections=20` URL
    /// shared by any number of server and worker processes.
    public var databasePath: String = "storekeeper.sqlite"
    /// Sync every commit to disk (survives power loss). `false` survives process crashes only.
    public var sqliteSynchronousFull: Bool = true
    /// Key for `/v1/admin/*` as `Authorization: Bearer …`.
    public var adminKey: String = ""
    public var apps: [AppConfiguration] = []
    /// Apple's verifyReceipt endpoints (or the simulator's).
    public var appleEndpoints: VerifyReceiptEndpoints = .apple
    /// Verification jobs run at once by this process. Apple takes seconds, so this is large.
    public var workers: Int = 256
    /// Run the verification workers in this process (false: API only).
    public var runWorkers: Bool = true
    /// Timeout of one verifyReceipt call: the whole answer.
    public var attemptTimeoutSeconds: Double = 30
    /// The earlier phases of every call to Apple (and of webhook deliveries).
    public var appleTimeouts = AppleTimeouts()
    /// A job whose worker died is taken up again after this; must exceed 3 attempt timeouts.
    public var leaseSeconds: Double = 120
    /// Backoff between attempts while Apple fails.
    public var retry: RetryPolicy = RetryPolicy(base: 2, cap: 600, jitter: 0.2)
    /// Verifications not final after this long are flagged for an operator (never dropped).
    public var flagAfterSeconds: Double = 3600
    /// Sent as `exclude-old-transactions`.
    public var excludeOldTransactions: Bool = false
    /// What to do when another app user submits an original transaction already bound.
    public var bindingPolicy: BindingPolicy = .refuse
    /// Largest accepted request body.
    public var maxBodyBytes: Int = 1024 * 1024
    /// Longest `?wait=` a client may ask for.
    public var maxWaitSeconds: Double = 30
    /// Local receipt checks before Apple is called: which roots are trusted.
    public var receiptTrust = ReceiptTrustConfiguration()
    /// While Apple fails: provisional access from locally verified receipts. Off by default.
    public var outagePolicy = OutagePolicy()
    /// The App Store Server API (Apple's, or the simulator's).
    public var serverAPIEndpoints: ServerAPIEndpoints = .apple
    /// The share of Apple's published Server API limits an app uses when its key sets none
    /// (`apps[].serverAPI.rateLimitShare`). Above 1 only against a simulator that does not
    /// enforce Apple's limits: a contract run that judges answers, not the throttle.
    public var serverAPIRateLimitShare: Double = 1
    /// The load balancers and proxies in front of the server (CIDR networks). A request whose
    /// connection comes from one of them is counted against the address it names in
    /// `X-Forwarded-For` (the nearest hop that is not itself trusted); from anywhere else, the
    /// header is ignored and the connection's own address counts. Empty: every request is its
    /// connection's address, so behind a balancer all clients share one.
    public var trustedProxies: [IPNetwork] = []
    /// Wrong admin keys one address may send per second (a bucket of ten times this, at least
    /// 10); past it, every admin call from the address is 429 until the bucket refills, before
    /// any key is compared. Far below what guessing needs, far above a mistyped key in a script.
    public var adminKeyGuessesPerSecond: Double = 1
    /// Offer signatures (promotional and introductory) one user of one app may be given a day,
    /// ten at most at once, counted in the database for every process: enough for a paywall
    /// shown many times, far from a stock of signatures to sell.
    public var offerSignaturesPerUserPerDay: Int = 20
    /// Periodic pull of Apple's notification history, for apps with a Server API key.
    public var notificationGapFill = NotificationGapFillPolicy()
    /// A connection that sends nothing for this long is closed: between requests, and while its
    /// request line and headers are still arriving (a client trickling one byte a second).
    public var idleTimeoutSeconds: Double = 30
    /// Longest time to receive one request, head to end of body; a client still sending then is
    /// disconnected (a body trickled a byte at a time would otherwise hold a connection for days).
    public var requestTimeoutSeconds: Double = 60
    /// Connections served at once; more wait in the listen backlog. Unset: derived from the
    /// process's file limit at start (`ConnectionLimits`), leaving room for the database and Apple calls.
    public var maxConnections: Int?
    /// On SIGTERM, how long verifications already talking to Apple may finish; after it their jobs
    /// go back to the queue (not counted as an attempt) and the process exits.
    public var shutdownGraceSeconds: Double = 10
    /// Webhook deliveries: each attempt's deadline and the retry schedule.
    public var webhooks = WebhookSettings()
    /// Events older than this are deleted (hourly), unless a delivery still needs them.
    public var eventRetentionDays: Double = 30
    /// How often the lapse sweep tells the entitlements whose end has come (docs/ENTITLEMENTS.md,
    /// "Time that passes"); 0 turns it off (a deployment whose other processes sweep).
    public var lapseSweepSeconds: Double = 30
    /// When Apple counts as down, and how it is probed meanwhile.
    public var appleHealth = AppleHealthSettings()
    /// The operators' console at /console: operator accounts and session length (docs/CONSOLE.md).
    public var console = ConsoleSettings()

    public init() {}

    enum CodingKeys: String, CodingKey, CaseIterable {
        case host, port, databasePath, sqliteSynchronousFull, adminKey, apps, appleEndpoints, workers, runWorkers
        case attemptTimeoutSeconds, appleTimeouts, leaseSeconds, retry, flagAfterSeconds, excludeOldTransactions, bindingPolicy
        case maxBodyBytes, maxWaitSeconds, receiptTrust, outagePolicy, serverAPIEndpoints, serverAPIRateLimitShare, trustedProxies,
            adminKeyGuessesPerSecond, offerSignaturesPerUserPerDay
        case notificationGapFill
        case idleTimeoutSeconds, requestTimeoutSeconds, maxConnections, shutdownGraceSeconds, webhooks
        case eventRetentionDays, lapseSweepSeconds, appleHealth, console
    }

    /// Every problem, each naming its key (`apps[1].apiKey: …`). Empty when valid.
    public func validationProblems() -> [String] {
        var problems: [String] = []
        if !(1...65535).contains(port) && port != 0 { problems.append("port: must be 0-65535") }
        if adminKey.count < 16 { problems.append("adminKey: must be at least 16 characters") }
        if !(adminKeyGuessesPerSecond > 0 && adminKeyGuessesPerSecond <= 1_000_000) {
            problems.append("adminKeyGuessesPerSecond: must be above 0 and at most 1000000")
        }
        if !(1...100_000).contains(offerSignaturesPerUserPerDay) {
            problems.append("offerSignaturesPerUserPerDay: must be 1-100000")
        }
        if !(serverAPIRateLimitShare > 0 && serverAPIRateLimitShare <= ServerAPIKeyConfiguration.largestRateLimitShare) {
            problems.append("serverAPIRateLimitShare: must be above 0 and at most \(Int(ServerAPIKeyConfiguration.largestRateLimitShare))")
        }
        if apps.isEmpty { problems.append("apps: at least one app is required") }
        if workers < 1 { problems.append("workers: must be at least 1") }
        if let problem = StorageBackend.problem(with: databasePath) { problems.append("databasePath: \(problem)") }
        if attemptTimeoutSeconds <= 0 { problems.append("attemptTimeoutSeconds: must be positive") }
        if !(appleTimeouts.connectSeconds > 0) || !(appleTimeouts.readSeconds > 0) {
            problems.append("appleTimeouts: connectSeconds and readSeconds must be positive")
        }
        if leaseSeconds < attemptTimeoutSeconds * 3 + 1 {
            problems.append("leaseSeconds: must exceed 3 × attemptTimeoutSeconds (an attempt may call Apple three times)")
        }
        if retry.base <= 0 || retry.cap < retry.base { problems.append("retry: base must be positive and cap ≥ base") }
        if !(0...1).contains(retry.jitter) { problems.append("retry.jitter: must be within 0...1") }
        if maxBodyBytes < 1024 { problems.append("maxBodyBytes: must be at least 1024") }
        if !(idleTimeoutSeconds > 0) { problems.append("idleTimeoutSeconds: must be positive") }
        if !(requestTimeoutSeconds > 0) { problems.append("requestTimeoutSeconds: must be positive") }
        if let maxConnections, maxConnections < 1 { problems.append("maxConnections: must be at least 1") }
        if !(shutdownGraceSeconds >= 0) { problems.append("shutdownGraceSeconds: must be ≥ 0") }
        if !(webhooks.timeoutSeconds > 0) { problems.append("webhooks.timeoutSeconds: must be positive") }
        if !(webhooks.heldRecheckSeconds > 0) { problems.append("webhooks.heldRecheckSeconds: must be positive") }
        if !(eventRetentionDays > 0) { problems.append("eventRetentionDays: must be positive") }
        if !(0...3_600).contains(lapseSweepSeconds) { problems.append("lapseSweepSeconds: 0 (off) to 3600") }
        problems += appleHealth.problems
        problems += console.problems
        let schedule = webhooks.retrySchedule
        if schedule.delays.isEmpty || schedule.delays.contains(where: { !($0 > 0) }) || !(schedule.maximumAge > 0)
            || !(0...1).contains(schedule.jitter) || !(schedule.maximumRetryAfter >= 0)
        {
            problems.append("webhooks.retrySchedule: delays must be positive, maximumAge positive, jitter within 0...1")
        }
        if outagePolicy.afterSeconds < 0 || outagePolicy.provisionalSeconds <= 0 {
            problems.append("outagePolicy: afterSeconds must be ≥ 0 and provisionalSeconds positive")
        }
        for (index, pem) in receiptTrust.extraRootsPEM.enumerated() where !pem.contains("BEGIN CERTIFICATE") {
            problems.append("receiptTrust.extraRootsPEM[\(index)]: not a PEM certificate")
        }
        for (name, url) in [("production", appleEndpoints.production), ("sandbox", appleEndpoints.sandbox)] {
            if URL(string: url)?.scheme == nil { problems.append("appleEndpoints.\(name): '\(url)' is not a URL") }
        }
        for (name, url) in [("production", serverAPIEndpoints.production), ("sandbox", serverAPIEndpoints.sandbox)] {
            if URL(string: url)?.scheme == nil { problems.append("serverAPIEndpoints.\(name): '\(url)' is not a URL") }
        }
        if receiptTrust.revocation.timeoutSeconds <= 0 || receiptTrust.revocation.timeoutSeconds > 10 {
            problems.append("receiptTrust.revocation.timeoutSeconds: must be within 0-10 (the OCSP policy gives up after 10 s)")
        }
        if receiptTrust.revocation.cacheSeconds < 0 { problems.append("receiptTrust.revocation.cacheSeconds: must be ≥ 0") }
        if let url = receiptTrust.revocation.responderOverride, URL(string: url)?.scheme == nil {
            problems.append("receiptTrust.revocation.responderOverride: '\(url)' is not a URL")
        }
        if notificationGapFill.intervalSeconds <= 0 || notificationGapFill.lookbackSeconds <= 0 {
            problems.append("notificationGapFill: intervalSeconds and lookbackSeconds must be positive")
        }
        var ids = Set<String>()
        var keys = Set<String>()
        for (index, app) in apps.enumerated() {
            let key = "apps[\(index)]"
            let allowed = CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyz0123456789_-")
            if app.id.isEmpty || app.id.unicodeScalars.contains(where: { !allowed.contains($0) }) {
                problems.append("\(key).id: must be lower-case letters, digits, '-' or '_'")
            }
            if !ids.insert(app.id).inserted { problems.append("\(key).id: duplicate app id '\(app.id)'") }
            if app.bundleId.isEmpty { problems.append("\(key).bundleId: must not be empty") }
            if app.apiKey.count < 16 { problems.append("\(key).apiKey: must be at least 16 characters") }
            if let appAppleId = app.appAppleId, appAppleId <= 0 { problems.append("\(key).appAppleId: must be a positive number") }
            if !keys.insert(app.apiKey).inserted || app.apiKey == adminKey {
                problems.append("\(key).apiKey: must be unique and differ from adminKey")
            }
            if let client = app.client {
                problems += client.problems(prefix: "\(key).client")
                if !keys.insert(client.key).inserted || client.key == adminKey {
                    problems.append("\(key).client.key: must be unique and differ from adminKey and every apiKey")
                }
            }
            if let serverKey = app.serverAPI {
                if serverKey.issuerId.isEmpty || serverKey.keyId.isEmpty { problems.append("\(key).serverAPI: issuerId and keyId are required") }
                if (try? ServerAPITokenProvider(credentials: app.serverAPICredentials!)) == nil {
                    problems.append("\(key).serverAPI.privateKeyPEM: not a PEM P-256 private key (the .p8 file)")
                }
                if let share = serverKey.rateLimitShare, !(share > 0 && share <= ServerAPIKeyConfiguration.largestRateLimitShare) {
                    problems.append(
                        "\(key).serverAPI.rateLimitShare: must be above 0 and at most \(Int(ServerAPIKeyConfiguration.largestRateLimitShare))")
                }
            }
            if app.products.contains(where: { $0.type == .autoRenewable }), (app.sharedSecret ?? "").isEmpty {
                problems.append("\(key).sharedSecret: required when the app sells auto-renewable subscriptions")
            }
            problems += EntitlementDefinition.problems(app.entitlements, prefix: "\(key).entitlements")
            if let reporting = app.reporting { problems += reporting.problems(prefix: "\(key).reporting") }
            problems += Offering.problems(app.offerings, prefix: "\(key).offerings")
            problems += app.offerProblems(prefix: key)
            problems += app.refundRequests.problems(prefix: "\(key).refundRequests")
            if app.refundRequests.mode != .off, app.serverAPI == nil {
                problems.append("\(key).refundRequests: needs serverAPI (the answer is sent through the App Store Server API)")
            }
            problems += RetentionChoice.problems(
                app.retentionMessages, promotionalOffers: Set(app.offers.filter { $0.kind == .promotional }.map(\.id)),
                products: Set(app.products.filter { $0.type == .autoRenewable }.map(\.productId)), prefix: "\(key).retentionMessages")
            if app.retentionMessages.contains(where: { $0.offerId != nil }), app.offerSigningCredentials == nil {
                problems.append("\(key).retentionMessages: an offer needs an In-App Purchase key to sign it (offerSigning or serverAPI)")
            }
            if let targeting = app.offeringTargeting {
                problems += targeting.problems(offerings: Set(app.offerings.map(\.id)), prefix: "\(key).offeringTargeting")
            }
            var productIds = Set<String>()
            for (p, product) in app.products.enumerated() {
                for problem in product.validationProblems() { problems.append("\(key).products[\(p)].\(problem)") }
                if !productIds.insert(product.productId).inserted {
                    problems.append("\(key).products[\(p)].productId: duplicate '\(product.productId)'")
                }
            }
        }
        return problems
    }
}
