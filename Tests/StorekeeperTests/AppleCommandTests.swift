import AppStoreSimulator
import Foundation
import StorekeeperTesting
import TestFixtures
import Testing

/// `storekeeper apple …`, the real binary against a running server and its simulated Apple:
/// what an operator types, what a script reads back.
@Suite("storekeeper apple: refunds, order, renewal-date extensions from the command line")
struct AppleCommandTests {
    struct Run {
        var status: Int32
        var output: String
        var errors: String
        var json: [String: Any] { (try? JSONSerialization.jsonObject(with: Data(output.utf8))) as? [String: Any] ?? [:] }
    }

    /// Runs the binary to its exit without blocking a thread: the exit is a signal
    /// (`terminationHandler`), its output read from files once it has ended.
    /// Runs `storekeeper <command> <arguments>` (the command `apple` unless named).
    static func run(_ arguments: [String], command: String = "apple", environment: [String: String] = [:]) async throws -> Run {
        let binary = try #require(TestPaths.storekeeperBinary(), "build the executable first: swift build")
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("storekeeper-apple-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let out = directory.appendingPathComponent("out")
        let err = directory.appendingPathComponent("err")
        _ = FileManager.default.createFile(atPath: out.path, contents: nil)
        _ = FileManager.default.createFile(atPath: err.path, contents: nil)
        let process = try SpawnedProcess(
            executable: binary, arguments: [command] + arguments,
            environment: ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("STOREKEEPER_") }.merging(environment) { $1 },
            standardOutput: .file(out.path), standardError: .file(err.path))
        let status: Int32 =
            switch await process.exit() {
            case .exited(let code): code
            case .signalled: -1
            }
        return Run(
            status: status, output: try String(contentsOf: out, encoding: .utf8), errors: try String(contentsOf: err, encoding: .utf8))
    }

    @Test("order, refunds, extend and mass-extend --wait print the server's verified answers; a wrong key or a bad id exits non-zero")
    func commands() async throws {
        try await ServerAPIClientTests.withAPIStack { stack in
            let connection = ["--url", try #require(stack.serverURL), "--app", "demo"]
            let key = ["STOREKEEPER_ADMIN_KEY": stack.api.adminKey]
            let device = try await stack.simulator.createDevice(bundleId: demoBundle, environment: "production")
            let sub = try await stack.simulator.purchase(device: device, productId: "com.example.pro.monthly")
            let coins = try await stack.simulator.purchase(device: device, productId: "com.example.coins100")
            // Apple's clock stops here: no renewal can move the expiry between the reads below,
            // however long a busy machine takes over them (the expiry moves by the extensions alone).
            stack.clock.freeze()

            let order = try await Self.run(["order", sub.originalTransactionId] + connection, environment: key)
            #expect(order.status == 0, "\(order.errors)")
            let transactions = try #require(order.json["transactions"] as? [[String: Any]], "\(order.output)")
            #expect(order.json["valid"] as? Bool == true && transactions.first?["originalTransactionId"] as? String == sub.originalTransactionId)
            let expiryBefore = try #require((transactions.first?["expiresDate"] as? NSNumber)?.int64Value)

            try await stack.simulator.refund(transactionId: coins.transactionId)
            let refunds = try await Self.run(["refunds", coins.transactionId, "--environment", "production"] + connection, environment: key)
            #expect(refunds.status == 0, "\(refunds.errors)")
            let refunded = try #require(refunds.json["refunds"] as? [[String: Any]], "\(refunds.output)")
            #expect(refunded.count == 1 && refunded.first?["transactionId"] as? String == coins.transactionId)

            let identifier = UUID().uuidString
            let extend = try await Self.run(
                ["extend", sub.originalTransactionId, "--days", "5", "--reason", "3", "--request-identifier", identifier] + connection,
                environment: key)
            #expect(extend.status == 0, "\(extend.errors)")
            #expect(extend.json["extended"] as? Bool == true && extend.json["requestIdentifier"] as? String == identifier, "\(extend.output)")

            let mass = try await Self.run(
                ["mass-extend", "com.example.pro.monthly", "--days", "2", "--reason", "1", "--wait", "--poll-seconds", "0.1"] + connection,
                environment: key)
            #expect(mass.status == 0, "\(mass.errors)")
            #expect(mass.json["complete"] as? Bool == true && mass.json["succeededCount"] as? Int == 1, "\(mass.output)")
            let massIdentifier = try #require(mass.json["requestIdentifier"] as? String)
            let status = try await Self.run(["extension-status", "com.example.pro.monthly", massIdentifier] + connection, environment: key)
            #expect(status.status == 0 && status.json["complete"] as? Bool == true, "\(status.output) \(status.errors)")

            // The single extension moved the expiry by 5 days, the mass one by 2 more (in the
            // simulator's days, whatever their length): 7/5 of the first move in all.
            let effective = try #require(extend.json["effectiveDate"] as? String)
            let effectiveDate = try Date(effective, strategy: .iso8601.year().month().day().time(includingFractionalSeconds: true))
            let fiveDays = Int64((effectiveDate.timeIntervalSince1970 * 1000).rounded()) - expiryBefore
            let after = try await Self.run(["order", sub.originalTransactionId] + connection, environment: key)
            let expiryAfter = try #require(((after.json["transactions"] as? [[String: Any]])?.first?["expiresDate"] as? NSNumber)?.int64Value)
            // (The effective date comes back as ISO 8601 text, read here through a `Date`: a
            // millisecond either way, times 7.)
            #expect(fiveDays > 0 && abs((expiryAfter - expiryBefore) * 5 - fiveDays * 7) <= 7, "\(expiryBefore) → +\(fiveDays) → \(expiryAfter)")

            // Refused: the wrong key (the server's 401 on standard error), no key, an id that is
            // not Apple's, an unknown subscription (Apple's 404).
            let wrongKey = try await Self.run(
                ["order", sub.originalTransactionId] + connection, environment: ["STOREKEEPER_ADMIN_KEY": "not-the-key"])
            #expect(wrongKey.status == 1 && wrongKey.errors.contains("HTTP 401") && wrongKey.output.isEmpty, "\(wrongKey.errors)")
            let noKey = try await Self.run(["order", sub.originalTransactionId] + connection)
            #expect(noKey.status != 0 && noKey.errors.contains("STOREKEEPER_ADMIN_KEY"), "\(noKey.errors)")
            let notDigits = try await Self.run(["refunds", "12a4"] + connection, environment: key)
            #expect(notDigits.status != 0 && notDigits.errors.contains("decimal digits"), "\(notDigits.errors)")
            let unknown = try await Self.run(["extend", "999999999999", "--days", "1", "--reason", "0"] + connection, environment: key)
            #expect(unknown.status == 1 && unknown.errors.contains("HTTP 404"), "\(unknown.errors)")
        }
    }
}
