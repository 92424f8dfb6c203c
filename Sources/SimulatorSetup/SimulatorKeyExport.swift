import Foundation
public import StorekeeperServer

/// The In-App Purchase keys a simulator run generated, written where a team's own tools (Apple's
/// App Store Server Library, a script) can read them: each private key as App Store Connect hands
/// it out (`SubscriptionKey_<key id>.p8`, PKCS#8 PEM, readable by its owner only) and `keys.json`
/// naming, per app, its bundle id, Apple id, key id, issuer id and file. They sign calls to the
/// simulator only: it is the one party that knows their public halves.
public enum SimulatorKeyExport {
    public struct Entry: Codable, Sendable, Hashable {
        public var bundleId: String
        public var appAppleId: Int64?
        public var keyId: String
        public var issuerId: String
        public var file: String
    }

    /// Writes every app's key into `directory` (created if needed) and returns what `keys.json` lists.
    @discardableResult
    public static func write(_ apps: [AppConfiguration], to directory: String) throws -> [Entry] {
        let folder = URL(fileURLWithPath: directory, isDirectory: true)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        var entries: [Entry] = []
        for app in apps {
            guard let key = app.serverAPI else { continue }
            let file = "SubscriptionKey_\(key.keyId).p8"
            let path = folder.appendingPathComponent(file).path
            guard FileManager.default.createFile(atPath: path, contents: Data(key.privateKeyPEM.utf8), attributes: [.posixPermissions: 0o600])
            else { throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: path]) }
            entries.append(Entry(bundleId: app.bundleId, appAppleId: app.appAppleId, keyId: key.keyId, issuerId: key.issuerId, file: file))
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        try encoder.encode(entries).write(to: folder.appendingPathComponent("keys.json"))
        return entries
    }

    /// Gives every app without an In-App Purchase key a fresh one, each with its own key id
    /// (`SIMKEY0001`, `SIMKEY0002`, …), as the simulator's App Store Connect would issue them.
    public static func generateMissing(_ apps: inout [AppConfiguration]) {
        for index in apps.indices where apps[index].serverAPI == nil {
            apps[index].serverAPI = .generated(
                keyId: "SIMKEY" + String(repeating: "0", count: max(0, 4 - String(index + 1).count)) + String(index + 1))
        }
    }
}
