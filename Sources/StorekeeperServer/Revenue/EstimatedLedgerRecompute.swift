public import Foundation
public import Persistence
public import StorekeeperCore
import StorekeeperDomain

/// `storekeeper recompute-ledger`: `RecomputeEstimatedLedger` for every configured app, reading
/// stored evidence as the grant job does (`GateEvidenceChecker`: signatures checked when it was
/// accepted; the claims against the app as configured now).
public enum EstimatedLedgerRecompute {
    public static func run(
        configuration: StorekeeperConfiguration, store: any StorekeeperStore, now: Date, batch: Int = 500,
        progress: @escaping (_ appId: String, RecomputeEstimatedLedger.Progress) -> Void = { _, _ in }
    ) async throws -> [(appId: String, progress: RecomputeEstimatedLedger.Progress)] {
        let gate = try SignedTransactionGate(configuration: configuration.receiptTrust)
        var results: [(appId: String, progress: RecomputeEstimatedLedger.Progress)] = []
        for app in configuration.apps {
            let checker = GateEvidenceChecker(gate: gate, app: app)
            let recompute = RecomputeEstimatedLedger(store: store) { evidence in
                // Only a compact JWS (a signed transaction, a notification's payload) can carry a
                // signed price; a receipt's base64 and a history pull's ids are left at once.
                guard evidence.utf8.count < 1 << 20, evidence.split(separator: ".", omittingEmptySubsequences: false).count == 3,
                    case .verified(let purchases, _, _, _) = await checker.check(evidence, now: now)
                else { return nil }
                return purchases.purchases
            }
            results.append((app.id, try await recompute(appId: app.id, commission: app.commission, batch: batch) { progress(app.id, $0) }))
        }
        return results
    }
}
