public import Persistence
public import StorekeeperDomain

/// One verification as a row of the queue and of a customer's page (the `verificationRow`
/// partial), with the retry button only for someone who may act on a verification that is not
/// being verified right now.
public struct VerificationRow: Sendable, Hashable {
    public var id: String
    public var user: String
    public var state: String
    public var attempts: Int
    /// Apple's statuses, in the order the attempts met them.
    public var statuses: String
    public var reason: String
    public var created: String
    public var canRetry: Bool
    public var csrf: String

    public init(_ record: VerificationRecord, mayAct: Bool, csrf: String) {
        id = record.id
        user = record.appUserId
        state = record.state.rawValue
        attempts = record.attempts
        statuses = record.appleStatuses.map(String.init).joined(separator: " ")
        reason = record.reason?.rawValue ?? ""
        created = ConsoleFormat.instant(record.createdAt)
        canRetry = mayAct && record.state != .verifying
        self.csrf = csrf
    }
}

/// The verification queue: the latest verifications, filtered by state.
public struct VerificationsPage: Sendable, Hashable {
    public var states: [ConsoleChoice]
    public var rows: [VerificationRow]

    public init(_ records: [VerificationRecord], state: VerificationState?, mayAct: Bool, csrf: String) {
        states = ConsoleChoice.options(VerificationState.allCases.map(\.rawValue), selected: state?.rawValue)
        rows = records.map { VerificationRow($0, mayAct: mayAct, csrf: csrf) }
    }
}
