import Foundation

/// Purchases between the store and the server's grant, in a file that survives the app being
/// killed at any line: an intent is written before the store is asked to charge, the
/// transaction as soon as the store returns it, and the entry removed only after the server
/// granted and the store was told to finish. Each write replaces the file atomically.
struct PurchaseJournal: Sendable {
    struct Entry: Codable, Sendable, Hashable {
        var productId: String
        var appAccountToken: UUID
        var startedAt: Date
        /// Nil until the store returned the transaction.
        var transaction: StoreTransaction?
    }

    let file: URL

    func entries() -> [Entry] {
        guard let data = try? Data(contentsOf: file) else { return [] }
        return (try? JSONDecoder().decode([Entry].self, from: data)) ?? []
    }

    func update(_ change: (inout [Entry]) -> Void) throws {
        var entries = entries()
        change(&entries)
        try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        try JSONEncoder().encode(entries).write(to: file, options: .atomic)
    }
}

/// The last entitlements whose answer verified, with when: what the app shows offline.
struct EntitlementCache: Sendable {
    let file: URL

    func load() -> Entitlements? {
        guard let data = try? Data(contentsOf: file) else { return nil }
        return try? JSONDecoder().decode(Entitlements.self, from: data)
    }

    func save(_ entitlements: Entitlements) throws {
        try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        try JSONEncoder().encode(entitlements).write(to: file, options: .atomic)
    }
}
