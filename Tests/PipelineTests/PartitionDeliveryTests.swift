import BadgeCore
import BadgeSink
@_spi(Testing) import BadgeStore
import BadgeWire
import TestServices
import Testing

@testable import BadgeWorker

/// The delivery loop, with a real database and a real sink over HTTP. When a partition goes quiet after a round,
/// the round's outcomes are recorded on their own within the record delay, not left for a later claim: a push stays
/// sent but unrecorded (what a crash would send again) only that long. Every push goes out through the loop's own
/// claim.
@Suite("Delivery loop")
struct PartitionDeliveryTests {
    private static let token = "feed0000feed0000feed0000feed0000"

    private static var events: [Event] { deliveryFixtureEvents(token: token) }

    @Test(arguments: Backend.allCases)
    func aQuietPartitionRecordsItsLastRoundWithoutWaitingForTheIdlePoll(backend: Backend) async throws {
        try await withDeliveryFixture(backend) { store, sink, rounds in
            _ = try await store.apply(Self.events, policy: .unseen, context: ApplyContext(partition: 0))
            try await Self.deliver(store, sink, rounds(store), recordDelay: .milliseconds(25)) { pending in
                // Recorded on its own, long before anything else would have woken the loop.
                try await eventually("the round recorded", timeout: .seconds(20), every: .milliseconds(20)) {
                    try await pending() == 0
                }
            }
        }
    }

    @Test(arguments: Backend.allCases)
    func withALongRecordDelayTheOutcomesWaitAndTheLoopRecordsThemWhenItStops(backend: Backend) async throws {
        try await withDeliveryFixture(backend) { store, sink, rounds in
            _ = try await store.apply(Self.events, policy: .unseen, context: ApplyContext(partition: 0))
            try await Self.deliver(store, sink, rounds(store), recordDelay: .seconds(60)) { pending in
                // At the sink (`deliver` waited for it), not recorded yet: still in the outbox, claimed, with the
                // registration's badge-only push it superseded, which leaves with the same record.
                let count = try await pending()
                #expect(count == 2)
            }
            // The loop stopped and recorded what it sent.
            #expect(try await store.pendingPushes(limit: 10, partition: 0).isEmpty)
        }
    }

    /// In a fleet on PostgreSQL, every push goes out through the loop's own claim, rung by ingestion's commit: the
    /// registration's badge push, then two alerts planned back to back, the second before the first was recorded,
    /// which goes out after it. Nothing goes out twice, and nothing is left.
    @Test func pushesPlannedUnderALeaseGoOutThroughTheLoopsClaimInOrder() async throws {
        try await withDeliveryFixture(.postgres) { store, sink, rounds in
            let round = try await store.leaseRound(
                worker: "w1", partitions: 1, ttlMilliseconds: 60_000, releasing: [])
            let lease = try #require(round.leases.first)
            let context = ApplyContext(partition: 0, lease: lease)
            let events = Self.events
            let doorbell = Doorbell()
            let delivery = PartitionDelivery(
                rounds: rounds(store), partition: 0,
                term: LeaseTerm(lease: lease, ttl: .seconds(60), confirmed: .now), doorbell: doorbell,
                heldBackPoll: .seconds(60))
            func waitFor(pushes count: Int) async throws {
                try await eventually("\(count) pushes at the sink", timeout: .seconds(20), every: .milliseconds(20)) {
                    sink.receivedPushes(token: Self.token).count >= count
                }
            }
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await delivery.run() }
                let registration = try await store.apply([events[0]], policy: .unseen, context: context)
                    .flatMap(\.pushes)
                // Planned, not claimed: the loop claims it once rung.
                #expect(registration.map(\.claimedEpoch) == [nil])
                doorbell.ring()
                try await waitFor(pushes: 1)

                let first = try await store.apply([events[1]], policy: .unseen, context: context).flatMap(\.pushes)
                var next = events[1]
                next.id = "n2"
                next.occurredAt = next.occurredAt.adding(microseconds: 1_000_000)
                let second = try await store.apply([next], policy: .unseen, context: context).flatMap(\.pushes)
                #expect((first + second).map(\.claimedEpoch) == [nil, nil])
                doorbell.ring()

                try await waitFor(pushes: 3)
                let alerts = sink.receivedPushes(token: Self.token).dropFirst().map(\.bodyText)
                #expect(alerts.count == 2)
                #expect(alerts.first?.contains("\"n1\"") == true)
                #expect(alerts.last?.contains("\"n2\"") == true)
                doorbell.close()
                try await group.waitForAll()
            }
            #expect(try await store.pendingPushes(limit: 10, partition: 0).isEmpty)
            #expect(sink.receivedPushes(token: Self.token).count == 3)
        }
    }

    /// Records of several partitions that come within the gathering moment (one shared write, see
    /// `TransactionGroupGatheringTests`): each partition's sent rows leave the outbox, and only those.
    @Test(arguments: Backend.allCases)
    func recordsOfSeveralPartitionsGatheredTogetherRemoveEachPartitionsSentRowsOnly(backend: Backend) async throws {
        try await withDeliveryFixture(backend) { store, _, rounds in
            for partition in 0..<3 {
                let events = deliveryFixtureEvents(token: "feed\(partition)000feed0000feed0000feed0000").map {
                    var event = $0
                    event.id += "-p\(partition)"
                    event.recipient = "u-\(partition)"
                    return event
                }
                _ = try await store.apply(events, policy: .unseen, context: ApplyContext(partition: partition))
            }
            let base = rounds(store)
            let gathering = DeliveryRounds(
                store: store, sender: base.sender, builder: base.builder, concurrency: 4, policy: .unseen,
                recordGathering: .milliseconds(200), logger: base.logger)
            #expect(gathering.records != nil)
            let queued = try await store.pendingPushes(limit: 100)
            let partition0 = try await store.pendingPushes(limit: 100, partition: 0).map(\.id)
            let partition1 = try await store.pendingPushes(limit: 100, partition: 1).map(\.id)
            #expect(!partition0.isEmpty && !partition1.isEmpty)
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await gathering.record(DeliveryRecord(sent: partition0)) }
                group.addTask { try await gathering.record(DeliveryRecord(sent: partition1)) }
                try await group.waitForAll()
            }
            let left = try await store.pendingPushes(limit: 100).map(\.id)
            #expect(Set(left) == Set(queued.map(\.id)).subtracting(partition0 + partition1))
            #expect(try await store.pendingPushes(limit: 100, partition: 2).map(\.id) == left)
        }
    }

    /// Runs partition 0's delivery loop (held-back poll 60 s) until the sink has the alert, then `check` (given the
    /// outbox's row count), then stops the loop.
    private static func deliver(
        _ store: any SQLBackedStore, _ sink: SinkState, _ rounds: DeliveryRounds, recordDelay: Duration,
        check: @Sendable (@Sendable () async throws -> Int) async throws -> Void
    ) async throws {
        let doorbell = Doorbell()
        let delivery = PartitionDelivery(
            rounds: rounds, partition: 0, term: nil, doorbell: doorbell, heldBackPoll: .seconds(60),
            recordDelay: recordDelay)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await delivery.run() }
            try await eventually("a push at the sink", timeout: .seconds(20), every: .milliseconds(20)) {
                !sink.receivedPushes(token: token).isEmpty
            }
            // The registration's badge-only push is superseded by the alert and dropped by the claim's guard: one push.
            #expect(sink.receivedPushes(token: token).count == 1)
            try await check { try await store.pendingPushes(limit: 10, partition: 0).count }
            doorbell.close()
            try await group.waitForAll()
        }
    }
}
