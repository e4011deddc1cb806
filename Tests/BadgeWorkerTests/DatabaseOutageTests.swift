import Testing

@testable import BadgeWorker

/// The database outage state machine, driven directly: one outage logged once when it begins and once when it
/// ends, however often a nearly full disk lets work through in between.
@Suite struct DatabaseOutageStateTests {
    let start = ContinuousClock.now

    @Test func oneWaitBeginsAndAQuietPeriodLaterEnds() {
        var outage = DatabaseOutage(quietPeriod: .seconds(10))
        #expect(outage.workWaits(now: start) == .began)
        #expect(outage.isInOutage)
        outage.stillFailing(now: start + .seconds(30))
        #expect(outage.succeeded(now: start + .seconds(31)) == .none, "work still waits")
        #expect(outage.workDone(now: start + .seconds(31)) == .nothingWaits)
        #expect(outage.succeeded(now: start + .seconds(35)) == .none, "within the quiet period")
        #expect(outage.succeeded(now: start + .seconds(41)) == .ended(lasted: .seconds(31), relapses: 0))
        #expect(!outage.isInOutage)
        #expect(outage.succeeded(now: start + .seconds(50)) == .none)
    }

    @Test func flapsWithinTheQuietPeriodAreOneOutage() {
        var outage = DatabaseOutage(quietPeriod: .seconds(10))
        #expect(outage.workWaits(now: start) == .began)
        #expect(outage.workDone(now: start + .seconds(1)) == .nothingWaits)
        #expect(outage.workWaits(now: start + .seconds(3)) == .waitsAgain)
        #expect(outage.workWaits(now: start + .seconds(3)) == .none, "a second piece of work waits too")
        #expect(outage.workDone(now: start + .seconds(4)) == .none)
        #expect(outage.workDone(now: start + .seconds(5)) == .nothingWaits)
        #expect(outage.succeeded(now: start + .seconds(12)) == .none)
        #expect(outage.succeeded(now: start + .seconds(13)) == .ended(lasted: .seconds(5), relapses: 1))
        // A new outage after that is logged again.
        #expect(outage.workWaits(now: start + .seconds(60)) == .began)
    }

    @Test func workDoneWithoutWaitingChangesNothing() {
        var outage = DatabaseOutage()
        #expect(outage.workDone(now: start) == .none)
        #expect(outage.succeeded(now: start) == .none)
        #expect(outage.waiting == 0)
    }
}
