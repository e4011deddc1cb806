import Testing

@testable import BadgeWorker

/// When a refusal that repeats with every push is logged, driven directly with monotonic times.
@Suite("Refusal throttle")
struct RefusalThrottleTests {
    private static let start = ContinuousClock.now

    @Test func theFirstOfEachKeyIsLoggedThenOneLinePerIntervalCountingTheOthers() {
        var throttle = RefusalThrottle(interval: .seconds(600))
        #expect(throttle.note("fcm", now: Self.start)! == ("fcm", 1))
        #expect(throttle.note("apns", now: Self.start)! == ("apns", 1), "each key has its own first line")
        for second in 1...99 { #expect(throttle.note("fcm", now: Self.start + .seconds(second)) == nil) }
        #expect(throttle.note("fcm", now: Self.start + .seconds(599)) == nil)
        // 100 refusals since the first line, this one included.
        #expect(throttle.note("fcm", now: Self.start + .seconds(600))! == ("fcm", 101))
        #expect(throttle.note("fcm", now: Self.start + .seconds(601)) == nil)
        #expect(throttle.note("fcm", now: Self.start + .seconds(1300))! == ("fcm", 2))
        #expect(throttle.note("apns", now: Self.start + .seconds(1300))! == ("apns", 1))
    }

    @Test func keysBeyondTheBoundShareOne() {
        var throttle = RefusalThrottle(interval: .seconds(600))
        for index in 0..<RefusalThrottle.maxKeys {
            #expect(throttle.note("app-\(index)", now: Self.start)?.key == "app-\(index)")
        }
        #expect(throttle.note("one-more", now: Self.start)! == (RefusalThrottle.otherKey, 1))
        #expect(throttle.note("and-another", now: Self.start) == nil, "counted under the shared key")
        #expect(throttle.note("app-3", now: Self.start + .seconds(600))! == ("app-3", 1), "known keys keep theirs")
    }
}
