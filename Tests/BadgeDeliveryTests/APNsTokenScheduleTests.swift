import Testing

@testable import BadgeDelivery

@Suite("APNs token schedule")
struct APNsTokenScheduleTests {
    @Test func aTokenIsReusedUntilFiftyMinutesOldThenReplaced() {
        var schedule = APNsTokenSchedule()
        #expect(schedule.next(now: 1000) == .sign(issuedAt: 1000))
        schedule.signed("t1", issuedAt: 1000)
        #expect(schedule.next(now: 1000 + 49 * 60) == .use("t1"))
        #expect(schedule.next(now: 1000 + 50 * 60) == .sign(issuedAt: 1000 + 50 * 60))
    }

    @Test func theRefreshAgeStaysBetweenTwentyAndSixtyMinutes() {
        #expect(APNsTokenSchedule(refreshAge: 60).refreshAge == 20 * 60)
        #expect(APNsTokenSchedule(refreshAge: 2 * 3600).refreshAge == 59 * 60)
    }

    @Test func aClockThatJumpedBackSignsAgain() {
        var schedule = APNsTokenSchedule()
        schedule.signed("t1", issuedAt: 10_000)
        #expect(schedule.next(now: 10_000 - 61) == .sign(issuedAt: 10_000 - 61))
    }

    @Test func anExpiredTokenIsReSignedOnceThenItIsAConfigurationError() {
        var schedule = APNsTokenSchedule()
        schedule.signed("t1", issuedAt: 1000)
        #expect(schedule.expired("t1", now: 1100) == .sign(issuedAt: 1100))
        schedule.signed("t2", issuedAt: 1100)
        // A concurrent request refused with the old token retries with the new one, without signing.
        #expect(schedule.expired("t1", now: 1101) == .use("t2"))
        // The new token refused too, within 20 minutes: no more signing.
        #expect(schedule.expired("t2", now: 1200) == nil)
        #expect(schedule.next(now: 1200) == .use("t2"))
        // After 20 minutes another early renewal is allowed.
        #expect(schedule.expired("t2", now: 1100 + 20 * 60) == .sign(issuedAt: 1100 + 20 * 60))
    }
}
