import Foundation
import NIOHTTP1
import StorekeeperDomain
import StorekeeperServer
import StorekeeperTesting
import Testing

/// Offerings over real HTTP: what an app is shown and how an operator changes it, on both
/// backends. The demo app (DemoConfiguration) seeds `default` (current) and `no_ads` (shown
/// to French storefronts), whose `legacy` package names a product removed from sale.
@Suite("offerings: the app's answer follows the operator's offerings, targeting and overrides")
struct OfferingRouteTests {
    func admin(_ stack: LocalStack, actor: String = "maria@example.com") -> [String: String] {
        ["Authorization": "Bearer \(stack.api.adminKey)", "Storekeeper-Actor": actor, "Storekeeper-Reason": "spring sale"]
    }

    func current(_ http: HTTPJSONClient, _ query: String = "", headers: [String: String]) async throws -> String? {
        let reply = try await http.send(.GET, "/v1/offerings\(query)", headers: headers)
        #expect(reply.status == 200, "\(query): \(reply.text)")
        return reply.json["currentOfferingId"] as? String
    }

    @Test(
        "CRUD, the default, a rule and a user's override, Ready-for-Sale filtering, the audit log; refusals name the problem",
        arguments: WebhookTests.backends)
    func offerings(backend storage: String) async throws {
        let database = storage == "postgresql" ? try PostgresTestDatabase.freshURL(prefix: "offerings") : nil
        try await withStack(configure: { configuration in
            if let database { configuration.databasePath = database }
        }) { stack in
            let http = stack.api.http
            let shown = try await http.send(.GET, "/v1/offerings", headers: DemoCallers.backend)
            #expect(
                shown.status == 200 && shown.json["currentOfferingId"] as? String == "default" && shown.json["selectedBy"] as? String == "current")
            let listed = (shown.json["offerings"] as? [[String: Any]]) ?? []
            #expect(listed.compactMap { $0["id"] as? String } == ["default", "no_ads"], "\(shown.text)")
            // `legacy` names a product removed from sale: never on a paywall.
            let noAds = listed.first { $0["id"] as? String == "no_ads" }?["packages"] as? [[String: Any]]
            #expect(noAds?.compactMap { $0["id"] as? String } == ["$lifetime"])
            #expect((noAds?.first?["product"] as? [String: Any])?["productId"] as? String == "com.example.removeads")
            #expect((listed.first?["metadata"] as? [String: Any])?["title"] as? String == "Go Pro")

            // The rule: French storefronts see no_ads; a bad storefront or version is refused.
            let french = try await http.send(.GET, "/v1/offerings?storefront=fra&appVersion=2.1", headers: DemoCallers.backend)
            #expect(french.json["currentOfferingId"] as? String == "no_ads" && french.json["ruleId"] as? String == "france", "\(french.text)")
            for bad in ["storefront=FR", "appVersion=two", "appUserId="] {
                let refused = try await http.send(.GET, "/v1/offerings?\(bad)", headers: DemoCallers.backend)
                #expect(refused.status == 400, "\(bad): \(refused.text)")
            }

            // A new offering, made current by the targeting.
            let spring = try await http.send(
                .PUT, "/v1/admin/apps/demo/offerings/spring", headers: admin(stack),
                body: Data(#"{"description":"Spring","packages":[{"id":"$annual","productId":"com.example.season.pass"}],"metadata":{"hue":3}}"#.utf8)
            )
            #expect(spring.status == 200 && spring.json["id"] as? String == "spring", "\(spring.text)")
            let targeting = try await http.send(
                .PUT, "/v1/admin/apps/demo/offering-targeting", headers: admin(stack),
                body: Data(#"{"current":"spring","rules":[{"id":"old-app","offering":"default","maxAppVersion":"1.9"}]}"#.utf8))
            #expect(targeting.status == 200, "\(targeting.text)")
            #expect(try await current(http, headers: DemoCallers.backend) == "spring")
            #expect(try await current(http, "?appVersion=1.2", headers: DemoCallers.backend) == "default")

            // One user's override, seen by the backend naming them and by their own token only.
            let override = try await http.send(
                .PUT, "/v1/admin/apps/demo/subscribers/alice/offering-override", headers: admin(stack),
                body: Data(#"{"offeringId":"no_ads"}"#.utf8))
            #expect(override.status == 200, "\(override.text)")
            #expect(try await current(http, "?appUserId=alice", headers: DemoCallers.backend) == "no_ads")
            #expect(try await current(http, headers: try DemoCallers.client(as: "alice")) == "no_ads")
            #expect(try await current(http, headers: try DemoCallers.client(as: "bob")) == "spring")
            let prying = try await http.send(.GET, "/v1/offerings?appUserId=alice", headers: try DemoCallers.client(as: "bob"))
            #expect(prying.status == 403 && prying.errorCode == "other_user")
            let unknown = try await http.send(
                .PUT, "/v1/admin/apps/demo/subscribers/alice/offering-override", headers: admin(stack), body: Data(#"{"offeringId":"nope"}"#.utf8))
            #expect(unknown.status == 404, "\(unknown.text)")

            // Refusals: what is wrong, and nothing saved.
            for (path, body, problem) in [
                ("offerings/spring", #"{"packages":[]}"#, "packages: 1-50"),
                ("offerings/spring", #"{"id":"x","packages":[{"id":"$monthly","productId":"p"}]}"#, "the path names the offering"),
                ("offerings/spring", #"{"packages":[{"id":"$yearly","productId":"p"}]}"#, "packages[0].id"),
                ("offerings/spring", #"{"packages":[{"id":"$monthly","productId":"p"}],"metadata":[1]}"#, "metadata"),
                ("offering-targeting", #"{"rules":[{"id":"r","offering":"spring"}]}"#, "rules[0]"),
            ] {
                let refused = try await http.send(.PUT, "/v1/admin/apps/demo/\(path)", headers: admin(stack), body: Data(body.utf8))
                #expect(refused.status == 400 && refused.text.contains(problem), "\(body): \(refused.text)")
            }
            let unknownTarget = try await http.send(
                .PUT, "/v1/admin/apps/demo/offering-targeting", headers: admin(stack),
                body: Data(#"{"current":"nope","rules":[{"id":"r","offering":"gone","storefronts":["USA"]}]}"#.utf8))
            #expect(unknownTarget.status == 404 && unknownTarget.text.contains("'gone', 'nope'"), "\(unknownTarget.text)")
            #expect(try await current(http, headers: DemoCallers.backend) == "spring")

            // A product taken off sale leaves the paywall at once; its offering stays.
            var monthly = try #require(DemoConfiguration.products.first { $0.productId == "com.example.pro.monthly" })
            monthly.status = .developerRemovedFromSale
            let product = try await http.send(
                .PUT, "/v1/admin/apps/demo/products/com.example.pro.monthly", headers: admin(stack), json: monthly)
            #expect(product.status == 200, "\(product.text)")
            let after = try await http.send(.GET, "/v1/offerings", headers: DemoCallers.backend)
            let defaults = (after.json["offerings"] as? [[String: Any]])?.first { $0["id"] as? String == "default" }
            #expect((defaults?["packages"] as? [[String: Any]])?.compactMap { $0["id"] as? String } == ["season"], "\(after.text)")

            // A named offering cannot be deleted; once unnamed it can, and an override of it falls through.
            let named = try await http.send(.DELETE, "/v1/admin/apps/demo/offerings/spring", headers: admin(stack))
            #expect(named.status == 409 && named.text.contains("current"), "\(named.text)")
            #expect(
                try await http.send(.PUT, "/v1/admin/apps/demo/offering-targeting", headers: admin(stack), body: Data(#"{"current":"default"}"#.utf8))
                    .status == 200)
            #expect(
                try await http.send(
                    .PUT, "/v1/admin/apps/demo/subscribers/bob/offering-override", headers: admin(stack),
                    body: Data(#"{"offeringId":"spring"}"#.utf8)
                ).status == 200)
            #expect(try await http.send(.DELETE, "/v1/admin/apps/demo/offerings/spring", headers: admin(stack)).status == 204)
            #expect(try await http.send(.DELETE, "/v1/admin/apps/demo/offerings/spring", headers: admin(stack)).status == 404)
            #expect(try await current(http, headers: try DemoCallers.client(as: "bob")) == "default")
            #expect(try await http.send(.DELETE, "/v1/admin/apps/demo/subscribers/alice/offering-override", headers: admin(stack)).status == 204)
            #expect(try await http.send(.DELETE, "/v1/admin/apps/demo/subscribers/alice/offering-override", headers: admin(stack)).status == 404)
            #expect(try await current(http, headers: try DemoCallers.client(as: "alice")) == "default")

            let listing = try await http.send(.GET, "/v1/admin/apps/demo/offerings", headers: admin(stack))
            #expect((listing.json["targeting"] as? [String: Any])?["current"] as? String == "default")
            #expect((listing.json["offerings"] as? [[String: Any]])?.compactMap { $0["id"] as? String } == ["default", "no_ads"])

            // Every change that happened, in order, with who and why; refused ones are not there.
            let audit = try await http.send(.GET, "/v1/admin/apps/demo/audit", headers: admin(stack))
            let entries = ((audit.json["entries"] as? [[String: Any]]) ?? []).compactMap { $0["entry"] as? [String: Any] }
            #expect(
                entries.compactMap { $0["action"] as? String } == [
                    "offering_saved", "offering_targeting_saved", "offering_override_set", "admin_change", "offering_targeting_saved",
                    "offering_override_set", "offering_deleted", "offering_override_cleared",
                ], "\(audit.text)")
            // The product's change (no audit entry of its own) is recorded by the gate.
            #expect(entries[3]["subject"] as? String == "PUT /v1/admin/apps/demo/products/com.example.pro.monthly", "\(audit.text)")
            // The actor is the credential the server authenticated; the name the caller gave is kept beside it.
            #expect(
                entries.allSatisfy {
                    $0["actor"] as? String == "admin key" && $0["declaredActor"] as? String == "maria@example.com"
                        && $0["reason"] as? String == "spring sale" && $0["from"] as? String == "127.0.0.1"
                }, "\(audit.text)")
            #expect(entries[2]["appUserId"] as? String == "alice" && entries[0]["appUserId"] == nil)
            #expect((entries[0]["change"] as? [String: Any])?["description"] as? String == "Spring")
        }
    }
}
