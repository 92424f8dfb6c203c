import Foundation
import Persistence
import StorageSQLite
import StorekeeperCore
import StorekeeperDomain
import StorekeeperTesting
import Testing

extension StorageConformanceTests {
    /// The rows are only half of it: SQLite keeps earlier versions of a page in its write-ahead
    /// log, and freed cells in the file, until something overwrites them. Each attribute is
    /// written five times so that old copies exist to be left behind.
    @Test("sqlite: after a deletion neither the database file nor its write-ahead log holds the customer's id, e-mail, name, custom value or words")
    func sqliteFilesForgetTheCustomer() async throws {
        let path = LocalStack.temporaryDatabasePath()
        defer { LocalStack.removeTemporaryDatabase(path) }
        let store = try SQLiteStore(configuration: .init(path: path))
        try store.migrate()
        try await store.seedProducts(appId: "app", products: catalog, now: t0)
        let user = "zelda.quux-7"
        let manage = ManageCustomers(store: store)
        for round in 0..<5 {
            _ = try await manage.update(
                appId: "app", appUserId: user,
                change: AttributeChange(
                    email: .set("zelda.quux@example.org"), displayName: .set("Zelda Quux"), custom: ["team": "ultramarine-\(round)"]),
                now: t0.addingTimeInterval(Double(round)))
        }
        try await grantSigned(store, [coinPurchase("z1")], user: user, tag: "z1")
        let spent = try await ManageCredits(store: store).spend(
            .init(appId: "app", appUserId: user, key: "zelda-1", amount: 1, reason: "a potion for Zelda Quux"), now: t0)
        guard case .spent = spent else {
            Issue.record("\(spent)")
            return
        }
        #expect(
            try await manage.suspend(
                appId: "app", appUserId: user, reason: "disputed by zelda.quux@example.org", actor: AuditActor(name: "ops", reason: ""), cause: nil,
                now: t0))
        let needles = [user, "zelda.quux@example.org", "Zelda Quux", "ultramarine"]
        let before = Self.filesHolding(needles, path: path)
        #expect(Set(before.map(\.needle)) == Set(needles), "the files held each before: \(before)")

        _ = try #require(
            try await manage.delete(appId: "app", appUserId: user, actor: AuditActor(name: "dpo", reason: "asked by Zelda Quux"), now: t0))
        let after = Self.filesHolding(needles, path: path)
        #expect(after.isEmpty, "\(after)")
    }

    /// Which of `needles` the database file and its write-ahead log hold, byte for byte.
    static func filesHolding(_ needles: [String], path: String) -> [(needle: String, file: String)] {
        var found: [(needle: String, file: String)] = []
        for file in [path, path + "-wal"] {
            guard let data = FileManager.default.contents(atPath: file) else { continue }
            for needle in needles where data.range(of: Data(needle.utf8)) != nil {
                found.append((needle, URL(fileURLWithPath: file).lastPathComponent))
            }
        }
        return found
    }
}
