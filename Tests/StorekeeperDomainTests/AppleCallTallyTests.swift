import Foundation
import StorekeeperDomain
import TestFixtures
import Testing

/// Calls to Apple tallied by minute and read by hour, at fixed instants and latencies.
@Suite("Apple call tallies")
struct AppleCallTallyTests {
    let t0 = referenceTime

    @Test("a latency falls in the first bucket whose bound it does not exceed; past every bound, the open one")
    func buckets() {
        #expect(AppleCallTally.bucket(milliseconds: 0) == 0)
        #expect(AppleCallTally.bucket(milliseconds: 25) == 0)
        #expect(AppleCallTally.bucket(milliseconds: 26) == 1)
        #expect(AppleCallTally.bucket(milliseconds: 30_000) == AppleCallTally.bucketBounds.count - 1)
        #expect(AppleCallTally.bucket(milliseconds: 30_001) == AppleCallTally.bucketBounds.count)
        var tally = AppleCallTally(endpoint: "ocsp", outcome: "http_200", period: t0)
        tally.add(milliseconds: -5)
        #expect(tally.count == 1 && tally.totalMilliseconds == 0 && tally.buckets[0] == 1, "a clock stepping back counts as 0 ms")
    }

    @Test("percentiles by nearest rank, reported as the bound of the bucket the call of that rank is in")
    func percentiles() {
        var tally = AppleCallTally(endpoint: "verify_receipt_production", outcome: "0", period: t0)
        #expect(tally.percentile(0.5) == nil, "no call, no percentile")
        // 100 calls: 90 at 20 ms, 8 at 400 ms, 2 at 45 s.
        for _ in 0..<90 { tally.add(milliseconds: 20) }
        for _ in 0..<8 { tally.add(milliseconds: 400) }
        for _ in 0..<2 { tally.add(milliseconds: 45_000) }
        #expect(tally.count == 100 && tally.totalMilliseconds == 90 * 20 + 8 * 400 + 2 * 45_000)
        #expect(tally.percentile(0.5) == .atMost(25))
        #expect(tally.percentile(0.9) == .atMost(25), "the 90th call is the last at 20 ms")
        #expect(tally.percentile(0.95) == .atMost(500))
        #expect(tally.percentile(0.98) == .atMost(500))
        #expect(tally.percentile(0.99) == .above(30_000))
        #expect(tally.percentile(0.99)?.description == "> 30000 ms" && tally.percentile(0.5)?.description == "≤ 25 ms")
        // One call: every percentile is it.
        var one = AppleCallTally(endpoint: "ocsp", outcome: "http_200", period: t0)
        one.add(milliseconds: 700)
        #expect(one.percentile(0.01) == .atMost(1_000) && one.percentile(1) == .atMost(1_000))
    }

    @Test("minutes and hours start on whole UTC minutes and hours, before 1970 too")
    func periods() {
        let instant = Date(timeIntervalSince1970: 1_767_225_599.999)  // 2025-12-31T23:59:59.999Z
        #expect(AppleCallTally.minute(of: instant) == Date(timeIntervalSince1970: 1_767_225_540))
        #expect(AppleCallTally.hour(of: instant) == Date(timeIntervalSince1970: 1_767_222_000))
        #expect(AppleCallTally.minute(of: Date(timeIntervalSince1970: -0.5)) == Date(timeIntervalSince1970: -60))
    }

    @Test("minutes regroup into hours per endpoint and outcome, newest hour first, sums and histograms added")
    func byHour() {
        let hour = AppleCallTally.hour(of: t0)
        func tally(_ endpoint: String, _ outcome: String, _ at: Date, _ latencies: [Int64]) -> AppleCallTally {
            var tally = AppleCallTally(endpoint: endpoint, outcome: outcome, period: AppleCallTally.minute(of: at))
            for latency in latencies { tally.add(milliseconds: latency) }
            return tally
        }
        let grouped = AppleCallTally.byHour([
            tally("verify_receipt_production", "0", hour, [10, 30]),
            tally("verify_receipt_production", "0", hour + 3_540, [2_000]),
            tally("verify_receipt_production", "http_503", hour + 60, [5]),
            tally("ocsp", "http_200", hour + 3_600, [80]),
        ])
        #expect(
            grouped.map { "\($0.endpoint) \($0.outcome) \($0.count)" } == [
                "ocsp http_200 1", "verify_receipt_production 0 3", "verify_receipt_production http_503 1",
            ])
        #expect(grouped[0].period == hour + 3_600 && grouped[1].period == hour)
        #expect(grouped[1].totalMilliseconds == 2_040 && grouped[1].buckets[0] == 1 && grouped[1].buckets[1] == 1 && grouped[1].buckets[6] == 1)
    }
}
