/// Deadlines of the phases of one call to Apple; `attemptTimeoutSeconds` bounds the whole
/// answer. A connection refused or reset fails the attempt at once, whatever these say: the
/// job queue's backoff is the retry, not a loop inside the attempt.
public struct AppleTimeouts: Encodable, Sendable, Hashable {
    /// Establishing the TCP (and TLS) connection.
    public var connectSeconds: Double = 5
    /// The longest silence while waiting for the answer: before its first byte, and between
    /// any two of its bytes.
    public var readSeconds: Double = 20

    public init(connectSeconds: Double = 5, readSeconds: Double = 20) {
        self.connectSeconds = connectSeconds
        self.readSeconds = readSeconds
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case connectSeconds, readSeconds
    }
}
