import Logging
import Synchronization
import TestServices
import Testing

@testable import BadgeWorker

/// A ``TransactionGroup`` without an interval and with a gathering moment (the shape of the worker's delivery
/// records, see `DeliveryRounds.record(_:)`), its tasks run for real on a clock the test moves: requests that ask
/// within the moment share one transaction, each with its own answer, and nothing runs before the moment ends; one
/// that asks after it runs in a transaction of its own, after a moment of its own.
@Suite("Transaction group gathering")
struct TransactionGroupGatheringTests {
    @Test func requestsWithinTheGatheringMomentShareOneTransaction() async throws {
        let clock = ManualClock()
        let moment = Duration.milliseconds(300)
        let rounds = Mutex<[[Int]]>([])
        let group = TransactionGroup<Int, Int>(
            "test", maxWeight: 100, gathering: moment, clock: clock, logger: Logger(label: "gathering-test")
        ) { requests in
            rounds.withLock { $0.append(requests) }
            return requests.map { $0 * 10 }
        }
        @Sendable func record(_ request: Int) async throws -> Int {
            await group.awaitTick(urgent: false)
            return try await group.run(request, weight: 1, armed: true)
        }

        let first = Task { try await record(1) }
        try await eventually("the first request times the moment", every: .milliseconds(5)) { clock.sleepers == 1 }
        clock.advance(by: moment / 2)
        let second = Task { try await record(2) }
        try await eventually("the second request joins the moment", every: .milliseconds(5)) { group.joinedTick == 1 }
        #expect(clock.sleepers == 1)
        #expect(rounds.withLock { $0.isEmpty }, "a round ran before the gathering moment ended")

        clock.advance(by: moment / 2)
        #expect(try await [first.value, second.value] == [10, 20])
        #expect(rounds.withLock { $0.map { $0.sorted() } } == [[1, 2]])

        // After that round: a moment and a round of its own.
        let third = Task { try await record(3) }
        try await eventually("the third request times a moment of its own", every: .milliseconds(5)) {
            clock.sleepers == 1
        }
        #expect(rounds.withLock { $0.count } == 1)
        clock.advance(by: moment)
        #expect(try await third.value == 30)
        #expect(rounds.withLock { $0.map { $0.sorted() } } == [[1, 2], [3]])
    }
}
