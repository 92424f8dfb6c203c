import AppStoreSimulator
import Foundation
import NIOHTTP1
import Persistence
import SimulatorSetup
import StorekeeperDomain
import StorekeeperServer
import StorekeeperTesting
import Testing

/// The import's promise, checked against the other way a server learns the same customers:
/// customers in every state are bought and told to one server live (the app posts each purchase,
/// Apple's notifications follow for a month), then imported into an empty second server on the
/// same App Store. Both must say the same of each customer.
@Suite("import: the same customers, imported or seen live, end the same")
struct ImportComparisonTests {
    /// A simulated month long enough that no renewal falls due while the test runs.
    static let month = 3_000.0

    @Test(
        "every entitlement, subscription, credit balance and ledger row of 52 customers in 13 states agrees; a second import changes nothing",
        arguments: WebhookTests.backends)
    func agree(backend storage: String) async throws {
        let live = storage == "postgresql" ? try PostgresTestDatabase.freshURL(prefix: "live") : nil
        let importedDatabase = storage == "postgresql" ? try PostgresTestDatabase.freshURL(prefix: "imported") : LocalStack.temporaryDatabasePath()
        try await withStack(
            configure: {
                $0.apps[0].serverAPI = .generated()
                $0.notificationGapFill.enabled = false
                if let live { $0.databasePath = live }
            },
            configureSimulator: {
                $0.secondsPerMonth = Self.month
                $0.gracePeriodSeconds = 3 * Self.month
            }
        ) { stack in
            func settled(_ store: any StorekeeperStore) async throws -> Bool {
                guard try await stack.simulator.notificationsSettled() else { return false }
                return try await store.verificationCounts().keys.allSatisfy { $0.isFinal }
            }
            // Live: each purchase posted by its app; then Apple's notifications for a month and a week.
            let population = try await ImportPopulation.buy(
                count: 52, simulator: stack.simulator, bundleId: demoBundle, live: stack.api, prefix: "live")
            #expect(try await stack.whenSettled { try await settled(stack.store) }, "the purchases are verified")
            try await stack.sendNotifications()
            try await population.age(simulator: stack.simulator, seconds: Self.month * 37 / 30 + 5)
            #expect(try await stack.whenSettled { try await settled(stack.store) }, "Apple told the live server everything")
            let everything = LedgerQuery(appId: "demo", environment: "production", from: .distantPast, to: .distantFuture)
            let seenLive = try await population.snapshot(subscriber: stack.api.subscriber, ledger: try await stack.store.ledger(everything))

            // Imported: the same customers into an empty server, by original transaction id.
            let second = try await stack.startIndependentServer(databasePath: importedDatabase)
            let admin = ["Authorization": "Bearer \(second.api.adminKey)"]
            let body = Data(("{\"rows\":[" + population.importLines.joined(separator: ",") + "]}").utf8)
            let posted = try await second.api.http.send(.POST, "/v1/admin/apps/demo/imports", headers: admin, body: body)
            #expect(posted.status == 200, "\(posted.text)")
            try await second.quiet()
            #expect(try await settled(second.store), "the import ran to its end")
            let counts = try await second.store.verificationCounts()
            #expect(counts[.verified] == population.customers.count, "\(counts)")
            let ledger = try await second.store.ledger(everything)
            let seenImported = try await population.snapshot(subscriber: second.api.subscriber, ledger: ledger)
            for customer in population.customers {
                #expect(
                    seenImported[customer.appUserId] == seenLive[customer.appUserId],
                    "\(customer.kind): imported \(seenImported[customer.appUserId] ?? []) ≠ live \(seenLive[customer.appUserId] ?? [])")
            }
            #expect(!ledger.isEmpty && ledger.allSatisfy(\.imported))
            // Every kind was in a state of its own: nothing compared empty.
            #expect(Set(seenLive.values.map { $0.filter { $0.hasPrefix("entitlement") } }).count > 5)

            // The same file again: the same verifications, no new event, no new ledger row.
            let events = try await second.store.events(appId: "demo", after: 0, types: [], limit: 100_000).count
            let again = try await second.api.http.send(.POST, "/v1/admin/apps/demo/imports", headers: admin, body: body)
            #expect(again.status == 200 && !again.text.contains("\"created\":true"), "\(again.text.prefix(300))")
            #expect(try await second.store.events(appId: "demo", after: 0, types: [], limit: 100_000).count == events)
            #expect(try await second.store.ledger(everything).count == ledger.count)
            try await second.stop()
        }
    }
}
