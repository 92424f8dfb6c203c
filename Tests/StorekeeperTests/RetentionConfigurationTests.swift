import AppStoreModels
import AppStoreSimulator
import Foundation
import NIOHTTP1
import SimulatorSetup
import StorekeeperServer
import StorekeeperTesting
import Testing

/// Apple's Retention Messaging configuration, through the operator routes: test → Storekeeper →
/// the simulator's Retention Messaging API, whose answers are Apple's documented ones.
@Suite("retention messaging: Apple's configuration, through the admin routes")
struct RetentionConfigurationTests {
    static let base = "/v1/admin/apps/demo/retention"
    static let fullImage = "0b6f2d0e-5c1e-4d3a-9f6e-00000000000a"
    static let bulletImage = "0b6f2d0e-5c1e-4d3a-9f6e-00000000000b"
    static let message = "0b6f2d0e-5c1e-4d3a-9f6e-0000000000c1"
    static let rejectedMessage = "0b6f2d0e-5c1e-4d3a-9f6e-0000000000c2"

    static func withConfigurationStack<T>(_ body: (LocalStack) async throws -> T) async throws -> T {
        try await withStack(
            configure: { $0.apps[0].serverAPI = .generated() },
            configureSimulator: {
                // A test judges the answers, not the machine's speed: the threshold is a minute.
                $0.retentionPerformanceTest = RetentionPerformanceTestConfig(
                    maxConcurrentRequests: 5, totalRequests: 20, totalDuration: 60_000, responseTimeThreshold: 60_000, successRateThreshold: 95)
            }, body)
    }

    static func admin(_ stack: LocalStack, _ extra: [String: String] = [:]) -> [String: String] {
        ["Authorization": "Bearer \(stack.api.adminKey)"].merging(extra) { $1 }
    }

    /// A PNG's signature, IHDR (`colourType` 2: RGB, 6: RGB with alpha) and IEND, with their CRCs.
    static func png(width: UInt32, height: UInt32, colourType: UInt8 = 2) -> Data {
        func chunk(_ type: String, _ payload: [UInt8]) -> [UInt8] {
            let typed = Array(type.utf8) + payload
            return bigEndian(UInt32(payload.count)) + typed + bigEndian(crc32(typed))
        }
        func bigEndian(_ value: UInt32) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: value >> (24 - 8 * $0)) } }
        let header = bigEndian(width) + bigEndian(height) + [8, colourType, 0, 0, 0]
        return Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + chunk("IHDR", header) + chunk("IEND", []))
    }

    static func crc32(_ bytes: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
        }
        return ~crc
    }

    func upload(_ stack: LocalStack, _ id: String, _ image: Data, size: String, type: String = "image/png") async throws -> HTTPJSONClient.Reply {
        try await stack.api.http.send(
            .PUT, "\(Self.base)/images/\(id)?environment=sandbox&imageSize=\(size)", headers: Self.admin(stack, ["Content-Type": type]), body: image)
    }

    @Test("images and messages: uploaded, listed, checked as Apple checks them, refused when in use or not approved")
    func imagesAndMessages() async throws {
        try await Self.withConfigurationStack { stack in
            let http = stack.api.http
            #expect(try await upload(stack, Self.fullImage, Self.png(width: 3840, height: 400), size: "FULL_SIZE").status == 200)
            #expect(try await upload(stack, Self.bulletImage, Self.png(width: 64, height: 64), size: "BULLET_POINT").status == 200)
            let again = try await upload(stack, Self.fullImage, Self.png(width: 3840, height: 400), size: "FULL_SIZE")
            #expect(again.status == 422 && again.errorCode == "apple_rejected" && again.text.contains("4090000"), "\(again.text)")
            let transparent = try await upload(
                stack, "0b6f2d0e-5c1e-4d3a-9f6e-00000000000d", Self.png(width: 3840, height: 400, colourType: 6), size: "FULL_SIZE")
            #expect(transparent.status == 422 && transparent.text.contains("4000161"), "\(transparent.text)")
            let tooNarrow = try await upload(stack, "0b6f2d0e-5c1e-4d3a-9f6e-00000000000e", Self.png(width: 1920, height: 400), size: "FULL_SIZE")
            #expect(tooNarrow.status == 422 && tooNarrow.text.contains("4000216"), "\(tooNarrow.text)")
            let notPNG = try await upload(stack, "0b6f2d0e-5c1e-4d3a-9f6e-00000000000f", Data("GIF89a".utf8), size: "FULL_SIZE")
            #expect(notPNG.status == 400 && notPNG.errorCode == "invalid_request", "\(notPNG.text)")
            let jpeg = try await upload(stack, Self.fullImage, Self.png(width: 3840, height: 400), size: "FULL_SIZE", type: "image/jpeg")
            #expect(jpeg.status == 415, "\(jpeg.text)")
            let badSize = try await upload(stack, Self.fullImage, Self.png(width: 3840, height: 400), size: "HUGE")
            #expect(badSize.status == 400, "\(badSize.text)")

            let malformed = try await http.send(.DELETE, "\(Self.base)/images/not-a-uuid?environment=sandbox", headers: Self.admin(stack))
            #expect(malformed.status == 400 && malformed.errorCode == "invalid_request", "\(malformed.text)")

            let images = try await http.send(.GET, "\(Self.base)/images?environment=sandbox", headers: Self.admin(stack))
            let listed = (images.json["images"] as? [[String: Any]]) ?? []
            #expect(images.json["environment"] as? String == "sandbox" && listed.count == 2, "\(images.text)")
            #expect(listed.allSatisfy { $0["imageState"] as? String == "APPROVED" })
            #expect(Set(listed.compactMap { $0["imageSize"] as? String }) == ["FULL_SIZE", "BULLET_POINT"])
            let production = try await http.send(.GET, "\(Self.base)/images?environment=production", headers: Self.admin(stack))
            #expect((production.json["images"] as? [Any])?.isEmpty == true, "the sandbox's images are not production's")

            let body: [String: Any] = [
                "header": "Before you go", "body": "Your plan keeps every feature you use.", "headerPosition": "ABOVE_IMAGE",
                "image": ["imageIdentifier": Self.fullImage, "altText": "A chart of your progress"],
                "bulletPoints": [["text": "Sync on every device", "imageIdentifier": Self.bulletImage, "altText": "A check mark"]],
            ]
            let put = try await http.send(
                .PUT, "\(Self.base)/messages/\(Self.message)?environment=sandbox", headers: Self.admin(stack),
                body: try JSONSerialization.data(withJSONObject: body))
            #expect(put.status == 200 && put.json["uploaded"] as? Bool == true, "\(put.text)")
            var long = body
            long["header"] = String(repeating: "h", count: 67)
            long["bulletPoints"] = Array(repeating: ["text": "x", "imageIdentifier": Self.bulletImage, "altText": "y"], count: 6)
            let tooLong = try await http.send(
                .PUT, "\(Self.base)/messages/\(Self.rejectedMessage)?environment=sandbox", headers: Self.admin(stack),
                body: try JSONSerialization.data(withJSONObject: long))
            #expect(tooLong.status == 400 && tooLong.text.contains("header") && tooLong.text.contains("bulletPoints"), "\(tooLong.text)")
            let unknownImage = try await http.send(
                .PUT, "\(Self.base)/messages/\(Self.rejectedMessage)?environment=sandbox", headers: Self.admin(stack),
                body: Data(#"{"header":"h","body":"b","image":{"imageIdentifier":"\#(UUID().uuidString)","altText":"a"}}"#.utf8))
            #expect(unknownImage.status == 404 && unknownImage.text.contains("4040014"), "\(unknownImage.text)")
            let plain = try await http.send(
                .PUT, "\(Self.base)/messages/\(Self.rejectedMessage)?environment=sandbox", headers: Self.admin(stack),
                body: Data(#"{"header":"Stay","body":"We would miss you."}"#.utf8))
            #expect(plain.status == 200, "\(plain.text)")
            let messages = try await http.send(.GET, "\(Self.base)/messages?environment=sandbox", headers: Self.admin(stack))
            #expect((messages.json["messages"] as? [[String: Any]])?.count == 2, "\(messages.text)")

            // The default message of a product and locale names an approved message.
            let defaultPath = "\(Self.base)/default-messages/com.example.pro.monthly/en-US?environment=sandbox"
            let set = try await http.send(
                .PUT, defaultPath, headers: Self.admin(stack), body: Data(#"{"messageIdentifier":"\#(Self.message)"}"#.utf8))
            #expect(set.status == 200, "\(set.text)")
            let read = try await http.send(.GET, defaultPath, headers: Self.admin(stack))
            #expect(read.json["messageIdentifier"] as? String == Self.message && read.json["locale"] as? String == "en-US", "\(read.text)")
            _ = try await stack.simulator.http.send(
                .PUT, "/sim/retention/review",
                json: ["bundleId": demoBundle, "environment": "sandbox", "messageIdentifier": Self.rejectedMessage, "state": "REJECTED"])
            let rejected = try await http.send(
                .PUT, defaultPath, headers: Self.admin(stack), body: Data(#"{"messageIdentifier":"\#(Self.rejectedMessage)"}"#.utf8))
            #expect(rejected.status == 422 && rejected.text.contains("4030017"), "\(rejected.text)")
            let badLocale = try await http.send(
                .GET, "\(Self.base)/default-messages/com.example.pro.monthly/english?environment=sandbox", headers: Self.admin(stack))
            #expect(badLocale.status == 400, "\(badLocale.text)")

            let inUse = try await http.send(.DELETE, "\(Self.base)/images/\(Self.bulletImage)?environment=sandbox", headers: Self.admin(stack))
            #expect(inUse.status == 422 && inUse.text.contains("4030019"), "\(inUse.text)")
            let gone = try await http.send(.DELETE, "\(Self.base)/messages/\(Self.message)?environment=sandbox", headers: Self.admin(stack))
            #expect(gone.status == 200 && gone.json["deleted"] as? Bool == true, "\(gone.text)")
            #expect(try await http.send(.GET, defaultPath, headers: Self.admin(stack)).status == 404, "the default went with its message")
            let freed = try await http.send(.DELETE, "\(Self.base)/images/\(Self.bulletImage)?environment=sandbox", headers: Self.admin(stack))
            #expect(freed.status == 200, "\(freed.text)")
            let twice = try await http.send(.DELETE, "\(Self.base)/images/\(Self.bulletImage)?environment=sandbox", headers: Self.admin(stack))
            #expect(twice.status == 404 && twice.text.contains("4040014"), "\(twice.text)")
        }
    }

    @Test("the realtime URL: sandbox first, the performance test, then production, where Apple then calls")
    func realtimeURLAndPerformanceTest() async throws {
        try await Self.withConfigurationStack { stack in
            let http = stack.api.http
            let endpoint = "\(stack.serverURL ?? "")/v1/retention/demo"
            let none = try await http.send(.GET, "\(Self.base)/realtime-url?environment=sandbox", headers: Self.admin(stack))
            #expect(none.status == 404 && none.text.contains("4040021"), "\(none.text)")
            let early = try await http.send(
                .PUT, "\(Self.base)/realtime-url?environment=production", headers: Self.admin(stack), json: ["realtimeURL": endpoint])
            #expect(early.status == 422 && early.text.contains("4030026"), "production needs a passing test first: \(early.text)")
            let badURL = try await http.send(
                .PUT, "\(Self.base)/realtime-url?environment=sandbox", headers: Self.admin(stack), json: ["realtimeURL": "ftp://example.com/x"])
            #expect(badURL.status == 400, "\(badURL.text)")
            let sandbox = try await http.send(
                .PUT, "\(Self.base)/realtime-url?environment=sandbox", headers: Self.admin(stack), json: ["realtimeURL": endpoint])
            #expect(sandbox.status == 200, "\(sandbox.text)")
            let read = try await http.send(.GET, "\(Self.base)/realtime-url?environment=sandbox", headers: Self.admin(stack))
            #expect(read.json["realtimeURL"] as? String == endpoint, "\(read.text)")

            let device = try await stack.simulator.createDevice(bundleId: demoBundle, environment: "sandbox")
            let bought = try await stack.simulator.purchase(device: device, productId: "com.example.pro.monthly")
            let notSubscription = try await http.send(
                .POST, "\(Self.base)/performance-tests", headers: Self.admin(stack), json: ["originalTransactionId": "999999999"])
            #expect(notSubscription.status == 422 && notSubscription.text.contains("4000211"), "\(notSubscription.text)")
            let started = try await http.send(
                .POST, "\(Self.base)/performance-tests", headers: Self.admin(stack), json: ["originalTransactionId": bought.originalTransactionId])
            #expect(started.status == 202, "\(started.text)")
            let requestId = try #require(started.json["requestId"] as? String)
            #expect((started.json["config"] as? [String: Any])?["totalRequests"] as? Int == 20)

            // The simulator says when its last request is answered; the result is then final.
            _ = try await stack.simulator.http.send(.GET, "/sim/retention/performance-tests/\(requestId)/finished")
            let result = try await http.send(.GET, "\(Self.base)/performance-tests/\(requestId)", headers: Self.admin(stack))
            #expect(result.json["result"] as? String == "PASS" && result.json["successRate"] as? Int == 100, "\(result.text)")
            #expect(result.json["numPending"] as? Int == 0 && result.json["target"] as? String == endpoint, "\(result.text)")
            #expect((result.json["responseTimes"] as? [String: Any])?["p99"] is Int, "\(result.text)")
            let unknown = try await http.send(.GET, "\(Self.base)/performance-tests/\(UUID().uuidString)", headers: Self.admin(stack))
            #expect(unknown.status == 404 && unknown.text.contains("4040018"), "\(unknown.text)")

            let production = try await http.send(
                .PUT, "\(Self.base)/realtime-url?environment=production", headers: Self.admin(stack), json: ["realtimeURL": endpoint])
            #expect(production.status == 200, "after a passing test: \(production.text)")
            // Apple now asks this server when a production subscriber looks at cancelling.
            let customer = try await stack.simulator.createDevice(bundleId: demoBundle, environment: "production")
            let subscribed = try await stack.simulator.purchase(device: customer, productId: "com.example.pro.monthly")
            let asked = try await stack.simulator.askRetention(originalTransactionId: subscribed.originalTransactionId)
            #expect(asked["status"] as? Int == 200 && (asked["problems"] as? [String])?.isEmpty == true, "\(asked)")

            let deleted = try await http.send(.DELETE, "\(Self.base)/realtime-url?environment=sandbox", headers: Self.admin(stack))
            #expect(deleted.status == 200 && deleted.json["deleted"] as? Bool == true, "\(deleted.text)")
            #expect(try await http.send(.GET, "\(Self.base)/realtime-url?environment=sandbox", headers: Self.admin(stack)).status == 404)
        }
    }

    @Test("refused before Apple is asked: no key, the app's key, an app without an In-App Purchase key, an unknown app")
    func refusals() async throws {
        try await withStack { stack in
            let http = stack.api.http
            let anonymous = try await http.send(.GET, "\(Self.base)/messages")
            #expect(anonymous.status == 401, "\(anonymous.text)")
            let appKey = try await http.send(.GET, "\(Self.base)/messages", headers: ["Authorization": "Bearer \(stack.api.apiKey)"])
            #expect(appKey.status == 401 && appKey.errorCode == "unauthorized", "the app's key is not the operator's: \(appKey.text)")
            let noKey = try await http.send(.GET, "\(Self.base)/messages", headers: Self.admin(stack))
            #expect(noKey.status == 409 && noKey.errorCode == "server_api_not_configured", "\(noKey.text)")
            let unknownApp = try await http.send(.GET, "/v1/admin/apps/nope/retention/messages", headers: Self.admin(stack))
            #expect(unknownApp.status == 404, "\(unknownApp.text)")
        }
    }
}
