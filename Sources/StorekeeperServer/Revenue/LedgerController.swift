import Foundation
import Hummingbird
import Persistence
import StorekeeperCore
import StorekeeperDomain
import StorekeeperErrors
import StorekeeperWire

/// The ledger as finance reads it: JSON or CSV over a range, and the transactions of one Apple
/// account with the users holding them.
struct LedgerController {
    let context: ServerContext

    func register(on router: RouteTable) {
        let admin = router.admin("v1/admin")
        admin.get("apps/:app/app-transactions/:appTransactionId") { request, ctx in
            let app = try context.app(id: try ctx.parameters.decoded("app"))
            return try await appTransactionOwners(app: app, id: try ctx.parameters.decoded("appTransactionId"))
        }
        admin.get("apps/:app/ledger") { request, ctx in
            let app = try context.app(id: try ctx.parameters.decoded("app"))
            return try await Self.ledger(request, app: app, context: context)
        }
    }

    /// The transactions of one Apple account (`appTransactionId`) and the users holding them.
    private func appTransactionOwners(app: AppConfiguration, id: String) async throws -> Response {
        struct Owners: Encodable {
            var appTransactionId: String
            var appUserIds: [String]
            var transactions: [TransactionRecord]
        }
        let allowed = Set("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ._-".utf8)
        guard (1...128).contains(id.utf8.count), id.utf8.allSatisfy(allowed.contains) else {
            throw StorekeeperError(.invalidRequest, "appTransactionId must be 1 to 128 letters, digits, '.', '_' or '-'")
        }
        guard let holders = try await context.useCases.purchases.holders(appId: app.id, appTransactionId: id) else {
            throw StorekeeperError(.notFound, "no stored transaction carries app transaction id '\(id)'")
        }
        return try StorekeeperJSON.response(
            Owners(appTransactionId: id, appUserIds: holders.appUserIds, transactions: holders.transactions))
    }

    /// The ledger's range from a query (`environment`, `from`, `to`): the API's and the console's.
    static func ledgerQuery(_ query: QueryInput, appId: String) throws -> LedgerQuery {
        let environment = try query.oneOf("environment", ["production", "sandbox"]) ?? "production"
        // Absent bounds are open: a `to` before 1970 with no `from` is a valid, empty range.
        let from = try query.date("from") ?? Date.distantPast
        let to = try query.date("to") ?? Date.distantFuture
        guard from <= to else { throw StorekeeperError(.invalidRequest, "from must not be after to") }
        return LedgerQuery(appId: appId, environment: environment, from: from, to: to)
    }

    /// Most entries one JSON page holds, and what one holds unless asked for fewer.
    static let maximumPage = 1_000
    /// The CSV export's read size: the rows of the whole range are written as they are read, a
    /// page at a time, so a month of a million rows never sits in memory.
    static let exportPage = 1_000

    struct Page: Encodable {
        var entries: [LedgerEntry]
        /// Pass as `after` for the next page; absent on the last.
        var nextCursor: String?
    }

    /// The API's answer, and the console's downloads (`format` from their path): a page of JSON
    /// (`limit`, `after`), or the whole range as CSV, streamed.
    static func ledger(_ request: Request, app: AppConfiguration, format: String? = nil, context: ServerContext) async throws -> Response {
        let query = QueryInput(request)
        var ledgerQuery = try Self.ledgerQuery(query, appId: app.id)
        let format = try format ?? query.oneOf("format", ["json", "csv"]) ?? "json"
        if let token = query.string("after") {
            guard let position = LedgerPosition(token: token) else {
                throw StorekeeperError(.invalidRequest, "after: a nextCursor this server gave")
            }
            ledgerQuery.after = position
        }
        let purchases = context.useCases.purchases
        switch format {
        case "csv":
            let first = ledgerQuery
            return Response(
                status: .ok, headers: [.contentType: "text/csv; charset=utf-8"],
                body: ResponseBody { writer in
                    try await writer.write(ByteBuffer(string: LedgerCSV.headerLine))
                    var page = first
                    page.limit = Self.exportPage
                    while true {
                        let entries = try await purchases.ledger(page)
                        if !entries.isEmpty { try await writer.write(ByteBuffer(string: LedgerCSV.lines(entries))) }
                        guard entries.count == Self.exportPage, let last = entries.last else { break }
                        page.after = LedgerPosition(last)
                    }
                    try await writer.finish(nil)
                })
        default:
            let limit = try query.integer("limit", in: 1...Self.maximumPage) ?? Self.maximumPage
            ledgerQuery.limit = limit
            let entries = try await purchases.ledger(ledgerQuery)
            let next = entries.count == limit ? entries.last.map { LedgerPosition($0).token } : nil
            return try StorekeeperJSON.response(Page(entries: entries, nextCursor: next))
        }
    }
}

/// The ledger as CSV for finance: one row per entry, RFC 4180 quoting, prices in micro-units.
enum LedgerCSV {
    static let header = [
        "app_id", "app_user_id", "product_id", "product_type", "transaction_id", "original_transaction_id", "environment",
        "purchase_date", "event", "quantity", "price_micros", "currency", "state", "recorded_at", "imported", "estimated", "storefront",
        "offer_type", "offer_identifier", "offer_discount_type", "offer_period", "commission_rate", "proceeds_micros",
    ]

    static let headerLine = header.joined(separator: ",") + "\r\n"

    static func render(_ entries: [LedgerEntry]) -> String { headerLine + lines(entries) }

    /// One line per entry, each ending with CRLF.
    static func lines(_ entries: [LedgerEntry]) -> String {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        var lines: [String] = []
        for e in entries {
            let identity: [String] = [
                e.appId, e.appUserId, e.productId, e.productType.rawValue, e.transactionId, e.originalTransactionId, e.environment,
                f.string(from: e.purchaseDate), e.event.rawValue, String(e.quantity),
            ]
            let money: [String] = [
                e.priceMicros.map(String.init) ?? "", e.currency ?? "", e.state, f.string(from: e.recordedAt), String(e.imported),
                String(e.estimated), e.storefront ?? "",
            ]
            let offer: [String] = [
                e.offer.map { String($0.type) } ?? "", e.offer?.identifier ?? "", e.offer?.discountType ?? "", e.offer?.period ?? "",
                e.commissionRate.map(String.init) ?? "", e.proceedsMicros.map(String.init) ?? "",
            ]
            let fields = identity + money + offer
            lines.append(fields.map(CSVField.quote).joined(separator: ","))
        }
        return lines.map { $0 + "\r\n" }.joined()
    }
}
