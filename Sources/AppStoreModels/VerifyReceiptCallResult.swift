/// What one HTTP call to a verifyReceipt endpoint produced, before any interpretation.
/// The client builds it; the domain's classifier decides what it means.
public enum VerifyReceiptCallResult: Sendable, Hashable {
    /// Apple answered with an HTTP response (any status, any body).
    case answered(httpStatus: Int, body: [UInt8])
    /// No answer within the per-attempt timeout.
    case timedOut
    /// The connection could not be made or broke before an answer.
    case connectionFailed(String)
}
