public import StorekeeperCore
public import StorekeeperDomain

/// An app's webhook endpoints as an operator watches them: never their signing secrets; each one's
/// recent success rate and its dead letters, with replay and skip for someone who may act.
public struct WebhooksPage: Sendable {
    /// What the page shows of one endpoint, as read through `WebhookEndpointActions`.
    public struct Watched: Sendable {
        public var endpoint: WebhookEndpoint
        /// Of its latest deliveries that ended, how many were delivered.
        public var delivered: Int
        public var ended: Int
        public var dead: [WebhookEndpointActions.DeliveryHistory]

        public init(endpoint: WebhookEndpoint, delivered: Int, ended: Int, dead: [WebhookEndpointActions.DeliveryHistory]) {
            self.endpoint = endpoint
            self.delivered = delivered
            self.ended = ended
            self.dead = dead
        }
    }

    public struct DeadLetter: Sendable, Hashable {
        public var id: String
        public var event: String
        public var user: String
        public var attempts: Int
        /// The last answer: an HTTP status, the error, or none.
        public var last: String
        public var at: String
        public var canAct: Bool
        public var csrf: String
        public var endpointPath: String
    }

    public struct Endpoint: Sendable, Hashable {
        public var id: String
        public var path: String
        public var url: String
        public var state: String
        public var paused: String
        public var types: String
        public var successRate: String
        public var dead: [DeadLetter]
        public var hasDead: Bool
        /// Replay every dead delivery: only with some to replay.
        public var canAct: Bool
        public var csrf: String
    }

    public var app: String
    public var endpoints: [Endpoint]
    public var deliveries: [ConsoleCount]

    public init(appId: String, watched: [Watched], deliveryCounts: [WebhookDelivery.State: Int], mayAct: Bool, csrf: String) {
        app = ConsoleFormat.pathSegment(appId)
        endpoints = watched.map { item in
            let endpoint = item.endpoint
            let path = ConsoleFormat.pathSegment(endpoint.id)
            let dead = item.dead.map { history in
                let last = history.attempts.last
                return DeadLetter(
                    id: history.delivery.id, event: history.delivery.eventId, user: history.delivery.appUserId,
                    attempts: history.delivery.attempts, last: last.map { $0.status.map { "HTTP \($0)" } ?? $0.error ?? "no answer" } ?? "—",
                    at: last.map { ConsoleFormat.instant($0.at) } ?? "—", canAct: mayAct, csrf: csrf, endpointPath: path)
            }
            return Endpoint(
                id: endpoint.id, path: path, url: endpoint.url, state: endpoint.state.rawValue, paused: endpoint.pausedReason ?? "—",
                types: endpoint.eventTypes.isEmpty ? "every event" : endpoint.eventTypes.map(\.rawValue).joined(separator: ", "),
                successRate: item.ended == 0 ? "—" : "\(item.delivered * 100 / item.ended)% of \(item.ended)", dead: dead,
                hasDead: !dead.isEmpty, canAct: mayAct && !dead.isEmpty, csrf: csrf)
        }
        deliveries = WebhookDelivery.State.allCases.map { ConsoleCount(state: $0.rawValue, count: deliveryCounts[$0] ?? 0) }
    }
}
