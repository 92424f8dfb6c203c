public import Foundation
public import Persistence
public import StorekeeperDomain

/// Anonymous and known identities (docs/IDENTITY.md): every route reads a user through
/// `resolve`, so an alias reads and writes the known user it became; `logIn` links an anonymous
/// id to a known user by the app's policy.
public struct ManageIdentity: Sendable {
    let store: any IdentityStore
    /// The anonymous ids one user may have linked (each a device or reinstall that signed in): a
    /// bound on what one account can make the server keep, well above what a person does.
    let maximumAliases: Int

    public static let defaultMaximumAliases = 100

    public init(store: any IdentityStore, maximumAliases: Int = Self.defaultMaximumAliases) {
        self.store = store
        self.maximumAliases = maximumAliases
    }

    /// The known user an id stands for: itself, or the user an anonymous id was linked to.
    public func resolve(appId: String, appUserId: String) async throws -> String {
        guard AnonymousId.isAnonymous(appUserId) else { return appUserId }
        return try await store.canonicalId(appId: appId, alias: appUserId) ?? appUserId
    }

    public func aliases(appId: String, appUserId: String) async throws -> [String] {
        try await store.aliases(appId: appId, appUserId: appUserId)
    }

    /// Every id that stands for `appUserId` (it, then its aliases).
    public func ids(appId: String, appUserId: String) async throws -> [String] {
        [appUserId] + (try await store.aliases(appId: appId, appUserId: appUserId))
    }

    public enum LogInOutcome: Sendable, Hashable {
        case linked(IdentityLink)
        /// The anonymous id is not one (`$anon:` and a lower-case UUID), or the known id is.
        case invalid(String)
        /// The known user has `maximumAliases` anonymous ids linked already; nothing linked.
        case tooManyAliases(Int)
    }

    /// Links `anonymousId` to the known `appUserId` (already resolved) by `policy`.
    public func logIn(appId: String, anonymousId: String, appUserId: String, policy: LogInPolicy, now: Date) async throws -> LogInOutcome {
        guard AnonymousId.isAnonymous(anonymousId) else {
            return .invalid("anonymousId: '\(AnonymousId.prefix)' and a lower-case UUID, as StorekeeperKit makes them")
        }
        guard !AnonymousId.isAnonymous(appUserId) else { return .invalid("appUserId: a known user, not an anonymous id") }
        // Checked before the link, outside its transaction: log-ins of one user at the same
        // instant may pass the bound by their number, which is all it is meant to bound.
        let linked = try await store.aliases(appId: appId, appUserId: appUserId)
        if linked.count >= maximumAliases, !linked.contains(anonymousId) { return .tooManyAliases(maximumAliases) }
        let cause = "login-" + UUID().uuidString.lowercased()
        let link = try await store.link(appId: appId, alias: anonymousId, to: appUserId, transfer: policy == .transfer, now: now) { moved in
            EventBatch(
                events: IdentityLink.transferEvents(moved: moved, from: anonymousId, to: appUserId, appId: appId, cause: cause, now: now))
        }
        return .linked(link)
    }
}
