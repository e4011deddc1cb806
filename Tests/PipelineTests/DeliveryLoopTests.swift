import BadgeStore
import Testing

@testable import BadgeWorker

/// The decisions of a partition's delivery loop, driven directly: when it claims, when it records, how long it
/// waits, and that handed pushes go first.
@Suite("Delivery loop")
struct DeliveryLoopTests {
    private static let now: Int64 = 1_000_000_000_000

    private static func loop(recordDelay: Duration = .milliseconds(20), handedRecordSize: Int = 3) -> DeliveryLoop {
        DeliveryLoop(idlePoll: .seconds(1), recordDelay: recordDelay, handedRecordSize: handedRecordSize)
    }

    /// A loop past its first claim (the one at the start), whose round did `first`.
    private static func afterFirstClaim(
        _ first: PushDispatcher.RoundResult = round(sent: []), recordDelay: Duration = .milliseconds(20),
        handedRecordSize: Int = 3
    ) -> DeliveryLoop {
        var loop = loop(recordDelay: recordDelay, handedRecordSize: handedRecordSize)
        _ = loop.next(seen())
        loop.claimed(first, ringsSeen: 0)
        return loop
    }

    private static func seen(
        rings: Int = 0, handed: Bool = false, closed: Bool = false, at now: Int64 = now
    ) -> DeliveryLoop.Observation {
        DeliveryLoop.Observation(closed: closed, rings: rings, hasHanded: handed, now: now)
    }

    private static func round(
        sent ids: [Int64], moreDue: Bool = false, nextRetryAt: Int64? = nil
    ) -> PushDispatcher.RoundResult {
        PushDispatcher.RoundResult(
            ids: ids, moreDue: moreDue, nextRetryAt: nextRetryAt, record: DeliveryRecord(sent: ids))
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
        #expect(DeliveryLoop.Action.sendHanded.runsBesideRecord)
        #expect(!DeliveryLoop.Action.wait(.zero, ringsSeen: 0).runsBesideRecord)
        #expect(!DeliveryLoop.Action.claim(recording: DeliveryRecord()).runsBesideRecord)
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
        var loop = Self.afterFirstClaim(Self.round(sent: [], nextRetryAt: Self.now + 300_000), recordDelay: .zero)
        #expect(loop.next(Self.seen()) == .wait(.milliseconds(300), ringsSeen: 0))
        // A wait that ends without a ring or a hand-over is the idle poll or the retry coming due: it claims.
        #expect(loop.next(Self.seen(at: Self.now + 100_000)) == .claim(recording: DeliveryRecord()))
        loop.claimed(Self.round(sent: [], nextRetryAt: Self.now + 300_000), ringsSeen: 0)
        // Not due yet: it waits only until then.
        #expect(loop.next(Self.seen(at: Self.now + 100_000)) == .wait(.milliseconds(200), ringsSeen: 0))
        _ = loop.next(Self.seen(rings: 1, at: Self.now + 150_000))
        loop.claimed(Self.round(sent: []), ringsSeen: 1)
        #expect(loop.next(Self.seen(rings: 1, at: Self.now + 300_000)) == .claim(recording: DeliveryRecord()))
        #expect(loop.nextRetryAt == nil)
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
