// swift-tools-version:6.1
import PackageDescription

/// The app's half of server mode, as a package of its own: `swift test --package-path
/// StorekeeperKit` builds and tests the SDK alone, as an app's CI would. Apps add it through the
/// repository's root manifest, which declares the same `StorekeeperKit` product over these
/// sources (docs/SDK.md, "Add the package"): Foundation, and swift-crypto for the signature checks
/// (CryptoKit underneath on Apple platforms).
let upcoming: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
]

// StoreKit, UIKit and Security do not exist on Linux, where CI runs. On a Linux host only, the
// manifest declares modules of those names (Security's as `SecurityForLinux`) holding exactly the symbols the StoreKit adapter
// (`StoreKitStoreFront.swift`) and the Keychain store (`NewestAnswers.swift`) use, as Apple
// documents them (Sources/StoreKitForLinux, Sources/UIKitForLinux, Sources/SecurityForLinux), so
// the same files Xcode compiles are type-checked, and run (against the App Store simulator, and an
// in-memory keychain), on every CI run. On a Mac the manifest never declares them: an app builds
// against the real frameworks.
#if os(Linux)
let storeKitForLinux: [Target] = [
    .target(name: "UIKit", path: "Sources/UIKitForLinux", swiftSettings: upcoming),
    .target(name: "StoreKit", dependencies: ["UIKit"], path: "Sources/StoreKitForLinux", swiftSettings: upcoming),
    // Not named `Security`: swift-certificates imports Security wherever it can, and would then
    // compile its Apple-only code against this stand-in.
    .target(name: "SecurityForLinux", path: "Sources/SecurityForLinux", swiftSettings: upcoming),
]
let storeKit: [Target.Dependency] = ["StoreKit", "UIKit"]
let security: [Target.Dependency] = ["SecurityForLinux"]
#else
let storeKitForLinux: [Target] = []
let storeKit: [Target.Dependency] = []
let security: [Target.Dependency] = []
#endif

let package = Package(
    name: "StorekeeperKit",
    platforms: [.iOS(.v16), .macOS(.v13)],
    products: [
        .library(name: "StorekeeperKit", targets: ["StorekeeperKit"]),
        .library(name: "StorekeeperWire", targets: ["StorekeeperWire"]),
        /// The App Store simulator as the store, for Linux and tests (never linked into an app).
        .library(name: "StorekeeperKitSimulator", targets: ["StorekeeperKitSimulator"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.5.2")
    ],
    targets: [
        /// The API's wire contract, shared with the server: the error codes with their statuses.
        .target(name: "StorekeeperWire", swiftSettings: upcoming),
        .target(
            name: "StorekeeperKit",
            dependencies: ["StorekeeperWire", .product(name: "Crypto", package: "swift-crypto")] + storeKit + security,
            swiftSettings: upcoming),
        .target(
            name: "StorekeeperKitSimulator", dependencies: ["StorekeeperKit"] + storeKit, swiftSettings: upcoming),
        /// The SDK's own checks with no server (answer signatures, codes); the end-to-end tests
        /// against the server live in the server package (StorekeeperKitTests).
        .testTarget(
            name: "StorekeeperKitUnitTests",
            dependencies: ["StorekeeperKit", "StorekeeperWire", .product(name: "Crypto", package: "swift-crypto")],
            swiftSettings: upcoming),
    ] + storeKitForLinux
)
