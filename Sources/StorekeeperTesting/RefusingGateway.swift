public import AsyncHTTPClient
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import NIOHTTP1
import ServiceLifecycle

/// Stands between a server and the simulator's verifyReceipt, and can be switched off. While off
/// nothing listens on its port, so every connection is refused, as when Apple's host is gone:
/// the simulator's faults all answer, this one does not. Switched on again, it listens on the
/// same port.
public actor RefusingGateway {
    public nonisolated let port: Int
    private let target: String
    private let httpClient: HTTPClient
    private let logger: Logger
    private var running: (group: ServiceGroup, task: Task<Void, any Error>)?

    /// `target`: the simulator's base URL; requests keep their path.
    public static func start(target: String, httpClient: HTTPClient) async throws -> RefusingGateway {
        var logger = Logger(label: "storekeeper.test.gateway")
        logger.logLevel = .warning
        let (group, task, port) = try await serve(port: 0, target: target, httpClient: httpClient, logger: logger)
        let gateway = RefusingGateway(port: port, target: target, httpClient: httpClient, logger: logger)
        await gateway.adopt(group: group, task: task)
        return gateway
    }

    private init(port: Int, target: String, httpClient: HTTPClient, logger: Logger) {
        self.port = port
        self.target = target
        self.httpClient = httpClient
        self.logger = logger
    }

    private func adopt(group: ServiceGroup, task: Task<Void, any Error>) {
        running = (group, task)
    }

    /// verifyReceipt URLs through this gateway.
    public nonisolated var baseURL: String { "http://127.0.0.1:\(port)" }

    /// Stops listening: from now on every connection is refused.
    public func refuse() async {
        guard let running else { return }
        await running.group.triggerGracefulShutdown()
        _ = try? await running.task.value
        self.running = nil
    }

    /// Listens again, on the same port.
    public func accept() async throws {
        guard running == nil else { return }
        let (group, task, _) = try await Self.serve(port: port, target: target, httpClient: httpClient, logger: logger)
        running = (group, task)
    }

    private static func serve(
        port: Int, target: String, httpClient: HTTPClient, logger: Logger
    ) async throws -> (ServiceGroup, Task<Void, any Error>, Int) {
        let router = Router()
        for path in ["/verifyReceipt", "/sandbox/verifyReceipt"] {
            router.post(RouterPath(path)) { request, _ -> Response in
                let body = try await request.body.collect(upTo: 8 * 1024 * 1024)
                var forwarded = HTTPClientRequest(url: target + path)
                forwarded.method = .POST
                forwarded.headers.add(name: "Content-Type", value: "application/json")
                forwarded.body = .bytes(body)
                let answer = try await httpClient.execute(forwarded, timeout: .seconds(120))
                let bytes = try await answer.body.collect(upTo: 16 * 1024 * 1024)
                var headers = HTTPFields()
                if let type = answer.headers.first(name: "Content-Type") { headers[.contentType] = type }
                return Response(status: .init(code: Int(answer.status.code)), headers: headers, body: .init(byteBuffer: bytes))
            }
        }
        let (ports, continuation) = AsyncStream.makeStream(of: Int.self)
        let app = Application(
            router: router, configuration: .init(address: .hostname("127.0.0.1", port: port), serverName: "RefusingGateway"),
            onServerRunning: { channel in continuation.yield(channel.localAddress?.port ?? 0) }, logger: logger)
        let group = ServiceGroup(services: [app], gracefulShutdownSignals: [], cancellationSignals: [], logger: logger)
        let task = Task {
            // A port that cannot be bound ends the run: the wait below then ends too.
            defer { continuation.finish() }
            try await group.run()
        }
        var iterator = ports.makeAsyncIterator()
        guard let bound = await iterator.next() else { throw CancellationError() }
        return (group, task, bound)
    }
}
