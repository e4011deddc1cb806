import Foundation

/// RFC 3339 UTC timestamps with milliseconds (`2025-01-31T12:34:56.789Z`), computed without a formatter.
enum Timestamp {
    /// Milliseconds since 1970-01-01T00:00:00Z of `date`, rounded down.
    static func milliseconds(of date: Date) -> Int64 {
        Int64((date.timeIntervalSince1970 * 1000).rounded(.down))
    }

    /// The date of `milliseconds` since 1970-01-01T00:00:00Z.
    static func date(milliseconds: Int64) -> Date {
        Date(timeIntervalSince1970: Double(milliseconds) / 1000)
    }

    /// The RFC 3339 text of `milliseconds` since the epoch.
    static func rfc3339(milliseconds: Int64) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(24)
        Self.write(milliseconds: milliseconds, into: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Appends the RFC 3339 text of `milliseconds` since the epoch to `bytes`.
    static func write(milliseconds: Int64, into bytes: inout [UInt8]) {
        let millisecondsPerDay: Int64 = 86_400_000
        var days = milliseconds / millisecondsPerDay
        var rest = milliseconds % millisecondsPerDay
        if rest < 0 {
            rest += millisecondsPerDay
            days -= 1
        }
        let (year, month, day) = Self.civilDate(daysSinceEpoch: days)
        let second = rest / 1000
        Self.digits(year, count: 4, into: &bytes)
        bytes.append(UInt8(ascii: "-"))
        Self.digits(month, count: 2, into: &bytes)
        bytes.append(UInt8(ascii: "-"))
        Self.digits(day, count: 2, into: &bytes)
        bytes.append(UInt8(ascii: "T"))
        Self.digits(second / 3600, count: 2, into: &bytes)
        bytes.append(UInt8(ascii: ":"))
        Self.digits(second / 60 % 60, count: 2, into: &bytes)
        bytes.append(UInt8(ascii: ":"))
        Self.digits(second % 60, count: 2, into: &bytes)
        bytes.append(UInt8(ascii: "."))
        Self.digits(rest % 1000, count: 3, into: &bytes)
        bytes.append(UInt8(ascii: "Z"))
    }

    /// The proleptic Gregorian (year, month, day) of a day count since 1970-01-01.
    ///
    /// Counts in 400-year eras starting on 1 March, so that the leap day falls at the end of each year.
    static func civilDate(daysSinceEpoch: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let daysPerEra: Int64 = 146_097
        let shifted = daysSinceEpoch + 719_468  // days from 0000-03-01 to 1970-01-01
        let era = (shifted >= 0 ? shifted : shifted - daysPerEra + 1) / daysPerEra
        let dayOfEra = shifted - era * daysPerEra
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthFromMarch = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthFromMarch + 2) / 5 + 1
        let month = monthFromMarch < 10 ? monthFromMarch + 3 : monthFromMarch - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        return (year, month, day)
    }

    private static func digits(_ value: Int64, count: Int, into bytes: inout [UInt8]) {
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
