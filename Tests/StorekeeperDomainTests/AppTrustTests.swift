import AppStoreModels
import StorekeeperDomain
import Testing

/// The one rule of whose signed data Apple's payloads are, for every kind a site believes.
@Suite("AppTrust: whose data a verified payload is")
struct AppTrustTests {
    let app = AppTrust(bundleId: "com.example.app", appAppleId: 42, acceptsSandbox: true)
    let productionOnly = AppTrust(bundleId: "com.example.app", appAppleId: 42, acceptsSandbox: false)
    let noAppleId = AppTrust(bundleId: "com.example.app", appAppleId: nil, acceptsSandbox: true)

    func reason(_ trust: AppTrust, _ claims: AppTrust.Claims) -> String? { trust.refusal(of: claims)?.reason.rawValue }

    @Test("a transaction: this bundle id, an environment the app accepts, the context's environment")
    func transaction() {
        func claims(_ bundle: String?, _ environment: AppStoreEnvironment?, expected: AppStoreEnvironment? = nil) -> AppTrust.Claims {
            .init(kind: .transaction, bundleId: bundle, environment: environment, expectedEnvironment: expected)
        }
        #expect(reason(app, claims("com.example.app", .production)) == nil)
        #expect(reason(app, claims("com.example.app", .sandbox)) == nil)
        #expect(reason(app, claims("com.example.other", .production)) == "jws_wrong_bundle_id")
        #expect(reason(app, claims(nil, .production)) == "jws_wrong_bundle_id")
        #expect(reason(productionOnly, claims("com.example.app", .sandbox)) == "sandbox_not_accepted")
        #expect(reason(app, claims("com.example.app", AppStoreEnvironment(rawValue: "Xcode"))) == "jws_wrong_environment")
        #expect(reason(app, claims("com.example.app", nil)) == "jws_wrong_environment")
        #expect(reason(app, claims("com.example.app", .sandbox, expected: .production)) == "jws_wrong_environment")
        #expect(reason(app, claims("com.example.app", .production, expected: .production)) == nil)
    }

    @Test("an app transaction and a notification name the configured Apple id in production; the sandbox may leave it out")
    func appleId() {
        for kind in [AppTrust.Kind.appTransaction, .notification] {
            func claims(_ appleId: Int64?, _ environment: AppStoreEnvironment) -> AppTrust.Claims {
                .init(kind: kind, bundleId: "com.example.app", appAppleId: appleId, environment: environment)
            }
            #expect(reason(app, claims(42, .production)) == nil)
            #expect(reason(app, claims(7, .production)) == "jws_wrong_app_apple_id")
            #expect(reason(app, claims(nil, .production)) == "jws_wrong_app_apple_id")
            #expect(reason(app, claims(nil, .sandbox)) == nil)
            #expect(reason(app, claims(7, .sandbox)) == "jws_wrong_app_apple_id")
            #expect(reason(noAppleId, claims(7, .production)) == nil, "the bundle id names the app when no Apple id is configured")
        }
    }

    @Test("a notification's environment is judged on what it carries, an app transaction's is not")
    func notificationEnvironment() {
        let sandboxNotification = AppTrust.Claims(kind: .notification, bundleId: "com.example.app", environment: .sandbox)
        #expect(reason(productionOnly, sandboxNotification) == nil)
        let sandboxAppTransaction = AppTrust.Claims(kind: .appTransaction, bundleId: "com.example.app", environment: .sandbox)
        #expect(reason(productionOnly, sandboxAppTransaction) == "sandbox_not_accepted")
    }

    @Test("a retention request carries no bundle id: in production only a configured Apple id it names ties it to the app")
    func retentionRequest() {
        func claims(_ appleId: Int64?, _ environment: AppStoreEnvironment?) -> AppTrust.Claims {
            .init(kind: .retentionRequest, bundleId: nil, appAppleId: appleId, environment: environment)
        }
        #expect(reason(app, claims(42, .production)) == nil)
        #expect(reason(app, claims(7, .production)) == "jws_wrong_app_apple_id")
        #expect(reason(app, claims(nil, .production)) == "jws_wrong_app_apple_id")
        #expect(reason(noAppleId, claims(42, .production)) == "jws_wrong_app_apple_id")
        #expect(reason(app, claims(nil, .sandbox)) == nil)
        #expect(reason(productionOnly, claims(42, .sandbox)) == "sandbox_not_accepted")
        #expect(reason(app, claims(42, nil)) == "jws_wrong_environment")
    }
}
