import Hummingbird
import Logging
import ServiceLifecycle

/// A Hummingbird server on a loopback port of its own, run as a `ServiceGroup` until stopped:
/// what the test servers (webhook receivers, an unanswering Apple) share.
struct LoopbackServer: Sendable {
    let group: ServiceGroup
    let task: Task<Void, any Error>
    let port: Int

    /// Starts `router` on 127.0.0.1 and returns once it listens.
    static func start(_ router: Router<BasicRequestContext>, name: String, logLabel: String) async throws -> LoopbackServer {
        var logger = Logger(label: logLabel)
        logger.logLevel = .warning
        let (ports, continuation) = AsyncStream.makeStream(of: Int.self)
        let app = Application(
            router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0), serverName: name),
            onServerRunning: { channel in continuation.yield(channel.localAddress?.port ?? 0) }, logger: logger)
        let group = ServiceGroup(services: [app], gracefulShutdownSignals: [], cancellationSignals: [], logger: logger)
        let task = Task { try await group.run() }
        var iterator = ports.makeAsyncIterator()
        guard let port = await iterator.next() else { throw CancellationError() }
        return LoopbackServer(group: group, task: task, port: port)
    }

    func stop() async {
        await group.triggerGracefulShutdown()
        _ = try? await task.value
    }
}
