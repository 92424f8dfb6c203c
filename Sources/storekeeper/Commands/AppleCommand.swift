import ArgumentParser
import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1

/// `storekeeper apple …`: the App Store Server API actions an operator runs by hand (refund
/// history, order lookup, renewal-date extensions), through a running server's admin routes.
/// The server holds the In-App Purchase keys and verifies every signed answer; this command
/// only sends the request and prints the server's JSON, so what a script sees is exactly what
/// `GET/PUT/POST /v1/admin/apps/{app}/…` answers (docs/openapi.yaml).
struct AppleCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "apple",
        abstract: "Ask Apple, through a running server's admin API: refunds, an order, renewal-date extensions.",
        subcommands: [Refunds.self, Order.self, Extend.self, MassExtend.self, ExtensionStatus.self])

    /// Where the server is and who is asking.
    struct Connection: ParsableArguments {
        @Option(help: "The server's base URL (also STOREKEEPER_URL).") var url: String?
        @Option(help: "The admin key (also STOREKEEPER_ADMIN_KEY; the environment keeps it out of the process list).")
        var adminKey: String?
        @Option(help: "The app's id in the configuration.") var app: String
        @Option(help: "production or sandbox (default: production, or either when the app accepts the sandbox).")
        var environment: String?

        func validate() throws {
            if let environment, !["production", "sandbox"].contains(environment) {
                throw ValidationError("--environment must be production or sandbox")
            }
        }

        /// Sends one admin request; the answer's JSON on success, otherwise the server's error
        /// on standard error and exit status 1.
        func send(_ method: HTTPMethod, _ path: String, json body: Data? = nil) async throws -> Data {
            let query = self.environment.map { "?environment=\($0)" } ?? ""
            return try await AdminRequest(url: url, adminKey: adminKey, app: app).send(method, path + query, json: body)
        }
    }

    /// Prints an answer with sorted keys, one field a line, for people and `jq` alike.
    static func print(_ data: Data) throws {
        let object = try JSONSerialization.jsonObject(with: data)
        let text = try JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])
        FileHandle.standardOutput.write(text + Data("\n".utf8))
    }

    /// One path segment: letters, digits and `-._~` pass, anything else is percent-encoded
    /// (a `/` in a product id must not become a path separator).
    static func segment(_ text: String, _ name: String) throws -> String {
        var allowed = CharacterSet.alphanumerics.intersection(CharacterSet(charactersIn: Unicode.Scalar(0)...Unicode.Scalar(127)))
        allowed.insert(charactersIn: "-._~")
        guard !text.isEmpty, let encoded = text.addingPercentEncoding(withAllowedCharacters: allowed) else {
            throw ValidationError("\(name) must not be empty")
        }
        return encoded
    }

    /// Apple's transaction ids are decimal digits; anything else never leaves this machine.
    static func digits(_ text: String, _ name: String) throws -> String {
        guard !text.isEmpty, text.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else {
            throw ValidationError("\(name) must be decimal digits")
        }
        return text
    }

    struct Refunds: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Apple's refund history of the customer who bought this transaction (every page, each refund verified).")
        @OptionGroup var connection: Connection
        @Argument(help: "Any transaction id of the customer.") var transactionId: String

        func run() async throws {
            let id = try AppleCommand.digits(transactionId, "transactionId")
            try AppleCommand.print(try await connection.send(.GET, "/transactions/\(id)/refunds"))
        }
    }

    struct Order: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Look up an order id from a customer's App Store receipt email: its transactions, verified.")
        @OptionGroup var connection: Connection
        @Argument(help: "The order id (e.g. MK5TTTVWJH).") var orderId: String

        func run() async throws {
            guard !orderId.isEmpty, orderId.unicodeScalars.allSatisfy({ CharacterSet.alphanumerics.contains($0) && $0.isASCII }) else {
                throw ValidationError("orderId must be letters and digits")
            }
            try AppleCommand.print(try await connection.send(.GET, "/orders/\(orderId)"))
        }
    }

    /// Apple's limits, checked by the server too: 1-90 days, reason 0-3, a UUID to retry by.
    struct Extension: ParsableArguments {
        @Option(help: "Days to add, 1-90.") var days: Int
        @Option(help: "Apple's reason: 0 undeclared, 1 customer satisfaction, 2 other, 3 service issue or outage.") var reason: Int
        @Option(help: "A UUID naming this request; send the same one to retry without extending twice (default: a new one, printed).")
        var requestIdentifier: String?

        var identifier: String { requestIdentifier ?? UUID().uuidString }
    }

    struct Extend: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Extend one subscription's renewal date.")
        @OptionGroup var connection: Connection
        @OptionGroup var extensionOptions: Extension
        @Argument(help: "The subscription's original transaction id.") var originalTransactionId: String

        func run() async throws {
            let id = try AppleCommand.digits(originalTransactionId, "originalTransactionId")
            struct Body: Encodable {
                var extendByDays: Int
                var extendReasonCode: Int
                var requestIdentifier: String
            }
            let body = Body(
                extendByDays: extensionOptions.days, extendReasonCode: extensionOptions.reason, requestIdentifier: extensionOptions.identifier)
            try AppleCommand.print(try await connection.send(.PUT, "/subscriptions/\(id)/renewal-extension", json: JSONEncoder().encode(body)))
        }
    }

    struct MassExtend: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "mass-extend",
            abstract: "Extend the renewal date of every active subscriber of a product; with --wait, poll Apple's status until it is complete.")
        @OptionGroup var connection: Connection
        @OptionGroup var extensionOptions: Extension
        @Argument(help: "The auto-renewable product id.") var productId: String
        @Option(help: "Only these storefronts (ISO 3166-1 alpha-3, e.g. USA); repeatable.") var storefront: [String] = []
        @Flag(help: "Poll the request's status until Apple reports it complete, then print the counts.") var wait = false
        @Option(help: "Seconds between status polls with --wait.") var pollSeconds: Double = 10
        @Option(help: "Give up polling after this many seconds (the extension goes on at Apple).") var timeout: Double = 3600

        func run() async throws {
            struct Body: Encodable {
                var extendByDays: Int
                var extendReasonCode: Int
                var requestIdentifier: String
                var storefrontCountryCodes: [String]?
            }
            let product = try AppleCommand.segment(productId, "productId")
            let identifier = extensionOptions.identifier
            let body = Body(
                extendByDays: extensionOptions.days, extendReasonCode: extensionOptions.reason, requestIdentifier: identifier,
                storefrontCountryCodes: storefront.isEmpty ? nil : storefront)
            let accepted = try await connection.send(.POST, "/products/\(product)/renewal-extension", json: JSONEncoder().encode(body))
            guard wait else { return try AppleCommand.print(accepted) }
            let statusPath = "/products/\(product)/renewal-extension/\(identifier)"
            let deadline = ContinuousClock.now + .seconds(timeout)
            while true {
                let status = try await connection.send(.GET, statusPath)
                let complete = (try JSONSerialization.jsonObject(with: status) as? [String: Any])?["complete"] as? Bool == true
                if complete || ContinuousClock.now >= deadline {
                    try AppleCommand.print(status)
                    if !complete { throw ExitCode(2) }
                    return
                }
                FileHandle.standardError.write(Data("request \(identifier): not complete yet, asking again in \(pollSeconds) s\n".utf8))
                try await Task.sleep(for: .seconds(pollSeconds))
            }
        }
    }

    struct ExtensionStatus: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "extension-status", abstract: "The status of a mass renewal-date extension (complete, counts).")
        @OptionGroup var connection: Connection
        @Argument(help: "The product id the extension was for.") var productId: String
        @Argument(help: "The request identifier (UUID) it was sent with.") var requestIdentifier: String

        func run() async throws {
            let product = try AppleCommand.segment(productId, "productId")
            guard UUID(uuidString: requestIdentifier) != nil else { throw ValidationError("requestIdentifier must be a UUID") }
            try AppleCommand.print(try await connection.send(.GET, "/products/\(product)/renewal-extension/\(requestIdentifier)"))
        }
    }
}

/// One request to a running server's admin API for an app, as the operator commands send it:
/// the answer's JSON on success, otherwise the server's error on standard error and exit 1.
struct AdminRequest {
    var url: String?
    var adminKey: String?
    var app: String
    var timeout: TimeAmount = .seconds(120)

    func send(_ method: HTTPMethod, _ path: String, json body: Data? = nil) async throws -> Data {
        let environment = ProcessInfo.processInfo.environment
        guard let key = adminKey ?? environment["STOREKEEPER_ADMIN_KEY"], !key.isEmpty else {
            throw ValidationError("--admin-key or STOREKEEPER_ADMIN_KEY is required")
        }
        let base = url ?? environment["STOREKEEPER_URL"] ?? "http://127.0.0.1:8080"
        let appSegment = try AppleCommand.segment(app, "--app")
        var request = HTTPClientRequest(url: "\(base.hasSuffix("/") ? String(base.dropLast()) : base)/v1/admin/apps/\(appSegment)\(path)")
        request.method = method
        request.headers.add(name: "Authorization", value: "Bearer \(key)")
        if let body {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(bytes: body))
        }
        let response = try await HTTPClient.shared.execute(request, timeout: timeout)
        let bytes = Data(try await response.body.collect(upTo: 64 * 1024 * 1024).readableBytesView)
        guard (200..<300).contains(response.status.code) else {
            FileHandle.standardError.write(Data("HTTP \(response.status.code): ".utf8) + bytes + Data("\n".utf8))
            throw ExitCode.failure
        }
        return bytes
    }
}
