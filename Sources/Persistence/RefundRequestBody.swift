public import StorekeeperDomain

/// A refund request as the adapters store it: JSON without the holder, who is kept in the row's
/// `app_user_id` alone, so deleting or linking a customer renames one column (`CustomerTables`).
public enum RefundRequestBody {
    public static func encode(_ request: RefundRequest) -> String {
        var anonymous = request
        anonymous.appUserId = nil
        return StoredJSON.encode(anonymous)
    }

    public static func decode(_ body: String?, appUserId: String?) -> RefundRequest? {
        guard var request = StoredJSON.decode(RefundRequest.self, body) else { return nil }
        request.appUserId = appUserId
        return request
    }
}
