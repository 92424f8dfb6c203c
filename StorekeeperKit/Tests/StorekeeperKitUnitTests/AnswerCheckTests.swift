import Crypto
import Foundation
import Testing

@testable import StorekeeperKit

/// The SDK's answer check on its own (no server): a signature binds the key, the nonce, the
/// request (method, target, body digest), the status, the time and the body; any change is a
/// forged answer.
@Suite struct AnswerCheckTests {
    let key = P256.Signing.PrivateKey()
    let now = Date(timeIntervalSince1970: 1_790_000_000)

    /// Signs the way the server does (docs/CLIENTS.md, v2).
    func signed(
        status: Int = 200, body: Data = Data(#"{"ok":true}"#.utf8), nonce: String = "nonce-1", target: String = "/v1/transactions",
        requestBody: Data? = Data("{}".utf8), ts: Date? = nil, kid: String = "k1"
    ) throws -> ServerAnswer {
        let seconds = Int64((ts ?? now).timeIntervalSince1970)
        let digest = AnswerCheck.digest(requestBody)
        let message =
            Data("storekeeper-response-v2\n\(nonce)\nPOST \(target)\n\(digest)\n\(status)\n\(seconds)\n\(kid)\n".utf8) + body
        let signature = try key.signature(for: message).rawRepresentation.base64EncodedString()
        return ServerAnswer(status: status, headers: ["storekeeper-signature": "v2,kid=\(kid),ts=\(seconds),sig=\(signature)"], body: body)
    }

    var check: AnswerCheck { AnswerCheck(keys: ["k1": key.publicKey], tolerance: 300) }

    func verify(_ answer: ServerAnswer, nonce: String = "nonce-1", requestBody: Data? = Data("{}".utf8)) throws {
        try check.verify(answer, nonce: nonce, method: "POST", target: "/v1/transactions", requestBody: requestBody)
    }

    func isForged(_ attempt: () throws -> Void) -> Bool {
        do {
            try attempt()
            return false
        } catch let error as StorekeeperKitError {
            return error.code == .forgedAnswer
        } catch {
            return false
        }
    }

    @Test("a signed answer to this request verifies")
    func genuine() throws {
        try verify(try signed())
    }

    @Test("an edited body, status, nonce, request body or key is a forged answer")
    func forgeries() throws {
        var edited = try signed()
        edited.body = Data(#"{"ok":false}"#.utf8)
        #expect(isForged { try verify(edited) })
        var status = try signed()
        status.status = 202
        #expect(isForged { try verify(status) })
        #expect(isForged { try verify(try signed(), nonce: "nonce-2") }, "replayed for another request")
        #expect(isForged { try verify(try signed(), requestBody: Data(#"{"other":1}"#.utf8)) }, "answer to another body")
        #expect(isForged { try verify(try signed(kid: "k2")) }, "a key that is not pinned")
        var unsigned = try signed()
        unsigned.headers = [:]
        #expect(isForged { try verify(unsigned) })
        var v1 = try signed()
        v1.headers["storekeeper-signature"] = v1.headers["storekeeper-signature"].map { "v1" + $0.dropFirst(2) }
        #expect(isForged { try verify(v1) }, "only v2 signatures are believed")
    }

    @Test("a live answer's time is the server's, believed whatever this device's clock says; a kept one may not be ahead of it")
    func signedTime() throws {
        let old = now.addingTimeInterval(-365 * 86_400)
        #expect(
            try check.verify(try signed(ts: old), nonce: "nonce-1", method: "POST", target: "/v1/transactions", requestBody: Data("{}".utf8)) == old)
        var edited = try signed(ts: old)
        edited.headers["storekeeper-signature"] = edited.headers["storekeeper-signature"]?.replacingOccurrences(
            of: "ts=\(Int64(old.timeIntervalSince1970))", with: "ts=\(Int64(now.timeIntervalSince1970))")
        #expect(isForged { try verify(edited) }, "the time is signed: moving it is a forgery")
        #expect(!check.isAhead(now.addingTimeInterval(300), of: now) && check.isAhead(now.addingTimeInterval(301), of: now))
    }

    @Test("a refusal's code comes from the JSON error body")
    func serverCode() {
        let error = StorekeeperKitError(.refused, "app_account_token_mismatch: no", serverCode: "app_account_token_mismatch")
        #expect(error.serverCode == "app_account_token_mismatch" && error.code == .refused)
    }
}
