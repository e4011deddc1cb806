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

    @Test func handedPushesWakeTheLoopWithoutARingAndAreTakenOnceInOrder() async throws {
        let doorbell = Doorbell()
        func claimed(_ id: Int64) -> ClaimedPush {
            let push = PlannedPush(
                event: Event(
                    id: "e\(id)", type: .follow, recipient: "u", occurredAt: Timestamp(microsecondsSinceEpoch: id)),
                device: RegisteredDevice(token: "t\(id)", provider: .apns), kind: .badgeOnly,
                counts: Counts(unreadNotifications: 0, unseenNotifications: 0, unreadMessages: 0), badge: 0,
                badgeVersion: id, previews: true)
            return ClaimedPush(outbox: OutboxPush(id: id, push: push, claimedEpoch: 1), push: push)
        }
        let seen = doorbell.rings
        let clock = ContinuousClock()
        let start = clock.now
        async let waited: Void = doorbell.wait(upTo: .seconds(60), ringsSeen: seen)
        // Claimed by ingestion, nothing left to claim: handed, no ring.
        doorbell.hand([claimed(1), claimed(2)], claim: false)
        await waited
        #expect(clock.now - start < .seconds(30))
        #expect(doorbell.rings == seen)
        doorbell.hand([claimed(3)], claim: true)
        #expect(doorbell.rings == seen + 1)
        // A claim that took one of them (its hold ran out) sends it: it is no longer handed.
        doorbell.discardHanded([2])
        #expect(doorbell.takeHanded().map(\.id) == [1, 3])
        #expect(doorbell.takeHanded().isEmpty)
        #expect(!doorbell.hasHanded)
    }
}
