public import Foundation

/// Test data shared by every test target, found from this file's location. A target of its own,
/// with nothing but Foundation, so the pure test targets (domain rules, crypto) do not link the
/// server, the databases and HTTP for it.
public enum TestPaths {
    /// This file is Sources/TestFixtures/TestPaths.swift.
    public static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    /// Fixtures shared by every test target.
    public static let testsDirectory = packageRoot.appendingPathComponent("Tests/StorekeeperTests")

    public static func fixture(_ relative: String) throws -> Data {
        let url = testsDirectory.appendingPathComponent("Fixtures").appendingPathComponent(relative)
        return try Data(contentsOf: url)
    }

    public static func fixtures(in folder: String) -> [String] {
        let dir = testsDirectory.appendingPathComponent("Fixtures").appendingPathComponent(folder)
        return ((try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? []).filter { $0.hasSuffix(".json") }.sorted()
    }
}

/// A fixed instant for pure tests: 2026-01-15T12:00:00Z.
public let referenceTime = Date(timeIntervalSince1970: 1_768_478_400)

/// Apple's milliseconds since 1970, as text.
public func ms(_ date: Date) -> String { String(Int64(date.timeIntervalSince1970 * 1000)) }
