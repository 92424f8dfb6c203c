import AppStoreModels
import Foundation
import Hummingbird
import Logging
import NIOCore
import Synchronization

extension SimulatorServer {
    // MARK: Helpers

    struct DeviceView: Codable {
        var deviceId: UUID
        var bundleId: String
        var environment: String
    }

    struct CurrentEntitlementView: Codable {
        var transactionId: String
        var productId: String
        var signedTransaction: String
    }

    struct PurchaseView: Codable {
        var transaction: InAppTransaction
        /// The app receipt (StoreKit 1) after this purchase.
        var receipt: String
        /// The StoreKit 2 signed transaction (JWS) of this purchase.
        var signedTransaction: String
    }

    struct SoldTransactionView: Codable {
        var bundleId: String
        var environment: String
        var transaction: InAppTransaction
        var priceMicros: Int64?
        var currency: String?
    }

    static func deviceId(_ context: BasicRequestContext) throws -> UUID {
        guard let id = context.parameters.get("device").flatMap(UUID.init(uuidString:)) else {
            throw HTTPError(.badRequest, message: "device id must be a UUID")
        }
        return id
    }

    static func decode<T: Decodable>(_ request: Request) async throws -> T {
        let buffer = try await request.body.collect(upTo: 1024 * 1024)
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        do {
            return try decoder.decode(T.self, from: Data(buffer.readableBytesView))
        } catch {
            throw HTTPError(.badRequest, message: "invalid JSON body: \(error)")
        }
    }

    /// An optional body that was left out (nothing, or only white space).
    static func isBlank(_ body: Data) -> Bool {
        body.allSatisfy { [0x20, 0x09, 0x0A, 0x0D].contains($0) }
    }

    /// `PUT /sim/…/url {"bundleId", "url", "timeoutSeconds"}`: one of an app's URLs set (`url`
    /// absent or null: none), with how long Apple waits on it where that applies.
    static func setURL(
        _ request: Request, store: SimulatedAppStore, _ set: @Sendable (inout SimulatedApp, String?, Double?) -> Void
    ) async throws -> Response {
        struct Body: Decodable {
            var bundleId: String
            var url: String?
            var timeoutSeconds: Double?
        }
        let body: Body = try await decode(request)
        return try await guarded {
            guard var app = await store.state.app(body.bundleId) else {
                throw SimulatorState.Failure(status: 404, code: "unknown_app", message: "no app \(body.bundleId)")
            }
            if let timeout = body.timeoutSeconds, !(timeout > 0 && timeout <= 600) {
                throw SimulatorState.Failure(status: 400, code: "invalid_timeout", message: "timeoutSeconds: more than 0, at most 600")
            }
            set(&app, body.url, body.timeoutSeconds)
            await store.state.upsertApp(app)
            return json(app)
        }
    }

    /// The share a refund returns, in milliunits of a percent, from its optional body
    /// `{"percentage": N}`: no body, or no percentage, is a full refund (100000).
    static func refundPercentage(_ body: Data) throws -> Int {
        struct Body: Decodable { var percentage: Int? }
        let invalid = SimulatorState.Failure(
            status: 400, code: "invalid_percentage",
            message: "the body must be empty or {\"percentage\": N}, N an integer from 1 to 100000 (milliunits of a percent)")
        if isBlank(body) { return 100_000 }
        guard let decoded = try? JSONDecoder().decode(Body.self, from: body) else { throw invalid }
        let percentage = decoded.percentage ?? 100_000
        guard (1...100_000).contains(percentage) else { throw invalid }
        return percentage
    }

    static func guarded(_ body: () async throws -> Response) async throws -> Response {
        do {
            return try await body()
        } catch let failure as SimulatorState.Failure {
            return json(
                ["error": ["code": failure.code, "message": failure.message]],
                status: HTTPResponse.Status(code: failure.status))
        }
    }

    /// What the device gets for a transaction it just bought: the transaction, its app
    /// receipt and its StoreKit 2 signed form (201).
    static func sold(_ tx: SimulatorState.Transaction, by store: SimulatedAppStore, now: Date) async throws -> Response {
        let receipt = try await store.receipt(deviceId: tx.deviceId, now: now)
        let signed = try await store.signedTransaction(tx, now: now)
        return json(
            PurchaseView(transaction: SimulatedAppStore.wire(tx), receipt: Data(receipt).base64EncodedString(), signedTransaction: signed),
            status: .created)
    }

    static func json<T: Encodable>(_ value: T, status: HTTPResponse.Status = .ok) -> Response {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = [.sortedKeys]
        let data = (try? encoder.encode(value)) ?? Data("{}".utf8)
        return Response(
            status: status, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }

    static func html(status: HTTPResponse.Status) -> Response {
        Response(
            status: status, headers: [.contentType: "text/html"],
            body: .init(byteBuffer: ByteBuffer(string: "<html><body><h1>\(status.code) Service Unavailable</h1></body></html>")))
    }
}
