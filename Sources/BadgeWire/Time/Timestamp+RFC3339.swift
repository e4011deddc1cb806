/// RFC 3339 parsing and formatting, and the proleptic Gregorian arithmetic they share.
extension Timestamp {
    static let microsecondsPerSecond: Int64 = 1_000_000
    static let secondsPerDay: Int64 = 86_400

    /// Parses a strict RFC 3339 `date-time`: `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)`.
    ///
    /// `t` and `z` are accepted in lowercase. The fraction has 1–9 digits and is truncated to
    /// microseconds. Month and day ranges are checked (leap years included), hours must be below 24,
    /// minutes below 60 and seconds at most 60; a leap second (60) is read as 59. The instant, once
    /// shifted to UTC, must lie in the years 0000–9999. Returns `nil` for anything else.
    ///
    /// Stricter than Foundation on purpose: `ISO8601DateFormatter` (and `Date.ISO8601FormatStyle`) also take
    /// an offset without its colon (`+0100`), which RFC 3339 does not allow, and keep only milliseconds of
    /// the fraction; this parser refuses the first and keeps microseconds, so that two timestamps of one
    /// producer compare as the producer meant.
    public static func parse(_ s: String) -> Timestamp? {
        var reader = DigitReader(bytes: Array(s.utf8))
        guard let year = reader.number(digits: 4), reader.skip(UInt8(ascii: "-")),
            let month = reader.number(digits: 2), reader.skip(UInt8(ascii: "-")),
            let day = reader.number(digits: 2),
            reader.skip(UInt8(ascii: "T")) || reader.skip(UInt8(ascii: "t")),
            let hour = reader.number(digits: 2), reader.skip(UInt8(ascii: ":")),
            let minute = reader.number(digits: 2), reader.skip(UInt8(ascii: ":")),
            var second = reader.number(digits: 2)
        else { return nil }
        guard (1...12).contains(month), day >= 1, day <= daysInMonth(year: year, month: month),
            hour < 24, minute < 60, second <= 60
        else { return nil }
        if second == 60 { second = 59 }

        var fractionMicros: Int64 = 0
        if reader.skip(UInt8(ascii: ".")) {
            var digits = 0
            var scale: Int64 = 100_000
            while let digit = reader.digit() {
                digits += 1
                guard digits <= 9 else { return nil }
                fractionMicros += Int64(digit) * scale
                scale /= 10
            }
            guard digits >= 1 else { return nil }
        }

        var offsetSeconds: Int64 = 0
        if reader.skip(UInt8(ascii: "Z")) || reader.skip(UInt8(ascii: "z")) {
            offsetSeconds = 0
        } else {
            let sign: Int64
            if reader.skip(UInt8(ascii: "+")) {
                sign = 1
            } else if reader.skip(UInt8(ascii: "-")) {
                sign = -1
            } else {
                return nil
            }
            guard let offsetHour = reader.number(digits: 2), reader.skip(UInt8(ascii: ":")),
                let offsetMinute = reader.number(digits: 2), offsetHour < 24, offsetMinute < 60
            else { return nil }
            offsetSeconds = sign * Int64(offsetHour * 3600 + offsetMinute * 60)
        }
        guard reader.atEnd else { return nil }

        let days = daysSinceEpoch(year: Int64(year), month: Int64(month), day: Int64(day))
        let localSeconds = days * secondsPerDay + Int64(hour * 3600 + minute * 60 + second)
        let utcSeconds = localSeconds - offsetSeconds
        let lowest = daysSinceEpoch(year: 0, month: 1, day: 1) * secondsPerDay
        let highest = daysSinceEpoch(year: 10_000, month: 1, day: 1) * secondsPerDay
        guard utcSeconds >= lowest, utcSeconds < highest else { return nil }
        return Timestamp(microsecondsSinceEpoch: utcSeconds * microsecondsPerSecond + fractionMicros)
    }

    /// The RFC 3339 form in UTC with a `Z` suffix, e.g. `2026-11-21T10:00:01Z`; six fraction digits are
    /// added only when the microseconds are not zero, e.g. `2026-11-21T10:00:01.250000Z`.
    public var rfc3339: String {
        let micros = microsecondsSinceEpoch
        let totalSeconds = Self.floorDivide(micros, Self.microsecondsPerSecond)
        let fraction = micros - totalSeconds * Self.microsecondsPerSecond
        let days = Self.floorDivide(totalSeconds, Self.secondsPerDay)
        let secondOfDay = totalSeconds - days * Self.secondsPerDay
        let (year, month, day) = Self.civilDate(daysSinceEpoch: days)
        var out = Self.padded(year, 4) + "-" + Self.padded(month, 2) + "-" + Self.padded(day, 2)
        out += "T" + Self.padded(secondOfDay / 3600, 2) + ":" + Self.padded(secondOfDay % 3600 / 60, 2)
        out += ":" + Self.padded(secondOfDay % 60, 2)
        if fraction != 0 {
            out += "." + Self.padded(fraction, 6)
        }
        return out + "Z"
    }

    // MARK: - Calendar arithmetic (proleptic Gregorian)

    static func isLeapYear(_ year: Int) -> Bool {
        (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
    }

    static func daysInMonth(year: Int, month: Int) -> Int {
        switch month {
        case 2: return isLeapYear(year) ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    /// Days from 1970-01-01 to the given civil date. Years are shifted so that they start in March,
    /// which puts the leap day at the end of the shifted year; 400-year cycles have 146097 days.
    static func daysSinceEpoch(year: Int64, month: Int64, day: Int64) -> Int64 {
        let shiftedYear = month <= 2 ? year - 1 : year
        let cycle = floorDivide(shiftedYear, 400)
        let yearOfCycle = shiftedYear - cycle * 400
        let monthFromMarch = (month + 9) % 12
        let dayOfYear = (153 * monthFromMarch + 2) / 5 + day - 1
        let dayOfCycle = yearOfCycle * 365 + yearOfCycle / 4 - yearOfCycle / 100 + dayOfYear
        return cycle * 146_097 + dayOfCycle - 719_468
    }

    /// The inverse of ``daysSinceEpoch(year:month:day:)``.
    static func civilDate(daysSinceEpoch days: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let shifted = days + 719_468
        let cycle = floorDivide(shifted, 146_097)
        let dayOfCycle = shifted - cycle * 146_097
        let yearOfCycle =
            (dayOfCycle - dayOfCycle / 1460 + dayOfCycle / 36_524 - dayOfCycle / 146_096) / 365
        let dayOfYear = dayOfCycle - (365 * yearOfCycle + yearOfCycle / 4 - yearOfCycle / 100)
        let monthFromMarch = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthFromMarch + 2) / 5 + 1
        let month = monthFromMarch < 10 ? monthFromMarch + 3 : monthFromMarch - 9
        let year = yearOfCycle + cycle * 400 + (month <= 2 ? 1 : 0)
        return (year, month, day)
    }

    static func floorDivide(_ a: Int64, _ b: Int64) -> Int64 {
        let quotient = a / b
        return (a % b != 0 && (a < 0) != (b < 0)) ? quotient - 1 : quotient
    }

    static func padded(_ value: Int64, _ width: Int) -> String {
        let digits = String(value)
        return digits.count >= width ? digits : String(repeating: "0", count: width - digits.count) + digits
    }
}

/// A cursor over ASCII bytes used by the timestamp parser.
private struct DigitReader {
    let bytes: [UInt8]
    var index = 0

    var atEnd: Bool { index == bytes.count }

    mutating func skip(_ byte: UInt8) -> Bool {
        guard index < bytes.count, bytes[index] == byte else { return false }
        index += 1
        return true
    }

    mutating func digit() -> Int? {
        guard index < bytes.count, bytes[index] >= UInt8(ascii: "0"), bytes[index] <= UInt8(ascii: "9") else {
            return nil
        }
        defer { index += 1 }
        return Int(bytes[index] - UInt8(ascii: "0"))
    }

    /// Reads exactly `digits` decimal digits.
    mutating func number(digits: Int) -> Int? {
        var value = 0
        for _ in 0..<digits {
            guard let digit = digit() else { return nil }
            value = value * 10 + digit
        }
        return value
    }
}
