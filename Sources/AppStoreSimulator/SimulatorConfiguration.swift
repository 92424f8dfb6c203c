public import AppStoreModels
public import Foundation

/// A product as the simulated App Store knows it.
public struct SimulatedProduct: Codable, Hashable, Sendable {
    public enum Kind: String, Codable, Sendable {
        case consumable
        case nonConsumable = "non_consumable"
        case autoRenewable = "auto_renewable"
        case nonRenewing = "non_renewing"
        case freeSubscription = "free_subscription"
    }

    public var productId: String
    public var kind: Kind
    /// Real-world period of an auto-renewable subscription (`P1W`, `P1M`, `P1Y`); accelerated when sold.
    public var period: String?
    public var priceMicros: Int64?
    public var currency: String?
    public var subscriptionGroup: String?
    /// Promotional offers set up for this product (an auto-renewable), sold with a signature.
    public var offers: [SimulatedOffer]?

    public init(
        productId: String, kind: Kind, period: String? = nil, priceMicros: Int64? = nil, currency: String? = nil,
        subscriptionGroup: String? = nil, offers: [SimulatedOffer]? = nil
    ) {
        self.offers = offers
        self.productId = productId
        self.kind = kind
        self.period = period
        self.priceMicros = priceMicros
        self.currency = currency
        self.subscriptionGroup = subscriptionGroup
    }

    /// The group Apple names in signed transactions, statuses and history filters. Every
    /// auto-renewable subscription is in one, so those configured without a group share the
    /// app's `default` group.
    var subscriptionGroupIdentifier: String? { subscriptionGroup ?? (kind == .autoRenewable ? "default" : nil) }
}

public struct SimulatedApp: Codable, Hashable, Sendable {
    public var bundleId: String
    public var sharedSecret: String?
    public var products: [SimulatedProduct]
    /// Apple's numeric id of the app, sent in notifications and Server API answers.
    public var appAppleId: Int64?
    /// In-App Purchase keys the Server API accepts for this app.
    public var serverAPIKeys: [SimulatedAPIKey]?
    /// Where App Store Server Notifications V2 are POSTed; none are sent when nil.
    public var notificationURL: String?
    /// The Retention Messaging realtime URL (the Get Retention Message endpoint); nil: none.
    public var retentionURL: String? = nil
    /// How long Apple waits for that endpoint's answer before showing the default message (2 s
    /// when unset); a harness on a busy machine sets more, so only a wrong answer fails it.
    public var retentionTimeoutSeconds: Double? = nil

    public init(
        bundleId: String, sharedSecret: String?, products: [SimulatedProduct], appAppleId: Int64? = nil,
        serverAPIKeys: [SimulatedAPIKey]? = nil, notificationURL: String? = nil
    ) {
        self.bundleId = bundleId
        self.sharedSecret = sharedSecret
        self.products = products
        self.appAppleId = appAppleId
        self.serverAPIKeys = serverAPIKeys
        self.notificationURL = notificationURL
    }
}

/// The public half of an In-App Purchase key, as App Store Connect knows it.
public struct SimulatedAPIKey: Codable, Hashable, Sendable {
    public var keyId: String
    public var issuerId: String
    /// PEM of the P-256 public key.
    public var publicKeyPEM: String

    public init(keyId: String, issuerId: String, publicKeyPEM: String) {
        self.keyId = keyId
        self.issuerId = issuerId
        self.publicKeyPEM = publicKeyPEM
    }
}

/// Faults injected into `/verifyReceipt`, settable at start and at run time (`PUT /sim/faults`).
public struct FaultConfiguration: Codable, Hashable, Sendable {
    public struct Window: Codable, Hashable, Sendable {
        public var start: Date
        public var end: Date
        public init(start: Date, end: Date) {
            self.start = start
            self.end = end
        }
    }

    /// Added latency, uniformly drawn from `latencyMinMs...latencyMaxMs`.
    public var latencyMinMs: Int = 0
    public var latencyMaxMs: Int = 0
    /// Probabilities (0...1) of each failure kind per call, checked in this order.
    public var status21005Rate: Double = 0
    public var http500Rate: Double = 0
    public var http503Rate: Double = 0
    public var http429Rate: Double = 0
    public var html200Rate: Double = 0
    /// Probability that a call hangs for `hangSeconds` before answering 503.
    public var hangRate: Double = 0
    public var hangSeconds: Double = 120
    /// While now is inside a window, every call answers HTTP 503.
    public var outages: [Window] = []

    public init() {}

    public static let none = FaultConfiguration()

    /// No failure of any kind is configured (latency aside).
    public var isClear: Bool {
        [status21005Rate, http500Rate, http503Rate, http429Rate, html200Rate, hangRate].allSatisfy { $0 == 0 } && outages.isEmpty
    }

    enum CodingKeys: String, CodingKey {
        case latencyMinMs, latencyMaxMs, status21005Rate, http500Rate, http503Rate, http429Rate, html200Rate
        case hangRate, hangSeconds, outages
    }

    /// Every key is optional: `{"latencyMinMs":3000,"latencyMaxMs":6000}` sets latency alone.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        latencyMinMs = try c.decodeIfPresent(Int.self, forKey: .latencyMinMs) ?? 0
        latencyMaxMs = try c.decodeIfPresent(Int.self, forKey: .latencyMaxMs) ?? latencyMinMs
        status21005Rate = try c.decodeIfPresent(Double.self, forKey: .status21005Rate) ?? 0
        http500Rate = try c.decodeIfPresent(Double.self, forKey: .http500Rate) ?? 0
        http503Rate = try c.decodeIfPresent(Double.self, forKey: .http503Rate) ?? 0
        http429Rate = try c.decodeIfPresent(Double.self, forKey: .http429Rate) ?? 0
        html200Rate = try c.decodeIfPresent(Double.self, forKey: .html200Rate) ?? 0
        hangRate = try c.decodeIfPresent(Double.self, forKey: .hangRate) ?? 0
        hangSeconds = try c.decodeIfPresent(Double.self, forKey: .hangSeconds) ?? 120
        outages = try c.decodeIfPresent([Window].self, forKey: .outages) ?? []
        guard latencyMinMs >= 0, latencyMaxMs >= latencyMinMs else {
            throw DecodingError.dataCorrupted(.init(codingPath: [CodingKeys.latencyMaxMs], debugDescription: "need 0 ≤ latencyMinMs ≤ latencyMaxMs"))
        }
        let rates = [status21005Rate, http500Rate, http503Rate, http429Rate, html200Rate, hangRate]
        guard rates.allSatisfy({ (0...1).contains($0) }), rates.reduce(0, +) <= 1 else {
            throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "rates must be within 0...1 and sum to at most 1"))
        }
    }
}

/// Everything the simulator needs to start.
public struct SimulatorConfiguration: Codable, Sendable {
    public var host: String = "127.0.0.1"
    public var port: Int = 8090
    public var apps: [SimulatedApp] = []
    public var faults: FaultConfiguration = .none
    /// How long one subscription month lasts, like Apple's sandbox (5 minutes).
    public var secondsPerMonth: Double = 300
    /// Grace period granted after a billing failure when requested, in accelerated seconds.
    public var gracePeriodSeconds: Double = 60
    /// Renewals after which an auto-renewable subscription stops (Apple's sandbox stops after 12).
    public var maximumRenewals: Int = 12
    /// Hours after a failed notification delivery at which Apple tries again (accelerated like months).
    public var notificationRetryHours: [Double] = [1, 12, 24, 48, 72]
    /// Items per page of transaction history and notification history (Apple: 20).
    public var serverAPIPageSize: Int = 20
    /// Auto-renewable products sold as monthly plans with a 12-month commitment: what they sign
    /// carries `billingPlanType` `MONTHLY` and `commitmentInfo`, so servers can be tested against
    /// that plan. Give them a one-month `period`. Settable at run time (`PUT /sim/commitment-products`).
    public var commitmentProductIds: Set<String> = []
    /// How Retention Messaging's performance test runs here: requests at once, how many, the
    /// response time (ms) under which one succeeds and the success rate (percent) that passes.
    /// Apple documents about 700 ms; a harness on a busy machine sets more, so a test judges the
    /// answers, not the machine's speed.
    public var retentionPerformanceTest = RetentionPerformanceTestConfig(
        maxConcurrentRequests: 10, totalRequests: 100, totalDuration: 60_000, responseTimeThreshold: 700, successRateThreshold: 95)

    public init() {}

    enum CodingKeys: String, CodingKey {
        case host, port, apps, faults, secondsPerMonth, gracePeriodSeconds, maximumRenewals, notificationRetryHours
        case serverAPIPageSize, commitmentProductIds, retentionPerformanceTest
    }

    /// Real-world hours → accelerated seconds, at the rate a month is accelerated.
    public func acceleratedSeconds(hours: Double) -> Double { hours * 3600 * secondsPerMonth / (30 * 86_400) }

    /// Every key is optional and defaults as documented above.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        host = try c.decodeIfPresent(String.self, forKey: .host) ?? "127.0.0.1"
        port = try c.decodeIfPresent(Int.self, forKey: .port) ?? 8090
        apps = try c.decodeIfPresent([SimulatedApp].self, forKey: .apps) ?? []
        faults = try c.decodeIfPresent(FaultConfiguration.self, forKey: .faults) ?? .none
        secondsPerMonth = try c.decodeIfPresent(Double.self, forKey: .secondsPerMonth) ?? 300
        gracePeriodSeconds = try c.decodeIfPresent(Double.self, forKey: .gracePeriodSeconds) ?? 60
        maximumRenewals = try c.decodeIfPresent(Int.self, forKey: .maximumRenewals) ?? 12
        notificationRetryHours = try c.decodeIfPresent([Double].self, forKey: .notificationRetryHours) ?? [1, 12, 24, 48, 72]
        serverAPIPageSize = max(1, try c.decodeIfPresent(Int.self, forKey: .serverAPIPageSize) ?? 20)
        commitmentProductIds = try c.decodeIfPresent(Set<String>.self, forKey: .commitmentProductIds) ?? []
        if let test = try c.decodeIfPresent(RetentionPerformanceTestConfig.self, forKey: .retentionPerformanceTest) {
            retentionPerformanceTest = test
        }
    }

    /// Real-world period → accelerated seconds (1 week → 0.6 months, as in Apple's sandbox).
    public func acceleratedSeconds(forPeriod period: String?) -> Double {
        let text = (period ?? "P1M").uppercased()
        let digits = Double(text.filter(\.isNumber)) ?? 1
        if text.hasSuffix("Y") { return digits * 12 * secondsPerMonth }
        if text.hasSuffix("W") { return digits * 0.6 * secondsPerMonth }
        if text.hasSuffix("D") { return max(1, digits / 30 * secondsPerMonth) }
        return digits * secondsPerMonth
    }
}
