import Testing

@testable import BadgeWorker

/// The group commit of a worker's partition batches, driven directly.
@Suite("Transaction group state machine")
struct TransactionGroupStateMachineTests {
    private static let t0 = ContinuousClock.now

    private static func at(_ milliseconds: Int) -> ContinuousClock.Instant { t0 + .milliseconds(milliseconds) }

    /// A group with a 10 ms interval whose first round (p0's alone, as the first test checks step by step) began
    /// at 0 and runs.
    private static func afterFirstRound() -> TransactionGroupStateMachine<String, String> {
        var group = TransactionGroupStateMachine<String, String>(maxWeight: 100, interval: .milliseconds(10))
        _ = group.tickRequested(now: at(0), urgent: false)
        _ = group.tickElapsed()
        _ = group.arrived("p0", weight: 1, armed: true)
        _ = group.takeRound(now: at(0))
        precondition(group.leading && group.armed == 0 && group.waitingCount == 0)
        return group
    }
    @Test
    func theFirstArrivalLeadsAndItsRoundTakesEveryoneWaitingInArrivalOrder() {
        var group = TransactionGroupStateMachine<String, String>(maxWeight: 100)
        #expect(group.arrived("p0", weight: 10) == .lead)
        #expect(group.takeRound(now: Self.t0) == ["p0"])
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
        #expect(group.takeRound(now: Self.t0) == ["p1", "p2", "p3", "p4"])
        // Nobody waits: the next arrival leads at once.
        guard case .idle = group.roundEnded() else {
            Issue.record("the group did not go idle")
            return
        }
        #expect(!group.leading)
        #expect(group.arrived("p5", weight: 10) == .lead)
        #expect(group.takeRound(now: Self.t0) == ["p5"])
    }

    @Test
    func aRoundStaysWithinTheWeightAndTheRestLeadsTheNext() {
        var group = TransactionGroupStateMachine<Int, Int>(maxWeight: 100)
        #expect(group.arrived(0, weight: 500) == .lead)
        for batch in 1...5 { #expect(group.arrived(batch, weight: 40) == .wait) }
        // A first batch heavier than the bound goes alone.
        #expect(group.takeRound(now: Self.t0) == [0])
        guard case .lead(1) = group.roundEnded() else {
            Issue.record("batch 1 should lead")
            return
        }
        #expect(group.takeRound(now: Self.t0) == [1, 2])
        #expect(group.waitingCount == 3)
        guard case .lead(3) = group.roundEnded() else {
            Issue.record("batch 3 should lead")
            return
        }
        #expect(group.takeRound(now: Self.t0) == [3, 4])
        guard case .lead(5) = group.roundEnded() else {
            Issue.record("batch 5 should lead")
            return
        }
        #expect(group.takeRound(now: Self.t0) == [5])
        guard case .idle = group.roundEnded() else {
            Issue.record("the group did not go idle")
            return
        }
        #expect(group.waitingCount == 0)
    }

    @Test
    func partitionsThatAskWithinTheIntervalTakeTheirBatchesAtTheTickAndShareOneRound() {
        var group = TransactionGroupStateMachine<String, String>(maxWeight: 100, interval: .milliseconds(10))
        // Nothing ran yet: the first partition's tick comes after the gathering moment (1 ms), and its round
        // begins.
        #expect(group.tickRequested(now: Self.at(0), urgent: false) == .time(until: Self.at(0) + .milliseconds(1)))
        let alone = group.tickElapsed()
        #expect(alone.isEmpty)
        #expect(group.armed == 1)
        #expect(group.arrived("p0", weight: 1, armed: true) == .lead)
        #expect(group.takeRound(now: Self.at(0)) == ["p0"])
        // Within 10 ms of that round's start, p1 times the tick and p2 joins it.
        #expect(group.tickRequested(now: Self.at(2), urgent: false) == .time(until: Self.at(10)))
        #expect(group.tickRequested(now: Self.at(3), urgent: false) == .join)
        let joined = group.join("p2's stage")
        #expect(joined)
        guard case .idle = group.roundEnded() else {
            Issue.record("nobody was waiting")
            return
        }
        // The tick: both are armed, and the round waits until the last of them arrived.
        #expect(group.tickElapsed() == ["p2's stage"])
        #expect(group.armed == 2)
        #expect(!group.timing)
        #expect(group.arrived("p2", weight: 1, armed: true) == .wait)
        guard case .wake("p2") = group.arrived("p1", weight: 1, armed: true) else {
            Issue.record("the last armed arrival should wake the head of the queue")
            return
        }
        #expect(group.armed == 0)
        #expect(group.takeRound(now: Self.at(10)) == ["p2", "p1"])
        // Asked 10 ms or more after the last round began: after the gathering moment only.
        guard case .idle = group.roundEnded() else {
            Issue.record("nobody was waiting")
            return
        }
        #expect(group.tickRequested(now: Self.at(20), urgent: false) == .time(until: Self.at(20) + .milliseconds(1)))
    }

    @Test
    func withoutAnIntervalRequestsThatComeWithinTheGatheringMomentShareOneRound() {
        // The delivery records' group: no interval, a gathering moment of 2 ms.
        var group = TransactionGroupStateMachine<String, String>(
            maxWeight: 100, interval: .zero, gathering: .milliseconds(2))
        #expect(group.gathering == .milliseconds(2))
        #expect(group.tickRequested(now: Self.at(0), urgent: false) == .time(until: Self.at(2)))
        #expect(group.tickRequested(now: Self.at(1), urgent: false) == .join)
        let joined = group.join("p1's record")
        #expect(joined)
        #expect(group.tickElapsed() == ["p1's record"])
        #expect(group.arrived("p0", weight: 3, armed: true) == .wait)
        #expect(group.arrived("p1", weight: 5, armed: true) == .wake("p0"))
        #expect(group.takeRound(now: Self.at(2)) == ["p0", "p1"])
        // One that comes while the round runs times a tick of its own, right after the gathering moment.
        #expect(group.tickRequested(now: Self.at(3), urgent: false) == .time(until: Self.at(5)))
        // Without an interval, the default gathering moment is none: a request goes at once.
        var ungathered = TransactionGroupStateMachine<String, String>(maxWeight: 100)
        #expect(ungathered.gathering == .zero)
        #expect(ungathered.tickRequested(now: Self.at(0), urgent: false) == .go)
    }

    @Test
    func thePartitionsOfARoundLongerThanTheIntervalGatherForTheNextOne() {
        var group = TransactionGroupStateMachine<String, String>(maxWeight: 100, interval: .milliseconds(10))
        #expect(group.gathering == .milliseconds(1))
        #expect(group.tickRequested(now: Self.at(0), urgent: false) == .time(until: Self.at(1)))
        let joinedFirst = group.join("p1's stage")
        #expect(joinedFirst)
        #expect(group.tickElapsed() == ["p1's stage"])
        #expect(group.arrived("p0", weight: 1, armed: true) == .wait)
        #expect(group.arrived("p1", weight: 1, armed: true) == .wake("p0"))
        #expect(group.takeRound(now: Self.at(1)) == ["p0", "p1"])
        // The round takes 15 ms. Its partitions ask again one after another as their stages wake: the first does
        // not start a round alone, the second joins its tick.
        guard case .idle = group.roundEnded() else {
            Issue.record("nobody was waiting")
            return
        }
        #expect(group.tickRequested(now: Self.at(16), urgent: false) == .time(until: Self.at(17)))
        #expect(group.tickRequested(now: Self.at(16), urgent: false) == .join)
        let joinedAgain = group.join("p1's stage")
        #expect(joinedAgain)
        #expect(group.tickElapsed() == ["p1's stage"])
        #expect(group.armed == 2)
    }

    @Test
    func aFullBatchGoesAtOnceAndAPartitionThatMissedTheTickGoesToo() {
        var group = Self.afterFirstRound()
        #expect(group.tickRequested(now: Self.at(1), urgent: false) == .time(until: Self.at(10)))
        // Urgent (a full batch): no wait for the tick, even while one is timed.
        #expect(group.tickRequested(now: Self.at(1), urgent: true) == .go)
        #expect(group.arrived("p-full", weight: 1, armed: true) == .wait)
        // A partition decided to join, but the tick came before it could: it is armed and goes.
        #expect(group.tickRequested(now: Self.at(2), urgent: false) == .join)
        let woken = group.tickElapsed()
        #expect(woken.isEmpty)
        let lateJoined = group.join("late stage")
        #expect(!lateJoined)
        #expect(group.armed == 2)
    }

    @Test
    func aRoundThatEndsWhilePartitionsAreArmedWaitsForThemAndTheLastToWithdrawStartsIt() {
        var group = Self.afterFirstRound()
        // While p0's round runs, the next tick arms p1 and p2, and p3's heavy batch sends its next slice (unarmed).
        #expect(group.tickRequested(now: Self.at(4), urgent: false) == .time(until: Self.at(10)))
        #expect(group.tickRequested(now: Self.at(5), urgent: false) == .join)
        let joined = group.join("p2's stage")
        #expect(joined)
        #expect(group.tickElapsed() == ["p2's stage"])
        #expect(group.arrived("p3 slice 2", weight: 1) == .wait)
        // The round ends: p1 and p2 are still taking their batches, so the next round waits for them.
        guard case .idle = group.roundEnded() else {
            Issue.record("the next round should wait for the armed partitions")
            return
        }
        #expect(group.arrived("p1", weight: 1, armed: true) == .wait)
        // p2 had only invalid messages: it withdraws, and the head of the queue leads.
        #expect(group.disarm() == "p3 slice 2")
        #expect(group.leading)
        #expect(group.takeRound(now: Self.at(12)) == ["p3 slice 2", "p1"])
    }

    @Test
    func withoutAnIntervalEveryPartitionGoesAtOnce() {
        var group = TransactionGroupStateMachine<String, String>(maxWeight: 100)
        #expect(group.tickRequested(now: Self.at(0), urgent: false) == .go)
        #expect(group.arrived("p0", weight: 1, armed: true) == .lead)
        #expect(group.takeRound(now: Self.at(0)) == ["p0"])
        #expect(group.tickRequested(now: Self.at(0), urgent: false) == .go)
        #expect(group.tickRequested(now: Self.at(0), urgent: false) == .go)
        #expect(group.arrived("p1", weight: 1, armed: true) == .wait)
        #expect(group.disarm() == nil)
        guard case .lead("p1") = group.roundEnded() else {
            Issue.record("p1 should lead")
            return
        }
    }
}
