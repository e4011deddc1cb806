/// A strict RFC 8259 JSON parser over UTF-8 bytes.
///
/// Rejects: invalid UTF-8, a byte order mark, trailing non-whitespace, duplicate object keys, control
/// characters in strings, invalid escapes, unpaired UTF-16 surrogates in `\u` escapes, numbers that
/// overflow a `Double`, and nesting deeper than ``maxDepth`` arrays/objects.
///
/// Stricter than Foundation on purpose: `JSONSerialization` and `JSONDecoder` accept duplicate keys (the last
/// one wins, so two readers of one event could disagree), a byte order mark and UTF-16 or UTF-32 text (they
/// detect the encoding), and nesting up to 512 levels; they also read every number through `Double` or
/// `NSNumber`, where this parser keeps 64-bit integers exact. An event that is ambiguous is refused here rather
/// than read one way by us and another way by a producer.
struct JSONParser {
    /// The deepest accepted nesting of arrays and objects (the top-level container is depth 1).
    static let maxDepth = 64

    /// The text; valid only inside the closure that lent it (see ``JSONValue/parse(_:)``).
    let bytes: UnsafeBufferPointer<UInt8>
    /// The offset of the next byte to read.
    var index = 0

    /// Creates a parser over `bytes`, which must outlive it.
    init(bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
    }

    /// Parses one complete JSON text.
    mutating func parseDocument() throws(JSONParseError) -> JSONValue {
        if let bad = UTF8Validation.firstInvalidOffset(in: bytes) {
            throw JSONParseError(code: .badEncoding, message: "invalid UTF-8 at byte \(bad)", offset: bad)
        }
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) {
            throw JSONParseError(message: "byte order mark at byte 0", offset: 0)
        }
        skipWhitespace()
        let value = try parseValue(depth: 0)
        skipWhitespace()
        if index < bytes.count {
            throw error("trailing \(describe(bytes[index])) after the JSON value")
        }
        return value
    }

    // MARK: - Values

    private mutating func parseValue(depth: Int) throws(JSONParseError) -> JSONValue {
        guard index < bytes.count else { throw error("unexpected end of input") }
        switch bytes[index] {
        case UInt8(ascii: "{"):
            return try parseObject(depth: depth + 1)
        case UInt8(ascii: "["):
            return try parseArray(depth: depth + 1)
        case UInt8(ascii: "\""):
            return .string(try parseString())
        case UInt8(ascii: "t"):
            try expectLiteral("true")
            return .bool(true)
        case UInt8(ascii: "f"):
            try expectLiteral("false")
            return .bool(false)
        case UInt8(ascii: "n"):
            try expectLiteral("null")
            return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return try parseNumber()
        default:
            throw error("unexpected \(describe(bytes[index]))")
        }
    }

    private mutating func parseObject(depth: Int) throws(JSONParseError) -> JSONValue {
        guard depth <= Self.maxDepth else { throw error("nesting deeper than \(Self.maxDepth) levels") }
        index += 1
        var members: [(key: String, value: JSONValue)] = []
        var manyKeys: Set<String>?
        skipWhitespace()
        if consume(UInt8(ascii: "}")) { return .object(members) }
        while true {
            skipWhitespace()
            let key = try readKey(earlier: members.lazy.map(\.key), &manyKeys)
            skipWhitespace()
            guard consume(UInt8(ascii: ":")) else { throw expected("\":\" after an object key") }
            skipWhitespace()
            let value = try parseValue(depth: depth)
            members.append((key: key, value: value))
            skipWhitespace()
            if consume(UInt8(ascii: ",")) { continue }
            if consume(UInt8(ascii: "}")) { return .object(members) }
            throw expected("\",\" or \"}\" in an object")
        }
    }

    /// Objects with more members than this check their keys for duplicates with a set; smaller ones scan the keys
    /// already read, which allocates nothing.
    static let scannedKeysLimit = 16

    /// Reads an object's key, refused when it repeats one of `earlier` (the object's keys before it). They are
    /// scanned while there are fewer than ``scannedKeysLimit``; past that, `manyKeys` holds them (made from `earlier`
    /// once, then kept up to date here): a set for every object had been most of the hashing of parsing events.
    mutating func readKey<Earlier: Collection<String>>(
        earlier: Earlier, _ manyKeys: inout Set<String>?
    ) throws(JSONParseError) -> String {
        guard index < bytes.count else { throw error("unexpected end of input in an object") }
        guard bytes[index] == UInt8(ascii: "\"") else {
            throw error("expected a string key, found \(describe(bytes[index]))")
        }
        let keyOffset = index
        let key = try parseString()
        let repeated: Bool
        if manyKeys != nil {
            repeated = !manyKeys!.insert(key).inserted
        } else if earlier.count < Self.scannedKeysLimit {
            repeated = earlier.contains(key)
        } else {
            manyKeys = Set(earlier)
            repeated = !manyKeys!.insert(key).inserted
        }
        guard !repeated else {
            throw JSONParseError(
                message: "duplicate key \(JSONValue.quotedForMessage(key)) at byte \(keyOffset)", offset: keyOffset)
        }
        return key
    }

    private mutating func parseArray(depth: Int) throws(JSONParseError) -> JSONValue {
        guard depth <= Self.maxDepth else { throw error("nesting deeper than \(Self.maxDepth) levels") }
        index += 1
        var elements: [JSONValue] = []
        skipWhitespace()
        if consume(UInt8(ascii: "]")) { return .array(elements) }
        while true {
            skipWhitespace()
            elements.append(try parseValue(depth: depth))
            skipWhitespace()
            if consume(UInt8(ascii: ",")) { continue }
            if consume(UInt8(ascii: "]")) { return .array(elements) }
            throw expected("\",\" or \"]\" in an array")
        }
    }

    // MARK: - Strings

    mutating func parseString() throws(JSONParseError) -> String {
        let start = index
        index += 1
        // Fast path: no escapes.
        var scan = index
        while scan < bytes.count {
            let byte = bytes[scan]
            if byte == UInt8(ascii: "\"") {
                let text = String(decoding: bytes[index..<scan], as: UTF8.self)
                index = scan + 1
                return text
            }
            if byte == UInt8(ascii: "\\") { break }
            if byte < 0x20 {
                index = scan
                throw error("control character \(describe(byte)) in a string")
            }
            scan += 1
        }
        var buffer = Array(bytes[index..<scan])
        index = scan
        while true {
            guard index < bytes.count else {
                index = start
                throw error("unterminated string")
            }
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "\""):
                index += 1
                return String(decoding: buffer, as: UTF8.self)
            case UInt8(ascii: "\\"):
                try parseEscape(into: &buffer)
            case 0..<0x20:
                throw error("control character \(describe(byte)) in a string")
            default:
                buffer.append(byte)
                index += 1
            }
        }
    }

    private mutating func parseEscape(into buffer: inout [UInt8]) throws(JSONParseError) {
        index += 1
        guard index < bytes.count else { throw error("unexpected end of input in an escape") }
        let byte = bytes[index]
        index += 1
        switch byte {
        case UInt8(ascii: "\""): buffer.append(UInt8(ascii: "\""))
        case UInt8(ascii: "\\"): buffer.append(UInt8(ascii: "\\"))
        case UInt8(ascii: "/"): buffer.append(UInt8(ascii: "/"))
        case UInt8(ascii: "b"): buffer.append(0x08)
        case UInt8(ascii: "f"): buffer.append(0x0C)
        case UInt8(ascii: "n"): buffer.append(0x0A)
        case UInt8(ascii: "r"): buffer.append(0x0D)
        case UInt8(ascii: "t"): buffer.append(0x09)
        case UInt8(ascii: "u"):
            let escapeStart = index - 2
            let first = try parseHex4()
            var scalarValue = UInt32(first)
            if (0xD800...0xDBFF).contains(first) {
                guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"),
                    bytes[index + 1] == UInt8(ascii: "u")
                else {
                    throw JSONParseError(
                        message: "unpaired surrogate in \\u escape at byte \(escapeStart)", offset: escapeStart)
                }
                index += 2
                let second = try parseHex4()
                guard (0xDC00...0xDFFF).contains(second) else {
                    throw JSONParseError(
                        message: "unpaired surrogate in \\u escape at byte \(escapeStart)", offset: escapeStart)
                }
                scalarValue = 0x10000 + ((UInt32(first) - 0xD800) << 10) + (UInt32(second) - 0xDC00)
            } else if (0xDC00...0xDFFF).contains(first) {
                throw JSONParseError(
                    message: "unpaired surrogate in \\u escape at byte \(escapeStart)", offset: escapeStart)
            }
            // Every value here is a valid scalar: surrogates were combined or rejected above.
            let scalar = Unicode.Scalar(scalarValue) ?? "\u{FFFD}"
            buffer.append(contentsOf: Array(String(Character(scalar)).utf8))
        default:
            index -= 1
            throw error("invalid escape \"\\\(Character(Unicode.Scalar(byte)))\"")
        }
    }

    mutating func parseHex4() throws(JSONParseError) -> UInt16 {
        guard index + 4 <= bytes.count else { throw error("unexpected end of input in a \\u escape") }
        var value: UInt16 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw error("expected a hex digit in a \\u escape, found \(describe(byte))")
            }
            value = value << 4 | UInt16(digit)
            index += 1
        }
        return value
    }

    // MARK: - Numbers and literals

    private mutating func parseNumber() throws(JSONParseError) -> JSONValue {
        let start = index
        let isInteger = try scanNumber()
        let text = String(decoding: bytes[start..<index], as: UTF8.self)
        if isInteger, let exact = Int64(text) {
            return .int(exact)
        }
        guard let value = Double(text), value.isFinite else {
            throw JSONParseError(message: "number out of range at byte \(start)", offset: start)
        }
        return .number(value)
    }

    /// Reads past one number of the JSON grammar; whether it had neither fraction nor exponent.
    mutating func scanNumber() throws(JSONParseError) -> Bool {
        var isInteger = true
        _ = consume(UInt8(ascii: "-"))
        if consume(UInt8(ascii: "0")) {
            if index < bytes.count, isDigit(bytes[index]) {
                throw error("leading zero in a number")
            }
        } else {
            guard skipDigits() > 0 else { throw expected("a digit") }
        }
        if consume(UInt8(ascii: ".")) {
            isInteger = false
            guard skipDigits() > 0 else { throw expected("a digit after the decimal point") }
        }
        if consume(UInt8(ascii: "e")) || consume(UInt8(ascii: "E")) {
            isInteger = false
            if !consume(UInt8(ascii: "+")) { _ = consume(UInt8(ascii: "-")) }
            guard skipDigits() > 0 else { throw expected("a digit in the exponent") }
        }
        return isInteger
    }

    mutating func expectLiteral(_ literal: String) throws(JSONParseError) {
        for expectedByte in literal.utf8 {
            guard index < bytes.count, bytes[index] == expectedByte else {
                guard index < bytes.count else { throw error("unexpected end of input") }
                throw error("unexpected \(describe(bytes[index])) (expected \"\(literal)\")")
            }
            index += 1
        }
    }

    // MARK: - Helpers

    func isDigit(_ byte: UInt8) -> Bool {
        byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
    }

    mutating func skipDigits() -> Int {
        let start = index
        while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        return index - start
    }

    mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    mutating func consume(_ byte: UInt8) -> Bool {
        guard index < bytes.count, bytes[index] == byte else { return false }
        index += 1
        return true
    }

    func describe(_ byte: UInt8) -> String {
        if byte >= 0x21 && byte < 0x7F {
            return "\"\(Character(Unicode.Scalar(byte)))\""
        }
        let hex = String(byte, radix: 16, uppercase: true)
        return "byte 0x" + (hex.count < 2 ? "0" + hex : hex)
    }

    func error(_ what: String) -> JSONParseError {
        JSONParseError(message: "\(what) at byte \(index)", offset: index)
    }

    func expected(_ what: String) -> JSONParseError {
        guard index < bytes.count else { return error("expected \(what), found end of input") }
        return error("expected \(what), found \(describe(bytes[index]))")
    }
}
