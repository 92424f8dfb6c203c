import AppStoreSimulator
import Foundation
import JobQueue
import Persistence
import StorekeeperCore
import StorekeeperDomain
import StorekeeperServer
import StorekeeperTesting
import Testing

/// Ledger rows booked before the ledger took Apple's charged price (M0015), booked again from the
/// evidence stored with them: a real signed transaction from the simulator, reread by the server's
/// own gate as the grant job reads it.
@Suite("the ledger booked again from stored signed evidence")
struct RecomputeLedgerTests {
    @Test(
        "a row booked at the list price is booked at what the stored signed transaction charged; a receipt's row stays estimated; a second run changes nothing"
    )
    func fromStoredEvidence() async throws {
        let path = LocalStack.temporaryDatabasePath()
        defer { LocalStack.removeTemporaryDatabase(path) }
        let configuration = LocalStack.testConfiguration(databasePath: path)
        // Apple charged another price in another currency than the catalog lists.
        var simulator = LocalStack.simulatorConfiguration(for: configuration)
        for index in simulator.apps[0].products.indices where simulator.apps[0].products[index].productId == "com.example.coins100" {
            simulator.apps[0].products[index].priceMicros = 1_190_000
            simulator.apps[0].products[index].currency = "EUR"
        }
        // No server: nothing but this test grants.
        let stack = try await LocalStack.start(configuration: configuration, simulator: simulator, startServer: false)
        try await stack.stoppedOnError {
            let store = stack.store
            let now = stack.clock.now()
            try await store.seedProducts(appId: "demo", products: configuration.apps[0].products, now: now)
            let device = try await stack.simulator.createDevice(bundleId: DemoConfiguration.bundleId)
            let signed = try await stack.simulator.purchase(device: device, productId: "com.example.coins100")
            let received = try await stack.simulator.purchase(device: device, productId: "com.example.coins100")
            // Granted as before M0015: the evidence stored, the grant without Apple's price.
            for (bought, evidence) in [
                (signed, SubmittedEvidence.signedTransaction(jws: signed.signedTransaction)), (received, .receipt(base64: received.receipt)),
            ] {
                let submitted = try await SubmitEvidence(store: store)(
                    EvidenceSubmission(appId: "demo", appUserId: "alice", evidenceHash: bought.transactionId, evidence: evidence), now: now)
                let lease = try #require(
                    try await store.leaseJobs(kinds: [evidence.jobKind], limit: 1, owner: "test", now: now, leaseDuration: 60).first)
                let purchase = PurchaseEvidence.Purchase(
                    transactionId: bought.transactionId, originalTransactionId: bought.originalTransactionId, productId: "com.example.coins100",
                    purchaseDate: now)
                _ = try await VerificationOutcomes(store: store).completeVerified(
                    lease, verificationId: submitted.verification.id,
                    evidence: PurchaseEvidence(
                        source: .signedTransaction, bundleId: DemoConfiguration.bundleId, environment: "sandbox", purchases: [purchase]),
                    report: AttemptReport(statuses: [0], environment: "sandbox", reason: nil),
                    request: GrantRequest(appId: "demo", bundleId: DemoConfiguration.bundleId, bindingPolicy: .refuse), now: now)
            }
            let query = LedgerQuery(appId: "demo", environment: "sandbox", from: .distantPast, to: .distantFuture)
            #expect(try await store.ledger(query).map(\.priceMicros) == [990_000, 990_000])

            let results = try await EstimatedLedgerRecompute.run(configuration: configuration, store: store, now: now)
            #expect(results.map(\.appId) == ["demo"] && results.first?.progress.recomputed == 1 && results.first?.progress.left == 1)
            let rows = Dictionary(try await store.ledger(query).map { ($0.transactionId, $0) }, uniquingKeysWith: { a, _ in a })
            let booked = try #require(rows[signed.transactionId])
            #expect(booked.priceMicros == 1_190_000 && booked.currency == "EUR" && !booked.estimated && booked.storefront == "USA")
            #expect(booked.proceedsMicros == 833_000)
            let estimated = try #require(rows[received.transactionId])
            #expect(estimated.estimated && estimated.priceMicros == 990_000 && estimated.currency == "USD")

            let again = try await EstimatedLedgerRecompute.run(configuration: configuration, store: store, now: now)
            #expect(again.first?.progress.recomputed == 0 && again.first?.progress.read == 1)
        }
        try await stack.stop()
    }
}
