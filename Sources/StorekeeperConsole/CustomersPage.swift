import Persistence
public import StorekeeperCore

/// Support's search of an app's customers: what was asked, and each customer found with how.
public struct CustomersPage: Sendable, Hashable {
    public struct Result: Sendable, Hashable {
        /// The app's and the customer's ids as URL segments, for the customer's page.
        public var app: String
        public var encoded: String
        public var id: String
        public var how: String
    }

    public var query: String
    public var searched: Bool
    public var found: Bool
    public var results: [Result]

    public init(appId: String, query: String, found customers: [FindCustomers.Found]) {
        self.query = query
        searched = !query.isEmpty
        found = !customers.isEmpty
        results = customers.map {
            Result(
                app: ConsoleFormat.pathSegment(appId), encoded: ConsoleFormat.pathSegment($0.appUserId), id: $0.appUserId,
                how: Self.describe($0.via))
        }
    }

    /// How a search result was found, in words.
    public static func describe(_ via: FindCustomers.Via) -> String {
        switch via {
        case .appUserId: "by app user id"
        case .alias: "by an alias (an anonymous id they had)"
        case .appTransactionId: "holds a purchase of that Apple account (app transaction id)"
        case .matched(.transactionId): "holds that transaction"
        case .matched(.originalTransactionId): "holds that original transaction"
        case .matched(.appAccountToken): "bought with that appAccountToken"
        case .matched(.email): "by e-mail"
        }
    }
}
