import Foundation

/// What the user owns, as the server last said in a verified answer.
public struct Entitlements: Codable, Sendable, Hashable {
    public var appUserId: String
    /// Product ids that unlock something now.
    public var activeEntitlements: [String]
    /// Credits from consumables, when the app sells them.
    public var creditBalance: Int?
    /// When this device verified the answer (its clock): the staleness limit counts from here.
    public var verifiedAt: Date

    public func owns(_ productId: String) -> Bool { activeEntitlements.contains(productId) }
}
