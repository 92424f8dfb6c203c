import Foundation
import Persistence
import StorekeeperCore
import StorekeeperDomain
import StorekeeperTesting
import Testing

extension StorageConformanceTests {
    @Test(
        "admin tokens: found by their secret's hash while active; a revocation or rotation is written once, with its audit entry; the audit log filters",
        arguments: StoreFactory.all)
    func adminTokens(factory: StoreFactory) async throws {
        let store = try await make(factory)
        let tokens = ManageAdminTokens(store: store)
        let boss = AuditActor(name: "admin key", reason: "onboarding", declared: "dana", from: "203.0.113.9")
        let created = try await tokens.create(
            .init(name: "support-bot", role: .support, apps: ["app", "app"]), knownApps: ["app", "other"], secretHash: "hash-1",
            actor: boss, now: t0)
        guard case .created(let token) = created else {
            Issue.record("not created: \(created)")
            return
        }
        #expect(token.apps == ["app"] && token.role == .support && token.createdBy == "admin key")
        #expect(
            try await tokens.principal(secretHash: "hash-1", now: t0)
                == AdminPrincipal(name: "token:support-bot", role: .support, apps: ["app"], tokenId: token.id))
        #expect(try await tokens.principal(secretHash: "hash-2", now: t0) == nil)
        let refused = try await tokens.create(
            .init(name: "bad name!", role: .admin, apps: ["ghost"]), knownApps: ["app"], secretHash: "hash-x", actor: boss, now: t0)
        #expect(refused == .invalid(["name: 1-64 ASCII letters, digits, '-', '_' or '.'", "apps: no app 'ghost'"]))

        // Rotation: a new secret at once, the old one until the overlap ends, then only the new.
        guard
            case .changed(let old, let new?) = try await tokens.rotate(
                id: token.id, overlapSeconds: 60, secretHash: "hash-2", actor: boss, now: t0 + 10)
        else {
            Issue.record("not rotated")
            return
        }
        #expect(old.expiresAt == t0 + 70 && new.replaces == token.id && new.name == "support-bot")
        #expect(try await tokens.principal(secretHash: "hash-1", now: t0 + 69) != nil)
        #expect(try await tokens.principal(secretHash: "hash-1", now: t0 + 70) == nil)
        #expect(try await tokens.principal(secretHash: "hash-2", now: t0 + 70)?.tokenId == new.id)

        // Revocation: at once, once; two at the same time write one entry.
        async let first = tokens.revoke(id: new.id, actor: boss, now: t0 + 80)
        async let second = tokens.revoke(id: new.id, actor: boss, now: t0 + 80)
        let outcomes = try await [first, second]
        #expect(outcomes.filter { if case .changed = $0 { true } else { false } }.count == 1, "\(outcomes)")
        #expect(try await tokens.principal(secretHash: "hash-2", now: t0 + 80) == nil)
        #expect(try await tokens.revoke(id: "tok_none", actor: boss, now: t0) == .notFound)
        #expect(try await tokens.tokens().map(\.id) == [token.id, new.id])

        // The audit log: every change with the authenticated actor, the declared name and the address.
        let all = try await tokens.audit(AuditQuery(appIds: nil, limit: 100))
        #expect(all.map(\.entry.action) == ["admin_token_created", "admin_token_rotated", "admin_token_revoked"])
        #expect(all.allSatisfy { $0.entry.actor == "admin key" && $0.entry.declaredActor == "dana" && $0.entry.from == "203.0.113.9" })
        #expect(all.allSatisfy { $0.entry.appId == ManageAdminTokens.auditApp })
        #expect(try await tokens.audit(AuditQuery(appIds: ["app"], limit: 100)).isEmpty, "token changes are no app's")
        let revoked = try await tokens.audit(AuditQuery(appIds: nil, action: "admin_token_revoked", limit: 100))
        #expect(revoked.map(\.entry.subject) == [new.id])
        #expect(try await tokens.audit(AuditQuery(appIds: nil, actor: "token:support-bot", limit: 100)).isEmpty)
        #expect(
            try await tokens.audit(AuditQuery(appIds: nil, since: t0 + 10, until: t0 + 80, limit: 100)).map(\.entry.action) == ["admin_token_rotated"]
        )
        #expect(try await tokens.audit(AuditQuery(appIds: nil, after: all[0].cursor, limit: 1)).map(\.cursor) == [all[1].cursor])
    }
}
