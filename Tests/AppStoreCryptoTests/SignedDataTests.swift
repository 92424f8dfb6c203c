import AppStoreCrypto
import AppStoreModels
import AppStoreSimulator
import Foundation
import StorekeeperWire
import SwiftASN1
import TestFixtures
import Testing
import X509

/// StoreKit 2 signed data: Apple's test-CA and real signed vectors, Xcode's, and forgeries.
@Suite("signed data (JWS) verified offline")
struct SignedDataTests {
    func jws(_ path: String) throws -> String {
        String(decoding: try TestPaths.fixture("storekit2/\(path)"), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The `signedPayload` of a notification HTTP body, or a JWS inside an API response.
    func embedded(_ path: String, key: String) throws -> [String] {
        let object = try JSONSerialization.jsonObject(with: try TestPaths.fixture("storekit2/\(path)"))
        var found: [String] = []
        func walk(_ value: Any) {
            if let dictionary = value as? [String: Any] {
                for (k, v) in dictionary {
                    if k == key, let text = v as? String { found.append(text) } else { walk(v) }
                }
            } else if let array = value as? [Any] {
                if key == "*", let texts = array as? [String] { found += texts }
                array.forEach(walk)
            }
        }
        walk(object)
        return found
    }

    let testCA = SignedDataVerifier(roots: [try! Certificate(derEncoded: Array(try! TestPaths.fixture("certs/testCA.der")))])
    let apple = SignedDataVerifier(roots: try! ReceiptSignatureVerifier.appleRoots())
    let now = Date()

    func decode<T: Decodable>(_ type: T.Type, _ verdict: SignedDataVerdict) throws -> T {
        try JSONDecoder().decode(T.self, from: Data(verdict.payload))
    }

    @Test("Apple's test-CA vectors: valid with the test root; wrong environment, Apple id or bundle id; Apple roots refuse them")
    func appleTestCA() async throws {
        let notification = try jws("apple_test_ca/testNotification.jws")
        let sandbox = SignedDataVerifier.Expectations(bundleId: "com.example", appAppleId: 1234, environment: "Sandbox")
        let valid = try await testCA.verify(notification, expecting: sandbox, time: .signedDate(fallback: now))
        #expect(valid.isValid, "\(valid.failures)")
        #expect(try decode(NotificationPayload.self, valid).notificationType == .test)
        #expect(valid.signedDate == Date(timeIntervalSince1970: 1_681_314_324))

        var production = sandbox
        production.environment = "Production"
        #expect(
            try await testCA.verify(notification, expecting: production, time: .signedDate(fallback: now)).failures.map(\.code) == [
                "jws_wrong_environment"
            ])
        var otherApp = sandbox
        otherApp.appAppleId = 1235
        #expect(
            try await testCA.verify(notification, expecting: otherApp, time: .signedDate(fallback: now)).failures.map(\.code) == [
                "jws_wrong_app_apple_id"
            ])
        #expect(
            try await apple.verify(notification, expecting: sandbox, time: .signedDate(fallback: now)).failures.map(\.code) == ["jws_chain_untrusted"]
        )

        let transaction = try jws("apple_test_ca/transactionInfo.jws")
        let verdict = try await testCA.verify(
            transaction, expecting: .init(bundleId: "com.example", environment: "Sandbox"), time: .signedDate(fallback: now))
        let decodedTransaction = try decode(SignedTransaction.self, verdict)
        #expect(verdict.isValid && decodedTransaction.environment == .sandbox)
        #expect(
            try await testCA.verify(transaction, expecting: .init(bundleId: "com.example.x"), time: .signedDate(fallback: now)).failures.map(\.code)
                == ["jws_wrong_bundle_id"])

        let renewal = try await testCA.verify(
            try jws("apple_test_ca/renewalInfo.jws"), expecting: .init(environment: "Sandbox"), time: .signedDate(fallback: now))
        let decodedRenewal = try decode(SignedRenewalInfo.self, renewal)
        #expect(renewal.isValid && decodedRenewal.environment == .sandbox)

        let wrongBundle = try await testCA.verify(
            try jws("apple_test_ca/wrongBundleId.jws"), expecting: .init(bundleId: "com.example"), time: .signedDate(fallback: now))
        #expect(wrongBundle.failures.map(\.code) == ["jws_wrong_bundle_id"] && wrongBundle.validationTime == now)

        let noChain = try await testCA.verify(
            try jws("apple_test_ca/missingX5CHeaderClaim.jws"), expecting: .init(), time: .signedDate(fallback: now))
        #expect(noChain.failures.map(\.code) == ["jws_missing_certificate_chain"])
    }

    @Test("real Apple-signed data verifies against Apple Root CA - G3 at its signedDate, not today, and decodes to the recorded values")
    func realApple() async throws {
        let transaction = try jws("real_apple/mingos_transaction_consumable_sandbox_2025.jws")
        let verdict = try await apple.verify(
            transaction, expecting: .init(bundleId: "com.goodheartapp", environment: "Sandbox"), time: .signedDate(fallback: now))
        #expect(verdict.isValid, "\(verdict.failures)")
        let tx = try decode(SignedTransaction.self, verdict)
        #expect(tx.transactionId == "2000000847061981" && tx.originalTransactionId == "2000000847061981")
        #expect(tx.productId == "gh_super_good_ticket_1" && tx.type == .consumable && tx.quantity == 1)
        #expect(tx.purchaseDate?.milliseconds == 1_738_645_560_000 && tx.signedDate?.milliseconds == 1_739_161_772_561)
        #expect(tx.inAppOwnershipType == .purchased && tx.transactionReason == "PURCHASE")
        #expect(tx.storefront == "JPN" && tx.storefrontId == "143462" && tx.price == 230_000 && tx.currency == "JPY")
        // Online (validity now): the leaf expired on 2025-10-11.
        #expect(try await apple.verify(transaction, expecting: .init(), time: .at(now)).failures.map(\.code) == ["jws_chain_untrusted"])
        // Apple's test root does not vouch for real data.
        #expect(
            try await testCA.verify(transaction, expecting: .init(), time: .signedDate(fallback: now)).failures.map(\.code) == ["jws_chain_untrusted"]
        )

        let renewal = try await apple.verify(
            try jws("real_apple/goiap_renewal_info_sandbox_2023.jws"), expecting: .init(environment: "Sandbox"), time: .signedDate(fallback: now))
        let decodedRenewal = try decode(SignedRenewalInfo.self, renewal)
        #expect(renewal.isValid && decodedRenewal.originalTransactionId == "2000000335310644")

        // A production CONSUMPTION_REQUEST: the outer payload and its nested transaction both verify.
        let consumption = try await apple.verify(
            try jws("real_apple/gopay_notification_consumption_request_production_2023.jws"),
            expecting: .init(bundleId: "com.jrjj.keysns", appAppleId: 1_601_830_814, environment: "Production"), time: .signedDate(fallback: now))
        #expect(consumption.isValid, "\(consumption.failures)")
        let payload = try decode(NotificationPayload.self, consumption)
        #expect(payload.notificationType == .consumptionRequest && payload.environment == .production)
        let nested = try await apple.verify(
            try #require(payload.data?.signedTransactionInfo), expecting: .init(bundleId: "com.jrjj.keysns", environment: "Production"),
            time: .signedDate(fallback: now))
        let nestedTransaction = try decode(SignedTransaction.self, nested)
        #expect(nested.isValid && nestedTransaction.transactionId == "510001261072921")
    }

    @Test("a 2022 DID_RENEW without an outer signedDate: nested data verifies at its own dates, the outer chain is checked today and fails")
    func didRenewWithoutSignedDate() async throws {
        let body = try #require(try embedded("real_apple/gopay_notification_did_renew_sandbox_2022.json", key: "signedPayload").first)
        let outer = try await apple.verify(body, expecting: .init(bundleId: "com.audaos.audarecorder"), time: .signedDate(fallback: now))
        #expect(outer.signedDate == nil && outer.failures.map(\.code) == ["jws_chain_untrusted"])
        let payload = try decode(NotificationPayload.self, outer)
        #expect(payload.notificationType == .didRenew && payload.notificationUUID == "469bf30e-7715-4f9f-aae3-a7bfc12aea77")
        let transaction = try await apple.verify(
            try #require(payload.data?.signedTransactionInfo), expecting: .init(environment: "Sandbox"), time: .signedDate(fallback: now))
        let renewedTransaction = try decode(SignedTransaction.self, transaction)
        #expect(transaction.isValid && renewedTransaction.transactionId == "2000000004047119")
        let renewal = try await apple.verify(
            try #require(payload.data?.signedRenewalInfo), expecting: .init(environment: "Sandbox"), time: .signedDate(fallback: now))
        let info = try decode(SignedRenewalInfo.self, renewal)
        #expect(renewal.isValid && info.autoRenewProductId == "com.audaos.audarecorder.vip.m2" && info.autoRenewStatus == 1)
        // Every JWS in the API responses verifies at its signedDate too.
        for file in [
            "gopay_get_all_subscription_statuses_sandbox_2022.json", "gopay_transaction_history_sandbox_2022.json",
            "gopay_lookup_order_id_sandbox_2022.json",
        ] {
            let signed =
                try embedded("real_apple/\(file)", key: "*") + embedded("real_apple/\(file)", key: "signedTransactionInfo")
                + embedded("real_apple/\(file)", key: "signedRenewalInfo")
            #expect(!signed.isEmpty, "\(file)")
            for text in signed {
                #expect(try await apple.verify(text, expecting: .init(environment: "Sandbox"), time: .signedDate(fallback: now)).isValid, "\(file)")
            }
        }
    }

    @Test("Xcode's StoreKit testing data decodes, but is never accepted as App Store-signed")
    func xcode() async throws {
        let app = try await apple.verify(try jws("xcode/xcode_signed_app_transaction.jws"), expecting: .init(), time: .signedDate(fallback: now))
        #expect(app.failures.map(\.code).contains("jws_missing_certificate_chain") && !app.isValid)
        let appTransaction = try decode(SignedAppTransaction.self, app)
        #expect(appTransaction.bundleId == "com.example.naturelab.backyardbirds.example" && appTransaction.receiptType?.rawValue == "Xcode")
        #expect(appTransaction.originalPurchaseDate?.milliseconds == -62_135_769_600_000)
        let transaction = try await apple.verify(try jws("xcode/xcode_signed_transaction.jws"), expecting: .init(), time: .signedDate(fallback: now))
        let tx = try decode(SignedTransaction.self, transaction)
        #expect(!transaction.isValid && tx.productId == "pass.premium" && tx.environment?.rawValue == "Xcode")
        #expect(tx.expiresDate.map { Int64($0.milliseconds) } == 1_700_358_336_049 && tx.offerType == 1 && tx.storefrontId == "143441")
    }

    @Test("reread (data verified when it was accepted): the claims are checked again, the signature and chain are not")
    func reread() async throws {
        let transaction = try jws("apple_test_ca/transactionInfo.jws")
        let expectations = SignedDataVerifier.Expectations(bundleId: "com.example", environment: "Sandbox")
        let reread = try apple.reread(transaction, expecting: expectations, now: now)
        // Apple's roots do not trust the test CA: `verify` refuses it, `reread` does not look.
        #expect(
            try await apple.verify(transaction, expecting: expectations, time: .signedDate(fallback: now)).failures.map(\.code) == [
                "jws_chain_untrusted"
            ])
        #expect(reread.isValid, "\(reread.failures)")
        #expect(try decode(SignedTransaction.self, reread).environment == .sandbox)
        #expect(try apple.reread(transaction, expecting: .init(bundleId: "com.example.x"), now: now).failures.map(\.code) == ["jws_wrong_bundle_id"])
        #expect(
            try apple.reread(transaction, expecting: .init(environment: "Production"), now: now).failures.map(\.code) == ["jws_wrong_environment"])
        #expect(throws: (any Error).self) { try apple.reread("not.a-jws", expecting: expectations, now: now) }
    }

    @Test("Apple's model JSON decodes every documented field, keeps unknown fields and enum values")
    func models() throws {
        func object<T: Decodable>(_ type: T.Type, _ file: String) throws -> T {
            try JSONDecoder().decode(T.self, from: try TestPaths.fixture("storekit2/models/\(file)"))
        }
        let tx = try object(SignedTransaction.self, "signedTransaction.json")
        #expect(tx.transactionId == "23456" && tx.originalTransactionId == "12345" && tx.webOrderLineItemId == "34343")
        #expect(tx.type == .autoRenewable && tx.inAppOwnershipType == .purchased && tx.revocationReason == 1 && tx.isUpgraded == true)
        #expect(tx.revocationDate?.milliseconds == 1_698_148_950_000 && tx.price == 10_990 && tx.currency == "USD")
        #expect(tx.environment?.rawValue == "LocalTesting" && tx.appAccountToken == "7e3fb20b-4cdb-47cc-936d-99d65f608138")
        // Fields this type does not name (advancedCommerceInfo, billingPlanType…) are kept.
        #expect(tx.fields.count > 28 && tx.fields["offerPeriod"] == .string("P1Y"))
        let reencoded = try JSONDecoder().decode(SignedTransaction.self, from: try JSONEncoder().encode(tx))
        #expect(reencoded == tx)

        let renewal = try object(SignedRenewalInfo.self, "signedRenewalInfo.json")
        #expect(renewal.expirationIntent == 1 && renewal.isInBillingRetryPeriod == true && renewal.renewalPrice == 9_990)
        #expect(renewal.gracePeriodExpiresDate?.milliseconds == 1_698_148_900_000 && renewal.fields["eligibleWinBackOfferIds"] != nil)

        let notification = try object(NotificationPayload.self, "signedNotification.json")
        #expect(notification.notificationType == .subscribed && notification.subtype == "INITIAL_BUY")
        #expect(notification.appAppleId == 41_234 && notification.bundleId == "com.example" && notification.data?.status == 1)
        let summary = try object(NotificationPayload.self, "signedSummaryNotification.json")
        #expect(summary.notificationType == .renewalExtension && summary.summary?.succeededCount == 5 && summary.data == nil)
        let external = try object(NotificationPayload.self, "signedExternalPurchaseTokenSandboxNotification.json")
        #expect(external.environment == .sandbox)
        let consumption = try object(NotificationPayload.self, "signedConsumptionRequestNotification.json")
        #expect(consumption.data?.consumptionRequestReason == "UNINTENDED_PURCHASE")
        let app = try object(SignedAppTransaction.self, "appTransaction.json")
        #expect(app.appAppleId == 531_412 && app.versionExternalIdentifier == 512 && app.originalPlatform == "iOS")
        // An unknown notification type is kept as sent.
        let unknown = try JSONDecoder().decode(NotificationPayload.self, from: Data(#"{"notificationType":"SOMETHING_NEW","newField":[1]}"#.utf8))
        #expect(unknown.notificationType?.rawValue == "SOMETHING_NEW" && unknown.fields["newField"] == .array([.number(1)]))
    }

    @Test("the simulator's chain names its keys as RFC 5280 asks: each certificate's key id, and its issuer's in the one below")
    func simulatorKeyIdentifiers() throws {
        let pki = try SimulatorPKI()
        func subjectKey(_ certificate: Certificate) throws -> ArraySlice<UInt8>? {
            try certificate.extensions.subjectKeyIdentifier?.keyIdentifier
        }
        func authorityKey(_ certificate: Certificate) throws -> ArraySlice<UInt8>? {
            try certificate.extensions.authorityKeyIdentifier?.keyIdentifier
        }
        let rootKey = try #require(try subjectKey(pki.root))
        let intermediateKey = try #require(try subjectKey(pki.intermediate))
        #expect(try subjectKey(pki.leaf) != nil)
        #expect(try authorityKey(pki.intermediate) == rootKey)
        #expect(try authorityKey(pki.leaf) == intermediateKey)
        #expect(rootKey != intermediateKey)
    }

    @Test("Apple's data has exactly leaf, intermediate and root: a fourth certificate is refused; without Apple's markers it is taken")
    func exactChainLength() async throws {
        let instant = Date(timeIntervalSince1970: 1_750_000_000)
        let pki = try SimulatorPKI(now: instant)
        let payload = Array(#"{"bundleId":"com.example","environment":"Sandbox","transactionId":"1"}"#.utf8)
        let expect = SignedDataVerifier.Expectations(bundleId: "com.example", environment: "Sandbox")
        let apple = SignedDataVerifier(roots: [pki.root])
        #expect(try await apple.verify(try pki.signJWS(payload: payload), expecting: expect, time: .at(instant)).isValid)
        let four = try pki.signJWS(payload: payload, chain: [pki.leaf, pki.intermediate, pki.root, pki.root])
        #expect(try await apple.verify(four, expecting: expect, time: .at(instant)).failures.map(\.code) == ["jws_missing_certificate_chain"])
        let two = try pki.signJWS(payload: payload, chain: [pki.leaf, pki.intermediate])
        #expect(try await apple.verify(two, expecting: expect, time: .at(instant)).failures.map(\.code) == ["jws_missing_certificate_chain"])
        let unmarked = SignedDataVerifier(roots: [pki.root], requireAppleMarkers: false)
        #expect(try await unmarked.verify(four, expecting: expect, time: .at(instant)).isValid)
    }

    @Test("an app transaction without signedDate is judged at its receiptCreationDate, not at the fallback its leaf has outlived")
    func appTransactionAtCreation() async throws {
        // The chain was made three years ago; the leaf lives two years, so it is expired now.
        let now = Date(timeIntervalSince1970: 1_790_000_000)
        let made = now.addingTimeInterval(-3 * 365 * 86_400)
        let pki = try SimulatorPKI(now: made)
        let createdMs = Int64(made.addingTimeInterval(86_400).timeIntervalSince1970 * 1000)
        let payload = Array(
            #"{"appTransactionId":"705","bundleId":"com.example","receiptType":"Sandbox","receiptCreationDate":\#(createdMs),"originalPurchaseDate":\#(createdMs)}"#
                .utf8)
        let verifier = SignedDataVerifier(roots: [pki.root])
        let verdict = try await verifier.verify(
            try pki.signJWS(payload: payload), expecting: .init(bundleId: "com.example", environment: "Sandbox"), time: .signedDate(fallback: now))
        #expect(verdict.isValid, "\(verdict.failures)")
        #expect(verdict.validationTime == Date(timeIntervalSince1970: Double(createdMs) / 1000))
        // A transaction (no receiptCreationDate) with no signedDate is still judged at the fallback.
        let transaction = try pki.signJWS(payload: Array(#"{"bundleId":"com.example","environment":"Sandbox","transactionId":"1"}"#.utf8))
        #expect(
            try await verifier.verify(transaction, expecting: .init(), time: .signedDate(fallback: now)).failures.map(\.code) == [
                "jws_chain_untrusted"
            ])
    }

    @Test("forgeries: bad signature, alg none and HS256, another root, leaf or intermediate without Apple's OID, expired leaf, truncated, not base64")
    func forgeries() async throws {
        let pki = try SimulatorPKI()
        let verifier = SignedDataVerifier(roots: [pki.root])
        let payload = Array(#"{"bundleId":"com.example","environment":"Sandbox","signedDate":1700000000000,"transactionId":"1"}"#.utf8)
        let good = try pki.signJWS(payload: payload)
        let expect = SignedDataVerifier.Expectations(bundleId: "com.example", environment: "Sandbox")
        #expect(try await verifier.verify(good, expecting: expect, time: .at(now)).isValid)

        var parts = good.split(separator: ".").map(String.init)
        var signature = Array(parts[2])
        signature[10] = signature[10] == "A" ? "B" : "A"
        parts[2] = String(signature)
        #expect(
            try await verifier.verify(parts.joined(separator: "."), expecting: expect, time: .at(now)).failures.map(\.code) == [
                "jws_signature_invalid"
            ])

        let none = try pki.signJWS(payload: payload, alg: "none")
        #expect(try await verifier.verify(none, expecting: expect, time: .at(now)).failures.map(\.code).contains("jws_unsupported_algorithm"))
        let hs256 = try pki.signJWS(payload: payload, alg: "HS256")
        #expect(try await verifier.verify(hs256, expecting: expect, time: .at(now)).failures.map(\.code).contains("jws_unsupported_algorithm"))
        // Payload swapped after signing.
        let swapped = good.split(separator: ".").enumerated().map {
            $0.offset == 1
                ? String(SimulatorPKIBase64.url(Array(#"{"bundleId":"com.example","environment":"Sandbox","transactionId":"2"}"#.utf8)))
                : String($0.element)
        }
        #expect(
            try await verifier.verify(swapped.joined(separator: "."), expecting: expect, time: .at(now)).failures.map(\.code) == [
                "jws_signature_invalid"
            ])

        #expect(
            try await SignedDataVerifier(roots: [try SimulatorPKI().root]).verify(good, expecting: expect, time: .at(now)).failures.map(\.code) == [
                "jws_chain_untrusted"
            ])
        for pki in [try SimulatorPKI(leafMarker: false), try SimulatorPKI(intermediateMarker: false)] {
            let unmarked = try pki.signJWS(payload: payload)
            let verdict = try await SignedDataVerifier(roots: [pki.root]).verify(unmarked, expecting: expect, time: .at(now))
            #expect(verdict.failures.map(\.code) == ["jws_chain_untrusted"] && verdict.failures.description.contains("marker"))
        }
        let old = try SimulatorPKI(now: Date(timeIntervalSince1970: 1_000_000_000))
        let expired = try old.signJWS(payload: payload)
        #expect(
            try await SignedDataVerifier(roots: [old.root]).verify(expired, expecting: expect, time: .at(now)).failures.map(\.code) == [
                "jws_chain_untrusted"
            ])
        #expect(
            try await SignedDataVerifier(roots: [old.root]).verify(expired, expecting: expect, time: .at(Date(timeIntervalSince1970: 1_000_000_000)))
                .isValid)
        #expect(
            try await verifier.verify(good, expecting: .init(bundleId: "com.other"), time: .at(now)).failures.map(\.code) == ["jws_wrong_bundle_id"])
        #expect(
            try await verifier.verify(good, expecting: .init(environment: "Production"), time: .at(now)).failures.map(\.code) == [
                "jws_wrong_environment"
            ])

        // Not readable at all: thrown, with a code.
        for broken in [
            String(good.prefix(good.count / 2)).replacingOccurrences(of: ".", with: ""), parts[0] + "." + parts[1], good + ".x", "a*b.c.d", "",
            "....",
        ] {
            await #expect(throws: SignedDataError.self, "\(broken.prefix(20))") {
                _ = try await verifier.verify(broken, expecting: expect, time: .at(now))
            }
        }
        await #expect(throws: SignedDataError.self) {
            _ = try await verifier.verify(String(repeating: "A", count: CompactJWS.maximumLength + 1), expecting: expect, time: .at(now))
        }
    }
}

/// base64url without padding, for building forgeries by hand.
enum SimulatorPKIBase64 {
    static func url(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}
