/// Where a verification stands, as shown to API callers.
public enum VerificationState: String, Codable, Sendable, CaseIterable {
    /// Accepted and queued; no attempt yet.
    case pending
    /// A worker holds it and is talking to Apple.
    case verifying
    /// Apple could not answer; the next attempt time is recorded.
    case retryScheduled = "retry_scheduled"
    /// Apple vouched for the receipt and its grants are committed.
    case verified
    /// The receipt will never verify.
    case invalid
    /// Held until our configuration changes (e.g. the shared secret).
    case configurationError = "configuration_error"

    /// Final states are left only by an explicit re-verification.
    public var isFinal: Bool {
        switch self {
        case .verified, .invalid: return true
        case .pending, .verifying, .retryScheduled, .configurationError: return false
        }
    }
}

/// The verification lifecycle as a pure state machine. The job handler asks it for the next
/// state; an event that does not fit the current state is refused rather than applied.
public enum VerificationLifecycle {
    public enum Event: Sendable, Hashable {
        case leased
        case appleVerified
        case appleInvalid
        case appleConfigurationError
        case transientFailure
        /// An operator or a client asked to verify again (refresh, manual retry, config fixed).
        case requeued
        /// The worker holding it died; its lease ran out.
        case leaseExpired
        /// The process holding it stopped before the attempt ended and gave the lease back; the
        /// attempt does not count.
        case released
    }

    /// The state a verification is accepted in.
    public static let initial = VerificationState.pending

    public static func next(from state: VerificationState, on event: Event) -> VerificationState? {
        switch (state, event) {
        case (.pending, .leased), (.retryScheduled, .leased), (.verifying, .leased):
            return .verifying
        case (.verifying, .appleVerified): return .verified
        case (.verifying, .appleInvalid): return .invalid
        case (.verifying, .appleConfigurationError): return .configurationError
        case (.verifying, .transientFailure): return .retryScheduled
        case (.verifying, .leaseExpired), (.verifying, .released): return .retryScheduled
        case (.configurationError, .requeued), (.verified, .requeued), (.invalid, .requeued),
            (.retryScheduled, .requeued), (.pending, .requeued):
            return .pending
        default:
            return nil
        }
    }
}
