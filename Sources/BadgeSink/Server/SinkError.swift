/// An error of the sink's inspection API: a bad fault body or a bad query.
///
/// Served as HTTP status ``httpStatus`` with the body `{"error": {"code": …, "message": …}}`.
public struct SinkError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A machine-readable code, such as `invalid_fault` or `invalid_query`.
    public let code: String
    /// A human-readable explanation.
    public let message: String
    /// The HTTP status the error is answered with, 400 unless told.
    public let httpStatus: Int

    /// Creates an error.
    /// - Parameters:
    ///   - code: A machine-readable code.
    ///   - message: A human-readable explanation.
    ///   - httpStatus: The HTTP status to answer with.
    public init(code: String, message: String, httpStatus: Int = 400) {
        self.code = code
        self.message = message
        self.httpStatus = httpStatus
    }

    /// `code: message`.
    public var description: String { "\(self.code): \(self.message)" }

    /// A fault description that the sink refuses.
    static func invalidFault(_ message: String) -> SinkError {
        SinkError(code: "invalid_fault", message: message)
    }

    /// A setting the sink cannot start with (a key or certificate file that cannot be read or used).
    static func configuration(_ message: String) -> SinkError {
        SinkError(code: "invalid_configuration", message: message)
    }

    /// A query parameter that the sink cannot use.
    static func invalidQuery(_ message: String) -> SinkError {
        SinkError(code: "invalid_query", message: message)
    }
}
