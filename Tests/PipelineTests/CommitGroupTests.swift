import Testing

@testable import BadgeWorker

/// The group commit of a worker's partition batches, driven directly.
@Suite("Commit group")
struct CommitGroupTests {
    @Test
    func theFirstArrivalLeadsAndItsRoundTakesEveryoneWaitingInArrivalOrder() {
        var group = CommitGroup<String>(maxWeight: 100)
        #expect(group.arrived("p0", weight: 10) == .lead)
        #expect(group.takeRound() == ["p0"])
        // While p0's round runs, three more partitions' batches arrive and wait.
        #expect(group.arrived("p1", weight: 10) == .wait)
        #expect(group.arrived("p2", weight: 10) == .wait)
        #expect(group.arrived("p3", weight: 10) == .wait)
        // p0's round ends: the oldest waiting batch leads the next round, which takes all three.
        guard case .lead(let next) = group.roundEnded() else {
            Issue.record("the lead was not handed on")
            return
        }
        #expect(next == "p1")
        #expect(group.arrived("p4", weight: 10) == .wait)
        #expect(group.takeRound() == ["p1", "p2", "p3", "p4"])
        // Nobody waits: the next arrival leads at once.
        guard case .idle = group.roundEnded() else {
            Issue.record("the group did not go idle")
            return
        }
        #expect(!group.leading)
        #expect(group.arrived("p5", weight: 10) == .lead)
        #expect(group.takeRound() == ["p5"])
    }

    @Test
    func aRoundStaysWithinTheWeightAndTheRestLeadsTheNext() {
        var group = CommitGroup<Int>(maxWeight: 100)
        #expect(group.arrived(0, weight: 500) == .lead)
        for batch in 1...5 { #expect(group.arrived(batch, weight: 40) == .wait) }
        // A first batch heavier than the bound goes alone.
        #expect(group.takeRound() == [0])
        guard case .lead(1) = group.roundEnded() else {
            Issue.record("batch 1 should lead")
            return
        }
        #expect(group.takeRound() == [1, 2])
        #expect(group.waitingCount == 3)
        guard case .lead(3) = group.roundEnded() else {
            Issue.record("batch 3 should lead")
            return
        }
        #expect(group.takeRound() == [3, 4])
        guard case .lead(5) = group.roundEnded() else {
            Issue.record("batch 5 should lead")
            return
        }
        #expect(group.takeRound() == [5])
        guard case .idle = group.roundEnded() else {
            Issue.record("the group did not go idle")
            return
        }
        #expect(group.waitingCount == 0)
    }
}
