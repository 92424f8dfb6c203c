import Hummingbird
import NIOCore

/// The request context of every route: Hummingbird's core, plus the peer's address, which the
/// client gate limits unauthenticated and failed calls by (a flood of bad tokens must not spend
/// the budget that the app's real users share).
struct StorekeeperRequestContext: RequestContext, RemoteAddressRequestContext {
    var coreContext: CoreRequestContextStorage
    let remoteAddress: SocketAddress?

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress
    }
}

/// The calling peer's address for the duration of one request, set by `ErrorMiddleware`
/// (routes authenticate from the request alone and need not pass the context down).
enum RequestSource {
    @TaskLocal static var address: String?
}
