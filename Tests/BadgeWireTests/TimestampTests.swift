import Testing

@testable import BadgeWire

@Suite("Timestamp")
struct TimestampTests {
    @Test(arguments: [
        ("2026-11-21T10:00:01Z", "2026-11-21T10:00:01Z"),
        ("2026-11-21t10:00:01z", "2026-11-21T10:00:01Z"),
        ("2026-11-21T10:00:01.25Z", "2026-11-21T10:00:01.250000Z"),
        ("2026-11-21T10:00:01.123456789Z", "2026-11-21T10:00:01.123456Z"),
        ("2026-11-21T10:00:01.000000Z", "2026-11-21T10:00:01Z"),
        ("2026-11-21T11:30:01+01:30", "2026-11-21T10:00:01Z"),
        ("2026-11-21T05:00:01-05:00", "2026-11-21T10:00:01Z"),
        ("2026-11-21T10:00:01-00:00", "2026-11-21T10:00:01Z"),
        ("2026-01-01T00:30:00+01:00", "2025-12-31T23:30:00Z"),
        ("2024-02-29T23:59:60Z", "2024-02-29T23:59:59Z"),
        ("2000-02-29T00:00:00Z", "2000-02-29T00:00:00Z"),
        ("1970-01-01T00:00:00Z", "1970-01-01T00:00:00Z"),
        ("1969-12-31T23:59:59.999999Z", "1969-12-31T23:59:59.999999Z"),
        ("0001-01-01T00:00:00Z", "0001-01-01T00:00:00Z"),
        ("9999-12-31T23:59:59.999999Z", "9999-12-31T23:59:59.999999Z"),
    ])
    func parsesAndFormats(input: String, expected: String) throws {
        let timestamp = try #require(Timestamp.parse(input))
        #expect(timestamp.rfc3339 == expected)
        #expect(Timestamp.parse(timestamp.rfc3339) == timestamp)
    }

    @Test(arguments: [
        "", "2026-11-21", "2026-11-21T10:00Z", "2026-11-21T10:00:01", "2026-11-21 10:00:01Z",
        "2026-13-01T00:00:00Z", "2026-00-01T00:00:00Z", "2026-11-31T00:00:00Z", "2026-02-29T00:00:00Z",
        "1900-02-29T00:00:00Z", "2026-11-00T00:00:00Z", "2026-11-21T24:00:00Z", "2026-11-21T10:60:00Z",
        "2026-11-21T10:00:61Z", "2026-11-21T10:00:01.Z", "2026-11-21T10:00:01.1234567890Z",
        "2026-11-21T10:00:01+0100", "2026-11-21T10:00:01+24:00", "2026-11-21T10:00:01+01:60",
        "2026-11-21T10:00:01ZZ", " 2026-11-21T10:00:01Z", "2026-11-21T10:00:01Z ", "+2026-11-21T10:00:01Z",
        "20261-11-21T10:00:01Z", "2026-1-21T10:00:01Z", "２０２６-11-21T10:00:01Z", "0000-01-01T00:00:00+01:00",
        "2026-11-21T10:00:01,5Z",
    ])
    func rejects(input: String) {
        #expect(Timestamp.parse(input) == nil)
    }

    @Test func ordersByInstant() throws {
        let earlier = try #require(Timestamp.parse("2026-11-21T11:00:00+02:00"))
        let later = try #require(Timestamp.parse("2026-11-21T10:00:00Z"))
        #expect(earlier < later)
        #expect(Timestamp.parse("2026-11-21T11:00:00+01:00") == later)
        #expect(later.microsecondsSinceEpoch == 1_795_255_200_000_000)
    }

    @Test func calendarRoundTripsEveryDayOfFourHundredYears() {
        var days = Timestamp.daysSinceEpoch(year: 1900, month: 1, day: 1)
        for year: Int64 in 1900..<2300 {
            for month: Int64 in 1...12 {
                for day in 1...Int64(Timestamp.daysInMonth(year: Int(year), month: Int(month))) {
                    let civil = Timestamp.civilDate(daysSinceEpoch: days)
                    if civil.year != year || civil.month != month || civil.day != day {
                        Issue.record("day \(days) is \(civil), expected \(year)-\(month)-\(day)")
                        return
                    }
                    days += 1
                }
            }
        }
        #expect(Timestamp.daysSinceEpoch(year: 2300, month: 1, day: 1) == days)
    }

    @Test func nowIsRecent() throws {
        let now = Timestamp.now()
        #expect(now > Timestamp.parse("2020-01-01T00:00:00Z")!)
        #expect(abs(Timestamp(date: now.date).microsecondsSinceEpoch - now.microsecondsSinceEpoch) <= 1)
    }
}
