import AsyncHTTPClient
import Crypto
import Foundation
import NIOCore
import NIOHTTP1
import StorekeeperDomain
import SwiftASN1
import Synchronization
import X509

/// Asks OCSP responders over HTTP for the signed-data verifier, and keeps each answer for a
/// while per certificate (keyed by the request's CertID, not its nonce), so a steady stream of
/// transactions costs no responder round trip. `responderOverride` sends every request to one
/// URL instead of the certificate's (a proxy, or the simulator's `/ocsp`).
final class HTTPOCSPRequester: OCSPRequester {
    let httpClient: HTTPClient
    let responderOverride: String?
    let cacheSeconds: Double
    let timeoutSeconds: Double
    /// swift-certificates lets a non-terminal error pass even in hard-fail mode: unreachable
    /// responders are reported as terminal when the policy is hard-fail.
    let hardFail: Bool
    /// While the responder is down, requests are not sent (one probe at a time is): each would
    /// otherwise hold a purchase's POST for the whole timeout. The failure mode then decides,
    /// as for an unreachable responder.
    let health: AppleHealthMonitor?
    /// Each request sent (not those answered from the cache) is tallied for the health page.
    let calls: AppleCallRecorder?
    private let cache = Mutex<[Data: (bytes: [UInt8], expires: Date)]>([:])

    struct ResponderError: Error, CustomStringConvertible {
        var description: String
    }

    /// The server's clock: cached answers expire on it, so a test moving the clock expires them.
    let now: @Sendable () -> Date

    init(
        httpClient: HTTPClient, responderOverride: String?, cacheSeconds: Double, timeoutSeconds: Double, hardFail: Bool,
        health: AppleHealthMonitor? = nil, calls: AppleCallRecorder? = nil, now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.now = now
        self.calls = calls
        self.health = health
        self.httpClient = httpClient
        self.responderOverride = responderOverride
        self.cacheSeconds = cacheSeconds
        self.timeoutSeconds = timeoutSeconds
        self.hardFail = hardFail
    }

    private func failure(_ description: String) -> OCSPRequesterQueryResult {
        hardFail ? .terminalError(ResponderError(description: description)) : .nonTerminalError(ResponderError(description: description))
    }

    func query(request: [UInt8], uri: String) async -> OCSPRequesterQueryResult {
        let key = Self.certIDKey(request)
        let now = self.now()
        if let key, let cached = cache.withLock({ $0[key] }), cached.expires > now { return .response(cached.bytes) }
        var probe = false
        switch await health?.admitting(.ocsp, now: now) ?? .call {
        case .call: break
        case .probe: probe = true
        case .wait(let until):
            return failure("OCSP responder down; not asked until \(until) (one probe at a time)")
        }
        let started = ContinuousClock.now
        let (result, answered, outcome) = await send(request, uri: uri, key: key, now: now)
        calls?.record(endpoint: .ocsp, outcome: outcome, elapsed: ContinuousClock.now - started, at: self.now())
        await health?.record(.ocsp, answered: answered, probe: probe, sentAt: now, now: self.now())
        return result
    }

    /// One request to the responder; `answered` when it gave an OCSP answer (a refusal inside
    /// the answer counts: the responder is up).
    private func send(
        _ request: [UInt8], uri: String, key: Data?, now: Date
    ) async -> (OCSPRequesterQueryResult, answered: Bool, outcome: String) {
        var http = HTTPClientRequest(url: responderOverride ?? uri)
        http.method = .POST
        http.headers.add(name: "Content-Type", value: "application/ocsp-request")
        http.body = .bytes(ByteBuffer(bytes: request))
        do {
            let response = try await httpClient.execute(http, timeout: .milliseconds(Int64(timeoutSeconds * 1000)))
            let body = try await response.body.collect(upTo: 1024 * 1024)
            guard response.status == .ok else {
                return (failure("OCSP responder answered HTTP \(response.status.code)"), response.status.code < 500, "http_\(response.status.code)")
            }
            let bytes = Array(body.readableBytesView)
            if let key {
                cache.withLock { cache in
                    if cache.count >= 1024 { cache.removeAll(keepingCapacity: true) }
                    cache[key] = (bytes, now.addingTimeInterval(cacheSeconds))
                }
            }
            return (.response(bytes), true, "http_200")
        } catch let error as HTTPClientError where error == .deadlineExceeded || error == .readTimeout || error == .connectTimeout {
            return (failure("OCSP responder did not answer in time: \(error)"), false, "timeout")
        } catch {
            return (failure("OCSP responder unreachable: \(error)"), false, "connection_failed")
        }
    }

    /// SHA-256 of the first CertID in a DER OCSPRequest (which certificate is asked about).
    static func certIDKey(_ request: [UInt8]) -> Data? {
        func children(_ node: ASN1Node?) -> [ASN1Node]? {
            guard let node, case .constructed(let nodes) = node.content else { return nil }
            return Array(nodes)
        }
        guard let root = try? DER.parse(request), let tbs = children(root)?.first,
            let list = children(tbs)?.first(where: { $0.identifier == .sequence }), let first = children(list)?.first,
            let certID = children(first)?.first
        else { return nil }
        return Data(SHA256.hash(data: Array(certID.encodedBytes)))
    }
}
