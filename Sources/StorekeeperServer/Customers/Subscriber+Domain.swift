import Foundation
import StorekeeperDomain
import StorekeeperWire

extension Subscriber {
    /// The subscriber view as the API answers it and events carry it.
    init(_ view: SubscriberView) {
        self.init(
            appUserId: view.appUserId, asOf: view.asOf, activeEntitlements: view.activeEntitlements,
            nonConsumables: view.nonConsumables.map(OwnedProduct.init), subscriptions: view.subscriptions.map(Subscription.init),
            nonRenewingSubscriptions: view.nonRenewingSubscriptions.map {
                NonRenewing(
                    productId: $0.productId, startDate: $0.startDate, endDate: $0.endDate, isActive: $0.isActive, transactionIds: $0.transactionIds)
            },
            freeSubscriptions: view.freeSubscriptions.map(OwnedProduct.init),
            consumables: view.consumables.map {
                ConsumablePurchase(
                    productId: $0.productId, transactionId: $0.transactionId, quantity: $0.quantity, credits: $0.credits,
                    purchaseDate: $0.purchaseDate, revoked: $0.revoked, environment: $0.environment)
            },
            creditBalance: view.creditBalance, creditsSpent: view.creditsSpent, history: view.history.map(Transaction.init),
            provisionalEntitlements: view.provisionalEntitlements.map {
                ProvisionalGrant(
                    appId: $0.appId, appUserId: $0.appUserId, verificationId: $0.verificationId, transactionId: $0.transactionId,
                    originalTransactionId: $0.originalTransactionId, productId: $0.productId, expiresAt: $0.expiresAt)
            },
            entitlements: view.entitlements.mapValues(Entitlement.init),
            attributes: view.attributes.map(SubscriberAttributes.init),
            accessSuspended: view.accessSuspended.map { AccessSuspension(reason: $0.reason, since: $0.since, actor: $0.actor) },
            aliases: view.aliases,
            appTransaction: view.appTransaction.map(AppTransactionInfo.init))
    }
}

extension Subscriber.SubscriberAttributes {
    /// What is said about a customer, as the attributes route answers it and the view carries it.
    init(_ attributes: StorekeeperDomain.SubscriberAttributes) {
        self.init(email: attributes.email, displayName: attributes.displayName, custom: attributes.custom)
    }
}

extension AppTransactionInfo {
    /// The customer's app transaction as kept, as the app-transaction route answers it and the view carries it.
    init(_ stored: CustomerAppTransaction) {
        self.init(
            appTransactionId: stored.appTransactionId, environment: stored.environment, originalAppVersion: stored.originalAppVersion,
            originalPurchaseDate: stored.originalPurchaseDate, originalPlatform: stored.originalPlatform, signedDate: stored.signedDate,
            receivedAt: stored.receivedAt)
    }
}

extension Subscriber.OwnedProduct {
    init(_ owned: SubscriberView.OwnedProduct) {
        self.init(
            productId: owned.productId, transactionId: owned.transactionId, originalTransactionId: owned.originalTransactionId,
            purchaseDate: owned.purchaseDate, environment: owned.environment)
    }
}

extension Subscriber.Subscription {
    init(_ subscription: SubscriberView.Subscription) {
        self.init(
            productId: subscription.productId, originalTransactionId: subscription.originalTransactionId,
            status: Status(rawValue: subscription.status.rawValue), isActive: subscription.isActive, expiresDate: subscription.expiresDate,
            autoRenewEnabled: subscription.autoRenewEnabled, gracePeriodExpiresDate: subscription.gracePeriodExpiresDate,
            environment: subscription.environment, billingPlanType: subscription.billingPlanType,
            commitment: subscription.commitment.map(Subscriber.CommitmentTerms.init), pendingProductId: subscription.pendingProductId,
            priceIncreaseStatus: subscription.priceIncreaseStatus.map { Subscriber.PriceIncreaseStatus(rawValue: $0.rawValue) })
    }
}

extension Subscriber.CommitmentTerms {
    init(_ terms: CommitmentTerms) {
        self.init(billingPeriodNumber: terms.billingPeriodNumber, totalBillingPeriods: terms.totalBillingPeriods, expiresDate: terms.expiresDate)
    }
}

extension Subscriber.Transaction {
    init(_ record: TransactionRecord) {
        self.init(
            appId: record.appId, appUserId: record.appUserId, transactionId: record.transactionId,
            originalTransactionId: record.originalTransactionId, productId: record.productId, productType: record.productType.rawValue,
            environment: record.environment, purchaseDate: record.purchaseDate, originalPurchaseDate: record.originalPurchaseDate,
            expiresDate: record.expiresDate, cancellationDate: record.cancellationDate, quantity: record.quantity, credits: record.credits,
            ownershipType: record.ownershipType, verificationId: record.verificationId)
        reinstatedAt = record.reinstatedAt
        appTransactionId = record.appTransactionId
        appAccountToken = record.appAccountToken
        revocationType = record.revocationType
        revocationPercentage = record.revocationPercentage
        billingPlanType = record.billingPlanType
        commitment = record.commitment.map(Subscriber.CommitmentTerms.init)
        offer = record.offer.map { Offer(type: $0.type, identifier: $0.identifier, discountType: $0.discountType, period: $0.period) }
        imported = record.imported
        price = record.price.map { Price(milliunits: $0.milliunits, currency: $0.currency) }
        storefront = record.storefront
    }
}

extension Subscriber.Entitlement {
    init(_ entitlement: StorekeeperDomain.Entitlement) {
        self.init(
            id: entitlement.id, isActive: entitlement.isActive, expiresAt: entitlement.expiresAt, willRenew: entitlement.willRenew,
            periodType: PeriodType(rawValue: entitlement.periodType.rawValue), productId: entitlement.productId,
            billingIssue: entitlement.billingIssue, unsubscribed: entitlement.unsubscribed, source: Source(rawValue: entitlement.source.rawValue))
        transactionId = entitlement.transactionId
        originalTransactionId = entitlement.originalTransactionId
        purchaseDate = entitlement.purchaseDate
        environment = entitlement.environment
        ownership = entitlement.ownership.map { Ownership(rawValue: $0.rawValue) }
        gracePeriodExpiresAt = entitlement.gracePeriodExpiresAt
        grantId = entitlement.grantId
        billingIssueDetectedAt = entitlement.billingIssueDetectedAt
        unsubscribeDetectedAt = entitlement.unsubscribeDetectedAt
        pendingProductId = entitlement.pendingProductId
        priceIncreaseStatus = entitlement.priceIncreaseStatus.map { Subscriber.PriceIncreaseStatus(rawValue: $0.rawValue) }
    }
}

extension Subscriber.Event {
    /// An event as the feed serves it.
    init(_ event: SubscriberEvent) {
        self.init(
            id: event.id, type: event.type.rawValue, appId: event.appId, environment: event.environment, appUserId: event.appUserId,
            occurredAt: event.occurredAt, recordedAt: event.recordedAt, sequence: event.sequence)
        productId = event.productId
        transactionId = event.transactionId
        originalTransactionId = event.originalTransactionId
        priceMicros = event.priceMicros
        currency = event.currency
        source = event.source?.rawValue
        details = event.details.map(Details.init)
        entitlements = event.entitlements.map(Subscriber.init)
    }
}

extension Subscriber.Event.Details {
    init(_ details: SubscriberEvent.Details) {
        self.init(reason: details.reason, expiresDate: details.expiresDate, credits: details.credits, entitlementId: details.entitlementId)
        expirationReason = details.expirationReason
        previousProductId = details.previousProductId
        fromAppUserId = details.fromAppUserId
        toAppUserId = details.toAppUserId
        ownerAppUserId = details.ownerAppUserId
        gracePeriodExpiresDate = details.gracePeriodExpiresDate
        verificationId = details.verificationId
        appTransactionId = details.appTransactionId
        revocationType = details.revocationType
        revocationPercentage = details.revocationPercentage
        appleEndpoint = details.appleEndpoint
        downSince = details.downSince
        grantId = details.grantId
        refundPreference = details.refundPreference
        spendId = details.spendId
        creditBalance = details.creditBalance
        experimentId = details.experimentId
        arm = details.arm
        offeringId = details.offeringId
    }
}
