import Testing

@testable import BadgeWorker

/// The bisection that finds the events a database refuses, driven directly against a pretend database that
/// refuses every slice holding a culprit.
@Suite("Poison bisector")
struct PoisonBisectorTests {
    /// Runs a bisection over `count` events of which `culprits` are refused; returns the applied ranges in order,
    /// the parked indices and the number of transactions tried.
    private func run(count: Int, culprits: Set<Int>) -> (applied: [Int], parked: [Int], attempts: Int) {
        var bisector = PoisonBisector(count: count)
        var applied: [Int] = []
        var parked: [Int] = []
        var attempts = 1  // the whole batch, refused before the bisection starts
        while true {
            switch bisector.next() {
            case .done:
                return (applied, parked, attempts)
            case .apply(let range):
                attempts += 1
                if culprits.isDisjoint(with: range) {
                    applied += Array(range)
                    bisector.applied()
                } else {
                    bisector.refused()
                }
            case .park(let index):
                parked.append(index)
                bisector.parked()
            }
        }
    }

    @Test(
        arguments: [
            (1, [0]), (2, [1]), (8, [3]), (8, [0, 7]), (128, [5, 6, 100]), (7, [0, 1, 2, 3, 4, 5, 6]),
        ] as [(Int, [Int])])
    func everyInnocentEventIsAppliedInOrderAndEveryCulpritParked(count: Int, culprits: [Int]) {
        let result = run(count: count, culprits: Set(culprits))
        #expect(result.parked == culprits.sorted())
        #expect(result.applied == (0..<count).filter { !culprits.contains($0) })
    }

    @Test func oneCulpritCostsLogarithmicallyManyTransactions() {
        // Two slices per level: at most 2 × log2(128) + the whole.
        #expect(run(count: 128, culprits: [77]).attempts <= 15)
    }
}
