import AppStoreModels
import Foundation

/// Every V2 notification the simulated App Store created, with its delivery attempts (Apple's
/// notification history), and the deliveries still to make. Delivery faults on demand: lose a
/// notification, deliver it twice, or hold it back until the one after it was delivered.
actor NotificationOutbox {
    struct Item: Sendable {
        var uuid: String
        var bundleId: String
        var environment: AppStoreEnvironment
        var type: String
        var subtype: String? = nil
        var transactionId: String?
        var originalTransactionId: String?
        var signedPayload: String
        var createdAt: Date
        var attempts: [NotificationHistoryItem.SendAttempt] = []
        var delivered = false
    }

    struct Delivery: Sendable {
        var uuid: String
        var due: Date
        /// Attempts already made for this delivery (indexes the retry schedule).
        var attempt: Int
    }

    /// Delivery faults for the next notifications, counted down as they are used.
    struct Faults: Codable, Sendable, Equatable {
        /// Lose the next N: recorded as NO_RESPONSE in the history, never delivered nor retried.
        var drop: Int = 0
        /// Deliver the next N twice.
        var duplicate: Int = 0
        /// Hold the next N back and deliver them after the notification that follows them.
        var reorder: Int = 0
        /// Hold the next N back until released (`POST /sim/notifications/release`): a test that
        /// needs a notification late, after the server finished the work of those after it,
        /// says when, instead of hoping a fixed delay is enough on a busy machine.
        var hold: Int = 0

        init() {}

        init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            drop = max(0, try c.decodeIfPresent(Int.self, forKey: .drop) ?? 0)
            duplicate = max(0, try c.decodeIfPresent(Int.self, forKey: .duplicate) ?? 0)
            reorder = max(0, try c.decodeIfPresent(Int.self, forKey: .reorder) ?? 0)
            hold = max(0, try c.decodeIfPresent(Int.self, forKey: .hold) ?? 0)
        }
    }

    private(set) var items: [Item] = []
    private var index: [String: Int] = [:]
    private var queue: [Delivery] = []
    private var held: [String] = []
    /// Held until released (`Faults.hold`), oldest first.
    private var parked: [String] = []
    /// Deliveries taken and not yet finished.
    private var inFlight = 0
    var faults = Faults()

    /// Deliveries still to make: queued (retries too), held back, or under way.
    var pendingDeliveries: Int { queue.count + held.count + parked.count + inFlight }

    func setFaults(_ faults: Faults) { self.faults = faults }

    /// Whether a delivery is under way, due at `now`, or a first one not yet made (a duplicate or
    /// a reordered one is sent moments after the others). A retry, on Apple's schedule of hours,
    /// is work too while time runs (`retriesToCome`: it comes due by itself); on a frozen clock
    /// it waits for the test to move time.
    func hasWork(now: Date, retriesToCome: Bool) -> Bool {
        inFlight > 0 || queue.contains { $0.due <= now || $0.attempt == 0 || retriesToCome }
    }

    /// Records a new notification and schedules its delivery, applying the pending faults.
    func add(_ item: Item, now: Date) {
        index[item.uuid] = items.count
        items.append(item)
        if faults.drop > 0 {
            faults.drop -= 1
            items[items.count - 1].attempts.append(.init(attemptDate: millis(now), sendAttemptResult: "NO_RESPONSE"))
            return
        }
        if faults.hold > 0 {
            faults.hold -= 1
            parked.append(item.uuid)
            return
        }
        if faults.reorder > 0 {
            faults.reorder -= 1
            held.append(item.uuid)
            return
        }
        queue.append(Delivery(uuid: item.uuid, due: now, attempt: 0))
        if faults.duplicate > 0 {
            faults.duplicate -= 1
            queue.append(Delivery(uuid: item.uuid, due: now.addingTimeInterval(0.05), attempt: 0))
        }
        // What was held back goes after this one: the receiver sees them out of order.
        for (offset, uuid) in held.enumerated() {
            queue.append(Delivery(uuid: uuid, due: now.addingTimeInterval(0.3 + 0.05 * Double(offset)), attempt: 0))
        }
        held.removeAll()
    }

    /// Schedules every notification held until released, in the order they were made; how many.
    func releaseParked(now: Date) -> Int {
        defer { parked.removeAll() }
        for uuid in parked { queue.append(Delivery(uuid: uuid, due: now, attempt: 0)) }
        return parked.count
    }

    /// Deliveries due at `now`, oldest first, removed from the queue: at most as many as keep
    /// `concurrency` under way (Apple does not open thousands of connections to one server).
    func takeDue(now: Date, concurrency: Int = .max) -> [(Delivery, Item)] {
        let room = max(0, concurrency - inFlight)
        guard room > 0 else { return [] }
        let due = Array(queue.enumerated().filter { $0.element.due <= now }.prefix(room))
        guard !due.isEmpty else { return [] }
        let taken = Set(due.map(\.offset))
        queue = queue.enumerated().filter { !taken.contains($0.offset) }.map(\.element)
        let deliveries = due.map(\.element)
        inFlight += deliveries.count
        return deliveries.compactMap { delivery in index[delivery.uuid].map { (delivery, items[$0]) } }
    }

    /// Records an attempt; a failed one is retried on the schedule while it lasts.
    func finished(_ delivery: Delivery, result: String, at now: Date, retryDelays: [Double]) {
        inFlight -= 1
        guard let position = index[delivery.uuid] else { return }
        items[position].attempts.append(.init(attemptDate: millis(now), sendAttemptResult: result))
        if result == "SUCCESS" {
            items[position].delivered = true
        } else if delivery.attempt < retryDelays.count {
            queue.append(Delivery(uuid: delivery.uuid, due: now.addingTimeInterval(retryDelays[delivery.attempt]), attempt: delivery.attempt + 1))
        }
    }

    /// Every notification of one app and environment, oldest first (the Server API filters
    /// them for its notification history).
    func history(bundleId: String, environment: AppStoreEnvironment) -> [Item] {
        items.filter { $0.bundleId == bundleId && $0.environment == environment }
    }

    func item(_ uuid: String) -> Item? { index[uuid].map { items[$0] } }

    private func millis(_ date: Date) -> Int64 { Int64((date.timeIntervalSince1970 * 1000).rounded()) }
}
