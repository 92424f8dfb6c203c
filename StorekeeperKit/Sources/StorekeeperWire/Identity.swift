/// Links an anonymous id to the known user of the path (`logIn`; docs/IDENTITY.md).
public struct LogInRequest: WireMessage {
    public static let location = WireLocation.request(method: "post", path: "/v1/subscribers/{appUserId}/aliases")
    public var anonymousId: String

    public init(anonymousId: String) { self.anonymousId = anonymousId }
}

/// What linking did.
public struct LogInAnswer: WireMessage {
    public static let location = WireLocation.answer(method: "post", path: "/v1/subscribers/{appUserId}/aliases", status: 200)

    /// Open: an outcome a newer server sends decodes too.
    public struct Outcome: RawRepresentable, Codable, Sendable, Hashable {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public init(from decoder: any Decoder) throws { rawValue = try decoder.singleValueContainer().decode(String.self) }
        public func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            try container.encode(rawValue)
        }
        public static let linked = Outcome(rawValue: "linked")
        public static let alreadyLinked = Outcome(rawValue: "already_linked")
        public static let keptWithAnonymous = Outcome(rawValue: "kept_with_anonymous")
    }

    public var appUserId: String
    public var outcome: Outcome
    /// Transactions moved to the user (`transfer`), or kept by the anonymous id (`keep`).
    public var transactionIds: [String]
    /// Every anonymous id now linked to the user.
    public var aliases: [String]

    public init(appUserId: String, outcome: Outcome, transactionIds: [String], aliases: [String]) {
        self.appUserId = appUserId
        self.outcome = outcome
        self.transactionIds = transactionIds
        self.aliases = aliases
    }
}
