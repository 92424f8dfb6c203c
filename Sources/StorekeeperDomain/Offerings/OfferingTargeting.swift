/// Which offering an app is told is current: the operator's default, unless a rule matches the
/// caller's storefront or app version, unless the user has an override of their own. Targeting
/// picks what a paywall shows, never what anyone owns: a caller who names another storefront
/// sees another paywall, and every purchase made from it is verified as always.
public struct OfferingTargeting: Codable, Hashable, Sendable {
    /// The default offering; nil: none (the app is told of no current offering).
    public var current: String?
    /// Tried in order; the first that matches wins.
    public var rules: [OfferingRule]

    public static let ruleLimit = 50

    public init(current: String? = nil, rules: [OfferingRule] = []) {
        self.current = current
        self.rules = rules
    }

    /// Problems of the targeting alone and of every offering id it names that `offerings` lacks.
    public func problems(offerings: Set<String>, prefix: String = "") -> [String] {
        let place = prefix.isEmpty ? "" : prefix + "."
        var problems: [String] = []
        if let current, !offerings.contains(current) { problems.append("\(place)current: no offering '\(current)'") }
        if rules.count > Self.ruleLimit { problems.append("\(place)rules: at most \(Self.ruleLimit)") }
        var ids = Set<String>()
        for (index, rule) in rules.enumerated() {
            let at = "\(place)rules[\(index)]"
            problems += rule.problems(prefix: at)
            if !ids.insert(rule.id).inserted { problems.append("\(at).id: duplicate '\(rule.id)'") }
            if !offerings.contains(rule.offering) { problems.append("\(at).offering: no offering '\(rule.offering)'") }
        }
        return problems
    }

    /// Every offering id the targeting names.
    public var referencedOfferings: Set<String> {
        Set(rules.map(\.offering) + (current.map { [$0] } ?? []))
    }
}

/// A small rule: the caller's storefront is one of a list, its app version in a range, or both.
public struct OfferingRule: Codable, Hashable, Sendable {
    public var id: String
    public var offering: String
    /// Apple's storefront country codes (ISO 3166-1 alpha-3, `FRA`), as a transaction's
    /// `storefront` carries them.
    public var storefronts: [String]?
    /// Inclusive bounds, dotted numbers (`2.1`, `2.1.0`: equal).
    public var minAppVersion: String?
    public var maxAppVersion: String?

    public init(id: String, offering: String, storefronts: [String]? = nil, minAppVersion: String? = nil, maxAppVersion: String? = nil) {
        self.id = id
        self.offering = offering
        self.storefronts = storefronts
        self.minAppVersion = minAppVersion
        self.maxAppVersion = maxAppVersion
    }

    public func problems(prefix: String) -> [String] {
        var problems: [String] = []
        if !OfferingIdentifier.isValid(id) { problems.append("\(prefix).id: \(OfferingIdentifier.rule)") }
        if storefronts == nil && minAppVersion == nil && maxAppVersion == nil {
            problems.append("\(prefix): names storefronts, an app version bound or both (a rule for everyone is `current`)")
        }
        if let storefronts {
            if storefronts.isEmpty || storefronts.count > 300 { problems.append("\(prefix).storefronts: 1-300 codes") }
            if storefronts.contains(where: { Storefront($0) == nil }) {
                problems.append("\(prefix).storefronts: each three letters (ISO 3166-1 alpha-3, as Apple's storefront)")
            }
        }
        for (name, bound) in [("minAppVersion", minAppVersion), ("maxAppVersion", maxAppVersion)] {
            if let bound, AppVersion(bound) == nil { problems.append("\(prefix).\(name): \(AppVersion.rule)") }
        }
        if let low = minAppVersion.flatMap(AppVersion.init), let high = maxAppVersion.flatMap(AppVersion.init), high < low {
            problems.append("\(prefix).maxAppVersion: below minAppVersion")
        }
        return problems
    }

    /// Whether the caller matches; a bound the caller did not state is not met.
    public func matches(_ caller: OfferingAudience) -> Bool {
        if let storefronts {
            guard let storefront = caller.storefront, storefronts.contains(where: { Storefront($0) == storefront }) else { return false }
        }
        if minAppVersion != nil || maxAppVersion != nil {
            guard let version = caller.appVersion else { return false }
            if let low = minAppVersion.flatMap(AppVersion.init), version < low { return false }
            if let high = maxAppVersion.flatMap(AppVersion.init), high < version { return false }
        }
        return true
    }
}

/// What the app says about where it runs, for targeting only.
public struct OfferingAudience: Hashable, Sendable {
    public var storefront: Storefront?
    public var appVersion: AppVersion?

    public init(storefront: Storefront? = nil, appVersion: AppVersion? = nil) {
        self.storefront = storefront
        self.appVersion = appVersion
    }
}

/// A storefront's country code, upper-cased.
public struct Storefront: Hashable, Sendable, CustomStringConvertible {
    public let code: String

    public init?(_ text: String) {
        guard text.utf8.count == 3, text.utf8.allSatisfy({ (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) }) else { return nil }
        code = text.uppercased()
    }

    public var description: String { code }
}

/// A dotted app version (`2.10.1`), compared number by number, missing parts as zero.
public struct AppVersion: Comparable, Hashable, Sendable {
    static let rule = "1-4 dot-separated numbers of at most 9 digits (2.10.1)"
    public let parts: [Int]

    public init?(_ text: String) {
        let pieces = text.split(separator: ".", omittingEmptySubsequences: false)
        guard (1...4).contains(pieces.count) else { return nil }
        var parts: [Int] = []
        for piece in pieces {
            guard (1...9).contains(piece.utf8.count), piece.utf8.allSatisfy({ (0x30...0x39).contains($0) }), let value = Int(piece) else {
                return nil
            }
            parts.append(value)
        }
        while parts.count > 1, parts.last == 0 { parts.removeLast() }
        self.parts = parts
    }

    public static func < (lhs: AppVersion, rhs: AppVersion) -> Bool {
        for index in 0..<max(lhs.parts.count, rhs.parts.count) {
            let left = index < lhs.parts.count ? lhs.parts[index] : 0
            let right = index < rhs.parts.count ? rhs.parts[index] : 0
            if left != right { return left < right }
        }
        return false
    }
}
