import Persistence
import StorekeeperCore

/// Every use case the HTTP edge calls, bound once to the store the process was wired with.
/// Part of composition: the only place (with `StorekeeperApplication`) that holds the union of
/// the storage ports; controllers reach storage through these and nothing else.
struct UseCases: Sendable {
    let submitEvidence: SubmitEvidence
    let ingestNotification: IngestNotification
    let receiveNotification: ReceiveNotification
    let awaitVerification: AwaitVerification
    let verifications: ReadVerifications
    let requeueVerification: RequeueVerification
    let readSubscriber: ReadSubscriber
    let refreshSubscriber: RefreshSubscriber
    let purchases: ReadPurchases
    let revenue: ReadRevenue
    let subscriptionMetrics: ReadSubscriptionMetrics
    let catalog: ManageCatalog
    let promotionalGrants: ManagePromotionalGrants
    let offerings: ManageOfferings
    let experiments: ManageExperiments
    let customers: ManageCustomers
    let findCustomers: FindCustomers
    let identity: ManageIdentity
    let importCustomers: ImportCustomers
    let eventFeed: ReadEventFeed
    let webhookEndpoints: WebhookEndpointActions
    let operations: ReadOperations
    let consoleSessions: ManageConsoleSessions
    let gapFillHistory: GapFillHistory
    let appleCalls: AppleCallHistory
    let offers: DecideOffers
    let credits: ManageCredits
    let refundRequests: AnswerRefundRequests
    let retention: ChooseRetentionMessage
    let adminTokens: ManageAdminTokens
    let attempts: CountAttempts
    let appTransactions: RecordAppTransaction
    let customerCenter: RecordCustomerCenterAction

    init(store: any StorekeeperStore) {
        submitEvidence = SubmitEvidence(store: store)
        ingestNotification = IngestNotification(store: store)
        receiveNotification = ReceiveNotification(ingest: ingestNotification)
        awaitVerification = AwaitVerification(store: store)
        verifications = ReadVerifications(store: store)
        requeueVerification = RequeueVerification(store: store)
        readSubscriber = ReadSubscriber(store: store)
        refreshSubscriber = RefreshSubscriber(store: store)
        purchases = ReadPurchases(store: store)
        revenue = ReadRevenue(store: store)
        subscriptionMetrics = ReadSubscriptionMetrics(store: store)
        catalog = ManageCatalog(store: store)
        promotionalGrants = ManagePromotionalGrants(store: store)
        offerings = ManageOfferings(store: store)
        experiments = ManageExperiments(store: store)
        customers = ManageCustomers(store: store)
        findCustomers = FindCustomers(store: store)
        identity = ManageIdentity(store: store)
        importCustomers = ImportCustomers(store: store)
        eventFeed = ReadEventFeed(store: store)
        webhookEndpoints = WebhookEndpointActions(store: store)
        operations = ReadOperations(store: store)
        consoleSessions = ManageConsoleSessions(store: store)
        gapFillHistory = GapFillHistory(store: store)
        appleCalls = AppleCallHistory(store: store)
        offers = DecideOffers(store: store)
        credits = ManageCredits(store: store)
        refundRequests = AnswerRefundRequests(store: store)
        retention = ChooseRetentionMessage(store: store)
        adminTokens = ManageAdminTokens(store: store)
        attempts = CountAttempts(store: store)
        appTransactions = RecordAppTransaction(store: store)
        customerCenter = RecordCustomerCenterAction(store: store)
    }
}
