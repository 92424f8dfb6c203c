import AppStoreClient
import AppStoreSimulator
import Foundation
import GRDB
import JobQueue
import NIOCore
import NIOHTTP1
import Persistence
import StorekeeperDomain
import StorekeeperServer
import StorekeeperTesting
import TestFixtures
import Testing

@testable import StorageSQLite

#if canImport(Glibc)
import Glibc
#endif

/// A plain TCP connection to the server, for clients no HTTP library would be: silent ones and
/// ones that trickle a header a byte at a time.
final class RawConnection {
    let fd: Int32

    init(port: Int) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw ChildProcessError(message: "socket: \(errno)") }
        // NIO's address, not a `sockaddr_in` by hand: see `HostResolver.bytes(of:at:count:)`.
        let connected = try SocketAddress(ipAddress: "127.0.0.1", port: port).withSockAddr { connect(fd, $0, socklen_t($1)) }
        guard connected == 0 else {
            close(fd)
            throw ChildProcessError(message: "connect: \(errno)")
        }
    }

    /// False once the server closed the connection.
    @discardableResult
    func send(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        return bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } == bytes.count
    }

    /// True when the server closed the connection within `seconds` (end of file or a reset);
    /// false when it was still open then. Whatever the server sent before closing is skipped.
    func closedByServer(within seconds: Double) -> Bool {
        let deadline = Date().addingTimeInterval(TimeInterval(seconds))
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let left = Int32(max(0, deadline.timeIntervalSinceNow * 1000))
            var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&entry, 1, left)
            if ready == 0 { return false }
            if ready < 0 { return false }
            let n = recv(fd, &buffer, buffer.count, Int32(MSG_DONTWAIT))
            if n == 0 { return true }
            if n < 0 {
                let error = errno
                if error == EAGAIN || error == EWOULDBLOCK || error == EINTR { continue }
                return error == ECONNRESET
            }
        }
    }

    /// Everything the server sends until it closes the connection (send `Connection: close`).
    func readToEnd(within seconds: Int) -> String {
        var timeout = timeval(tv_sec: seconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = recv(fd, &buffer, buffer.count, 0)
            if n <= 0 { break }
            received += buffer[0..<n]
        }
        return String(decoding: received, as: UTF8.self)
    }

    deinit { close(fd) }
}

/// How a process run to its end ended: on its own, or killed by a signal (a crash).
enum ExitReason {
    case exit, uncaughtSignal
}

/// Runs `storekeeper` to its end and returns its exit status (or signal) and output.
func runToExit(_ binary: String, _ arguments: [String]) throws -> (status: Int32, reason: ExitReason, output: String) {
    let outputPath = FileManager.default.temporaryDirectory.appendingPathComponent("storekeeper-run-\(UUID().uuidString).log").path
    defer { try? FileManager.default.removeItem(atPath: outputPath) }
    let process = try SpawnedProcess(
        executable: binary, arguments: arguments, standardOutput: .file(outputPath), standardError: .file(outputPath))
    let ended = process.waitUntilExit()
    let output = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
    switch ended {
    case .exited(let status): return (status, .exit, output)
    case .signalled(let signal): return (signal, .uncaughtSignal, output)
    }
}

/// A temporary directory with a configuration file for a child `storekeeper serve`.
struct ChildSetup {
    let directory: URL
    let configPath: String
    let logPath: String

    init(_ configuration: StorekeeperConfiguration, name: String) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("storekeeper-\(name)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        configPath = directory.appendingPathComponent("config.json").path
        logPath = directory.appendingPathComponent("server.log").path
        try JSONEncoder().encode(configuration).write(to: URL(fileURLWithPath: configPath))
    }

    var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    /// `storekeeper serve` with `configuration` beside `stack` (its simulator and database) for
    /// the duration of `body`; the server and the stack are stopped however `body` ends.
    static func withServer<T>(
        binary: String, stack: LocalStack, _ configuration: StorekeeperConfiguration, name: String, _ body: (ChildProcess) async throws -> T
    ) async throws -> T {
        let setup = try ChildSetup(configuration, name: name)
        let server = try await ChildProcess.server(binary: binary, configPath: setup.configPath, logPath: setup.logPath)
        do {
            let result = try await body(server)
            server.terminate()
            try await stack.stop()
            return result
        } catch {
            server.terminate()
            try? await stack.stop()
            throw error
        }
    }
}

@Suite("hardening with the real binary: connections, start-up, kill -9, SIGTERM", .serialized)
struct ProcessHardeningTests {
    @Test("more slow connections than the cap: /healthz still answers, idle and trickling connections are closed")
    func slowConnections() async throws {
        let binary = try #require(TestPaths.storekeeperBinary(), "build the executable first: swift build")
        let stack = try await LocalStack.start(startServer: false)
        defer { Task { try? await stack.stop() } }
        var configuration = stack.configuration
        configuration.port = 0
        configuration.maxConnections = 24
        configuration.idleTimeoutSeconds = 1
        configuration.requestTimeoutSeconds = 3
        let setup = try ChildSetup(configuration, name: "connections")
        let server = try await ChildProcess.server(binary: binary, configPath: setup.configPath, logPath: setup.logPath)
        defer { server.terminate() }
        let port = try #require(Int(server.baseURL.split(separator: ":").last ?? ""))

        // Three times the cap, each with an unfinished request head.
        var slow: [RawConnection] = []
        for _ in 0..<72 {
            let connection = try RawConnection(port: port)
            connection.send("GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ")
            slow.append(connection)
        }
        let health = try await HTTPJSONClient(httpClient: stack.httpClient, baseURL: server.baseURL).send(.GET, "/healthz")
        #expect(health.status == 200, "\(health.text)")
        #expect(server.process.isRunning)

        // A silent connection and one trickling a header byte by byte are both closed.
        let silent = try RawConnection(port: port)
        #expect(silent.closedByServer(within: 60), "a silent connection stays open")
        let trickle = try RawConnection(port: port)
        var open = true
        // One byte, then the server's answer awaited on the socket for up to 100 ms (the attack's
        // pace, ended at once by the close it waits for), for at most a minute.
        for _ in 0..<600 where open {
            open = trickle.send("a") && !trickle.closedByServer(within: 0.1)
        }
        #expect(!open, "a connection trickling its request head stayed open for a minute")
        // A body trickled a byte at a time: each byte is activity, but the request has a deadline.
        let slowBody = try RawConnection(port: port)
        // Authenticated, so the route waits for the body instead of answering 401 at once.
        slowBody.send(
            "POST /v1/receipts HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(configuration.apps[0].apiKey)\r\n"
                + "Content-Type: application/json\r\nContent-Length: 1000000\r\n\r\n")
        var bodyOpen = true
        // Paced by the socket as above.
        for _ in 0..<600 where bodyOpen {
            bodyOpen = slowBody.send("a") && !slowBody.closedByServer(within: 0.1)
        }
        #expect(!bodyOpen, "a connection trickling its body stayed open for a minute")
        #expect(slow.allSatisfy { $0.closedByServer(within: 60) })
        #expect(server.process.isRunning)
        #expect(setup.log.contains("maxConnections=24"), "the effective limits are logged")
    }

    @Test("start-up failures print one clear line and exit non-zero, never crash")
    func startupFailures() async throws {
        let binary = try #require(TestPaths.storekeeperBinary(), "build the executable first: swift build")
        let base = LocalStack.testConfiguration(databasePath: LocalStack.temporaryDatabasePath())
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("storekeeper-startup-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        func write(_ configuration: StorekeeperConfiguration, _ name: String) throws -> String {
            let path = directory.appendingPathComponent(name).path
            try JSONEncoder().encode(configuration).write(to: URL(fileURLWithPath: path))
            return path
        }

        // A port in use.
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(listener) }
        _ = try SocketAddress(ipAddress: "127.0.0.1", port: 0).withSockAddr { bind(listener, $0, socklen_t($1)) }
        listen(listener, 1)
        // The port the system chose: bytes 2 and 3 of the bound `sockaddr_in`, big-endian.
        var bound = [UInt8](repeating: 0, count: 16)
        var length = socklen_t(bound.count)
        _ = bound.withUnsafeMutableBytes { getsockname(listener, $0.baseAddress!.assumingMemoryBound(to: sockaddr.self), &length) }
        var busy = base
        busy.port = Int(bound[2]) << 8 | Int(bound[3])

        var directoryAsDatabase = base
        directoryAsDatabase.databasePath = directory.path
        var notADatabase = base
        notADatabase.databasePath = directory.appendingPathComponent("garbage.sqlite").path
        try Data(repeating: 0x41, count: 8192).write(to: URL(fileURLWithPath: notADatabase.databasePath))
        var badKey = base
        badKey.apps[0].serverAPI = ServerAPIKeyConfiguration(issuerId: "i", keyId: "k", privateKeyPEM: "not a key")
        let unparsable = directory.appendingPathComponent("broken.json").path
        try Data("{ not json".utf8).write(to: URL(fileURLWithPath: unparsable))

        let cases: [(String, [String], String)] = [
            ("port in use", ["serve", "--config", try write(busy, "busy.json")], "address already in use"),
            ("database is a directory", ["serve", "--config", try write(directoryAsDatabase, "dir.json")], "database"),
            ("file is not a database", ["serve", "--config", try write(notADatabase, "garbage.json")], "database"),
            ("bad key", ["serve", "--config", try write(badKey, "key.json")], "privateKeyPEM"),
            ("unparsable configuration", ["serve", "--config", unparsable], "invalid configuration"),
            ("missing configuration file", ["serve", "--config", directory.appendingPathComponent("none.json").path], "cannot read"),
        ]
        for (name, arguments, expected) in cases {
            let result = try runToExit(binary, arguments)
            #expect(result.reason == .exit, "\(name): crashed: \(result.output)")
            #expect(result.status != 0, "\(name): exit 0")
            let errorLines = result.output.split(separator: "\n").filter { $0.hasPrefix("Error:") }
            #expect(errorLines.count == 1 && errorLines[0].contains(expected), "\(name): \(result.output)")
        }
    }

    @Test("a refused connection to Apple fails the attempt at once as apple_unreachable; it does not wait out the connect timeout")
    func refusedConnectionFailsFast() async throws {
        let binary = try #require(TestPaths.storekeeperBinary(), "build the executable first: swift build")
        let stack = try await LocalStack.start(
            configuration: LocalStack.testConfiguration(databasePath: LocalStack.temporaryDatabasePath()), startServer: false)
        var child = stack.configuration
        child.port = 0
        // Nobody listens on port 9, so every connection is refused. The connect timeout is
        // longer than the test: a client that kept trying until it would end each attempt as a
        // timeout at the attempt's 30 s deadline, never as unreachable.
        child.appleEndpoints = VerifyReceiptEndpoints(
            production: "http://127.0.0.1:9/verifyReceipt", sandbox: "http://127.0.0.1:9/sandbox/verifyReceipt")
        child.appleTimeouts.connectSeconds = 600
        try await ChildSetup.withServer(binary: binary, stack: stack, child, name: "refused") { server in
            let client = StorekeeperClient(
                http: HTTPJSONClient(httpClient: stack.httpClient, baseURL: server.baseURL), apiKey: stack.api.apiKey,
                adminKey: stack.api.adminKey)
            let device = try await stack.simulator.createDevice(bundleId: demoBundle)
            let purchase = try await stack.simulator.purchase(device: device, productId: "com.example.removeads")
            let reply = try await client.postReceipt(appUserId: "refused", receipt: purchase.receipt)
            let id = try #require(reply.json["id"] as? String, "\(reply.text)")
            #expect(try await eventually { try await stack.store.verification(id: id)?.reason?.rawValue == "apple_unreachable" })
            let record = try await stack.store.verification(id: id)
            #expect(record?.state.isFinal == false, "Apple unreachable is never a verdict")
        }
    }

    @Test("kill -9 with verifications in flight: after restart they resume at once, not after leaseSeconds")
    func killNineResumesAtOnce() async throws {
        let run = try await HungAppleRun(name: "kill9")
        defer { run.finish() }
        let ids = try await run.postWhileAppleHangs(count: 4)
        run.server.killNine()
        try await run.stack.simulator.setFaults(FaultConfiguration())
        try await run.restart()
        // Were the leases left to expire, nothing would be final for an hour.
        for id in ids {
            let final = try await run.client().waitForFinal(id)
            #expect(final["state"] as? String == "verified", "\(final)")
        }
        #expect(run.setup.log.contains("leases of a process that is gone released"))
    }

    @Test("SIGTERM with Apple hung: the process exits after the grace, its jobs go back uncounted and verify after restart")
    func sigtermWithAppleHung() async throws {
        let run = try await HungAppleRun(name: "sigterm") { $0.shutdownGraceSeconds = 1 }
        defer { run.finish() }
        let ids = try await run.postWhileAppleHangs(count: 3)
        run.server.process.send(SIGTERM)
        // Apple would hold these calls for ten minutes; a generous deadline still proves the bound.
        let process = run.server.process
        _ = await ends(Task { _ = await process.exit() }, within: TestWait.seconds)
        #expect(!run.server.process.isRunning, "still running after SIGTERM")
        if run.server.process.isRunning { run.server.killNine() }
        #expect(
            run.server.process.termination == .exited(0), "\(run.setup.log.suffix(2000))")
        for id in ids {
            let record = try #require(try await run.stack.store.verification(id: id))
            #expect(record.state == .retryScheduled && record.attempts == 0, "\(record)")
        }
        try await run.stack.simulator.setFaults(FaultConfiguration())
        try await run.restart()
        for id in ids {
            let final = try await run.client().waitForFinal(id)
            #expect(final["state"] as? String == "verified" && final["attempts"] as? Int == 1, "\(final)")
        }
    }
}

/// A real `storekeeper serve` whose Apple (the in-process simulator) takes ten minutes per call,
/// with leases and attempt timeouts far longer than any test: whatever ends its verifications
/// early is the behaviour under test, not an expiry.
final class HungAppleRun {
    let binary: String
    let stack: LocalStack
    let setup: ChildSetup
    private(set) var server: ChildProcess

    init(name: String, configure: (inout StorekeeperConfiguration) -> Void = { _ in }) async throws {
        binary = try #require(TestPaths.storekeeperBinary(), "build the executable first: swift build")
        var configuration = LocalStack.testConfiguration(databasePath: LocalStack.temporaryDatabasePath())
        configuration.attemptTimeoutSeconds = 600
        configuration.appleTimeouts.readSeconds = 600
        configuration.leaseSeconds = 3600
        configure(&configuration)
        var simulatorConfiguration = LocalStack.simulatorConfiguration(for: configuration)
        simulatorConfiguration.faults.latencyMinMs = 600_000
        simulatorConfiguration.faults.latencyMaxMs = 600_000
        stack = try await LocalStack.start(configuration: configuration, simulator: simulatorConfiguration, startServer: false)
        var child = stack.configuration
        child.port = 0
        setup = try ChildSetup(child, name: name)
        server = try await ChildProcess.server(binary: binary, configPath: setup.configPath, logPath: setup.logPath)
    }

    func client() -> StorekeeperClient {
        StorekeeperClient(
            http: HTTPJSONClient(httpClient: stack.httpClient, baseURL: server.baseURL), apiKey: stack.api.apiKey, adminKey: stack.api.adminKey)
    }

    /// Posts `count` purchases and returns once every verification is waiting on Apple.
    func postWhileAppleHangs(count: Int) async throws -> [String] {
        var ids: [String] = []
        for i in 0..<count {
            let device = try await stack.simulator.createDevice(bundleId: demoBundle)
            let purchase = try await stack.simulator.purchase(device: device, productId: "com.example.removeads")
            let reply = try await client().postReceipt(appUserId: "\(setup.directory.lastPathComponent)-\(i)", receipt: purchase.receipt)
            ids.append(try #require(reply.json["id"] as? String, "\(reply.text)"))
        }
        for id in ids {
            let reached = try await eventually(every: .milliseconds(20)) {
                try await stack.store.verification(id: id)?.state == .verifying
            }
            #expect(reached, "never reached Apple")
        }
        return ids
    }

    func restart() async throws {
        server = try await ChildProcess.server(binary: binary, configPath: setup.configPath, logPath: setup.logPath)
    }

    func finish() {
        server.terminate()
        let stack = stack
        Task { try? await stack.stop() }
    }
}

@Suite("hardening: the database refuses writes")
struct StorageFaultTests {
    @Test("a full database: POST answers 503 storage_unavailable with Retry-After, /healthz reports it, both recover")
    func databaseFull() async throws {
        try await withStack { stack in
            let sqlite = try #require(stack.store as? SQLiteStore)
            let pages = try await sqlite.pool.write { db in try Int.fetchOne(db, sql: "PRAGMA page_count") ?? 0 }
            try await sqlite.pool.write { db in try db.execute(sql: "PRAGMA max_page_count = \(pages)") }
            var refused: HTTPJSONClient.Reply?
            for i in 0..<50 {
                let device = try await stack.simulator.createDevice(bundleId: demoBundle)
                let purchase = try await stack.simulator.purchase(device: device, productId: "com.example.coins100")
                let reply = try await stack.api.postReceipt(appUserId: "full-\(i)", receipt: purchase.receipt)
                if reply.status == 503 {
                    refused = reply
                    break
                }
            }
            let reply = try #require(refused, "the database never filled up")
            #expect(reply.errorCode == "storage_unavailable" && reply.headers["retry-after"] != nil, "\(reply.headers) \(reply.text)")
            let sick = try await stack.api.http.send(.GET, "/healthz")
            #expect(sick.status == 503 && sick.json["database"] as? String == "error", "\(sick.text)")

            try await sqlite.pool.write { db in try db.execute(sql: "PRAGMA max_page_count = 1073741823") }
            let device = try await stack.simulator.createDevice(bundleId: demoBundle)
            let purchase = try await stack.simulator.purchase(device: device, productId: "com.example.removeads")
            let accepted = try await stack.api.postReceipt(appUserId: "after-full", receipt: purchase.receipt, wait: TestWait.seconds)
            #expect([200, 202].contains(accepted.status), "\(accepted.text)")
            let final = try await stack.api.waitForFinal(try #require(accepted.json["id"] as? String))
            #expect(final["state"] as? String == "verified")
            let healthy = try await eventually(every: .milliseconds(100)) {
                try await stack.api.http.send(.GET, "/healthz").status == 200
            }
            #expect(healthy, "/healthz recovers once writes succeed")
        }
    }
}
