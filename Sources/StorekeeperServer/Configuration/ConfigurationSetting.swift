import AppStoreClient
public import Configuration
import Foundation
import JobQueue
import StorekeeperDomain

/// One setting of ``StorekeeperConfiguration`` that the file, the environment or a flag may set:
/// its key in the file (`appleTimeouts.connectSeconds`), the swift-configuration type it is
/// read as, and how a value read applies. Every key but `apps` is one of these: the apps are a
/// list of objects, which swift-configuration's providers cannot represent, so they are decoded
/// from the file by `Codable` (``AppConfiguration``) with the same strictness.
public struct ConfigurationSetting: Sendable {
    /// The key in the file, dotted for nested objects.
    public var key: String
    /// What swift-configuration is asked for.
    public var type: ConfigType
    /// Never repeated in an error message.
    public var isSecret: Bool
    /// The environment's key when it is not `storekeeper.` + ``key`` (older, shorter names kept).
    var environmentKey: String?
    /// Applies a value read as ``type``; a value the setting cannot take (an unknown policy
    /// name, a network that is not CIDR) returns the problem instead.
    let apply: @Sendable (inout StorekeeperConfiguration, ConfigContent) -> String?

    /// The environment variable swift-configuration reads for this setting:
    /// `STOREKEEPER_` and the key's words (`appleTimeouts.connectSeconds` →
    /// `STOREKEEPER_APPLE_TIMEOUTS_CONNECT_SECONDS`).
    /// The words split where a lower-case letter meets an upper-case one, as
    /// `EnvironmentVariablesProvider` encodes keys (`extraRootsPEM` → `EXTRA_ROOTS_PEM`).
    public var variable: String {
        var name = ""
        var previous: Character = "."
        for character in environmentKey ?? "storekeeper.\(key)" {
            if character == "." {
                name += "_"
            } else {
                if previous.isLowercase && character.isUppercase { name += "_" }
                name += character.uppercased()
            }
            previous = character
        }
        return name
    }

    var components: [String] { key.split(separator: ".").map(String.init) }
    var environmentComponents: [String] { (environmentKey ?? "storekeeper.\(key)").split(separator: ".").map(String.init) }

    /// The name of the type in messages (`STOREKEEPER_PORT: 'eighty' is not a valid int`).
    public var typeName: String {
        switch type {
        case .stringArray: "list of strings"
        case .doubleArray: "list of numbers"
        default: type.rawValue
        }
    }

    static func string(
        _ key: String, secret: Bool = false, environment: String? = nil,
        _ apply: @escaping @Sendable (inout StorekeeperConfiguration, String) -> Void
    ) -> Self {
        Self(key: key, type: .string, isSecret: secret, environmentKey: environment) { c, v in
            guard case .string(let s) = v else { return "expected a string" }
            apply(&c, s)
            return nil
        }
    }

    /// A string from a fixed set (`bindingPolicy`, `receiptTrust.revocation.mode`).
    static func choice<Value: RawRepresentable<String> & Sendable>(
        _ key: String, _ values: [Value], _ apply: @escaping @Sendable (inout StorekeeperConfiguration, Value) -> Void
    ) -> Self {
        Self(key: key, type: .string, isSecret: false) { c, v in
            guard case .string(let s) = v, let value = Value(rawValue: s) else {
                return "must be one of \(values.map { "'\($0.rawValue)'" }.joined(separator: ", "))"
            }
            apply(&c, value)
            return nil
        }
    }

    static func int(_ key: String, _ apply: @escaping @Sendable (inout StorekeeperConfiguration, Int) -> Void) -> Self {
        Self(key: key, type: .int, isSecret: false) { c, v in
            guard case .int(let n) = v else { return "expected an int" }
            apply(&c, n)
            return nil
        }
    }

    static func double(
        _ key: String, environment: String? = nil, _ apply: @escaping @Sendable (inout StorekeeperConfiguration, Double) -> Void
    ) -> Self {
        Self(key: key, type: .double, isSecret: false, environmentKey: environment) { c, v in
            guard case .double(let d) = v else { return "expected a number" }
            apply(&c, d)
            return nil
        }
    }

    static func bool(_ key: String, _ apply: @escaping @Sendable (inout StorekeeperConfiguration, Bool) -> Void) -> Self {
        Self(key: key, type: .bool, isSecret: false) { c, v in
            guard case .bool(let b) = v else { return "expected true or false" }
            apply(&c, b)
            return nil
        }
    }

    static func strings(
        _ key: String, secret: Bool = false, _ apply: @escaping @Sendable (inout StorekeeperConfiguration, [String]) -> String?
    ) -> Self {
        Self(key: key, type: .stringArray, isSecret: secret) { c, v in
            guard case .stringArray(let s) = v else { return "expected a list of strings" }
            return apply(&c, s)
        }
    }

    static func doubles(_ key: String, _ apply: @escaping @Sendable (inout StorekeeperConfiguration, [Double]) -> Void) -> Self {
        Self(key: key, type: .doubleArray, isSecret: false) { c, v in
            guard case .doubleArray(let d) = v else { return "expected a list of numbers" }
            apply(&c, d)
            return nil
        }
    }

    /// Every setting but `apps`, in the order of the README's table. The file's unknown keys
    /// are the ones not here; `ConfigurationTests` sets each one through the file, the
    /// environment and flags and checks that it lands, and that the README names its key.
    public static let all: [ConfigurationSetting] = [
        .string("host") { $0.host = $1 },
        .int("port") { $0.port = $1 },
        .string("databasePath", environment: "storekeeper.database") { $0.databasePath = $1 },
        .bool("sqliteSynchronousFull") { $0.sqliteSynchronousFull = $1 },
        .string("adminKey", secret: true) { $0.adminKey = $1 },
        .string("appleEndpoints.production", environment: "storekeeper.apple.productionUrl") { $0.appleEndpoints.production = $1 },
        .string("appleEndpoints.sandbox", environment: "storekeeper.apple.sandboxUrl") { $0.appleEndpoints.sandbox = $1 },
        .int("workers") { $0.workers = $1 },
        .bool("runWorkers") { $0.runWorkers = $1 },
        .double("attemptTimeoutSeconds", environment: "storekeeper.attemptTimeout") { $0.attemptTimeoutSeconds = $1 },
        .double("appleTimeouts.connectSeconds") { $0.appleTimeouts.connectSeconds = $1 },
        .double("appleTimeouts.readSeconds") { $0.appleTimeouts.readSeconds = $1 },
        .double("leaseSeconds") { $0.leaseSeconds = $1 },
        .double("retry.base") { $0.retry.base = $1 },
        .double("retry.cap") { $0.retry.cap = $1 },
        .double("retry.jitter") { $0.retry.jitter = $1 },
        .double("flagAfterSeconds") { $0.flagAfterSeconds = $1 },
        .bool("excludeOldTransactions") { $0.excludeOldTransactions = $1 },
        .choice("bindingPolicy", [BindingPolicy.refuse, .transfer]) { $0.bindingPolicy = $1 },
        .int("maxBodyBytes") { $0.maxBodyBytes = $1 },
        .double("maxWaitSeconds") { $0.maxWaitSeconds = $1 },
        .double("idleTimeoutSeconds") { $0.idleTimeoutSeconds = $1 },
        .double("requestTimeoutSeconds") { $0.requestTimeoutSeconds = $1 },
        .int("maxConnections") { $0.maxConnections = $1 },
        .double("shutdownGraceSeconds") { $0.shutdownGraceSeconds = $1 },
        .double("eventRetentionDays") { $0.eventRetentionDays = $1 },
        .double("lapseSweepSeconds") { $0.lapseSweepSeconds = $1 },
        .double("webhooks.timeoutSeconds") { $0.webhooks.timeoutSeconds = $1 },
        .doubles("webhooks.retrySchedule.delays") { $0.webhooks.retrySchedule.delays = $1 },
        .double("webhooks.retrySchedule.maximumAge") { $0.webhooks.retrySchedule.maximumAge = $1 },
        .double("webhooks.retrySchedule.jitter") { $0.webhooks.retrySchedule.jitter = $1 },
        .double("webhooks.retrySchedule.maximumRetryAfter") { $0.webhooks.retrySchedule.maximumRetryAfter = $1 },
        .bool("webhooks.allowPrivateDestinations") { $0.webhooks.allowPrivateDestinations = $1 },
        .strings("webhooks.allowedDestinationNetworks") { c, texts in
            var networks: [IPNetwork] = []
            for text in texts {
                guard let network = IPNetwork(text) else { return "'\(text)' is not a CIDR network" }
                networks.append(network)
            }
            c.webhooks.allowedDestinationNetworks = networks
            return nil
        },
        .double("webhooks.heldRecheckSeconds") { $0.webhooks.heldRecheckSeconds = $1 },
        .bool("appleHealth.enabled") { $0.appleHealth.enabled = $1 },
        .int("appleHealth.degradedAfterFailures") { $0.appleHealth.degradedAfterFailures = $1 },
        .int("appleHealth.downAfterFailures") { $0.appleHealth.downAfterFailures = $1 },
        .double("appleHealth.probeBaseSeconds") { $0.appleHealth.probeBaseSeconds = $1 },
        .double("appleHealth.probeCapSeconds") { $0.appleHealth.probeCapSeconds = $1 },
        .double("appleHealth.releasePerSecond") { $0.appleHealth.releasePerSecond = $1 },
        .strings("console.operators", secret: true) {
            $0.console.operators = $1
            return nil
        },
        .double("console.sessionMinutes") { $0.console.sessionMinutes = $1 },
        .bool("outagePolicy.enabled") { $0.outagePolicy.enabled = $1 },
        .double("outagePolicy.afterSeconds") { $0.outagePolicy.afterSeconds = $1 },
        .double("outagePolicy.provisionalSeconds") { $0.outagePolicy.provisionalSeconds = $1 },
        .string("serverAPIEndpoints.production", environment: "storekeeper.serverApi.production") { $0.serverAPIEndpoints.production = $1 },
        .string("serverAPIEndpoints.sandbox", environment: "storekeeper.serverApi.sandbox") { $0.serverAPIEndpoints.sandbox = $1 },
        .double("serverAPIRateLimitShare", environment: "storekeeper.serverApiRateLimitShare") { $0.serverAPIRateLimitShare = $1 },
        .double("adminKeyGuessesPerSecond") { $0.adminKeyGuessesPerSecond = $1 },
        .int("offerSignaturesPerUserPerDay") { $0.offerSignaturesPerUserPerDay = $1 },
        .strings("trustedProxies") { c, texts in
            var networks: [IPNetwork] = []
            for text in texts {
                guard let network = IPNetwork(text) else { return "'\(text)' is not a CIDR network" }
                networks.append(network)
            }
            c.trustedProxies = networks
            return nil
        },
        .bool("notificationGapFill.enabled") { $0.notificationGapFill.enabled = $1 },
        .double("notificationGapFill.intervalSeconds") { $0.notificationGapFill.intervalSeconds = $1 },
        .double("notificationGapFill.lookbackSeconds") { $0.notificationGapFill.lookbackSeconds = $1 },
        .bool("notificationGapFill.onlyFailures") { $0.notificationGapFill.onlyFailures = $1 },
        .bool("receiptTrust.enabled") { $0.receiptTrust.enabled = $1 },
        .bool("receiptTrust.appleRoots") { $0.receiptTrust.appleRoots = $1 },
        .strings("receiptTrust.extraRootsPEM") { c, pems in
            c.receiptTrust.extraRootsPEM = pems
            return nil
        },
        .bool("receiptTrust.requireAppleMarkers") { $0.receiptTrust.requireAppleMarkers = $1 },
        .choice("receiptTrust.revocation.mode", [RevocationPolicy.Mode.off, .softFail, .hardFail]) { $0.receiptTrust.revocation.mode = $1 },
        .double("receiptTrust.revocation.cacheSeconds") { $0.receiptTrust.revocation.cacheSeconds = $1 },
        .string("receiptTrust.revocation.responderOverride") { $0.receiptTrust.revocation.responderOverride = $1 },
        .double("receiptTrust.revocation.timeoutSeconds") { $0.receiptTrust.revocation.timeoutSeconds = $1 },
    ]
}
