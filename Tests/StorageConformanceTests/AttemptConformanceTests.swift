import Foundation
import Persistence
import StorekeeperCore
import StorekeeperDomain
import StorekeeperTesting
import Testing

extension StorageConformanceTests {
    @Test(
        "failed sign-ins: a real operator's lock survives 10,100 made-up names, which lock the same way; wrong admin credentials refill one a second",
        arguments: StoreFactory.all)
    func attemptLimits(factory: StoreFactory) async throws {
        let store = try await make(factory)
        let attempts = CountAttempts(store: store)
        let console = AttemptLimit.consoleSignIn
        for second in 0..<console.maximum {
            try await attempts.record("console:operator reader", limit: console, now: t0 + Double(second))
        }
        let locked = try await attempts.blockedUntil("console:operator reader", limit: console, now: t0 + 10)
        #expect(locked == t0 + Double(console.maximum - 1) + console.window)
        // The flood that once evicted the lock from a bounded table in memory: each made-up name once.
        _ = try await inLanes(0..<10_100, lanes: 32) { index in
            try await attempts.record("console:operator made-up-\(index)", limit: console, now: t0 + 20)
        }
        #expect(try await attempts.blockedUntil("console:operator reader", limit: console, now: t0 + 30) == locked, "the lock stands")
        // A made-up name is locked like a real one (a lockout names no account), and the lock ends on time.
        for _ in 0..<console.maximum { try await attempts.record("console:operator ghost", limit: console, now: t0 + 40) }
        #expect(try await attempts.blockedUntil("console:operator ghost", limit: console, now: t0 + 41) != nil)
        #expect(try await attempts.blockedUntil("console:operator reader", limit: console, now: try #require(locked)) == nil)
        try await attempts.clear("console:operator ghost")
        #expect(try await attempts.blockedUntil("console:operator ghost", limit: console, now: t0 + 42) == nil)

        // Admin credentials: ten at once, then one a second.
        let admin = AttemptLimit.adminCredentials(ratePerSecond: 1)
        for _ in 0..<10 { try await attempts.record("admin:203.0.113.9", limit: admin, now: t0 + 100) }
        #expect(try await attempts.blockedUntil("admin:203.0.113.9", limit: admin, now: t0 + 100) == t0 + 101)
        #expect(try await attempts.blockedUntil("admin:203.0.113.9", limit: admin, now: t0 + 101) == nil)
        #expect(try await attempts.record("admin:203.0.113.9", limit: admin, now: t0 + 101) == t0 + 102)
        #expect(try await attempts.blockedUntil("admin:198.51.100.1", limit: admin, now: t0 + 101) == nil, "per address")
        // Failures older than the horizon are gone: the table does not grow without bound.
        try await attempts.record("admin:198.51.100.1", limit: admin, now: t0 + CountAttempts.horizon + 200)
        #expect(try await store.attempts(key: "console:operator made-up-1", since: t0).isEmpty)
    }
}
