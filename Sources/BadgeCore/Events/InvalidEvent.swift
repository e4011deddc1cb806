/// Why a message is not a valid event. The worker parks such messages with `message` as the
/// `x-badgepipe-error` header.
public struct InvalidEvent: Error, Sendable, Equatable, CustomStringConvertible {
    /// A stable code: "too_large", "bad_encoding", "invalid_json", "bad_content_type", "unknown_type",
    /// "missing_field" or "invalid_field".
    public let code: String
    /// A precise, human-readable, one-line reason (never contains a line break).
    public let message: String

    /// Creates an error; line breaks in `message` are replaced by spaces.
    public init(code: String, message: String) {
        self.code = code
        self.message = String(message.map { $0.isNewline ? " " : $0 })
    }

    /// `code: message`.
    public var description: String { "\(code): \(message)" }
}

extension InvalidEvent {
    /// A body over the contract's 64 KiB; `kept: false` when the consumer did not keep it (the message is parked
    /// without it).
    public static func tooLarge(_ size: Int, kept: Bool = true) -> InvalidEvent {
        InvalidEvent(
            code: "too_large",
            message: "body is \(size) bytes, above the 64 KiB limit" + (kept ? "" : "; the body was not kept"))
    }

    static func missing(_ field: String) -> InvalidEvent {
        InvalidEvent(code: "missing_field", message: "field \"\(field)\" is required")
    }

    static func missing(_ field: String, for type: EventType) -> InvalidEvent {
        InvalidEvent(code: "missing_field", message: "field \"\(field)\" is required for type \"\(type.rawValue)\"")
    }

    static func invalid(_ field: String, _ requirement: String) -> InvalidEvent {
        InvalidEvent(code: "invalid_field", message: "field \"\(field)\" \(requirement)")
    }
}
