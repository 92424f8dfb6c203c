public import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import ServiceLifecycle
import Synchronization

/// A real HTTP receiver for webhook tests and benchmarks, on a loopback port of its own. It
/// records every request (headers and body) and answers as told: 2xx, an error status (with an
/// optional `Retry-After`), 410, or slowly.
public final class WebhookReceiver: Sendable {
    public struct Received: Sendable {
        public var id: String
        public var timestamp: String
        public var signature: String
        public var body: Data
        public var path: String

        /// The JSON body as an object.
        public var json: [String: Any] { (try? JSONSerialization.jsonObject(with: body)) as? [String: Any] ?? [:] }
    }

    public enum Behaviour: Sendable, Equatable {
        case accept
        /// Answer `status`, with `Retry-After: retryAfter` when given.
        case fail(status: Int, retryAfter: String? = nil)
        case gone
        /// Record the request, then wait this long before answering 200 (a receiver that is slow,
        /// or past the server's attempt deadline: a time-out after the request arrived).
        case slow(seconds: Double)
    }

    private let state = Mutex<(received: [Received], behaviour: Behaviour)>(([], .accept))
    /// Tests waiting for a count (`receivedAtLeast`), resumed by the request that reaches it.
    private let waiters = Mutex<[UUID: (count: Int, continuation: CheckedContinuation<Bool, Never>)]>([:])
    private let server: LoopbackServer
    public let url: String

    public var received: [Received] { state.withLock { $0.received } }
    /// How many requests were accepted, without copying them (the bench polls it).
    public var receivedCount: Int { state.withLock { $0.received.count } }

    public func behave(_ behaviour: Behaviour) { state.withLock { $0.behaviour = behaviour } }

    public static func start() async throws -> WebhookReceiver {
        let box = Mutex<WebhookReceiver?>(nil)
        let router = Router()
        router.post("/hook") { request, _ -> Response in
            let body = try await request.body.collect(upTo: 4 * 1024 * 1024)
            let headers = request.headers
            func header(_ name: String) -> String { HTTPField.Name(name).flatMap { headers[$0] } ?? "" }
            let received = Received(
                id: header("webhook-id"), timestamp: header("webhook-timestamp"), signature: header("webhook-signature"),
                body: Data(body.readableBytesView), path: request.uri.path)
            guard let receiver = box.withLock({ $0 }) else { return Response(status: .serviceUnavailable) }
            let behaviour = receiver.state.withLock { state -> Behaviour in
                switch state.behaviour {
                case .accept, .slow: state.received.append(received)
                case .fail, .gone: break
                }
                return state.behaviour
            }
            receiver.signal()
            switch behaviour {
            case .accept: return Response(status: .ok, body: .init(byteBuffer: ByteBuffer(string: "{\"ok\":true}")))
            case .fail(let status, let retryAfter):
                var fields = HTTPFields()
                if let retryAfter { fields[.retryAfter] = retryAfter }
                return Response(status: .init(code: status), headers: fields, body: .init(byteBuffer: ByteBuffer(string: "failing on purpose")))
            case .gone: return Response(status: .gone)
            case .slow(let seconds):
                try await Task.sleep(for: .milliseconds(Int64(seconds * 1000)))
                return Response(status: .ok)
            }
        }
        let server = try await LoopbackServer.start(router, name: "WebhookReceiver", logLabel: "storekeeper.test.receiver")
        let receiver = WebhookReceiver(url: "http://127.0.0.1:\(server.port)/hook", server: server)
        box.withLock { $0 = receiver }
        return receiver
    }

    private init(url: String, server: LoopbackServer) {
        self.url = url
        self.server = server
    }

    /// Waits until at least `count` requests were recorded: told by the request that records
    /// the last of them, not polled. False only when `timeout` (the bound that turns a hang into
    /// a failure) passed first.
    public func receivedAtLeast(_ count: Int, timeout: TimeInterval = TestWait.seconds) async -> Bool {
        let id = UUID()
        return await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                await withTaskCancellationHandler {
                    await withCheckedContinuation { continuation in
                        guard !Task.isCancelled else { return continuation.resume(returning: false) }
                        self.waiters.withLock { $0[id] = (count, continuation) }
                        self.signal()
                    }
                } onCancel: {
                    self.waiters.withLock { $0.removeValue(forKey: id) }?.continuation.resume(returning: false)
                }
            }
            group.addTask {
                try? await Task.sleep(for: .seconds(timeout))
                return false
            }
            let first = await group.next() ?? false
            group.cancelAll()
            return first || receivedCount >= count
        }
    }

    /// Resumes every waiter whose count is reached.
    private func signal() {
        let count = receivedCount
        let ready = waiters.withLock { waiting in
            let ids = waiting.filter { $0.value.count <= count }.map(\.key)
            return ids.compactMap { waiting.removeValue(forKey: $0)?.continuation }
        }
        for continuation in ready { continuation.resume(returning: true) }
    }

    public func stop() async {
        await server.stop()
    }
}
