import Foundation
import StorekeeperServer
import StorekeeperTesting

#if canImport(Glibc)
import Glibc
#endif

/// The server under measurement as real `storekeeper` processes apart from the benchmark's, so
/// `/proc` tells the server's CPU time from the simulator's and the load generator's (issue
/// #50, item 2). The benchmark keeps the simulator, the load and a store handle it only reads.
struct ServerProcesses {
    let directory: URL
    let configPath: String
    let binary: String
    private(set) var children: [ChildProcess] = []

    /// Writes `configuration` (listening on a free port) for the processes to start from, in
    /// `directory` (a new temporary one by default) beside their logs.
    init(configuration: StorekeeperConfiguration, label: String, directory: URL? = nil) throws {
        self.directory = directory ?? FileManager.default.temporaryDirectory.appendingPathComponent("storekeeper-\(label)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: self.directory, withIntermediateDirectories: true)
        configPath = self.directory.appendingPathComponent("config.json").path
        var child = configuration
        child.port = 0
        try JSONEncoder().encode(child).write(to: URL(fileURLWithPath: configPath))
        // `storekeeper`, from the directory this benchmark binary was built into.
        binary =
            URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
            .appendingPathComponent("storekeeper").path
    }

    /// `storekeeper serve` with `extra` arguments, ready (its `baseURL` known).
    mutating func serve(_ name: String, extra: [String] = []) async throws -> ChildProcess {
        let process = try await ChildProcess.server(binary: binary, configPath: configPath, logPath: log(name), extra: extra)
        children.append(process)
        return process
    }

    /// `storekeeper worker`, ready.
    @discardableResult
    mutating func worker(_ name: String) async throws -> ChildProcess {
        let process = try await ChildProcess.worker(binary: binary, configPath: configPath, logPath: log(name))
        children.append(process)
        return process
    }

    var pids: [Int32] { children.map(\.process.pid) }

    /// SIGTERM to each, waiting for each to exit (graceful shutdown, as in production).
    func stop() { children.forEach { $0.terminate() } }

    private func log(_ name: String) -> String { directory.appendingPathComponent("\(name).log").path }
}
