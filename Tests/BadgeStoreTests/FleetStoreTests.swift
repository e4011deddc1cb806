import BadgeCore
import BadgeWire
import Foundation
import NIOPosix
import TestServices
import Testing

@_spi(Testing) @testable import BadgeStore

/// The store's side of fleets: partition leases, fencing of a worker that lost its lease, and the per-device push
/// guard that keeps `badge_version` monotonic on every device whatever the workers do.
@Suite("Fleet store")
struct FleetStoreTests {
    /// A transaction's code runs on its connection's event loop. While every loop of the pool's group is held up (as
    /// by a batch of large events building its statements on a loaded machine), a lease round still runs at once:
    /// it has a loop of its own. (On the shared loops it waited for them, and its own transaction sat idle past the
    /// server's idle-in-transaction timeout: leases of healthy workers expired and were taken over.)
    @Test func aLeaseRoundDoesNotWaitForTheLoopsOfBatchesAndClaims() async throws {
        try await withStore(.postgres) { store in
            _ = try await store.leaseRound(worker: "w1", partitions: 8, ttlMilliseconds: 60_000, releasing: [])
            let hold = Duration.seconds(3)
            let held = MultiThreadedEventLoopGroup.singleton.makeIterator().map { loop in
                loop.submit { Thread.sleep(forTimeInterval: 3) }
            }
            let clock = ContinuousClock()
            let start = clock.now
            let round = try await store.leaseRound(
                worker: "w1", partitions: 8, ttlMilliseconds: 60_000, releasing: [])
            let took = clock.now - start
            for future in held { try await future.get() }
            #expect(round.leases.count == 8)
            #expect(took < hold / 3, "the lease round took \(took) while the shared loops were held for \(hold)")
        }
    }

    @Test(arguments: Backend.allCases)
    func leasesAreSharedFairlyAndReleasedPartitionsMoveToTheOtherWorker(backend: Backend) async throws {
        try await withStore(backend) { store in
            let alone = try await store.leaseRound(
                worker: "w1", partitions: 8, ttlMilliseconds: 60_000, releasing: [])
            #expect(alone.liveWorkers == 1)
            #expect(alone.target == 8)
            #expect(alone.leases.map(\.partition) == Array(0..<8))

            // A second worker arrives: nothing is free yet, but its fair share is now 4.
            let newcomer = try await store.leaseRound(
                worker: "w2", partitions: 8, ttlMilliseconds: 60_000, releasing: [])
            #expect(newcomer.liveWorkers == 2)
            #expect(newcomer.target == 4)
            #expect(newcomer.leases.isEmpty)

            // The first gives back what is above its share; the second takes it, each partition at a new epoch.
            let shrunk = try await store.leaseRound(
                worker: "w1", partitions: 8, ttlMilliseconds: 60_000, releasing: [4, 5, 6, 7])
            #expect(shrunk.leases.map(\.partition) == [0, 1, 2, 3])
            let grown = try await store.leaseRound(
                worker: "w2", partitions: 8, ttlMilliseconds: 60_000, releasing: [])
            #expect(grown.leases.map(\.partition) == [4, 5, 6, 7])
            for lease in grown.leases {
                let before = try #require(alone.leases.first { $0.partition == lease.partition })
                #expect(lease.epoch > before.epoch)
            }

            // Renewing keeps the same epochs.
            let renewed = try await store.leaseRound(
                worker: "w2", partitions: 8, ttlMilliseconds: 60_000, releasing: [])
            #expect(renewed.leases == grown.leases)
        }
    }

    @Test(arguments: Backend.allCases)
    func aLeaseRenewsAloneOnlyWhileItsOwnerStillHoldsIt(backend: Backend) async throws {
        try await withStore(backend) { store in
            let first = try await store.leaseRound(worker: "w1", partitions: 2, ttlMilliseconds: 1500, releasing: [])
            #expect(first.leases.count == 2)
            let held = try #require(first.leases.first)
            let expiring = try #require(first.leases.last)
            // Renewed in time, one lease lasts a full TTL again; the other runs out.
            #expect(try await store.renewLease(held, ttlMilliseconds: 60_000))
            try await Task.sleep(for: .milliseconds(1600))
            // Run out but taken by nobody (a database outage longer than the TTL): its owner renews it.
            #expect(try await store.renewLease(expiring, ttlMilliseconds: 1500))
            #expect(try await store.renewLease(held, ttlMilliseconds: 60_000))
            try await Task.sleep(for: .milliseconds(1600))

            // Another worker takes the expired one over: renewing the old epoch fails, even with the same owner name.
            let taken = try #require(
                try await store.leaseRound(worker: "w2", partitions: 2, ttlMilliseconds: 60_000, releasing: [])
                    .leases.first)
            #expect(taken.partition == expiring.partition)
            #expect(try await !store.renewLease(expiring, ttlMilliseconds: 60_000))
            var sameName = taken
            sameName.epoch = expiring.epoch
            #expect(try await !store.renewLease(sameName, ttlMilliseconds: 60_000))
            #expect(try await store.renewLease(taken, ttlMilliseconds: 60_000))
            // The renewed lease is still held at the next round, at the same epoch.
            let again = try await store.leaseRound(worker: "w1", partitions: 2, ttlMilliseconds: 60_000, releasing: [])
            #expect(again.leases == [held])
        }
    }

    /// A database outage longer than the TTL: every lease ran out and nobody could take one over. The owner's batch
    /// still commits under it, and its next round renews it at the same epoch: the partition and the messages it
    /// holds stay where they are.
    @Test(arguments: Backend.allCases)
    func anExpiredLeaseNobodyTookStillCommits(backend: Backend) async throws {
        try await withStore(backend) { store in
            let lease = try #require(
                try await store.leaseRound(worker: "w1", partitions: 1, ttlMilliseconds: 1, releasing: []).leases.first)
            try await Task.sleep(for: .milliseconds(20))
            _ = try await store.apply(
                [register("d1", token: tokenA), follow("n1", at: 1)], policy: .unseen,
                context: ApplyContext(partition: 0, lease: lease))
            #expect(try await store.snapshot(user: "u-alice").badgeVersion == 1)
            let renewed = try await store.leaseRound(
                worker: "w1", partitions: 1, ttlMilliseconds: 60_000, releasing: [])
            #expect(renewed.leases == [lease])
        }
    }

    @Test(arguments: Backend.allCases)
    func aWorkerWhoseLeaseWasTakenOverCannotCommit(backend: Backend) async throws {
        try await withStore(backend) { store in
            let stale = try await onlyLease(of: store)
            _ = try await store.apply(
                [register("d1", token: tokenA)], policy: .unseen, context: ApplyContext(partition: 0, lease: stale))
            // w1's last renewal is about to run out and it freezes; w2 takes the partition over.
            let last = try await store.leaseRound(worker: "w1", partitions: 1, ttlMilliseconds: 1, releasing: [])
            #expect(last.leases == [stale])
            let current = try await eventuallyValue(
                "w2 takes the partition over", timeout: .seconds(5), every: .milliseconds(5)
            ) {
                try await store.leaseRound(worker: "w2", partitions: 1, ttlMilliseconds: 60_000, releasing: []).leases
                    .first
            }
            #expect(current.epoch > stale.epoch)

            // The zombie wakes up: its batch fails as a whole and changes nothing.
            await #expect {
                _ = try await store.apply(
                    [follow("n1", at: 1)], policy: .unseen, context: ApplyContext(partition: 0, lease: stale))
            } throws: { error in
                (error as? StoreError)?.code == .leaseLost && (error as? StoreError)?.transient == false
            }
            #expect(try await store.snapshot(user: "u-alice").badgeVersion == 0)
            // Nor can it send what the partition's outbox holds: that is the new owner's now.
            let registered = try #require(try await store.pendingPushes(limit: 10, partition: 0).first)
            await #expect {
                _ = try await claimDue(store, partition: 0, lease: stale)
            } throws: { error in
                (error as? StoreError)?.code == .leaseLost
            }
            #expect(registered.claimedEpoch == nil)
            #expect(try await claimDue(store, partition: 0, lease: current).pushes.map(\.outbox.id) == [registered.id])
            // The claim is marked with the claimer's epoch, for whoever owns the partition next.
            let claimed = try await store.pendingPushes(limit: 10, partition: 0).first { $0.id == registered.id }
            #expect(claimed?.claimedEpoch == current.epoch)

            // The new owner commits the same event.
            _ = try await store.apply(
                [follow("n1", at: 1)], policy: .unseen, context: ApplyContext(partition: 0, lease: current))
            #expect(try await store.snapshot(user: "u-alice").badgeVersion == 1)
        }
    }

    @Test(arguments: Backend.allCases)
    func batchesOfSeveralPartitionsShareOneTransactionAsIfAppliedOneByOne(backend: Backend) async throws {
        try await withStore(backend) { store in
            let round = try await store.leaseRound(
                worker: "w1", partitions: 2, ttlMilliseconds: 60_000, releasing: [])
            #expect(round.leases.map(\.partition) == [0, 1])
            let (first, second) = (round.leases[0], round.leases[1])
            let results = try await store.apply(
                [
                    ApplyBatch(
                        events: [register("d1", token: tokenA), follow("n1", at: 1)],
                        context: ApplyContext(partition: 0, lease: first)),
                    ApplyBatch(
                        events: [
                            register("d2", token: tokenB, for: "u-carol"), follow("n2", at: 2, to: "u-carol"),
                            follow("n2", at: 2, to: "u-carol"),
                        ],
                        context: ApplyContext(partition: 1, lease: second)),
                ], policy: .unseen)
            // Each batch's results, as its own transaction would have given them.
            #expect(results.map { $0.map(\.event.id) } == [["d1", "n1"], ["d2", "n2", "n2"]])
            #expect(results[1].map(\.duplicate) == [false, false, true])
            #expect(results[0][1].pushes.map(\.push.token) == [tokenA])
            #expect(results[1][1].pushes.map(\.push.token) == [tokenB])
            // Each push is in its own batch's partition.
            let inFirst = try await store.pendingPushes(limit: 10, partition: 0)
            let inSecond = try await store.pendingPushes(limit: 10, partition: 1)
            #expect(!inFirst.isEmpty && inFirst.allSatisfy { $0.push.token == tokenA })
            #expect(!inSecond.isEmpty && inSecond.allSatisfy { $0.push.token == tokenB })
            #expect(inFirst.contains { $0.push.eventID == "n1" } && inSecond.contains { $0.push.eventID == "n2" })
            #expect(try await store.snapshot(user: "u-alice").counts.unseenNotifications == 1)
            #expect(try await store.snapshot(user: "u-carol").counts.unseenNotifications == 1)

            // One of the leases is gone: the shared transaction fails as a whole, and the other batch changes
            // nothing either.
            _ = try await store.leaseRound(
                worker: "w1", partitions: 2, ttlMilliseconds: 60_000, releasing: [1])
            let before = try await store.snapshot(user: "u-alice").badgeVersion
            await #expect {
                _ = try await store.apply(
                    [
                        ApplyBatch(events: [follow("n3", at: 3)], context: ApplyContext(partition: 0, lease: first)),
                        ApplyBatch(
                            events: [follow("n4", at: 4, to: "u-carol")],
                            context: ApplyContext(partition: 1, lease: second)),
                    ], policy: .unseen)
            } throws: { error in
                (error as? StoreError)?.code == .leaseLost
            }
            #expect(try await store.snapshot(user: "u-alice").badgeVersion == before)
            // The batch whose lease is still held commits on its own.
            let alone = try await store.apply(
                [ApplyBatch(events: [follow("n3", at: 3)], context: ApplyContext(partition: 0, lease: first))],
                policy: .unseen)
            #expect(alone.first?.first?.duplicate == false)
            #expect(try await store.snapshot(user: "u-alice").counts.unseenNotifications == 2)
        }
    }

    @Test(arguments: Backend.allCases)
    func thePushGuardNeverLetsADeviceGoBackAndNeverDropsAnAlert(backend: Backend) async throws {
        try await withStore(backend) { store in
            _ = try await store.apply(
                [register("d1", token: tokenA), follow("n1", at: 1), follow("n2", at: 2)], policy: .unseen)
            let outbox = try await store.pendingPushes(limit: 10)
            #expect(outbox.map(\.push.badgeVersion) == [0, 1, 2])
            let (alert1, alert2) = (outbox[1], outbox[2])

            // The newest went out first (a zombie or a second worker raced ahead) and was recorded as sent.
            try await claimedElsewhere(store, token: tokenA, version: alert2.push.badgeVersion)
            try await store.recordDeliveries(DeliveryRecord(sent: [alert2.id]))

            // The older alert is not dropped: it goes out with the current badge at a new version. The badge-only
            // push before it is superseded, and what was recorded as sent is not sent again.
            let claimed = try await claimDue(store, partition: nil)
            #expect(claimed.pushes.map(\.outbox.id) == [alert1.id])
            let rebuilt = try #require(claimed.pushes.first?.push)
            #expect(rebuilt.eventID == "n1")
            #expect(rebuilt.kind == alert1.push.kind)
            #expect(rebuilt.badgeVersion == 3)
            #expect(rebuilt.badge == 2)
            #expect(rebuilt.counts == Counts(unreadNotifications: 2, unseenNotifications: 2))
            #expect(try await store.snapshot(user: "u-alice").badgeVersion == 3)
            // The superseded badge-only push leaves with the round's record, which moves the device's version.
            #expect(claimed.dropped == [outbox[0].id])
            #expect(try await pushedVersion(store, tokenA) == 2)
            try await store.recordDeliveries(.sentAll(claimed))
            #expect(try await pushedVersion(store, tokenA) == 3)
            #expect(try await store.pendingPushes(limit: 10).isEmpty)

            // The next event gets a version above the rebuilt push's.
            let next = try await store.apply([follow("n3", at: 3)], policy: .unseen)
            #expect(pushes(next).map(\.badgeVersion) == [4])

            // Once the token belongs to someone else, nothing of the old owner reaches it; the new owner's
            // registration push does.
            _ = try await store.apply([register("d2", token: tokenA, for: "u-carol")], policy: .unseen)
            let moved = try await claimDue(store, partition: nil)
            #expect(moved.pushes.map(\.push.recipient) == ["u-carol"])
            try await store.recordDeliveries(.sentAll(moved))
            #expect(try await store.pendingPushes(limit: 10).isEmpty)
        }
    }

    @Test(arguments: Backend.allCases)
    func aBadgeRefreshGoesIntoThePartitionsOutboxAtAFreshVersionWithTheCurrentBadge(backend: Backend) async throws {
        try await withStore(backend) { store in
            _ = try await store.apply(
                [register("d1", token: tokenA), follow("n1", at: 1), follow("n2", at: 2)], policy: .unseen,
                context: ApplyContext(partition: 5))
            let outbox = try await store.pendingPushes(limit: 10, partition: 5)
            let sent = try await claimDue(store, partition: 5)
            #expect(sent.pushes.map(\.push.badgeVersion) == [1, 2])
            try await store.recordDeliveries(.sentAll(sent))
            let late = outbox[1].push  // the first alert, badge 1, landed after the second (badge 2)

            #expect(try await store.refreshBadge(after: late, partition: 5, policy: .unseen))
            let refresh = try #require(try await store.pendingPushes(limit: 10, partition: 5).first)
            #expect(refresh.push.kind == .badgeOnly)
            #expect(refresh.push.token == tokenA)
            #expect(refresh.push.badge == 2)
            #expect(refresh.push.counts == Counts(unreadNotifications: 2, unseenNotifications: 2))
            #expect(refresh.push.badgeVersion == 3)
            #expect(try await store.snapshot(user: "u-alice").badgeVersion == 3)
            // It goes out like any push: newer than anything the device got.
            #expect(try await claimDue(store, partition: 5).pushes.map(\.push) == [refresh.push])

            // A token that moved to another user gets nothing of the old owner.
            _ = try await store.apply([register("d2", token: tokenA, for: "u-carol")], policy: .unseen)
            #expect(try await !store.refreshBadge(after: late, partition: 5, policy: .unseen))
            #expect(try await store.snapshot(user: "u-alice").badgeVersion == 3)
        }
    }

    @Test(arguments: Backend.allCases)
    func aWorkerHoldingOffTakesFreePartitionsButNotExpiredOnes(backend: Backend) async throws {
        try await withStore(backend) { store in
            // A TTL of 200 ms: a round forgets workers unseen for 20 TTLs, so a shorter one (1 ms) let w1's own round
            // forget w1 when its statements were more than 20 ms apart, on a loaded machine.
            let first = try await store.leaseRound(worker: "w1", partitions: 2, ttlMilliseconds: 200, releasing: [])
            #expect(first.leases.map(\.partition) == [0, 1])
            // Both of w1's leases expire (as during a database outage), by the database's clock. A third partition
            // appears, never leased.
            let database = store.sqlBackend.database
            try await eventually("w1's leases expired", every: .milliseconds(50)) {
                try await database.transaction { sql in
                    try await sql.query(
                        "SELECT COUNT(*) AS n FROM partition_leases WHERE owner = 'w1' AND expires_at <= "
                            + FleetQueries.now(sql.dialect), []
                    ).first?["n"].int64 == 2
                }
            }
            let holdingOff = try await store.leaseRound(
                worker: "w2", partitions: 3, ttlMilliseconds: 60_000, releasing: [], takeExpired: false)
            #expect(holdingOff.target == 2)
            #expect(holdingOff.leases.map(\.partition) == [2])
            // Once the hold-off is over, an expired one goes too.
            let after = try await store.leaseRound(
                worker: "w2", partitions: 3, ttlMilliseconds: 60_000, releasing: [], takeExpired: true)
            #expect(after.leases.count == 2)
            #expect(after.leases.contains { $0.partition == 2 })
        }
    }

    @Test(arguments: Backend.allCases)
    func anUnregisteredDeviceStillNeverGetsAnOlderVersionThanItGot(backend: Backend) async throws {
        try await withStore(backend) { store in
            _ = try await store.apply(
                [register("d1", token: tokenA), follow("n1", at: 1), follow("n2", at: 2)], policy: .unseen)
            let outbox = try await store.pendingPushes(limit: 10)
            let (alert1, alert2) = (outbox[1], outbox[2])
            // The newer alert went out first.
            try await claimedElsewhere(store, token: tokenA, version: alert2.push.badgeVersion)
            try await store.recordDeliveries(DeliveryRecord(sent: [alert2.id]))
            // The device is unregistered; the older alert, planned before, is taken up only now (a takeover).
            let unregister = Event(
                id: "u1", type: .deviceUnregistered, recipient: "u-alice", occurredAt: at(3),
                device: DeviceInfo(token: tokenA))
            _ = try await store.apply([unregister], policy: .unseen)
            let late = try #require(
                try await claimDue(store, partition: nil).pushes.first { $0.outbox.id == alert1.id }?.push)
            #expect(late.eventID == "n1")
            #expect(late.badgeVersion > alert2.push.badgeVersion)
            // And it gets nothing planned after the unregistration.
            _ = try await store.apply([follow("n3", at: 4)], policy: .unseen)
            #expect(try await store.pendingPushes(limit: 10).allSatisfy { $0.push.eventID != "n3" })
        }
    }
    /// A round claimed under a lease, the same on both backends: the claim sends in order and coalesces, the push
    /// guard rebuilds a stale alert and drops what a token that moved must not get, and each device's
    /// `pushed_version` moves with the round's record, to what went out.
    @Test(arguments: Backend.allCases)
    func aRoundUnderALeaseSendsInOrderCoalescesAndLetsNoDeviceGoBack(backend: Backend) async throws {
        try await withStore(backend) { store in
            let lease = try await onlyLease(of: store)
            let context = ApplyContext(partition: 0, lease: lease)
            func claim(recording: DeliveryRecord = DeliveryRecord()) async throws -> ClaimedPushes {
                try await store.claimPushes(
                    partition: 0, limit: 100, policy: .unseen,
                    lease: lease, skipClaimedBefore: nil, recording: recording)
            }

            // The usual round: each registration's badge-only push is followed by an alert to the same device, so
            // it is coalesced (and removed); the alerts go in order, and each device's version moves to its last.
            _ = try await store.apply(
                [
                    register("d1", token: tokenA), follow("n1", at: 1), follow("n2", at: 2),
                    register("d2", token: tokenB, for: "u-carol"), follow("n3", at: 3, to: "u-carol"),
                ], policy: .unseen, context: context)
            let first = try await claim()
            #expect(first.pushes.map(\.push.eventID) == ["n1", "n2", "n3"])
            #expect(first.pushes.map(\.push.badgeVersion) == [1, 2, 1])
            #expect(first.dropped.count == 2)
            #expect(try await pushedVersion(store, tokenA) == -1)

            // Recorded with the next claim, which finds nothing due: the rows leave, the versions move.
            let second = try await claim(recording: .sentAll(first))
            #expect(second.pushes.isEmpty)
            #expect(try await store.pendingPushes(limit: 10, partition: 0).isEmpty)
            #expect(try await pushedVersion(store, tokenA) == 2)
            #expect(try await pushedVersion(store, tokenB) == 1)

            // A newer alert went out first (a zombie raced ahead): the older one and the one behind it are stale,
            // so the round is claimed in a transaction and both alerts are rebuilt at fresh versions, never dropped.
            _ = try await store.apply([follow("n4", at: 4), follow("n5", at: 5)], policy: .unseen, context: context)
            let planned = try await store.pendingPushes(limit: 10, partition: 0)
            #expect(planned.map(\.push.badgeVersion) == [3, 4])
            try await claimedElsewhere(store, token: tokenA, version: planned[1].push.badgeVersion)
            let stale = try await claim()
            #expect(stale.pushes.map(\.push.eventID) == ["n4", "n5"])
            #expect(stale.pushes.map(\.push.badgeVersion) == [5, 6])
            #expect(try await store.snapshot(user: "u-alice").badgeVersion == 6)
            // Rewritten in the outbox: a crash before the record sends the same versions again.
            #expect(try await store.pendingPushes(limit: 10, partition: 0).map(\.push.badgeVersion) == [5, 6])
            _ = try await claim(recording: .sentAll(stale))
            #expect(try await pushedVersion(store, tokenA) == 6)

            // The token moves to carol before alice's next alert goes: nothing of alice reaches it, carol's
            // registration push does.
            _ = try await store.apply([follow("n6", at: 6)], policy: .unseen, context: context)
            _ = try await store.apply(
                [register("d3", token: tokenA, for: "u-carol", at: 7)], policy: .unseen, context: context)
            let moved = try await claim()
            #expect(moved.pushes.map(\.push.recipient) == ["u-carol"])
            #expect(moved.pushes.map(\.push.kind) == [.badgeOnly])
        }
    }

    /// A backlog that grew after the claim's plan was made (PostgreSQL): the connections cache generic plans, and a
    /// plan made while the outbox was nearly empty used to run the claim's "nothing of this device waits before
    /// it" check as a join that read the whole outbox again for every row it looked at. After a worker was frozen
    /// for 9 s (the fleet suite's SIGSTOP run), its partitions' claims over a backlog of about 2,000 rows ran past
    /// the statement timeout (9 s) again and again, and their pushes waited 40 s or more. The claim must take its
    /// rows with work in proportion to what it reads, whatever the plan was made on.
    @Test func aClaimOverABacklogThatGrewAfterItsPlanWasMadeStillCompletes() async throws {
        try await withStore(.postgres) { store in
            let lease = try await onlyLease(of: store)
            let context = ApplyContext(partition: 0, lease: lease)
            func claim(limit: Int) async throws -> ClaimedPushes {
                try await store.claimPushes(
                    partition: 0, limit: limit, policy: .unseen,
                    lease: lease, skipClaimedBefore: nil, recording: DeliveryRecord())
            }
            let users = (0..<40).map { "u-\($0)" }
            _ = try await store.apply(
                users.enumerated().map { index, user in
                    register("d-\(user)", token: String(format: "%032x", index + 1), for: user)
                }, policy: .unseen, context: context)
            let registrations = try await claim(limit: 100)
            #expect(registrations.pushes.count == users.count)
            try await store.recordDeliveries(.sentAll(registrations))
            // As autovacuum does when it finds the outbox drained: the statistics say it is empty. Statements are
            // prepared on their third run on a connection: enough empty rounds that every connection the pool
            // hands out has the claim's plan made on those statistics.
            try await execute(store, "ANALYZE outbox")
            for _ in 0..<30 { #expect(try await claim(limit: 256).pushes.isEmpty) }

            // 4,000 alerts, 100 for each of the 40 devices.
            for round in 0..<10 {
                let events = (0..<400).map { index in
                    let number = round * 400 + index
                    return follow("n\(number)", at: Int64(number + 1), to: users[number % users.count])
                }
                _ = try await store.apply(events, policy: .unseen, context: context)
            }
            let first = try await claim(limit: 256)
            #expect(first.pushes.count == 256)
            #expect(first.pushes.map(\.outbox.id) == first.pushes.map(\.outbox.id).sorted())
            #expect(first.reachedLimit)
        }
    }
}

/// A claim of the due pushes of `partition` (all when nil), as a delivery round makes it, recording nothing.
private func claimDue(
    _ store: any SQLBackedStore, partition: Int?, lease: PartitionLease? = nil
) async throws -> ClaimedPushes {
    try await store.claimPushes(
        partition: partition, limit: 100, policy: .unseen, lease: lease, skipClaimedBefore: nil,
        recording: DeliveryRecord())
}

/// What another worker's claim of a newer push of `token` left behind (a zombie that raced ahead, say): the device's
/// `pushed_version` at `version`.
private func claimedElsewhere(_ store: any SQLBackedStore, token: String, version: Int64) async throws {
    try await store.sqlBackend.database.transaction { sql in
        try await sql.execute(
            "UPDATE devices SET pushed_version = $1 WHERE token = $2", [.int(version), .text(token)])
    }
}

/// The `pushed_version` of a device, read as it is stored.
private func pushedVersion(_ store: any SQLBackedStore, _ token: String) async throws -> Int64? {
    try await store.sqlBackend.database.transaction { sql in
        try await sql.query("SELECT pushed_version FROM devices WHERE token = $1", [.text(token)])
    }.first?["pushed_version"].int64
}
