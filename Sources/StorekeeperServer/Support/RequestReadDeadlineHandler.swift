import NIOCore
import NIOHTTPTypes

/// Bounds the time to receive one request, head to end of body. The idle timeout alone does not:
/// every body part counts as activity, so a client trickling a 1 MB body a byte at a time would
/// hold its connection for days, and enough of them would hold every connection the server has.
/// When the deadline passes with the request still arriving, the connection is closed.
final class RequestReadDeadlineHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart

    private let deadline: TimeAmount
    private var scheduled: Scheduled<Void>?

    init(deadline: TimeAmount) { self.deadline = deadline }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head:
            scheduled?.cancel()
            let channel = context.channel
            scheduled = context.eventLoop.scheduleTask(in: deadline) { channel.close(promise: nil) }
        case .end:
            scheduled?.cancel()
            scheduled = nil
        case .body:
            break
        }
        context.fireChannelRead(data)
    }

    func channelInactive(context: ChannelHandlerContext) {
        scheduled?.cancel()
        scheduled = nil
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        scheduled?.cancel()
        scheduled = nil
    }
}
