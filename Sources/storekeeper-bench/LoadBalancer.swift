import ArgumentParser
import Foundation
import StorekeeperTesting

/// HAProxy from the distribution, run with deploy/haproxy/haproxy.cfg as shipped: only the
/// addresses are this run's.
struct LoadBalancer {
    let process: SpawnedProcess
    let baseURL: String

    /// Starts it in the foreground (`-db`) on a free port and waits until a request through it
    /// reaches a Storekeeper process (`answers`: its `/healthz` says 200).
    static func start(
        executable: String, configuration: String, backends: [String], directory: URL, answers: (String) async -> Bool
    ) async throws -> LoadBalancer {
        let port = try freePort()
        var environment = ProcessInfo.processInfo.environment
        environment["STOREKEEPER_LISTEN"] = "127.0.0.1:\(port)"
        environment["STOREKEEPER_HAPROXY_DIR"] = URL(fileURLWithPath: configuration).deletingLastPathComponent().path
        for (index, backend) in backends.enumerated() {
            environment["STOREKEEPER_API_\(index + 1)"] = backend.replacingOccurrences(of: "http://", with: "")
        }
        let log = directory.appendingPathComponent("haproxy.log").path
        let process = try SpawnedProcess(
            executable: executable, arguments: ["-db", "-f", configuration], environment: environment, standardOutput: .file(log),
            standardError: .file(log))
        let baseURL = "http://127.0.0.1:\(port)"
        for _ in 0..<200 {
            guard process.isRunning else { break }
            if await answers(baseURL) { return LoadBalancer(process: process, baseURL: baseURL) }
            try await Task.sleep(for: .milliseconds(100))
        }
        process.send(SIGTERM)
        throw ValidationError("HAProxy did not start; see \(log)")
    }

    private static func freePort() throws -> Int {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(socket) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socket, $0, length) == 0 && getsockname(socket, $0, &length) == 0 }
        }
        guard bound else { throw ValidationError("no free port") }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
