import BadgeSupport

/// What ``withTimeLimit(_:_:)`` throws when its body took too long.
public struct TimeLimitError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A typed, machine-readable error code; its ``rawValue`` is the name logs show.
    public typealias Code = ErrorCode<TimeLimitError>

    /// The error's code.
    public var code: Code
    /// The limit that passed.
    public var limit: Duration

    /// An error for `limit`.
    public init(code: Code, limit: Duration) {
        self.code = code
        self.limit = limit
    }

    /// A one-line reason: how long the limit was.
    public var message: String { "took longer than \(limit)" }

    /// `code: message`.
    public var description: String { "\(code): \(message)" }
}

extension ErrorCode<TimeLimitError> {
    /// The body ran past its limit and was cancelled.
    public static var exceeded: Self { Self("time_limit_exceeded") }
}
