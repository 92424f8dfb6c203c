public import Foundation

/// Paths of test data and built products, found from this file's location.
public enum TestPaths {
    /// This file is Sources/StorekeeperTesting/TestSupport.swift.
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

    /// The `storekeeper` executable built next to the test bundle (`swift build` builds it).
    public static func storekeeperBinary() -> String? {
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
public let referenceTime = Date(timeIntervalSince1970: 1_768_478_400)

public func ms(_ date: Date) -> String { String(Int64(date.timeIntervalSince1970 * 1000)) }

/// Whether `task` ends within `deadline` seconds: a watchdog for a wait that must end on an
/// event, not a measurement. The deadline is far longer than the event takes on any machine and
/// far shorter than the wait's own timeout, so it only tells an ended wait from one still
/// waiting. A task still running at the deadline is cancelled and left to end on its own.
public func ends(_ task: Task<Void, Never>, within deadline: Double) async -> Bool {
    let (outcomes, continuation) = AsyncStream.makeStream(of: Bool.self)
    let watcher = Task {
        await task.value
        continuation.yield(true)
    }
    let timer = Task {
        try? await Task.sleep(for: .seconds(deadline))
        continuation.yield(false)
    }
    var iterator = outcomes.makeAsyncIterator()
    let ended = await iterator.next() ?? false
    timer.cancel()
    if !ended { task.cancel() }
    _ = watcher
    return ended
}

/// Polls `condition` every 50 ms until it holds or `timeout` passes; returns whether it held.
/// The timeout is a deadline for an outcome, not a measurement: generous, so that a loaded
/// machine only makes a passing test slower, and reached only when the test fails.
public func eventually(timeout: TimeInterval = 60, _ condition: () async throws -> Bool) async throws -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
        if try await condition() { return true }
        try await Task.sleep(for: .milliseconds(50))
    }
    return try await condition()
}
