/// What the app's backend (or the app, for its own user) says about a customer: an e-mail
/// address, a display name and a few custom keys, for support and for the backend's own use.
/// Personal data: returned on the subscriber and in events, removed when the customer is
/// deleted (docs/CUSTOMERS.md). Storekeeper never decides anything from them.
public struct SubscriberAttributes: Codable, Hashable, Sendable {
    public var email: String?
    public var displayName: String?
    public var custom: [String: String]

    public static let customKeyLimit = 50
    public static let valueLimit = 500

    public init(email: String? = nil, displayName: String? = nil, custom: [String: String] = [:]) {
        self.email = email
        self.displayName = displayName
        self.custom = custom
    }

    public var isEmpty: Bool { email == nil && displayName == nil && custom.isEmpty }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        email = try container.decodeIfPresent(String.self, forKey: .email)
        displayName = try container.decodeIfPresent(String.self, forKey: .displayName)
        custom = try container.decodeIfPresent([String: String].self, forKey: .custom) ?? [:]
    }

    /// `change` applied: a field it sets replaces this one, a field it clears (null) is removed,
    /// a field it leaves out stays. The problems instead when the change or the result breaks a
    /// limit.
    public func applying(_ change: AttributeChange) -> Result<SubscriberAttributes, AttributeProblems> {
        var next = self
        switch change.email {
        case .keep: break
        case .clear: next.email = nil
        case .set(let value): next.email = value
        }
        switch change.displayName {
        case .keep: break
        case .clear: next.displayName = nil
        case .set(let value): next.displayName = value
        }
        if change.clearCustom { next.custom = [:] }
        for (key, value) in change.custom {
            if let value { next.custom[key] = value } else { next.custom.removeValue(forKey: key) }
        }
        let problems = change.problems() + next.limitProblems()
        return problems.isEmpty ? .success(next) : .failure(AttributeProblems(problems: problems))
    }

    func limitProblems() -> [String] {
        custom.count > Self.customKeyLimit ? ["custom: at most \(Self.customKeyLimit) keys in all"] : []
    }
}

/// A merge patch of attributes, as a request states it.
public struct AttributeChange: Hashable, Sendable {
    public enum Field: Hashable, Sendable {
        case keep
        case clear
        case set(String)
    }

    public var email: Field
    public var displayName: Field
    /// nil: remove the key.
    public var custom: [String: String?]
    /// Every custom key removed (`"custom": null`), before `custom` applies.
    public var clearCustom: Bool

    public init(email: Field = .keep, displayName: Field = .keep, custom: [String: String?] = [:], clearCustom: Bool = false) {
        self.email = email
        self.displayName = displayName
        self.custom = custom
        self.clearCustom = clearCustom
    }

    public func problems() -> [String] {
        var problems: [String] = []
        if case .set(let email) = email {
            let parts = email.split(separator: "@", omittingEmptySubsequences: false)
            if email.unicodeScalars.count > 254 || parts.count != 2 || parts.contains(where: \.isEmpty)
                || email.unicodeScalars.contains(where: { $0.properties.isWhitespace || $0.properties.generalCategory == .control })
            {
                problems.append("email: an address (local@domain), at most 254 characters")
            }
        }
        if case .set(let name) = displayName,
            name.isEmpty || name.unicodeScalars.count > 200 || name.unicodeScalars.contains(where: Self.isHidden(allowingLineBreaks: false))
        {
            problems.append("displayName: 1-200 characters, none of them control or bidirectional formatting characters")
        }
        if custom.count > SubscriberAttributes.customKeyLimit { problems.append("custom: at most \(SubscriberAttributes.customKeyLimit) keys") }
        for (key, value) in custom.sorted(by: { $0.key < $1.key }) {
            let allowed = key.utf8.allSatisfy { byte in
                (0x61...0x7A).contains(byte) || (0x41...0x5A).contains(byte) || (0x30...0x39).contains(byte) || byte == 0x2D || byte == 0x5F
                    || byte == 0x2E
            }
            if key.isEmpty || key.utf8.count > 64 || !allowed {
                problems.append("custom.\(key.prefix(64)): keys are 1-64 letters, digits, '-', '_' or '.'")
            } else if let value, value.unicodeScalars.count > SubscriberAttributes.valueLimit {
                problems.append("custom.\(key): at most \(SubscriberAttributes.valueLimit) characters")
            } else if let value, value.unicodeScalars.contains(where: Self.isHidden(allowingLineBreaks: true)) {
                problems.append("custom.\(key): no control characters but tab and line feed, no bidirectional formatting characters")
            }
        }
        return problems
    }

    /// Characters that make stored text read otherwise than it is where an operator sees it (the
    /// console, an export): control characters (C0, DEL, C1) and the bidirectional formatting
    /// controls (LRM, RLM, ALM, LRE…RLO, LRI…PDI), which can reverse what follows them.
    static func isHidden(allowingLineBreaks: Bool) -> (Unicode.Scalar) -> Bool {
        { scalar in
            if allowingLineBreaks, scalar == "\n" || scalar == "\t" { return false }
            let value = scalar.value
            return scalar.properties.generalCategory == .control || value == 0x061C || value == 0x200E || value == 0x200F
                || (0x202A...0x202E).contains(value) || (0x2066...0x2069).contains(value)
        }
    }
}

public struct AttributeProblems: Error, Hashable, Sendable {
    public var problems: [String]

    public init(problems: [String]) {
        self.problems = problems
    }
}
