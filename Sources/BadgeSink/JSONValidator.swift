/// Checks, without building anything, that bytes are one well-formed JSON text (RFC 8259) in valid UTF-8.
///
/// The sink embeds a push body that passes as is in the `payload` of its deliveries, so this is what keeps
/// `GET /deliveries` valid JSON whatever producers send.
enum JSONValidator {
    /// Nesting deeper than this is treated as not JSON (and the body is then embedded as a string).
    static let maximumDepth = 512

    /// Whether `bytes` is exactly one JSON value, optionally surrounded by whitespace.
    static func isValidJSON<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> Bool {
        if let result = bytes.withContiguousStorageIfAvailable({ Self.isValidJSON(buffer: $0) }) {
            return result
        }
        return Array(bytes).withUnsafeBufferPointer { Self.isValidJSON(buffer: $0) }
    }

    /// Whether `bytes` is well-formed UTF-8.
    static func isValidUTF8<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> Bool {
        if let result = bytes.withContiguousStorageIfAvailable({ Self.isValidUTF8(buffer: $0) }) {
            return result
        }
        return Array(bytes).withUnsafeBufferPointer { Self.isValidUTF8(buffer: $0) }
    }

    private static func isValidJSON(buffer: UnsafeBufferPointer<UInt8>) -> Bool {
        var scanner = Scanner(bytes: buffer)
        return scanner.document()
    }

    private static func isValidUTF8(buffer: UnsafeBufferPointer<UInt8>) -> Bool {
        var index = 0
        while index < buffer.count {
            if buffer[index] < 0x80 {
                index += 1
            } else if let length = Self.sequenceLength(buffer, at: index) {
                index += length
            } else {
                return false
            }
        }
        return true
    }

    /// The length of the well-formed multi-byte UTF-8 sequence that starts at `index`, or nil.
    static func sequenceLength(_ bytes: UnsafeBufferPointer<UInt8>, at index: Int) -> Int? {
        let lead = bytes[index]
        let length: Int
        var secondRange: ClosedRange<UInt8> = 0x80...0xBF
        switch lead {
        case 0xC2...0xDF: length = 2
        case 0xE0:
            length = 3
            secondRange = 0xA0...0xBF
        case 0xE1...0xEC, 0xEE...0xEF: length = 3
        case 0xED:
            length = 3
            secondRange = 0x80...0x9F
        case 0xF0:
            length = 4
            secondRange = 0x90...0xBF
        case 0xF1...0xF3: length = 4
        case 0xF4:
            length = 4
            secondRange = 0x80...0x8F
        default: return nil
        }
        guard index + length <= bytes.count, secondRange.contains(bytes[index + 1]) else { return nil }
        var next = index + 2
        while next < index + length {
            guard bytes[next] & 0xC0 == 0x80 else { return nil }
            next += 1
        }
        return length
    }

    /// A recursive-descent recogniser over one buffer.
    private struct Scanner {
        let bytes: UnsafeBufferPointer<UInt8>
        var index = 0

        init(bytes: UnsafeBufferPointer<UInt8>) {
            self.bytes = bytes
        }

        mutating func document() -> Bool {
            self.skipWhitespace()
            guard self.value(depth: 0) else { return false }
            self.skipWhitespace()
            return self.index == self.bytes.count
        }

        private var current: UInt8? {
            self.index < self.bytes.count ? self.bytes[self.index] : nil
        }

        private mutating func skipWhitespace() {
            while let byte = self.current,
                byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\n") || byte == UInt8(ascii: "\r")
                    || byte == UInt8(ascii: "\t")
            {
                self.index += 1
            }
        }

        private mutating func value(depth: Int) -> Bool {
            guard let byte = self.current else { return false }
            switch byte {
            case UInt8(ascii: "{"): return depth < JSONValidator.maximumDepth && self.object(depth: depth + 1)
            case UInt8(ascii: "["): return depth < JSONValidator.maximumDepth && self.array(depth: depth + 1)
            case UInt8(ascii: "\""): return self.string()
            case UInt8(ascii: "t"): return self.literal("true")
            case UInt8(ascii: "f"): return self.literal("false")
            case UInt8(ascii: "n"): return self.literal("null")
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return self.number()
            default: return false
            }
        }

        private mutating func object(depth: Int) -> Bool {
            self.index += 1
            self.skipWhitespace()
            if self.current == UInt8(ascii: "}") {
                self.index += 1
                return true
            }
            while true {
                guard self.current == UInt8(ascii: "\""), self.string() else { return false }
                self.skipWhitespace()
                guard self.current == UInt8(ascii: ":") else { return false }
                self.index += 1
                self.skipWhitespace()
                guard self.value(depth: depth) else { return false }
                self.skipWhitespace()
                switch self.current {
                case UInt8(ascii: ","):
                    self.index += 1
                    self.skipWhitespace()
                case UInt8(ascii: "}"):
                    self.index += 1
                    return true
                default:
                    return false
                }
            }
        }

        private mutating func array(depth: Int) -> Bool {
            self.index += 1
            self.skipWhitespace()
            if self.current == UInt8(ascii: "]") {
                self.index += 1
                return true
            }
            while true {
                guard self.value(depth: depth) else { return false }
                self.skipWhitespace()
                switch self.current {
                case UInt8(ascii: ","):
                    self.index += 1
                    self.skipWhitespace()
                case UInt8(ascii: "]"):
                    self.index += 1
                    return true
                default:
                    return false
                }
            }
        }

        private mutating func string() -> Bool {
            self.index += 1
            while let byte = self.current {
                switch byte {
                case UInt8(ascii: "\""):
                    self.index += 1
                    return true
                case UInt8(ascii: "\\"):
                    self.index += 1
                    guard self.escape() else { return false }
                case 0x00..<0x20:
                    return false
                case 0x20..<0x80:
                    self.index += 1
                default:
                    guard let length = JSONValidator.sequenceLength(self.bytes, at: self.index) else { return false }
                    self.index += length
                }
            }
            return false
        }

        private mutating func escape() -> Bool {
            guard let byte = self.current else { return false }
            self.index += 1
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"),
                UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
                return true
            case UInt8(ascii: "u"):
                for _ in 0..<4 {
                    guard let digit = self.current, digit.isHexDigit else { return false }
                    self.index += 1
                }
                return true
            default:
                return false
            }
        }

        private mutating func number() -> Bool {
            if self.current == UInt8(ascii: "-") {
                self.index += 1
            }
            guard let first = self.current else { return false }
            switch first {
            case UInt8(ascii: "0"):
                self.index += 1
            case UInt8(ascii: "1")...UInt8(ascii: "9"):
                self.skipDigits()
            default:
                return false
            }
            if self.current == UInt8(ascii: ".") {
                self.index += 1
                guard self.skipDigits() else { return false }
            }
            if self.current == UInt8(ascii: "e") || self.current == UInt8(ascii: "E") {
                self.index += 1
                if self.current == UInt8(ascii: "+") || self.current == UInt8(ascii: "-") {
                    self.index += 1
                }
                guard self.skipDigits() else { return false }
            }
            return true
        }

        /// Skips decimal digits; whether there was at least one.
        @discardableResult
        private mutating func skipDigits() -> Bool {
            let start = self.index
            while let byte = self.current, byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") {
                self.index += 1
            }
            return self.index > start
        }

        private mutating func literal(_ word: StaticString) -> Bool {
            let count = word.utf8CodeUnitCount
            guard self.index + count <= self.bytes.count else { return false }
            for offset in 0..<count where self.bytes[self.index + offset] != word.utf8Start[offset] {
                return false
            }
            self.index += count
            return true
        }
    }
}

extension UInt8 {
    /// Whether the byte is an ASCII hexadecimal digit.
    fileprivate var isHexDigit: Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(self) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(self)
            || (UInt8(ascii: "A")...UInt8(ascii: "F")).contains(self)
    }
}
