import BadgeWire

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
