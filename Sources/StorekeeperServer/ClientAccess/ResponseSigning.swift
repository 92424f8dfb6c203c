import Foundation
import Hummingbird
import NIOCore
import StorekeeperErrors
import StorekeeperWire

/// Signs what a route open to apps answers a client that sent `Storekeeper-Nonce`, when its app
/// has a signing key (`ResponseSigner`): the request's body is read here first, so the
/// signature covers exactly what was posted, and the answer's body exactly as sent. An error
/// is never signed: it is thrown past this middleware, and an app must not act on an unsigned
/// answer. Runs after `AppKeyAuthentication`, on every route of `RouteTable.callers`, so no
/// route can answer a client unsigned.
struct ResponseSigning: RouterMiddleware {
    typealias Context = StorekeeperRequestContext

    let signers: [String: ResponseSigner]
    let maxBodyBytes: Int
    let now: @Sendable () -> Date

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard case .caller(.client(let app, _))? = context.admitted, let signer = signers[app.id],
            let nonce = try ResponseSigner.nonce(request)
        else { return try await next(request, context) }
        var request = request
        let posted: ByteBuffer
        do {
            posted = try await request.collectBody(upTo: maxBodyBytes)
        } catch {
            throw StorekeeperError(.payloadTooLarge, "request body exceeds \(maxBodyBytes) bytes")
        }
        var response = try await next(request, context)
        let body = try await Self.collect(response.body)
        response.headers[ResponseSigner.signatureHeader] = try signer.header(
            nonce: nonce, request: request, requestBody: posted, status: Int(response.status.code), body: Array(body.readableBytesView),
            now: now())
        response.body = ResponseBody(byteBuffer: body)
        return response
    }

    /// A route's answer as bytes (every answer to an app is one JSON document).
    static func collect(_ body: ResponseBody) async throws -> ByteBuffer {
        let collected = Collected()
        try await body.write(CollectingWriter(collected: collected))
        return collected.buffer
    }

    private final class Collected { var buffer = ByteBuffer() }

    private struct CollectingWriter: ResponseBodyWriter {
        let collected: Collected

        mutating func write(_ buffer: ByteBuffer) async throws {
            var buffer = buffer
            collected.buffer.writeBuffer(&buffer)
        }

        consuming func finish(_ trailingHeaders: HTTPFields?) async throws {}
    }
}
