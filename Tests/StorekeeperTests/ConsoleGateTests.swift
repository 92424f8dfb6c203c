import Foundation
import Testing

@testable import StorekeeperServer

/// The console's sign-in guard: what an unknown name costs. (What a flood of made-up names can
/// and cannot do to a real account's lock: `StorageConformanceTests.attemptLimits`, on both
/// databases.)
@Suite("console sign-in guard")
struct ConsoleGateTests {

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
