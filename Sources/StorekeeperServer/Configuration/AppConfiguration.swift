public import AppStoreClient
import AppStoreCrypto
import Crypto
import Foundation
import JobQueue
public import StorekeeperDomain

/// One app served by this server. Several apps share one server and one database.
public struct AppConfiguration: Codable, Sendable, Hashable {
    /// Short stable name used in admin URLs and the database (`[a-z0-9_-]`).
    public var id: String
    public var bundleId: String
    /// App Store Connect shared secret; required for auto-renewable subscriptions.
    public var sharedSecret: String?
    /// App Review tests production builds against the sandbox, so this defaults to true.
    /// Sandbox grants are recorded as sandbox and kept apart in the ledger either way.
    public var acceptSandbox: Bool = true
    /// Key the app's backend sends as `Authorization: Bearer …` on app-facing routes.
    public var apiKey: String
    /// Catalog loaded at start: entries not yet stored are inserted; stored ones keep admin edits.
    public var products: [Product] = []
    /// In-App Purchase key for the App Store Server API. Without it: no notification gap-fill,
    /// no subscriber refresh, and receipts wait for verifyReceipt while it is down.
    public var serverAPI: ServerAPIKeyConfiguration?
    /// The app's own access (a publishable client key and who its user is); nil: backends only.
    public var client: ClientAccess?
    /// The app's Apple id (App Store Connect, App Information). When set, a production
    /// notification must name it, as Apple's own verifier requires; sandbox ones need not.
    public var appAppleId: Int64?
    /// Named access levels (`pro`), each unlocked by any of its products (docs/ENTITLEMENTS.md).
    public var entitlements: [EntitlementDefinition] = []
    /// What paywalls show (docs/OFFERINGS.md): seeded when not stored, then edited through the
    /// admin API like the catalog.
    public var offerings: [Offering] = []
    /// The default offering and the rules before it; seeded when the app has none stored.
    public var offeringTargeting: OfferingTargeting?
    /// What a RESCIND_CONSENT does beyond recording it and telling the holders (docs/EVENTS.md):
    /// `record` (default), `revoke_access`, `delete_data` (docs/CUSTOMERS.md).
    public var rescindConsentPolicy: RescindConsentPolicy = .record
    /// What `logIn` does with an anonymous id's purchases (docs/IDENTITY.md): `transfer`
    /// (default: they move to the signed-in user) or `keep` (they stay with the anonymous id).
    public var logInPolicy: LogInPolicy = .transfer
    /// Apple's commission programme, for the ledger's proceeds (docs/REVENUE.md): `standard`
    /// (default) or `small_business`.
    public var commission: CommissionProgram = .standard
    /// One currency every figure is also reported in, with the operator's monthly rates
    /// (docs/ANALYTICS.md); none: reports stay per currency.
    public var reporting: ReportingCurrency?
    /// Promotional and win-back offers the server signs (docs/OFFERS.md); an offer not listed is
    /// never signed.
    public var offers: [OfferDefinition] = []
    /// Subscription groups by name, each its auto-renewable products; a product no group names
    /// shares the group of every other such product (docs/OFFERS.md).
    public var subscriptionGroups: [String: [String]] = [:]
    /// The In-App Purchase key offers are signed with; nil: `serverAPI`'s.
    public var offerSigning: ServerAPIKeyConfiguration?
    /// How Apple's refund requests (CONSUMPTION_REQUEST) are answered (docs/REFUNDS.md).
    public var refundRequests = RefundPolicy()
    /// What Apple's Retention Messaging is answered with, first applying first (docs/RETENTION.md).
    public var retentionMessages: [RetentionChoice] = []

    /// What Apple's signed data must claim to be believed for this app (the one rule, `AppTrust`).
    public var trust: AppTrust { AppTrust(bundleId: bundleId, appAppleId: appAppleId, acceptsSandbox: acceptSandbox) }

    public init(
        id: String, bundleId: String, sharedSecret: String?, acceptSandbox: Bool = true, apiKey: String, products: [Product] = [],
        serverAPI: ServerAPIKeyConfiguration? = nil, client: ClientAccess? = nil, appAppleId: Int64? = nil
    ) {
        self.client = client
        self.appAppleId = appAppleId
        self.id = id
        self.bundleId = bundleId
        self.sharedSecret = sharedSecret
        self.acceptSandbox = acceptSandbox
        self.apiKey = apiKey
        self.products = products
        self.serverAPI = serverAPI
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case id, bundleId, sharedSecret, acceptSandbox, apiKey, products, serverAPI, client, appAppleId, entitlements, offerings
        case offeringTargeting, rescindConsentPolicy, logInPolicy, commission, reporting, offers, subscriptionGroups, offerSigning
        case refundRequests, retentionMessages
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        id = try c.decode(String.self, forKey: .id)
        bundleId = try c.decode(String.self, forKey: .bundleId)
        sharedSecret = try c.decodeIfPresent(String.self, forKey: .sharedSecret)
        acceptSandbox = try c.decodeIfPresent(Bool.self, forKey: .acceptSandbox) ?? true
        apiKey = try c.decode(String.self, forKey: .apiKey)
        products = try c.decodeIfPresent([Product].self, forKey: .products) ?? []
        serverAPI = try c.decodeIfPresent(ServerAPIKeyConfiguration.self, forKey: .serverAPI)
        client = try c.decodeIfPresent(ClientAccess.self, forKey: .client)
        appAppleId = try c.decodeIfPresent(Int64.self, forKey: .appAppleId)
        entitlements = try c.decodeIfPresent([EntitlementDefinition].self, forKey: .entitlements) ?? []
        offerings = try c.decodeIfPresent([Offering].self, forKey: .offerings) ?? []
        offeringTargeting = try c.decodeIfPresent(OfferingTargeting.self, forKey: .offeringTargeting)
        rescindConsentPolicy = try c.decodeIfPresent(RescindConsentPolicy.self, forKey: .rescindConsentPolicy) ?? .record
        logInPolicy = try c.decodeIfPresent(LogInPolicy.self, forKey: .logInPolicy) ?? .transfer
        commission = try c.decodeIfPresent(CommissionProgram.self, forKey: .commission) ?? .standard
        reporting = try c.decodeIfPresent(ReportingCurrency.self, forKey: .reporting)
        offers = try c.decodeIfPresent([OfferDefinition].self, forKey: .offers) ?? []
        subscriptionGroups = try c.decodeIfPresent([String: [String]].self, forKey: .subscriptionGroups) ?? [:]
        offerSigning = try c.decodeIfPresent(ServerAPIKeyConfiguration.self, forKey: .offerSigning)
        refundRequests = try c.decodeIfPresent(RefundPolicy.self, forKey: .refundRequests) ?? RefundPolicy()
        retentionMessages = try c.decodeIfPresent([RetentionChoice].self, forKey: .retentionMessages) ?? []
    }

    /// The credentials offers are signed with: `offerSigning`, or else the Server API key.
    public var offerSigningCredentials: ServerAPICredentials? {
        (offerSigning ?? serverAPI).map {
            ServerAPICredentials(issuerId: $0.issuerId, keyId: $0.keyId, bundleId: bundleId, privateKeyPEM: $0.privateKeyPEM)
        }
    }

    /// Problems with the offers and groups, against the app's catalog.
    func offerProblems(prefix key: String) -> [String] {
        var problems: [String] = []
        let renewables = Set(products.filter { $0.type == .autoRenewable }.map(\.productId))
        var seen = Set<String>()
        for (index, offer) in offers.enumerated() {
            let at = "\(key).offers[\(index)]"
            if offer.id.isEmpty || offer.id.utf8.count > 64 { problems.append("\(at).id: 1-64 bytes, as App Store Connect's offer identifier") }
            if !renewables.contains(offer.productId) {
                problems.append("\(at).productId: '\(offer.productId)' is not an auto-renewable product of the app")
            }
            if !seen.insert(offer.productId + "\u{0}" + offer.id).inserted { problems.append("\(at).id: duplicate '\(offer.id)' for this product") }
        }
        var grouped = Set<String>()
        for (name, members) in subscriptionGroups.sorted(by: { $0.key < $1.key }) {
            for productId in members {
                if !renewables.contains(productId) {
                    problems.append("\(key).subscriptionGroups.\(name): '\(productId)' is not an auto-renewable product of the app")
                }
                if !grouped.insert(productId).inserted { problems.append("\(key).subscriptionGroups.\(name): '\(productId)' is in two groups") }
            }
        }
        if let signing = offerSigning, (try? P256.Signing.PrivateKey(pemRepresentation: signing.privateKeyPEM)) == nil {
            problems.append("\(key).offerSigning.privateKeyPEM: not a PEM P-256 private key (the .p8 file)")
        }
        return problems
    }

    /// The credentials the Server API client signs with, when a key is configured.
    public var serverAPICredentials: ServerAPICredentials? {
        serverAPI.map {
            ServerAPICredentials(issuerId: $0.issuerId, keyId: $0.keyId, bundleId: bundleId, privateKeyPEM: $0.privateKeyPEM)
        }
    }

    /// Changes whenever something that can cure a configuration error changes; held
    /// verifications taken under another fingerprint are released at start.
    public var fingerprint: String {
        let text = [bundleId, sharedSecret ?? ""].joined(separator: "\u{0}")
        return sha256Hex(Data(text.utf8)).prefix(16).description
    }
}
