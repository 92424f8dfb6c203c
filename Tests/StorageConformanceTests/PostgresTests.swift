import Foundation
import JobQueue
import Logging
import Persistence
import StoragePostgres
import StorekeeperCore
import StorekeeperTesting
import Testing

/// What only the PostgreSQL adapter has: URLs, concurrent migrations, cross-process wake-ups.
/// The shared storage contract is in StorageConformanceTests, run against both adapters.
@Suite("postgres adapter")
struct PostgresTests {
    @Test("under scripts/test.sh and CI a PostgreSQL server is configured, so its tests never skip silently")
    func postgresIsConfigured() {
        #expect(
            PostgresTestDatabase.url != nil || !PostgresTestDatabase.required,
            "STOREKEEPER_REQUIRE_POSTGRES=1 but STOREKEEPER_TEST_POSTGRES_URL is not set")
    }

    @Test("database URLs: parts, parameters, and clear refusals")
    func urls() throws {
        let c = try PostgresStore.Configuration(url: "postgres://app:s%40cret@db.internal:6543/payments?schema=sk&max_connections=7")
        #expect(c.host == "db.internal" && c.port == 6543 && c.username == "app" && c.password == "s@cret")
        #expect(c.database == "payments" && c.schema == "sk" && c.maximumConnections == 7)
        #expect(!c.redactedDescription.contains("cret"))
        let defaults = try PostgresStore.Configuration(url: "postgresql://localhost")
        #expect(defaults.port == 5432 && defaults.schema == "storekeeper" && defaults.database == "storekeeper")
        for bad in ["mysql://x", "postgres://h/db?schema=Bad-Name", "postgres://h/db?max_connections=0", "postgres://h/db?pool=3"] {
            #expect(throws: PostgresStoreError.self, "\(bad)") { try PostgresStore.Configuration(url: bad) }
        }
    }

    @Test("many processes migrating one database at once apply each migration once", .enabled(if: PostgresTestDatabase.url != nil))
    func concurrentMigrations() async throws {
        let url = try PostgresTestDatabase.freshURL()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<4 { group.addTask { _ = try await PostgresTestDatabase.makeStore(url: url, maximumConnections: 2) } }
            try await group.waitForAll()
        }
        let store = try await PostgresTestDatabase.makeStore(url: url)
        #expect(
            try await store.appliedMigrations() == [
                "M0001_CreateSchema", "M0002_ProvisionalGrants", "M0003_Notifications", "M0004_RefundReversals",
                "M0005_OwnershipClaims", "M0006_Events", "M0007_Webhooks", "M0008_TransactionFields2026", "M0009_AppleHealth", "M0010_EventWireBody",
                "M0011_Entitlements", "M0012_Offerings", "M0013_Customers", "M0014_ImportedRows", "M0015_Revenue",
                "M0016_AnalyticsIndexes",
                "M0017_CustomerSearch", "M0018_KeptFigures", "M0019_ConsoleSignOuts", "M0020_AppleHealthHistory", "M0021_GapFillRuns",
                "M0022_RenewalSignedAt", "M0023_AppleCalls", "M0024_CreditSpends", "M0025_RefundRequests", "M0026_WinBackOffers",
                "M0027_CreditSpendKeysPerUser", "M0028_AdminTokens", "M0029_AppTransactions", "M0030_PriceIncreases", "M0031_EntitlementLapses",
                "M0032_Experiments", "M0033_OneOpenExperiment",
            ])
    }

    @Test("an enqueue in one process wakes an idle runner in another (LISTEN/NOTIFY)", .enabled(if: PostgresTestDatabase.url != nil))
    func wakeAcrossProcesses() async throws {
        let url = try PostgresTestDatabase.freshURL()
        let workerSide = try await PostgresTestDatabase.makeStore(url: url)
        let apiSide = try await PostgresTestDatabase.makeStore(url: url)
        let signal = WakeSignal()
        let listener = PostgresJobListener(store: workerSide, signal: signal, relaysVerifications: false, logger: Logger(label: "test"))
        let listening = Task { try await listener.run() }
        defer { listening.cancel() }
        // The listener wakes once when it starts listening; consume that wake first.
        let listeningStarted = Task { await signal.wait(timeout: 3600) }
        #expect(await ends(listeningStarted, within: 60), "the listener never started listening")
        // A wake that comes before the wait begins is remembered, so no pause is needed here.
        let woke = Task { await signal.wait(timeout: 3600) }
        _ = try await SubmitEvidence(store: apiSide)(
            EvidenceSubmission(appId: "app", appUserId: "u", evidenceHash: "h", evidence: .receipt(base64: "aA==")),
            now: Date())
        // Without the notification the wait would last an hour: within the watchdog's minute,
        // only the NOTIFY can end it.
        #expect(await ends(woke, within: 60), "the enqueue in the other process did not wake this one")
        #expect(try await workerSide.jobCounts()[.available] == 1)
    }

    @Test(
        "a verification changed in one process wakes a `?wait=` waiter in another (LISTEN/NOTIFY)",
        .enabled(if: PostgresTestDatabase.url != nil))
    func verificationChangeAcrossProcesses() async throws {
        let url = try PostgresTestDatabase.freshURL()
        let workerSide = try await PostgresTestDatabase.makeStore(url: url)
        let apiSide = try await PostgresTestDatabase.makeStore(url: url)
        let listener = PostgresJobListener(store: apiSide, signal: nil, relaysVerifications: true, logger: Logger(label: "test"))
        let submitted = try await SubmitEvidence(store: apiSide)(
            EvidenceSubmission(appId: "app", appUserId: "u", evidenceHash: "h", evidence: .receipt(base64: "aA==")),
            now: Date())
        let id = submitted.verification.id
        // The listener tells every waiter to read again once it listens: that ends this probe,
        // so the listener is known to listen before the change below is committed.
        let probe = apiSide.verificationWatch.register(id)
        let listening = Task { try await listener.run() }
        defer { listening.cancel() }
        #expect(await ends(Task { await probe.wait(timeout: .seconds(3600)) }, within: 60), "the listener never started listening")

        let ticket = apiSide.verificationWatch.register(id)
        let woke = Task { await ticket.wait(timeout: .seconds(3600)) }
        let lease = try #require(
            try await workerSide.leaseJobs(kinds: ["verify_receipt"], limit: 1, owner: "w", now: Date(), leaseDuration: 30).first)
        #expect(try await VerificationOutcomes(store: workerSide).markVerifying(lease, verificationId: id, now: Date()))
        // Without the notification the wait would last an hour: within the watchdog's minute,
        // only the NOTIFY of the other store's commit can end it.
        #expect(await ends(woke, within: 60), "the other process's commit did not wake this waiter")
    }
}
