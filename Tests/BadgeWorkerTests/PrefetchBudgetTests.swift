import Testing

@testable import BadgeWorker

/// The prefetch in bytes: the count follows the bodies' size so that what a partition holds stays near its bound.
@Suite struct PrefetchBudgetTests {
    @Test func startsWhereTheLargestBodiesKeepTheBoundAndGrowsForSmallOnes() {
        var budget = PrefetchBudget(maxBytes: 8 << 20, maxMessages: 256)
        #expect(budget.current == 128, "8 MiB of 64 KiB bodies")
        var counts: [Int] = []
        for _ in 0..<10 {
            if let count = budget.took(count: 128, bytes: 128 * 600) { counts.append(count) }
        }
        #expect(budget.current == 256)
        #expect(counts.count <= 3, "a few steps, not a qos per batch: \(counts)")
    }

    @Test func shrinksAtOnceWhenBodiesGrow() {
        var budget = PrefetchBudget(maxBytes: 8 << 20, maxMessages: 256)
        for _ in 0..<10 { _ = budget.took(count: 128, bytes: 128 * 500) }
        #expect(budget.current == 256)
        let shrunk = budget.took(count: 100, bytes: 100 * 60_000)
        #expect(shrunk != nil)
        #expect(budget.current < 256)
        for _ in 0..<10 { _ = budget.took(count: 100, bytes: 100 * 60_000) }
        #expect(budget.current * 60_000 <= 9 << 20)
        #expect(budget.current >= 128)
    }

    @Test func neverBelowTheFloorNorAboveTheConfiguredCount() {
        var budget = PrefetchBudget(maxBytes: 1 << 20, maxMessages: 64, minMessages: 8)
        for _ in 0..<10 { _ = budget.took(count: 10, bytes: 10 * 65_536) }
        #expect(budget.current == 16)
        var tiny = PrefetchBudget(maxBytes: 1 << 10, maxMessages: 64, minMessages: 8)
        for _ in 0..<10 { _ = tiny.took(count: 10, bytes: 10 * 65_536) }
        #expect(tiny.current == 8)
        var large = PrefetchBudget(maxBytes: 1 << 30, maxMessages: 64)
        #expect(large.current == 64)
        #expect(large.took(count: 1, bytes: 10) == nil)
    }
}
