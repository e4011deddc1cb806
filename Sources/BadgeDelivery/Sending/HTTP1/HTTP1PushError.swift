import BadgeSupport

/// A push over plain HTTP/1.1 (``HTTP1PushClient``) failed before an answer came: the request could not be built
/// (``Code/invalidRequest``: the same push would fail every time), its send window was closed, or the exchange failed
/// (connection, timeout, a malformed answer: a later attempt may not meet it).
struct HTTP1PushError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A typed, machine-readable error code; its ``rawValue`` is the name logs show.
    typealias Code = ErrorCode<HTTP1PushError>

    /// The error's code.
    var code: Code
    /// A one-line reason.
    var message: String

    /// `code: message`.
    var description: String { "\(code): \(message)" }
}

extension ErrorCode<HTTP1PushError> {
    /// The request target or a header is not valid HTTP/1.1 (a line break in a header value, a space in the path).
    static var invalidRequest: Self { Self("invalid_request") }
    /// The send window was closed right before the write: nothing was written.
    static var vetoed: Self { Self("vetoed") }
    /// No connection to the host could be opened.
    static var connectFailed: Self { Self("connect_failed") }
    /// The connection closed before the whole answer came.
    static var connectionClosed: Self { Self("connection_closed") }
    /// No whole answer within the request timeout.
    static var timedOut: Self { Self("timed_out") }
    /// The answer was not HTTP/1.1 as the client reads it, or its body was longer than the client keeps.
    static var invalidResponse: Self { Self("invalid_response") }
    /// The bound on requests waiting for a connection was reached.
    static var tooManyWaiting: Self { Self("too_many_waiting") }
    /// The caller gave up before the request was written.
    static var cancelled: Self { Self("cancelled") }
    /// The client is shut down.
    static var shutDown: Self { Self("shut_down") }
}
