/// Why ``JSONValue/parse(_:)`` rejected its input.
public struct JSONParseError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A stable code: "bad_encoding" for invalid UTF-8, "invalid_json" for everything else.
    public let code: String
    /// A one-line reason that ends with the byte offset, e.g. `unexpected "}" at byte 12`.
    public let message: String
    /// The 0-based byte offset where the problem was found.
    public let offset: Int

    /// Creates an error.
    public init(code: String = "invalid_json", message: String, offset: Int) {
        self.code = code
        self.message = message
        self.offset = offset
    }

    /// The message.
    public var description: String { message }
}
