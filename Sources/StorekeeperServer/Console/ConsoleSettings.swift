/// The operators' console (docs/CONSOLE.md): who may sign in besides the admin key, and for how
/// long a session lasts.
public struct ConsoleSettings: Encodable, Sendable, Hashable {
    /// Operator accounts, each `name:role:hash`: role `admin` (may act) or `read_only` (support,
    /// finance: may look), the password's scrypt hash from `storekeeper console-password`.
    public var operators: [String] = []
    /// A session ends this long after sign-in.
    public var sessionMinutes: Double = 480

    public init() {}

    enum CodingKeys: String, CodingKey, CaseIterable { case operators, sessionMinutes }

    var problems: [String] {
        var problems: [String] = []
        var names = Set<String>()
        for (index, text) in operators.enumerated() {
            // The entry itself is a secret's hash: never repeated in a message.
            guard let account = ConsoleOperator(text) else {
                problems.append("console.operators[\(index)]: expected name:role:hash (role admin or read_only, hash from console-password)")
                continue
            }
            if !names.insert(account.name).inserted { problems.append("console.operators[\(index)]: the name is used twice") }
        }
        if !(sessionMinutes > 0) || sessionMinutes > 43_200 { problems.append("console.sessionMinutes: must be within 0-43200 (30 days)") }
        return problems
    }

    var accounts: [String: ConsoleOperator] {
        Dictionary(operators.compactMap(ConsoleOperator.init).map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
    }
}

/// What a signed-in operator may do.
public enum ConsoleRole: String, Codable, Sendable, Hashable {
    /// Everything the console offers, as the admin key.
    case admin
    /// Looks only: every action is refused.
    case readOnly = "read_only"
}

/// One operator account from `console.operators`.
struct ConsoleOperator: Sendable, Hashable {
    var name: String
    var role: ConsoleRole
    var password: OperatorPassword

    init?(_ text: String) {
        let parts = text.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 3, !parts[0].isEmpty, parts[0].count <= 64, parts[0].allSatisfy({ $0.isLetter || $0.isNumber || "._-@".contains($0) }),
            let role = ConsoleRole(rawValue: parts[1]), let password = OperatorPassword(encoded: parts[2])
        else { return nil }
        (name, self.role, self.password) = (parts[0], role, password)
    }
}

extension ConsoleSettings {
    /// The `hash` part of an operator entry for `password` (`storekeeper console-password`).
    public static func hashPassword(_ password: String) throws -> String {
        try OperatorPassword.make(password)
    }
}
