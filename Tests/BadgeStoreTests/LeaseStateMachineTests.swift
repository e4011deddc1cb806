import Testing

@testable import BadgeStore

/// The fleet's lease state machine, driven directly with lease rounds.
@Suite("Lease state machine")
struct LeaseStateMachineTests {
    private let ttl = Duration.seconds(3)

    private func lease(_ partition: Int, epoch: Int64 = 1) -> PartitionLease {
        PartitionLease(partition: partition, epoch: epoch, worker: "w1")
    }

    private func round(_ leases: [PartitionLease], target: Int) -> LeaseRound {
        LeaseRound(leases: leases, liveWorkers: 1, target: target)
    }

    @Test func itStartsWhatItHoldsUpToItsShareAndReleasesTheRest() {
        var manager = LeaseStateMachine(ttl: ttl)
        let now = ContinuousClock.now
        #expect(manager.request(now: now) == LeaseStateMachine.Request(releasing: [], takeExpired: true))
        let actions = manager.roundSucceeded(
            round([lease(0), lease(1), lease(2)], target: 2), confirmed: now, finished: now)
        #expect(
            actions == [
                .start(lease(0), waitsForEarlierClaims: false), .start(lease(1), waitsForEarlierClaims: false),
            ])
        #expect(manager.request(now: now).releasing == [2])
    }

    @Test func heldLeasesAreRenewedAndLostOnesStopAtOnce() {
        var manager = LeaseStateMachine(ttl: ttl)
        let now = ContinuousClock.now
        _ = manager.roundSucceeded(round([lease(0), lease(1)], target: 2), confirmed: now, finished: now)
        // Partition 1 moved on (a new epoch is someone else's, or the lease is simply gone).
        let actions = manager.roundSucceeded(
            round([lease(0), lease(1, epoch: 2)], target: 2), confirmed: now + .seconds(1),
            finished: now + .seconds(1))
        #expect(actions.first == .renew(partition: 0))
        #expect(actions.contains(.stop(partition: 1)))
        // Stopping once is enough; when its stages ended it is released.
        #expect(
            !manager.roundSucceeded(
                round([lease(0)], target: 2), confirmed: now + .seconds(2), finished: now + .seconds(2)
            ).contains(.stop(partition: 1)))
        manager.stopped(1)
        #expect(manager.request(now: now + .seconds(2)).releasing == [1])
    }

    @Test func aboveItsShareItGivesBackItsHighestPartitions() {
        var manager = LeaseStateMachine(ttl: ttl)
        let now = ContinuousClock.now
        let all = (0..<4).map { lease($0) }
        _ = manager.roundSucceeded(round(all, target: 4), confirmed: now, finished: now)
        // A second worker came: the share is 2.
        let actions = manager.roundSucceeded(
            round(all, target: 2), confirmed: now + .seconds(1), finished: now + .seconds(1))
        #expect(
            actions.filter { if case .stop = $0 { true } else { false } } == [.stop(partition: 3), .stop(partition: 2)])
    }

    @Test func afterMissingTheDatabaseItTakesNoExpiredLeaseAndNewPartitionsWaitForEarlierClaims() {
        var manager = LeaseStateMachine(ttl: ttl)
        let now = ContinuousClock.now
        _ = manager.roundSucceeded(round([], target: 2), confirmed: now, finished: now)
        // The next round starts 10 s later (an outage): more than a TTL.
        let late = now + .seconds(10)
        #expect(!manager.request(now: late).takeExpired)
        let actions = manager.roundSucceeded(round([lease(4)], target: 2), confirmed: late, finished: late)
        #expect(actions.first == .holdOff(gap: .seconds(10), roundTook: .zero))
        #expect(actions.contains(.start(lease(4), waitsForEarlierClaims: true)))
        #expect(!manager.request(now: late + .seconds(1)).takeExpired)
        // Regular rounds again: once two TTLs have passed, expired leases may be taken again.
        for step in [2, 4, 6] {
            let at = late + .seconds(step)
            _ = manager.roundSucceeded(round([lease(4)], target: 2), confirmed: at, finished: at)
        }
        #expect(manager.request(now: late + .milliseconds(6500)).takeExpired)
    }

    @Test func atShutdownEveryRunningPartitionStops() {
        var manager = LeaseStateMachine(ttl: ttl)
        let now = ContinuousClock.now
        _ = manager.roundSucceeded(round([lease(0), lease(1)], target: 2), confirmed: now, finished: now)
        #expect(manager.stopAll() == [.stop(partition: 0), .stop(partition: 1)])
        manager.stopped(0)
        manager.stopped(1)
        #expect(manager.isIdle)
        #expect(manager.toRelease == [0, 1])
    }

    @Test func roundsComeFastWhileTheFleetRebalancesAndEveryThirdOfTheTTLOtherwise() {
        var manager = LeaseStateMachine(ttl: ttl)
        let now = ContinuousClock.now
        // The first round acquires: rebalancing.
        _ = manager.roundSucceeded(round([lease(0), lease(1)], target: 2), confirmed: now, finished: now)
        #expect(manager.nextRoundDelay(now: now) == .milliseconds(250))
        // Nothing changes for two TTLs: back to a third of the TTL.
        for step in 1...7 {
            let at = now + .seconds(step)
            _ = manager.roundSucceeded(round([lease(0), lease(1)], target: 2), confirmed: at, finished: at)
        }
        #expect(manager.nextRoundDelay(now: now + .seconds(7)) == .seconds(1))
        // Another worker joins (the share drops to 1): give one back, fast.
        let later = now + .seconds(8)
        _ = manager.roundSucceeded(
            LeaseRound(leases: [lease(0), lease(1)], liveWorkers: 2, target: 1), confirmed: later, finished: later)
        #expect(manager.nextRoundDelay(now: later) == .milliseconds(250))
    }
}
