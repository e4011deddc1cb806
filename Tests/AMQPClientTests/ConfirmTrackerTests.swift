import Testing

@testable import AMQPClient

@Suite("Publisher confirm tracking")
struct ConfirmTrackerTests {
    typealias Tracker = ConfirmTracker<String>

    private func publish(_ tracker: inout Tracker, _ names: String...) -> [UInt64] {
        names.map { tracker.published($0) }
    }

    @Test func tagsStartAtOneAndIncrease() {
        var tracker = Tracker()
        #expect(publish(&tracker, "a", "b", "c") == [1, 2, 3])
        #expect(tracker.inFlight == 3)
        #expect(tracker.nextTag == 4)
    }

    @Test func singleAckResolvesOnlyThatTag() {
        var tracker = Tracker()
        _ = publish(&tracker, "a", "b", "c")
        let resolved = tracker.ack(tag: 2, multiple: false)
        #expect(resolved.map(\.waiter) == ["b"])
        #expect(resolved.first?.outcome == .confirmed)
        #expect(tracker.inFlight == 2)
    }

    @Test func multipleAckResolvesEverythingUpToTag() {
        var tracker = Tracker()
        _ = publish(&tracker, "a", "b", "c", "d")
        _ = tracker.ack(tag: 2, multiple: false)
        let resolved = tracker.ack(tag: 3, multiple: true)
        #expect(resolved.map(\.waiter) == ["a", "c"])
        #expect(tracker.inFlight == 1)
        #expect(tracker.ack(tag: 4, multiple: true).map(\.waiter) == ["d"])
        #expect(tracker.inFlight == 0)
    }

    @Test func duplicateAndUnknownAcksResolveNothing() {
        var tracker = Tracker()
        _ = publish(&tracker, "a")
        #expect(tracker.ack(tag: 1, multiple: false).count == 1)
        #expect(tracker.ack(tag: 1, multiple: false).isEmpty)
        #expect(tracker.ack(tag: 7, multiple: false).isEmpty)
        #expect(tracker.ack(tag: 7, multiple: true).isEmpty)
    }

    @Test func nackMultiple() {
        var tracker = Tracker()
        _ = publish(&tracker, "a", "b", "c")
        let resolved = tracker.nack(tag: 2, multiple: true)
        #expect(resolved.map(\.waiter) == ["a", "b"])
        #expect(resolved.allSatisfy { $0.outcome == .nacked })
        #expect(tracker.ack(tag: 3, multiple: false).first?.outcome == .confirmed)
    }

    @Test func returnThenAckReportsReturned() {
        var tracker = Tracker()
        _ = publish(&tracker, "a", "b", "c")
        let recorded = tracker.returned(tag: 2, replyCode: 312, replyText: "NO_ROUTE")
        #expect(recorded)
        let resolved = tracker.ack(tag: 3, multiple: true)
        #expect(resolved.map(\.outcome) == [.confirmed, .returned(replyCode: 312, replyText: "NO_ROUTE"), .confirmed])
        let late = tracker.returned(tag: 2, replyCode: 312, replyText: "late")
        #expect(!late)
    }

    @Test func failAllReturnsUnresolvedInOrder() {
        var tracker = Tracker()
        _ = publish(&tracker, "a", "b", "c", "d")
        _ = tracker.ack(tag: 2, multiple: false)
        let failed = tracker.failAll()
        #expect(failed.map(\.waiter) == ["a", "c", "d"])
        #expect(failed.map(\.tag) == [1, 3, 4])
        #expect(tracker.inFlight == 0)
        // Numbering continues on the same channel.
        #expect(tracker.published("e") == 5)
        #expect(tracker.ack(tag: 5, multiple: false).map(\.waiter) == ["e"])
    }

    @Test func largeWindowsStayConsistent() {
        var tracker = Tracker()
        var resolved = 0
        for round in 0..<50 {
            for index in 0..<1000 { _ = tracker.published("\(round)-\(index)") }
            // Acks for odd tags singly, then one multiple for the rest.
            let base = UInt64(round * 1000)
            for offset in stride(from: 1, through: 999, by: 2) {
                resolved += tracker.ack(tag: base + UInt64(offset), multiple: false).count
            }
            resolved += tracker.ack(tag: base + 1000, multiple: true).count
        }
        #expect(resolved == 50_000)
        #expect(tracker.inFlight == 0)
    }
}
