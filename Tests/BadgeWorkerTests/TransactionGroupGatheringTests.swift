import Logging
import Synchronization
import Testing

@testable import BadgeWorker

/// A ``TransactionGroup`` without an interval and with a gathering moment (the shape of the worker's delivery
/// records, see `DeliveryRounds.record(_:)`), run for real: requests that ask within the moment share one
/// transaction, each with its own answer; one that asks after it runs in a transaction of its own.
@Suite("Transaction group gathering")
struct TransactionGroupGatheringTests {
    @Test func requestsWithinTheGatheringMomentShareOneTransaction() async throws {
        let rounds = Mutex<[[Int]]>([])
        let group = TransactionGroup<Int, Int>(
            "test", maxWeight: 100, gathering: .milliseconds(300), logger: Logger(label: "gathering-test")
        ) { requests in
            rounds.withLock { $0.append(requests) }
            return requests.map { $0 * 10 }
        }
        @Sendable func record(_ request: Int) async throws -> Int {
            await group.awaitTick(urgent: false)
            return try await group.run(request, weight: 1, armed: true)
        }
        async let first = record(1)
        try await Task.sleep(for: .milliseconds(20))
        async let second = record(2)
        #expect(try await [first, second] == [10, 20])
        #expect(rounds.withLock { $0.map { $0.sorted() } } == [[1, 2]])
        // Long after that round: a round of its own.
        #expect(try await record(3) == 30)
        #expect(rounds.withLock { $0.count } == 2)
    }
}
