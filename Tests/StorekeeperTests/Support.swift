import AppStoreModels
import Foundation
import StorekeeperDomain

/// Paths of test data and built products, found from this file's location.
enum TestPaths {
    static let testsDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    static let packageRoot = testsDirectory.deletingLastPathComponent().deletingLastPathComponent()

    static func fixture(_ relative: String) throws -> Data {
        let url = testsDirectory.appendingPathComponent("Fixtures").appendingPathComponent(relative)
        return try Data(contentsOf: url)
    }

    static func fixtures(in folder: String) -> [String] {
        let dir = testsDirectory.appendingPathComponent("Fixtures").appendingPathComponent(folder)
        return ((try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? []).filter { $0.hasSuffix(".json") }.sorted()
    }

    /// The `storekeeper` executable built next to the test bundle (`swift build` builds it).
    static func storekeeperBinary() -> String? {
        if let explicit = ProcessInfo.processInfo.environment["STOREKEEPER_BIN"] { return explicit }
        var candidates: [URL] = []
        if let first = CommandLine.arguments.first {
            var url = URL(fileURLWithPath: first)
            for _ in 0..<4 {
                url = url.deletingLastPathComponent()
                candidates.append(url.appendingPathComponent("storekeeper"))
            }
        }
        candidates.append(packageRoot.appendingPathComponent(".build/debug/storekeeper"))
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0.path) }?.path
    }
}

/// A fixed instant for pure tests: 2026-01-15T12:00:00Z.
let referenceTime = Date(timeIntervalSince1970: 1_768_478_400)

func ms(_ date: Date) -> String { String(Int64(date.timeIntervalSince1970 * 1000)) }

extension GrantPlanner {
    /// Planner tests write Apple's answers; the planner reads the evidence they convert into.
    static func plan(_ response: VerifyReceiptResponse, context: GrantContext) -> GrantDecision {
        guard let evidence = PurchaseEvidence(verifyReceipt: response, environment: .sandbox) else {
            return .reject(reason: .appleResponseMissingReceipt)
        }
        return plan(evidence, context: context)
    }
}
