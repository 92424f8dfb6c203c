/// The one error shape every module of the server throws: a code from the module's own set
/// (stable, for programs, metrics and tests), a message for people, the error underneath, and
/// where it was raised (`#fileID`, `#line`: in logs and `description`, never in an answer).
/// Each module names its codes (`JobStoreErrorCode`, `PostgresStoreErrorCode`, `AppleActionCode`,
/// the API's `ErrorCode`) and its error is this type over them; the HTTP edge turns codes into
/// statuses in one place (the server's `ErrorMiddleware`).
public struct CodedError<Code: Hashable & Sendable & CustomStringConvertible>: Error, Sendable, CustomStringConvertible {
    public var code: Code
    public var message: String
    public var cause: (any Error)?
    public var file: String
    public var line: Int

    public init(_ code: Code, _ message: String, cause: (any Error)? = nil, file: String = #fileID, line: Int = #line) {
        self.code = code
        self.message = message
        self.cause = cause
        self.file = file
        self.line = line
    }

    public var description: String {
        "\(code): \(message)" + (cause.map { " (cause: \($0))" } ?? "") + " [\(file):\(line)]"
    }
}
