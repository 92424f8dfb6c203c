import AppStoreModels
import Foundation
import Hummingbird
import Logging
import NIOCore
import Synchronization

extension SimulatorServer {
    // MARK: verifyReceipt with faults

    static func verifyReceipt(_ request: Request, endpoint: AppStoreEnvironment, store: SimulatedAppStore) async throws -> Response {
        let body = try await request.body.collect(upTo: 8 * 1024 * 1024)
        let faults = await store.state.faults
        let now = store.now()
        let env = endpoint.storageName
        if faults.outages.contains(where: { $0.start <= now && now < $0.end }) {
            store.stats.record("\(env).outage")
            return html(status: .serviceUnavailable)
        }
        if faults.latencyMaxMs > 0 {
            let ms = Int.random(in: faults.latencyMinMs...max(faults.latencyMinMs, faults.latencyMaxMs))
            try await Task.sleep(for: .milliseconds(ms))
        }
        var roll = Double.random(in: 0..<1)
        func hit(_ rate: Double) -> Bool {
            if roll < rate { return true }
            roll -= rate
            return false
        }
        if hit(faults.status21005Rate) {
            store.stats.record("\(env).fault.21005")
            return json(VerifyReceiptResponse(status: .serverUnavailable, environment: endpoint))
        }
        if hit(faults.http500Rate) {
            store.stats.record("\(env).fault.500")
            return html(status: .internalServerError)
        }
        if hit(faults.http503Rate) {
            store.stats.record("\(env).fault.503")
            return html(status: .serviceUnavailable)
        }
        if hit(faults.http429Rate) {
            store.stats.record("\(env).fault.429")
            return Response(status: .tooManyRequests, headers: [.retryAfter: "1"])
        }
        if hit(faults.html200Rate) {
            store.stats.record("\(env).fault.html200")
            return html(status: .ok)
        }
        if hit(faults.hangRate) {
            store.stats.record("\(env).fault.hang")
            try await Task.sleep(for: .seconds(faults.hangSeconds))
            // Apple recovered while the request hung (every fault was cleared meanwhile): the
            // request is answered, as a slow request to a recovering service is. Otherwise a
            // test clearing the faults races the hangs still in flight.
            guard await store.state.faults.isClear else { return html(status: .serviceUnavailable) }
        }
        let response = await store.verifyReceipt(body: Array(buffer: body), endpoint: endpoint, now: store.now())
        store.stats.record("\(env).status.\(response.status.rawValue)")
        return json(response)
    }
}
