import AppStoreCrypto
import AppStoreSimulator
import Crypto
import Foundation
import NIOHTTP1
import StorekeeperTesting
import SwiftASN1
import Testing
import X509

@Suite("simulator receipts verify offline")
struct SimulatorReceiptTests {
    @Test("the simulator's receipts parse with the server's parser and verify against its test root")
    func simulatorReceipts() async throws {
        try await withStack { stack in
            let pem = try await stack.simulator.http.send(.GET, "/sim/pki/root.pem")
            let root = try Certificate(pemEncoded: pem.text)
            let device = try await stack.simulator.createDevice(bundleId: demoBundle, environment: "production")
            _ = try await stack.simulator.purchase(device: device, productId: "com.example.coins100")
            let purchase = try await stack.simulator.purchase(device: device, productId: "com.example.pro.monthly")
            let bytes = Array(try #require(Data(base64Encoded: purchase.receipt)))
            let receipt = try AppReceiptParser().parse(bytes)
            #expect(receipt.bundleId == demoBundle && receipt.environment == .production)
            #expect(receipt.inAppPurchases.map(\.productId) == ["com.example.coins100", "com.example.pro.monthly"])
            #expect(receipt.inAppPurchases.last?.transactionId == purchase.transactionId)
            #expect(receipt.inAppPurchases.last?.expiresDate != nil)
            let verdict = await ReceiptSignatureVerifier(roots: [root]).verify(bytes, at: try #require(receipt.creationDate))
            #expect(verdict.isValid, "\(verdict)")
            // Apple's roots do not vouch for the simulator.
            #expect(!(await ReceiptSignatureVerifier(roots: try ReceiptSignatureVerifier.appleRoots()).verify(bytes, at: Date())).isValid)
        }
    }
}

@Suite("simulator certificates")
struct SimulatorCertificateTests {
    @Test("every name in the chain is within RFC 5280's bounds (a common name of at most 64 characters)")
    func nameLengths() throws {
        let pki = try SimulatorPKI()
        for certificate in [pki.root, pki.intermediate, pki.leaf] {
            for name in [certificate.subject, certificate.issuer] {
                for attribute in name.flatMap({ $0 }) where attribute.type == .RDNAttributeType.commonName {
                    let text = String(describing: attribute.value)
                    #expect(!text.isEmpty && text.count <= 64, "\(text) has \(text.count) characters")
                }
            }
        }
    }
}
