/// Strict UTF-8 validation (RFC 3629): no overlong forms, no surrogates, nothing above U+10FFFF,
/// no truncated sequences.
public enum UTF8Validation {
    /// The offset of the first byte of the first invalid sequence, or `nil` when all bytes are valid UTF-8.
    public static func firstInvalidOffset(_ bytes: [UInt8]) -> Int? {
        bytes.withUnsafeBufferPointer { Self.firstInvalidOffset(in: $0) }
    }

    /// Whether `bytes` is well-formed UTF-8.
    public static func isValid<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> Bool {
        if let valid = bytes.withContiguousStorageIfAvailable({ Self.firstInvalidOffset(in: $0) == nil }) {
            return valid
        }
        return Self.firstInvalidOffset(Array(bytes)) == nil
    }

    /// The offset of the first byte of the first invalid sequence in `bytes`, or `nil` when all are valid.
    static func firstInvalidOffset(in bytes: UnsafeBufferPointer<UInt8>) -> Int? {
        var index = 0
        let count = bytes.count
        while index < count {
            if bytes[index] < 0x80 {
                index += 1
            } else if let length = Self.sequenceLength(in: bytes, at: index) {
                index += length
            } else {
                return index
            }
        }
        return nil
    }

    /// The length of the well-formed multi-byte sequence that starts at `index`, or `nil` when there is none.
    static func sequenceLength(in bytes: UnsafeBufferPointer<UInt8>, at index: Int) -> Int? {
        let length: Int
        var secondRange: ClosedRange<UInt8> = 0x80...0xBF
        switch bytes[index] {
        case 0xC2...0xDF:
            length = 2
        case 0xE0:
            length = 3
            secondRange = 0xA0...0xBF
        case 0xE1...0xEC, 0xEE...0xEF:
            length = 3
        case 0xED:
            length = 3
            secondRange = 0x80...0x9F
        case 0xF0:
            length = 4
            secondRange = 0x90...0xBF
        case 0xF1...0xF3:
            length = 4
        case 0xF4:
            length = 4
            secondRange = 0x80...0x8F
        default:
            return nil
        }
        guard index + length <= bytes.count, secondRange.contains(bytes[index + 1]) else { return nil }
        var next = index + 2
        while next < index + length {
            guard (0x80...0xBF).contains(bytes[next]) else { return nil }
            next += 1
        }
        return length
    }
}
