import AppStoreSimulator
import Foundation
import NIOHTTP1
import StorekeeperDomain
import StorekeeperServer
import StorekeeperTesting
import TestFixtures
import Testing

/// The experiment's results judged against a population whose truth is known: 2,000 customers,
/// each enrolled by the server's hash at their first offerings request, start a three-day free
/// trial of the monthly plan in the simulator, and pay for the first month with a probability
/// set by their arm and drawn with a fixed seed; the app posts each signed transaction, the
/// trial when it is bought and the first month's renewal once it is charged. The
/// results must find what was planted: B converting 20 % more often (and therefore paying 20 %
/// more per customer) is reported the leader, with every interval containing the true value;
/// the same population split A/A reports no leader.
@Suite("experiments: a simulated population with a known difference, and without one")
struct ExperimentPopulationTests {
    static let customers = 2_000
    /// A month of the simulator is a real month here, so a three-day trial lasts three days.
    static let month: Double = 30 * 86_400
    static let price: Int64 = 4_990_000

    enum Design: String, CaseIterable, CustomTestStringConvertible {
        case ab
        case aa
        var testDescription: String { rawValue }
        /// The true trial-to-paid conversion of each arm.
        var conversion: [Double] { self == .ab ? [0.30, 0.36] : [0.30, 0.30] }
        var offerings: [String] { self == .ab ? ["default", "no_ads"] : ["default", "default_again"] }
    }

    static let cases: [(String, Design)] = WebhookTests.backends.flatMap { backend in Design.allCases.map { (backend, $0) } }

    struct Customer {
        var user: String
        var arm: Int
        var converts: Bool
        var device: UUID
    }

    /// `body` over `items`, eight at a time (as many apps would call at once), in no order.
    static func eightAtATime<Item: Sendable, Result: Sendable>(
        _ items: [Item], _ body: @escaping @Sendable (Item) async throws -> Result
    ) async throws -> [Result] {
        try await withThrowingTaskGroup(of: [Result].self) { group in
            for lane in 0..<8 {
                group.addTask {
                    var done: [Result] = []
                    for index in stride(from: lane, to: items.count, by: 8) { done.append(try await body(items[index])) }
                    return done
                }
            }
            return try await group.reduce(into: []) { $0 += $1 }
        }
    }

    @Test("the arm that converts better is found, with intervals containing the truth; A/A finds nothing", arguments: cases)
    func population(backend storage: String, design: Design) async throws {
        let database = storage == "postgresql" ? try PostgresTestDatabase.freshURL(prefix: "population") : nil
        try await withStack(
            secondsPerMonth: Self.month,
            configure: { configuration in
                if let database { configuration.databasePath = database }
                configuration.notificationGapFill.enabled = false
                // The A/A arms show the same packages under two ids.
                if let first = configuration.apps[0].offerings.first {
                    var again = first
                    again.id = "default_again"
                    configuration.apps[0].offerings.append(again)
                }
            }
        ) { stack in
            stack.clock.freeze()
            let http = stack.api.http
            let admin = ["Authorization": "Bearer \(stack.api.adminKey)", "Storekeeper-Actor": "maria@example.com"]
            let start = stack.clock.now()
            let arms = design.offerings.map { #"{"offering":"\#($0)","weight":1}"# }.joined(separator: ",")
            let body = #"{"arms":[\#(arms)],"startsAt":"\#(ISO8601DateFormatter().string(from: start.addingTimeInterval(-60)))"}"#
            let created = try await http.send(.PUT, "/v1/admin/apps/demo/experiments/population", headers: admin, body: Data(body.utf8))
            #expect(created.status == 201, "\(created.text)")

            // Who converts is drawn before anyone is enrolled, from a fixed seed, by position.
            var generator = SeededGenerator(seed: design == .ab ? 51 : 52)
            let draws = (0..<Self.customers).map { _ in generator.unit() }
            let population = try await Self.eightAtATime(Array(0..<Self.customers)) { index in
                try await Self.enrollAndTry(stack: stack, index: index, draw: draws[index], design: design)
            }
            #expect(population.count == Self.customers)

            // The trials end three days in, and converters pay their first month then; their app
            // posts the renewal it finds among the device's current entitlements.
            try await stack.simulator.advanceClock(seconds: 4 * 86_400)
            _ = try await Self.eightAtATime(population.filter(\.converts)) { customer in
                let held = try await stack.simulator.http.send(.GET, "/sim/devices/\(customer.device.uuidString)/current-entitlements")
                let entitlements = (try? JSONSerialization.jsonObject(with: held.body)) as? [[String: Any]]
                let renewal = try #require(entitlements?.first?["signedTransaction"] as? String, "\(customer.user): \(held.text)")
                let posted = try await stack.api.postSignedTransaction(appUserId: customer.user, signedTransaction: renewal)
                #expect(posted.status == 200 || posted.status == 202, "\(posted.text)")
                return customer
            }
            #expect(try await stack.whenSettled { true })
            try await stack.simulator.advanceClock(seconds: 11 * 86_400 + 60)

            let reply = try await http.send(.GET, "/v1/admin/apps/demo/experiments/population/results", headers: admin)
            #expect(reply.status == 200, "\(reply.text)")
            let results = try StorekeeperJSON.makeDecoder().decode(ExperimentResults.self, from: reply.body)
            try Self.judge(results, population: population, design: design)
        }
    }

    /// One customer: the first offerings request (through the backend, naming them) enrolls
    /// them; the trial is bought on a device of their own; a customer who will not convert
    /// turns auto-renew off, so Apple never charges them.
    static func enrollAndTry(stack: LocalStack, index: Int, draw: Double, design: Design) async throws -> Customer {
        let user = "pop-\(index)"
        let answer = try await stack.api.http.send(.GET, "/v1/offerings?appUserId=\(user)", headers: DemoCallers.backend)
        let enrolled = (answer.json["experiment"] as? [String: Any])?["arm"] as? Int
        let arm = try #require(answer.status == 200 ? enrolled : nil, "offerings for \(user): \(answer.text)")
        let device = try await stack.simulator.createDevice(bundleId: demoBundle, environment: "production")
        let trial = try await stack.simulator.purchase(
            device: device, productId: "com.example.pro.monthly", appAccountToken: AppAccountToken.derive(appUserId: user),
            offer: SimulatorClient.Offer(type: 1, discountType: "FREE_TRIAL", period: "P3D"))
        let converts = draw < design.conversion[arm]
        if !converts { try await stack.simulator.cancelAutoRenew(originalTransactionId: trial.originalTransactionId) }
        let posted = try await stack.api.postSignedTransaction(appUserId: user, signedTransaction: trial.signedTransaction)
        #expect(posted.status == 200 || posted.status == 202, "\(posted.text)")
        return Customer(user: user, arm: arm, converts: converts, device: device)
    }

    static func judge(_ results: ExperimentResults, population: [Customer], design: Design) throws {
        #expect(results.arms.count == 2)
        for (index, arm) in results.arms.enumerated() {
            let members = population.filter { $0.arm == index }
            let converted = members.filter(\.converts).count
            let truth = design.conversion[index]
            // What the ledger shows is exactly what was planted.
            #expect(arm.enrolled == members.count && arm.trialsStarted == members.count, "arm \(index): \(arm)")
            #expect(arm.trialConversion.successes == converted && arm.payingCustomers == converted, "arm \(index): \(arm)")
            // Half the customers each, within four standard deviations (±89 of 2,000).
            #expect(abs(members.count - Self.customers / 2) <= 89, "arm \(index): \(members.count)")
            // The intervals contain the true rate, and the true revenue per customer at 7 and 14
            // days (the first month is paid on day 3).
            let interval = try #require(arm.trialConversion.lower)...(try #require(arm.trialConversion.upper))
            #expect(interval.contains(truth), "arm \(index): \(interval) vs \(truth)")
            for days in [7, 14] {
                let revenue = try #require(arm.revenue.first { $0.days == days && $0.currency == "USD" }, "arm \(index) day \(days)")
                #expect(revenue.customers == members.count && revenue.grossMicros == Int64(converted) * Self.price, "\(revenue)")
                let gross = try #require(revenue.grossPerCustomerInterval)
                let trueGross = Int64((truth * Double(Self.price)).rounded())
                #expect(gross.method == .bootstrap && gross.lowerMicros <= trueGross && trueGross <= gross.upperMicros, "\(revenue)")
                // Proceeds: every month earns what the ledger says one month earns.
                let earned = converted > 0 ? revenue.proceedsMicros / Int64(converted) : 0
                let trueProceeds = Int64((truth * Double(earned)).rounded())
                let proceeds = try #require(revenue.proceedsPerCustomerInterval)
                #expect(proceeds.lowerMicros <= trueProceeds && trueProceeds <= proceeds.upperMicros, "\(revenue)")
            }
            #expect(!arm.revenue.contains { $0.days >= 30 }, "nobody has reached 30 days")
        }
        switch design {
        case .ab:
            #expect(results.leader == 1, "B converts 20 % more often: \(results.arms.map(\.probabilityBest))")
            #expect(results.arms[1].probabilityBest >= 0.95)
            let perCustomer = results.arms.map { $0.revenue.first { $0.days == 14 }?.grossPerCustomerMicros ?? 0 }
            #expect(perCustomer[1] > perCustomer[0], "\(perCustomer)")
        case .aa:
            #expect(results.leader == nil, "A/A: \(results.arms.map(\.probabilityBest))")
            #expect(results.arms.allSatisfy { $0.probabilityBest > 0.05 && $0.probabilityBest < 0.95 })
        }
    }
}
