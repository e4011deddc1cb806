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
