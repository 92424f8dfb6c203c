import AppStoreCrypto
import Foundation
import StorekeeperCore

/// `AnswerRetentionRequest`'s port for Apple's signed payloads: the process's verifier (signature,
/// chain, validity), no kind assumed.
struct GateSignedPayloads: AppleSignedPayloads {
    let gate: SignedTransactionGate

    func check(_ signed: String, now: Date) async -> SignedPayloadCheck {
        guard let verdict = try? await gate.verifier.verify(signed, expecting: .init(), time: gate.validationTime(now: now)) else {
            return .malformed
        }
        if let failure = verdict.failures.first { return .failed(code: failure.code, message: failure.description) }
        return .verified(Data(verdict.payload))
    }
}
