import BadgeSupport
import Testing

@Suite("Backoff")
struct BackoffTests {
    private let backoff = Backoff(initial: .milliseconds(100), maximum: .seconds(2))

    @Test func ceilingGrowsByTheMultiplierAndStopsAtTheMaximum() {
        #expect(backoff.ceiling(attempt: 0) == .milliseconds(100))
        #expect(backoff.ceiling(attempt: 1) == .milliseconds(100))
        #expect(backoff.ceiling(attempt: 2) == .milliseconds(200))
        #expect(backoff.ceiling(attempt: 5) == .milliseconds(1600))
        #expect(backoff.ceiling(attempt: 6) == .seconds(2))
        #expect(backoff.ceiling(attempt: .max) == .seconds(2))
        let tripling = Backoff(initial: .seconds(1), maximum: .seconds(100), multiplier: 3)
        #expect(tripling.ceiling(attempt: 3) == .seconds(9))
        let fractional = Backoff(initial: .seconds(1), maximum: .seconds(100), multiplier: 1.5)
        #expect(fractional.ceiling(attempt: 3) == .milliseconds(2250))
    }

    @Test func fullJitterIsUniformBetweenZeroAndTheCeiling() {
        #expect(backoff.delay(attempt: 3, unit: 0) == .zero)
        #expect(backoff.delay(attempt: 3, unit: 0.25) == .milliseconds(100))
        #expect(backoff.delay(attempt: 3, unit: 1) == .milliseconds(400))
        // Draws outside 0...1 are clamped.
        #expect(backoff.delay(attempt: 3, unit: 7) == .milliseconds(400))
        #expect(backoff.delay(attempt: 3, unit: -1) == .zero)
        for _ in 0..<100 {
            let delay = backoff.delay(attempt: 4)
            #expect(delay >= .zero && delay <= .milliseconds(800))
        }
    }

    @Test func partialJitterKeepsAFloor() {
        var settled = backoff
        settled.jitter = 0
        #expect(settled.delay(attempt: 2, unit: 0) == .milliseconds(200))
        settled.jitter = 0.5
        #expect(settled.delay(attempt: 2, unit: 0) == .milliseconds(100))
        #expect(settled.delay(attempt: 2, unit: 1) == .milliseconds(200))
    }
}
