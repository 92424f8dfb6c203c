import HTTPTypes
import Hummingbird
import Logging
import ServiceLifecycle
import Synchronization

/// A real HTTP server on a loopback port that takes every request, notes its method and path,
/// and answers none until it is stopped: the far end of a call whose answer was lost after the
/// request arrived. A client's own timeout ends each call; `stop()` releases the held handlers
/// first, so shutting down never waits on them.
public final class UnansweringServer: Sendable {
    private struct State {
        var requests: [String] = []
        var held: [CheckedContinuation<Void, Never>] = []
        var released = false
    }

    private let state = Mutex(State())
    private let server: LoopbackServer
    /// `http://127.0.0.1:<port>`, with no path.
    public let baseURL: String

    /// Each request taken so far, as `METHOD /path`.
    public var requests: [String] { state.withLock { $0.requests } }

    public static func start() async throws -> UnansweringServer {
        let box = Mutex<UnansweringServer?>(nil)
        let router = Router()
        for method in [HTTPRequest.Method.get, .put, .post] {
            router.on("**", method: method) { request, _ -> Response in
                guard let server = box.withLock({ $0 }) else { return Response(status: .serviceUnavailable) }
                await server.hold("\(request.method.rawValue) \(request.uri.path)")
                return Response(status: .serviceUnavailable)
            }
        }
        let loopback = try await LoopbackServer.start(router, name: "UnansweringServer", logLabel: "storekeeper.test.unanswering")
        let server = UnansweringServer(baseURL: "http://127.0.0.1:\(loopback.port)", server: loopback)
        box.withLock { $0 = server }
        return server
    }

    private init(baseURL: String, server: LoopbackServer) {
        self.baseURL = baseURL
        self.server = server
    }

    private func hold(_ request: String) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let resumeNow = state.withLock { state -> Bool in
                state.requests.append(request)
                if state.released { return true }
                state.held.append(continuation)
                return false
            }
            if resumeNow { continuation.resume() }
        }
    }

    public func stop() async {
        let held = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.released = true
            defer { state.held = [] }
            return state.held
        }
        for continuation in held { continuation.resume() }
        await server.stop()
    }
}
