public import StorekeeperDomain

/// The `apple_calls` table as both adapters write it: one row per endpoint, outcome and minute,
/// the latency histogram in one column per bucket (`b0`…), so adding a tally is one upsert that
/// adds column to column, whichever process writes.
public enum AppleCallTable {
    public static let bucketColumns = (0..<AppleCallTally.bucketCount).map { "b\($0)" }
    public static let columns = ["minute", "endpoint", "outcome", "calls", "total_ms"] + bucketColumns

    /// The upsert of one tally; `placeholder(i)` is the adapter's i-th parameter (1-based).
    /// Parameters in `columns` order: `values(of:)`.
    public static func upsert(placeholder: (Int) -> String) -> String {
        let added = (["calls", "total_ms"] + bucketColumns).map { "\($0) = apple_calls.\($0) + excluded.\($0)" }
        return """
            INSERT INTO apple_calls (\(columns.joined(separator: ", ")))
            VALUES (\((1...columns.count).map(placeholder).joined(separator: ", ")))
            ON CONFLICT (minute, endpoint, outcome) DO UPDATE SET \(added.joined(separator: ", "))
            """
    }

    /// The integer parameters of `tally` after its endpoint and outcome: calls, total, buckets.
    public static func counts(of tally: AppleCallTally) -> [Int64] {
        [tally.count, tally.totalMilliseconds] + tally.buckets
    }

    public static let deleteOlder = "DELETE FROM apple_calls WHERE minute < "
    public static let selectSince = "SELECT * FROM apple_calls WHERE minute >= "
}
