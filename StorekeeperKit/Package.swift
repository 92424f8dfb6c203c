// swift-tools-version:6.1
import PackageDescription

/// The app's half of server mode. A package of its own, so an app that adds it pulls in none of
/// the server's dependencies: Foundation, and swift-crypto for the signature checks (CryptoKit
/// underneath on Apple platforms).
let package = Package(
    name: "StorekeeperKit",
    platforms: [.iOS(.v16), .macOS(.v13)],
    products: [
        .library(name: "StorekeeperKit", targets: ["StorekeeperKit"]),
        /// The App Store simulator as the store, for Linux and tests (never linked into an app).
        .library(name: "StorekeeperKitSimulator", targets: ["StorekeeperKitSimulator"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.5.2")
    ],
    targets: [
        .target(
            name: "StorekeeperKit",
            dependencies: [.product(name: "Crypto", package: "swift-crypto")],
            swiftSettings: [
                .enableUpcomingFeature("ExistentialAny"),
                .enableUpcomingFeature("MemberImportVisibility"),
            ]),
        .target(
            name: "StorekeeperKitSimulator", dependencies: ["StorekeeperKit"],
            swiftSettings: [
                .enableUpcomingFeature("ExistentialAny"),
                .enableUpcomingFeature("MemberImportVisibility"),
            ]),
        /// The SDK's own checks with no server (answer signatures, codes); the end-to-end tests
        /// against the server live in the server package (StorekeeperKitTests).
        .testTarget(
            name: "StorekeeperKitUnitTests",
            dependencies: ["StorekeeperKit", .product(name: "Crypto", package: "swift-crypto")],
            swiftSettings: [
                .enableUpcomingFeature("ExistentialAny"),
                .enableUpcomingFeature("MemberImportVisibility"),
            ]),
    ]
)
