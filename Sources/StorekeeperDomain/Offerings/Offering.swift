import AppStoreModels
import Foundation
public import StorekeeperWire

/// What a paywall shows, named so the server can change it without an app release: packages in
/// the order the paywall lists them, each one product, and free-form metadata for the paywall
/// (titles, colours, a layout name) that the server keeps and never reads.
public struct Offering: Codable, Hashable, Sendable {
    public var id: String
    public var description: String?
    public var packages: [OfferingPackage]
    /// A JSON object, at most `metadataLimit` bytes encoded. Numbers are kept as JSON doubles:
    /// integers beyond 2^53 lose digits, so a paywall that needs them sends strings.
    public var metadata: JSONValue?

    public static let metadataLimit = 4096
    public static let packageLimit = 50

    public init(id: String, description: String? = nil, packages: [OfferingPackage], metadata: JSONValue? = nil) {
        self.id = id
        self.description = description
        self.packages = packages
        self.metadata = metadata
    }

    /// What is wrong with this offering alone, each problem naming its field under `prefix`.
    /// Products need not be in the catalog: a package may name a product before it is sold.
    public func problems(prefix: String = "") -> [String] {
        let place = prefix.isEmpty ? "" : prefix + "."
        var problems: [String] = []
        if !OfferingIdentifier.isValid(id) { problems.append("\(place)id: \(OfferingIdentifier.rule)") }
        if let description, description.unicodeScalars.count > 500 { problems.append("\(place)description: at most 500 characters") }
        if packages.isEmpty || packages.count > Self.packageLimit { problems.append("\(place)packages: 1-\(Self.packageLimit) packages") }
        var ids = Set<String>()
        var products = Set<String>()
        for (index, package) in packages.enumerated() {
            let at = "\(place)packages[\(index)]"
            problems += package.problems(prefix: at)
            if !ids.insert(package.id).inserted { problems.append("\(at).id: duplicate '\(package.id)'") }
            // One product, one package: buying "the package" must name one thing.
            if !products.insert(package.productId).inserted { problems.append("\(at).productId: '\(package.productId)' is in another package") }
        }
        if let metadata {
            guard case .object = metadata else { return problems + ["\(place)metadata: a JSON object"] }
            let size = (try? JSONEncoder().encode(metadata).count) ?? Int.max
            if size > Self.metadataLimit { problems.append("\(place)metadata: at most \(Self.metadataLimit) bytes encoded") }
        }
        return problems
    }

    /// What is wrong with a list of offerings, duplicate ids included.
    public static func problems(_ offerings: [Offering], prefix: String) -> [String] {
        var problems: [String] = []
        var ids = Set<String>()
        for (index, offering) in offerings.enumerated() {
            let place = "\(prefix)[\(index)]"
            problems += offering.problems(prefix: place)
            if !ids.insert(offering.id).inserted { problems.append("\(place).id: duplicate '\(offering.id)'") }
        }
        return problems
    }
}

/// One thing a paywall offers: a product under a role the app knows (`$monthly`) or the app's
/// own name for it.
public struct OfferingPackage: Codable, Hashable, Sendable {
    /// `$weekly`, `$monthly`, `$two_month`, `$three_month`, `$six_month`, `$annual`,
    /// `$lifetime`, or a custom identifier (never starting with `$`).
    public var id: String
    public var productId: String

    public static let standardIds: Set<String> = ["$weekly", "$monthly", "$two_month", "$three_month", "$six_month", "$annual", "$lifetime"]

    public init(id: String, productId: String) {
        self.id = id
        self.productId = productId
    }

    public func problems(prefix: String) -> [String] {
        var problems: [String] = []
        if id.hasPrefix("$") {
            if !Self.standardIds.contains(id) {
                problems.append("\(prefix).id: '$' starts only \(Self.standardIds.sorted().joined(separator: ", "))")
            }
        } else if !OfferingIdentifier.isValid(id) {
            problems.append("\(prefix).id: a standard id ($monthly, …) or \(OfferingIdentifier.rule)")
        }
        if productId.isEmpty || productId.utf8.count > 255 { problems.append("\(prefix).productId: 1-255 bytes") }
        return problems
    }
}

/// The identifiers operators choose for offerings, custom packages and targeting rules.
enum OfferingIdentifier {
    static let rule = "1-64 letters, digits, '-', '_' or '.'"

    static func isValid(_ id: String) -> Bool {
        (1...64).contains(id.utf8.count)
            && id.utf8.allSatisfy { byte in
                (0x61...0x7A).contains(byte) || (0x41...0x5A).contains(byte) || (0x30...0x39).contains(byte) || byte == 0x2D || byte == 0x5F
                    || byte == 0x2E
            }
    }
}
