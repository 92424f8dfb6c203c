import AppStoreCrypto
import Foundation
import Hummingbird
import JobQueue
import Persistence
import StorekeeperCore
import StorekeeperDomain
import StorekeeperErrors
import StorekeeperWire

/// Existing customers imported by an operator (`storekeeper import FILE` posts here in
/// batches; docs/IMPORT.md). Each row is checked like the post it stands for, then becomes a
/// durable verification: the answer gives each row's verification and its state now, and the
/// same rows posted again find them (how the command follows the import's progress).
struct ImportController {
    let context: ServerContext

    static let batchLimit = 1_000

    func register(on router: RouteTable) {
        router.admin("v1/admin/apps/:app").post("imports") { request, ctx in
            let app = try context.app(id: try ctx.parameters.decoded("app"))
            let data = try await context.body(request)
            try AdminInput.refuseFields(
                data, except: ["rows"], nested: ["rows": ["appUserId", "originalTransactionId", "transactionId", "receipt", "signedTransaction"]],
                note: nil)
            struct Body: Decodable { var rows: [ImportRow] }
            let rows = try StorekeeperJSON.decode(Body.self, from: data).rows
            guard (1...Self.batchLimit).contains(rows.count) else {
                throw StorekeeperError(.invalidRequest, "rows: 1-\(Self.batchLimit) per request")
            }
            // A malformed row refuses the batch (the command checks rows the same way before
            // sending); a row refused for what it holds (a JWS that does not verify) is refused
            // alone, in its result.
            let malformed = rows.enumerated().flatMap { index, row in row.problems().map { "rows[\(index)]: \($0)" } }
            guard malformed.isEmpty else { throw StorekeeperError(.invalidRequest, malformed.prefix(20).joined(separator: "; ")) }
            var results: [RowResult] = []
            for (index, row) in rows.enumerated() {
                do {
                    let submission = try await submission(for: row, app: app)
                    let result = try await context.useCases.importCustomers(submission, now: context.now())
                    results.append(
                        RowResult(index: index, appUserId: row.appUserId, verification: context.view(result.verification), created: result.created))
                } catch let error as StorekeeperError {
                    results.append(RowResult(index: index, appUserId: row.appUserId, error: error.code.name, message: error.message))
                }
            }
            return try StorekeeperJSON.response(["results": results])
        }
    }

    struct RowResult: Encodable {
        var index: Int
        var appUserId: String
        var verification: StorekeeperWire.Verification?
        var created: Bool?
        /// Why the row was refused before anything was stored.
        var error: String?
        var message: String?
    }

    /// The submission a row stands for, checked as its post would be; a row's own problem is a
    /// `StorekeeperError` for that row alone.
    private func submission(for row: ImportRow, app: AppConfiguration) async throws -> EvidenceSubmission {
        let user = try await context.resolve(app, row.appUserId)
        var row = row
        row.appUserId = user
        switch row.evidence {
        case .originalTransactionId, .transactionId:
            guard context.serverAPIClients[app.id] != nil else {
                throw StorekeeperError(.serverAPINotConfigured, "app '\(app.id)' has no serverAPI key: transaction ids need the App Store Server API")
            }
            let hash = sha256Hex(Data("import\n\(row.key)".utf8))
            guard let submission = ImportCustomers.historyPull(row, appId: app.id, evidenceHash: hash) else {
                throw StorekeeperError(.internalError, "an id row made no history pull")
            }
            return submission
        case .receipt(let receipt):
            return try AppController(context: context).receiptSubmission(receipt, app: app, appUserId: user)
        case .signedTransaction(let jws):
            // The operator vouches for whose it is, as the app's backend may.
            return try await AppController(context: context).signedTransactionSubmission(jws, app: app, appUserId: user) { _ in }
        }
    }
}
