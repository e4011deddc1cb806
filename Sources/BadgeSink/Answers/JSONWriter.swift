import BadgeWire

/// Appends compact JSON text to a byte array. Callers are responsible for the document's structure.
///
/// Kept for the answers whose bytes the contract fixes: `GET /deliveries`, which embeds each push body as it
/// was received, and the APNs and FCM answers, which copy the real services' bodies. Strings are escaped by
/// BadgeWire's ``JSONValue/writeString(utf8:into:)``; the sink's other answers are `Codable` values.
struct JSONWriter {
    /// The UTF-8 text written so far.
    var bytes: [UInt8]

    /// Creates a writer, optionally reserving room for `capacity` bytes.
    init(capacity: Int = 0) {
        self.bytes = []
        self.bytes.reserveCapacity(capacity)
    }

    /// Appends literal JSON text, written as is.
    mutating func raw(_ text: StaticString) {
        text.withUTF8Buffer { self.bytes.append(contentsOf: $0) }
    }

    /// Appends bytes that already are valid JSON text.
    mutating func raw<Bytes: Collection<UInt8>>(bytes: Bytes) {
        self.bytes.append(contentsOf: bytes)
    }

    /// Appends an integer.
    mutating func int(_ value: Int) {
        self.bytes.append(contentsOf: String(value).utf8)
    }

    /// Appends a JSON string literal.
    mutating func string(_ value: String) {
        JSONValue.writeString(value, into: &self.bytes)
    }

    /// Appends a JSON string literal whose content is `utf8`, which must be valid UTF-8.
    mutating func string<Bytes: Collection<UInt8>>(utf8: Bytes) {
        JSONValue.writeString(utf8: utf8, into: &self.bytes)
    }

    /// Appends a JSON string literal holding `bytes` decoded as UTF-8, ill-formed sequences replaced by U+FFFD.
    mutating func lossyString<Bytes: Collection<UInt8>>(bytes: Bytes) {
        if UTF8Validation.isValid(bytes) {
            self.string(utf8: bytes)
        } else {
            self.string(String(decoding: bytes, as: UTF8.self))
        }
    }
}
