import BadgeSupport

/// Why ``JSONValue/parse(_:)`` rejected its input.
public struct JSONParseError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A typed, machine-readable error code; its ``rawValue`` is stable.
    public typealias Code = ErrorCode<JSONParseError>

    /// The error's code.
    public let code: Code
    /// A one-line reason that ends with the byte offset, e.g. `unexpected "}" at byte 12`.
    public let message: String
    /// The 0-based byte offset where the problem was found.
    public let offset: Int

    /// Creates an error.
    public init(code: Code = .invalidJSON, message: String, offset: Int) {
        self.code = code
        self.message = message
        self.offset = offset
    }

    /// The message.
    public var description: String { message }
}

extension ErrorCode<JSONParseError> {
    /// The input is not valid UTF-8.
    public static var badEncoding: Self { Self("bad_encoding") }
    /// The input is not JSON (everything but an encoding error).
    public static var invalidJSON: Self { Self("invalid_json") }
}
