import BadgeWire

/// Reads and validates events from message bodies against contract v1 (`event.schema.json`).
///
/// Checks, in order: the content type, the size (at most ``maxBodyBytes``), strict UTF-8, JSON syntax
/// (no duplicate keys, no trailing data, nesting at most 64 deep), a top-level object, then every schema
/// rule: the base fields, each optional field present, then the fields that the type requires.
/// Unknown top-level fields are allowed and ignored.
public enum EventDecoder {
    /// The largest accepted body: 64 KiB.
    public static let maxBodyBytes = 65_536

    /// Decodes one message body.
    ///
    /// - Parameters:
    ///   - body: the raw message body.
    ///   - contentType: the message's `content_type` property; `nil` (or empty) and `application/json`
    ///     (any case, parameters such as `; charset=utf-8` allowed) are accepted.
    public static func decode(body: [UInt8], contentType: String?) -> Result<Event, InvalidEvent> {
        guard isAcceptedContentType(contentType) else {
            let shown = JSONValue.quotedForMessage(contentType ?? "")
            return .failure(
                InvalidEvent(code: .badContentType, message: "content type \(shown) is not application/json"))
        }
        guard body.count <= maxBodyBytes else { return .failure(.tooLarge(body.count)) }
        let json: JSONValue
        do {
            // The parser validates the UTF-8 first, once.
            json = try JSONValue.parse(body)
        } catch  where error.code == .badEncoding {
            return .failure(
                InvalidEvent(code: .badEncoding, message: "body is not valid UTF-8 (byte \(error.offset))"))
        } catch {
            return .failure(InvalidEvent(code: .invalidJSON, message: "body is not JSON: \(error.message)"))
        }
        return decode(json: json)
    }

    /// Validates an already parsed JSON value as an event (e.g. one embedded in a scenario file).
    public static func decode(json: JSONValue) -> Result<Event, InvalidEvent> {
        do {
            return .success(try readEvent(json))
        } catch {
            return .failure(error)
        }
    }

    /// Whether a message with this `content_type` may hold an event: absent, empty, or `application/json`
    /// with optional parameters, compared case-insensitively.
    public static func isAcceptedContentType(_ contentType: String?) -> Bool {
        guard let contentType else { return true }
        let mediaType =
            contentType.split(separator: ";", maxSplits: 1, omittingEmptySubsequences: false).first
            .map { $0.trimmingASCIIWhitespace() } ?? ""
        if mediaType.isEmpty && contentType.trimmingASCIIWhitespace().isEmpty { return true }
        return mediaType.lowercased() == "application/json"
    }

    // MARK: - Event

    private static func readEvent(_ json: JSONValue) throws(InvalidEvent) -> Event {
        guard let members = json.objectMembers else {
            throw InvalidEvent(code: .invalidJSON, message: "body is \(json.kindDescription), not a JSON object")
        }
        let fields = FieldSet(members: members, path: "")

        let id = try fields.requiredString("id")
        try checkID(id, field: "id")
        let typeName = try fields.requiredString("type")
        guard let type = EventType(rawValue: typeName) else {
            throw InvalidEvent(code: .unknownType, message: "unknown type \(JSONValue.quotedForMessage(typeName))")
        }
        let recipient = try fields.requiredString("recipient")
        try checkUserID(recipient, field: "recipient")
        let occurredAt = try readTimestamp(try fields.requiredString("occurred_at"), field: "occurred_at")

        var event = Event(id: id, type: type, recipient: recipient, occurredAt: occurredAt)
        if let actorFields = try fields.optionalObject("actor") {
            event.actor = try readActor(actorFields)
        }
        for (key, path) in [
            ("post_id", \Event.postID), ("comment_id", \.commentID), ("conversation_id", \.conversationID),
            ("message_id", \.messageID),
        ] as [(String, WritableKeyPath<Event, String?>)] {
            if let value = try fields.optionalString(key) {
                try checkID(value, field: key)
                event[keyPath: path] = value
            }
        }
        if let title = try fields.optionalString("title") {
            try checkMaxLength(title, 1000, field: "title")
            event.title = title
        }
        if let text = try fields.optionalString("text") {
            try checkMaxLength(text, 20_000, field: "text")
            event.text = text
        }
        if let until = try fields.optionalString("until") {
            event.until = try readTimestamp(until, field: "until")
        }
        if let ids = try fields.optionalArray("notification_ids") {
            event.notificationIDs = try readNotificationIDs(ids)
        }
        if let deviceFields = try fields.optionalObject("device") {
            event.device = try readDevice(deviceFields)
        }
        if let preferenceFields = try fields.optionalObject("preferences") {
            event.preferences = try readPreferences(preferenceFields)
        }

        for required in type.requiredFields where !fields.contains(required) {
            throw InvalidEvent.missing(required, for: type)
        }
        if type == .deviceRegistered, event.device?.provider == nil {
            throw InvalidEvent.missing("device.provider", for: type)
        }
        return event
    }

    // MARK: - Nested objects

    private static func readActor(_ fields: FieldSet) throws(InvalidEvent) -> EventActor {
        let id = try fields.requiredString("id")
        try checkUserID(id, field: "actor.id")
        let name = try fields.requiredString("name")
        let nameLength = name.unicodeScalars.count
        guard nameLength >= 1, nameLength <= 200 else {
            throw InvalidEvent.invalid("actor.name", "must be 1-200 characters")
        }
        let username = try fields.optionalString("username")
        if let username { try checkMaxLength(username, 200, field: "actor.username") }
        return EventActor(id: id, name: name, username: username)
    }

    private static func readNotificationIDs(_ values: [JSONValue]) throws(InvalidEvent) -> [String] {
        guard (1...500).contains(values.count) else {
            throw InvalidEvent.invalid("notification_ids", "must hold 1-500 ids, not \(values.count)")
        }
        var ids: [String] = []
        ids.reserveCapacity(values.count)
        for (offset, value) in values.enumerated() {
            let field = "notification_ids[\(offset)]"
            guard let id = value.stringValue else {
                throw InvalidEvent.invalid(field, "must be a string, not \(value.kindDescription)")
            }
            try checkID(id, field: field)
            ids.append(id)
        }
        return ids
    }

    private static func readDevice(_ fields: FieldSet) throws(InvalidEvent) -> DeviceInfo {
        let token = try fields.requiredString("token")
        guard token.utf8.count >= 8, token.utf8.count <= 4096, token.utf8.allSatisfy(isIDByte) else {
            throw InvalidEvent.invalid("device.token", "must be 8-4096 chars of [A-Za-z0-9_:.-]")
        }
        // Tighter than the contract's schema, where it meets real limits: tokens are indexed, and a PostgreSQL
        // btree entry holds at most about 2,700 bytes (real tokens: APNs 64 hex digits, FCM about 160-200 chars).
        guard token.utf8.count <= maxTokenLength else {
            throw InvalidEvent.invalid(
                "device.token",
                "must be at most \(maxTokenLength) chars (the database indexes tokens), not \(token.utf8.count)")
        }
        var device = DeviceInfo(token: token)
        if let provider = fields.optionalValue("provider") {
            guard let name = provider.stringValue, let parsed = PushProvider(rawValue: name) else {
                throw InvalidEvent.invalid("device.provider", "must be \"apns\" or \"fcm\"")
            }
            device.provider = parsed
        }
        if let topic = try fields.optionalString("topic") {
            try checkMaxLength(topic, 255, field: "device.topic")
            // An APNs topic is a bundle id (with suffixes such as `.voip`) and travels as the `apns-topic` header:
            // tighter than the contract's schema, so that no HTTP client or provider refuses it later.
            guard !topic.isEmpty, topic.utf8.allSatisfy(isTopicByte) else {
                throw InvalidEvent.invalid("device.topic", "must be 1-255 chars of [A-Za-z0-9.-] (a bundle id)")
            }
            device.topic = topic
        }
        if let environment = fields.optionalValue("environment") {
            guard let name = environment.stringValue, let parsed = APNsEnvironment(rawValue: name) else {
                throw InvalidEvent.invalid("device.environment", "must be \"production\" or \"sandbox\"")
            }
            device.environment = parsed
        }
        if let app = try fields.optionalString("app") {
            guard (1...64).contains(app.utf8.count), app.utf8.allSatisfy(isAppByte) else {
                throw InvalidEvent.invalid("device.app", "must be 1-64 chars of [A-Za-z0-9._-]")
            }
            device.app = app
        }
        return device
    }

    private static func readPreferences(_ fields: FieldSet) throws(InvalidEvent) -> PreferencesChange {
        guard !fields.members.isEmpty else {
            throw InvalidEvent.invalid("preferences", "must have at least one of \"badge_enabled\", \"previews\"")
        }
        if let unknown = fields.members.first(where: { $0.key != "badge_enabled" && $0.key != "previews" }) {
            throw InvalidEvent.invalid(
                "preferences", "has unknown property \(JSONValue.quotedForMessage(unknown.key))")
        }
        return PreferencesChange(
            badgeEnabled: try fields.optionalBool("badge_enabled"), previews: try fields.optionalBool("previews"))
    }
}

/// The checks of single fields: identifiers, topics, lengths and timestamps.
extension EventDecoder {
    /// The longest device token accepted (see `readDevice`).
    public static let maxTokenLength = 2048

    /// A byte of an APNs topic (a bundle id): `[A-Za-z0-9.-]`.
    public static func isTopicByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."), UInt8(ascii: "-"):
            return true
        default:
            return false
        }
    }

    /// A byte of an app name (`device.app`): `[A-Za-z0-9._-]`.
    public static func isAppByte(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: "_") || isTopicByte(byte)
    }

    static func isIDByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: ":"),
            UInt8(ascii: "-"):
            return true
        default:
            return false
        }
    }

    /// `^[A-Za-z0-9._:-]{1,128}$`
    static func checkID(_ value: String, field: String) throws(InvalidEvent) {
        let bytes = value.utf8
        guard !bytes.isEmpty, bytes.count <= 128, bytes.allSatisfy(isIDByte) else {
            throw InvalidEvent.invalid(field, "must be 1-128 chars of [A-Za-z0-9._:-]")
        }
    }

    /// `^[A-Za-z0-9._:@-]{1,128}$`
    static func checkUserID(_ value: String, field: String) throws(InvalidEvent) {
        let bytes = value.utf8
        guard !bytes.isEmpty, bytes.count <= 128, bytes.allSatisfy({ isIDByte($0) || $0 == UInt8(ascii: "@") })
        else {
            throw InvalidEvent.invalid(field, "must be 1-128 chars of [A-Za-z0-9._:@-]")
        }
    }

    /// JSON Schema `maxLength`, which counts Unicode code points.
    static func checkMaxLength(_ value: String, _ limit: Int, field: String) throws(InvalidEvent) {
        let length = value.unicodeScalars.count
        guard length <= limit else {
            throw InvalidEvent.invalid(field, "must be at most \(limit) characters, not \(length)")
        }
    }

    static func readTimestamp(_ value: String, field: String) throws(InvalidEvent) -> Timestamp {
        guard let timestamp = Timestamp.parse(value) else {
            throw InvalidEvent.invalid(field, "is not an RFC 3339 timestamp")
        }
        return timestamp
    }
}

extension StringProtocol {
    /// The string without leading and trailing spaces and tabs.
    func trimmingASCIIWhitespace() -> String {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        guard let first = firstIndex(where: { !isSpace($0) }), let last = lastIndex(where: { !isSpace($0) }) else {
            return ""
        }
        return String(self[first...last])
    }
}

/// The members of one JSON object being validated, with typed accessors that throw ``InvalidEvent``.
struct FieldSet {
    let members: [(key: String, value: JSONValue)]
    /// The dotted prefix of nested fields in messages ("" at top level, "actor." inside `actor`).
    let path: String

    func contains(_ key: String) -> Bool {
        members.contains(where: { $0.key == key })
    }

    func optionalValue(_ key: String) -> JSONValue? {
        members.first(where: { $0.key == key })?.value
    }

    func requiredString(_ key: String) throws(InvalidEvent) -> String {
        guard let value = optionalValue(key) else { throw InvalidEvent.missing(path + key) }
        guard let string = value.stringValue else { throw typeError(key, "a string", value) }
        return string
    }

    func optionalString(_ key: String) throws(InvalidEvent) -> String? {
        guard let value = optionalValue(key) else { return nil }
        guard let string = value.stringValue else { throw typeError(key, "a string", value) }
        return string
    }

    func optionalBool(_ key: String) throws(InvalidEvent) -> Bool? {
        guard let value = optionalValue(key) else { return nil }
        guard let bool = value.boolValue else { throw typeError(key, "a boolean", value) }
        return bool
    }

    func optionalArray(_ key: String) throws(InvalidEvent) -> [JSONValue]? {
        guard let value = optionalValue(key) else { return nil }
        guard let array = value.arrayValue else { throw typeError(key, "an array", value) }
        return array
    }

    func optionalObject(_ key: String) throws(InvalidEvent) -> FieldSet? {
        guard let value = optionalValue(key) else { return nil }
        guard let object = value.objectMembers else { throw typeError(key, "an object", value) }
        return FieldSet(members: object, path: path + key + ".")
    }

    private func typeError(_ key: String, _ expected: String, _ value: JSONValue) -> InvalidEvent {
        InvalidEvent.invalid(path + key, "must be \(expected), not \(value.kindDescription)")
    }
}
