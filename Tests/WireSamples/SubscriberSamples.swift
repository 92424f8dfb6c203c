public import Foundation
public import StorekeeperWire

/// Samples of the subscriber view and the events that carry it: one with every optional field
/// set, one with none.
public enum SubscriberSamples {
    public static let instant = WireSamples.instant

    public static var transaction: Subscriber.Transaction {
        var transaction = Subscriber.Transaction(
            appId: "com.example.app", appUserId: "user-8", transactionId: "2000000000000001", originalTransactionId: "2000000000000000",
            productId: "com.example.pro.monthly", productType: "auto_renewable", environment: "production", purchaseDate: instant,
            originalPurchaseDate: instant.addingTimeInterval(-86_400), expiresDate: instant.addingTimeInterval(2_592_000),
            cancellationDate: instant.addingTimeInterval(60), quantity: 1, credits: 0, ownershipType: "PURCHASED",
            verificationId: "3f2a9c1e-8d2b-4b8e-9a41-7c2d5e6f7a02")
        transaction.reinstatedAt = instant.addingTimeInterval(120)
        transaction.appTransactionId = "705000000000001"
        transaction.appAccountToken = "0f6a3c1e-8d2b-4b8e-9a41-7c2d5e6f7a8b"
        transaction.revocationType = "REFUND_PRORATED"
        transaction.revocationPercentage = 50_000
        transaction.billingPlanType = "MONTHLY"
        transaction.commitment = commitment
        transaction.offer = .init(type: 1, identifier: "trial_7", discountType: "FREE_TRIAL", period: "P1W")
        transaction.imported = false
        transaction.price = .init(milliunits: 9_990, currency: "USD")
        transaction.storefront = "USA"
        return transaction
    }

    public static let commitment = Subscriber.CommitmentTerms(
        billingPeriodNumber: 2, totalBillingPeriods: 12, expiresDate: Date(timeIntervalSince1970: 1_800_000_000))

    public static var entitlement: Subscriber.Entitlement {
        var entitlement = Subscriber.Entitlement(
            id: "pro", isActive: true, expiresAt: instant.addingTimeInterval(2_592_000), willRenew: false, periodType: .trial,
            productId: "com.example.pro.monthly", billingIssue: true, unsubscribed: true, source: .purchase)
        entitlement.transactionId = "2000000000000001"
        entitlement.originalTransactionId = "2000000000000000"
        entitlement.purchaseDate = instant
        entitlement.environment = "production"
        entitlement.ownership = .familyShared
        entitlement.gracePeriodExpiresAt = instant.addingTimeInterval(3_600)
        entitlement.billingIssueDetectedAt = instant
        entitlement.unsubscribeDetectedAt = instant
        entitlement.pendingProductId = "com.example.pro.annual"
        entitlement.priceIncreaseStatus = .pending
        return entitlement
    }

    public static var full: Subscriber {
        Subscriber(
            appUserId: "user-8", asOf: instant, activeEntitlements: ["com.example.pro.monthly", "com.example.removeads"],
            nonConsumables: [
                .init(
                    productId: "com.example.removeads", transactionId: "2000000000000005", originalTransactionId: "2000000000000005",
                    purchaseDate: instant, environment: "production")
            ],
            subscriptions: [
                .init(
                    productId: "com.example.pro.monthly", originalTransactionId: "2000000000000000", status: .inGracePeriod, isActive: true,
                    expiresDate: instant, autoRenewEnabled: true, gracePeriodExpiresDate: instant.addingTimeInterval(3_600),
                    environment: "production", billingPlanType: "MONTHLY", commitment: commitment, pendingProductId: "com.example.pro.annual",
                    priceIncreaseStatus: .agreed)
            ],
            nonRenewingSubscriptions: [
                .init(
                    productId: "com.example.season.pass", startDate: instant, endDate: instant.addingTimeInterval(7_776_000), isActive: true,
                    transactionIds: ["2000000000000006", "2000000000000007"])
            ],
            freeSubscriptions: [],
            consumables: [
                .init(
                    productId: "com.example.coins.100", transactionId: "2000000000000008", quantity: 2, credits: 200, purchaseDate: instant,
                    revoked: false, environment: "sandbox")
            ],
            creditBalance: -25, creditsSpent: 225, history: [transaction],
            provisionalEntitlements: [
                .init(
                    appId: "com.example.app", appUserId: "user-8", verificationId: "3f2a9c1e-8d2b-4b8e-9a41-7c2d5e6f7a03",
                    transactionId: "2000000000000009", originalTransactionId: "2000000000000009", productId: "com.example.pro.annual",
                    expiresAt: instant.addingTimeInterval(600))
            ],
            entitlements: ["pro": entitlement, "vip": .init(id: "vip", isActive: false, source: .promotional)],
            attributes: .init(email: "amy@example.com", displayName: "Amy", custom: ["plan": "family"]),
            accessSuspended: .init(reason: "consent_rescinded", since: instant, actor: "apple:RESCIND_CONSENT"),
            aliases: ["$anon:0f6a3c1e-8d2b-4b8e-9a41-7c2d5e6f7a8b"],
            appTransaction: .init(
                appTransactionId: "705000000000001", environment: "Production", originalAppVersion: "41", originalPurchaseDate: instant,
                originalPlatform: "iOS", signedDate: instant, receivedAt: instant))
    }

    public static var event: Subscriber.Event {
        var event = Subscriber.Event(
            id: "evt_v1_entitlement_granted_pro", type: "entitlement_granted", appId: "com.example.app", environment: "production",
            appUserId: "user-8", occurredAt: instant, recordedAt: instant, sequence: 3)
        event.productId = "com.example.pro.monthly"
        event.transactionId = "2000000000000001"
        event.originalTransactionId = "2000000000000000"
        event.priceMicros = 9_990_000
        event.currency = "USD"
        event.source = "notification"
        var details = Subscriber.Event.Details(reason: "requested", expiresDate: instant, credits: 5, entitlementId: "pro")
        details.expirationReason = "1"
        details.previousProductId = "com.example.pro.annual"
        details.fromAppUserId = "user-7"
        details.toAppUserId = "user-8"
        details.ownerAppUserId = "user-7"
        details.gracePeriodExpiresDate = instant
        details.verificationId = "3f2a9c1e-8d2b-4b8e-9a41-7c2d5e6f7a02"
        details.appTransactionId = "705000000000001"
        details.revocationType = "REFUND_FULL"
        details.revocationPercentage = 100_000
        details.appleEndpoint = "verify_receipt_production"
        details.downSince = instant
        details.grantId = "grant-1"
        details.refundPreference = "DECLINE"
        details.spendId = "spend-0001"
        details.creditBalance = 75
        details.experimentId = "pricing"
        details.arm = 1
        details.offeringId = "no_ads"
        event.details = details
        event.entitlements = full
        return event
    }

    public static let minimalEvent = Subscriber.Event(
        id: "evt_test", type: "test", appId: "com.example.app", appUserId: "storekeeper_test", occurredAt: instant, recordedAt: instant,
        sequence: 1)

    public static var all: [any WireMessage] {
        [
            full, Subscriber(appUserId: "user-9", asOf: instant), event, minimalEvent,
            EventPage(events: [.init(cursor: 17, event: event), .init(cursor: 18, event: minimalEvent)], nextCursor: 18),
            EventPage(events: [], nextCursor: 0),
            Subscriber.SubscriberAttributes(email: "amy@example.com", displayName: "Amy", custom: ["plan": "family"]),
            Subscriber.SubscriberAttributes(),
            AttributesPatch(email: .set("amy@example.com"), displayName: .clear, custom: .set(["plan": "family", "old": nil])),
            AttributesPatch(custom: .clear),
            AttributesPatch(),
        ]
    }
}
