import AppStoreModels
import Foundation
import StorekeeperDomain
import StorekeeperTesting
import Testing

@Suite("verifyReceipt responses from public vectors")
struct AppStoreModelsTests {
    /// Not a response: a bare array wrapped by its source's test, without `status`.
    static let notResponses: Set<String> = ["voltrue2_latest_receipt_info_duplicates.json"]

    @Test("every vector response decodes", arguments: TestPaths.fixtures(in: "verify_receipt"))
    func decodes(file: String) throws {
        let data = try TestPaths.fixture("verify_receipt/\(file)")
        if Self.notResponses.contains(file) {
            #expect(throws: DecodingError.self) { try JSONDecoder().decode(VerifyReceiptResponse.self, from: data) }
            return
        }
        _ = try JSONDecoder().decode(VerifyReceiptResponse.self, from: data)
    }

    @Test("a large sandbox answer keeps all 42 in-app transactions and renewal info")
    func imdhemy() throws {
        let r = try JSONDecoder().decode(VerifyReceiptResponse.self, from: try TestPaths.fixture("verify_receipt/imdhemy_sandbox_2021.json"))
        #expect(r.status == .valid)
        #expect(r.environment == .production)
        #expect(r.receipt?.bundleId == "com.some.thing")
        #expect(r.receipt?.inApp?.count == 42)
        #expect(r.pendingRenewalInfo?.first?.autoRenewStatus?.bool == false)
        #expect(r.pendingRenewalInfo?.first?.expirationIntent?.value == "1")
    }

    @Test("numeric ids (not strings) decode and keep their digits")
    func numericIds() throws {
        let r = try JSONDecoder().decode(
            VerifyReceiptResponse.self, from: try TestPaths.fixture("verify_receipt/aporat_in_app_purchase_sandbox_2014.json"))
        #expect(r.receipt?.bundleId == "com.myapp")
        #expect(r.latestReceiptInfo?.count == 2)
        #expect(r.receipt?.inApp?.first?.productId == "myapp.1")
        #expect(r.receipt?.inApp?.allSatisfy { ($0.transactionId?.value.allSatisfy(\.isNumber)) == true } == true)
    }

    @Test("iOS 6 style single-object latest_receipt_info becomes a one-element array")
    func legacySingleObject() throws {
        let r = try JSONDecoder().decode(
            VerifyReceiptResponse.self, from: try TestPaths.fixture("verify_receipt/itunes_receipt_autorenew_subscription.json"))
        #expect(r.status == .valid)
        #expect(r.latestReceiptInfo?.count == 1)
    }

    @Test("status vectors classify as DOMAIN.md §3 says")
    func statuses() throws {
        func classify(_ file: String, from env: AppStoreEnvironment = .production) throws -> AttemptClassification {
            let r = try JSONDecoder().decode(VerifyReceiptResponse.self, from: try TestPaths.fixture("verify_receipt/\(file)"))
            return AttemptClassification.classify(r, environment: env)
        }
        #expect(try classify("itunes_receipt_sandboxed.json") == .redirect(to: .sandbox, status: .sandboxReceiptInProduction))
        #expect(try classify("bkrs_status_21007.json") == .redirect(to: .sandbox, status: .sandboxReceiptInProduction))
        #expect(try classify("aporat_status_21002.json") == .invalid(reason: "receipt_malformed", status: .malformedReceipt))
        #expect(try classify("bkrs_status_21010.json") == .invalid(reason: "apple_account_not_found", status: .accountNotFound))
        #expect(
            try classify("bkrs_status_21104.json")
                == .transient(reason: "apple_internal_error_retryable", status: AppStoreStatus(21104)))
        #expect(
            try classify("itunes_receipt_offline.json")
                == .transient(reason: "apple_receipt_server_unavailable", status: .serverUnavailable))
        guard case .verified = try classify("itunes_receipt_autorenew_subscription_expired.json") else {
            Issue.record("21006 must decode as verified (expired subscription)")
            return
        }
    }

    @Test("an unknown status and unknown fields are kept, not fatal")
    func forwardCompatible() throws {
        let body = #"{"status": 21999, "environment": "Staging", "brand_new_field": {"x": 1}, "is-retryable": 1}"#
        let r = try JSONDecoder().decode(VerifyReceiptResponse.self, from: Data(body.utf8))
        #expect(r.status.rawValue == 21999)
        #expect(r.environment?.rawValue == "Staging")
        #expect(
            AttemptClassification.classify(r, environment: .production) == .transient(reason: "apple_unknown_status", status: AppStoreStatus(21999)))
    }
}
