import Foundation

/// Waits until `condition` holds, for what another process does: a child `storekeeper`, or a
/// server seen only through its socket, has no signal this test could await, so the condition
/// is polled every `interval`. The deadline only bounds a failing run (it returns false then);
/// a passing run never reaches it, so a slow machine makes it slower, never wrong. Every wait
/// on an external process in these tests goes through here.
func eventually(
    within seconds: Double, every interval: Duration = .milliseconds(50), _ condition: () async throws -> Bool
) async throws -> Bool {
    let deadline = ContinuousClock.now + .seconds(seconds)
    while true {
        if try await condition() { return true }
        guard ContinuousClock.now < deadline else { return false }
        try await Task.sleep(for: interval)
    }
}
