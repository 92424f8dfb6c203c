import Foundation
import StorekeeperDomain
import TestFixtures
import Testing

/// The rules of spending credits, at fixed instants.
@Suite("credit spends")
struct CreditSpendTests {
    @Test("never below zero: the exact balance may be spent, one more may not; a negative balance refuses everything")
    func rule() {
        #expect(CreditSpendRule.decide(balance: 100, amount: 30) == .spend(balanceAfter: 70))
        #expect(CreditSpendRule.decide(balance: 30, amount: 30) == .spend(balanceAfter: 0))
        #expect(CreditSpendRule.decide(balance: 30, amount: 31) == .insufficient(balance: 30))
        #expect(CreditSpendRule.decide(balance: -50, amount: 1) == .insufficient(balance: -50))
        #expect(CreditSpendRule.decide(balance: 10, amount: 0) == .insufficient(balance: 10), "nothing is not a spend")
        #expect(CreditSpendRule.decide(balance: 10, amount: -5) == .insufficient(balance: 10), "a negative spend never adds credits")
    }

    @Test("each field's problem named: the key, the amount's range, a blank or long reason")
    func problems() {
        #expect(CreditSpend.problems(key: "order-1", amount: 1, reason: "sword").isEmpty)
        #expect(CreditSpend.problems(key: String(repeating: "k", count: 255), amount: CreditSpend.maximumAmount, reason: "x").isEmpty)
        for key in [nil, "", " ", "a b", "ключ", "tab\t", String(repeating: "k", count: 256)] {
            #expect(CreditSpend.problems(key: key, amount: 1, reason: "x").first?.hasPrefix("Idempotency-Key") == true, "\(String(describing: key))")
        }
        for amount in [nil, 0, -1, CreditSpend.maximumAmount + 1, Int.max] {
            #expect(CreditSpend.problems(key: "k", amount: amount, reason: "x").first?.hasPrefix("amount") == true, "\(String(describing: amount))")
        }
        for reason in [nil, "", "   ", "\u{FEFF}", String(repeating: "é", count: 201)] {
            #expect(CreditSpend.problems(key: "k", amount: 1, reason: reason).first?.hasPrefix("reason") == true)
        }
        #expect(CreditSpend.problems(key: nil, amount: nil, reason: nil).count == 3)
    }

    @Test("a retry is the same user, amount and reason; its event's id comes from the key")
    func sameRequestAndEvent() {
        let spend = CreditSpend(
            id: "order-1", appId: "app", appUserId: "alice", amount: 30, reason: "sword", spentAt: referenceTime, balanceAfter: 70)
        #expect(spend.isSameRequest(appUserId: "alice", amount: 30, reason: "sword"))
        #expect(!spend.isSameRequest(appUserId: "bob", amount: 30, reason: "sword"))
        #expect(!spend.isSameRequest(appUserId: "alice", amount: 31, reason: "sword"))
        #expect(!spend.isSameRequest(appUserId: "alice", amount: 30, reason: "shield"))
        let event = spend.event(now: referenceTime.addingTimeInterval(5))
        #expect(event.id == spend.event(now: referenceTime.addingTimeInterval(9)).id, "recorded again, the same event")
        #expect(event.type == .creditsSpent && event.occurredAt == referenceTime && event.details?.credits == 30)
        #expect(event.details?.creditBalance == 70 && event.details?.spendId == "order-1" && event.details?.reason == "sword")
    }
}
