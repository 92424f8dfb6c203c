import Foundation

#if canImport(Security)
import Security
#elseif canImport(SecurityForLinux)
import SecurityForLinux
#endif

/// The signed time of the newest entitlements answer seen for each user (by an opaque key). The
/// cache of that answer lives among the app's files, which a user can put back from an older
/// copy (a backup, a jailbroken device's file manager) to see a purchase again that was refunded
/// since; a kept answer older than this time is never shown. So it is kept where such a copy
/// does not reach.
public protocol NewestAnswerStore: Sendable {
    func newest(for key: String) -> Date?
    /// Keeps `signedAt` when it is newer than what is kept.
    func record(_ signedAt: Date, for key: String)
}

enum NewestAnswers {
    /// The Keychain where the platform has one (items kept on this device only, outside the
    /// app's container); elsewhere a file in the state directory, which guards against an
    /// edited cache but not against a copy of the whole directory.
    static func platformDefault(stateDirectory: URL) -> any NewestAnswerStore {
        #if canImport(Security)
        KeychainNewestAnswers(service: "storekeeper.newest-answers")
        #else
        FileNewestAnswers(file: stateDirectory.appendingPathComponent("newest-answers.json"))
        #endif
    }
}

/// Milliseconds since 1970 by key, in one JSON file.
public struct FileNewestAnswers: NewestAnswerStore {
    let file: URL

    public init(file: URL) { self.file = file }

    private func load() -> [String: Int64] {
        guard let data = try? Data(contentsOf: file) else { return [:] }
        return (try? JSONDecoder().decode([String: Int64].self, from: data)) ?? [:]
    }

    public func newest(for key: String) -> Date? {
        load()[key].map { Date(timeIntervalSince1970: Double($0) / 1000) }
    }

    public func record(_ signedAt: Date, for key: String) {
        var all = load()
        let ms = Int64((signedAt.timeIntervalSince1970 * 1000).rounded())
        guard ms > all[key] ?? .min else { return }
        all[key] = ms
        try? FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        try? JSONEncoder().encode(all).write(to: file, options: .atomic)
    }
}

#if canImport(Security) || canImport(SecurityForLinux)
/// A generic-password item per key (service `service`, account the key), readable after the
/// first unlock and never migrated to another device.
struct KeychainNewestAnswers: NewestAnswerStore {
    let service: String

    private func item(_ key: String) -> [String: Any] {
        [kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: service, kSecAttrAccount as String: key]
    }

    func newest(for key: String) -> Date? {
        var query = item(key)
        query[kSecReturnData as String] = true
        query[kSecMatchLimit as String] = kSecMatchLimitOne
        var result: CFTypeRef?
        guard SecItemCopyMatching(query as CFDictionary, &result) == errSecSuccess, let data = result as? Data,
            let ms = Int64(String(decoding: data, as: UTF8.self))
        else { return nil }
        return Date(timeIntervalSince1970: Double(ms) / 1000)
    }

    func record(_ signedAt: Date, for key: String) {
        if let newest = newest(for: key), newest >= signedAt { return }
        let data = Data(String(Int64((signedAt.timeIntervalSince1970 * 1000).rounded())).utf8)
        let status = SecItemUpdate(item(key) as CFDictionary, [kSecValueData as String: data] as CFDictionary)
        guard status == errSecItemNotFound else { return }
        var added = item(key)
        added[kSecValueData as String] = data
        added[kSecAttrAccessible as String] = kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly
        _ = SecItemAdd(added as CFDictionary, nil)
    }
}
#endif
