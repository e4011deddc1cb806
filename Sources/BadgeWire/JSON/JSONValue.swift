/// A JSON value as read by ``JSONValue/parse(_:)`` or built for serialisation.
///
/// Integers written without a fraction or exponent that fit in 64 bits are kept exactly as ``int(_:)``;
/// every other number is a ``number(_:)``. Objects keep their members in order.
///
/// Equality is structural, except that objects compare as unordered sets of members (JSON object
/// semantics). `.int(1)` and `.number(1)` are different values.
public enum JSONValue: Sendable {
    /// `null`.
    case null
    /// `true` or `false`.
    case bool(Bool)
    /// An integer literal that fits in `Int64`.
    case int(Int64)
    /// Any other number (fraction, exponent, or an integer beyond `Int64`).
    case number(Double)
    /// A string.
    case string(String)
    /// An array.
    case array([JSONValue])
    /// An object with its members in order. Keys are unique in parsed values.
    case object([(key: String, value: JSONValue)])
}

extension JSONValue: Equatable {
    /// Structural equality; object members compare without regard to order.
    public static func == (lhs: JSONValue, rhs: JSONValue) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null):
            return true
        case (.bool(let a), .bool(let b)):
            return a == b
        case (.int(let a), .int(let b)):
            return a == b
        case (.number(let a), .number(let b)):
            return a == b
        case (.string(let a), .string(let b)):
            return a == b
        case (.array(let a), .array(let b)):
            return a == b
        case (.object(let a), .object(let b)):
            guard a.count == b.count else { return false }
            for member in a {
                guard let other = b.first(where: { $0.key == member.key }), other.value == member.value else {
                    return false
                }
            }
            return true
        default:
            return false
        }
    }
}

extension JSONValue {
    /// The member named `key` when this is an object (the first one if keys repeat), else `nil`.
    public subscript(key: String) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        return members.first(where: { $0.key == key })?.value
    }

    /// The element at `index` when this is an array and the index is in range, else `nil`.
    public subscript(index: Int) -> JSONValue? {
        guard case .array(let elements) = self, elements.indices.contains(index) else { return nil }
        return elements[index]
    }

    /// The string when this is a string.
    public var stringValue: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    /// The boolean when this is a boolean.
    public var boolValue: Bool? {
        if case .bool(let value) = self { return value }
        return nil
    }

    /// The integer when this is an integer, or a number with an exact `Int64` value.
    public var int64Value: Int64? {
        switch self {
        case .int(let value):
            return value
        case .number(let value):
            return Int64(exactly: value)
        default:
            return nil
        }
    }

    /// The numeric value when this is a number of either kind.
    public var doubleValue: Double? {
        switch self {
        case .int(let value): return Double(value)
        case .number(let value): return value
        default: return nil
        }
    }

    /// The elements when this is an array.
    public var arrayValue: [JSONValue]? {
        if case .array(let value) = self { return value }
        return nil
    }

    /// The members when this is an object.
    public var objectMembers: [(key: String, value: JSONValue)]? {
        if case .object(let value) = self { return value }
        return nil
    }

    /// Whether this is `null`.
    public var isNull: Bool {
        if case .null = self { return true }
        return false
    }

    /// A short name of this value's kind for messages: "null", "a boolean", "a number", "a string",
    /// "an array", "an object".
    public var kindDescription: String {
        switch self {
        case .null: return "null"
        case .bool: return "a boolean"
        case .int, .number: return "a number"
        case .string: return "a string"
        case .array: return "an array"
        case .object: return "an object"
        }
    }
}
