import AppStoreModels
import Foundation
public import Hummingbird
public import Logging
import NIOCore
import Synchronization

/// The simulator as a real HTTP server: Apple's `/verifyReceipt` at a production and a sandbox
/// path, plus a `/sim` test API to buy, renew, fail billing, refund and inject faults.
public struct SimulatorServer: Sendable {
    public let store: SimulatedAppStore
    public let configuration: SimulatorConfiguration

    public init(configuration: SimulatorConfiguration) throws {
        self.configuration = configuration
        self.store = try SimulatedAppStore(configuration: configuration)
    }

    /// The Hummingbird application; `onRunning` receives the bound port (useful with port 0).
    public func makeApplication(
        logger: Logger, onRunning: @escaping @Sendable (Int) async -> Void = { _ in }
    )
        -> some ApplicationProtocol
    {
        let router = Router()
        addRoutes(to: router)
        return Application(
            router: router,
            configuration: .init(
                address: .hostname(configuration.host, port: configuration.port), serverName: "AppStoreSimulator", backlog: 4096),
            onServerRunning: { channel in await onRunning(channel.localAddress?.port ?? 0) },
            logger: logger)
    }

    func addRoutes(to router: Router<BasicRequestContext>) {
        let store = self.store
        router.post("/verifyReceipt") { request, _ in
            try await Self.verifyReceipt(request, endpoint: .production, store: store)
        }
        router.post("/sandbox/verifyReceipt") { request, _ in
            try await Self.verifyReceipt(request, endpoint: .sandbox, store: store)
        }

        Self.addServerAPIRoutes(to: router, environment: .production, store: store)
        Self.addServerAPIRoutes(to: router.group("sandbox-api"), environment: .sandbox, store: store)

        Self.addControlRoutes(to: router.group("sim"), store: store)
        router.post("/ocsp") { request, _ in
            let body = try await request.body.collect(upTo: 64 * 1024)
            // An outage takes Apple's responder down with verifyReceipt.
            let now = store.now()
            if await store.state.faults.outages.contains(where: { $0.start <= now && now < $0.end }) {
                store.stats.record("ocsp.outage")
                return Self.html(status: .serviceUnavailable)
            }
            let answer = store.ocspResponse(to: Array(body.readableBytesView), now: store.now())
            return Response(
                status: .ok, headers: [.contentType: "application/ocsp-response"], body: .init(byteBuffer: ByteBuffer(bytes: answer)))
        }
    }
}
