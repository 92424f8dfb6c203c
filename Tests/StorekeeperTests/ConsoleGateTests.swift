import Foundation
import Testing

@testable import StorekeeperServer

/// The console's sign-in guard, at fixed instants: what a flood of made-up names can and cannot
/// do to a real account's lock, and what an unknown name costs.
@Suite("console sign-in guard")
struct ConsoleGateTests {
    static let now = Date(timeIntervalSince1970: 1_790_000_000)

    @Test("a real operator's lock survives 10,100 failed sign-ins under made-up names, which are locked the same way and bounded")
    func lockIsNotFlushed() {
        let gate = ConsoleGate(protected: ["admin key", "operator reader"])
        for second in 0..<ConsoleGate.maximumFailures { gate.recordFailure("operator reader", now: Self.now.addingTimeInterval(Double(second))) }
        let locked = gate.lockedUntil("operator reader", now: Self.now.addingTimeInterval(10))
        #expect(locked != nil)
        // The flood: each made-up name once, after the lock (the finding needed 10,100 of them).
        for index in 0..<(ConsoleGate.capacity + 100) {
            gate.recordFailure("operator made-up-\(index)", now: Self.now.addingTimeInterval(20))
        }
        #expect(gate.lockedUntil("operator reader", now: Self.now.addingTimeInterval(30)) == locked, "the real lock stands")
        // A made-up name is locked like a real one (a lockout names no account)...
        for _ in 0..<ConsoleGate.maximumFailures { gate.recordFailure("operator ghost", now: Self.now.addingTimeInterval(40)) }
        #expect(gate.lockedUntil("operator ghost", now: Self.now.addingTimeInterval(41)) != nil)
        // ...and the lock ends on time for both.
        #expect(gate.lockedUntil("operator reader", now: Self.now.addingTimeInterval(ConsoleGate.lockSeconds + 10)) == nil)
    }

    @Test("an unknown operator is checked against a decoy with the real operators' scrypt parameters, which matches no password")
    func unknownCostsTheSame() throws {
        let encoded = try OperatorPassword.make("correct horse", logN: 10)
        let reader = try #require(ConsoleOperator("reader:read_only:\(encoded)"))
        let decoy = try #require(ConsoleController.decoy(for: ["reader": reader]))
        // The same work: scrypt with N, r and p of the real hash, a salt and hash of its sizes.
        #expect(decoy.logN == reader.password.logN && decoy.blockSize == reader.password.blockSize)
        #expect(decoy.parallelism == reader.password.parallelism)
        #expect(decoy.salt.count == reader.password.salt.count && decoy.hash.count == reader.password.hash.count)
        #expect(decoy.salt != reader.password.salt && decoy.hash != reader.password.hash)
        #expect(!decoy.matches("correct horse") && !decoy.matches(""))
        #expect(reader.password.matches("correct horse"))
        #expect(ConsoleController.decoy(for: [:]) == nil, "no operators: no name to tell apart")
    }
}
