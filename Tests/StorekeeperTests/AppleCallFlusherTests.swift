import Foundation
import Logging
import Persistence
import StorekeeperCore
import StorekeeperDomain
import StorekeeperTesting
import TestFixtures
import Testing

@testable import StorekeeperServer

/// Each process tallies its calls to Apple in memory and flushes them; the store sums the fleet.
@Suite("Calls to Apple, tallied per process and kept")
struct AppleCallFlusherTests {
    let t0 = referenceTime

    func flusher(_ recorder: AppleCallRecorder, _ store: any StorekeeperStore) -> AppleCallFlusher {
        AppleCallFlusher(recorder: recorder, history: AppleCallHistory(store: store), logger: Logger(label: "test"), now: { referenceTime })
    }

    @Test("two processes' flushes add up; a flush empties the process's tallies, and the read sees each call once", arguments: StoreFactory.all)
    func flushes(factory: StoreFactory) async throws {
        let store = try await factory.make()
        let (first, second) = (AppleCallRecorder(), AppleCallRecorder())
        first.record(endpoint: .verifyReceipt("production"), outcome: "0", elapsed: .milliseconds(120), at: t0)
        first.record(endpoint: .verifyReceipt("production"), outcome: "0", elapsed: .milliseconds(80), at: t0 + 59)
        first.record(endpoint: .ocsp, outcome: "timeout", elapsed: .seconds(5), at: t0 + 61)
        second.record(endpoint: .verifyReceipt("production"), outcome: "0", elapsed: .milliseconds(700), at: t0 + 30)
        #expect(first.unflushed().count == 2, "two minutes of verifyReceipt are one tally; OCSP another")
        #expect(await flusher(first, store).flush() && first.unflushed().isEmpty)
        #expect(await flusher(first, store).flush(), "nothing to flush is no write and no failure")
        // The second process has not flushed: its call is read from its memory, once.
        let history = AppleCallHistory(store: store)
        let read = try await second.exclusively { try await history.hours(since: t0, unflushed: second.unflushed) }
        let verify = try #require(read.first { $0.endpoint == "verify_receipt_production" })
        #expect(verify.all.count == 3 && verify.all.totalMilliseconds == 900 && verify.all.percentile(1) == .atMost(1_000))
        #expect(await flusher(second, store).flush())
        let stored = try await store.appleCalls(since: .distantPast)
        #expect(stored.map(\.count).reduce(0, +) == 4)
        #expect(stored.first { $0.endpoint == "verify_receipt_production" }?.count == 3)
    }

    @Test("past the limit of distinct tallies between flushes, calls count under `other`: memory stays bounded")
    func bounded() {
        let recorder = AppleCallRecorder()
        for status in 0..<(AppleCallRecorder.maximumPending + 50) {
            recorder.record(endpoint: .verifyReceipt("production"), outcome: "\(status)", elapsed: .milliseconds(1), at: t0)
        }
        let tallies = recorder.unflushed()
        #expect(tallies.count == AppleCallRecorder.maximumPending + 1)
        #expect(tallies.first { $0.outcome == "other" }?.count == 50)
    }

    @Test("a flush that could not write puts its tallies back, added to the calls made since")
    func restored() {
        let recorder = AppleCallRecorder()
        recorder.record(endpoint: .ocsp, outcome: "http_200", elapsed: .milliseconds(10), at: t0)
        let drained = recorder.drain()
        recorder.record(endpoint: .ocsp, outcome: "http_200", elapsed: .milliseconds(30), at: t0)
        recorder.restore(drained)
        #expect(recorder.unflushed().map(\.count) == [2] && recorder.unflushed().first?.totalMilliseconds == 40)
    }
}
