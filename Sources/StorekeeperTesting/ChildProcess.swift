import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A real `storekeeper` process (`serve` or `worker`), killable with SIGKILL. Its output goes
/// to a log file that it appends to across restarts, read to learn when it is ready.
public final class ChildProcess {
    public let process: SpawnedProcess
    public let logPath: String
    /// The HTTP address, for processes that serve HTTP.
    public private(set) var baseURL = ""

    /// Starts `binary arguments…` and waits until its log shows `readyMarker` (for `serve`,
    /// "storekeeper listening", whose line carries the port).
    public init(binary: String, arguments: [String], logPath: String, readyMarker: String) async throws {
        self.logPath = logPath
        if !FileManager.default.fileExists(atPath: logPath) { _ = FileManager.default.createFile(atPath: logPath, contents: nil) }
        let before = (try? String(contentsOfFile: logPath, encoding: .utf8))?.count ?? 0
        process = try SpawnedProcess(executable: binary, arguments: arguments, standardOutput: .file(logPath), standardError: .file(logPath))
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline {
            let text = String((try? String(contentsOfFile: logPath, encoding: .utf8))?.dropFirst(before) ?? "")
            if let line = text.split(separator: "\n").first(where: { $0.contains(readyMarker) }) {
                if let range = line.range(of: "http://127.0.0.1:") {
                    baseURL = "http://127.0.0.1:\(line[range.upperBound...].prefix { $0.isNumber })"
                }
                return
            }
            if !process.isRunning { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        terminate()
        throw ChildProcessError(message: "process did not become ready; log:\n\((try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "")")
    }

    /// `storekeeper serve --config <file>` and extra arguments.
    public static func server(binary: String, configPath: String, logPath: String, extra: [String] = []) async throws -> ChildProcess {
        try await ChildProcess(
            binary: binary, arguments: ["serve", "--config", configPath, "--log-level", "info"] + extra, logPath: logPath,
            readyMarker: "storekeeper listening")
    }

    /// `storekeeper worker --config <file>`.
    public static func worker(binary: String, configPath: String, logPath: String) async throws -> ChildProcess {
        try await ChildProcess(
            binary: binary, arguments: ["worker", "--config", configPath, "--log-level", "info"], logPath: logPath,
            readyMarker: "worker ready")
    }

    /// A process never outlives the test or benchmark that started it, even one that failed
    /// before stopping it.
    deinit {
        if process.isRunning { killNine() }
    }

    public func killNine() {
        process.send(SIGKILL)
        process.waitUntilExit()
    }

    public func terminate() {
        guard process.isRunning else { return }
        process.send(SIGTERM)
        process.waitUntilExit()
    }
}

public struct ChildProcessError: Error, CustomStringConvertible {
    public var message: String
    public var description: String { message }

    public init(message: String) { self.message = message }
}
