import AppStoreCrypto
import ArgumentParser
import Foundation
import SwiftASN1
import X509

struct Inspect: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract:
            "Decode an app receipt or StoreKit 2 signed data (JWS, or a notification body) offline and check its signature (Apple's roots, plus any --root)."
    )

    @Argument(help: "File holding a base64 app receipt (or its raw bytes), a compact JWS, or a {\"signedPayload\": …} body.")
    var receiptFile: String
    @Option(help: "Extra trusted root certificate (PEM or DER file); repeatable.") var root: [String] = []
    @Flag(help: "Do not require Apple's marker extensions, nor exactly three certificates in a JWS (Xcode StoreKit test data).")
    var noAppleMarkers = false
    @Flag(help: "Print JSON.") var json = false
    @Flag(help: "JWS: check the chain's validity now (online mode) instead of at signedDate.") var online = false

    func run() async throws {
        guard let raw = FileManager.default.contents(atPath: receiptFile) else { throw ValidationError("cannot read \(receiptFile)") }
        let text = String(decoding: raw, as: UTF8.self)
        if let jws = SignedDataInspection.compactJWS(in: text) {
            let inspection = SignedDataInspection(
                roots: try trustedRoots(), requireAppleMarkers: !noAppleMarkers, online: online)
            let valid = try await inspection.run(jws, json: json)
            if !valid { throw ExitCode(2) }
            return
        }
        // Base64 by the server's rule, else the file's bytes as they are (DER): text with a
        // stray character is not a receipt here either.
        let bytes = AppReceiptParser.strictBase64(text) ?? Array(raw)
        let receipt: AppReceipt
        do {
            receipt = try AppReceiptParser().parse(bytes)
        } catch {
            print("not an app receipt: \(error)")
            throw ExitCode(1)
        }
        let roots = try trustedRoots()
        let at = receipt.creationDate ?? Date()
        let verdict = await ReceiptSignatureVerifier(roots: roots, requireAppleMarkers: !noAppleMarkers).verify(bytes, at: at)
        let report = InspectReport(receipt: receipt, verdict: verdict, checkedAt: at)
        print(json ? try Inspect.prettyJSON(report) : report.text)
        if !verdict.isValid { throw ExitCode(2) }
    }

    /// A certificate file as operators have them: PEM or DER.
    /// What `--json` prints: sorted keys, ISO 8601 dates.
    static func prettyJSON(_ value: some Encodable) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        encoder.dateEncodingStrategy = .iso8601
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    func trustedRoots() throws -> [Certificate] {
        var roots = try ReceiptSignatureVerifier.appleRoots()
        for path in root {
            guard let data = FileManager.default.contents(atPath: path) else { throw ValidationError("cannot read \(path)") }
            roots.append(try CertificateFile.certificate(fileContents: data))
        }
        return roots
    }
}

/// What `inspect` prints.
struct InspectReport: Encodable {
    struct Purchase: Encodable {
        var productId: String?
        var transactionId: String?
        var originalTransactionId: String?
        var quantity: Int?
        var purchaseDate: Date?
        var expiresDate: Date?
        var cancellationDate: Date?
    }

    var receiptType: String?
    var environment: String
    var bundleId: String?
    var applicationVersion: String?
    var originalApplicationVersion: String?
    var creationDate: Date?
    var expirationDate: Date?
    var purchases: [Purchase]
    var signatureValid: Bool
    var signer: String?
    var failures: [String]
    var checkedAt: Date

    init(receipt: AppReceipt, verdict: ReceiptSignatureVerdict, checkedAt: Date) {
        receiptType = receipt.receiptType
        environment = receipt.environment.rawValue
        bundleId = receipt.bundleId
        applicationVersion = receipt.applicationVersion
        originalApplicationVersion = receipt.originalApplicationVersion
        creationDate = receipt.creationDate
        expirationDate = receipt.expirationDate
        purchases = receipt.inAppPurchases.map {
            Purchase(
                productId: $0.productId, transactionId: $0.transactionId, originalTransactionId: $0.originalTransactionId,
                quantity: $0.quantity, purchaseDate: $0.purchaseDate, expiresDate: $0.expiresDate,
                cancellationDate: $0.cancellationDate)
        }
        switch verdict {
        case .valid(let subject):
            signatureValid = true
            signer = subject
            failures = []
        case .invalid(let list):
            signatureValid = false
            signer = nil
            failures = list.map(\.description)
        }
        self.checkedAt = checkedAt
    }

    var text: String {
        let f = Date.ISO8601FormatStyle()
        var lines = [
            "bundle id:      \(bundleId ?? "-")",
            "type:           \(receiptType ?? "-") (\(environment))",
            "app version:    \(applicationVersion ?? "-") (original \(originalApplicationVersion ?? "-"))",
            "created:        \(creationDate.map { f.format($0) } ?? "-")",
            "signature:      \(signatureValid ? "valid" : "INVALID") at \(f.format(checkedAt))\(signer.map { " — signed by \($0)" } ?? "")",
        ]
        lines += failures.map { "  failure:      \($0)" }
        lines.append("purchases:      \(purchases.count)")
        for p in purchases {
            var line = "  \(p.transactionId ?? "-")  \(p.productId ?? "-")  x\(p.quantity ?? 1)  \(p.purchaseDate.map { f.format($0) } ?? "-")"
            if let e = p.expiresDate { line += "  expires \(f.format(e))" }
            if let c = p.cancellationDate { line += "  CANCELLED \(f.format(c))" }
            if let o = p.originalTransactionId, o != p.transactionId { line += "  (original \(o))" }
            lines.append(line)
        }
        return lines.joined(separator: "\n")
    }
}
