import AppStoreModels
import Foundation
import StorekeeperCore
import StorekeeperDomain

/// One endpoint of this process's `AppleHealthMonitor`, as the application layer's port.
struct EndpointHealth: AppleAvailability {
    let monitor: AppleHealthMonitor
    let endpoint: AppleHealthMonitor.Endpoint

    func admitting(now: Date) async -> AppleHealth.Admission { await monitor.admitting(endpoint, now: now) }

    func record(answered: Bool, probe: Bool, sentAt: Date, now: Date) async {
        await monitor.record(endpoint, answered: answered, probe: probe, sentAt: sentAt, now: now)
    }

    func delayAfterFailure(sentAt: Date, scheduled: TimeInterval, now: Date, unitRandom: Double) async -> TimeInterval {
        await monitor.delayAfterFailure(endpoint, sentAt: sentAt, scheduled: scheduled, now: now, unitRandom: unitRandom)
    }

    func downSince() -> Date? { monitor.downSince(endpoint) }
}

/// The application layer's name of one of Apple's endpoints, as the monitor keys it.
extension AppleHealthMonitor.Endpoint {
    init(_ name: AppleEndpointName) {
        switch name {
        case .verifyReceipt(let environment): self = .verifyReceipt(environment.storageName)
        case .serverAPI(let environment): self = .serverAPI(environment.storageName)
        }
    }
}
