public import AppStoreClient
import AppStoreCrypto
import Crypto
import Foundation
public import JobQueue
public import StorekeeperDomain

/// One app served by this server. Several apps share one server and one database.
public struct AppConfiguration: Codable, Sendable, Hashable {
    /// Short stable name used in admin URLs and the database (`[a-z0-9_-]`).
    public var id: String
    public var bundleId: String
    /// App Store Connect shared secret; required for auto-renewable subscriptions.
    public var sharedSecret: String?
    /// App Review tests production builds against the sandbox, so this defaults to true.
    /// Sandbox grants are recorded as sandbox and kept apart in the ledger either way.
    public var acceptSandbox: Bool = true
    /// Key the app's backend sends as `Authorization: Bearer …` on app-facing routes.
    public var apiKey: String
    /// Catalog loaded at start: entries not yet stored are inserted; stored ones keep admin edits.
    public var products: [Product] = []
    /// In-App Purchase key for the App Store Server API. Without it: no notification gap-fill,
    /// no subscriber refresh, and receipts wait for verifyReceipt while it is down.
    public var serverAPI: ServerAPIKeyConfiguration?
    /// The app's own access (a publishable client key and who its user is); nil: backends only.
    public var client: ClientAccess?
    /// The app's Apple id (App Store Connect, App Information). When set, a production
    /// notification must name it, as Apple's own verifier requires; sandbox ones need not.
    public var appAppleId: Int64?

    public init(
        id: String, bundleId: String, sharedSecret: String?, acceptSandbox: Bool = true, apiKey: String, products: [Product] = [],
        serverAPI: ServerAPIKeyConfiguration? = nil, client: ClientAccess? = nil, appAppleId: Int64? = nil
    ) {
        self.client = client
        self.appAppleId = appAppleId
        self.id = id
        self.bundleId = bundleId
        self.sharedSecret = sharedSecret
        self.acceptSandbox = acceptSandbox
        self.apiKey = apiKey
        self.products = products
        self.serverAPI = serverAPI
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case id, bundleId, sharedSecret, acceptSandbox, apiKey, products, serverAPI, client, appAppleId
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        id = try c.decode(String.self, forKey: .id)
        bundleId = try c.decode(String.self, forKey: .bundleId)
        sharedSecret = try c.decodeIfPresent(String.self, forKey: .sharedSecret)
        acceptSandbox = try c.decodeIfPresent(Bool.self, forKey: .acceptSandbox) ?? true
        apiKey = try c.decode(String.self, forKey: .apiKey)
        products = try c.decodeIfPresent([Product].self, forKey: .products) ?? []
        serverAPI = try c.decodeIfPresent(ServerAPIKeyConfiguration.self, forKey: .serverAPI)
        client = try c.decodeIfPresent(ClientAccess.self, forKey: .client)
        appAppleId = try c.decodeIfPresent(Int64.self, forKey: .appAppleId)
    }

    /// The credentials the Server API client signs with, when a key is configured.
    public var serverAPICredentials: ServerAPICredentials? {
        serverAPI.map {
            ServerAPICredentials(issuerId: $0.issuerId, keyId: $0.keyId, bundleId: bundleId, privateKeyPEM: $0.privateKeyPEM)
        }
    }

    /// Changes whenever something that can cure a configuration error changes; held
    /// verifications taken under another fingerprint are released at start.
    public var fingerprint: String {
        let text = [bundleId, sharedSecret ?? ""].joined(separator: "\u{0}")
        return sha256Hex(Data(text.utf8)).prefix(16).description
    }
}

/// Everything the server needs, with documented defaults. Reading files, environment and flags
/// is `ConfigurationLoader`'s job; this type only holds and validates values.
public struct StorekeeperConfiguration: Codable, Sendable {
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
    /// When Apple counts as down, and how it is probed meanwhile.
    public var appleHealth = AppleHealthSettings()

    public init() {}

    enum CodingKeys: String, CodingKey, CaseIterable {
        case host, port, databasePath, sqliteSynchronousFull, adminKey, apps, appleEndpoints, workers, runWorkers
        case attemptTimeoutSeconds, appleTimeouts, leaseSeconds, retry, flagAfterSeconds, excludeOldTransactions, bindingPolicy
        case maxBodyBytes, maxWaitSeconds, receiptTrust, outagePolicy, serverAPIEndpoints, notificationGapFill
        case idleTimeoutSeconds, requestTimeoutSeconds, maxConnections, shutdownGraceSeconds, webhooks
        case eventRetentionDays, appleHealth
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let d = StorekeeperConfiguration()
        host = try c.decodeIfPresent(String.self, forKey: .host) ?? d.host
        port = try c.decodeIfPresent(Int.self, forKey: .port) ?? d.port
        databasePath = try c.decodeIfPresent(String.self, forKey: .databasePath) ?? d.databasePath
        sqliteSynchronousFull = try c.decodeIfPresent(Bool.self, forKey: .sqliteSynchronousFull) ?? d.sqliteSynchronousFull
        adminKey = try c.decodeIfPresent(String.self, forKey: .adminKey) ?? d.adminKey
        apps = try c.decodeIfPresent([AppConfiguration].self, forKey: .apps) ?? d.apps
        appleEndpoints = try c.decodeIfPresent(VerifyReceiptEndpoints.self, forKey: .appleEndpoints) ?? d.appleEndpoints
        workers = try c.decodeIfPresent(Int.self, forKey: .workers) ?? d.workers
        runWorkers = try c.decodeIfPresent(Bool.self, forKey: .runWorkers) ?? d.runWorkers
        attemptTimeoutSeconds = try c.decodeIfPresent(Double.self, forKey: .attemptTimeoutSeconds) ?? d.attemptTimeoutSeconds
        appleTimeouts = try c.decodeIfPresent(AppleTimeouts.self, forKey: .appleTimeouts) ?? d.appleTimeouts
        leaseSeconds = try c.decodeIfPresent(Double.self, forKey: .leaseSeconds) ?? d.leaseSeconds
        retry = try c.decodeIfPresent(RetryPolicy.self, forKey: .retry) ?? d.retry
        flagAfterSeconds = try c.decodeIfPresent(Double.self, forKey: .flagAfterSeconds) ?? d.flagAfterSeconds
        excludeOldTransactions = try c.decodeIfPresent(Bool.self, forKey: .excludeOldTransactions) ?? d.excludeOldTransactions
        bindingPolicy = try c.decodeIfPresent(BindingPolicy.self, forKey: .bindingPolicy) ?? d.bindingPolicy
        maxBodyBytes = try c.decodeIfPresent(Int.self, forKey: .maxBodyBytes) ?? d.maxBodyBytes
        maxWaitSeconds = try c.decodeIfPresent(Double.self, forKey: .maxWaitSeconds) ?? d.maxWaitSeconds
        receiptTrust = try c.decodeIfPresent(ReceiptTrustConfiguration.self, forKey: .receiptTrust) ?? d.receiptTrust
        outagePolicy = try c.decodeIfPresent(OutagePolicy.self, forKey: .outagePolicy) ?? d.outagePolicy
        serverAPIEndpoints = try c.decodeIfPresent(ServerAPIEndpoints.self, forKey: .serverAPIEndpoints) ?? d.serverAPIEndpoints
        notificationGapFill = try c.decodeIfPresent(NotificationGapFillPolicy.self, forKey: .notificationGapFill) ?? d.notificationGapFill
        idleTimeoutSeconds = try c.decodeIfPresent(Double.self, forKey: .idleTimeoutSeconds) ?? d.idleTimeoutSeconds
        requestTimeoutSeconds = try c.decodeIfPresent(Double.self, forKey: .requestTimeoutSeconds) ?? d.requestTimeoutSeconds
        maxConnections = try c.decodeIfPresent(Int.self, forKey: .maxConnections) ?? d.maxConnections
        shutdownGraceSeconds = try c.decodeIfPresent(Double.self, forKey: .shutdownGraceSeconds) ?? d.shutdownGraceSeconds
        webhooks = try c.decodeIfPresent(WebhookSettings.self, forKey: .webhooks) ?? d.webhooks
        eventRetentionDays = try c.decodeIfPresent(Double.self, forKey: .eventRetentionDays) ?? d.eventRetentionDays
        appleHealth = try c.decodeIfPresent(AppleHealthSettings.self, forKey: .appleHealth) ?? d.appleHealth
    }

    /// Every problem, each naming its key (`apps[1].apiKey: …`). Empty when valid.
    public func validationProblems() -> [String] {
        var problems: [String] = []
        if !(1...65535).contains(port) && port != 0 { problems.append("port: must be 0-65535") }
        if adminKey.count < 16 { problems.append("adminKey: must be at least 16 characters") }
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
        problems += appleHealth.problems
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
            }
            if app.products.contains(where: { $0.type == .autoRenewable }), (app.sharedSecret ?? "").isEmpty {
                problems.append("\(key).sharedSecret: required when the app sells auto-renewable subscriptions")
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

/// Which certificate authorities may sign app receipts. Apple's roots by default; test roots
/// (the simulator's, Xcode's StoreKit certificate) only when configured.
public struct ReceiptTrustConfiguration: Codable, Sendable, Hashable {
    /// Parse and signature-check receipts before calling Apple. Forged receipts then never reach Apple.
    public var enabled: Bool = true
    /// Trust Apple's published roots (shipped in the code).
    public var appleRoots: Bool = true
    /// More trusted roots, PEM.
    public var extraRootsPEM: [String] = []
    /// Require Apple's marker extensions on the signing chain.
    public var requireAppleMarkers: Bool = true
    /// Online revocation checks (OCSP) of StoreKit 2 signed data. Off by default.
    public var revocation = RevocationPolicy()

    public init() {}

    enum CodingKeys: String, CodingKey { case enabled, appleRoots, extraRootsPEM, requireAppleMarkers, revocation }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        enabled = try c.decodeIfPresent(Bool.self, forKey: .enabled) ?? true
        appleRoots = try c.decodeIfPresent(Bool.self, forKey: .appleRoots) ?? true
        extraRootsPEM = try c.decodeIfPresent([String].self, forKey: .extraRootsPEM) ?? []
        requireAppleMarkers = try c.decodeIfPresent(Bool.self, forKey: .requireAppleMarkers) ?? true
        revocation = try c.decodeIfPresent(RevocationPolicy.self, forKey: .revocation) ?? RevocationPolicy()
    }
}

/// Whether and how the certificates that sign StoreKit 2 data are checked for revocation
/// (OCSP, at the URL each certificate names). When on, certificates are judged at now (online)
/// instead of at `signedDate`.
public struct RevocationPolicy: Codable, Sendable, Hashable {
    public enum Mode: String, Codable, Sendable {
        case off
        /// Only a `revoked` answer refuses; an unreachable responder does not.
        case softFail = "soft_fail"
        /// No valid `good` answer refuses.
        case hardFail = "hard_fail"
    }

    public var mode: Mode = .off
    /// How long an answer (and a chain that passed) is trusted before the responder is asked again.
    public var cacheSeconds: Double = 3600
    /// Send every OCSP request here instead of the certificate's responder (a proxy; the simulator's `/ocsp`).
    public var responderOverride: String?
    /// Longest wait for one responder answer.
    public var timeoutSeconds: Double = 5

    public init() {}

    enum CodingKeys: String, CodingKey { case mode, cacheSeconds, responderOverride, timeoutSeconds }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        mode = try c.decodeIfPresent(Mode.self, forKey: .mode) ?? .off
        cacheSeconds = try c.decodeIfPresent(Double.self, forKey: .cacheSeconds) ?? 3600
        responderOverride = try c.decodeIfPresent(String.self, forKey: .responderOverride)
        timeoutSeconds = try c.decodeIfPresent(Double.self, forKey: .timeoutSeconds) ?? 5
    }
}

/// An In-App Purchase key from App Store Connect (Users and Access → Integrations).
public struct ServerAPIKeyConfiguration: Codable, Sendable, Hashable {
    public var issuerId: String
    public var keyId: String
    /// Contents of the `.p8` file.
    public var privateKeyPEM: String

    public init(issuerId: String, keyId: String, privateKeyPEM: String) {
        self.issuerId = issuerId
        self.keyId = keyId
        self.privateKeyPEM = privateKeyPEM
    }
}

/// Notifications Apple could not deliver are fetched from its notification history and processed
/// as if delivered (idempotent by notificationUUID, so overlap costs nothing but a call).
public struct NotificationGapFillPolicy: Codable, Sendable, Hashable {
    public var enabled: Bool = true
    /// Time between pulls.
    public var intervalSeconds: Double = 3600
    /// How far back the first pull after start looks (Apple keeps 180 days).
    public var lookbackSeconds: Double = 3 * 86_400
    /// Ask only for notifications that have not reached this server (Apple's `onlyFailures`).
    public var onlyFailures: Bool = true

    public init() {}

    enum CodingKeys: String, CodingKey { case enabled, intervalSeconds, lookbackSeconds, onlyFailures }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let d = NotificationGapFillPolicy()
        enabled = try c.decodeIfPresent(Bool.self, forKey: .enabled) ?? d.enabled
        intervalSeconds = try c.decodeIfPresent(Double.self, forKey: .intervalSeconds) ?? d.intervalSeconds
        lookbackSeconds = try c.decodeIfPresent(Double.self, forKey: .lookbackSeconds) ?? d.lookbackSeconds
        onlyFailures = try c.decodeIfPresent(Bool.self, forKey: .onlyFailures) ?? d.onlyFailures
    }
}

/// How webhook deliveries are attempted.
public struct WebhookSettings: Codable, Hashable, Sendable {
    /// Deadline of one attempt: connecting, sending and the answer's head.
    public var timeoutSeconds: Double = 10
    public var retrySchedule = WebhookRetrySchedule.standard
    /// Let endpoints point at loopback, private and link-local addresses (a receiver on the
    /// operator's own network; the test suite). Off: only public addresses.
    public var allowPrivateDestinations = false
    /// Networks allowed whatever their range (`10.20.0.0/16`): a narrower opening than
    /// `allowPrivateDestinations`.
    public var allowedDestinationNetworks: [IPNetwork] = []
    /// How often a held delivery (paused endpoint, dead earlier event) looks again; resume,
    /// replay and skip make held deliveries due at once, so this only bounds a rare late one.
    public var heldRecheckSeconds: Double = 60

    public init() {}

    var destinationPolicy: WebhookDestinationPolicy {
        WebhookDestinationPolicy(allowPrivate: allowPrivateDestinations, allowedNetworks: allowedDestinationNetworks)
    }

    enum CodingKeys: String, CodingKey {
        case timeoutSeconds, retrySchedule, allowPrivateDestinations, allowedDestinationNetworks, heldRecheckSeconds
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let d = WebhookSettings()
        timeoutSeconds = try c.decodeIfPresent(Double.self, forKey: .timeoutSeconds) ?? d.timeoutSeconds
        retrySchedule = try c.decodeIfPresent(WebhookRetrySchedule.self, forKey: .retrySchedule) ?? d.retrySchedule
        allowPrivateDestinations = try c.decodeIfPresent(Bool.self, forKey: .allowPrivateDestinations) ?? d.allowPrivateDestinations
        allowedDestinationNetworks =
            try c.decodeIfPresent([IPNetwork].self, forKey: .allowedDestinationNetworks) ?? d.allowedDestinationNetworks
        heldRecheckSeconds = try c.decodeIfPresent(Double.self, forKey: .heldRecheckSeconds) ?? d.heldRecheckSeconds
    }
}
