/// What ``withTimeLimit(_:_:)`` throws when its body took too long.
public struct TimeLimitError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A typed, machine-readable error code; its raw value is the name logs show.
    public enum Code: String, Sendable, Hashable {
        /// The body ran past its limit and was cancelled.
        case exceeded = "time_limit_exceeded"
    }

    /// The error's code.
    public var code: Code
    /// The limit that passed.
    public var limit: Duration

    /// An error for `limit`.
    public init(code: Code, limit: Duration) {
        self.code = code
        self.limit = limit
    }

    public var description: String { "\(code.rawValue): took longer than \(limit)" }
}
