/// The webhook endpoint lifecycle as a pure state machine: an operator pauses and resumes, the
/// server pauses an endpoint whose delivery died, and deletion ends it (the row goes, with its
/// deliveries). Adapters write the transition it returns, guarded by `WHERE state = from`.
public enum EndpointLifecycle {
    public enum Event: Sendable, Hashable {
        /// An operator paused it.
        case paused
        /// An operator resumed it.
        case resumed
        /// A delivery died (retries ran out, or the receiver answered 410): `reason` says which.
        case deliveryDied(reason: String)
    }

    /// One guarded change of an endpoint's state.
    public struct Transition: Sendable, Hashable {
        public var from: WebhookEndpoint.State
        public var to: WebhookEndpoint.State
        /// Why it is paused; nil when active.
        public var pausedReason: String?
    }

    /// Why an endpoint an operator paused is paused.
    public static let operatorReason = "paused_by_operator"

    /// The next state of an endpoint in `state` on `event`, or nil when the event changes
    /// nothing (a dying delivery of an endpoint already paused keeps the pause it has).
    public static func next(from state: WebhookEndpoint.State, on event: Event) -> Transition? {
        switch (state, event) {
        case (_, .paused): Transition(from: state, to: .paused, pausedReason: operatorReason)
        case (_, .resumed): Transition(from: state, to: .active, pausedReason: nil)
        case (.active, .deliveryDied(let reason)): Transition(from: .active, to: .paused, pausedReason: reason)
        case (.paused, .deliveryDied): nil
        }
    }
}
