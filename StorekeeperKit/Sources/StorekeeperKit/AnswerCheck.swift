import Crypto
import Foundation

/// Checks `Storekeeper-Signature` on an answer (docs/CLIENTS.md): a pinned key named by
/// `kid`, the nonce this request sent, the path it asked for, the body it posted (by digest),
/// the status, a recent `ts`, and the answer's body byte for byte. An answer that fails is
/// treated as not received.
struct AnswerCheck: Sendable {
    let keys: [String: P256.Signing.PublicKey]
    let tolerance: TimeInterval

    static func nonce() -> String {
        Data((0..<24).map { _ in UInt8.random(in: 0...255) }).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    static func digest(_ requestBody: Data?) -> String {
        SHA256.hash(data: requestBody ?? Data()).map { String(format: "%02x", $0) }.joined()
    }

    /// Verifies the answer to a request just made; returns the signature's time. That time is
    /// not held against this device's clock: the nonce already proves the answer is to this
    /// request, and a device whose clock is wrong, or set back, must not call a genuine answer
    /// forged (the time is the server's, and judges kept answers instead: `isAhead`).
    @discardableResult
    func verify(_ answer: ServerAnswer, nonce: String, method: String, target: String, requestBody: Data?) throws -> Date {
        try verifySignature(answer, nonce: nonce, method: method, target: target, requestDigest: Self.digest(requestBody))
    }

    /// Whether an answer kept on disk was signed ahead of this device's clock by more than the
    /// tolerance: the clock was set back, which would stretch how long it may be shown offline.
    func isAhead(_ signed: Date, of now: Date) -> Bool {
        signed.timeIntervalSince(now) > tolerance
    }

    /// The signature alone, for an answer kept on disk and checked again at every load (its
    /// age is the caller's to judge from the signed time this returns).
    func verifySignature(_ answer: ServerAnswer, nonce: String, method: String, target: String, requestDigest: String) throws -> Date {
        guard let header = answer.headers["storekeeper-signature"], header.hasPrefix("v2,") else {
            throw StorekeeperKitError(.forgedAnswer, "the answer is not signed")
        }
        var fields: [String: String] = [:]
        for part in header.split(separator: ",").dropFirst() {
            let pair = part.split(separator: "=", maxSplits: 1).map(String.init)
            if pair.count == 2 { fields[pair[0]] = pair[1] }
        }
        guard let kid = fields["kid"], let key = keys[kid] else { throw StorekeeperKitError(.forgedAnswer, "signed by a key not pinned") }
        guard let ts = fields["ts"], let seconds = Int64(ts) else {
            throw StorekeeperKitError(.forgedAnswer, "the signature has no time")
        }
        guard let raw = fields["sig"].flatMap({ Data(base64Encoded: $0) }),
            let signature = try? P256.Signing.ECDSASignature(rawRepresentation: raw)
        else { throw StorekeeperKitError(.forgedAnswer, "the signature is unreadable") }
        let message =
            Data("storekeeper-response-v2\n\(nonce)\n\(method) \(target)\n\(requestDigest)\n\(answer.status)\n\(ts)\n\(kid)\n".utf8)
            + answer.body
        guard key.isValidSignature(signature, for: message) else {
            throw StorekeeperKitError(.forgedAnswer, "the signature does not match this request and body")
        }
        return Date(timeIntervalSince1970: TimeInterval(seconds))
    }
}
