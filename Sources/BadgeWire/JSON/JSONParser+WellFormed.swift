/// The parser's validate-only mode: the RFC 8259 grammar and UTF-8, with nothing built.
extension JSONParser {
    /// The deepest nesting the validate-only mode accepts; deeper texts are not well-formed for it.
    static let wellFormedMaxDepth = 512

    /// Whether the bytes are exactly one JSON value, optionally surrounded by whitespace, in valid UTF-8.
    mutating func isWellFormedDocument() -> Bool {
        do {
            skipWhitespace()
            try skipValue(depth: 0)
            skipWhitespace()
            return index == bytes.count
        } catch {
            return false
        }
    }

    private mutating func skipValue(depth: Int) throws(JSONParseError) {
        guard index < bytes.count else { throw error("unexpected end of input") }
        switch bytes[index] {
        case UInt8(ascii: "{"):
            try skipObject(depth: depth + 1)
        case UInt8(ascii: "["):
            try skipArray(depth: depth + 1)
        case UInt8(ascii: "\""):
            try skipString()
        default:
            try skipScalar(checkingRange: false)
        }
    }

    /// Reads past `true`, `false`, `null` or a number, whose value is converted as `parseNumber()` would when
    /// `checkingRange` (to refuse what overflows a `Double`); throws at anything else.
    mutating func skipScalar(checkingRange: Bool) throws(JSONParseError) {
        guard index < bytes.count else { throw error("unexpected end of input") }
        switch bytes[index] {
        case UInt8(ascii: "t"):
            try expectLiteral("true")
        case UInt8(ascii: "f"):
            try expectLiteral("false")
        case UInt8(ascii: "n"):
            try expectLiteral("null")
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            let start = index
            let isInteger = try scanNumber()
            guard checkingRange else { return }
            // An integer of at most 18 digits is always in range; anything else is converted as it would be.
            let digits = index - start - (bytes[start] == UInt8(ascii: "-") ? 1 : 0)
            if isInteger && digits <= 18 { return }
            let text = String(decoding: bytes[start..<index], as: UTF8.self)
            if isInteger, Int64(text) != nil { return }
            guard let value = Double(text), value.isFinite else {
                throw JSONParseError(message: "number out of range at byte \(start)", offset: start)
            }
        default:
            throw error("unexpected \(describe(bytes[index]))")
        }
    }

    private mutating func skipObject(depth: Int) throws(JSONParseError) {
        guard depth <= Self.wellFormedMaxDepth else { throw error("nesting too deep") }
        index += 1
        skipWhitespace()
        if consume(UInt8(ascii: "}")) { return }
        while true {
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw expected("a string key") }
            try skipString()
            skipWhitespace()
            guard consume(UInt8(ascii: ":")) else { throw expected("\":\" after an object key") }
            skipWhitespace()
            try skipValue(depth: depth)
            skipWhitespace()
            if consume(UInt8(ascii: ",")) { continue }
            if consume(UInt8(ascii: "}")) { return }
            throw expected("\",\" or \"}\" in an object")
        }
    }

    private mutating func skipArray(depth: Int) throws(JSONParseError) {
        guard depth <= Self.wellFormedMaxDepth else { throw error("nesting too deep") }
        index += 1
        skipWhitespace()
        if consume(UInt8(ascii: "]")) { return }
        while true {
            skipWhitespace()
            try skipValue(depth: depth)
            skipWhitespace()
            if consume(UInt8(ascii: ",")) { continue }
            if consume(UInt8(ascii: "]")) { return }
            throw expected("\",\" or \"]\" in an array")
        }
    }

    /// Reads past a string: escapes are checked for form only, multi-byte UTF-8 sequences for validity.
    private mutating func skipString() throws(JSONParseError) {
        index += 1
        while index < bytes.count {
            let byte = bytes[index]
            if byte >= 0x20 && byte < 0x80 && byte != UInt8(ascii: "\"") && byte != UInt8(ascii: "\\") {
                index += 1
                continue
            }
            switch byte {
            case UInt8(ascii: "\""):
                index += 1
                return
            case UInt8(ascii: "\\"):
                index += 1
                guard index < bytes.count else { throw error("unexpected end of input in an escape") }
                let escaped = bytes[index]
                index += 1
                switch escaped {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"),
                    UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
                    break
                case UInt8(ascii: "u"):
                    _ = try parseHex4()
                default:
                    throw error("invalid escape")
                }
            case 0..<0x20:
                throw error("control character \(describe(byte)) in a string")
            case 0x20..<0x80:
                index += 1
            default:
                guard let length = UTF8Validation.sequenceLength(in: bytes, at: index) else {
                    throw JSONParseError(code: .badEncoding, message: "invalid UTF-8 at byte \(index)", offset: index)
                }
                index += length
            }
        }
        throw error("unterminated string")
    }
}
