import AppStoreCrypto
import AppStoreSimulator
import Crypto
import Foundation
import NIOHTTP1
import SwiftASN1
import TestFixtures
import Testing
import X509

struct ReceiptVector: CustomStringConvertible, Sendable {
    var file: String
    var bundleId: String
    var receiptType: String
    var creationDate: String
    var purchases: Int
    var firstTransactionId: String?
    /// Chain check at the creation date: against Apple's roots, or Xcode's StoreKit test certificate.
    var appleChain: Bool
    var description: String { file }

    static let all: [ReceiptVector] = [
        .init(
            file: "xcode_backyardbirds_empty", bundleId: "com.example.naturelab.backyardbirds.example", receiptType: "Xcode",
            creationDate: "2023-10-19T01:18:54Z", purchases: 0, firstTransactionId: nil, appleChain: false),
        .init(
            file: "xcode_backyardbirds_with_transaction", bundleId: "com.example.naturelab.backyardbirds.example", receiptType: "Xcode",
            creationDate: "2023-10-19T01:45:40Z", purchases: 1, firstTransactionId: "0", appleChain: false),
        .init(
            file: "xcode_cyclemaps_2020", bundleId: "net.zachariadis.cyclemaps", receiptType: "Xcode", creationDate: "2020-07-22T17:33:15Z",
            purchases: 1, firstTransactionId: "0", appleChain: false),
        .init(
            file: "xcode_nutcall_no_orig_purchase_date", bundleId: "com.nutcall.alert", receiptType: "Xcode", creationDate: "2021-04-03T19:38:45Z",
            purchases: 1, firstTransactionId: "0", appleChain: false),
        .init(
            file: "xcode_evermatch_2020", bundleId: "com.flintcast.evermatch", receiptType: "Xcode", creationDate: "2020-09-01T13:58:49Z",
            purchases: 3, firstTransactionId: "57", appleChain: false),
        .init(
            file: "production_getpure_2024", bundleId: "org.getpure.pure-iphone", receiptType: "Production", creationDate: "2024-02-23T17:27:16Z",
            purchases: 4, firstTransactionId: "340001196262039", appleChain: true),
        .init(
            file: "production_cyclemaps_watch_2020", bundleId: "net.zachariadis.cyclemaps", receiptType: "Production",
            creationDate: "2020-09-21T05:35:19Z", purchases: 1, firstTransactionId: "110000822416835", appleChain: true),
        .init(
            file: "sandbox_weeka_g5_2025_known_device", bundleId: "dev.bonzer.weeka.app", receiptType: "ProductionSandbox",
            creationDate: "2025-12-26T18:39:47Z", purchases: 2, firstTransactionId: "2000001092134138", appleChain: true),
        .init(
            file: "sandbox_nutcall_legacy_2020_187iap", bundleId: "com.nutcall.alert", receiptType: "ProductionSandbox",
            creationDate: "2020-05-06T18:28:49Z", purchases: 187, firstTransactionId: "1000000637840752", appleChain: true),
        .init(
            file: "sandbox_pdfify_macos_2020", bundleId: "de.holtwick.mac.PDFify", receiptType: "ProductionSandbox",
            creationDate: "2020-10-30T10:54:04Z", purchases: 0, firstTransactionId: nil, appleChain: true),
        .init(
            file: "sandbox_cliptrace_2025", bundleId: "com.XMCodey.apple.ClipTrace", receiptType: "ProductionSandbox",
            creationDate: "2025-04-30T02:30:31Z", purchases: 1, firstTransactionId: "2000000909538865", appleChain: true),
        .init(
            file: "sandbox_revenuecat_sampleapp_2020", bundleId: "com.revenuecat.sampleapp", receiptType: "ProductionSandbox",
            creationDate: "2020-07-22T17:39:08Z", purchases: 9, firstTransactionId: "1000000692879214", appleChain: true),
        .init(
            file: "sandbox_mbaasy_demo_2015", bundleId: "com.mbaasy.ios.demo", receiptType: "ProductionSandbox", creationDate: "2015-08-13T07:50:46Z",
            purchases: 7, firstTransactionId: "1000000166865231", appleChain: true),
        .init(
            file: "sandbox_belive_2018", bundleId: "com.belive.app.ios", receiptType: "ProductionSandbox", creationDate: "2018-11-13T16:46:31Z",
            purchases: 1, firstTransactionId: "1000000472106082", appleChain: true),
    ]

    func bytes() throws -> [UInt8] {
        let text = String(decoding: try TestPaths.fixture("app_receipts/\(file).b64"), as: UTF8.self)
        return Array(try #require(Data(base64Encoded: text, options: .ignoreUnknownCharacters)))
    }
}

func certificate(_ name: String) throws -> Certificate {
    try Certificate(derEncoded: Array(try TestPaths.fixture("certs/\(name)")))
}

@Suite("app receipts: parsing and signatures offline")
struct AppReceiptTests {
    @Test("Apple's roots shipped in the code have Apple's published SHA-256 fingerprints")
    func rootFingerprints() throws {
        func fingerprint(_ base64: String) -> String {
            let der = Data(base64Encoded: base64, options: .ignoreUnknownCharacters)!
            return SHA256.hash(data: der).map { String(format: "%02X", $0) }.joined(separator: ":")
        }
        #expect(
            fingerprint(AppleRootCertificates.appleIncRoot)
                == "B0:B1:73:0E:CB:C7:FF:45:05:14:2C:49:F1:29:5E:6E:DA:6B:CA:ED:7E:2C:68:C5:BE:91:B5:A1:10:01:F0:24")
        #expect(
            fingerprint(AppleRootCertificates.appleRootCAG2)
                == "C2:B9:B0:42:DD:57:83:0E:7D:11:7D:AC:55:AC:8A:E1:94:07:D3:8E:41:D8:8F:32:15:BC:3A:89:04:44:A0:50")
        #expect(
            fingerprint(AppleRootCertificates.appleRootCAG3)
                == "63:34:3A:BF:B8:9A:6A:03:EB:B5:7E:9B:3F:5F:A7:BE:7C:4F:5C:75:6F:30:17:B3:A8:C4:88:C3:65:3E:91:79")
        #expect(try ReceiptSignatureVerifier.appleRoots().count == 3)
    }

    @Test("every vector receipt parses to the values recorded for it", arguments: ReceiptVector.all)
    func parses(vector: ReceiptVector) throws {
        let receipt = try AppReceiptParser().parse(try vector.bytes())
        #expect(receipt.bundleId == vector.bundleId)
        #expect(receipt.receiptType == vector.receiptType)
        #expect(receipt.creationDate == (try Date.ISO8601FormatStyle().parse(vector.creationDate)))
        #expect(receipt.inAppPurchases.count == vector.purchases)
        #expect(receipt.inAppPurchases.first?.transactionId == vector.firstTransactionId)
        #expect(!receipt.bundleIdDER.isEmpty && !receipt.opaqueValue.isEmpty && receipt.sha1Hash.count == 20)
    }

    @Test("the chain verdict at creation time matches the vectors", arguments: ReceiptVector.all)
    func chains(vector: ReceiptVector) async throws {
        let bytes = try vector.bytes()
        let receipt = try AppReceiptParser().parse(bytes)
        let at = try #require(receipt.creationDate)
        let apple = ReceiptSignatureVerifier(roots: try ReceiptSignatureVerifier.appleRoots())
        let appleVerdict = await apple.verify(bytes, at: at)
        #expect(appleVerdict.isValid == vector.appleChain, "\(appleVerdict)")
        if !vector.appleChain {
            let storeKit = ReceiptSignatureVerifier(roots: [try certificate("StoreKitTestCertificate.cer")], requireAppleMarkers: false)
            let verdict = await storeKit.verify(bytes, at: at)
            #expect(verdict.isValid, "\(verdict)")
        } else {
            // Apple's certificates have expired since: checked today, the chain fails.
            #expect(!(await apple.verify(bytes, at: try Date.ISO8601FormatStyle().parse("2026-11-22T00:00:00Z"))).isValid)
        }
    }

    @Test("the 187-purchase receipt keeps every record's fields")
    func bigReceipt() throws {
        let receipt = try AppReceiptParser().parse(try ReceiptVector.all.first { $0.purchases == 187 }!.bytes())
        #expect(receipt.inAppPurchases.allSatisfy { $0.productId != nil && $0.transactionId != nil && $0.purchaseDate != nil })
        #expect(Set(receipt.inAppPurchases.compactMap(\.transactionId)).count == 187)
    }

    @Test("malformed input is rejected with a reason: truncated, not base64, empty, not CMS, too large, nested too deep")
    func malformed() throws {
        let truncated = String(decoding: try TestPaths.fixture("app_receipts/invalid_truncated_belive.b64"), as: UTF8.self)
        #expect(throws: AppReceiptError.self) { try AppReceiptParser().parse(base64: truncated) }
        #expect(throws: AppReceiptError(.empty, "")) { try AppReceiptParser().parse([]) }
        #expect(throws: AppReceiptError(.malformedEncoding, "")) { try AppReceiptParser().parse(Array("hello".utf8)) }
        let good = try ReceiptVector.all[7].bytes()
        #expect(throws: AppReceiptError.self) { try AppReceiptParser().parse(Array(good.prefix(good.count / 2))) }
        var small = AppReceiptParser.Limits()
        small.maximumBytes = 1000
        #expect(throws: AppReceiptError(.tooLarge, "")) { try AppReceiptParser(limits: small).parse(good) }
        // 200 nested SEQUENCEs with indefinite lengths: refused by the depth limit, quickly.
        let deep = Array(repeating: [UInt8]([0x30, 0x80]), count: 200).flatMap { $0 } + Array(repeating: 0, count: 400)
        #expect(throws: AppReceiptError(.malformedEncoding, "")) { try AppReceiptParser().parse(deep) }
        var fewPurchases = AppReceiptParser.Limits()
        fewPurchases.maximumPurchases = 10
        let big = try ReceiptVector.all.first { $0.purchases == 187 }!.bytes()
        #expect(throws: AppReceiptError(.limitExceeded, "")) { try AppReceiptParser(limits: fewPurchases).parse(big) }
    }

    @Test("forgeries are rejected: altered signature, altered content, wrong root, receipt's own chain, missing markers")
    func forgeries() async throws {
        let vector = ReceiptVector.all.first { $0.file == "sandbox_weeka_g5_2025_known_device" }!
        let bytes = try vector.bytes()
        let at = try #require(try AppReceiptParser().parse(bytes).creationDate)
        let apple = ReceiptSignatureVerifier(roots: try ReceiptSignatureVerifier.appleRoots())
        #expect(await apple.verify(bytes, at: at).isValid)

        // Content altered after signing: change one character of the bundle id inside the payload.
        var content = bytes
        let needle = Array("dev.bonzer.weeka.app".utf8)
        let index = try #require(content.indices.first { content[$0...].starts(with: needle) })
        content[index] = UInt8(ascii: "x")
        guard case .invalid = await apple.verify(content, at: at) else {
            Issue.record("altered content must not verify")
            return
        }
        // Signature altered: the signature octets sit at the end of the structure.
        var signature = bytes
        signature[signature.count - 40] ^= 0xFF
        #expect(!(await apple.verify(signature, at: at)).isValid)
        // A root that did not sign it (the StoreKit test certificate, or Apple's G3).
        let wrongRoot = ReceiptSignatureVerifier(roots: [try certificate("StoreKitTestCertificate.cer")])
        #expect(!(await wrongRoot.verify(bytes, at: at)).isValid)
        // No configured root at all: the certificates inside the receipt are never trusted alone.
        #expect(!(await ReceiptSignatureVerifier(roots: []).verify(bytes, at: at)).isValid)

        // A chain without Apple's markers (the simulator's CA marks its certificates; a plain CA does not).
        let xcode = try ReceiptVector.all[1].bytes()
        let storeKitRoot = try certificate("StoreKitTestCertificate.cer")
        let markersRequired = ReceiptSignatureVerifier(roots: [storeKitRoot], requireAppleMarkers: true)
        let verdict = await markersRequired.verify(xcode, at: try #require(try AppReceiptParser().parse(xcode).creationDate))
        guard case .invalid(let failures) = verdict else {
            Issue.record("a chain without Apple's markers must be refused")
            return
        }
        #expect(failures.description.contains("chain"))
    }

    @Test("the verified-chain cache answers for the same chain only, never for a bad signature or a time outside the chain's validity")
    func chainCache() async throws {
        let bytes = try ReceiptVector.all.first { $0.file == "sandbox_weeka_g5_2025_known_device" }!.bytes()
        let at = try #require(try AppReceiptParser().parse(bytes).creationDate)
        let cache = VerifiedChainCache()
        let apple = ReceiptSignatureVerifier(roots: try ReceiptSignatureVerifier.appleRoots(), chainCache: cache)
        #expect(await apple.verify(bytes, at: at).isValid)
        #expect(cache.count == 1 && cache.hits == 0)
        #expect(await apple.verify(bytes, at: at.addingTimeInterval(3600)).isValid)
        #expect(cache.hits == 1)
        // The signature is checked on every call: a cached chain does not carry a forged receipt.
        var signature = bytes
        signature[signature.count - 40] ^= 0xFF
        #expect(!(await apple.verify(signature, at: at)).isValid)
        #expect(cache.hits == 2)
        // Outside the validated path's validity the cache says nothing and full validation refuses.
        #expect(!(await apple.verify(bytes, at: Date(timeIntervalSince1970: 0))).isValid)
        #expect(!(await apple.verify(bytes, at: at.addingTimeInterval(40 * 365 * 86_400))).isValid)
        #expect(cache.hits == 2)
        // A chain that failed is never remembered.
        let noRoots = ReceiptSignatureVerifier(roots: [], chainCache: VerifiedChainCache())
        #expect(!(await noRoots.verify(bytes, at: at)).isValid)
        #expect(noRoots.chainCache?.count == 0)
    }
}
