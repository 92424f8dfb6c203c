import Crypto
import Foundation
import StorekeeperErrors
import StorekeeperWire

/// The `appAccountToken` an app sets on a purchase for one of its users, derived one way from
/// the app user id so that Apple never sees the id itself (DOMAIN.md §4 rule 7) and the server
/// can check, without storing anything, that a signed transaction was bought for the user it is
/// posted for. StorekeeperKit derives the same value.
///
/// Derivation (version 1): SHA-256 of the UTF-8 bytes of `storekeeper.appAccountToken.v1`, one
/// zero byte, and the app user id; the first 16 bytes, with the RFC 9562 version nibble set to
/// 8 and the variant bits to `10`, written as a lower-case UUID.
public enum AppAccountToken {
    static let domain = "storekeeper.appAccountToken.v1"

    public static func derive(appUserId: String) -> String {
        var input = Array(domain.utf8)
        input.append(0)
        input += Array(appUserId.utf8)
        var bytes = Array(SHA256.hash(data: input).prefix(16))
        bytes[6] = (bytes[6] & 0x0f) | 0x80
        bytes[8] = (bytes[8] & 0x3f) | 0x80
        let uuid = UUID(
            uuid: (
                bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7], bytes[8], bytes[9], bytes[10], bytes[11],
                bytes[12], bytes[13], bytes[14], bytes[15]
            ))
        return uuid.uuidString.lowercased()
    }
}

extension AppAccountToken {
    /// Who may be granted a signed transaction, decided from Apple's signed `appAccountToken`
    /// whatever the request carries or omits: a token the transaction carries must be the one
    /// derived from `appUserId`, or, for the app's backend only (its secret key), the token it
    /// says it gave that user (`backendToken`). A token sent by the app never widens the rule;
    /// when sent, it must still equal the transaction's. With no token in Apple's data, an
    /// anonymous caller has no proof at all; anyone else falls back to the acceptance-order rule.
    /// `appUserIds`: the user and their aliases; a purchase made under any of them (its token
    /// derived from that id) is theirs.
    static func checkOwnership(carried: String?, appUserIds: [String], caller: Caller, backendToken: String?) throws {
        let carried = carried.flatMap { $0.isEmpty ? nil : $0.lowercased() }
        let sent = backendToken?.lowercased()
        if let sent, let carried, sent != carried {
            throw StorekeeperError(.appAccountTokenMismatch, "the transaction's appAccountToken is not the one sent")
        }
        guard let carried else {
            if case .client(_, nil) = caller {
                throw StorekeeperError(.otherUser, "an anonymous post needs a transaction bought with the user's appAccountToken")
            }
            return
        }
        if appUserIds.contains(where: { carried == derive(appUserId: $0) }) { return }
        if case .backend = caller, carried == sent { return }
        throw StorekeeperError(.appAccountTokenMismatch, "the transaction was bought for another account")
    }
}
