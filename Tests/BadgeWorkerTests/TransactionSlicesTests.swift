import BadgeCore
import BadgeWire
import Testing

@testable import BadgeWorker

/// A batch of heavy events is cut into transactions of bounded work, in order.
@Suite("Transaction slices")
struct TransactionSlicesTests {
    private func read(_ ids: Int, _ n: Int) -> Event {
        Event(
            id: "r\(n)", type: .notificationRead, recipient: "u", occurredAt: Timestamp(microsecondsSinceEpoch: 0),
            notificationIDs: (0..<ids).map { "n\($0)" })
    }

    @Test func lightEventsStayInOneTransaction() {
        let events = (0..<128).map { read(1, $0) }
        #expect(PartitionIngestion.slices(of: events, maxWeight: 2048) == [0..<128])
    }

    @Test func heavyEventsAreCutInOrderWithinTheWeight() {
        // 500 ids weigh 501: four fit in 2,048.
        let events = (0..<10).map { read(500, $0) }
        #expect(PartitionIngestion.slices(of: events, maxWeight: 2048) == [0..<4, 4..<8, 8..<10])
    }

    @Test func anEventHeavierThanTheLimitGoesAlone() {
        let events = [read(1, 0), read(500, 1), read(1, 2)]
        #expect(PartitionIngestion.slices(of: events, maxWeight: 100) == [0..<1, 1..<2, 2..<3])
        #expect(PartitionIngestion.slices(of: [], maxWeight: 100).isEmpty)
    }
}
