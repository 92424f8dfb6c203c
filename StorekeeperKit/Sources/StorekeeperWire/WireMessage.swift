/// A body that crosses the API, written by one side and read by the other from this one type.
/// `location` names where docs/openapi.yaml states its shape, so a test without a server holds an
/// encoded sample of every message against the document (`WireContractTests`): Schemathesis then
/// judges what the server does, not how its types are spelled.
public protocol WireMessage: Codable, Sendable, Hashable {
    static var location: WireLocation { get }
}

/// Where the API document states a message's shape.
public enum WireLocation: Sendable, Hashable, CustomStringConvertible {
    /// `#/components/schemas/<name>`.
    case schema(String)
    /// The JSON request body of an operation.
    case request(method: String, path: String)
    /// The JSON answer of an operation with that status.
    case answer(method: String, path: String, status: Int)

    public var description: String {
        switch self {
        case .schema(let name): "#/components/schemas/\(name)"
        case .request(let method, let path): "\(method.uppercased()) \(path) request body"
        case .answer(let method, let path, let status): "\(method.uppercased()) \(path) answer \(status)"
        }
    }
}
