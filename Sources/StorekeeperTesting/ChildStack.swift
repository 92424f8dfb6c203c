public import Foundation
public import StorekeeperServer
import TestFixtures

/// A simulator and a database, with the configuration written for real `storekeeper` processes
/// to run against them (the kill -9 tests): SQLite in a scratch directory, or a fresh
/// PostgreSQL schema. The test starts, kills and restarts the processes; `stack` reads the
/// database and drives the simulator meanwhile.
public struct ChildStack: Sendable {
    public let stack: LocalStack
    public let binary: String
    public let directory: URL
    public let configPath: String
    public let logPath: String

    /// `backend`: `sqlite` or `postgresql`. `configure` adjusts the test configuration (before
    /// the simulator starts, so it sells what the server is told).
    public static func start(
        _ name: String, backend: String, configure: (inout StorekeeperConfiguration) -> Void = { _ in }
    ) async throws -> ChildStack {
        guard let binary = TestPaths.storekeeperBinary() else { throw ChildProcessError(message: "build the executable first: swift build") }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("storekeeper-\(name)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let database =
            backend == "postgresql"
            ? try PostgresTestDatabase.freshURL(prefix: name.filter(\.isLetter)) : directory.appendingPathComponent("db.sqlite").path
        var configuration = LocalStack.testConfiguration(databasePath: database)
        configuration.sqliteSynchronousFull = true
        configure(&configuration)
        let stack = try await LocalStack.start(configuration: configuration, startServer: false)
        var child = stack.configuration
        child.port = 0
        let configPath = directory.appendingPathComponent("config.json").path
        try JSONEncoder().encode(child).write(to: URL(fileURLWithPath: configPath))
        return ChildStack(
            stack: stack, binary: binary, directory: directory, configPath: configPath, logPath: directory.appendingPathComponent("server.log").path)
    }

    /// `storekeeper serve` on this configuration, its log appended across restarts.
    public func server() async throws -> ChildProcess {
        try await ChildProcess.server(binary: binary, configPath: configPath, logPath: logPath)
    }

    /// `storekeeper worker` on this configuration.
    public func worker() async throws -> ChildProcess {
        try await ChildProcess.worker(binary: binary, configPath: configPath, logPath: directory.appendingPathComponent("worker.log").path)
    }

    /// Runs `body` on a started stack and stops it however `body` ends: a test that throws must
    /// not leave the stack's HTTP clients to be deinitialised unshut (AsyncHTTPClient traps
    /// then, taking the whole test run with it).
    public static func run<T>(
        _ name: String, backend: String, configure: (inout StorekeeperConfiguration) -> Void = { _ in },
        _ body: (ChildStack) async throws -> T
    ) async throws -> T {
        let child = try await start(name, backend: backend, configure: configure)
        do {
            let result = try await body(child)
            try await child.stop()
            return result
        } catch {
            try? await child.stop()
            throw error
        }
    }

    /// Stops the simulator and removes the scratch directory.
    public func stop() async throws {
        try await stack.stop()
        try? FileManager.default.removeItem(at: directory)
    }
}
