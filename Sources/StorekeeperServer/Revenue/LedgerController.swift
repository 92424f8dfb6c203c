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
            return try await ledger(request, app: app)
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

    private func ledger(_ request: Request, app: AppConfiguration) async throws -> Response {
        let query = QueryInput(request)
        let ledgerQuery = try Self.ledgerQuery(query, appId: app.id)
        let format = try query.oneOf("format", ["json", "csv"]) ?? "json"
        let entries = try await context.useCases.purchases.ledger(ledgerQuery)
        switch format {
        case "json":
            return try StorekeeperJSON.response(["entries": entries])
        case "csv":
            return Response(
                status: .ok, headers: [.contentType: "text/csv; charset=utf-8"],
                body: .init(byteBuffer: ByteBuffer(string: LedgerCSV.render(entries))))
        default:
            throw StorekeeperError(.invalidRequest, "format must be 'json' or 'csv'")
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

    static func render(_ entries: [LedgerEntry]) -> String {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        var lines = [header.joined(separator: ",")]
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
        return lines.joined(separator: "\r\n") + "\r\n"
    }
}
