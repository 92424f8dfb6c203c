import AppStoreModels
import Foundation
import StorekeeperDomain
import StorekeeperWire
import Testing

/// Customers' attributes as a merge patch, and what deleting a customer does to a row.
@Suite("customers: attribute patches and erasure")
struct CustomerRuleTests {
    @Test("a patch sets, clears and keeps; limits refuse the whole patch")
    func patches() throws {
        let start = SubscriberAttributes(email: "a@b.c", displayName: "A", custom: ["x": "1", "y": "2"])
        let next = try start.applying(AttributeChange(email: .clear, custom: ["x": String?.none, "z": "3"])).get()
        #expect(next == SubscriberAttributes(email: nil, displayName: "A", custom: ["y": "2", "z": "3"]))
        for bad in [
            AttributeChange(email: .set("a@")), AttributeChange(email: .set("a b@c.d")), AttributeChange(displayName: .set("")),
            AttributeChange(custom: ["": "v"]), AttributeChange(custom: ["ok": .some(String(repeating: "v", count: 501))]),
            // Text that reads otherwise than it is: an RLO reversing what follows, a C1 control,
            // an escape sequence, an isolate.
            AttributeChange(displayName: .set("Alice\u{202E}gpj.exe")), AttributeChange(displayName: .set("A\u{0085}B")),
            AttributeChange(displayName: .set("A\nB")), AttributeChange(custom: ["note": "\u{1B}[31mred"]),
            AttributeChange(custom: ["note": "x\u{2067}y"]), AttributeChange(custom: ["note": "\u{200F}"]),
        ] {
            #expect((try? start.applying(bad).get()) == nil, "\(bad)")
        }
        // What a name or a note may hold: any script, emoji joined by ZWJ; a note's lines and tabs.
        let written = try start.applying(
            AttributeChange(displayName: .set("Zoë 👩‍👩‍👧 سارا"), custom: ["note": "line one\n\tline two"])
        ).get()
        #expect(written.displayName == "Zoë 👩‍👩‍👧 سارا" && written.custom["note"] == "line one\n\tline two")
        let full = SubscriberAttributes(custom: Dictionary(uniqueKeysWithValues: (0..<50).map { ("k\($0)", "v") }))
        #expect((try? full.applying(AttributeChange(custom: ["one-more": "v"])).get()) == nil)
        #expect((try? full.applying(AttributeChange(custom: ["k1": String?.none, "one-more": "v"])).get())?.custom.count == 50)
    }

    @Test("erasure: every mention of the customer replaced, their attributes dropped, others' data kept")
    func erasure() {
        let erasure = CustomerErasure(appUserId: "hank", tombstone: "deleted_1")
        var view = SubscriberView.build(
            appUserId: "hank",
            transactions: [
                TransactionRecord(
                    appId: "app", appUserId: "hank", transactionId: "1", originalTransactionId: "1", productId: "p", productType: .nonConsumable,
                    environment: "sandbox", purchaseDate: Date(timeIntervalSince1970: 0), originalPurchaseDate: nil, expiresDate: nil,
                    cancellationDate: nil, quantity: 1, credits: 0, ownershipType: nil, verificationId: "v")
            ], subscriptions: [], catalog: [:], now: Date(timeIntervalSince1970: 10))
        view.attributes = SubscriberAttributes(email: "h@x.y")
        var details = SubscriberEvent.Details()
        details.fromAppUserId = "hank"
        details.toAppUserId = "ivy"
        var event = SubscriberEvent(
            id: SubscriberEvent.id(type: .consentRescinded, subject: "hank", cause: "n1"), type: .consentRescinded, appId: "app",
            environment: nil, appUserId: "hank", occurredAt: Date(timeIntervalSince1970: 0), recordedAt: Date(timeIntervalSince1970: 0),
            details: details)
        event.entitlements = view
        let erased = erasure.erase(event, cursor: 7)
        // The customer's own event whose id names them: rebuilt from the tombstone and its row.
        #expect(erased.id == "evt_deleted_1_consent_rescinded_7" && erased.appUserId == "deleted_1")
        var ivys = event
        ivys.appUserId = "ivy"
        ivys.id = "evt_n1_consent_rescinded_ivy"
        #expect(erasure.erase(ivys, cursor: 8).id == "evt_n1_consent_rescinded_ivy", "another user's id is left alone")
        #expect(erased.details?.fromAppUserId == "deleted_1" && erased.details?.toAppUserId == "ivy")
        #expect(erased.entitlements?.appUserId == "deleted_1" && erased.entitlements?.attributes == nil)
        #expect(erased.entitlements?.history.map(\.appUserId) == ["deleted_1"])
        // An id that only ends like the customer's is another's.
        #expect(erasure.eventId("evt_n1_purchase_hank") == "evt_n1_purchase_hank")
        #expect(CustomerErasure.isTombstone(CustomerErasure.newTombstone()) && CustomerErasure.newTombstone() != CustomerErasure.newTombstone())
    }

    @Test("erasure drops the words written about the customer and the ids built from theirs; the deletion's own reason keeps its words, not theirs")
    func erasureOfWords() {
        var erasure = CustomerErasure(appUserId: "hank", tombstone: "deleted_1")
        erasure.spendIds = ["hank-potion-1": CustomerErasure.spendId(cursor: 41)]
        let spend = CreditSpend(
            id: "hank-potion-1", appId: "app", appUserId: "hank", amount: 3, reason: "potion for hank@example.org",
            spentAt: .init(timeIntervalSince1970: 0),
            balanceAfter: 2)
        let spent = erasure.erase(spend.event(now: .init(timeIntervalSince1970: 0)), cursor: 9)
        #expect(spent.id == "evt_deleted_1_credits_spent_9" && spent.details?.reason == CustomerErasure.erasedText)
        #expect(spent.details?.spendId == "erased_41" && spent.details?.credits == 3 && spent.details?.creditBalance == 2)
        let suspended = SubscriberEvent(
            id: "evt_u1_access_suspended_u1", type: .accessSuspended, appId: "app", environment: nil, appUserId: "hank",
            occurredAt: .init(timeIntervalSince1970: 0), recordedAt: .init(timeIntervalSince1970: 0),
            details: SubscriberEvent.Details(reason: "consent_rescinded"))
        #expect(erasure.erase(suspended, cursor: 3).details?.reason == "consent_rescinded", "the server's own words are kept")
        #expect(erasure.erase(suspended, cursor: 3).id == "evt_u1_access_suspended_u1", "an id that does not name them is kept")
        let refused = SubscriberEvent(
            id: "evt_v1_verification_invalid_v1", type: .verificationInvalid, appId: "app", environment: nil, appUserId: "hank",
            occurredAt: .init(timeIntervalSince1970: 0), recordedAt: .init(timeIntervalSince1970: 0),
            details: SubscriberEvent.Details(reason: "jws_expired"))
        #expect(erasure.erase(refused, cursor: 4).details?.reason == "jws_expired", "a machine reason of another kind of event is kept")
        let grant = PromotionalGrant(
            id: "g1", appId: "app", appUserId: "hank", entitlementId: "pro", startsAt: .init(timeIntervalSince1970: 0), expiresAt: nil,
            actor: "ops", reason: "Hank Q called")
        #expect(erasure.erase(grant).reason == CustomerErasure.erasedText && erasure.erase(grant).actor == "ops")
        #expect(erasure.erase(AccessSuspension(reason: "fraud by Hank Q", since: .init(timeIntervalSince1970: 0), actor: "ops")).reason == "[erased]")
        let entry = AuditEntry(
            id: "a1", appId: "app", at: .init(timeIntervalSince1970: 0), actor: "ops", action: "promotional_grant", appUserId: "hank",
            reason: "Hank Q called", subject: "g1", change: .string("Hank Q")
        ).before(["reason": "Hank Q called"])
        let erasedEntry = erasure.erase(entry)
        #expect(erasedEntry.reason == "[erased]" && erasedEntry.change == nil && erasedEntry.appUserId == "deleted_1" && erasedEntry.actor == "ops")
        #expect(entry.before != nil && erasedEntry.before == nil)
        #expect(
            CustomerErasure.scrub("erasure asked by HANK@example.org (Hank Q, id hank)", identifiers: ["hank", "hank@example.org", "Hank Q", ""])
                == "erasure asked by [deleted] ([deleted], id [deleted])")
    }
}
