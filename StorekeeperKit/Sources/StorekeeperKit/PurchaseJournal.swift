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
        /// The user signed in when it was bought (nil in journals written before users could
        /// change: the configured one).
        var appUserId: String?
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

/// The last subscriber answer that verified, kept as the server signed it (body, nonce, path,
/// signature) and checked again with the pinned keys at every load: the file is the user's to
/// edit (a device backup is enough), so an edited one fails the check and is discarded.
struct EntitlementCache: Sendable {
    struct Stored: Codable, Sendable {
        var nonce: String
        var method: String
        var target: String
        var status: Int
        /// `Storekeeper-Signature`; nil only when no keys are pinned.
        var signature: String?
        var body: Data
        /// The server's signed time, or this device's clock at the check when no keys are pinned.
        var verifiedAt: Date
    }

    let file: URL

    /// The kept answer; a file that does not decode (cut short, edited) is deleted, so it is
    /// not read again at every launch.
    func load() -> Stored? {
        guard let data = try? Data(contentsOf: file) else { return nil }
        guard let stored = try? JSONDecoder().decode(Stored.self, from: data) else {
            discard()
            return nil
        }
        return stored
    }

    func save(_ stored: Stored) throws {
        try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        try JSONEncoder().encode(stored).write(to: file, options: .atomic)
    }

    func discard() {
        try? FileManager.default.removeItem(at: file)
    }
}
