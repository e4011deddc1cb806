/// Why ``JSONValue/parse(_:)`` rejected its input.
public struct JSONParseError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A typed, machine-readable error code; its ``rawValue`` is stable.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// The code's name, e.g. `invalid_json`.
        public let rawValue: String

        /// A code by name.
        public init(_ rawValue: String) {
            self.rawValue = rawValue
        }

        public var description: String { rawValue }

        /// The input is not valid UTF-8.
        public static let badEncoding = Code("bad_encoding")
        /// The input is not JSON (everything but an encoding error).
        public static let invalidJSON = Code("invalid_json")
    }

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
