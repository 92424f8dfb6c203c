import Hummingbird
import Logging
import ServiceLifecycle

/// The benchmarks' ceiling: a Hummingbird server that reads a POST's body the way Storekeeper's
/// does (collected, up to the same limit) and answers at once (a receipt 202; a retention
/// request a fixed message), and does nothing else. Measured with the same clients and bodies
/// as the real server, in the same run.
enum BareServer {
    /// Runs the server on a free loopback port for the duration of `body`, which gets its address.
    static func with<T: Sendable>(_ body: @Sendable (String) async throws -> T) async throws -> T {
        var logger = Logger(label: "bench.bare")
        logger.logLevel = .error
        let router = Router()
        router.post("v1/receipts") { request, _ -> Response in
            _ = try await request.body.collect(upTo: 1 << 20)
            return Response(status: .accepted, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(string: "{}")))
        }
        router.post("v1/retention/:app") { request, _ -> Response in
            _ = try await request.body.collect(upTo: 1 << 20)
            let answer = #"{"message":{"messageIdentifier":"7f1f5a37-9a53-4e0b-8f5d-000000000001"}}"#
            return Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(string: answer)))
        }
        let (ports, continuation) = AsyncStream.makeStream(of: Int.self)
        let app = Application(
            router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { channel in continuation.yield(channel.localAddress?.port ?? 0) }, logger: logger)
        let group = ServiceGroup(services: [app], gracefulShutdownSignals: [], cancellationSignals: [], logger: logger)
        return try await withThrowingTaskGroup(of: T?.self) { tasks in
            tasks.addTask {
                try await group.run()
                return nil
            }
            var iterator = ports.makeAsyncIterator()
            guard let port = await iterator.next() else { throw CancellationError() }
            let result = try await body("http://127.0.0.1:\(port)")
            await group.triggerGracefulShutdown()
            for try await _ in tasks {}
            return result
        }
    }
}
