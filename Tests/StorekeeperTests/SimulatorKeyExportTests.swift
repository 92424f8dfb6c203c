import AppStoreClient
import AppStoreModels
import AppStoreSimulator
import Crypto
import Foundation
import SimulatorSetup
import StorekeeperServer
import StorekeeperTesting
import TestFixtures
import Testing

/// The In-App Purchase keys a simulator run generates, written for a team's own tools.
@Suite("simulator: generated In-App Purchase keys, exported")
struct SimulatorKeyExportTests {
    @Test("each app without a key gets its own; the exported key, read back as a tool would, is accepted by the simulator's Server API")
    func exported() async throws {
        var apps = DemoConfiguration.configuration().apps
        apps.append(AppConfiguration(id: "second", bundleId: "com.example.second", sharedSecret: "s", apiKey: "second-key-0123456789"))
        SimulatorKeyExport.generateMissing(&apps)
        #expect(apps.map { $0.serverAPI?.keyId } == ["SIMKEY0001", "SIMKEY0002"])
        #expect(apps[0].appAppleId == DemoConfiguration.appAppleId, "the demo app has its Apple id")
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("keys-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let written = try SimulatorKeyExport.write(apps, to: directory)
        let listed = try JSONDecoder().decode(
            [SimulatorKeyExport.Entry].self, from: try Data(contentsOf: URL(fileURLWithPath: directory + "/keys.json")))
        #expect(listed == written && listed.map(\.file) == ["SubscriptionKey_SIMKEY0001.p8", "SubscriptionKey_SIMKEY0002.p8"])
        #expect(listed.first?.appAppleId == DemoConfiguration.appAppleId && listed.first?.bundleId == DemoConfiguration.bundleId)
        let path = directory + "/" + listed[0].file
        let permissions = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
        #expect(permissions == 0o600, "a private key is readable by its owner only")
        let pem = try String(contentsOfFile: path, encoding: .utf8)
        #expect(pem.hasPrefix("-----BEGIN PRIVATE KEY-----"), "PKCS#8, as App Store Connect hands keys out")

        // The simulator knows the public half: a client signing with the exported file is let in.
        let exported = apps[0]
        try await withStack(configure: { $0.apps = [exported] }) { stack in
            let device = try await stack.simulator.createDevice(bundleId: demoBundle, environment: "production")
            let bought = try await stack.simulator.purchase(device: device, productId: "com.example.removeads")
            let client = AppStoreServerAPIClient(
                httpClient: stack.httpClient, endpoints: stack.configuration.serverAPIEndpoints,
                tokens: try ServerAPITokenProvider(
                    credentials: ServerAPICredentials(
                        issuerId: listed[0].issuerId, keyId: listed[0].keyId, bundleId: listed[0].bundleId, privateKeyPEM: pem)))
            let (info, _) = try await client.transactionInfo(bought.transactionId)
            let payload = try jwsPayload(try #require(info.signedTransactionInfo))
            #expect(payload["transactionId"] as? String == bought.transactionId)
            // History and statuses name the app by its Apple id.
            let (history, _) = try await client.transactionHistory(bought.transactionId)
            #expect(history.appAppleId == DemoConfiguration.appAppleId)
        }
    }
}
