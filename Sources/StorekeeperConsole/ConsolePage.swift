/// A page's view model: which template shows it. Every page the console serves is one of these,
/// built by its presenter, so no page is a bag of untyped values.
public protocol ConsolePage: Sendable {
    static var template: String { get }
}

extension OverviewPage: ConsolePage { public static var template: String { "overview" } }
extension CustomersPage: ConsolePage { public static var template: String { "customers" } }
extension CustomerPage: ConsolePage { public static var template: String { "customer" } }
extension VerificationsPage: ConsolePage { public static var template: String { "verifications" } }
extension LedgerPage: ConsolePage { public static var template: String { "ledger" } }
extension HealthPage: ConsolePage { public static var template: String { "health" } }
extension WebhooksPage: ConsolePage { public static var template: String { "webhooks" } }

/// A sentence and the way back: a refusal, or what an action did when it has no page of its own.
public struct MessagePage: ConsolePage {
    public static var template: String { "message" }
    public var text: String
    public var back: String

    public init(_ text: String, back: String = "/console") {
        self.text = text
        self.back = back
    }
}

/// The sign-in form, with its CSRF token and the account name typed before.
public struct SignInPage: ConsolePage {
    public static var template: String { "login" }
    public var csrf: String
    public var account: String

    public init(csrf: String, account: String) {
        self.csrf = csrf
        self.account = account
    }
}
