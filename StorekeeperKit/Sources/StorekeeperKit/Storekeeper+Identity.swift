import Foundation
import StorekeeperWire

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension Storekeeper {
    /// Signs `appUserId` in (docs/IDENTITY.md). From an anonymous id, the server links it to the
    /// user by the app's policy (its purchases move to them, or stay with it under `keep`); from
    /// another known user, the SDK simply speaks for the new one. The cached entitlements are
    /// the new user's from then on.
    public func logIn(_ appUserId: String, userToken: @escaping @Sendable () async throws -> String) async throws -> LogInResult {
        guard !IdentityState.isAnonymous(appUserId) else {
            throw StorekeeperKitError(.refused, "invalid_request: logIn takes a known user, not an anonymous id", serverCode: "invalid_request")
        }
        guard appUserId != self.appUserId else { return .alreadyLinked }
        let previous = self.appUserId
        var result = LogInResult.switched
        if IdentityState.isAnonymous(previous) {
            // What the anonymous id bought and has not delivered goes first, under its own id.
            _ = try? await deliverPending()
            let target = "/v1/subscribers/" + (appUserId.addingPercentEncoding(withAllowedCharacters: Self.unreserved) ?? appUserId) + "/aliases"
            let previousToken = self.userToken
            self.userToken = userToken
            let answer: ServerAnswer
            do {
                answer = try await call("POST", target, body: try JSONEncoder().encode(LogInRequest(anonymousId: previous)))
            } catch {
                self.userToken = previousToken
                throw error
            }
            guard answer.status == 200 else {
                self.userToken = previousToken
                throw refusal(answer)
            }
            guard let decoded = try? WireJSON.makeDecoder().decode(LogInAnswer.self, from: answer.body),
                decoded.appUserId.utf8.elementsEqual(appUserId.utf8)
            else {
                self.userToken = previousToken
                throw StorekeeperKitError(.forgedAnswer, "not a logIn answer for \(appUserId)")
            }
            switch decoded.outcome {
            case .linked: result = .linked(transferred: decoded.transactionIds)
            case .alreadyLinked: result = .alreadyLinked
            default: result = .keptWithAnonymous(transactionIds: decoded.transactionIds)
            }
        }
        let linked: String? =
            switch result {
            case .linked, .alreadyLinked: previous
            case .keptWithAnonymous, .switched: nil
            }
        try become(appUserId, token: userToken, linking: linked)
        _ = try? await entitlements(refresh: true)
        return result
    }

    /// Signs the user out: the SDK speaks for a new anonymous id from now on (nothing changes
    /// on the server). Purchases journaled for the user who left wait for them to sign in again.
    public func logOut() throws {
        try become(IdentityState.newAnonymousId(), token: nil, linking: nil)
    }

    /// Switches the user: the identity file first (a crash after it leaves the new user signed
    /// in), then the cache, which was the previous user's.
    private func become(_ user: String, token: (@Sendable () async throws -> String)?, linking previous: String?) throws {
        var next = identity
        next.appUserId = user
        next.linked = previous.map { [$0] } ?? []
        try next.save(in: configuration.stateDirectory)
        identity = next
        appUserId = user
        userToken = token
        cache.discard()
    }

    /// Starts what an app runs for its lifetime, owned by the SDK until `stop`: every pending
    /// purchase sent now (with backoff), then the store's updates listened to. `report` hears
    /// each outcome. Starting again restarts it.
    public func start(report: @escaping @Sendable (StoreTransaction?, Outcome) async -> Void = { _, _ in }) {
        listener?.cancel()
        listener = Task { [weak self] in
            guard let self else { return }
            if let outcomes = try? await self.deliverPendingWithBackoff() {
                for (_, outcome) in outcomes.sorted(by: { $0.key < $1.key }) { await report(nil, outcome) }
            }
            await self.listenForUpdates { transaction, outcome in await report(transaction, outcome) }
        }
    }

    /// Stops the listener `start` began.
    public func stop() {
        listener?.cancel()
        listener = nil
    }

    /// Whether `start` is running.
    public var isListening: Bool { listener != nil }
}
