import Foundation

/// Millisecond precision, as the sink records and shows `received_at`.
extension Timestamp {
    /// Creates a timestamp from milliseconds since the Unix epoch.
    public init(millisecondsSinceEpoch: Int64) {
        self.init(microsecondsSinceEpoch: millisecondsSinceEpoch * 1000)
    }

    /// Milliseconds since 1970-01-01T00:00:00Z, rounded down.
    public var millisecondsSinceEpoch: Int64 {
        Self.floorDivide(microsecondsSinceEpoch, 1000)
    }

    /// Milliseconds since 1970-01-01T00:00:00Z of `date`, rounded down.
    public static func milliseconds(of date: Date) -> Int64 {
        Int64((date.timeIntervalSince1970 * 1000).rounded(.down))
    }

    /// The RFC 3339 form in UTC with exactly three fraction digits (milliseconds, rounded down), e.g.
    /// `2025-01-31T12:34:56.789Z`.
    public var rfc3339Milliseconds: String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(24)
        writeRFC3339Milliseconds(into: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Appends ``rfc3339Milliseconds`` to `bytes` as UTF-8, without building a string.
    public func writeRFC3339Milliseconds(into bytes: inout [UInt8]) {
        let milliseconds = millisecondsSinceEpoch
        let millisecondsPerDay = Self.secondsPerDay * 1000
        let days = Self.floorDivide(milliseconds, millisecondsPerDay)
        let rest = milliseconds - days * millisecondsPerDay
        let (year, month, day) = Self.civilDate(daysSinceEpoch: days)
        let second = rest / 1000
        Self.appendDigits(year, count: 4, to: &bytes)
        bytes.append(UInt8(ascii: "-"))
        Self.appendDigits(month, count: 2, to: &bytes)
        bytes.append(UInt8(ascii: "-"))
        Self.appendDigits(day, count: 2, to: &bytes)
        bytes.append(UInt8(ascii: "T"))
        Self.appendDigits(second / 3600, count: 2, to: &bytes)
        bytes.append(UInt8(ascii: ":"))
        Self.appendDigits(second / 60 % 60, count: 2, to: &bytes)
        bytes.append(UInt8(ascii: ":"))
        Self.appendDigits(second % 60, count: 2, to: &bytes)
        bytes.append(UInt8(ascii: "."))
        Self.appendDigits(rest % 1000, count: 3, to: &bytes)
        bytes.append(UInt8(ascii: "Z"))
    }

    /// Appends `value` in decimal, zero-padded to `count` digits (all its digits when it has more).
    private static func appendDigits(_ value: Int64, count: Int, to bytes: inout [UInt8]) {
        var divisor: Int64 = 1
        for _ in 1..<count {
            divisor *= 10
        }
        var value = max(0, value)
        if value >= divisor * 10 {
            bytes.append(contentsOf: String(value).utf8)
            return
        }
        while divisor > 0 {
            bytes.append(UInt8(ascii: "0") + UInt8(value / divisor))
            value %= divisor
            divisor /= 10
        }
    }
}
