public import Foundation
public import Persistence
public import StorekeeperDomain

/// Every process's calls to Apple, tallied by endpoint, outcome and minute (`AppleCallTally`):
/// each process adds what it tallied since its last flush; the health page reads them by hour,
/// with this process's calls not yet flushed added, so what it shows is current here.
public struct AppleCallHistory: Sendable {
    let store: any OperationsStore

    public init(store: any OperationsStore) {
        self.store = store
    }

    /// Adds a process's tallies; tallies older than `AppleCallTally.keptSeconds` go.
    public func add(_ tallies: [AppleCallTally], now: Date) async throws {
        try await store.addAppleCalls(tallies, keptSince: now.addingTimeInterval(-AppleCallTally.keptSeconds))
    }

    /// One endpoint in one hour: how many calls, how they ended, and their latency.
    public struct Hour: Sendable, Hashable {
        public var hour: Date
        public var endpoint: String
        /// Every outcome's tally, most calls first (ties by name).
        public var outcomes: [AppleCallTally]
        /// The outcomes added together: the latency of every call, however it ended.
        public var all: AppleCallTally
    }

    /// The hours from the one containing `since`, newest first, endpoints by name; `unflushed`:
    /// this process's tallies not yet in the store, asked after the store is read.
    public func hours(since: Date, unflushed: () -> [AppleCallTally] = { [] }) async throws -> [Hour] {
        let from = AppleCallTally.hour(of: since)
        let stored = try await store.appleCalls(since: from)
        return Self.hours(stored + unflushed().filter { $0.period >= from })
    }

    static func hours(_ tallies: [AppleCallTally]) -> [Hour] {
        var grouped: [AppleCallTally.Key: Hour] = [:]
        for tally in AppleCallTally.byHour(tallies) {
            let key = AppleCallTally.Key(endpoint: tally.endpoint, outcome: "", period: tally.period)
            grouped[
                key,
                default: Hour(
                    hour: tally.period, endpoint: tally.endpoint, outcomes: [],
                    all: AppleCallTally(endpoint: tally.endpoint, outcome: "all", period: tally.period))
            ]
            .outcomes.append(tally)
            grouped[key]?.all.add(tally)
        }
        return grouped.values.map { hour in
            var hour = hour
            hour.outcomes.sort { ($0.count, $1.outcome) > ($1.count, $0.outcome) }
            return hour
        }.sorted { ($0.hour, $1.endpoint) > ($1.hour, $0.endpoint) }
    }
}
