import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import StorekeeperDomain

/// POSTs one signed delivery and reports what happened. The destination is checked again
/// first, on every address its name resolves to now (a name may have been pointed inside since
/// it was registered). Redirects are not followed (the shared client is built without them),
/// the answer is read up to `excerptBytes` and kept only for 2xx, 4xx and 5xx, and every
/// attempt has a deadline.
struct WebhookSender: Sendable {
    let httpClient: HTTPClient
    let timeoutSeconds: Double
    var destinations = WebhookDestinationPolicy()
    var resolver = HostResolver()
    static let excerptBytes = 256

    struct Result: Sendable {
        var outcome: DeliveryOutcome
        var status: Int?
        var error: String?
        var excerpt: String?
        var latencyMs: Int
    }

    /// Why `url` may not be sent to now; nil when every address it reaches is allowed.
    func destinationRefusal(_ url: String) async -> String? {
        guard let host = WebhookDestinationPolicy.host(of: url) else { return "the URL has no host" }
        if let refusal = destinations.refusal(host: host) { return refusal }
        if host.hasPrefix("[") || IPAddress(canonicalIPv4: host) != nil { return nil }
        let name = host.hasSuffix(".") ? String(host.dropLast()) : host
        guard let addresses = try? await resolver.addresses(of: name) else { return nil }  // the connection fails the same way
        for address in addresses { if let refusal = destinations.refusal(address: address) { return "'\(host)' resolves to \(refusal)" } }
        return nil
    }

    func send(url: String, id: String, body: [UInt8], secrets: [String], now: Date) async -> Result {
        if let refusal = await destinationRefusal(url) {
            return Result(
                outcome: .failed(status: nil, retryAfter: nil), status: nil, error: "destination_refused", excerpt: String(refusal.prefix(256)),
                latencyMs: 0)
        }
        let timestamp = Int64(now.timeIntervalSince1970)
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.headers.add(name: "User-Agent", value: "Storekeeper-Webhooks/1")
        request.headers.add(name: "webhook-id", value: id)
        request.headers.add(name: "webhook-timestamp", value: String(timestamp))
        request.headers.add(name: "webhook-signature", value: WebhookSignature.header(id: id, timestamp: timestamp, body: body, secrets: secrets))
        request.body = .bytes(ByteBuffer(bytes: body))
        let started = ContinuousClock.now
        func elapsed() -> Int {
            let duration = started.duration(to: .now)
            return Int(duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000)
        }
        do {
            let response = try await httpClient.execute(request, timeout: .milliseconds(Int64(timeoutSeconds * 1000)))
            var excerpt: [UInt8] = []
            for try await chunk in response.body {
                excerpt += chunk.readableBytesView.prefix(Self.excerptBytes - excerpt.count)
                if excerpt.count >= Self.excerptBytes { break }
            }
            let status = Int(response.status.code)
            let text = String(decoding: excerpt, as: UTF8.self)
            let outcome: DeliveryOutcome =
                switch status {
                case 200..<300: .delivered(status: status)
                case 410: .gone
                default: .failed(status: status, retryAfter: Self.retryAfter(response.headers.first(name: "Retry-After"), now: now))
                }
            let kept = (200..<300).contains(status) || (400..<600).contains(status)
            return Result(outcome: outcome, status: status, error: nil, excerpt: text.isEmpty || !kept ? nil : text, latencyMs: elapsed())
        } catch {
            let reason: String
            if let error = error as? HTTPClientError, error == .deadlineExceeded || error == .readTimeout {
                reason = "timeout"
            } else {
                reason = "connection_failed"
            }
            return Result(outcome: .failed(status: nil, retryAfter: nil), status: nil, error: reason, excerpt: nil, latencyMs: elapsed())
        }
    }

    /// `Retry-After` in seconds, or as an HTTP date.
    static func retryAfter(_ value: String?, now: Date) -> Double? {
        guard let value = value?.trimmingCharacters(in: .whitespaces), !value.isEmpty else { return nil }
        if let seconds = Double(value), seconds.isFinite, seconds >= 0 { return seconds }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(secondsFromGMT: 0)
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        return formatter.date(from: value).map { max(0, $0.timeIntervalSince(now)) }
    }
}
