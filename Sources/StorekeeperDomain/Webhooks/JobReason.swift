/// Why a webhook delivery job ended or waits, as the queue stores it in `last_error`: the one
/// list, so operators' queries and the docs name the same values.
public enum JobReason {
    /// The delivery died; the job completed.
    public static let webhookDeadLetter = "webhook_dead_letter"
    /// The endpoint is paused; the job looks again later.
    public static let endpointPaused = "endpoint_paused"
    /// An earlier event of the same subscriber is still pending for this endpoint.
    public static let waitingForEarlierEvent = "waiting_for_earlier_event"
    /// The endpoint was deleted; its waiting jobs ended.
    public static let endpointDeleted = "endpoint_deleted"

    /// An attempt answered with a status other than 2xx.
    public static func webhookHTTP(_ status: Int) -> String { "webhook_http_\(status)" }
    /// An attempt got no answer (`error`: timeout, refused…).
    public static func webhookFailed(_ error: String?) -> String { "webhook_\(error ?? "failed")" }
}
