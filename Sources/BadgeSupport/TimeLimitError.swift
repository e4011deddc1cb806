/// What ``withTimeLimit(_:_:)`` throws when its body took too long.
public struct TimeLimitError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A typed, machine-readable error code; its ``rawValue`` is the name logs show.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// The code's name, e.g. `time_limit_exceeded`.
        public let rawValue: String

        /// A code by name.
        public init(_ rawValue: String) {
            self.rawValue = rawValue
        }

        public var description: String { rawValue }

        /// The body ran past its limit and was cancelled.
        public static let exceeded = Code("time_limit_exceeded")
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

    /// A one-line reason: how long the limit was.
    public var message: String { "took longer than \(limit)" }

    /// `code: message`.
    public var description: String { "\(code): \(message)" }
}
