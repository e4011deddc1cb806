/// Appends compact JSON text to a byte array. Callers are responsible for the document's structure.
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

    /// Appends a finite number (non-finite values are written as `null`).
    mutating func double(_ value: Double) {
        if value.isFinite {
            self.bytes.append(contentsOf: String(value).utf8)
        } else {
            self.raw("null")
        }
    }

    /// Appends a JSON string literal.
    mutating func string(_ value: String) {
        var value = value
        value.withUTF8 { self.string(utf8: $0) }
    }

    /// Appends a JSON string, or `null` when `value` is nil.
    mutating func optionalString(_ value: String?) {
        if let value {
            self.string(value)
        } else {
            self.raw("null")
        }
    }

    /// Appends a JSON string literal whose content is `utf8`, which must be valid UTF-8.
    mutating func string<Bytes: Collection<UInt8>>(utf8: Bytes) {
        self.bytes.append(UInt8(ascii: "\""))
        var start = utf8.startIndex
        var index = start
        while index != utf8.endIndex {
            let byte = utf8[index]
            if byte >= 0x20 && byte != UInt8(ascii: "\"") && byte != UInt8(ascii: "\\") {
                utf8.formIndex(after: &index)
                continue
            }
            self.bytes.append(contentsOf: utf8[start..<index])
            self.escape(byte)
            utf8.formIndex(after: &index)
            start = index
        }
        self.bytes.append(contentsOf: utf8[start..<index])
        self.bytes.append(UInt8(ascii: "\""))
    }

    /// Appends a JSON string literal holding `bytes` decoded as UTF-8, ill-formed sequences replaced by U+FFFD.
    mutating func lossyString<Bytes: Collection<UInt8>>(bytes: Bytes) {
        if JSONValidator.isValidUTF8(bytes) {
            self.string(utf8: bytes)
        } else {
            self.string(String(decoding: bytes, as: UTF8.self))
        }
    }

    private mutating func escape(_ byte: UInt8) {
        self.bytes.append(UInt8(ascii: "\\"))
        switch byte {
        case UInt8(ascii: "\""): self.bytes.append(UInt8(ascii: "\""))
        case UInt8(ascii: "\\"): self.bytes.append(UInt8(ascii: "\\"))
        case 0x08: self.bytes.append(UInt8(ascii: "b"))
        case 0x0C: self.bytes.append(UInt8(ascii: "f"))
        case 0x0A: self.bytes.append(UInt8(ascii: "n"))
        case 0x0D: self.bytes.append(UInt8(ascii: "r"))
        case 0x09: self.bytes.append(UInt8(ascii: "t"))
        default:
            let hex: [UInt8] = Array("0123456789abcdef".utf8)
            self.bytes.append(contentsOf: [UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0")])
            self.bytes.append(hex[Int(byte >> 4)])
            self.bytes.append(hex[Int(byte & 0x0F)])
        }
    }
}
