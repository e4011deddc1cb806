import BadgeStore
import Testing

@testable import BadgeWorker

/// The decisions of a partition's delivery loop, driven directly: when it claims, when it records, how long it
/// waits, and that handed pushes go first.
@Suite("Delivery state machine")
struct DeliveryStateMachineTests {
    /// The monotonic clock's time the tests count from.
    private static let now = ContinuousClock.now

    private static func loop(
        recordDelay: Duration = .milliseconds(20), handedRecordSize: Int = 3
    ) -> DeliveryStateMachine {
        DeliveryStateMachine(idlePoll: .seconds(1), recordDelay: recordDelay, handedRecordSize: handedRecordSize)
    }

    /// A loop past its first claim (the one at the start), whose round did `first`.
    private static func afterFirstClaim(
        _ first: PushDispatcher.RoundResult = round(sent: []), recordDelay: Duration = .milliseconds(20),
        handedRecordSize: Int = 3
    ) -> DeliveryStateMachine {
        var loop = loop(recordDelay: recordDelay, handedRecordSize: handedRecordSize)
        _ = loop.next(seen())
        loop.claimed(first, ringsSeen: 0)
        return loop
    }

    private static func seen(
        rings: Int = 0, handed: Bool = false, closed: Bool = false, at now: ContinuousClock.Instant = now
    ) -> DeliveryStateMachine.Observation {
        DeliveryStateMachine.Observation(closed: closed, rings: rings, hasHanded: handed, now: now)
    }

    /// A round that sent `ids`, claimed at `claimedAt`; `retries` (outbox id, delay) are left to record.
    private static func round(
        sent ids: [Int64], moreDue: Bool = false, claimedAt: ContinuousClock.Instant = now,
        nextRetryAt: ContinuousClock.Instant? = nil, retries: [(Int64, Duration)] = []
    ) -> PushDispatcher.RoundResult {
        PushDispatcher.RoundResult(
            ids: ids, moreDue: moreDue, claimedAt: claimedAt, nextRetryAt: nextRetryAt,
            record: DeliveryRecord(sent: ids, retries: retries.map(retry)))
    }

    private static func retry(_ entry: (id: Int64, delay: Duration)) -> DeliveryRecord.Retry {
        DeliveryRecord.Retry(id: entry.id, delay: entry.delay, token: "t\(entry.id)", user: "u", badgeVersion: 1)
    }

    @Test func itClaimsAtTheStartThenRecordsAQuietRoundsOutcomesOnTheirOwnAfterTheRecordDelay() {
        var loop = Self.loop()
        #expect(loop.next(Self.seen()) == .claim(recording: DeliveryRecord()))
        loop.claimed(Self.round(sent: [1, 2]), ringsSeen: 0)
        // Nothing rings: the outcomes wait up to the record delay for a claim to take them along.
        #expect(loop.next(Self.seen()) == .wait(.milliseconds(20), ringsSeen: 0))
        #expect(loop.next(Self.seen()) == .record(DeliveryRecord(sent: [1, 2])))
        // Then the rest of the idle poll, and a claim when it ends without a ring.
        #expect(loop.next(Self.seen()) == .wait(.milliseconds(980), ringsSeen: 0))
        #expect(loop.next(Self.seen()) == .claim(recording: DeliveryRecord()))
    }

    @Test func aRingWithinTheRecordDelayMakesTheClaimRecordTheOutcomes() {
        var loop = Self.afterFirstClaim(Self.round(sent: [1]))
        #expect(loop.next(Self.seen()) == .wait(.milliseconds(20), ringsSeen: 0))
        #expect(loop.next(Self.seen(rings: 1)) == .claim(recording: DeliveryRecord(sent: [1])))
        // A ring the claim covered (counted just before it began) does not make it claim again.
        loop.claimed(Self.round(sent: []), ringsSeen: 1)
        #expect(loop.ringsSeen == 1)
        #expect(loop.next(Self.seen(rings: 1)) == .wait(.seconds(1), ringsSeen: 1))
    }

    @Test func withoutARecordDelayOutcomesAreRecordedAtOnceUnlessARingWaits() {
        var loop = Self.afterFirstClaim(Self.round(sent: [1]), recordDelay: .zero)
        #expect(loop.next(Self.seen()) == .record(DeliveryRecord(sent: [1])))
        #expect(loop.next(Self.seen()) == .wait(.seconds(1), ringsSeen: 0))

        var rung = Self.afterFirstClaim(Self.round(sent: [2]), recordDelay: .zero)
        #expect(rung.next(Self.seen(rings: 1)) == .claim(recording: DeliveryRecord(sent: [2])))
    }

    @Test func handedPushesGoBeforeAnyClaimEvenWithARingWaiting() {
        var loop = Self.loop()
        #expect(loop.next(Self.seen(rings: 3, handed: true)) == .sendHanded)
        loop.handedSent(Self.round(sent: [7]))
        #expect(loop.next(Self.seen(rings: 3)) == .claim(recording: DeliveryRecord(sent: [7])))
    }

    @Test func handedOutcomesGatherUntilTheirSizeAndAreThenRecordedAside() {
        var loop = Self.afterFirstClaim(handedRecordSize: 3)
        #expect(loop.next(Self.seen(handed: true)) == .sendHanded)
        loop.handedSent(Self.round(sent: [1, 2]))
        #expect(loop.next(Self.seen(handed: true)) == .sendHanded)
        loop.handedSent(Self.round(sent: [3]))
        #expect(loop.next(Self.seen(handed: true)) == .recordAside(DeliveryRecord(sent: [1, 2, 3])))
        #expect(loop.pending.isEmpty)
        // Only a handed round runs beside that record; anything else waits for it.
        #expect(DeliveryStateMachine.Action.sendHanded.runsBesideRecord)
        #expect(!DeliveryStateMachine.Action.wait(.zero, ringsSeen: 0).runsBesideRecord)
        #expect(!DeliveryStateMachine.Action.claim(recording: DeliveryRecord()).runsBesideRecord)
        #expect(loop.next(Self.seen(handed: true)) == .sendHanded)
    }

    @Test func handedOutcomesAreLeftToAClaimThatComesNext() {
        var loop = Self.afterFirstClaim(handedRecordSize: 1)
        #expect(loop.next(Self.seen(handed: true)) == .sendHanded)
        loop.handedSent(Self.round(sent: [4]))
        // Rung meanwhile: the claim records them itself.
        #expect(loop.next(Self.seen(rings: 1)) == .claim(recording: DeliveryRecord(sent: [4])))
    }

    @Test func handedOutcomesAreRecordedAsideWhenMoreHandedPushesKeepTheClaimWaiting() {
        var loop = Self.afterFirstClaim(handedRecordSize: 2)
        #expect(loop.next(Self.seen(rings: 1, handed: true)) == .sendHanded)
        loop.handedSent(Self.round(sent: [1, 2]))
        // A ring waits, but so do more handed pushes, which go first: the claim does not come next.
        #expect(loop.next(Self.seen(rings: 1, handed: true)) == .recordAside(DeliveryRecord(sent: [1, 2])))
        #expect(loop.next(Self.seen(rings: 1, handed: true)) == .sendHanded)
        loop.handedSent(Self.round(sent: [3]))
        #expect(loop.next(Self.seen(rings: 1)) == .claim(recording: DeliveryRecord(sent: [3])))
    }

    @Test func aFullRoundClaimsAgainAtOnce() {
        var loop = Self.afterFirstClaim(Self.round(sent: [1, 2], moreDue: true))
        #expect(loop.next(Self.seen()) == .claim(recording: DeliveryRecord(sent: [1, 2])))
    }

    @Test func aScheduledRetryShortensTheWaitAndIsClaimedWhenDue() {
        let due = Self.now + .milliseconds(300)
        var loop = Self.afterFirstClaim(Self.round(sent: [], nextRetryAt: due), recordDelay: .zero)
        #expect(loop.next(Self.seen()) == .wait(.milliseconds(300), ringsSeen: 0))
        // A wait that ends without a ring or a hand-over is the idle poll or the retry coming due: it claims.
        #expect(loop.next(Self.seen(at: Self.now + .milliseconds(100))) == .claim(recording: DeliveryRecord()))
        loop.claimed(Self.round(sent: [], nextRetryAt: due), ringsSeen: 0)
        // Not due yet: it waits only until then.
        #expect(loop.next(Self.seen(at: Self.now + .milliseconds(100))) == .wait(.milliseconds(200), ringsSeen: 0))
        _ = loop.next(Self.seen(rings: 1, at: Self.now + .milliseconds(150)))
        loop.claimed(Self.round(sent: []), ringsSeen: 1)
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

    /// Handed rounds' retries recorded aside: before it waits, the loop waits for that record, and the retry is due
    /// its delay after the record was seen written. One record aside at a time.
    @Test func retriesRecordedAsideAreAwaitedFromThatRecord() {
        var loop = Self.afterFirstClaim(recordDelay: .zero, handedRecordSize: 1)
        #expect(loop.next(Self.seen(handed: true)) == .sendHanded)
        loop.handedSent(Self.round(sent: [], retries: [(5, .milliseconds(400))]))
        let aside = DeliveryRecord(retries: [Self.retry((5, .milliseconds(400)))])
        #expect(loop.next(Self.seen(handed: true)) == .recordAside(aside))
        #expect(loop.next(Self.seen(handed: true)) == .sendHanded)
        loop.handedSent(Self.round(sent: [6]))
        // A second record aside waits until the loop knows the first is written.
        #expect(loop.next(Self.seen(handed: true)) == .awaitRecordAside)
        let written = Self.now + .milliseconds(10)
        loop.recordedAside(at: written)
        #expect(loop.nextRetryAt == written + .milliseconds(400))
        #expect(loop.next(Self.seen(handed: true, at: written)) == .recordAside(DeliveryRecord(sent: [6])))
        loop.recordedAside(at: written)

        // Quiet after a record aside with retries: it waits for that record before it decides how long to wait.
        var quiet = Self.afterFirstClaim(recordDelay: .zero, handedRecordSize: 1)
        #expect(quiet.next(Self.seen(handed: true)) == .sendHanded)
        quiet.handedSent(Self.round(sent: [], retries: [(7, .milliseconds(250))]))
        #expect(
            quiet.next(Self.seen(handed: true))
                == .recordAside(DeliveryRecord(retries: [Self.retry((7, .milliseconds(250)))])))
        #expect(quiet.next(Self.seen()) == .awaitRecordAside)
        #expect(!DeliveryStateMachine.Action.awaitRecordAside.runsBesideRecord)
        quiet.recordedAside(at: Self.now + .milliseconds(50))
        #expect(quiet.next(Self.seen(at: Self.now + .milliseconds(50))) == .wait(.milliseconds(250), ringsSeen: 0))
    }

    @Test func closingRecordsWhatIsLeftAndEnds() {
        var loop = Self.afterFirstClaim(Self.round(sent: [5]))
        #expect(loop.next(Self.seen()) == .wait(.milliseconds(20), ringsSeen: 0))
        #expect(loop.next(Self.seen(closed: true)) == .finish(DeliveryRecord(sent: [5])))

        var handed = Self.loop()
        #expect(handed.next(Self.seen(handed: true)) == .sendHanded)
        handed.handedSent(Self.round(sent: [6]))
        #expect(handed.next(Self.seen(handed: true, closed: true)) == .finish(DeliveryRecord(sent: [6])))
    }

    @Test func aFailedHandedRoundGivesBackTheOutcomesStillToRecord() {
        var loop = Self.loop(handedRecordSize: 10)
        #expect(loop.next(Self.seen(handed: true)) == .sendHanded)
        loop.handedSent(Self.round(sent: [1]))
        #expect(loop.next(Self.seen(handed: true)) == .sendHanded)
        #expect(loop.handedFailed() == DeliveryRecord(sent: [1]))
        #expect(loop.pending.isEmpty)
    }
}
