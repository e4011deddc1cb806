import BadgeCore
import BadgeStore
import BadgeWire
import Testing

@testable import BadgeWorker

/// The wake-up of a partition's delivery loop (and of the lease loop): a ring wakes a waiter, so the partition
/// drains its outbox as soon as something was committed, and on every lease round even when no events come.
@Suite("Doorbell")
struct DoorbellTests {
    @Test func aRingWakesAWaiterLongBeforeItsLimit() async throws {
        let doorbell = Doorbell()
        let clock = ContinuousClock()
        let start = clock.now
        async let waited: Void = doorbell.wait(upTo: .seconds(60))
        // Whether the waiter is already waiting or not, the ring is not lost.
        doorbell.ring()
        await waited
        #expect(clock.now - start < .seconds(30))
    }

    @Test func aRingBeforeTheWaitIsKeptForOneWaitOnly() async throws {
        let doorbell = Doorbell()
        doorbell.ring()
        doorbell.ring()
        let clock = ContinuousClock()
        var start = clock.now
        await doorbell.wait(upTo: .seconds(60))
        #expect(clock.now - start < .seconds(30))
        start = clock.now
        await doorbell.wait(upTo: .milliseconds(200))
        #expect(clock.now - start >= .milliseconds(200))
    }

    @Test func aClosedDoorbellNeverWaits() async throws {
        let doorbell = Doorbell()
        doorbell.close()
        #expect(doorbell.isClosed)
        let clock = ContinuousClock()
        let start = clock.now
        await doorbell.wait(upTo: .seconds(60))
        await doorbell.wait(upTo: .seconds(60))
        #expect(clock.now - start < .seconds(30))
    }

    @Test func ringsALoopHasSeenDoNotWakeItOnlyLaterOnesDo() async throws {
        let doorbell = Doorbell()
        doorbell.ring()
        // Seen before the loop's claim: that claim took what the ring was for.
        let seen = doorbell.rings
        #expect(seen == 1)
        let clock = ContinuousClock()
        var start = clock.now
        await doorbell.wait(upTo: .milliseconds(200), ringsSeen: seen)
        #expect(clock.now - start >= .milliseconds(200))
        // A ring after the count was taken (during the claim, say) wakes it at once, whether it came before the
        // wait or during it.
        doorbell.ring()
        start = clock.now
        await doorbell.wait(upTo: .seconds(60), ringsSeen: seen)
        #expect(clock.now - start < .seconds(30))
        let now = doorbell.rings
        async let waited: Void = doorbell.wait(upTo: .seconds(60), ringsSeen: now)
        doorbell.ring()
        await waited
        #expect(clock.now - start < .seconds(30))
    }

    /// A wait without a limit (a quiet partition with nothing scheduled) ends only with a ring after the rings seen,
    /// or with the close.
    @Test func aWaitWithoutALimitEndsOnALaterRingOrTheClose() async throws {
        let doorbell = Doorbell()
        doorbell.ring()
        let seen = doorbell.rings
        async let rung: Void = doorbell.wait(upTo: nil, ringsSeen: seen)
        doorbell.ring()
        await rung
        #expect(doorbell.rings == seen + 1)
        async let closed: Void = doorbell.wait(upTo: nil, ringsSeen: doorbell.rings)
        doorbell.close()
        await closed
        #expect(doorbell.isClosed)
    }

    /// A cancelled task's wait still ends only on a ring, the close or its limit (a cancelled delivery loop with a
    /// retry ahead waits for it instead of spinning); a wait that rings on cancellation ends at once.
    @Test func aCancelledTaskWaitsForItsLimitUnlessItRingsOnCancel() async throws {
        let doorbell = Doorbell()
        let limit = Duration.milliseconds(300)
        let waited = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            let clock = ContinuousClock()
            let start = clock.now
            await doorbell.wait(upTo: limit)
            return clock.now - start
        }
        #expect(await waited.value >= limit)
        // Cancelled while it waits (or just before): the wait still lasts its limit.
        let cancelledLater = Task {
            let clock = ContinuousClock()
            let start = clock.now
            await doorbell.wait(upTo: limit)
            return clock.now - start
        }
        cancelledLater.cancel()
        #expect(await cancelledLater.value >= limit)
        let rung = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            let clock = ContinuousClock()
            let start = clock.now
            await doorbell.wait(upTo: .seconds(60), ringOnCancel: true)
            return clock.now - start
        }
        #expect(await rung.value < .seconds(30))
        // Cancelled during the wait, not before it.
        let clock = ContinuousClock()
        let start = clock.now
        let during = Task { await doorbell.wait(upTo: .seconds(60), ringOnCancel: true) }
        during.cancel()
        await during.value
        #expect(clock.now - start < .seconds(30))
    }
}
