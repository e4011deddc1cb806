import BadgeCore
import BadgeSink
import BadgeStore
import BadgeWire
import Testing

@testable import BadgeWorker

/// When a partition goes quiet after a round, the round's outcomes are recorded on their own within the record
/// delay, not left for the idle poll: a push stays sent but unrecorded (what a crash would send again) only that
/// long. Real database and a real sink over HTTP.
@Suite("Delivery loop")
struct PartitionDeliveryTests {
    private static let token = "feed0000feed0000feed0000feed0000"

    private static var events: [Event] { deliveryFixtureEvents(token: token) }

    @Test(arguments: Backend.allCases)
    func aQuietPartitionRecordsItsLastRoundWithoutWaitingForTheIdlePoll(backend: Backend) async throws {
        try await withDeliveryFixture(backend) { store, sink, dispatcher in
            _ = try await store.apply(Self.events, policy: .unseen, context: ApplyContext(partition: 0))
            try await Self.deliver(store, sink, dispatcher(store), recordDelay: .milliseconds(25)) { pending in
                // Recorded on its own, long before the idle poll (60 s) would have looked again.
                let clock = ContinuousClock()
                let deadline = clock.now + .seconds(20)
                var left = try await pending()
                while left > 0, clock.now < deadline {
                    try await Task.sleep(for: .milliseconds(20))
                    left = try await pending()
                }
                #expect(left == 0)
            }
        }
    }

    @Test(arguments: Backend.allCases)
    func withALongRecordDelayTheOutcomesWaitAndTheLoopRecordsThemWhenItStops(backend: Backend) async throws {
        try await withDeliveryFixture(backend) { store, sink, dispatcher in
            _ = try await store.apply(Self.events, policy: .unseen, context: ApplyContext(partition: 0))
            try await Self.deliver(store, sink, dispatcher(store), recordDelay: .seconds(60)) { pending in
                try await Task.sleep(for: .milliseconds(300))
                // Sent, not recorded yet: still in the outbox, claimed.
                #expect(try await pending() == 1)
            }
            // The loop stopped and recorded what it sent.
            #expect(try await store.pendingPushes(limit: 10, partition: 0).isEmpty)
        }
    }

    /// Runs partition 0's delivery loop (idle poll 60 s) until the sink has the alert, then `check` (given the
    /// outbox's row count), then stops the loop.
    private static func deliver(
        _ store: any BadgeStore, _ sink: SinkState, _ dispatcher: PushDispatcher, recordDelay: Duration,
        check: @Sendable (@Sendable () async throws -> Int) async throws -> Void
    ) async throws {
        let doorbell = Doorbell()
        let delivery = PartitionDelivery(
            dispatcher: dispatcher, partition: 0, term: nil, doorbell: doorbell, idlePoll: .seconds(60),
            recordDelay: recordDelay)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await delivery.run() }
            let clock = ContinuousClock()
            let deadline = clock.now + .seconds(20)
            while sink.receivedPushes(token: token).isEmpty, clock.now < deadline {
                try await Task.sleep(for: .milliseconds(20))
            }
            // The registration's badge-only push is superseded by the alert and dropped at the claim: one push.
            #expect(sink.receivedPushes(token: token).count == 1)
            try await check { try await store.pendingPushes(limit: 10, partition: 0).count }
            doorbell.close()
            try await group.waitForAll()
        }
    }
}
