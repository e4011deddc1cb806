import BadgeCore
@_spi(Testing) import BadgeStore
import BadgeWire
import Logging
import Testing

@testable import BadgeWorker

/// A worker's partitions committing through one ``TransactionGroup`` at the same time, on a real store: every batch
/// gets its own results, and a batch whose lease is gone fails alone.
@Suite("Transaction group")
struct TransactionGroupTests {
    private static let logger = Logger(label: "transaction-group-test")
    private static let time = Timestamp.parse("2026-11-21T10:00:00Z")!

    private static func follows(_ user: String, from: Int, count: Int) -> [Event] {
        (from..<from + count).map { index in
            Event(
                id: "\(user)-n\(index)", type: .follow, recipient: user,
                occurredAt: time.adding(microseconds: Int64(index) * 1_000), actor: EventActor(id: "u-bob", name: "Bob")
            )
        }
    }

    @Test(arguments: Backend.allCases)
    func concurrentPartitionsEachGetTheirOwnResultsAndALostLeaseFailsOnlyItsBatch(backend: Backend) async throws {
        try await withDeliveryFixture(backend) { store, _, _ in
            let leases = try await store.leaseRound(
                worker: "w1", partitions: 4, ttlMilliseconds: 60_000, releasing: []
            ).leases
            #expect(leases.count == 4)
            let group = TransactionGroup<ApplyBatch, [AppliedEvent]>.ingestion(
                store: store, policy: .unseen, maxWeight: 2048, interval: .milliseconds(5), health: nil,
                logger: Self.logger)
            // Four partitions, one user each, ten batches of three follows each, all at once, each taken at the
            // group's tick as a partition's stage does.
            try await withThrowingTaskGroup(of: Void.self) { tasks in
                for lease in leases {
                    tasks.addTask {
                        let user = "u-\(lease.partition)"
                        for batch in 0..<10 {
                            let events = Self.follows(user, from: batch * 3, count: 3)
                            let context = ApplyContext(partition: lease.partition, lease: lease)
                            let batch = ApplyBatch(events: events, context: context)
                            await group.awaitTick(urgent: false)
                            let applied = try await group.run(batch, armed: true)
                            #expect(applied.map(\.event.id) == events.map(\.id))
                            #expect(applied.allSatisfy { !$0.duplicate })
                        }
                    }
                }
                try await tasks.waitForAll()
            }
            for lease in leases {
                #expect(try await store.snapshot(user: "u-\(lease.partition)").counts.unseenNotifications == 30)
            }

            // Partition 3 moves away; its batches fail with lease_lost, the others' still commit.
            _ = try await store.leaseRound(worker: "w1", partitions: 4, ttlMilliseconds: 60_000, releasing: [3])
            let outcomes = try await withThrowingTaskGroup(of: (Int, Bool).self) { tasks in
                for lease in leases {
                    tasks.addTask {
                        let events = Self.follows("u-\(lease.partition)", from: 100, count: 2)
                        let context = ApplyContext(partition: lease.partition, lease: lease)
                        do {
                            let batch = ApplyBatch(events: events, context: context)
                            _ = try await group.run(batch)
                            return (lease.partition, true)
                        } catch let error as StoreError where error.code == .leaseLost {
                            return (lease.partition, false)
                        }
                    }
                }
                var outcomes: [Int: Bool] = [:]
                for try await (partition, committed) in tasks { outcomes[partition] = committed }
                return outcomes
            }
            #expect(outcomes == [0: true, 1: true, 2: true, 3: false])
            for lease in leases {
                #expect(
                    try await store.snapshot(user: "u-\(lease.partition)").counts.unseenNotifications
                        == (lease.partition == 3 ? 30 : 32))
            }
        }
    }
}
