public import Foundation

/// The App Store commission programme an app's developer is in (`apps[].commission`).
public enum CommissionProgram: String, Codable, Sendable, Hashable {
    /// 30%, and 15% for an auto-renewable subscription after a year of paid service.
    case standard
    /// The App Store Small Business Program: 15% on everything.
    case smallBusiness = "small_business"
}

/// Apple's commission on a sale, in basis points (3000 = 30%), and the proceeds it leaves
/// (docs/REVENUE.md). Apple counts a subscriber's first year of paid service in days paid,
/// with gaps of up to 60 days not resetting it; Storekeeper counts from Apple's
/// `originalPurchaseDate` of the subscription, so a renewal dated a year or more after it is
/// taken at 15%. That ignores free-trial days and unpaid gaps: an estimate, never more than
/// the months those make up.
public enum CommissionRule {
    public static let standardRate = 3_000
    public static let reducedRate = 1_500

    public static func rate(
        program: CommissionProgram, productType: ProductType, purchaseDate: Date, originalPurchaseDate: Date?
    ) -> Int {
        if program == .smallBusiness { return reducedRate }
        guard productType == .autoRenewable, let original = originalPurchaseDate,
            let anniversary = calendar.date(byAdding: .year, value: 1, to: original)
        else { return standardRate }
        return purchaseDate >= anniversary ? reducedRate : standardRate
    }

    /// `amount` less the commission at `rate`, the commission rounded half away from zero to
    /// the micro-unit (so a refund's proceeds are exactly the negative of the sale's).
    public static func proceeds(_ amount: Int64, rate: Int) -> Int64 {
        let magnitude = amount.magnitude
        // Full width: amount × rate cannot overflow; the commission is at most the amount.
        let (high, low) = magnitude.multipliedFullWidth(by: UInt64(min(max(rate, 0), 10_000)))
        let (sum, carry) = low.addingReportingOverflow(5_000)
        let commission = UInt64(10_000).dividingFullWidth((high + (carry ? 1 : 0), sum)).quotient
        let net = Int64(magnitude - commission)
        return amount < 0 ? -net : net
    }

    static let calendar: Calendar = {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        return calendar
    }()
}
