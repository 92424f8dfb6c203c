import AppStoreClient
import Foundation
import HTTPTypes
import Hummingbird
import JobQueue
import Logging
import NIOCore
import Persistence
import ServiceLifecycle
import StorekeeperCore
import StorekeeperDomain
import StorekeeperErrors
import StorekeeperWire

/// What every controller needs. Built once at start.
struct ServerContext: Sendable {
    let configuration: StorekeeperConfiguration
    /// The only way a route reaches storage.
    let useCases: UseCases
    let metrics: MetricsRegistry
    let logger: Logger
    let now: @Sendable () -> Date
    /// The last storage failure real work ran into, reported by `/healthz`.
    let storageHealth: StorageHealth
    let receiptGate: ReceiptGate
    let signedTransactionGate: SignedTransactionGate
    /// Apps with an In-App Purchase key.
    let serverAPIClients: [String: AppStoreServerAPIClient]
    /// Admits calls made with a client key.
    let clientGate: ClientGate
    /// Apple's health as this process's workers see it (nil without workers or when off).
    var appleHealth: AppleHealthMonitor? = nil
    /// This process's calls to Apple, tallied until `AppleCallFlusher` keeps them.
    var appleCalls = AppleCallRecorder()
    /// By app id: the In-App Purchase key that signs its offers (`offerSigning`, else `serverAPI`).
    var offerSigners: [String: OfferSigner] = [:]

    var apps: [AppConfiguration] { configuration.apps }

    func app(id: String) throws -> AppConfiguration {
        guard let app = apps.first(where: { $0.id == id }) else { throw StorekeeperError(.notFound, "no app '\(id)'") }
        return app
    }

    /// The apps whose secret key, and whose client key, equal `token`.
    func match(_ token: String) -> (backend: AppConfiguration?, client: AppConfiguration?) {
        var backend: AppConfiguration?
        var client: AppConfiguration?
        for app in apps {
            if KeyComparison.equal(app.apiKey, token) { backend = app }
            if let key = app.client?.key, KeyComparison.equal(key, token) { client = app }
        }
        return (backend, client)
    }

    static func token(_ request: Request) -> String? {
        if let bearer = KeyComparison.bearer(request.headers[.authorization]) { return bearer }
        if let name = HTTPField.Name("X-API-Key"), let key = request.headers[name], !key.isEmpty { return key }
        return nil
    }

    /// A JSON request body. A body labelled as anything but JSON is refused (415) rather than
    /// parsed anyway; one sent without a Content-Type is read as JSON, as curl users expect.
    func body(_ request: Request) async throws -> ByteBuffer {
        if let type = request.headers[.contentType], !Self.isJSON(mediaType: type) {
            throw StorekeeperError(.unsupportedMediaType, "Content-Type must be application/json, not '\(type.prefix(100))'")
        }
        do {
            return try await request.body.collect(upTo: configuration.maxBodyBytes)
        } catch {
            throw StorekeeperError(.payloadTooLarge, "request body exceeds \(configuration.maxBodyBytes) bytes")
        }
    }

    static func isJSON(mediaType: String) -> Bool {
        let essence = mediaType.split(separator: ";", maxSplits: 1).first.map { $0.trimmingCharacters(in: .whitespaces).lowercased() } ?? ""
        return essence == "application/json" || (essence.hasPrefix("application/") && essence.hasSuffix("+json"))
    }

    /// Waits until the verification is final (or held), or `seconds` have passed, or the process
    /// is stopping (`AwaitVerification`).
    func waitForFinal(_ verification: VerificationRecord, seconds: Double) async throws -> VerificationRecord {
        try await useCases.awaitVerification(verification, until: ContinuousClock.now + .milliseconds(Int64(seconds * 1000)))
    }

    func isFlagged(_ verification: VerificationRecord) -> Bool {
        !verification.state.isFinal && verification.createdAt < now().addingTimeInterval(-configuration.flagAfterSeconds)
    }

    func view(_ verification: VerificationRecord) -> StorekeeperWire.Verification {
        StorekeeperWire.Verification(record: verification, flagged: isFlagged(verification))
    }
}

extension StorekeeperWire.Verification {
    /// The answer of the verification routes, from the record; `nextAttemptAt` only while a
    /// retry is scheduled.
    init(record: VerificationRecord, flagged: Bool) {
        self.init(
            id: record.id, appUserId: record.appUserId, state: State(rawValue: record.state.rawValue), reason: record.reason?.rawValue,
            attempts: record.attempts, appleStatuses: record.appleStatuses, environment: record.environment,
            nextAttemptAt: record.state == .retryScheduled ? record.nextAttemptAt : nil, createdAt: record.createdAt, updatedAt: record.updatedAt,
            finalizedAt: record.finalizedAt, flagged: flagged, grant: record.grant.map(Grant.init))
    }
}

extension StorekeeperWire.Verification.Grant {
    init(_ summary: GrantSummary) {
        self.init(
            granted: summary.granted, alreadyGranted: summary.alreadyGranted, revoked: summary.revoked,
            conflicts: summary.conflicts.map {
                .init(code: $0.code, transactionId: $0.transactionId, originalTransactionId: $0.originalTransactionId, productId: $0.productId)
            },
            transfers: summary.transfers.map {
                .init(originalTransactionId: $0.originalTransactionId, fromAppUserId: $0.fromAppUserId, toAppUserId: $0.toAppUserId)
            },
            unknownProducts: summary.unknownProducts, creditsAdded: summary.creditsAdded, subscriptionsUpdated: summary.subscriptionsUpdated,
            reinstated: summary.reinstated)
    }
}

/// App user ids are the developer's own account ids: opaque, bounded, printable. Bounded in
/// Unicode scalars, not characters: one character may carry thousands of combining marks.
func validateAppUserId(_ id: String) throws {
    guard !id.isEmpty, id.unicodeScalars.count <= 256, !id.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
        throw StorekeeperError(.invalidAppUserId, "appUserId must be 1-256 printable characters")
    }
    if AnonymousId.isMalformed(id) {
        throw StorekeeperError(.invalidAppUserId, "ids starting with '\(AnonymousId.prefix)' are anonymous ids: the prefix and a lower-case UUID")
    }
}

extension ServerContext {
    /// The known user a request speaks for (an alias read as the user it was linked to), after
    /// checking a client may act for them: its token's user, resolved the same way, must be that
    /// user. Without a token, on an app whose users sign in, a client acts only for an anonymous
    /// id that is still nobody's alias: having no token must never be worth more than having
    /// one. Every app-facing route reads its user through here.
    func identify(_ caller: Caller, _ appUserId: String) async throws -> String {
        try validateAppUserId(appUserId)
        let user = try await useCases.identity.resolve(appId: caller.app.id, appUserId: appUserId)
        switch caller {
        case .client(_, let token?):
            let own = try await useCases.identity.resolve(appId: caller.app.id, appUserId: token)
            // The message names nobody: the id asked for may be another user's.
            guard own.isSameIdentifier(as: user) else { throw StorekeeperError(.otherUser, "the user token is for another user") }
        case .client(let app, nil) where app.client?.userTokens != nil:
            guard AnonymousId.isAnonymous(appUserId), user.isSameIdentifier(as: appUserId) else {
                throw StorekeeperError(
                    .userTokenRequired,
                    "send the user token in 'Storekeeper-User-Token': without one, only an anonymous id no signed-in user has taken")
            }
        case .client, .backend:
            break
        }
        return user
    }

    /// The known user an operator's route names.
    func resolve(_ app: AppConfiguration, _ appUserId: String) async throws -> String {
        try validateAppUserId(appUserId)
        return try await useCases.identity.resolve(appId: app.id, appUserId: appUserId)
    }
}
