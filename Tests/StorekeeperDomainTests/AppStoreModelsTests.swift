import AppStoreModels
import Foundation
import StorekeeperDomain
import TestFixtures
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

@Suite("StoreKit 2 payloads of 2025-2026")
struct SignedPayload2026Tests {
    @Test("prorated refunds and commitment plans decode; a malformed new field drops from the typed view, the purchase stays")
    func newFields() throws {
        let json = """
            {"transactionId":"5","originalTransactionId":"1","productId":"pro","bundleId":"com.example","purchaseDate":1700000000000,
             "revocationDate":1700000500000,"revocationType":"REFUND_PRORATED","revocationPercentage":67932,"billingPlanType":"MONTHLY",
             "commitmentInfo":{"billingPeriodNumber":2,"totalBillingPeriods":12,"commitmentExpiresDate":1731536000000,"commitmentPrice":119880},
             "appTransactionId":"704289572311181431","futureField":{"x":1}}
            """
        let tx = try JSONDecoder().decode(SignedTransaction.self, from: Data(json.utf8))
        #expect(tx.revocationType == "REFUND_PRORATED" && tx.revocationPercentage == 67_932 && tx.billingPlanType == "MONTHLY")
        #expect(tx.commitmentInfo?.billingPeriodNumber == 2 && tx.commitmentInfo?.totalBillingPeriods == 12)
        #expect(tx.commitmentInfo?.commitmentExpiresDate?.milliseconds == 1_731_536_000_000 && tx.fields["futureField"] != nil)

        let evidence = try PurchaseEvidence(signedTransactions: [tx], renewals: [], environment: .production, source: .signedTransaction)
        let purchase = try #require(evidence.purchases.first)
        #expect(purchase.revocationType == "REFUND_PRORATED" && purchase.revocationPercentage == 67_932)
        #expect(purchase.commitment?.billingPeriodNumber == 2 && purchase.appTransactionId == "704289572311181431")

        let odd = json.replacingOccurrences(of: #""billingPeriodNumber":2"#, with: #""billingPeriodNumber":"two""#)
            .replacingOccurrences(of: #""revocationPercentage":67932"#, with: #""revocationPercentage":"lots""#)
        let kept = try JSONDecoder().decode(SignedTransaction.self, from: Data(odd.utf8))
        #expect(kept.transactionId == "5" && kept.commitmentInfo == nil && kept.revocationPercentage == nil)
        #expect(kept.revocationType == "REFUND_PRORATED")

        let renewal = try JSONDecoder().decode(
            SignedRenewalInfo.self,
            from: Data(
                #"{"originalTransactionId":"1","renewalBillingPlanType":"MONTHLY","commitmentInfo":{"commitmentAutoRenewStatus":1,"commitmentRenewalDate":1731536000000,"commitmentRenewalBillingPlanType":"MONTHLY"}}"#
                    .utf8))
        #expect(renewal.renewalBillingPlanType == "MONTHLY" && renewal.commitmentInfo?.commitmentAutoRenewStatus == 1)
    }
}
