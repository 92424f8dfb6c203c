public import Foundation

/// A customer's place in an experiment, recorded once at the first offerings request after the
/// start and never changed: results are counted from `enrolledAt`, and a backend joins its own
/// data on the arm. After `logIn` links two ids that were each enrolled, the earlier enrollment
/// is the customer's (docs/EXPERIMENTS.md).
public struct ExperimentEnrollment: Codable, Hashable, Sendable {
    public var experimentId: String
    /// The id enrolled (the known user, or an anonymous id that later became one).
    public var appUserId: String
    /// An index into the experiment's arms.
    public var arm: Int
    /// The arm's offering, as it was at enrollment.
    public var offering: String
    public var enrolledAt: Date

    public init(experimentId: String, appUserId: String, arm: Int, offering: String, enrolledAt: Date) {
        self.experimentId = experimentId
        self.appUserId = appUserId
        self.arm = arm
        self.offering = offering
        self.enrolledAt = enrolledAt
    }

    /// `experiment_enrolled`, recorded with the enrollment. Its id derives from the customer and
    /// the experiment, so an enrollment recorded twice is one event.
    public func event(appId: String) -> SubscriberEvent {
        var details = SubscriberEvent.Details()
        (details.experimentId, details.arm, details.offeringId) = (experimentId, arm, offering)
        return SubscriberEvent(
            id: "evt_enroll_\(SubscriberEvent.fingerprint(appId, appUserId))_\(experimentId)", type: .experimentEnrolled, appId: appId,
            environment: nil, appUserId: appUserId, occurredAt: enrolledAt, recordedAt: enrolledAt, details: details)
    }
}
