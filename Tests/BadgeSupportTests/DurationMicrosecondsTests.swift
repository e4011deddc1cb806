import BadgeSupport
import Testing

@Suite("Duration in microseconds")
struct DurationMicrosecondsTests {
    @Test func wholeMicrosecondsRoundTowardZero() {
        #expect(Duration.seconds(5).wholeMicroseconds == 5_000_000)
        #expect(Duration.milliseconds(250).wholeMicroseconds == 250_000)
        #expect(Duration.nanoseconds(1_999).wholeMicroseconds == 1)
        #expect(Duration.seconds(24 * 3600).wholeMicroseconds == 86_400_000_000)
        #expect(Duration.zero.wholeMicroseconds == 0)
    }
}
