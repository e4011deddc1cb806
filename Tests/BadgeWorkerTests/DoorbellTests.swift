import BadgeCore
import BadgeStore
import BadgeWire
import TestServices
import Testing

@testable import BadgeWorker

/// The wake-up of a partition's delivery loop (and of the lease loop): a ring wakes a waiter, so the partition
/// drains its outbox as soon as something was committed, and a wait with a limit (the next retry) ends at it.
///
/// Limits are timed on a clock the test moves: a wait that must end at once ends with the clock standing still (one
/// that did not would hang, and the suite's time limit fails it), and a wait that must last its limit is seen asleep
/// on the clock and ends when, and only when, the clock reaches it.
@Suite("Doorbell", .timeLimit(.minutes(1)))
struct DoorbellTests {
    @Test func aRingWakesAWaiterLongBeforeItsLimit() async throws {
        let clock = ManualClock()
        // Whether the waiter is already waiting or not, the ring is not lost.
        let racing = Doorbell(clock: clock)
        async let early: Void = racing.wait(upTo: .seconds(60))
        racing.ring()
        await early
        // Waiting for certain.
        let doorbell = Doorbell(clock: clock)
        let waiting = Task { await doorbell.wait(upTo: .seconds(60)) }
        try await Self.asleep(clock)
        doorbell.ring()
        await waiting.value
        #expect(clock.sleepers == 0, "the limit's sleep ended with the wait")
    }

    @Test func aRingBeforeTheWaitIsKeptForOneWaitOnly() async throws {
        let clock = ManualClock()
        let doorbell = Doorbell(clock: clock)
        doorbell.ring()
        doorbell.ring()
        let start = clock.now
        await doorbell.wait(upTo: .seconds(60))
        let second = Task {
            await doorbell.wait(upTo: .milliseconds(200))
            return clock.now
        }
        try await Self.asleep(clock)
        clock.advance(by: .milliseconds(200))
        #expect(await second.value == start + .milliseconds(200), "the second wait lasted its limit")
    }

    @Test func aClosedDoorbellNeverWaits() async throws {
        let doorbell = Doorbell(clock: ManualClock())
        doorbell.close()
        #expect(doorbell.isClosed)
        await doorbell.wait(upTo: .seconds(60))
        await doorbell.wait(upTo: .seconds(60))
    }

    @Test func ringsALoopHasSeenDoNotWakeItOnlyLaterOnesDo() async throws {
        let clock = ManualClock()
        let doorbell = Doorbell(clock: clock)
        doorbell.ring()
        // Seen before the loop's claim: that claim took what the ring was for.
        let seen = doorbell.rings
        #expect(seen == 1)
        let start = clock.now
        let first = Task {
            await doorbell.wait(upTo: .milliseconds(200), ringsSeen: seen)
            return clock.now
        }
        try await Self.asleep(clock)
        clock.advance(by: .milliseconds(200))
        #expect(await first.value == start + .milliseconds(200), "the ring seen did not end the wait")
        // A ring after the count was taken (during the claim, say) wakes it at once, whether it came before the
        // wait or during it.
        doorbell.ring()
        await doorbell.wait(upTo: .seconds(60), ringsSeen: seen)
        let now = doorbell.rings
        let later = Task { await doorbell.wait(upTo: .seconds(60), ringsSeen: now) }
        try await Self.asleep(clock)
        doorbell.ring()
        await later.value
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
        let clock = ManualClock()
        let doorbell = Doorbell(clock: clock)
        let limit = Duration.milliseconds(300)
        var start = clock.now
        let waited = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            await doorbell.wait(upTo: limit)
            return clock.now
        }
        try await Self.asleep(clock)
        clock.advance(by: limit)
        #expect(await waited.value == start + limit, "cancelled before it began, the wait lasted its limit")
        // Cancelled while it waits (or just before): the wait still lasts its limit.
        start = clock.now
        let cancelledLater = Task {
            await doorbell.wait(upTo: limit)
            return clock.now
        }
        cancelledLater.cancel()
        try await Self.asleep(clock)
        clock.advance(by: limit)
        #expect(await cancelledLater.value == start + limit, "cancelled as it waited, the wait lasted its limit")
        // Ringing on cancellation, before the wait and during it: it ends with the clock standing still.
        let rung = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            await doorbell.wait(upTo: .seconds(60), ringOnCancel: true)
        }
        await rung.value
        let during = Task { await doorbell.wait(upTo: .seconds(60), ringOnCancel: true) }
        during.cancel()
        await during.value
    }

    /// Returns once a wait sleeps on `clock`.
    private static func asleep(_ clock: ManualClock) async throws {
        try await eventually("a wait asleep on its limit", timeout: .seconds(10), every: .milliseconds(5)) {
            clock.sleepers == 1
        }
    }
}
