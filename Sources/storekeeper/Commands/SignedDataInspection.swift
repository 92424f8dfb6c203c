import AppStoreCrypto
import AppStoreModels
import Foundation
import StorekeeperWire
import X509

/// `storekeeper inspect` for StoreKit 2 signed data: verifies the JWS (and, for a notification,
/// its nested transaction and renewal info) and prints header, verdict and payload.
struct SignedDataInspection {
    let verifier: SignedDataVerifier
    let online: Bool

    init(roots: [Certificate], requireAppleMarkers: Bool, online: Bool) {
        verifier = SignedDataVerifier(roots: roots, requireAppleMarkers: requireAppleMarkers)
        self.online = online
    }

    /// The compact JWS in `text`: the text itself, or the `signedPayload` of a notification body.
    static func compactJWS(in text: String) -> String? {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        if trimmed.hasPrefix("ey"), trimmed.split(separator: ".", omittingEmptySubsequences: false).count == 3 { return trimmed }
        struct Body: Decodable { var signedPayload: String }
        return (try? JSONDecoder().decode(Body.self, from: Data(trimmed.utf8)))?.signedPayload
    }

    struct Report: Encodable {
        var kind: String
        var algorithm: String?
        var certificates: Int
        var valid: Bool
        var failures: [String]
        var signedDate: Date?
        var checkedAt: Date
        var payload: JSONValue?
        var nested: [String: Report]
    }

    /// Prints the report; returns whether everything verified.
    func run(_ jws: String, json: Bool) async throws -> Bool {
        let report = try await inspect(jws, depth: 0)
        print(json ? try Inspect.prettyJSON(report) : text(report, indent: ""))
        return report.valid && report.nested.values.allSatisfy(\.valid)
    }

    func inspect(_ jws: String, depth: Int) async throws -> Report {
        let verdict = try await verifier.verify(jws, expecting: .init(), time: online ? .at(Date()) : .signedDate(fallback: Date()))
        let payload = try? verdict.decode(JSONValue.self)
        var report = Report(
            kind: Self.kind(payload), algorithm: verdict.header.alg, certificates: verdict.header.x5c?.count ?? 0,
            valid: verdict.isValid, failures: verdict.failures.map { "\($0.code): \($0)" }, signedDate: verdict.signedDate,
            checkedAt: verdict.validationTime, payload: payload, nested: [:])
        if depth == 0, let notification = try? verdict.decode(NotificationPayload.self) {
            for (name, signed) in [
                ("signedTransactionInfo", notification.data?.signedTransactionInfo), ("signedRenewalInfo", notification.data?.signedRenewalInfo),
            ] {
                guard let signed else { continue }
                report.nested[name] = await nested(signed)
            }
        }
        return report
    }

    /// A nested JWS that cannot even be read is a failure of its own, and so of the whole
    /// notification (the server would not take it either).
    private func nested(_ jws: String) async -> Report {
        do {
            return try await inspect(jws, depth: 1)
        } catch {
            return Report(
                kind: "unreadable", algorithm: nil, certificates: 0, valid: false, failures: ["malformed: \(error)"], signedDate: nil,
                checkedAt: Date(), payload: nil, nested: [:])
        }
    }

    static func kind(_ payload: JSONValue?) -> String {
        guard case .object(let fields) = payload else { return "unknown" }
        if fields["notificationType"] != nil { return "notification (V2)" }
        if fields["transactionId"] != nil { return "transaction" }
        if fields["autoRenewStatus"] != nil || fields["autoRenewProductId"] != nil { return "renewal info" }
        if fields["receiptType"] != nil || fields["appTransactionId"] != nil { return "app transaction" }
        return "signed data"
    }

    func text(_ report: Report, indent: String) -> String {
        var lines = [
            "\(indent)\(report.kind): \(report.valid ? "VALID" : "INVALID") (\(report.algorithm ?? "no alg"), \(report.certificates) certificate(s), checked at \(report.checkedAt))"
        ]
        for failure in report.failures { lines.append("\(indent)  ✗ \(failure)") }
        if let payload = report.payload {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            let body = String(decoding: (try? encoder.encode(payload)) ?? Data(), as: UTF8.self)
            lines += body.split(separator: "\n").map { "\(indent)  \($0)" }
        }
        for (name, nested) in report.nested.sorted(by: { $0.key < $1.key }) {
            lines.append("\(indent)  \(name):")
            lines.append(text(nested, indent: indent + "    "))
        }
        return lines.joined(separator: "\n")
    }
}
