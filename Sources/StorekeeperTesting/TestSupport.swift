public import Foundation
public import TestFixtures

/// The built product the process tests start.
extension TestPaths {
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

/// How long a test waits for what it awaits: a verification made final under `?wait=` (the
/// server answers on its own signal the moment the job commits), a condition under
/// `eventually`, an HTTP answer. Ten minutes, twenty times the longest such wait seen on a busy
/// machine: a passing run never reaches it, so no test's outcome depends on how fast the machine
/// is; it only turns a run that would hang into a failure that says where.
public enum TestWait {
    public static let seconds: Double = 600
    /// `wait=600`, for a path's query.
    public static var query: String { "wait=\(Int(seconds))" }
}

/// A signal a test waited on did not come within `TestWait.seconds`: the run would have hung.
public struct TestWaitExpired: Error, CustomStringConvertible {
    public var waitingFor: String
    public var description: String { "waited \(Int(TestWait.seconds)) s for \(waitingFor)" }
}

/// Runs `wait` (which returns on a signal) bounded by `TestWait.seconds`: the bound only turns
/// a hang into a failure that names what never came; a passing run never reaches it.
public func withTestWait(_ waitingFor: String, _ wait: @escaping @Sendable () async -> Void) async throws {
    try await withThrowingTaskGroup(of: Bool.self) { group in
        group.addTask {
            await wait()
            return true
        }
        group.addTask {
            try await Task.sleep(for: .seconds(TestWait.seconds))
            return false
        }
        let ended = try await group.next() ?? false
        group.cancelAll()
        if !ended { throw TestWaitExpired(waitingFor: waitingFor) }
    }
}

/// Waits until `condition` holds, for what another process does: a child `storekeeper`, a
/// server seen only through its socket, or a receiver another process posts to has no signal a
/// test could await, so the condition is polled every `interval`. The timeout only bounds a
/// failing run (it returns whether the condition held then); a passing run never reaches it, so
/// a loaded machine makes it slower, never wrong. Every wait on an external process in the
/// tests goes through here.
public func eventually(
    timeout: TimeInterval = TestWait.seconds, every interval: Duration = .milliseconds(50), _ condition: () async throws -> Bool
) async throws -> Bool {
    let deadline = ContinuousClock.now + .seconds(timeout)
    while ContinuousClock.now < deadline {
        if try await condition() { return true }
        try await Task.sleep(for: interval)
    }
    return try await condition()
}

/// `work` for each index, `lanes` at a time, the results in index order. Requests sent through
/// `LocalStack.httpClient` beyond its 256 connections wait in its pool for at most the connect
/// timeout (10 s), which a busy machine exceeds: a test that sends hundreds at once sends them in
/// fewer lanes than that, and the server sees as many at once either way.
public func inLanes<T: Sendable>(
    _ indexes: Range<Int>, lanes: Int = 16, _ work: @escaping @Sendable (Int) async throws -> T
) async throws -> [T] {
    try await withThrowingTaskGroup(of: [(Int, T)].self) { group in
        for lane in 0..<max(1, lanes) {
            group.addTask {
                var out: [(Int, T)] = []
                for i in stride(from: indexes.lowerBound + lane, to: indexes.upperBound, by: max(1, lanes)) { out.append((i, try await work(i))) }
                return out
            }
        }
        return try await group.reduce(into: []) { $0 += $1 }.sorted { $0.0 < $1.0 }.map(\.1)
    }
}
