import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One HTTP answer, headers with lower-case names.
public struct ServerAnswer: Sendable {
    public var status: Int
    public var headers: [String: String]
    public var body: Data

    public init(status: Int, headers: [String: String], body: Data) {
        self.status = status
        self.headers = headers
        self.body = body
    }
}

/// How StorekeeperKit reaches the server; URLSession unless a test puts something between.
public protocol ServerTransport: Sendable {
    func send(_ request: URLRequest) async throws -> ServerAnswer
}

/// URLSession, through its completion-handler API (the same on Apple platforms and Linux). A
/// cancelled caller cancels the request, so a deadline the SDK sets ends it at once.
public struct URLSessionTransport: ServerTransport {
    let session: URLSession

    public init(session: URLSession = .shared) {
        self.session = session
    }

    public func send(_ request: URLRequest) async throws -> ServerAnswer {
        let running = RunningRequest()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let task = session.dataTask(with: request) { data, response, error in
                    if let error { return continuation.resume(throwing: error) }
                    guard let http = response as? HTTPURLResponse else {
                        return continuation.resume(throwing: URLError(.badServerResponse))
                    }
                    var headers: [String: String] = [:]
                    for (name, value) in http.allHeaderFields {
                        if let name = name as? String, let value = value as? String { headers[name.lowercased()] = value }
                    }
                    continuation.resume(returning: ServerAnswer(status: http.statusCode, headers: headers, body: data ?? Data()))
                }
                running.start(task)
            }
        } onCancel: {
            running.cancel()
        }
    }
}

/// The data task of one `send`, cancelled whether the cancellation comes before or after it
/// started. (A lock, not `Mutex`: the SDK runs on iOS 16.)
private final class RunningRequest: @unchecked Sendable {
    private let lock = NSLock()
    private var task: URLSessionDataTask?
    private var cancelled = false

    func start(_ task: URLSessionDataTask) {
        let cancelled = lock.withLock {
            self.task = task
            return self.cancelled
        }
        task.resume()
        if cancelled { task.cancel() }
    }

    func cancel() {
        let task = lock.withLock {
            cancelled = true
            return self.task
        }
        task?.cancel()
    }
}
