public import Foundation
public import StorekeeperWire

/// One encoded sample of every `WireMessage` (two where optional fields change the shape): every
/// optional field set in one, none in the other, values as the server writes them.
public enum WireSamples {
    public static let instant = Date(timeIntervalSince1970: 1_780_000_000.123)

    public static let grant = Verification.Grant(
        granted: ["2000000000000001"], alreadyGranted: ["2000000000000000"], revoked: [],
        conflicts: [
            .init(
                code: Verification.Grant.Conflict.ownedByAnotherUser, transactionId: "2000000000000002", originalTransactionId: "2000000000000002",
                productId: "com.example.pro.monthly")
        ],
        transfers: [.init(originalTransactionId: "2000000000000003", fromAppUserId: "user-7", toAppUserId: "user-8")],
        unknownProducts: ["com.example.unknown"], creditsAdded: 100, subscriptionsUpdated: ["2000000000000000"], reinstated: ["2000000000000004"])

    public static let monthly = CatalogProduct(
        productId: "com.example.pro.monthly", type: "auto_renewable", status: "ready_for_sale", duration: "P1M", priceMicros: 9_990_000,
        currency: "USD", displayName: "Pro, monthly")
    public static let coins = CatalogProduct(productId: "com.example.coins.100", type: "consumable", status: "ready_for_sale", creditAmount: 100)

    public static let spend = CreditSpendEntry(
        id: "spend-0001", appUserId: "user-8", amount: 25, reason: "unlocked a level", spentAt: instant, balanceAfter: 75)

    public static let all: [any WireMessage] =
        [
            ErrorBody(code: .insufficientCredits, message: "the balance is 3", balance: 3),
            ErrorBody(code: .notFound, message: "no such verification"),
            Verification(
                id: "3f2a9c1e-8d2b-4b8e-9a41-7c2d5e6f7a01", appUserId: "user-8", state: .retryScheduled, reason: "apple_http_503", attempts: 2,
                appleStatuses: [21005, 21005],
                environment: "sandbox", nextAttemptAt: instant.addingTimeInterval(30), createdAt: instant, updatedAt: instant.addingTimeInterval(5),
                finalizedAt: nil, flagged: true, grant: nil),
            Verification(
                id: "3f2a9c1e-8d2b-4b8e-9a41-7c2d5e6f7a02", appUserId: "user-8", state: .verified, attempts: 1, appleStatuses: [0],
                environment: "production", createdAt: instant,
                updatedAt: instant, finalizedAt: instant, flagged: false, grant: grant),
            Verification(
                id: "3f2a9c1e-8d2b-4b8e-9a41-7c2d5e6f7a03", appUserId: "user-8", state: .pending, attempts: 0, appleStatuses: [], createdAt: instant,
                updatedAt: instant, flagged: false),
            grant,
            Verification.Grant(),
            SignedTransactionSubmission(
                appUserId: "user-8", signedTransaction: "eyJhbGciOiJFUzI1NiJ9.e30.c2ln", appAccountToken: "0f6a3c1e-8d2b-4b8e-9a41-7c2d5e6f7a8b"),
            SignedTransactionSubmission(appUserId: "user-8", signedTransaction: "eyJhbGciOiJFUzI1NiJ9.e30.c2ln"),
            LogInRequest(anonymousId: "$anon:0f6a3c1e-8d2b-4b8e-9a41-7c2d5e6f7a8b"),
            LogInAnswer(
                appUserId: "user-8", outcome: .linked, transactionIds: ["2000000000000001"], aliases: ["$anon:0f6a3c1e-8d2b-4b8e-9a41-7c2d5e6f7a8b"]),
            WinBackOffers(offers: [
                .init(offerId: "come_back", productId: "com.example.pro.monthly", originalTransactionId: "2000000000000000", configured: true)
            ]),
            PromotionalOfferRequest(productId: "com.example.pro.monthly", offerId: "loyal_50"),
            PromotionalOfferSignature(
                productId: "com.example.pro.monthly", offerId: "loyal_50", reason: "current_subscriber",
                appAccountToken: "0f6a3c1e-8d2b-4b8e-9a41-7c2d5e6f7a8b",
                v1: .init(
                    keyIdentifier: "KEY123ABCD", nonce: "5b1c2d3e-4f5a-4b6c-8d7e-9f0a1b2c3d4e", timestamp: 1_780_000_000_123, signature: "MEUCIQ=="),
                jws: "eyJhbGciOiJFUzI1NiJ9.e30.c2ln"),
            IntroductoryOfferRequest(productId: "com.example.pro.monthly"),
            IntroductoryEligibility(
                productId: "com.example.pro.monthly", eligible: true, reason: "new_to_group", jws: "eyJhbGciOiJFUzI1NiJ9.e30.c2ln"),
            IntroductoryEligibility(productId: "com.example.pro.monthly", eligible: false, reason: "subscribed_in_group", jws: nil),
            AppTransactionSubmission(signedAppTransaction: "eyJhbGciOiJFUzI1NiJ9.e30.c2ln"),
            AppTransactionInfo(
                appTransactionId: "705000000000001", environment: "Production", originalAppVersion: "41", originalPurchaseDate: instant,
                originalPlatform: "iOS", signedDate: instant, receivedAt: instant),
            AppTransactionInfo(
                appTransactionId: "705000000000001", environment: "Sandbox", originalAppVersion: nil, originalPurchaseDate: nil,
                originalPlatform: nil,
                signedDate: instant, receivedAt: instant),
            CustomerCenterActionReport(id: "5b1c2d3e-4f5a-4b6c-8d7e-9f0a1b2c3d4e", action: CustomerCenterActionReport.manageSubscriptionsShown),
            CustomerCenterActionReport(
                id: "5b1c2d3e-4f5a-4b6c-8d7e-9f0a1b2c3d4f", action: CustomerCenterActionReport.refundRequested, transactionId: "2000000000000001",
                outcome: "requested"),
            CustomerCenterActionRecorded(eventId: "evt_01", type: "refund_requested_in_app"),
            monthly,
            coins,
            ProductList(products: [monthly, coins]),
            OfferingsAnswer(
                currentOfferingId: "default", selectedBy: "rule", ruleId: "eu-2",
                offerings: [
                    .init(
                        id: "default", description: "Pro at full price",
                        packages: [
                            .init(id: "$monthly", productId: monthly.productId, product: monthly),
                            .init(id: "coins", productId: coins.productId, product: coins),
                        ],
                        metadata: ["headline": .string("Go Pro"), "trialDays": .number(7), "badge": .null, "colors": .array([.string("#112233")])])
                ]),
            OfferingsAnswer(currentOfferingId: nil, selectedBy: "none", ruleId: nil, offerings: []),
            OfferingsAnswer(
                currentOfferingId: "no_ads", selectedBy: "experiment", ruleId: nil,
                experiment: .init(experimentId: "pricing", arm: 1, offeringId: "no_ads", enrolledAt: instant),
                offerings: []),
            CreditSpendRequest(amount: 25, reason: "unlocked a level"),
            spend,
            CreditSpendAnswer(spend: spend, balance: 75, replayed: false),
            CreditHistory(appUserId: "user-8", balance: 75, purchased: 100, spent: 25, spends: [spend], nextBefore: 41),
            CreditHistory(appUserId: "user-8", balance: 0, purchased: 0, spent: 0, spends: [], nextBefore: nil),
        ] + SubscriberSamples.all
}
