import Crypto
import Foundation

/// The `appAccountToken` set on every purchase for an app user: derived one way from the app
/// user id, as the server derives it to check that a purchase was made for the user it is
/// posted for (version 1, docs/CLIENTS.md).
public enum AppAccountToken {
    public static func derive(appUserId: String) -> UUID {
        var input = Array("storekeeper.appAccountToken.v1".utf8)
        input.append(0)
        input += Array(appUserId.utf8)
        var b = Array(SHA256.hash(data: input).prefix(16))
        b[6] = (b[6] & 0x0f) | 0x80
        b[8] = (b[8] & 0x3f) | 0x80
        return UUID(uuid: (b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]))
    }
}
