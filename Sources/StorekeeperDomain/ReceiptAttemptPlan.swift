public import AppStoreModels
public import Foundation

/// One attempt at a receipt through verifyReceipt, as a state machine the job handler drives:
/// it asks Apple's health for admission, calls the environment it is told, feeds back what
/// happened, and gets the next step, until the plan concludes. Every decision of the attempt
/// (production first, 21007/21008 routing within `AppStoreRouting.maximumHops`, waiting
/// without a call while Apple is down, the sandbox rule, an answer without a receipt) is made
/// here, with time as an input, so each has a test without a network; the handler only does
/// the I/O the actions name and writes the conclusion.
public struct ReceiptAttemptPlan: Sendable {
    public enum Action: Sendable, Hashable {
        /// Ask Apple's health whether verifyReceipt in this environment may be called now.
        case admit(AppStoreEnvironment)
        /// Call verifyReceipt in this environment; as the one probe when `probe`.
        case call(AppStoreEnvironment, probe: Bool)
        /// The attempt is over.
        case conclude(Conclusion)
    }

    public enum Conclusion: Sendable, Hashable {
        /// Apple verified it: grant what it shows. `environment` is the one that answered.
        case grant(PurchaseEvidence, environment: AppStoreEnvironment)
        /// Apple's final no (or ours: a sandbox receipt where sandbox is not accepted, a valid
        /// answer without a receipt).
        case invalid(FailureReason)
        /// Apple says our configuration is wrong (shared secret): held for the operator.
        case hold(FailureReason)
        /// No answer to act on: Apple failed, looped or was not called. The handler may stand
        /// in (Server API) or schedule a retry; `waitUntil` is set when Apple was down and this
        /// attempt did not call (it spends no attempt).
        case unanswered(FailureReason, waitUntil: Date?)
    }

    public let acceptsSandbox: Bool
    /// The environment called last (the one that answered, when one did).
    public private(set) var environment = AppStoreRouting.firstEnvironment
    /// Apple's statuses in the order they came.
    public private(set) var statuses: [Int] = []
    /// When Apple was last asked: a subscription's state is judged at that instant.
    public private(set) var askedAt: Date
    private var calls = 0

    public init(acceptsSandbox: Bool, now: Date) {
        self.acceptsSandbox = acceptsSandbox
        askedAt = now
    }

    /// The first step.
    public func start() -> Action {
        .admit(environment)
    }

    /// Apple's health answered the admission.
    public mutating func admitted(_ admission: AppleHealth.Admission) -> Action {
        switch admission {
        case .call: return .call(environment, probe: false)
        case .probe: return .call(environment, probe: true)
        case .wait(let until): return .conclude(.unanswered(.appleDown, waitUntil: until))
        }
    }

    /// The call made at `askedAt` ended as `classification`.
    public mutating func answered(_ classification: AttemptClassification, askedAt: Date) -> Action {
        self.askedAt = askedAt
        calls += 1
        if let status = classification.appleStatus { statuses.append(status.rawValue) }
        switch classification {
        case .verified(let response):
            if environment == .sandbox, !acceptsSandbox { return .conclude(.invalid(.sandboxNotAccepted)) }
            guard let evidence = PurchaseEvidence(verifyReceipt: response, environment: environment, askedAt: askedAt) else {
                return .conclude(.invalid(.appleResponseMissingReceipt))
            }
            return .conclude(.grant(evidence, environment: environment))
        case .invalid(let reason, _):
            return .conclude(.invalid(reason))
        case .configurationError(let reason, _):
            return .conclude(.hold(reason))
        case .transient(let reason, _):
            return .conclude(.unanswered(reason, waitUntil: nil))
        case .redirect(let next, _):
            // A redirect after the last hop means Apple sent us round in circles.
            guard calls < AppStoreRouting.maximumHops else { return .conclude(.unanswered(.appleEnvironmentLoop, waitUntil: nil)) }
            environment = next
            return .admit(next)
        }
    }

    /// The Server API stood in for verifyReceipt and verified `evidence` in `environment`: the
    /// same sandbox rule as Apple's own answer.
    public mutating func stoodIn(_ evidence: PurchaseEvidence, environment: AppStoreEnvironment) -> Conclusion {
        self.environment = environment
        if environment == .sandbox, !acceptsSandbox { return .invalid(.sandboxNotAccepted) }
        return .grant(evidence, environment: environment)
    }

    /// When a verification that waited without calling (Apple down) comes back: around the next
    /// probe, spread over the probe backoff's cap so the waiting do not all come at once
    /// (Apple's recovery releases them sooner). `unitRandom` in [0, 1).
    public static func waitingRetry(until: Date, ended: Date, probeCapSeconds: Double, unitRandom: Double) -> Date {
        max(until, ended).addingTimeInterval(probeCapSeconds * min(max(unitRandom, 0), 1))
    }
}
