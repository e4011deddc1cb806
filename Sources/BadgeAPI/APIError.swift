import BadgeSupport
import BadgeWire
import HTTPTypes
import Hummingbird

/// An error the app's API answers with: a status, a code and a one-line message, as the JSON body
/// `{"error": code, "message": message}`. A `401` also carries `WWW-Authenticate: Bearer error="invalid_token"`
/// (contract 7.1).
public struct APIError: Error, Sendable, CustomStringConvertible, HTTPResponseError {
    /// A typed, machine-readable error code.
    public typealias Code = ErrorCode<APIError>

    public var code: Code
    public var message: String
    public var status: HTTPResponse.Status

    public init(_ code: Code, _ message: String, status: HTTPResponse.Status) {
        self.code = code
        self.message = message
        self.status = status
    }

    public var description: String { "\(code): \(message)" }

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "application/json"
        headers[.cacheControl] = "no-store"
        if status == .unauthorized {
            headers[.wwwAuthenticate] = "Bearer error=\"invalid_token\""
        }
        let body = JSONValue.object([
            (key: "error", value: .string(code.rawValue)), (key: "message", value: .string(message)),
        ])
        return Response(
            status: status, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: body.serialized())))
    }

    static func unauthorized(_ message: String) -> APIError { APIError(.invalidToken, message, status: .unauthorized) }
    static func badRequest(_ message: String) -> APIError { APIError(.badRequest, message, status: .badRequest) }
}

extension ErrorCode<APIError> {
    /// The bearer token is missing, malformed, expired, wrongly signed or for another audience.
    public static var invalidToken: Self { Self("invalid_token") }
    /// The request is not one the API takes (a bad parameter, a body that would make an invalid event).
    public static var badRequest: Self { Self("bad_request") }
    /// The broker did not confirm the event: nothing was published.
    public static var notPublished: Self { Self("not_published") }
    /// The database could not be read now.
    public static var unavailable: Self { Self("unavailable") }
    /// A bound of the API was reached (open streams).
    public static var tooManyStreams: Self { Self("too_many_streams") }
    /// The request body is larger than the API takes.
    public static var bodyTooLarge: Self { Self("body_too_large") }
}
