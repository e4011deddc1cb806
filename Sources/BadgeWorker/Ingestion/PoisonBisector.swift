/// Finds the events of a batch that the database refuses, as a state machine: it answers which slice of the batch
/// to apply next and takes whether that worked. No I/O: `PartitionIngestion` drives it, the tests drive it
/// directly.
///
/// The whole batch failed with a refusal of its data (``BadgeStore/StoreError/refusesInput``). The batch is split
/// in halves, left before right, and each half applied on its own; a half that is refused is split again, down to
/// single events, which are the culprits: each is parked. Every slice that succeeds is committed, in batch order,
/// so the events that take effect keep their order (a culprit is simply skipped). A batch of n events with k
/// culprits costs O(k log n) transactions.
struct PoisonBisector {
    /// What to do next.
    enum Action: Equatable {
        /// Apply the events in this range of the batch, in one transaction.
        case apply(Range<Int>)
        /// The event at this index is refused on its own: park it.
        case park(Int)
        /// Every event was applied or parked.
        case done
    }

    /// Ranges still to apply, the next one last.
    private var pending: [Range<Int>]
    private var culprit: Int?

    /// A bisection of a batch of `count` events whose whole failed.
    init(count: Int) {
        let middle = count / 2
        pending = count > 1 ? [middle..<count, 0..<middle] : []
        culprit = count == 1 ? 0 : nil
    }

    /// The next action.
    func next() -> Action {
        if let culprit { return .park(culprit) }
        guard let range = pending.last else { return .done }
        return .apply(range)
    }

    /// The last ``Action/apply(_:)`` committed.
    mutating func applied() {
        _ = pending.popLast()
    }

    /// The last ``Action/apply(_:)`` was refused: split it, or name its single event the culprit.
    mutating func refused() {
        guard let range = pending.popLast() else { return }
        if range.count == 1 {
            culprit = range.lowerBound
        } else {
            let middle = range.lowerBound + range.count / 2
            pending.append(middle..<range.upperBound)
            pending.append(range.lowerBound..<middle)
        }
    }

    /// The last ``Action/park(_:)`` is done.
    mutating func parked() {
        culprit = nil
    }
}
