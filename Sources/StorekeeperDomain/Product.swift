public import Foundation

/// One catalog entry: what the server needs to know about a product to grant it and to
/// report its price. Prices are integer micro-units so ledger sums are exact.
public struct Product: Codable, Hashable, Sendable {
    public var productId: String
    public var type: ProductType
    public var status: ProductStatus
    /// ISO 8601 duration (`P1M`, `P30D`, `P1Y`, `PT1H`): a non-renewing subscription's length;
    /// an auto-renewable subscription's billing period (`P1W`, `P1M`, `P1Y`), which MRR reads.
    public var duration: String?
    /// Credits granted per unit purchased, for consumables.
    public var creditAmount: Int?
    /// Reference price in micro-units of `currency` (1 USD = 1_000_000).
    public var priceMicros: Int64?
    public var currency: String?
    public var displayName: String?

    public init(
        productId: String,
        type: ProductType,
        status: ProductStatus = .readyForSale,
        duration: String? = nil,
        creditAmount: Int? = nil,
        priceMicros: Int64? = nil,
        currency: String? = nil,
        displayName: String? = nil
    ) {
        self.productId = productId
        self.type = type
        self.status = status
        self.duration = duration
        self.creditAmount = creditAmount
        self.priceMicros = priceMicros
        self.currency = currency
        self.displayName = displayName
    }

    /// Problems with this entry, each naming its field, empty when valid.
    public func validationProblems() -> [String] {
        var problems: [String] = []
        if productId.isEmpty || productId.unicodeScalars.count > 255 { problems.append("productId: must be 1-255 characters") }
        if !ProductType.known.contains(type) { problems.append("type: unknown product type '\(type.rawValue)'") }
        if !ProductStatus.known.contains(status) { problems.append("status: unknown status '\(status.rawValue)'") }
        if type == .nonRenewing {
            if let duration {
                if ISODuration(duration) == nil { problems.append("duration: '\(duration)' is not an ISO 8601 duration") }
            } else {
                problems.append("duration: required for non-renewing subscriptions")
            }
        } else if type == .autoRenewable, let duration, ISODuration(duration) == nil {
            problems.append("duration: '\(duration)' is not an ISO 8601 duration")
        }
        if let creditAmount, creditAmount < 0 { problems.append("creditAmount: must not be negative") }
        if let priceMicros, priceMicros < 0 { problems.append("priceMicros: must not be negative") }
        if priceMicros != nil, currency == nil { problems.append("currency: required when priceMicros is set") }
        return problems
    }
}

/// An ISO 8601 duration added with the UTC Gregorian calendar, so a month is a calendar month.
public struct ISODuration: Hashable, Sendable {
    public var components: DateComponents

    public init?(_ text: String) {
        var rest = Substring(text.uppercased())
        guard rest.first == "P" else { return nil }
        rest = rest.dropFirst()
        var components = DateComponents()
        var inTime = false
        var number = ""
        var sawAny = false
        for ch in rest {
            if ch == "T" {
                guard number.isEmpty, !inTime else { return nil }
                inTime = true
                continue
            }
            if ch.isNumber {
                number.append(ch)
                continue
            }
            guard let value = Int(number), value >= 0, value < 100_000 else { return nil }
            number = ""
            sawAny = true
            switch (ch, inTime) {
            case ("Y", false): components.year = value
            case ("M", false): components.month = value
            case ("W", false): components.day = (components.day ?? 0) + value * 7
            case ("D", false): components.day = (components.day ?? 0) + value
            case ("H", true): components.hour = value
            case ("M", true): components.minute = value
            case ("S", true): components.second = value
            default: return nil
            }
        }
        guard number.isEmpty, sawAny else { return nil }
        self.components = components
    }

    public func added(to date: Date) -> Date {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        return calendar.date(byAdding: components, to: date) ?? date
    }
}
