import AsyncHTTPClient
import Foundation
import HTTPTypes
import HummingbirdTesting
import Logging
import NIOCore
import Persistence
import StorekeeperServer
import StorekeeperTesting
import Testing

/// The controllers' validation and error mapping, through the router alone (no socket, no
/// workers, no simulator): every refusal is the documented status and `{"error":{"code"}}`, and
/// none of them stores anything.
@Suite struct RouterTests {
    struct Refusal: Sendable, CustomStringConvertible {
        var method: HTTPRequest.Method
        var path: String
        var key: Key
        var body: String?
        var status: HTTPResponse.Status
        var code: String
        var description: String { "\(method) \(path) → \(status.code) \(code)" }
    }

    enum Key: Sendable { case none, app, admin, wrong }

    static let refusals: [Refusal] = [
        Refusal(method: .post, path: "/v1/receipts", key: .none, body: "{}", status: .unauthorized, code: "unauthorized"),
        Refusal(method: .post, path: "/v1/receipts", key: .wrong, body: "{}", status: .unauthorized, code: "unauthorized"),
        Refusal(method: .post, path: "/v1/receipts", key: .app, body: "{", status: .badRequest, code: "invalid_json"),
        Refusal(
            method: .post, path: "/v1/receipts", key: .app, body: #"{"appUserId":"u","receipt":"not base64!"}"#, status: .badRequest,
            code: "invalid_receipt"),
        Refusal(
            method: .post, path: "/v1/receipts", key: .app, body: #"{"appUserId":"","receipt":"AAAA"}"#, status: .badRequest,
            code: "invalid_app_user_id"),
        Refusal(
            method: .post, path: "/v1/transactions", key: .app, body: #"{"appUserId":"u","signedTransaction":" "}"#,
            status: .badRequest, code: "invalid_signed_transaction"),
        Refusal(
            method: .post, path: "/v1/transactions", key: .app, body: #"{"appUserId":"u","signedTransaction":"a.b.c"}"#,
            status: .badRequest, code: "invalid_signed_transaction"),
        Refusal(method: .get, path: "/v1/subscribers/a%00b", key: .app, status: .badRequest, code: "invalid_app_user_id"),
        Refusal(method: .get, path: "/v1/verifications/none", key: .app, status: .notFound, code: "not_found"),
        Refusal(method: .put, path: "/v1/receipts", key: .app, body: "{}", status: .methodNotAllowed, code: "method_not_allowed"),
        Refusal(method: .get, path: "/v1/nowhere", key: .app, status: .notFound, code: "not_found"),
        Refusal(method: .get, path: "/v1/admin/verifications", key: .app, status: .unauthorized, code: "unauthorized"),
        Refusal(
            method: .post, path: "/v1/admin/apps/demo/webhooks", key: .admin, body: #"{"url":"http://127.0.0.1:9/hook"}"#,
            status: .badRequest, code: "webhook_destination_refused"),
        Refusal(
            method: .post, path: "/v1/admin/apps/demo/webhooks", key: .admin, body: #"{"url":"https://example.com/h","colour":"red"}"#,
            status: .badRequest, code: "invalid_webhook"),
        Refusal(method: .get, path: "/v1/events?limit=abc", key: .app, status: .badRequest, code: "invalid_request"),
    ]

    @Test(arguments: refusals)
    func refusal(_ refusal: Refusal) async throws {
        var configuration = LocalStack.testConfiguration(databasePath: LocalStack.temporaryDatabasePath())
        configuration.runWorkers = false
        configuration.webhooks.allowPrivateDestinations = false
        let backend = try StorageBackend.open(configuration: configuration, logger: Logger(label: "router-test"))
        try await backend.prepare()
        let store = backend.store
        let httpClient = StorekeeperApplication.makeHTTPClient(configuration: configuration)
        var failure: (any Error)?
        do { try await exchange(refusal, configuration: configuration, store: store, httpClient: httpClient) } catch { failure = error }
        try await httpClient.shutdown()
        if let failure { throw failure }
        #expect(try await store.verificationCounts().values.reduce(0, +) == 0, "a refused request stored a verification")
    }

    func exchange(_ refusal: Refusal, configuration: StorekeeperConfiguration, store: any StorekeeperStore, httpClient: HTTPClient) async throws {
        let app = try await StorekeeperApplication.build(
            configuration: configuration, store: store, httpClient: httpClient, logger: Logger(label: "router-test"),
            now: { Date(timeIntervalSince1970: 1_790_000_000) })
        var headers: HTTPFields = [.contentType: "application/json"]
        switch refusal.key {
        case .none: break
        case .app: headers[.authorization] = "Bearer \(configuration.apps[0].apiKey)"
        case .admin: headers[.authorization] = "Bearer \(configuration.adminKey)"
        case .wrong: headers[.authorization] = "Bearer not-a-key-of-this-server"
        }
        let sent = headers
        try await app.test(.router) { client in
            let body = refusal.body.map { ByteBuffer(string: $0) }
            try await client.execute(uri: refusal.path, method: refusal.method, headers: sent, body: body) { response in
                #expect(response.status == refusal.status, "\(refusal)")
                let error = try JSONDecoder().decode(ErrorBody.self, from: Data(String(buffer: response.body).utf8))
                #expect(error.error.code == refusal.code, "\(refusal): \(error.error.message)")
                if refusal.status == .methodNotAllowed { #expect(response.headers[.allow] != nil) }
            }
        }
    }

    struct ErrorBody: Decodable {
        struct Detail: Decodable {
            var code: String
            var message: String
        }
        var error: Detail
    }
}
