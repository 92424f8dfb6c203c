import HTTPTypes
import NIOCore
import NIOHTTP1
import NIOHTTPTypes
import StorekeeperWire

/// Answers a request the HTTP parser refused before any route saw it (request line and headers
/// too large, malformed framing) with the same JSON error every route uses, then closes the
/// connection. Without it the client gets an empty 400 and cannot tell what to fix.
final class HTTPParseErrorHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private let headerLimitBytes: Int
    private let headerFieldLimit: Int
    /// A request head was read and its response is not finished: a parse error now belongs to
    /// that exchange, which the server closes itself.
    private var exchangeOpen = false
    private var answered = false

    init(headerLimitBytes: Int, headerFieldLimit: Int) {
        self.headerLimitBytes = headerLimitBytes
        self.headerFieldLimit = headerFieldLimit
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .head = unwrapInboundIn(data) { exchangeOpen = true }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data) { exchangeOpen = false }
        context.write(data, promise: promise)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard let parseError = error as? HTTPParserError, !exchangeOpen, !answered else {
            context.fireErrorCaught(error)
            return
        }
        answered = true
        let (status, code, message): (HTTPResponse.Status, ErrorCode, String) =
            parseError == .headerOverflow
            ? (
                ErrorCode.headersTooLarge.status, .headersTooLarge,
                "request headers exceed \(headerLimitBytes) bytes or \(headerFieldLimit) fields"
            )
            : (.badRequest, .invalidRequest, "malformed HTTP request: \(parseError)")
        let body = StorekeeperError.errorBody(code: code.name, message: message)
        let head = HTTPResponse(
            status: status, headerFields: [.contentType: "application/json", .contentLength: String(body.count), .connection: "close"])
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        context.write(wrapOutboundOut(.body(ByteBuffer(bytes: body))), promise: nil)
        let closing = context.eventLoop.makePromise(of: Void.self)
        let channel = context.channel
        closing.futureResult.whenComplete { _ in channel.close(promise: nil) }
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: closing)
    }
}
