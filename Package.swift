// swift-tools-version:6.2
import PackageDescription

/// One settings array for every target, so the language mode is uniform.
/// Our targets only (dependencies keep their own settings): no warning survives a build, and an
/// import is internal unless a file says `public import`, so a module's public face names what it
/// re-exposes. No `unsafeFlags`: the library products stay usable as versioned dependencies.
let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
    .enableUpcomingFeature("InternalImportsByDefault"),
    .treatAllWarnings(as: .error),
]

/// The app's SDK (docs/SDK.md), declared here as well as in StorekeeperKit/Package.swift, so an app
/// adds this repository by URL (Xcode's "Add Package", or one line in its manifest) and gets the
/// `StorekeeperKit` product. SwiftPM builds only what a used product needs, so an app compiles
/// StorekeeperKit and swift-crypto, never the server's dependencies (`scripts/sdk-package-check.sh`
/// builds such an app and lists its modules). Chosen over a package trait: every SwiftPM from 5.9
/// understands it, and the server needs no switch turned on. The two manifests are never in one
/// graph: this one no longer depends on the subfolder's package, which stays for
/// `swift test --package-path StorekeeperKit` (the SDK alone, as an app's CI would build it).
/// Its settings are the SDK package's: its files make their own imports public where they must.
let sdkSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
    .treatAllWarnings(as: .error),
]

// StoreKit, UIKit and Security do not exist on Linux: there only, the stand-ins the SDK's own
// manifest declares (StorekeeperKit/Package.swift says why), so the adapter is type-checked here too.
#if os(Linux)
let sdkStandIns: [Target] = [
    .target(name: "UIKit", path: "StorekeeperKit/Sources/UIKitForLinux", swiftSettings: sdkSettings),
    .target(name: "StoreKit", dependencies: ["UIKit"], path: "StorekeeperKit/Sources/StoreKitForLinux", swiftSettings: sdkSettings),
    .target(name: "SecurityForLinux", path: "StorekeeperKit/Sources/SecurityForLinux", swiftSettings: sdkSettings),
]
let sdkStoreKit: [Target.Dependency] = ["StoreKit", "UIKit"]
let sdkSecurity: [Target.Dependency] = ["SecurityForLinux"]
#else
let sdkStandIns: [Target] = []
let sdkStoreKit: [Target.Dependency] = []
let sdkSecurity: [Target.Dependency] = []
#endif

let package = Package(
    name: "storekeeper",
    platforms: [.macOS(.v15), .iOS(.v16)],
    products: [
        /// The app's SDK: what an iOS app adds.
        .library(name: "StorekeeperKit", targets: ["StorekeeperKit"]),
        .library(name: "StorekeeperWire", targets: ["StorekeeperWire"]),
        .executable(name: "storekeeper", targets: ["storekeeper"]),
        .executable(name: "storekeeper-bench", targets: ["storekeeper-bench"]),
        .library(name: "StorekeeperServer", targets: ["StorekeeperServer"]),
        .library(name: "AppStoreSimulator", targets: ["AppStoreSimulator"]),
    ],
    traits: [
        // `swift build -c release --traits OTel`: `serve` and `worker` export their spans over
        // OTLP/HTTP (OTEL_* environment variables). Off by default: swift-otel brings
        // swift-protobuf, minutes more of a cold build, for what most deployments never turn on.
        .trait(name: "OTel", description: "Export traces over OTLP/HTTP with swift-otel.")
    ],
    dependencies: [
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/groue/GRDB.swift.git", from: "7.10.0"),
        .package(url: "https://github.com/apple/swift-certificates.git", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-asn1.git", from: "1.7.4"),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.5.2"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.35.2"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        .package(url: "https://github.com/vapor/jwt-kit.git", from: "5.7.1"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/apple/swift-distributed-tracing.git", from: "1.7.3"),
        // The environment layer only (no default trait: the file keeps its own strict decoder).
        .package(url: "https://github.com/apple/swift-configuration.git", from: "1.4.0", traits: ["JSON"]),
        // The operators' console: server-rendered pages (docs/CONSOLE.md).
        .package(url: "https://github.com/hummingbird-project/swift-mustache.git", from: "2.1.1"),
        // Only with the `OTel` trait (see `traits`): not built otherwise.
        .package(url: "https://github.com/swift-otel/swift-otel.git", from: "1.6.0", traits: ["OTLPHTTP"]),
        // Tests only: reads docs/openapi.yaml for the wire contract's check without a server.
        .package(url: "https://github.com/jpsim/Yams.git", from: "6.2.2"),
    ],
    targets: [
        // MARK: - The app's SDK

        /// The API's wire contract shared by the server and the SDK (StorekeeperKit/Sources/
        /// StorekeeperWire): Foundation only. The error codes, the JSON dialect, the app routes' messages.
        .target(name: "StorekeeperWire", path: "StorekeeperKit/Sources/StorekeeperWire", swiftSettings: sdkSettings),
        /// The SDK (StorekeeperKit/Sources/StorekeeperKit): Foundation and swift-crypto only.
        .target(
            name: "StorekeeperKit",
            dependencies: ["StorekeeperWire", .product(name: "Crypto", package: "swift-crypto")] + sdkStoreKit + sdkSecurity,
            path: "StorekeeperKit/Sources/StorekeeperKit",
            swiftSettings: sdkSettings
        ),
        /// The App Store simulator as the store, for Linux and tests (never linked into an app).
        .target(
            name: "StorekeeperKitSimulator",
            dependencies: ["StorekeeperKit"] + sdkStoreKit,
            path: "StorekeeperKit/Sources/StorekeeperKitSimulator",
            swiftSettings: sdkSettings
        ),

        // MARK: - Targets

        /// Apple's wire shapes (verifyReceipt JSON, status codes). Foundation only.
        .target(name: "AppStoreModels", dependencies: ["StorekeeperWire"], swiftSettings: swiftSettings),

        /// HTTP clients for Apple's endpoints: verifyReceipt and the App Store Server API.
        .target(
            name: "AppStoreClient",
            dependencies: [
                "AppStoreModels",
                .product(name: "JWTKit", package: "jwt-kit"),
                // The V1 promotional offer signature: a DER ECDSA signature over text, not a JWS.
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ],
            swiftSettings: swiftSettings
        ),

        /// Receipt parsing and signature checks: no I/O, fuzzable.
        .target(
            name: "AppStoreCrypto",
            dependencies: [
                "StorekeeperWire",
                "AppStoreModels",
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: swiftSettings
        ),

        /// Pure domain rules: catalog, verification lifecycle, grants, entitlements. No I/O.
        .target(name: "StorekeeperDomain", dependencies: ["AppStoreModels", "StorekeeperWire"], swiftSettings: swiftSettings),

        /// `CodedError`: the one error shape (code, message, cause, file, line) every module throws.
        .target(name: "StorekeeperErrors", swiftSettings: swiftSettings),

        /// Generic durable job queue: job lifecycle, retry policy, runner service over a store port.
        .target(
            name: "JobQueue",
            dependencies: [
                "StorekeeperErrors",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ],
            swiftSettings: swiftSettings
        ),

        /// Storage ports and records shared by every database adapter.
        .target(
            name: "Persistence",
            dependencies: ["StorekeeperDomain", "JobQueue", "StorekeeperWire"],
            swiftSettings: swiftSettings
        ),

        /// The embedded SQLite adapter (GRDB) for every storage port.
        .target(
            name: "StorageSQLite",
            dependencies: [
                "Persistence", "StorekeeperDomain", "JobQueue", "StorekeeperWire", .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ],
            swiftSettings: swiftSettings
        ),

        /// The PostgreSQL adapter (PostgresNIO) for every storage port: many processes, one database.
        .target(
            name: "StoragePostgres",
            dependencies: [
                "Persistence", "JobQueue", "StorekeeperDomain", "StorekeeperWire", "StorekeeperErrors",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ],
            swiftSettings: swiftSettings
        ),

        /// The application layer: every use case that changes money-relevant state, written once over
        /// the narrow storage ports; storage adapters only turn its decisions into SQL.
        .target(
            name: "StorekeeperCore",
            dependencies: [
                "StorekeeperWire",
                "AppStoreModels", "StorekeeperDomain", "Persistence", "JobQueue", "StorekeeperErrors",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),

        /// A real HTTP server that behaves like the App Store. Shares wire models, never verification code.
        .target(
            name: "AppStoreSimulator",
            dependencies: [
                "AppStoreModels",
                // Its idle signal only: the generic queue's primitive, no Storekeeper code.
                "JobQueue",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),

        /// The HTTP API, configuration, verification job handler and metrics.
        .target(
            name: "StorekeeperServer",
            dependencies: [
                "AppStoreModels", "AppStoreClient", "StorekeeperDomain", "StorekeeperCore", "Persistence", "JobQueue", "StorageSQLite",
                "StoragePostgres", "AppStoreCrypto", "StorekeeperConsole", "StorekeeperWire", "StorekeeperErrors",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "Configuration", package: "swift-configuration"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
            ],
            swiftSettings: swiftSettings
        ),

        /// The operators' console as pages: its templates and stylesheet (files a designer edits,
        /// compiled into the binary so a deployment is still one file), a typed view model per
        /// page built by a pure presenter, and the renderer. No HTTP, sessions or storage.
        .target(
            name: "StorekeeperConsole",
            dependencies: ["StorekeeperDomain", "Persistence", "StorekeeperCore", .product(name: "Mustache", package: "swift-mustache")],
            resources: [.embedInCode("Templates")],
            swiftSettings: swiftSettings
        ),

        /// Test data and fixed instants, with nothing but Foundation: the pure test targets use it.
        .target(name: "TestFixtures", swiftSettings: swiftSettings),
        /// Runs the simulator and the server in process on loopback, with HTTP clients for both:
        /// used by the test suite and by `storekeeper bench`.
        .target(
            name: "StorekeeperTesting",
            dependencies: [
                "AppStoreModels", "AppStoreSimulator", "SimulatorSetup", "StorekeeperServer", "StorageSQLite", "StoragePostgres", "StorekeeperDomain",
                "JobQueue", "AppStoreClient", "Persistence", "TestFixtures", "StorekeeperErrors",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: swiftSettings
        ),

        /// The simulator set up to sell what a server's configuration sells: shared by
        /// `serve --simulator`, the benchmarks and the tests.
        .target(
            name: "SimulatorSetup",
            dependencies: [
                "AppStoreSimulator", "StorekeeperServer", "StorekeeperDomain", .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: swiftSettings
        ),

        // MARK: - Executables

        /// The shipped binary: it links no test support.
        .executableTarget(
            name: "storekeeper",
            dependencies: [
                "StorekeeperWire",
                "StorekeeperServer", "AppStoreSimulator", "SimulatorSetup", "StorageSQLite", "StoragePostgres", "Persistence",
                "StorekeeperCore", "StorekeeperDomain", "AppStoreClient", "JobQueue", "AppStoreCrypto", "AppStoreModels",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Configuration", package: "swift-configuration"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "OTel", package: "swift-otel", condition: .when(traits: ["OTel"])),
            ],
            swiftSettings: swiftSettings
        ),

        /// The benchmarks (docs/BENCHMARKS.md): the server and simulator in process, over loopback.
        .executableTarget(
            name: "storekeeper-bench",
            dependencies: [
                "StorekeeperServer", "AppStoreSimulator", "StorekeeperTesting", "TestFixtures", "Persistence", "StorekeeperDomain",
                "AppStoreCrypto", "AppStoreModels", "StorekeeperCore", "JobQueue", "SimulatorSetup",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),

        /// libFuzzer target for the receipt parser (docs/FUZZING.md).
        .executableTarget(name: "ReceiptFuzzer", dependencies: ["AppStoreCrypto"], swiftSettings: swiftSettings),

        /// libFuzzer target for the JWS reader and the signed-payload decoders (docs/FUZZING.md).
        .executableTarget(
            name: "SignedDataFuzzer",
            dependencies: [
                "StorekeeperWire",
                "AppStoreCrypto", "AppStoreModels", .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ],
            swiftSettings: swiftSettings
        ),

        // MARK: - Tests

        /// Pure layers: wire models, domain rules, state machines, use-case decisions. Seconds.
        /// The console's presenters and templates, rendered without a server or a browser.
        /// The wire contract against docs/openapi.yaml, with no server: one encoded sample of every
        /// `WireMessage`, held against its schema.
        .testTarget(
            name: "WireContractTests",
            dependencies: ["StorekeeperWire", "WireSamples", .product(name: "Yams", package: "Yams")],
            swiftSettings: swiftSettings
        ),
        /// One encoded sample of every shared message: the contract tests hold them against the
        /// API document, the server's tests against the forms it stores.
        .target(name: "WireSamples", dependencies: ["StorekeeperWire"], path: "Tests/WireSamples", swiftSettings: swiftSettings),
        .testTarget(
            name: "StorekeeperConsoleTests",
            dependencies: ["StorekeeperConsole", "StorekeeperDomain", "Persistence", "StorekeeperCore"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "StorekeeperDomainTests",
            dependencies: [
                "StorekeeperWire",
                "AppStoreModels", "AppStoreCrypto", "StorekeeperDomain", "StorekeeperCore", "Persistence", "JobQueue", "TestFixtures",
                "StorekeeperErrors",
            ],
            swiftSettings: swiftSettings
        ),

        /// Receipts, JWS, chains and OCSP, with no server.
        .testTarget(
            name: "AppStoreCryptoTests",
            dependencies: [
                "StorekeeperWire",
                "AppStoreCrypto", "AppStoreModels", "AppStoreSimulator", "TestFixtures",
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),

        /// One conformance suite over every storage adapter (SQLite, PostgreSQL), and the queue on them.
        .testTarget(
            name: "StorageConformanceTests",
            dependencies: [
                "AppStoreModels", "StorekeeperDomain", "StorekeeperCore", "Persistence", "JobQueue", "StorageSQLite", "StoragePostgres",
                "AppStoreSimulator", "StorekeeperTesting", "TestFixtures", "StorekeeperWire",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),

        /// The server end to end over real HTTP, real processes and the simulator.
        /// A command-line "app" using StorekeeperKit against `storekeeper serve --simulator`.
        .executableTarget(
            name: "storekeeperkit-example",
            dependencies: [
                "StorekeeperKit",
                "StorekeeperKitSimulator",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: swiftSettings
        ),

        /// The SDK's own unit tests (no server), the files of its package's `StorekeeperKitUnitTests`
        /// built once more here: the suite runs them with everything else from the one build.
        .testTarget(
            name: "StorekeeperKitUnitChecks",
            dependencies: [
                "StorekeeperKit",
                "StorekeeperWire",
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            path: "StorekeeperKit/Tests/StorekeeperKitUnitTests",
            swiftSettings: swiftSettings
        ),
        /// StorekeeperKit's core over real HTTP against the server and the simulator.
        .testTarget(
            name: "StorekeeperKitTests",
            dependencies: [
                "AppStoreSimulator", "StorekeeperServer", "StorekeeperTesting", "Persistence", "StorekeeperDomain",
                "StorekeeperKit", "StorekeeperWire",
                "StorekeeperKitSimulator",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),

        .testTarget(
            name: "StorekeeperTests",
            dependencies: [
                "StorekeeperWire", "StorekeeperErrors", "WireSamples",
                "AppStoreModels", "AppStoreClient", "StorekeeperDomain", "StorekeeperCore", "Persistence", "JobQueue", "StorageSQLite",
                "AppStoreSimulator", "SimulatorSetup", "StorekeeperServer", "StorekeeperTesting", "TestFixtures", "AppStoreCrypto",
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "Configuration", package: "swift-configuration"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
            ],
            exclude: ["Fixtures"],
            swiftSettings: swiftSettings
        ),
    ] + sdkStandIns
)
