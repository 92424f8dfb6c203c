import Foundation
import StorekeeperDomain
import Testing

/// Which retention answer applies to a subscriber: the first that matches, in the app's order.
@Suite("retention choices")
struct RetentionRuleTests {
    let message = "7f1f5a37-9a53-4e0b-8f5d-000000000001"

    func facts(product: String = "monthly", locale: String = "en_US", renewals: Int? = 0, retry: Bool = false) -> RetentionFacts {
        RetentionFacts(productId: product, locale: locale, renewals: renewals, inBillingRetry: retry)
    }

    @Test("conditions: products, locales by language or exactly, renewals at least, billing retry either way; none: nothing")
    func conditions() {
        let retry = RetentionChoice(messageId: "r", billingRetry: true)
        let french = RetentionChoice(messageId: "f", locales: ["fr"])
        let canadian = RetentionChoice(messageId: "c", locales: ["en-CA"])
        let loyal = RetentionChoice(messageId: "l", products: ["monthly"], minimumRenewals: 3, billingRetry: false)
        let choices = [retry, french, canadian, loyal]
        #expect(RetentionRule.choose(choices, facts: facts(retry: true))?.messageId == "r")
        #expect(RetentionRule.choose(choices, facts: facts(locale: "fr_CA"))?.messageId == "f")
        #expect(RetentionRule.choose(choices, facts: facts(locale: "FR"))?.messageId == "f", "case and a bare language")
        #expect(RetentionRule.choose(choices, facts: facts(locale: "fra_FR")) == nil, "a language is not a prefix of another")
        #expect(RetentionRule.choose(choices, facts: facts(locale: "en_CA"))?.messageId == "c")
        #expect(RetentionRule.choose(choices, facts: facts(renewals: 3))?.messageId == "l")
        #expect(RetentionRule.choose(choices, facts: facts(renewals: 2)) == nil)
        #expect(RetentionRule.choose(choices, facts: facts(renewals: nil)) == nil, "unknown renewals never meet a minimum")
        #expect(RetentionRule.choose(choices, facts: facts(product: "annual", renewals: 5)) == nil)
        #expect(RetentionRule.choose([], facts: facts()) == nil)
        #expect(RetentionRule.choose(choices + [RetentionChoice(messageId: "any")], facts: facts())?.messageId == "any")
    }

    @Test("configuration problems: a message id that is not a UUID, two kinds at once, an unknown product or offer, negative renewals")
    func problems() {
        let good = RetentionChoice(messageId: message, switchToProductId: "annual")
        #expect(RetentionChoice.problems([good], promotionalOffers: [], products: ["annual"], prefix: "r").isEmpty)
        let bad = [
            RetentionChoice(messageId: "hello"),
            RetentionChoice(messageId: message, switchToProductId: "annual", offerId: "back"),
            RetentionChoice(messageId: message, switchToProductId: "weekly"),
            RetentionChoice(messageId: message, minimumRenewals: -1, offerId: "unknown"),
        ]
        let found = RetentionChoice.problems(bad, promotionalOffers: ["back"], products: ["annual"], prefix: "r")
        #expect(found.count == 5, "\(found)")
        #expect(found.first == "r[0].messageId: the message's UUID")
    }
}
