public import Foundation
import NIOHTTP1
public import Persistence
public import StorekeeperDomain

/// Calls the Storekeeper API as an app backend (app key) or an operator (admin key).
public struct StorekeeperClient: Sendable {
    public let http: HTTPJSONClient
    public let apiKey: String
    public let adminKey: String

    public init(http: HTTPJSONClient, apiKey: String, adminKey: String) {
        self.http = http
        self.apiKey = apiKey
        self.adminKey = adminKey
    }

    var app: [String: String] { ["Authorization": "Bearer \(apiKey)"] }
    var admin: [String: String] { ["Authorization": "Bearer \(adminKey)"] }

    public func postReceipt(
        appUserId: String, receipt: String, refresh: Bool = false, wait: Double? = nil
    ) async throws
        -> HTTPJSONClient.Reply
    {
        struct Body: Encodable {
            var appUserId: String
            var receipt: String
            var refresh: Bool
        }
        let query = wait.map { "?wait=\($0)" } ?? ""
        return try await http.send(.POST, "/v1/receipts\(query)", headers: app, json: Body(appUserId: appUserId, receipt: receipt, refresh: refresh))
    }

    /// StoreKit 2: `POST /v1/transactions[?wait=S]`. Without `wait` the server holds the answer
    /// 5 s for the grant, then answers 202; tests that need the grant pass a longer deadline.
    public func postSignedTransaction(
        appUserId: String, signedTransaction: String, appAccountToken: String? = nil, wait: Double? = nil
    ) async throws -> HTTPJSONClient.Reply {
        struct Body: Encodable {
            var appUserId: String
            var signedTransaction: String
            var appAccountToken: String?
        }
        let query = wait.map { "?wait=\($0)" } ?? ""
        return try await http.send(
            .POST, "/v1/transactions\(query)", headers: app,
            json: Body(appUserId: appUserId, signedTransaction: signedTransaction, appAccountToken: appAccountToken))
    }

    /// What Apple does: `POST /v1/notifications/appstore` with `{signedPayload}` (no API key).
    public func postNotification(signedPayload: String) async throws -> HTTPJSONClient.Reply {
        struct Body: Encodable { var signedPayload: String }
        return try await http.send(.POST, "/v1/notifications/appstore", json: Body(signedPayload: signedPayload))
    }

    public func verification(_ id: String) async throws -> HTTPJSONClient.Reply {
        try await http.send(.GET, "/v1/verifications/\(id)", headers: app)
    }

    /// Polls until the verification is final (or held for configuration), or the timeout passes.
    public func waitForFinal(_ id: String, timeout: TimeInterval = TestWait.seconds) async throws -> [String: Any] {
        let deadline = Date().addingTimeInterval(timeout)
        var last: [String: Any] = [:]
        while Date() < deadline {
            last = try await verification(id).json
            if let state = last["state"] as? String, ["verified", "invalid", "configuration_error"].contains(state) { return last }
            try await Task.sleep(for: .milliseconds(50))
        }
        return last
    }

    /// `value` as one path segment: every byte but RFC 3986's unreserved characters escaped.
    public static func pathSegment(_ value: String) -> String {
        value.addingPercentEncoding(withAllowedCharacters: CharacterSet(charactersIn: "-._~").union(.alphanumerics)) ?? value
    }

    public func subscriber(_ appUserId: String) async throws -> SubscriberView {
        let reply = try await http.send(
            .GET, "/v1/subscribers/\(Self.pathSegment(appUserId))", headers: app)
        return try reply.decode(SubscriberView.self)
    }

    /// One page of the app's event feed (`GET /v1/events` + `query`), as recorded.
    public func events(_ query: String) async throws -> [RecordedEvent] {
        let reply = try await http.send(.GET, "/v1/events\(query)", headers: app)
        return try reply.decode(EventPageBody.self).events.map { RecordedEvent(cursor: $0.cursor, event: $0.event) }
    }

    /// `GET /v1/events` and `GET /v1/subscribers/{id}/events` answer this.
    public struct EventPageBody: Decodable, Sendable {
        public struct Entry: Decodable, Sendable {
            public var cursor: Int64
            public var event: SubscriberEvent
        }
        public var events: [Entry]
        public var nextCursor: Int64
    }

    public func adminGet(_ path: String) async throws -> HTTPJSONClient.Reply {
        try await http.send(.GET, path, headers: admin)
    }

    public func adminPost(_ path: String) async throws -> HTTPJSONClient.Reply {
        try await http.send(.POST, path, headers: admin)
    }
}
