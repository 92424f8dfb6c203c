import AppStoreModels
import Foundation
import JobQueue
import Persistence
import StorekeeperCore
import StorekeeperDomain
import StorekeeperTesting
import TestFixtures
import Testing

/// The application layer's submission and notification use cases over every storage adapter:
/// the decisions are Core's, the adapters only apply them.
@Suite("use cases over storage")
struct UseCaseTests {
    let t0 = referenceTime

    func notification(_ uuid: String, original: String? = "1", purchase: IngestNotification.Purchase) -> IngestNotification.Notification {
        IngestNotification.Notification(
            appId: "app", notificationUUID: uuid, notificationType: "DID_RENEW", subtype: nil, signedDate: t0,
            originalTransactionId: original, environment: "sandbox", payload: "payload-\(uuid)", version: .v2, purchase: purchase)
    }

    @Test("SubmitEvidence: a new verification starts in the lifecycles' initial states; the same post returns it", arguments: StoreFactory.all)
    func submission(factory: StoreFactory) async throws {
        let store = try await factory.make()
        let submit = SubmitEvidence(store: store)
        let evidence = EvidenceSubmission(
            appId: "app", appUserId: "alice", evidenceHash: "h", evidence: .receipt(base64: "cmVjZWlwdA=="), claims: ["9", "9", "8"])
        let first = try await submit(evidence, now: t0)
        #expect(first.created && first.verification.state == VerificationLifecycle.initial)
        let again = try await submit(evidence, now: t0.addingTimeInterval(1))
        #expect(!again.created && again.verification.id == first.verification.id)
        var refresh = evidence
        refresh.refresh = true
        let pendingRefresh = try await submit(refresh, now: t0.addingTimeInterval(2))
        #expect(!pendingRefresh.created, "a refresh waits until the previous generation has ended")
        var other = evidence
        other.appUserId = "bob"
        let bob = try await submit(other, now: t0.addingTimeInterval(3))
        #expect(bob.created && bob.verification.id != first.verification.id)
        let jobs = try await store.leaseJobs(kinds: [verifyReceiptJobKind], limit: 10, owner: "t", now: t0.addingTimeInterval(4), leaseDuration: 30)
        #expect(Set(jobs.map(\.jobId)) == [first.verification.jobId, bob.verification.jobId])
    }

    @Test("IngestNotification: outcomes from the verified purchase; nothing submitted without an owner", arguments: StoreFactory.all)
    func outcomes(factory: StoreFactory) async throws {
        let store = try await factory.make()
        let ingest = IngestNotification(store: store)
        let consumption = try await ingest(
            notification("c", purchase: .consumptionRequest(.init(transactionId: "c-tx", reason: nil, policy: RefundPolicy()))), now: t0)
        #expect(consumption.created && consumption.outcome == .consumptionRequested && consumption.verificationId == nil)
        let rejected = try await ingest(notification("r", purchase: .rejected(.jwsSignatureInvalid)), now: t0)
        #expect(rejected.outcome == .rejected(.jwsSignatureInvalid) && rejected.outcome.rawValue == "jws_signature_invalid")
        let unowned = try await ingest(notification("u", purchase: .grant(.notification(signedPayload: "x"), evidenceHash: "x")), now: t0)
        #expect(unowned.outcome == .unowned && unowned.verificationId == nil)
        let anonymous = try await ingest(
            notification("a", original: nil, purchase: .grant(.notification(signedPayload: "y"), evidenceHash: "y")), now: t0)
        #expect(anonymous.outcome == .unowned)
        var consent = notification("rc", original: nil, purchase: .none(.noTransaction))
        consent.consent = .unverified(.appTransactionUnreadable)
        #expect(try await ingest(consent, now: t0).outcome == .appTransactionUnreadable)
        consent.notificationUUID = "rc-2"
        consent.consent = .appTransaction(id: "customer-nobody-knows", occurredAt: t0)
        #expect(try await ingest(consent, now: t0).outcome == .consentRescindedUnknownCustomer)
        let duplicate = try await ingest(
            notification("c", purchase: .consumptionRequest(.init(transactionId: "c-tx", reason: nil, policy: RefundPolicy()))), now: t0)
        #expect(!duplicate.created)
        #expect(try await store.verificationCounts().values.reduce(0, +) == 0)
    }

    @Test("IngestNotification: a stored notification is forwarded to the endpoints that take notifications only", arguments: StoreFactory.all)
    func forwards(factory: StoreFactory) async throws {
        let store = try await factory.make()
        var forwarding = WebhookEndpoint(
            id: "fwd", appId: "app", url: "https://example.com/a", secrets: [.init(value: "whsec_AAAA", createdAt: t0)], createdAt: t0,
            updatedAt: t0)
        forwarding.appStoreNotifications = true
        let events = WebhookEndpoint(
            id: "events", appId: "app", url: "https://example.com/b", secrets: [.init(value: "whsec_AAAA", createdAt: t0)],
            createdAt: t0, updatedAt: t0)
        try await store.createEndpoint(forwarding)
        try await store.createEndpoint(events)
        _ = try await IngestNotification(store: store)(notification("n", purchase: .none(.noTransaction)), now: t0)
        _ = try await IngestNotification(store: store)(notification("n", purchase: .none(.noTransaction)), now: t0)
        #expect(try await store.deliveries(endpointId: "fwd", state: nil, before: nil, limit: 10).count == 1)
        #expect(try await store.deliveries(endpointId: "events", state: nil, before: nil, limit: 10).isEmpty)
    }
}

extension UseCaseTests {
    func leaseReceiptJobs(_ store: any StorekeeperStore, at now: Date) async throws -> [JobLease] {
        try await store.leaseJobs(kinds: [verifyReceiptJobKind], limit: 10, owner: "t", now: now, leaseDuration: 30)
    }

    @Test(
        "VerificationOutcomes.begin: proceeds under the lease; an app no longer configured holds it; a second runner is turned away",
        arguments: StoreFactory.all)
    func begin(factory: StoreFactory) async throws {
        let store = try await factory.make()
        let attempts = VerificationOutcomes(store: store)
        let submit = SubmitEvidence(store: store)
        let kept = try await submit(
            EvidenceSubmission(appId: "app", appUserId: "alice", evidenceHash: "k", evidence: .receipt(base64: "a2VwdA==")), now: t0)
        let gone = try await submit(
            EvidenceSubmission(appId: "gone", appUserId: "alice", evidenceHash: "g", evidence: .receipt(base64: "Z29uZQ==")), now: t0)
        let leases = try await leaseReceiptJobs(store, at: t0)
        let keptLease = try #require(leases.first { $0.jobId == kept.verification.jobId })
        let goneLease = try #require(leases.first { $0.jobId == gone.verification.jobId })
        let apps = ["app": "configured"]
        guard case .proceed(let record, let evidence, let app) = try await attempts.begin(keptLease, apps: apps, now: t0) else {
            Issue.record("a configured app's verification must proceed")
            return
        }
        #expect(record.id == kept.verification.id && evidence == "a2VwdA==" && app == "configured")
        #expect(record.state == .verifying && record.attempts == keptLease.attempt)
        #expect(try await store.verification(id: kept.verification.id)?.state == .verifying)
        guard case .done = try await attempts.begin(goneLease, apps: apps, now: t0) else {
            Issue.record("an unconfigured app's verification must not proceed")
            return
        }
        let held = try #require(try await store.verification(id: gone.verification.id))
        #expect(held.state == .configurationError && held.reason == .appNotConfigured)
        var stale = keptLease
        stale.token = "someone-else"
        guard case .done = try await attempts.begin(stale, apps: apps, now: t0) else {
            Issue.record("a lease not held must not start an attempt")
            return
        }
        #expect(try await store.verification(id: kept.verification.id)?.attempts == keptLease.attempt)
        var missing = keptLease
        missing.payload = "no-such-verification"
        guard case .done = try await attempts.begin(missing, apps: apps, now: t0) else {
            Issue.record("a job without its verification must not proceed")
            return
        }
        #expect(try await store.jobCounts()[.discarded] == 1, "a job without its verification is discarded")
    }

    @Test("a stopping worker releases a verification through its lifecycle: not counted, due now, its job leasable", arguments: StoreFactory.all)
    func releaseAtShutdown(factory: StoreFactory) async throws {
        let store = try await factory.make()
        let submitted = try await SubmitEvidence(store: store)(
            EvidenceSubmission(appId: "app", appUserId: "alice", evidenceHash: "h", evidence: .receipt(base64: "cmVjZWlwdA==")), now: t0)
        let lease = try #require(try await leaseReceiptJobs(store, at: t0).first)
        let outcomes = VerificationOutcomes(store: store)
        #expect(try await outcomes.markVerifying(lease, verificationId: submitted.verification.id, now: t0))
        #expect(try await outcomes.release(lease, verificationId: submitted.verification.id, now: t0.addingTimeInterval(1)))
        let released = try #require(try await store.verification(id: submitted.verification.id))
        #expect(released.state == .retryScheduled && released.reason == .releasedAtShutdown && released.attempts == 0)
        #expect(try await outcomes.release(lease, verificationId: submitted.verification.id, now: t0.addingTimeInterval(2)) == false)
        let again = try #require(try await leaseReceiptJobs(store, at: t0.addingTimeInterval(2)).first)
        #expect(again.jobId == lease.jobId && again.attempt == lease.attempt, "a released attempt is not counted")
    }

    @Test("an operator's requeue: refused while a live lease holds the job, takes over once it expired, unknown ids", arguments: StoreFactory.all)
    func requeue(factory: StoreFactory) async throws {
        let store = try await factory.make()
        let requeue = RequeueVerification(store: store)
        #expect(try await requeue(verificationId: "nobody", now: t0) == .notFound)
        let submitted = try await SubmitEvidence(store: store)(
            EvidenceSubmission(appId: "app", appUserId: "alice", evidenceHash: "h", evidence: .receipt(base64: "cmVjZWlwdA==")), now: t0)
        let lease = try #require(try await leaseReceiptJobs(store, at: t0).first)
        #expect(try await VerificationOutcomes(store: store).markVerifying(lease, verificationId: submitted.verification.id, now: t0))
        #expect(try await requeue(verificationId: submitted.verification.id, now: t0.addingTimeInterval(5)) == .busy)
        // The worker died: its lease runs out and the operator takes the verification over.
        #expect(try await requeue(verificationId: submitted.verification.id, now: lease.expiresAt.addingTimeInterval(1)) == .requeued)
        let record = try #require(try await store.verification(id: submitted.verification.id))
        #expect(record.state == .pending && record.finalizedAt == nil && record.nextAttemptAt == nil)
        // The dead worker's late ending writes nothing: its lease token no longer holds the job.
        #expect(
            try await VerificationOutcomes(store: store).markVerifying(lease, verificationId: submitted.verification.id, now: t0) == false)
        #expect(try await leaseReceiptJobs(store, at: lease.expiresAt.addingTimeInterval(2)).count == 1)
    }
}

extension UseCaseTests {
    @Test("endpoint lifecycle: an operator's pause is kept when a delivery dies; a stale save conflicts", arguments: StoreFactory.all)
    func endpointLifecycle(factory: StoreFactory) async throws {
        let store = try await factory.make()
        let stored = WebhookEndpoint(
            id: "e", appId: "app", url: "https://example.com/a", secrets: [.init(value: "whsec_AAAA", createdAt: t0)], createdAt: t0,
            updatedAt: t0)
        try await store.createEndpoint(stored)
        let actions = WebhookEndpointActions(store: store)
        guard case .saved(let paused) = try await actions.save(stored, over: stored, requested: .paused, now: t0) else {
            Issue.record("the operator's pause was not saved")
            return
        }
        #expect(paused.state == .paused && paused.pausedReason == EndpointLifecycle.operatorReason)
        // A save made from the endpoint as read before the pause finds it moved on.
        var edited = stored
        edited.description = "stale"
        #expect(try await actions.save(edited, over: stored, requested: nil, now: t0) == .conflict)
        #expect(EndpointLifecycle.next(from: .paused, on: .deliveryDied(reason: DeliveryLifecycle.failingReason)) == nil)
        guard case .saved(let resumed) = try await actions.save(paused, over: paused, requested: .active, now: t0) else {
            Issue.record("the resume was not saved")
            return
        }
        #expect(resumed.state == .active && resumed.pausedReason == nil)
        #expect(try await actions.delete(appId: "app", id: "e", now: t0))
        #expect(try await actions.save(resumed, over: resumed, requested: nil, now: t0) == .notFound)
        #expect(try await actions.delete(appId: "app", id: "e", now: t0) == false)
    }
}

extension UseCaseTests {
    /// Apple as a refresh meets it: an answer, or a failure.
    struct FakeHistory: AppleHistoryFetching {
        var answer: Result<AppleHistoryOutcome, AppleCallFailure>
        func fetch(transactionIds: [String], now: Date) async throws -> AppleHistoryOutcome { try answer.get() }
    }

    /// Apple's health saying one thing, and counting what it was told.
    final class FakeHealth: AppleAvailability, @unchecked Sendable {
        let admission: AppleHealth.Admission
        var recorded: [Bool] = []
        init(_ admission: AppleHealth.Admission) { self.admission = admission }
        func admitting(now: Date) async -> AppleHealth.Admission { admission }
        func record(answered: Bool, probe: Bool, sentAt: Date, now: Date) async { recorded.append(answered) }
        func delayAfterFailure(sentAt: Date, scheduled: TimeInterval, now: Date, unitRandom: Double) async -> TimeInterval { scheduled }
        func downSince() -> Date? { nil }
    }

    @Test(
        "RefreshFromServerAPI: Apple down waits uncounted; a transient failure retries after Apple's wait; a refused key holds; a refusal is invalid",
        arguments: StoreFactory.all)
    func refreshFromServerAPI(factory: StoreFactory) async throws {
        let store = try await factory.make()
        let outcomes = VerificationOutcomes(store: store)
        let refresh = RefreshFromServerAPI(outcomes: outcomes)
        func run(_ user: String, history: FakeHistory?, health: FakeHealth?) async throws -> (RefreshFromServerAPI.Step, VerificationRecord) {
            let submitted = try await SubmitEvidence(store: store)(
                EvidenceSubmission(appId: "app", appUserId: user, evidenceHash: user, evidence: .receipt(base64: "cmVjZWlwdA==")), now: t0)
            let lease = try #require(try await leaseReceiptJobs(store, at: t0).first { $0.jobId == submitted.verification.jobId })
            #expect(try await outcomes.markVerifying(lease, verificationId: submitted.verification.id, now: t0))
            let step = try await refresh(
                lease, verificationId: submitted.verification.id, transactionIds: ["1"], configurationFingerprint: "f", history: history,
                health: health, retry: RetryPolicy(base: 10, cap: 10, jitter: 0), probeCapSeconds: 5, unitRandom: { 0 }, now: { self.t0 })
            return (step, try #require(try await store.verification(id: submitted.verification.id)))
        }
        func failure(_ code: String, transient: Bool = false, retryAfter: Date? = nil, refused: Bool = false) -> FakeHistory {
            FakeHistory(
                answer: .failure(
                    AppleCallFailure(
                        code: code, isTransient: transient, retryAfter: retryAfter, appleAnswered: !transient, credentialsRefused: refused)))
        }
        let down = FakeHealth(.wait(until: t0.addingTimeInterval(30)))
        let (waited, waiting) = try await run("down", history: failure("never_called"), health: down)
        guard case .ended("apple_down") = waited else { throw TestFailure("\(waited)") }
        #expect(waiting.state == .retryScheduled && waiting.reason == .appleDown && waiting.nextAttemptAt == t0.addingTimeInterval(30))
        #expect(down.recorded.isEmpty, "Apple was not called")

        let health = FakeHealth(.call)
        let (retried, retrying) = try await run(
            "busy", history: failure("rate_limited", transient: true, retryAfter: t0.addingTimeInterval(100)), health: health)
        guard case .ended("retry") = retried else { throw TestFailure("\(retried)") }
        #expect(retrying.state == .retryScheduled && retrying.reason == .serverAPI("rate_limited"))
        #expect(retrying.nextAttemptAt == t0.addingTimeInterval(100), "Apple's wait, longer than the schedule's 10 s")
        #expect(health.recorded == [false])

        let (_, held) = try await run("key", history: failure("unauthorized", refused: true), health: nil)
        #expect(held.state == .configurationError && held.reason == .serverAPI("unauthorized"))
        let (_, refused) = try await run(
            "refused", history: FakeHistory(answer: .success(.rejected(reason: .serverAPINoTransactions, message: ""))), health: nil)
        #expect(refused.state == .invalid && refused.reason == .serverAPINoTransactions)
        let (_, unconfigured) = try await run("nokey", history: nil, health: nil)
        #expect(unconfigured.state == .configurationError && unconfigured.reason == .serverAPINotConfigured)
    }

    struct TestFailure: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }
}

extension UseCaseTests {
    /// verifyReceipt answering the same each time, counting its calls.
    final class FakeReceipts: AppleReceiptVerifying, @unchecked Sendable {
        let answer: AttemptClassification
        var calls: [String] = []
        init(_ answer: AttemptClassification) { self.answer = answer }
        func verify(in environment: AppStoreEnvironment) async -> AttemptClassification {
            calls.append(environment.storageName)
            return answer
        }
    }

    final class FakeObserver: ReceiptAttemptObserver, @unchecked Sendable {
        var told: [String] = []
        func rejectedLocally(_ reason: FailureReason) { told.append("rejected \(reason.rawValue)") }
        func finishedInvalid() { told.append("invalid") }
        func held(_ reason: FailureReason) { told.append("held \(reason.rawValue)") }
        func standIn(_ outcome: RunReceiptAttempt.StandIn, reason: FailureReason) {
            switch outcome {
            case .appleDown: told.append("stand-in apple_down")
            case .verified: told.append("stand-in verified")
            case .rejected(let refusal, _): told.append("stand-in \(refusal.rawValue)")
            case .unavailable: told.append("stand-in unavailable")
            }
        }
        func retried(reason: FailureReason, waitingForApple: Bool, provisional: Int) {
            told.append("retry \(reason.rawValue)\(waitingForApple ? " waiting" : "")")
        }
    }

    @Test(
        "RunReceiptAttempt: a forged receipt never reaches Apple; Apple down waits uncounted; a failure falls to the stand-in, then retries; a wrong secret holds",
        arguments: StoreFactory.all)
    func receiptAttempt(factory: StoreFactory) async throws {
        let store = try await factory.make()
        let outcomes = VerificationOutcomes(store: store)
        let local = RunReceiptAttempt.LocalCheck.verified(
            .init(
                bundleId: "com.example.app", environment: .production,
                purchases: [
                    .init(
                        productId: "monthly", transactionId: "2", originalTransactionId: "1", purchaseDate: t0, expiresDate: nil,
                        cancellationDate: nil)
                ]))
        func run(
            _ user: String, local: RunReceiptAttempt.LocalCheck, apple: FakeReceipts, standIn: FakeHistory? = nil, health: FakeHealth? = nil
        ) async throws -> (VerificationRecord, [String], RunReceiptAttempt.Step) {
            let submitted = try await SubmitEvidence(store: store)(
                EvidenceSubmission(appId: "app", appUserId: user, evidenceHash: user, evidence: .receipt(base64: "cmVjZWlwdA==")), now: t0)
            let lease = try #require(try await leaseReceiptJobs(store, at: t0).first { $0.jobId == submitted.verification.jobId })
            let record = try #require(try await store.verification(id: submitted.verification.id))
            #expect(try await outcomes.markVerifying(lease, verificationId: record.id, now: t0))
            let observer = FakeObserver()
            let attempt = RunReceiptAttempt(
                outcomes: outcomes,
                settings: .init(retry: RetryPolicy(base: 10, cap: 10, jitter: 0), probeCapSeconds: 5, outagePolicy: OutagePolicy()),
                observer: observer, unitRandom: { 0 }, now: { self.t0 })
            let step = try await attempt(
                lease, verification: record, local: local,
                app: .init(id: "app", bundleId: "com.example.app", acceptsSandbox: false, fingerprint: "f"),
                apple: .init(verifyReceipt: apple, serverAPI: standIn, health: { _ in health }))
            return (try #require(try await store.verification(id: record.id)), observer.told, step)
        }
        let never = FakeReceipts(.transient(reason: .appleTimeout, status: nil))
        let (forged, forgedTold, _) = try await run("forged", local: .rejected(.receiptSignatureInvalid), apple: never)
        #expect(forged.state == .invalid && forged.reason == .receiptSignatureInvalid && forgedTold == ["rejected receipt_signature_invalid"])
        let (waiting, waitingTold, _) = try await run("down", local: local, apple: never, health: FakeHealth(.wait(until: t0.addingTimeInterval(30))))
        #expect(never.calls.isEmpty, "Apple is not called while it is down")
        #expect(waiting.state == .retryScheduled && waiting.reason == .appleDown && waitingTold == ["retry apple_down waiting"])

        let failing = FakeReceipts(.transient(reason: .appleTimeout, status: nil))
        let refusing = FakeHistory(answer: .success(.rejected(reason: .serverAPINoTransactions, message: "")))
        let health = FakeHealth(.call)
        let (retrying, retryTold, _) = try await run("timeout", local: local, apple: failing, standIn: refusing, health: health)
        #expect(failing.calls == ["production"] && health.recorded == [false, true])
        #expect(retrying.state == .retryScheduled && retrying.reason == .appleTimeout && retrying.nextAttemptAt == t0.addingTimeInterval(10))
        #expect(retryTold == ["stand-in server_api_no_transactions", "retry apple_timeout"])

        let (held, heldTold, _) = try await run(
            "secret", local: .unchecked, apple: FakeReceipts(.configurationError(reason: .sharedSecretMismatch, status: AppStoreStatus(21004))))
        #expect(held.state == .configurationError && held.reason == .sharedSecretMismatch && heldTold == ["held shared_secret_mismatch"])
    }
}

extension UseCaseTests {
    struct FakeChecker: SignedEvidenceChecking {
        let answer: SignedEvidenceCheck
        func check(_ jws: String, now: Date) async -> SignedEvidenceCheck { answer }
    }

    @Test("RecheckSignedEvidence: stored evidence that no longer holds for the app ends the verification invalid", arguments: StoreFactory.all)
    func recheckSignedEvidence(factory: StoreFactory) async throws {
        let store = try await factory.make()
        let outcomes = VerificationOutcomes(store: store)
        let submitted = try await SubmitEvidence(store: store)(
            EvidenceSubmission(appId: "app", appUserId: "alice", evidenceHash: "jws", evidence: .receipt(base64: "cmVjZWlwdA==")), now: t0)
        let lease = try #require(try await leaseReceiptJobs(store, at: t0).first)
        #expect(try await outcomes.markVerifying(lease, verificationId: submitted.verification.id, now: t0))
        let step = try await RecheckSignedEvidence(outcomes: outcomes)(
            lease, verificationId: submitted.verification.id, evidence: "jws", checker: FakeChecker(answer: .rejected(.bundleIdMismatch)),
            now: t0)
        guard case .invalid = step else { throw TestFailure("\(step)") }
        let ended = try #require(try await store.verification(id: submitted.verification.id))
        #expect(ended.state == .invalid && ended.reason == .bundleIdMismatch)
    }

    /// Apple's notification as the tests script its verification; nil: refused.
    struct FakeNotificationVerifier: NotificationVerifying {
        let type: NotificationType?
        var transaction: IngestNotification.TransactionFact?

        func verify(_ signedPayload: String, now: Date) async throws -> VerifiedNotification {
            guard let type else { throw TestFailure("refused: not Apple's") }
            let payload = try JSONDecoder().decode(
                NotificationPayload.self,
                from: Data(#"{"notificationType":"\#(type.rawValue)","notificationUUID":"n-1","data":{"environment":"Sandbox"}}"#.utf8))
            return VerifiedNotification(
                appId: "app", refundPolicy: RefundPolicy(), consentPolicy: .record, type: type, uuid: "n-1", payload: payload,
                evidenceHash: "hash-of-\(signedPayload)", transaction: transaction, consent: nil)
        }
    }

    @Test(
        "ReceiveNotification: nothing is stored unless verified; a verified one is classified and stored once, a purchase nobody owns left",
        arguments: StoreFactory.all)
    func receiveNotification(factory: StoreFactory) async throws {
        let store = try await factory.make()
        let receive = ReceiveNotification(ingest: IngestNotification(store: store))
        await #expect(throws: TestFailure.self) { try await receive("jws", verifier: FakeNotificationVerifier(type: nil), now: t0) }
        let renewal = FakeNotificationVerifier(type: .didRenew, transaction: .verified(transactionId: "t-2", originalTransactionId: "o-1"))
        let (notification, first) = try await receive("jws", verifier: renewal, now: t0)
        #expect(first.created && first.outcome == .unowned && first.verificationId == nil)
        #expect(notification.notificationUUID == "n-1" && notification.originalTransactionId == "o-1" && notification.version == .v2)
        guard case .grant(_, let hash) = notification.purchase, hash == "hash-of-jws" else { throw TestFailure("\(notification.purchase)") }
        let (_, again) = try await receive("jws", verifier: renewal, now: t0.addingTimeInterval(1))
        #expect(!again.created, "Apple's second delivery changes nothing")
        let stored = try await store.notifications(appId: "app", originalTransactionIds: ["o-1"], limit: 10)
        #expect(stored.count == 1)
    }

    struct FakeAppTransactionVerifier: AppTransactionVerifying {
        let json: String?

        func verify(_ jws: String, now: Date) async throws -> (SignedAppTransaction, AppStoreEnvironment) {
            guard let json else { throw TestFailure("refused: not this app's") }
            return (try JSONDecoder().decode(SignedAppTransaction.self, from: Data(json.utf8)), .sandbox)
        }
    }

    @Test("RecordAppTransaction: kept only once verified, with what Apple signed", arguments: StoreFactory.all)
    func recordAppTransaction(factory: StoreFactory) async throws {
        let store = try await factory.make()
        let record = RecordAppTransaction(store: store)
        await #expect(throws: TestFailure.self) {
            try await record(appId: "app", appUserId: "dana", signed: "jws", verifier: FakeAppTransactionVerifier(json: nil), now: t0)
        }
        #expect(try await store.appTransaction(appId: "app", appUserId: "dana") == nil)
        let signed = #"{"appTransactionId":"at-1","originalApplicationVersion":"1.0","receiptType":"Sandbox"}"#
        let kept = try await record(appId: "app", appUserId: "dana", signed: "jws", verifier: FakeAppTransactionVerifier(json: signed), now: t0)
        #expect(kept.appTransactionId == "at-1" && kept.originalAppVersion == "1.0" && kept.environment == "Sandbox")
        #expect(try await store.appTransaction(appId: "app", appUserId: "dana") == kept)
    }
}
