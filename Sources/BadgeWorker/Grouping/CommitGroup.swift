/// Group commit of one worker's partitions' requests (their ingestion batches), as a state machine:
/// which requests share a transaction, and who runs it. No I/O: ``TransactionGroup`` drives it, and the tests
/// drive it directly.
///
/// Each partition's stage arrives with its request and waits. The first to arrive while no round runs leads: it
/// takes a round (its own request first, then those waiting behind it, in arrival order, while the round's weight
/// stays within `maxWeight`) and runs it as one transaction. When the round ends, the oldest request still waiting
/// (which arrived while the round ran) leads the next one; its stage wakes to run it. So a worker runs one such
/// transaction at a time whatever the number of partitions it holds, a leader runs exactly one round (its own
/// request's), and nobody waits for more than the round in progress and its own.
struct CommitGroup<Submission> {
    /// What an arriving request's stage does.
    enum Arrival: Equatable {
        /// Take the next round (``takeRound()``) and run it.
        case lead
        /// Wait for the result, or to be handed the lead (``roundEnded()``).
        case wait
    }

    /// What happens when a round ended.
    enum Handoff {
        /// This submission's stage leads the next round.
        case lead(Submission)
        /// Nothing is waiting: the next arrival leads.
        case idle
    }

    /// The most weight one round takes, unless its first request alone weighs more.
    let maxWeight: Int
    private var waiting: [(submission: Submission, weight: Int)] = []
    private var head = 0
    /// Whether a round runs or is about to (a leader was named).
    private(set) var leading = false

    init(maxWeight: Int) {
        self.maxWeight = max(1, maxWeight)
    }

    /// Requests waiting for a round.
    var waitingCount: Int { waiting.count - head }

    /// A request of `weight` arrives.
    mutating func arrived(_ submission: Submission, weight: Int) -> Arrival {
        waiting.append((submission, weight))
        if leading { return .wait }
        leading = true
        return .lead
    }

    /// The leader's round: the oldest waiting request (the leader's own) and those behind it while the total stays
    /// within ``maxWeight``.
    mutating func takeRound() -> [Submission] {
        precondition(leading, "a round is taken by its leader")
        var round: [Submission] = []
        var total = 0
        while head < waiting.count {
            let next = waiting[head]
            if !round.isEmpty, total + next.weight > maxWeight { break }
            round.append(next.submission)
            total += next.weight
            head += 1
        }
        // Drop what was taken once it is at least half of the array: amortised O(1) a request, and the array stays
        // bounded even when rounds never take everything waiting.
        if head * 2 >= waiting.count {
            waiting.removeFirst(head)
            head = 0
        }
        return round
    }

    /// The round in progress ended: who leads the next.
    mutating func roundEnded() -> Handoff {
        guard head < waiting.count else {
            leading = false
            return .idle
        }
        return .lead(waiting[head].submission)
    }
}
