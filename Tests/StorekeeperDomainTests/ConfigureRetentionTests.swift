import AppStoreModels
import Foundation
import StorekeeperCore
import StorekeeperErrors
import Synchronization
import Testing

/// Retention Messaging's configuration as a use case over a fake Apple: what Apple's
/// documentation states about an input is refused before Apple is called; identifiers reach
/// Apple as Apple lists them. The routes are tested against the simulator in
/// `RetentionConfigurationTests`.
@Suite("ConfigureRetention: Apple's Retention Messaging configuration, in process")
struct ConfigureRetentionTests {
    final class FakeApple: AppleRetentionAPI {
        let calls = Mutex<[String]>([])
        func record(_ call: String) { calls.withLock { $0.append(call) } }
        var recorded: [String] { calls.withLock { $0 } }

        func retentionMessages(environment: AppStoreEnvironment) async throws -> RetentionMessageList {
            record("messages \(environment.storageName)")
            return .init(messageIdentifiers: [.init(messageIdentifier: "a", messageState: .approved)])
        }
        func uploadRetentionMessage(_ messageIdentifier: String, _ message: UploadRetentionMessage, environment: AppStoreEnvironment) async throws {
            record("upload message \(messageIdentifier)")
        }
        func deleteRetentionMessage(_ messageIdentifier: String, environment: AppStoreEnvironment) async throws {
            record("delete message \(messageIdentifier)")
        }
        func retentionImages(environment: AppStoreEnvironment) async throws -> RetentionImageList { .init(imageIdentifiers: []) }
        func uploadRetentionImage(_ imageIdentifier: String, png: Data, size: RetentionImageSize?, environment: AppStoreEnvironment) async throws {
            record("upload image \(imageIdentifier) \(png.count)")
        }
        func deleteRetentionImage(_ imageIdentifier: String, environment: AppStoreEnvironment) async throws {}
        func defaultRetentionMessage(
            productId: String, locale: String, environment: AppStoreEnvironment
        ) async throws
            -> RetentionDefaultMessage
        { .init(messageIdentifier: nil) }
        func configureDefaultRetentionMessage(
            productId: String, locale: String, messageIdentifier: String, environment: AppStoreEnvironment
        )
            async throws
        { record("default \(productId) \(locale) \(messageIdentifier)") }
        func deleteDefaultRetentionMessage(productId: String, locale: String, environment: AppStoreEnvironment) async throws {}
        func realtimeURL(environment: AppStoreEnvironment) async throws -> RetentionRealtimeURL { .init(realtimeURL: nil) }
        func configureRealtimeURL(_ url: String, environment: AppStoreEnvironment) async throws { record("url \(url)") }
        func deleteRealtimeURL(environment: AppStoreEnvironment) async throws {}
        func startRetentionPerformanceTest(originalTransactionId: String) async throws -> RetentionPerformanceTestStarted {
            record("test \(originalTransactionId)")
            return .init(config: nil, requestId: "r")
        }
        func retentionPerformanceTestResult(_ requestId: String) async throws -> RetentionPerformanceTestResult {
            record("result \(requestId)")
            return try JSONDecoder().decode(RetentionPerformanceTestResult.self, from: Data("{}".utf8))
        }
    }

    let apple = FakeApple()
    var configure: ConfigureRetention { ConfigureRetention(apple: apple, environment: .sandbox) }
    static let png = Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0x00])

    func invalid(_ body: () async throws -> Void) async -> String? {
        do {
            try await body()
            return nil
        } catch let error as AppleActionError {
            #expect(error.code == .invalidRequest, "\(error)")
            return error.message
        } catch {
            Issue.record("not an AppleActionError: \(error)")
            return nil
        }
    }

    @Test("every input Apple documents is checked before Apple is called, each refusal naming its field")
    func refusedBeforeApple() async throws {
        let message = UploadRetentionMessage(header: "Stay", body: "Half price for three months")
        #expect(await invalid { _ = try await configure.uploadMessage("not-a-uuid", message) } == "messageIdentifier must be a UUID")
        #expect(await invalid { _ = try await configure.uploadMessage(UUID().uuidString, .init(header: "", body: "")) }?.contains("header") == true)
        #expect(await invalid { _ = try await configure.uploadImage(UUID().uuidString, png: Data("GIF89a".utf8), size: nil) } != nil)
        #expect(await invalid { _ = try await configure.defaultMessage(productId: "", locale: "english") }?.contains("; ") == true)
        #expect(await invalid { _ = try await configure.setDefaultMessage(productId: "p", locale: "en-US", messageIdentifier: nil) } != nil)
        #expect(
            await invalid { _ = try await configure.setRealtimeURL("ftp://example.com/x", appId: "demo") }?.contains("/v1/retention/demo") == true)
        #expect(await invalid { _ = try await configure.startPerformanceTest(originalTransactionId: "12ab") } != nil)
        #expect(await invalid { _ = try await configure.performanceTestResult(requestId: "r") } != nil)
        #expect(apple.recorded.isEmpty, "Apple was called: \(apple.recorded)")
    }

    @Test("what passes reaches Apple as Apple lists it: identifiers lowercased, the environment asked, the test in the sandbox")
    func reachesApple() async throws {
        let id = "8E0B9C7A-1D6F-4C2B-9A51-3E2D4F6A7B8C"
        #expect(try await configure.uploadMessage(id, .init(header: "Stay", body: "Half price")) == id.lowercased())
        #expect(try await configure.uploadImage(id, png: Self.png, size: nil) == id.lowercased())
        #expect(try await configure.setDefaultMessage(productId: "monthly", locale: "en-US", messageIdentifier: id) == id)
        #expect(try await configure.setRealtimeURL("https://example.com/v1/retention/demo", appId: "demo") == "https://example.com/v1/retention/demo")
        #expect(try await configure.startPerformanceTest(originalTransactionId: "2000000000000001").requestId == "r")
        #expect(try await configure.messages().count == 1)
        #expect(
            apple.recorded == [
                "upload message \(id.lowercased())", "upload image \(id.lowercased()) 9", "default monthly en-US \(id)",
                "url https://example.com/v1/retention/demo", "test 2000000000000001", "messages sandbox",
            ])
    }
}
