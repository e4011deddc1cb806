import BadgeStore
import Testing

@testable import BadgeWorker

/// The decisions of a partition's delivery loop, driven directly: when it claims, when it records, how long it
/// waits.
@Suite("Delivery state machine")
struct DeliveryStateMachineTests {
    /// The monotonic clock's time the tests count from.
    private static let now = ContinuousClock.now

    private static func loop(recordDelay: Duration = .milliseconds(20)) -> DeliveryStateMachine {
        DeliveryStateMachine(heldBackPoll: .seconds(1), recordDelay: recordDelay)
    }

    /// The loop looks ahead (after its claim's outcomes are recorded), and finds `ahead` at `now`.
    private static func lookAhead(
        _ loop: inout DeliveryStateMachine, finding ahead: OutboxAhead = OutboxAhead(retryIn: nil, heldBack: false),
        at now: ContinuousClock.Instant = now, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        #expect(loop.next(seen(at: now)) == .lookAhead, sourceLocation: sourceLocation)
        loop.lookedAhead(ahead, at: now)
    }

    /// A loop past its first claim (the one at the start), whose round did `first`.
    private static func afterFirstClaim(
        _ first: DeliveryRounds.RoundResult = round(sent: []), recordDelay: Duration = .milliseconds(20)
    ) -> DeliveryStateMachine {
        var loop = loop(recordDelay: recordDelay)
        _ = loop.next(seen())
        loop.claimed(first, ringsSeen: 0)
        return loop
    }

    private static func seen(
        rings: Int = 0, closed: Bool = false, at now: ContinuousClock.Instant = now
    ) -> DeliveryStateMachine.Observation {
        DeliveryStateMachine.Observation(closed: closed, rings: rings, now: now)
    }

    /// A round that sent `ids`, claimed at `claimedAt`; `retries` (outbox id, delay) are left to record.
    private static func round(
        sent ids: [Int64], moreDue: Bool = false, claimedAt: ContinuousClock.Instant = now,
        nextRetryAt: ContinuousClock.Instant? = nil, retries: [(Int64, Duration)] = [], ahead: OutboxAhead? = nil
    ) -> DeliveryRounds.RoundResult {
        DeliveryRounds.RoundResult(
            ids: ids, moreDue: moreDue, claimedAt: claimedAt, nextRetryAt: nextRetryAt,
            record: DeliveryRecord(sent: ids, retries: retries.map(retry)), ahead: ahead)
    }

    private static func retry(_ entry: (id: Int64, delay: Duration)) -> DeliveryRecord.Retry {
        DeliveryRecord.Retry(id: entry.id, delay: entry.delay)
    }

    @Test func itClaimsAtTheStartThenRecordsAQuietRoundsOutcomesOnTheirOwnAfterTheRecordDelay() {
        var loop = Self.loop()
        #expect(loop.next(Self.seen()) == .claim(recording: DeliveryRecord()))
        loop.claimed(Self.round(sent: [1, 2]), ringsSeen: 0)
        // Nothing rings: the outcomes wait up to the record delay for a claim to take them along.
        #expect(loop.next(Self.seen()) == .wait(.milliseconds(20), ringsSeen: 0))
        #expect(loop.next(Self.seen()) == .record(DeliveryRecord(sent: [1, 2])))
        // Then it looks ahead in the outbox; with nothing there, it waits for new work, with no time limit.
        Self.lookAhead(&loop)
        #expect(loop.next(Self.seen()) == .wait(nil, ringsSeen: 0))
        #expect(loop.next(Self.seen(at: Self.now + .seconds(3600))) == .wait(nil, ringsSeen: 0))
        #expect(loop.next(Self.seen(rings: 1)) == .claim(recording: DeliveryRecord()))
    }

    /// A retry the look-ahead finds (one a previous owner scheduled) is claimed when due; pushes held back (by an
    /// earlier push of their device in another partition, recorded by another worker) are looked at again every
    /// `heldBackPoll`, and only while there are such pushes.
    @Test func theLookAheadSetsWhenToClaimWithoutARing() {
        var retry = Self.afterFirstClaim()
        Self.lookAhead(&retry, finding: OutboxAhead(retryIn: .milliseconds(700), heldBack: false))
        #expect(retry.next(Self.seen()) == .wait(.milliseconds(700), ringsSeen: 0))
        #expect(retry.next(Self.seen(at: Self.now + .milliseconds(700))) == .claim(recording: DeliveryRecord()))

        var held = Self.afterFirstClaim()
        Self.lookAhead(&held, finding: OutboxAhead(retryIn: .seconds(5), heldBack: true))
        #expect(held.next(Self.seen()) == .wait(.seconds(1), ringsSeen: 0))
        let later = Self.now + .seconds(1)
        #expect(held.next(Self.seen(at: later)) == .claim(recording: DeliveryRecord()))
        held.claimed(Self.round(sent: [], claimedAt: later), ringsSeen: 0)
        // Nothing held back any more: only the retry is waited for.
        Self.lookAhead(&held, at: later)
        #expect(held.next(Self.seen(at: later)) == .wait(.seconds(4), ringsSeen: 0))

        // A retry due already, which the claim before did not take, is held back too: no claim at once, in a loop.
        var due = Self.afterFirstClaim()
        Self.lookAhead(&due, finding: OutboxAhead(retryIn: .zero, heldBack: false))
        #expect(due.next(Self.seen()) == .wait(.seconds(1), ringsSeen: 0))

        // A full round claims again at once, and looks ahead only after a claim that took everything it could.
        var full = Self.afterFirstClaim(Self.round(sent: [], moreDue: true))
        #expect(full.next(Self.seen()) == .claim(recording: DeliveryRecord()))
        full.claimed(Self.round(sent: []), ringsSeen: 0)
        Self.lookAhead(&full)
    }

    /// A claim that read what it left (`ClaimedPushes.ahead`) needs no look-ahead of its own unless pushes are held
    /// back: nothing left, it waits for new work; a retry left, until it is due.
    @Test func aClaimThatReadWhatItLeftSkipsTheLookAhead() {
        var quiet = Self.afterFirstClaim(Self.round(sent: [], ahead: OutboxAhead(retryIn: nil, heldBack: false)))
        #expect(quiet.looksAhead == false)
        #expect(quiet.next(Self.seen()) == .wait(nil, ringsSeen: 0))

        var retry = Self.afterFirstClaim(
            Self.round(sent: [], ahead: OutboxAhead(retryIn: .milliseconds(800), heldBack: false)))
        #expect(retry.next(Self.seen()) == .wait(.milliseconds(800), ringsSeen: 0))
        #expect(retry.next(Self.seen(at: Self.now + .milliseconds(800))) == .claim(recording: DeliveryRecord()))

        // Held back: the look-ahead runs, after the round's outcomes are recorded, to name the holders.
        var held = Self.afterFirstClaim(
            Self.round(sent: [1], ahead: OutboxAhead(retryIn: nil, heldBack: true)), recordDelay: .zero)
        #expect(held.next(Self.seen()) == .record(DeliveryRecord(sent: [1])))
        Self.lookAhead(&held)
    }

    @Test func aRingWithinTheRecordDelayMakesTheClaimRecordTheOutcomes() {
        var loop = Self.afterFirstClaim(Self.round(sent: [1]))
        #expect(loop.next(Self.seen()) == .wait(.milliseconds(20), ringsSeen: 0))
        #expect(loop.next(Self.seen(rings: 1)) == .claim(recording: DeliveryRecord(sent: [1])))
        // A ring the claim covered (counted just before it began) does not make it claim again.
        loop.claimed(Self.round(sent: []), ringsSeen: 1)
        #expect(loop.ringsSeen == 1)
        Self.lookAhead(&loop)
        #expect(loop.next(Self.seen(rings: 1)) == .wait(nil, ringsSeen: 1))
    }

    @Test func withoutARecordDelayOutcomesAreRecordedAtOnceUnlessARingWaits() {
        var loop = Self.afterFirstClaim(Self.round(sent: [1]), recordDelay: .zero)
        #expect(loop.next(Self.seen()) == .record(DeliveryRecord(sent: [1])))
        Self.lookAhead(&loop)
        #expect(loop.next(Self.seen()) == .wait(nil, ringsSeen: 0))

        var rung = Self.afterFirstClaim(Self.round(sent: [2]), recordDelay: .zero)
        #expect(rung.next(Self.seen(rings: 1)) == .claim(recording: DeliveryRecord(sent: [2])))
    }

    @Test func aFullRoundClaimsAgainAtOnce() {
        var loop = Self.afterFirstClaim(Self.round(sent: [1, 2], moreDue: true))
        #expect(loop.next(Self.seen()) == .claim(recording: DeliveryRecord(sent: [1, 2])))
    }

    @Test func aScheduledRetryShortensTheWaitAndIsClaimedWhenDue() {
        let due = Self.now + .milliseconds(300)
        var loop = Self.afterFirstClaim(Self.round(sent: [], nextRetryAt: due), recordDelay: .zero)
        Self.lookAhead(&loop)
        #expect(loop.next(Self.seen()) == .wait(.milliseconds(300), ringsSeen: 0))
        // A wait that ends early (without a ring) waits again for what is left.
        #expect(loop.next(Self.seen(at: Self.now + .milliseconds(100))) == .wait(.milliseconds(200), ringsSeen: 0))
        _ = loop.next(Self.seen(rings: 1, at: Self.now + .milliseconds(150)))
        loop.claimed(Self.round(sent: []), ringsSeen: 1)
        Self.lookAhead(&loop, at: Self.now + .milliseconds(150))
        #expect(loop.next(Self.seen(rings: 1, at: due)) == .claim(recording: DeliveryRecord()))
        #expect(loop.nextRetryAt == nil)
    }

    /// The store makes a retry due its delay after it writes the record, by the database's clock; the loop wakes
    /// that long after the write returned, on the monotonic clock: never before the database has it due, however
    /// long the record waited to be written.
    @Test func aRetryIsAwaitedFromWhenItsRecordWasWritten() {
        var loop = Self.afterFirstClaim(Self.round(sent: [1], retries: [(2, .milliseconds(300))]), recordDelay: .zero)
        let record = DeliveryRecord(sent: [1], retries: [Self.retry((2, .milliseconds(300)))])
        #expect(loop.next(Self.seen()) == .record(record))
        // Not written yet: no wake-up for it.
        #expect(loop.nextRetryAt == nil)
        let written = Self.now + .milliseconds(40)
        loop.recorded(at: written)
        #expect(loop.nextRetryAt == written + .milliseconds(300))
        Self.lookAhead(&loop, at: written)
        #expect(loop.next(Self.seen(at: written)) == .wait(.milliseconds(300), ringsSeen: 0))
        #expect(loop.next(Self.seen(at: written + .milliseconds(300))) == .claim(recording: DeliveryRecord()))

        // Recorded with the next claim: due its delay after that claim returned.
        var withClaim = Self.afterFirstClaim(Self.round(sent: [], retries: [(3, .seconds(2))]))
        #expect(
            withClaim.next(Self.seen(rings: 1))
                == .claim(recording: DeliveryRecord(retries: [Self.retry((3, .seconds(2)))])))
        let claimed = Self.now + .milliseconds(25)
        withClaim.claimed(Self.round(sent: [], claimedAt: claimed), ringsSeen: 1)
        #expect(withClaim.nextRetryAt == claimed + .seconds(2))
    }

    @Test func closingRecordsWhatIsLeftAndEnds() {
        var loop = Self.afterFirstClaim(Self.round(sent: [5]))
        #expect(loop.next(Self.seen()) == .wait(.milliseconds(20), ringsSeen: 0))
        #expect(loop.next(Self.seen(closed: true)) == .finish(DeliveryRecord(sent: [5])))
    }
}
