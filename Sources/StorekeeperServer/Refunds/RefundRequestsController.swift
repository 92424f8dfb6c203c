import Foundation
import Hummingbird
import StorekeeperCore
import StorekeeperDomain
import StorekeeperErrors
import StorekeeperWire

/// Operators' view of Apple's refund requests and what was answered (docs/REFUNDS.md). Only
/// translation: `AnswerRefundRequests` reads them.
struct RefundRequestsController {
    let context: ServerContext

    static let pageLimit = 500

    func register(on router: RouteTable) {
        router.admin("v1/admin/apps/:app").get("refund-requests") { request, ctx in
            let app = try context.app(id: try ctx.parameters.decoded("app"))
            let query = QueryInput(request)
            let limit = try query.integer("limit", in: 1...Self.pageLimit) ?? 100
            let transactionId = query.string("transactionId")
            if let transactionId, transactionId.isEmpty || transactionId.utf8.count > 64 {
                throw StorekeeperError(.invalidRequest, "transactionId: 1-64 characters")
            }
            struct Page: Encodable {
                var requests: [RefundRequest]
            }
            return try StorekeeperJSON.response(
                Page(requests: try await context.useCases.refundRequests.requests(appId: app.id, transactionId: transactionId, limit: limit)))
        }
    }
}
