import Foundation
public import Persistence
public import StorekeeperDomain

/// Finance's page of an app: the catalog, and the ledger of a range (the latest rows shown, the
/// downloads holding every row, exactly as the admin API's).
public struct LedgerPage: Sendable, Hashable {
    public struct ProductRow: Sendable, Hashable {
        public var id: String
        public var type: String
        public var status: String
        public var price: String
        public var duration: String
    }

    public struct Row: Sendable, Hashable {
        public var purchased: String
        public var user: String
        public var product: String
        public var transaction: String
        public var event: String
        public var amount: String
        public var proceeds: String
        public var storefront: String
        public var estimated: String
    }

    public var products: [ProductRow]
    public var environments: [ConsoleChoice]
    /// Empty when the range is open at that end.
    public var from: String
    public var to: String
    public var csv: String
    public var json: String
    public var count: Int
    public var cut: Bool
    public var shown: Int
    public var rows: [Row]

    /// `entries` in the ledger's order (oldest first): the newest `limit` are shown, newest first.
    /// `downloads`: the page's path and query, to which `.csv` or `.json` is added before the query.
    public init(
        products: [Product], entries: [LedgerEntry], query: LedgerQuery, limit: Int, downloads: (path: String, query: String)
    ) {
        self.products = products.map { product in
            ProductRow(
                id: product.productId, type: product.type.rawValue, status: product.status.rawValue,
                price: product.priceMicros.map { "\(ConsoleFormat.money($0)) \(product.currency ?? "")" } ?? "—",
                duration: product.duration ?? "—")
        }
        environments = ConsoleChoice.options(["production", "sandbox"], selected: query.environment)
        from = query.from == .distantPast ? "" : ConsoleFormat.day(query.from)
        to = query.to == .distantFuture ? "" : ConsoleFormat.day(query.to)
        csv = downloads.path + ".csv" + downloads.query
        json = downloads.path + ".json" + downloads.query
        let newest = entries.suffix(limit).reversed()
        count = entries.count
        cut = entries.count > newest.count
        shown = newest.count
        rows = newest.map { entry in
            Row(
                purchased: ConsoleFormat.instant(entry.purchaseDate), user: entry.appUserId, product: entry.productId,
                transaction: entry.transactionId, event: entry.event.rawValue,
                amount: entry.priceMicros.map { "\(ConsoleFormat.money($0)) \(entry.currency ?? "")" } ?? "—",
                proceeds: entry.proceedsMicros.map(ConsoleFormat.money) ?? "—", storefront: entry.storefront ?? "—",
                estimated: entry.estimated ? "yes" : "no")
        }
    }
}
