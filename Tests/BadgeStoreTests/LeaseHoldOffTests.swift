import Testing

@testable import BadgeStore

/// After its lease rounds missed the database for longer than a TTL, a worker leaves expired leases to their
/// owners for two TTLs.
@Suite("Lease hold-off")
struct LeaseHoldOffTests {
    private let ttl = Duration.seconds(3)

    @Test func regularRoundsMayTakeExpiredLeases() {
        let now = ContinuousClock.now
        #expect(LeaseHoldOff.mayTakeExpired(now: now, lastRound: nil, holdOffUntil: nil, ttl: ttl))
        #expect(LeaseHoldOff.mayTakeExpired(now: now, lastRound: now - .seconds(1), holdOffUntil: nil, ttl: ttl))
        let quick = now + .milliseconds(20)
        #expect(LeaseHoldOff.holdOff(after: now, finished: quick, lastRound: now - .seconds(1), ttl: ttl) == nil)
        #expect(LeaseHoldOff.holdOff(after: now, finished: quick, lastRound: nil, ttl: ttl) == nil)
    }

    @Test func aRoundAfterAGapLongerThanTheTTLTakesNoExpiredLeaseAndStartsAHoldOff() {
        let now = ContinuousClock.now
        let last = now - .seconds(5)  // a 5 s database outage
        #expect(!LeaseHoldOff.mayTakeExpired(now: now, lastRound: last, holdOffUntil: nil, ttl: ttl))
        let until = LeaseHoldOff.holdOff(after: now, finished: now, lastRound: last, ttl: ttl)
        #expect(until == now + .seconds(6))
        // The next rounds come a second apart again, but the hold-off lasts.
        #expect(!LeaseHoldOff.mayTakeExpired(now: now + .seconds(1), lastRound: now, holdOffUntil: until, ttl: ttl))
        #expect(
            LeaseHoldOff.mayTakeExpired(
                now: now + .seconds(7), lastRound: now + .seconds(6), holdOffUntil: until, ttl: ttl))
    }

    @Test func aRoundThatHungThroughAnOutageStartsAHoldOffToo() {
        // Started on time, a second after the previous one, but waited 5 s for a connection.
        let start = ContinuousClock.now
        let finished = start + .seconds(5)
        let until = LeaseHoldOff.holdOff(after: start, finished: finished, lastRound: start - .seconds(1), ttl: ttl)
        #expect(until == finished + .seconds(6))
    }
}
