import BadgeSupport
import Hummingbird

/// An error of the sink's inspection API: a bad fault body or a bad query.
///
/// Served as HTTP status ``httpStatus`` with the body `{"error": {"code": …, "message": …}}`.
public struct SinkError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A typed, machine-readable error code; its ``rawValue`` is the `code` of the HTTP answer's body.
    public typealias Code = ErrorCode<SinkError>

    /// The error's code.
    public let code: Code
    /// A human-readable explanation.
    public let message: String
    /// The HTTP status the error is answered with, 400 unless told.
    public let httpStatus: Int

    /// Creates an error.
    /// - Parameters:
    ///   - code: A machine-readable code.
    ///   - message: A human-readable explanation.
    ///   - httpStatus: The HTTP status to answer with.
    public init(code: Code, message: String, httpStatus: Int = 400) {
        self.code = code
        self.message = message
        self.httpStatus = httpStatus
    }

    /// `code: message`.
    public var description: String { "\(self.code): \(self.message)" }

    /// A fault description that the sink refuses.
    static func invalidFault(_ message: String) -> SinkError {
        SinkError(code: .invalidFault, message: message)
    }

    /// A setting the sink cannot start with (a key or certificate file that cannot be read or used).
    static func configuration(_ message: String) -> SinkError {
        SinkError(code: .invalidConfiguration, message: message)
    }

    /// A query parameter that the sink cannot use.
    static func invalidQuery(_ message: String) -> SinkError {
        SinkError(code: .invalidQuery, message: message)
    }
}

extension ErrorCode<SinkError> {
    /// A fault description that the sink refuses.
    public static var invalidFault: Self { Self("invalid_fault") }
    /// A setting the sink cannot start with.
    public static var invalidConfiguration: Self { Self("invalid_configuration") }
    /// A query parameter that the sink cannot use.
    public static var invalidQuery: Self { Self("invalid_query") }
    /// A request body over the sink's limit (413).
    public static var bodyTooLarge: Self { Self("body_too_large") }
    /// No push to the device is recorded (404).
    public static var unknownDevice: Self { Self("unknown_device") }
    /// As many requests wait already as the sink allows (503).
    public static var tooManyWaiters: Self { Self("too_many_waiters") }
    /// ``SinkConfiguration/maxEventStreams`` `GET /events` streams are open already.
    public static var tooManyStreams: Self { Self("too_many_streams") }
    /// The request's `Host` does not name the sink (403): a page's own domain rebound to it.
    public static var forbiddenHost: Self { Self("forbidden_host") }
    /// A state-changing request from another site's page (403).
    public static var forbiddenOrigin: Self { Self("forbidden_origin") }
    /// A state-changing request whose body is not JSON (415).
    public static var unsupportedMediaType: Self { Self("unsupported_media_type") }
}

extension SinkError: HTTPResponseError {
    /// The HTTP status of the answer, ``httpStatus``.
    public var status: HTTPResponse.Status { HTTPResponse.Status(code: self.httpStatus) }

    /// The answer: ``httpStatus`` with `{"error": {"code": …, "message": …}}`.
    public func response(from request: Request, context: some RequestContext) throws -> Response {
        let body = SinkAnswers.Failure(error: .init(code: self.code.rawValue, message: self.message))
        return try EditedResponse(status: self.status, response: body).response(from: request, context: context)
    }
}
