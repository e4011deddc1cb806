import BadgeCore
import Synchronization
import TestServices
import Testing

@_spi(Testing) @testable import BadgeStore

/// What a delivery loop reads before it sleeps (`PipelineStore.outboxAhead`): when its partition's earliest retry is
/// due, and whether it holds pushes never attempted that are not on their way. Against the real databases.
@Suite("Outbox look-ahead")
struct OutboxAheadTests {
    @Test(arguments: Backend.allCases)
    func itFindsTheEarliestRetryAndPushesHeldBehindIt(backend: Backend) async throws {
        try await withStore(backend) { store in
            let context = ApplyContext(partition: 0)
            #expect(try await store.outboxAhead(partition: 0) == OutboxAhead(retryIn: nil, heldBack: false))

            _ = try await store.apply(
                [register("d1", token: tokenA), follow("f1", at: 1)], policy: .unseen, context: context)
            // Planned, never attempted, not claimed: held back as far as a loop that did not claim them knows.
            #expect(try await store.outboxAhead(partition: 0).heldBack)
            #expect(try await store.outboxAhead(partition: 1) == OutboxAhead(retryIn: nil, heldBack: false))

            let claimed = try await store.claimPushes(
                partition: 0, limit: 10, policy: .unseen, lease: nil, skipClaimedBefore: nil,
                recording: DeliveryRecord())
            // The claim read what it left: nothing.
            #expect(claimed.ahead == OutboxAhead(retryIn: nil, heldBack: false))
            // The registration's badge-only push is superseded by the follow's alert.
            let retried = try #require(claimed.pushes.first)
            try await store.recordDeliveries(
                DeliveryRecord(
                    sent: claimed.pushes.dropFirst().map(\.id), dropped: claimed.dropped,
                    retries: [
                        DeliveryRecord.Retry(id: retried.id, delay: .seconds(10))
                    ]))
            let ahead = try await store.outboxAhead(partition: 0)
            let retryIn = try #require(ahead.retryIn)
            #expect(retryIn > .seconds(9) && retryIn <= .seconds(10))
            #expect(!ahead.heldBack)

            // The device's next push waits behind the retry: held back, as a claim that cannot take it reads too.
            _ = try await store.apply([follow("f2", at: 2)], policy: .unseen, context: context)
            #expect(try await store.outboxAhead(partition: 0).heldBack)
            let behind = try await store.claimPushes(
                partition: 0, limit: 10, policy: .unseen, lease: nil, skipClaimedBefore: nil,
                recording: DeliveryRecord())
            #expect(behind.pushes.isEmpty)
            #expect(behind.ahead?.heldBack == true)
            let retryLeft = try #require(behind.ahead?.retryIn)
            #expect(retryLeft > .seconds(9) && retryLeft <= .seconds(10))
        }
    }

    /// Wake-ups through PostgreSQL: a worker listening (`listenForOutbox`) hears of a badge refresh another worker
    /// planned in a partition, and of a look-ahead held back by another partition's rows, which names it.
    @Test func anotherWorkersRefreshAndAHeldBackLookAheadWakeTheListeningWorker() async throws {
        try await withStores(.postgres, count: 2) { stores in
            let (listener, writer) = (stores[0], stores[1])
            let heard = Mutex<[Int]>([])
            let listening = Mutex(false)
            let task = Task {
                await listener.listenForOutbox(
                    listening: { listening.withLock { $0 = true } },
                    partition: { woken in heard.withLock { $0.append(woken) } })
            }
            defer { task.cancel() }
            try await eventually("the store listens") { listening.withLock { $0 } }

            _ = try await writer.apply(
                [register("d1", token: tokenA), follow("n1", at: 1), follow("n2", at: 2)], policy: .unseen,
                context: ApplyContext(partition: 5))
            let outbox = try await writer.pendingPushes(limit: 10, partition: 5)
            let sent = try await writer.claimPushes(
                partition: 5, limit: 10, policy: .unseen, lease: nil, skipClaimedBefore: nil,
                recording: DeliveryRecord())
            try await writer.recordDeliveries(.sentAll(sent))
            #expect(try await writer.refreshBadge(after: outbox[1].push, partition: 5, policy: .unseen))
            try await eventually("partition 5 woken") { heard.withLock { $0.contains(5) } }

            // A follow routed to partition 2 waits behind the refresh in partition 5: the look-ahead of partition 2
            // names 5 and wakes it.
            _ = try await writer.apply([follow("n3", at: 3)], policy: .unseen, context: ApplyContext(partition: 2))
            heard.withLock { $0 = [] }
            let ahead = try await writer.outboxAhead(partition: 2)
            #expect(ahead.heldBack && ahead.heldBy == [5])
            try await eventually("partition 5 woken again") { heard.withLock { $0 == [5] } }
        }
    }
}
