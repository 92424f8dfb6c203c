import AppStoreModels
import Foundation

/// A request Apple turns down with one of its error codes. Reading a request throws it, so
/// each endpoint states its checks in order and `SimulatorServer.serverAPI` answers them.
struct ServerAPIRejection: Error, Sendable, Equatable {
    var status: Int
    var code: Int
    var message: String

    var answer: ServerAPIAnswer { .error(status, code, message) }

    private static func badRequest(_ code: Int, _ message: String) -> Self { Self(status: 400, code: code, message: message) }

    static let generalBadRequest = badRequest(4_000_000, "Invalid request.")
    static let invalidRevision = badRequest(4_000_005, "Invalid revision.")
    static let invalidTransactionId = badRequest(4_000_006, "Invalid transaction id.")
    static let invalidOriginalTransactionId = badRequest(4_000_008, "Invalid original transaction id.")
    static let startDateTooFarInPast = badRequest(4_000_012, "The start date is earlier than history goes back.")
    static let startDateAfterEndDate = badRequest(4_000_013, "The start date is not before the end date.")
    static let invalidPaginationToken = badRequest(4_000_014, "Invalid pagination token.")
    static let invalidStartDate = badRequest(4_000_015, "Invalid start date.")
    static let invalidEndDate = badRequest(4_000_016, "Invalid end date.")
    static let paginationTokenExpired = badRequest(4_000_017, "The pagination token belongs to another request.")
    static let invalidNotificationType = badRequest(4_000_018, "Invalid notification type or subtype.")
    static let multipleFiltersSupplied = badRequest(4_000_019, "Filter by a transaction id or by a notification type, not both.")
    static let invalidSort = badRequest(4_000_021, "Invalid sort.")
    static let invalidProductType = badRequest(4_000_022, "Invalid product type.")
    static let invalidProductId = badRequest(4_000_023, "Invalid product id.")
    static let invalidSubscriptionGroupIdentifier = badRequest(4_000_024, "Invalid subscription group identifier.")
    static let invalidExcludeRevoked = badRequest(4_000_025, "Invalid excludeRevoked value.")
    static let invalidInAppOwnershipType = badRequest(4_000_026, "Invalid in-app ownership type.")
    static let invalidRevoked = badRequest(4_000_030, "Invalid revoked value.")
    static let invalidStatus = badRequest(4_000_031, "Invalid status.")
    static let appTransactionIdNotSupported = badRequest(4_000_048, "This endpoint does not take an app transaction id.")

    /// Apple's transaction ids (app transaction ids too) are decimal numbers. Anything else is
    /// not an id at all, and Apple says so with a 400 rather than looking it up and answering
    /// 404; `rejection` names the id the endpoint expects.
    static func requireTransactionId(
        _ id: String, else rejection: ServerAPIRejection = .invalidTransactionId
    ) throws(ServerAPIRejection) {
        guard (1...20).contains(id.utf8.count), id.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) else {
            throw rejection
        }
    }
}

/// A request's query parameters, with every value of a repeated key (`productId=a&productId=b`).
struct ServerAPIQuery: Sendable {
    private var values: [String: [String]] = [:]

    init(_ pairs: some Sequence<(String, String)>) {
        for (key, value) in pairs { values[key, default: []].append(value) }
    }

    func all(_ key: String) -> [String] { values[key] ?? [] }

    func first(_ key: String) -> String? { values[key]?.first }
}

/// Get Transaction History's query as Apple reads it: every filter must match, and the
/// revision is where the previous page ended.
struct TransactionHistoryQuery: Sendable {
    enum Order: String, Sendable {
        case ascending = "ASCENDING"
        case descending = "DESCENDING"
    }

    /// Offset of the page in the filtered, sorted history (`rev-N`).
    var offset = 0
    var order = Order.ascending
    /// A transaction is in if start ≤ purchaseDate < end, in UNIX milliseconds as signed.
    var start: Int64?
    var end: Int64?
    var productIds: Set<String> = []
    var productTypes: Set<String> = []
    var subscriptionGroups: Set<String> = []
    var ownership: String?
    /// true: only revoked (refunded) transactions; false: only the others.
    var revoked: Bool?
    /// Version 1's older filter, still listed for version 2.
    var excludeRevoked = false

    static let knownProductTypes: Set<String> = ["AUTO_RENEWABLE", "NON_RENEWABLE", "CONSUMABLE", "NON_CONSUMABLE"]
    static let knownOwnershipTypes: Set<String> = ["PURCHASED", "FAMILY_SHARED"]

    init(_ query: ServerAPIQuery) throws(ServerAPIRejection) {
        if let revision = query.first("revision") {
            guard revision.hasPrefix("rev-"), let offset = Int(revision.dropFirst(4)), offset >= 0 else { throw .invalidRevision }
            self.offset = offset
        }
        if let sort = query.first("sort") {
            guard let order = Order(rawValue: sort) else { throw .invalidSort }
            self.order = order
        }
        if let value = query.first("startDate") {
            guard let start = Int64(value), start >= 0 else { throw .invalidStartDate }
            self.start = start
        }
        if let value = query.first("endDate") {
            guard let end = Int64(value), end >= 0 else { throw .invalidEndDate }
            self.end = end
        }
        if let start, let end, start >= end { throw .startDateAfterEndDate }
        productIds = Set(query.all("productId"))
        if productIds.contains("") { throw .invalidProductId }
        productTypes = Set(query.all("productType"))
        guard productTypes.isSubset(of: Self.knownProductTypes) else { throw .invalidProductType }
        subscriptionGroups = Set(query.all("subscriptionGroupIdentifier"))
        if subscriptionGroups.contains("") { throw .invalidSubscriptionGroupIdentifier }
        if let ownership = query.first("inAppOwnershipType") {
            guard Self.knownOwnershipTypes.contains(ownership) else { throw .invalidInAppOwnershipType }
            self.ownership = ownership
        }
        if let value = query.first("revoked") {
            guard let revoked = Self.boolean(value) else { throw .invalidRevoked }
            self.revoked = revoked
        }
        if let value = query.first("excludeRevoked") {
            guard let exclude = Self.boolean(value) else { throw .invalidExcludeRevoked }
            excludeRevoked = exclude
        }
    }

    func includes(_ tx: SimulatorState.Transaction, product: SimulatedProduct?) -> Bool {
        let purchased = Int64((tx.purchaseDate.timeIntervalSince1970 * 1000).rounded())
        if let start, purchased < start { return false }
        if let end, purchased >= end { return false }
        if !productIds.isEmpty, !productIds.contains(tx.productId) { return false }
        if !productTypes.isEmpty, !productTypes.contains(Self.productType(tx.kind)) { return false }
        if !subscriptionGroups.isEmpty, !subscriptionGroups.contains(product?.subscriptionGroupIdentifier ?? "") { return false }
        if let ownership, tx.ownership != ownership { return false }
        let isRevoked = tx.cancellationDate != nil
        if let revoked, revoked != isRevoked { return false }
        return !(excludeRevoked && isRevoked)
    }

    /// Apple sorts by when a transaction last changed, so a refund moves it to the end of an
    /// ascending history.
    func sorted(_ transactions: [SimulatorState.Transaction]) -> [SimulatorState.Transaction] {
        let ascending = transactions.sorted { ($0.lastModified, $0.transactionId) < ($1.lastModified, $1.transactionId) }
        return order == .ascending ? ascending : Array(ascending.reversed())
    }

    static func productType(_ kind: SimulatedProduct.Kind) -> String {
        switch kind {
        case .autoRenewable: "AUTO_RENEWABLE"
        case .nonRenewing, .freeSubscription: "NON_RENEWABLE"
        case .consumable: "CONSUMABLE"
        case .nonConsumable: "NON_CONSUMABLE"
        }
    }

    /// Apple's Python library sends `True`/`False`, so case does not matter.
    private static func boolean(_ text: String) -> Bool? {
        switch text.lowercased() {
        case "true": true
        case "false": false
        default: nil
        }
    }
}

/// Get All Subscription Statuses' `status` filter: any of 1 active, 2 expired, 3 billing
/// retry, 4 grace period, 5 revoked; none given means every status.
struct SubscriptionStatusFilter: Sendable {
    var statuses: Set<Int> = []

    init(_ query: ServerAPIQuery) throws(ServerAPIRejection) {
        for value in query.all("status") {
            guard let status = Int(value), (1...5).contains(status) else { throw .invalidStatus }
            statuses.insert(status)
        }
    }

    func includes(_ status: Int) -> Bool { statuses.isEmpty || statuses.contains(status) }
}

/// Get Notification History's body, checked as Apple documents it. A field of the wrong JSON
/// type counts as missing, so a bad date is Apple's invalid-date error, not a generic one.
struct NotificationHistoryQuery: Sendable {
    var startDate: Int64
    var endDate: Int64
    var notificationType: String?
    var notificationSubtype: String?
    var transactionId: String?
    var onlyFailures: Bool

    /// How far back history goes: 180 days in production, 30 in the sandbox (real days, not
    /// accelerated ones: a test's window is wall-clock time).
    static func retention(_ environment: AppStoreEnvironment) -> TimeInterval {
        (environment == .production ? 180 : 30) * 86_400
    }

    /// `earliest`: the instant history begins, judged at the earlier of the simulator's clock
    /// and the wall clock (as tokens are), so a test that moved the clock keeps its history.
    init(body: Data, earliest: Date) throws(ServerAPIRejection) {
        guard let fields = try? JSONDecoder().decode(Fields.self, from: body) else { throw .generalBadRequest }
        guard let start = fields.startDate, start >= 0 else { throw .invalidStartDate }
        guard let end = fields.endDate, end >= 0 else { throw .invalidEndDate }
        guard start < end else { throw .startDateAfterEndDate }
        guard Double(start) >= earliest.timeIntervalSince1970 * 1000 else { throw .startDateTooFarInPast }
        if fields.notificationType != nil, fields.transactionId != nil { throw .multipleFiltersSupplied }
        if let type = fields.notificationType, !Self.types.contains(type) { throw .invalidNotificationType }
        if let subtype = fields.notificationSubtype {
            guard let type = fields.notificationType, Self.subtypes[subtype]?.contains(type) == true else { throw .invalidNotificationType }
        }
        if let id = fields.transactionId { try ServerAPIRejection.requireTransactionId(id) }
        startDate = start
        endDate = end
        notificationType = fields.notificationType
        notificationSubtype = fields.notificationSubtype
        transactionId = fields.transactionId
        onlyFailures = fields.onlyFailures ?? false
    }

    /// The request in one string. A pagination token carries its hash, because Apple expects
    /// the same body with every page and refuses a token used with another.
    var fingerprint: String {
        let text = [
            "\(startDate)", "\(endDate)", notificationType ?? "", notificationSubtype ?? "", transactionId ?? "", "\(onlyFailures)",
        ].joined(separator: "\u{1F}")
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in text.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        return String(hash, radix: 16)
    }

    /// Apple's version 2 notification types.
    static let types: Set<String> = [
        "CONSUMPTION_REQUEST", "DID_CHANGE_RENEWAL_PREF", "DID_CHANGE_RENEWAL_STATUS", "DID_FAIL_TO_RENEW", "DID_RENEW", "EXPIRED",
        "EXTERNAL_PURCHASE_TOKEN", "GRACE_PERIOD_EXPIRED", "METADATA_UPDATE", "MIGRATION", "OFFER_REDEEMED", "ONE_TIME_CHARGE",
        "PRICE_CHANGE", "PRICE_INCREASE", "REFUND", "REFUND_DECLINED", "REFUND_REVERSED", "RENEWAL_EXTENDED", "RENEWAL_EXTENSION",
        "RESCIND_CONSENT", "REVOKE", "SUBSCRIBED", "TEST",
    ]

    /// Each subtype and the types it comes with (Apple's `subtype` documentation).
    static let subtypes: [String: Set<String>] = [
        "INITIAL_BUY": ["SUBSCRIBED", "OFFER_REDEEMED"],
        "RESUBSCRIBE": ["SUBSCRIBED", "OFFER_REDEEMED"],
        "UPGRADE": ["DID_CHANGE_RENEWAL_PREF", "OFFER_REDEEMED"],
        "DOWNGRADE": ["DID_CHANGE_RENEWAL_PREF", "OFFER_REDEEMED"],
        "AUTO_RENEW_ENABLED": ["DID_CHANGE_RENEWAL_STATUS"],
        "AUTO_RENEW_DISABLED": ["DID_CHANGE_RENEWAL_STATUS"],
        "GRACE_PERIOD": ["DID_FAIL_TO_RENEW"],
        "BILLING_RECOVERY": ["DID_RENEW"],
        "VOLUNTARY": ["EXPIRED"],
        "BILLING_RETRY": ["EXPIRED"],
        "PRICE_INCREASE": ["EXPIRED"],
        "PRODUCT_NOT_FOR_SALE": ["EXPIRED"],
        "PENDING": ["PRICE_INCREASE"],
        "ACCEPTED": ["PRICE_INCREASE"],
        "SUMMARY": ["RENEWAL_EXTENSION"],
        "FAILURE": ["RENEWAL_EXTENSION"],
        "UNREPORTED": ["EXTERNAL_PURCHASE_TOKEN"],
        "CREATED": ["EXTERNAL_PURCHASE_TOKEN"],
        "ACTIVE_TOKEN_REMINDER": ["EXTERNAL_PURCHASE_TOKEN"],
    ]

    private struct Fields: Decodable {
        var startDate: Int64?
        var endDate: Int64?
        var notificationType: String?
        var notificationSubtype: String?
        var transactionId: String?
        var onlyFailures: Bool?

        enum CodingKeys: String, CodingKey {
            case startDate, endDate, notificationType, notificationSubtype, transactionId, onlyFailures
        }

        init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            startDate = try? c.decodeIfPresent(Int64.self, forKey: .startDate)
            endDate = try? c.decodeIfPresent(Int64.self, forKey: .endDate)
            notificationType = try? c.decodeIfPresent(String.self, forKey: .notificationType)
            notificationSubtype = try? c.decodeIfPresent(String.self, forKey: .notificationSubtype)
            transactionId = try? c.decodeIfPresent(String.self, forKey: .transactionId)
            onlyFailures = try? c.decodeIfPresent(Bool.self, forKey: .onlyFailures)
        }
    }
}
