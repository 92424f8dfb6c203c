import AppStoreClient
public import AppStoreSimulator
public import AsyncHTTPClient
import Foundation
import Hummingbird
import JobQueue
public import Logging
import NIOHTTP1
public import Persistence
import ServiceLifecycle
import SimulatorSetup
import StoragePostgres
import StorekeeperDomain
public import StorekeeperServer

/// The simulator and a Storekeeper server, both real HTTP servers on loopback ports chosen by
/// the kernel, with the server's Apple endpoints pointed at the simulator. What a test or a
/// benchmark talks to is exactly what a deployment runs, minus Apple.
public final class LocalStack: Sendable {
    public let configuration: StorekeeperConfiguration
    public let simulatorURL: String
    public let serverURL: String?
    public let store: any StorekeeperStore
    /// The PostgreSQL connection pool when the stack runs on PostgreSQL; stopped by `stop()`.
    private let storePool: Task<Void, Never>?
    public let httpClient: HTTPClient
    public let simulator: SimulatorClient
    /// The simulator's signing chain, for tests that sign App Store data themselves (notifications).
    public let simulatorPKI: SimulatorPKI
    /// The simulator's clock, which the in-process server reads too: a test that moves it moves
    /// Apple and the server together (`SimulatorClient.advanceClock`).
    public let clock: SimulatorClock
    /// Between the server and the simulator's verifyReceipt when asked for (`throughGateway`):
    /// switched off, Apple's host refuses connections.
    public let gateway: RefusingGateway?
    /// The database `start` made for itself (none when given a configuration), removed at `stop`.
    private let ownDatabase: String?
    private let simulatorGroup: ServiceGroup
    private let serverGroup: ServiceGroup?
    private let tasks: [Task<Void, any Error>]
    private let serverHTTPClient: HTTPClient
    /// The simulator's notification sender's passes, and the server's job runner's (with the
    /// signal that wakes it): what `settle()` waits on.
    let simulatorIdle: IdleSignal
    let serverIdle: IdleSignal?
    let serverWake: WakeSignal
    /// Every route the stack's server registered (method and pattern).
    public let routes: RouteListing

    public var api: StorekeeperClient {
        let app = configuration.apps[0]
        return StorekeeperClient(
            http: HTTPJSONClient(httpClient: httpClient, baseURL: serverURL ?? ""), apiKey: app.apiKey,
            adminKey: configuration.adminKey)
    }

    /// How long the tests' HTTP clients keep an idle connection: a third of the server's
    /// `idleTimeoutSeconds` (30 s).
    public static let clientIdleSeconds: Int64 = 10

    /// A configuration with one app selling every product type and fast retries. `serverAPI`
    /// gives every app an In-App Purchase key the simulator knows, which turns on the Server API
    /// paths (gap-fill, refresh, verifyReceipt stand-in).
    ///
    /// An attempt at Apple may take 20 s: the simulator shares the suite's cores, and on a busy
    /// machine a shorter bound times out calls it answers, which the client then retries and the
    /// Apple-health breaker counts as an outage. A test about timeouts sets its own bound.
    public static func testConfiguration(databasePath: String, serverAPI: Bool = false) -> StorekeeperConfiguration {
        var c = DemoConfiguration.configuration()
        c.databasePath = databasePath
        c.sqliteSynchronousFull = false
        c.port = 0
        c.workers = 64
        c.attemptTimeoutSeconds = 20
        c.leaseSeconds = 61
        c.retry = RetryPolicy(base: 0.2, cap: 1, jitter: 0.2)
        // A test's `?wait=` is a wait on the server's signal, not a bound on the machine's speed.
        c.maxWaitSeconds = TestWait.seconds
        // The suite's receivers listen on loopback; the destination tests turn this off.
        c.webhooks.allowPrivateDestinations = true
        // The simulator's months pass in minutes: a sweep on the wall clock's timer would add
        // events at moments no test chooses. The lapse tests call the sweep at instants of their own.
        c.lapseSweepSeconds = 0
        if serverAPI { for index in c.apps.indices { c.apps[index].serverAPI = .generated() } }
        return c
    }

    public static func simulatorConfiguration(
        for configuration: StorekeeperConfiguration, secondsPerMonth: Double = 300
    )
        -> SimulatorConfiguration
    {
        var s = SimulatorConfiguration()
        s.port = 0
        s.secondsPerMonth = secondsPerMonth
        s.gracePeriodSeconds = secondsPerMonth
        s.apps = configuration.apps.map(SimulatedApp.init)
        return s
    }

    /// A fresh SQLite file in a new temporary directory.
    public static func temporaryDatabasePath() -> String {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("storekeeper-\(UUID().uuidString)")
        try? FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        return dir.appendingPathComponent("storekeeper.sqlite").path
    }

    /// Removes the directory `temporaryDatabasePath()` made for `path`, and nothing else.
    public static func removeTemporaryDatabase(_ path: String) {
        let dir = URL(fileURLWithPath: path).deletingLastPathComponent()
        guard dir.lastPathComponent.hasPrefix("storekeeper-"),
            dir.deletingLastPathComponent().standardizedFileURL.path == FileManager.default.temporaryDirectory.standardizedFileURL.path
        else { return }
        try? FileManager.default.removeItem(at: dir)
    }

    /// Starts the simulator, then (unless `startServer` is false) the server pointed at it.
    public static func start(
        configuration base: StorekeeperConfiguration? = nil, simulator simulatorConfiguration: SimulatorConfiguration? = nil,
        startServer: Bool = true, logLevel: Logger.Level = .warning, throughGateway: Bool = false
    ) async throws -> LocalStack {
        // A database made here is this stack's own: removed by `stop()`, so a suite leaves no files.
        var configuration: StorekeeperConfiguration
        var ownDatabase: String?
        if let base {
            configuration = base
        } else {
            let path = temporaryDatabasePath()
            configuration = testConfiguration(databasePath: path)
            ownDatabase = path
        }
        var logger = Logger(label: "storekeeper.test")
        logger.logLevel = logLevel
        let sim = try SimulatorServer(configuration: simulatorConfiguration ?? Self.simulatorConfiguration(for: configuration))
        configuration.receiptTrust.extraRootsPEM.append(try sim.store.pki.rootPEM())
        let (simPorts, simContinuation) = AsyncStream.makeStream(of: Int.self)
        let simApp = sim.makeApplication(logger: logger) { port in simContinuation.yield(port) }
        let simulatorGroup = ServiceGroup(
            services: [simApp, NotificationSender(store: sim.store, logger: logger)], gracefulShutdownSignals: [], cancellationSignals: [],
            logger: logger)
        var tasks = [Task { try await simulatorGroup.run() }]
        var iterator = simPorts.makeAsyncIterator()
        guard let simPort = await iterator.next() else { throw CancellationError() }
        let simulatorURL = "http://127.0.0.1:\(simPort)"
        let serverHTTPClient = StorekeeperApplication.makeHTTPClient(configuration: configuration)
        let gateway = throughGateway ? try await RefusingGateway.start(target: simulatorURL, httpClient: serverHTTPClient) : nil
        let verifyReceiptURL = gateway?.baseURL ?? simulatorURL
        configuration.appleEndpoints = VerifyReceiptEndpoints(
            production: "\(verifyReceiptURL)/verifyReceipt", sandbox: "\(verifyReceiptURL)/sandbox/verifyReceipt")
        configuration.serverAPIEndpoints = ServerAPIEndpoints(production: simulatorURL, sandbox: "\(simulatorURL)/sandbox-api")
        // The simulator's certificates name a responder that resolves nowhere; its /ocsp answers.
        if configuration.receiptTrust.revocation.mode != .off, configuration.receiptTrust.revocation.responderOverride == nil {
            configuration.receiptTrust.revocation.responderOverride = "\(simulatorURL)/ocsp"
        }

        let backend = try StorageBackend.open(configuration: configuration, logger: logger)
        let storePool = backend.postgres?.runInBackground()
        try await backend.prepare()
        let store = backend.store
        var serverGroup: ServiceGroup?
        var serverURL: String?
        let serverIdle = IdleSignal()
        let serverWake = store.queued
        let routes = RouteListing()
        if startServer {
            let server = try await launch(
                configuration: configuration, backend: backend, httpClient: serverHTTPClient, clock: sim.store.clock, logger: logger,
                idle: serverIdle, routes: routes)
            tasks.append(server.task)
            serverURL = server.url
            serverGroup = server.group
        }
        var clientConfiguration = HTTPClient.Configuration()
        // Idle connections are dropped well before the server's idle timeout (30 s) closes them:
        // otherwise a connection reused as the server closes it fails the request
        // (`remoteConnectionClosed`), which a busy machine's long pauses make likely.
        clientConfiguration.connectionPool = .init(
            idleTimeout: .seconds(Self.clientIdleSeconds), concurrentHTTP1ConnectionsPerHostSoftLimit: 256)
        let httpClient = HTTPClient(eventLoopGroupProvider: .singleton, configuration: clientConfiguration)
        return LocalStack(
            configuration: configuration, simulatorURL: simulatorURL, serverURL: serverURL, store: store,
            httpClient: httpClient, simulator: SimulatorClient(http: HTTPJSONClient(httpClient: httpClient, baseURL: simulatorURL)),
            simulatorGroup: simulatorGroup, serverGroup: serverGroup, tasks: tasks, serverHTTPClient: serverHTTPClient,
            storePool: storePool, simulatorPKI: sim.store.pki, clock: sim.store.clock, gateway: gateway,
            ownDatabase: ownDatabase, idle: (sim.store.idle, startServer && configuration.runWorkers ? serverIdle : nil, serverWake),
            routes: routes)
    }

    private init(
        configuration: StorekeeperConfiguration, simulatorURL: String, serverURL: String?, store: any StorekeeperStore,
        httpClient: HTTPClient, simulator: SimulatorClient, simulatorGroup: ServiceGroup, serverGroup: ServiceGroup?,
        tasks: [Task<Void, any Error>], serverHTTPClient: HTTPClient, storePool: Task<Void, Never>?, simulatorPKI: SimulatorPKI,
        clock: SimulatorClock, gateway: RefusingGateway?, ownDatabase: String?,
        idle: (simulator: IdleSignal, server: IdleSignal?, wake: WakeSignal), routes: RouteListing
    ) {
        self.routes = routes
        self.simulatorIdle = idle.simulator
        self.serverIdle = idle.server
        self.serverWake = idle.wake
        self.ownDatabase = ownDatabase
        self.gateway = gateway
        self.clock = clock
        self.storePool = storePool
        self.simulatorPKI = simulatorPKI
        self.configuration = configuration
        self.simulatorURL = simulatorURL
        self.serverURL = serverURL
        self.store = store
        self.httpClient = httpClient
        self.simulator = simulator
        self.simulatorGroup = simulatorGroup
        self.serverGroup = serverGroup
        self.tasks = tasks
        self.serverHTTPClient = serverHTTPClient
    }

    /// Has the simulator send App Store Server Notifications V2 for the first app to this
    /// stack's server (`url` overrides, e.g. a port nobody listens on to make deliveries fail).
    public func sendNotifications(to url: String? = nil) async throws {
        struct Body: Encodable {
            var bundleId: String
            var url: String?
        }
        _ = try await simulator.http.send(
            .PUT, "/sim/notifications/url",
            json: Body(bundleId: configuration.apps[0].bundleId, url: url ?? "\(serverURL ?? "")/v1/notifications/appstore"))
    }

    /// Points the first app's Retention Messaging realtime URL at this stack's server. The
    /// simulator waits up to a minute for each answer (Apple waits far less): a test judges what
    /// the answer says, never how fast a busy machine gave it (docs/BENCHMARKS.md measures that).
    public func sendRetentionRequests() async throws {
        struct Body: Encodable {
            var bundleId: String
            var url: String
            var timeoutSeconds: Double
        }
        let app = configuration.apps[0]
        _ = try await simulator.http.send(
            .PUT, "/sim/retention/url",
            json: Body(bundleId: app.bundleId, url: "\(serverURL ?? "")/v1/retention/\(app.id)", timeoutSeconds: 60))
    }

    /// Stops the server (gracefully), leaving the simulator and the database.
    public func stopServer() async {
        await serverGroup?.triggerGracefulShutdown()
        if tasks.count > 1 { _ = try? await tasks[1].value }
    }

    /// Starts one more server on the same database and simulator (e.g. after a configuration
    /// change), returning its base URL and a function that stops it.
    public func startAnotherServer(
        configuration: StorekeeperConfiguration, logLevel: Logger.Level = .warning
    ) async throws
        -> (url: String, stop: @Sendable () async throws -> Void)
    {
        var configuration = configuration
        configuration.appleEndpoints = self.configuration.appleEndpoints
        configuration.databasePath = self.configuration.databasePath
        configuration.port = 0
        var logger = Logger(label: "storekeeper.test.extra")
        logger.logLevel = logLevel
        let client = StorekeeperApplication.makeHTTPClient(configuration: configuration)
        let server = try await Self.launch(configuration: configuration, store: store, httpClient: client, clock: clock, logger: logger)
        return (
            server.url,
            {
                await server.group.triggerGracefulShutdown()
                _ = try? await server.task.value
                try await client.shutdown()
            }
        )
    }

    /// A second Storekeeper, with a database of its own (`databasePath`: a file or a
    /// `postgres://` URL), on the same simulator and clock: e.g. one that only imports what the
    /// first saw live. Its notifications stay with the first server. `runWorkers` false: it only
    /// answers (another process does the work on that database).
    public func startIndependentServer(
        databasePath: String, runWorkers: Bool = true, logLevel: Logger.Level = .warning
    ) async throws -> (
        api: StorekeeperClient, store: any StorekeeperStore, stop: @Sendable () async throws -> Void,
        quiet: @Sendable () async throws -> Void
    ) {
        var configuration = self.configuration
        configuration.databasePath = databasePath
        configuration.port = 0
        configuration.runWorkers = runWorkers
        var logger = Logger(label: "storekeeper.test.independent")
        logger.logLevel = logLevel
        let backend = try StorageBackend.open(configuration: configuration, logger: logger)
        let pool = backend.postgres?.runInBackground()
        try await backend.prepare()
        let client = StorekeeperApplication.makeHTTPClient(configuration: configuration)
        let (wake, idle) = (backend.store.queued, IdleSignal())
        let server = try await Self.launch(
            configuration: configuration, backend: backend, httpClient: client, clock: clock, logger: logger, idle: idle)
        let api = StorekeeperClient(
            http: HTTPJSONClient(httpClient: httpClient, baseURL: server.url), apiKey: configuration.apps[0].apiKey,
            adminKey: configuration.adminKey)
        return (
            api, backend.store,
            {
                await server.group.triggerGracefulShutdown()
                _ = try? await server.task.value
                try await client.shutdown()
                pool?.cancel()
            },
            {
                // Its job runner's idle signal, as `quiet()` for the stack's own server.
                guard runWorkers else { return }
                try await withTestWait("the independent server's job runner to go idle") {
                    wake.wake()
                    await idle.nextIdle()
                }
            }
        )
    }

    private struct LaunchedServer {
        var url: String
        var group: ServiceGroup
        var task: Task<Void, any Error>
    }

    /// Runs a server with its database's listener (the wake signal when it works, answers on HTTP).
    private static func launch(
        configuration: StorekeeperConfiguration, backend: StorageBackend, httpClient: HTTPClient, clock: SimulatorClock, logger: Logger,
        idle: IdleSignal? = nil, routes: RouteListing? = nil
    ) async throws -> LaunchedServer {
        let listener = backend.makeListener(wakesRunners: configuration.runWorkers, answersHTTP: true, logger: logger)
        return try await launch(
            configuration: configuration, store: backend.store, httpClient: httpClient, clock: clock, logger: logger,
            idle: idle, routes: routes, extraServices: listener.map { [$0] } ?? [])
    }

    /// Runs a server on the simulator's clock and waits for the port it listens on.
    private static func launch(
        configuration: StorekeeperConfiguration, store: any StorekeeperStore, httpClient: HTTPClient, clock: SimulatorClock,
        logger: Logger, idle: IdleSignal? = nil, routes: RouteListing? = nil,
        extraServices: [any Service] = []
    ) async throws -> LaunchedServer {
        let (ports, continuation) = AsyncStream.makeStream(of: Int.self)
        let app = try await StorekeeperApplication.build(
            configuration: configuration, store: store, httpClient: httpClient, logger: logger, idle: idle,
            extraServices: extraServices, now: { clock.now() }, routeListing: routes, onRunning: { port in continuation.yield(port) })
        let group = ServiceGroup(services: [app], gracefulShutdownSignals: [], cancellationSignals: [], logger: logger)
        let task = Task { try await group.run() }
        var iterator = ports.makeAsyncIterator()
        guard let port = await iterator.next() else { throw CancellationError() }
        return LaunchedServer(url: "http://127.0.0.1:\(port)", group: group, task: task)
    }

    /// Runs `body`; if it throws, stops this stack before passing the error on, so a failed run
    /// ends with its error instead of a client's "not shut down" assertion.
    public func stoppedOnError<T>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch {
            try? await stop()
            throw error
        }
    }

    /// Graceful shutdown of both servers, then the clients.
    public func stop() async throws {
        await gateway?.refuse()
        await serverGroup?.triggerGracefulShutdown()
        await simulatorGroup.triggerGracefulShutdown()
        for task in tasks { _ = try? await task.value }
        try await httpClient.shutdown()
        try await serverHTTPClient.shutdown()
        storePool?.cancel()
        if let ownDatabase { Self.removeTemporaryDatabase(ownDatabase) }
    }
}
