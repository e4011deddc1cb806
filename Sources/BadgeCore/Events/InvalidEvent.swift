import BadgeSupport

/// Why a message is not a valid event. The worker parks such messages with `message` as the
/// `x-badgepipe-error` header.
public struct InvalidEvent: Error, Sendable, Equatable, CustomStringConvertible {
    /// A typed, machine-readable error code; its ``rawValue`` is the parked message's `x-badgepipe-reason`.
    public typealias Code = ErrorCode<InvalidEvent>

    /// The error's code.
    public let code: Code
    /// A precise, human-readable, one-line reason (never contains a line break).
    public let message: String

    /// Creates an error; line breaks in `message` are replaced by spaces.
    public init(code: Code, message: String) {
        self.code = code
        self.message = String(message.map { $0.isNewline ? " " : $0 })
    }

    /// `code: message`.
    public var description: String { "\(code): \(message)" }
}

extension InvalidEvent {
    /// A body over the contract's 64 KiB (the message is parked with it, as with any invalid event).
    public static func tooLarge(_ size: Int) -> InvalidEvent {
        InvalidEvent(code: .tooLarge, message: "body is \(size) bytes, above the 64 KiB limit")
    }

    static func missing(_ field: String) -> InvalidEvent {
        InvalidEvent(code: .missingField, message: "field \"\(field)\" is required")
    }

    static func missing(_ field: String, for type: EventType) -> InvalidEvent {
        InvalidEvent(code: .missingField, message: "field \"\(field)\" is required for type \"\(type.rawValue)\"")
    }

    static func invalid(_ field: String, _ requirement: String) -> InvalidEvent {
        InvalidEvent(code: .invalidField, message: "field \"\(field)\" \(requirement)")
    }
}

extension ErrorCode<InvalidEvent> {
    /// The body is over the contract's 64 KiB.
    public static var tooLarge: Self { Self("too_large") }
    /// The body is not valid UTF-8.
    public static var badEncoding: Self { Self("bad_encoding") }
    /// The body is not JSON, or not a JSON object.
    public static var invalidJSON: Self { Self("invalid_json") }
    /// The message's content type is not `application/json`.
    public static var badContentType: Self { Self("bad_content_type") }
    /// The event's `type` is not one the contract names.
    public static var unknownType: Self { Self("unknown_type") }
    /// A field the event's type requires is missing.
    public static var missingField: Self { Self("missing_field") }
    /// A field's value breaks the contract.
    public static var invalidField: Self { Self("invalid_field") }
}
