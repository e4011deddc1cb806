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
        value.withUTF8 { Self.writeString(utf8: $0, into: &out) }
    }

    /// Appends a JSON string literal whose content is `utf8`, which must be valid UTF-8 (escaped as
    /// ``writeString(_:into:)`` does).
    public static func writeString<Bytes: Collection<UInt8>>(utf8: Bytes, into out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        var start = utf8.startIndex
        var index = start
        while index != utf8.endIndex {
            let byte = utf8[index]
            if byte >= 0x20 && byte != UInt8(ascii: "\"") && byte != UInt8(ascii: "\\") {
                utf8.formIndex(after: &index)
                continue
            }
            out.append(contentsOf: utf8[start..<index])
            Self.writeEscape(byte, into: &out)
            utf8.formIndex(after: &index)
            start = index
        }
        out.append(contentsOf: utf8[start..<index])
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
