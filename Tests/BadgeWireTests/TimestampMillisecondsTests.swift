import BadgeSupport
import Foundation
import Testing

@testable import BadgeWire

/// The millisecond form the sink shows as `received_at` (these were the sink's own timestamp tests).
@Suite("Timestamp in milliseconds")
struct TimestampMillisecondsTests {
    @Test(
        "formats RFC 3339 UTC with milliseconds",
        arguments: [
            (Int64(0), "1970-01-01T00:00:00.000Z"),
            (Int64(951_782_400_000), "2000-02-29T00:00:00.000Z"),
            (Int64(1_700_000_000_123), "2023-11-14T22:13:20.123Z"),
            (Int64(-1), "1969-12-31T23:59:59.999Z"),
            (Int64(4_102_444_799_999), "2099-12-31T23:59:59.999Z"),
        ]
    )
    func formats(milliseconds: Int64, expected: String) {
        #expect(Timestamp(millisecondsSinceEpoch: milliseconds).rfc3339Milliseconds == expected)
    }

    @Test("agrees with ISO8601DateFormatter")
    func agreesWithFoundation() {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        var generator = SeededGenerator(seed: 5)
        for _ in 0..<2000 {
            let milliseconds = Int64.random(in: 0..<4_102_444_800_000, using: &generator)
            let text = Timestamp(millisecondsSinceEpoch: milliseconds).rfc3339Milliseconds
            let parsed = formatter.date(from: text)
            let parsedMilliseconds = parsed.map { Int64(($0.timeIntervalSince1970 * 1000).rounded()) }
            #expect(parsedMilliseconds == milliseconds, "\(text)")
        }
    }
}
