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

extension JSONValue {
    /// Parses one JSON text from UTF-8 bytes (see ``JSONParser`` rules: strict UTF-8, no duplicate keys,
    /// no trailing garbage, nesting at most 64 deep).
    public static func parse(_ bytes: [UInt8]) throws(JSONParseError) -> JSONValue {
        try Self.withBuffer(bytes) { buffer throws(JSONParseError) in
            var parser = JSONParser(bytes: buffer)
            return try parser.parseDocument()
        }
    }

    /// Whether `bytes` is one well-formed JSON text in valid UTF-8, checked without building a value.
    ///
    /// Checks the RFC 8259 grammar only, nesting up to ``JSONParser/wellFormedMaxDepth`` levels: unlike
    /// ``parse(_:)`` it lets duplicate keys, unpaired `\u` surrogates and numbers beyond `Double` pass, since a
    /// text that passes is only copied, never read. The sink uses it to embed push bodies as they are.
    public static func isWellFormed<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> Bool {
        Self.withBuffer(bytes) { buffer in
            var parser = JSONParser(bytes: buffer)
            return parser.isWellFormedDocument()
        }
    }

    /// Calls `body` with the bytes in contiguous memory, copying them only when they are not already.
    static func withBuffer<Bytes: Collection<UInt8>, Result, Failure: Error>(
        _ bytes: Bytes,
        _ body: (UnsafeBufferPointer<UInt8>) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        let result: Swift.Result<Result, Failure>? = bytes.withContiguousStorageIfAvailable { buffer in
            do throws(Failure) {
                return .success(try body(buffer))
            } catch {
                return .failure(error)
            }
        }
        if let result {
            return try result.get()
        }
        let copy = Array(bytes)
        return try copy.withUnsafeBufferPointer { buffer throws(Failure) in try body(buffer) }
    }

    /// Parses one JSON text from a string.
    public static func parse(_ text: String) throws(JSONParseError) -> JSONValue {
        try parse(Array(text.utf8))
    }

    /// `text` as a JSON string literal for one-line messages: escaped, and cut to 64 characters with "…".
    public static func quotedForMessage(_ text: String) -> String {
        let short = text.count > 64 ? String(text.prefix(64)) + "…" : text
        return String(decoding: JSONValue.string(short).serialized(), as: UTF8.self)
    }
}

extension JSONValue {
    /// Compact JSON as UTF-8 bytes: no whitespace, object members in order, strings escaped as `\"`,
    /// `\\`, `\b`, `\f`, `\n`, `\r`, `\t` and `\u00XX` for other control characters; everything else,
    /// including non-ASCII, is written as raw UTF-8. Non-finite numbers are written as `null`.
    public func serialized() -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(256)
        write(into: &out)
        return out
    }

    /// ``serialized()`` as a `String`.
    public func serializedString() -> String {
        String(decoding: serialized(), as: UTF8.self)
    }

    private func write(into out: inout [UInt8]) {
        switch self {
        case .null:
            out.append(contentsOf: "null".utf8)
        case .bool(let value):
            out.append(contentsOf: (value ? "true" : "false").utf8)
        case .int(let value):
            out.append(contentsOf: String(value).utf8)
        case .number(let value):
            Self.writeNumber(value, into: &out)
        case .string(let value):
            Self.writeString(value, into: &out)
        case .array(let elements):
            out.append(UInt8(ascii: "["))
            for (offset, element) in elements.enumerated() {
                if offset > 0 { out.append(UInt8(ascii: ",")) }
                element.write(into: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let members):
            out.append(UInt8(ascii: "{"))
            for (offset, member) in members.enumerated() {
                if offset > 0 { out.append(UInt8(ascii: ",")) }
                Self.writeString(member.key, into: &out)
                out.append(UInt8(ascii: ":"))
                member.value.write(into: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    private static func writeNumber(_ value: Double, into out: inout [UInt8]) {
        guard value.isFinite else {
            out.append(contentsOf: "null".utf8)
            return
        }
        // Swift's shortest round-tripping form is valid JSON for finite values ("3.0", "1.5", "1e-05",
        // "1e+20") and always has a fraction or exponent, so it parses back as a `.number`.
        out.append(contentsOf: value.description.utf8)
    }

    private static let hexDigits = Array("0123456789ABCDEF".utf8)

    /// Appends `value` as a JSON string literal: `\"`, `\\`, `\b`, `\f`, `\n`, `\r`, `\t`, `\u00XX` for
    /// other control characters, everything else as raw UTF-8. The one place JSON strings are escaped.
    public static func writeString(_ value: String, into out: inout [UInt8]) {
        var value = value
        value.withUTF8 { Self.writeString(bytes: $0, into: &out) }
    }

    /// Appends a JSON string literal whose content is `utf8`, which must be valid UTF-8 (escaped as
    /// ``writeString(_:into:)`` does).
    public static func writeString<Bytes: Collection<UInt8>>(utf8: Bytes, into out: inout [UInt8]) {
        if utf8.withContiguousStorageIfAvailable({ Self.writeString(bytes: $0, into: &out) }) != nil { return }
        Array(utf8).withUnsafeBufferPointer { Self.writeString(bytes: $0, into: &out) }
    }

    /// The escaping itself, over contiguous bytes and not generic: the runs that need no escape are copied
    /// whole, and each byte is read through a pointer. (Generic over a `Collection`, a debug build would look up
    /// the collection's index and slice types for every byte, too slow for the tests' fan-outs of long comments.)
    private static func writeString(bytes: UnsafeBufferPointer<UInt8>, into out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        guard let base = bytes.baseAddress else {
            out.append(UInt8(ascii: "\""))
            return
        }
        let count = bytes.count
        var start = 0
        var index = 0
        while index < count {
            let byte = base[index]
            if byte >= 0x20 && byte != UInt8(ascii: "\"") && byte != UInt8(ascii: "\\") {
                index += 1
                continue
            }
            if index > start { out.append(contentsOf: UnsafeBufferPointer(start: base + start, count: index - start)) }
            Self.writeEscape(byte, into: &out)
            index += 1
            start = index
        }
        if index > start { out.append(contentsOf: UnsafeBufferPointer(start: base + start, count: index - start)) }
        out.append(UInt8(ascii: "\""))
    }

    private static func writeEscape(_ byte: UInt8, into out: inout [UInt8]) {
        out.append(UInt8(ascii: "\\"))
        switch byte {
        case 0x0A: out.append(UInt8(ascii: "n"))
        case 0x0D: out.append(UInt8(ascii: "r"))
        case 0x09: out.append(UInt8(ascii: "t"))
        case 0x08: out.append(UInt8(ascii: "b"))
        case 0x0C: out.append(UInt8(ascii: "f"))
        case 0..<0x20:
            out.append(contentsOf: [UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0")])
            out.append(hexDigits[Int(byte >> 4)])
            out.append(hexDigits[Int(byte & 0x0F)])
        default:
            // `"` and `\` are escaped by themselves.
            out.append(byte)
        }
    }
}

extension JSONValue: ExpressibleByNilLiteral {
    /// `nil` is `null`.
    public init(nilLiteral: ()) {
        self = .null
    }
}

extension JSONValue: ExpressibleByBooleanLiteral {
    /// A boolean literal.
    public init(booleanLiteral value: Bool) {
        self = .bool(value)
    }
}

extension JSONValue: ExpressibleByIntegerLiteral {
    /// An integer literal is an exact ``JSONValue/int(_:)``.
    public init(integerLiteral value: Int64) {
        self = .int(value)
    }
}

extension JSONValue: ExpressibleByFloatLiteral {
    /// A floating-point literal is a ``JSONValue/number(_:)``.
    public init(floatLiteral value: Double) {
        self = .number(value)
    }
}

extension JSONValue: ExpressibleByStringLiteral {
    /// A string literal.
    public init(stringLiteral value: String) {
        self = .string(value)
    }
}

extension JSONValue: ExpressibleByArrayLiteral {
    /// An array literal.
    public init(arrayLiteral elements: JSONValue...) {
        self = .array(elements)
    }
}

extension JSONValue: ExpressibleByDictionaryLiteral {
    /// A dictionary literal is an object with the members in the order written.
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self = .object(elements.map { (key: $0.0, value: $0.1) })
    }
}
