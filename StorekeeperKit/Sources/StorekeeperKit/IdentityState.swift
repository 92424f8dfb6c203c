import Foundation

/// Who the SDK speaks for, kept across launches in `stateDirectory/identity.json`: the current
/// user (an anonymous id until someone signs in), the anonymous ids `logIn` linked to them, and
/// the transactions the server refused for good for a user (not sent again for them).
struct IdentityState: Codable, Sendable, Hashable {
    var appUserId: String
    var linked: [String] = []
    /// Transaction id → the user it was refused for.
    var refusedFor: [String: String] = [:]

    static let prefix = "$anon:"

    static func isAnonymous(_ id: String) -> Bool { id.hasPrefix(prefix) }

    static func newAnonymousId() -> String { prefix + UUID().uuidString.lowercased() }

    static func file(_ directory: URL) -> URL { directory.appendingPathComponent("identity.json") }

    /// The configured user when there is one; else the anonymous id of an earlier launch; else
    /// a new one (written at once, so a purchase made next is bought under it for good).
    static func load(from directory: URL, configured: String?) -> IdentityState {
        let stored = (try? Data(contentsOf: file(directory))).flatMap { try? JSONDecoder().decode(IdentityState.self, from: $0) }
        var state: IdentityState
        if let configured {
            state = stored?.appUserId == configured ? stored! : IdentityState(appUserId: configured, refusedFor: stored?.refusedFor ?? [:])
        } else if let stored, isAnonymous(stored.appUserId) {
            state = stored
        } else {
            state = IdentityState(appUserId: newAnonymousId(), refusedFor: stored?.refusedFor ?? [:])
        }
        if state != stored { try? state.save(in: directory) }
        return state
    }

    func save(in directory: URL) throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try JSONEncoder().encode(self).write(to: Self.file(directory), options: .atomic)
    }

    func refused(_ transactionId: String, for user: String) -> Bool { refusedFor[transactionId] == user }

    mutating func remember(refused transactionId: String, for user: String, in directory: URL) throws {
        refusedFor[transactionId] = user
        try save(in: directory)
    }
}
