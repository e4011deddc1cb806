/// Group commit of one worker's partitions' requests (their ingestion batches), as a state machine:
/// when a partition takes its batch (the tick), which requests share a transaction, and who runs it. No I/O:
/// ``TransactionGroup`` drives it, and the tests drive it directly.
///
/// **Rounds.** Each partition's stage arrives with its request and waits. The first to arrive while no round runs
/// leads: it takes a round (its own request first, then those waiting behind it, in arrival order, while the
/// round's weight stays within `maxWeight`) and runs it as one transaction. When the round ends, the oldest
/// request still waiting (which arrived while the round ran) leads the next one; its stage wakes to run it. So a
/// worker runs one such transaction at a time whatever the number of partitions it holds, a leader runs exactly
/// one round (its own request's), and nobody waits for more than the round in progress and its own.
///
/// **The tick.** A partition with messages asks for the tick (``tickRequested(now:urgent:)``) before it takes its batch
/// from its buffer, and rounds start at most once every `interval`: a partition that asks less than `interval` after
/// the last round began waits for the tick, with every other partition that asks meanwhile (one of them times it, the
/// others join), and all take their batches when it comes. One that asks later waits only a short gathering moment
/// (``gathering``) for the others. A partition that passed the tick is *armed* until it arrives with its request (or
/// withdraws, ``disarm()``), and a round does not start while partitions are armed: the last to arrive starts it. So
/// the partitions that took their batches at one tick share one transaction, and what arrives in a partition's buffer
/// while it waits for the tick goes with it rather than into the next round.
///
/// Why: each transaction costs its round trips, its commit and its statements' fixed work in the worker, in
/// PostgreSQL and in the kernel whatever its size. Left to start as soon as anything arrives, a live load makes
/// many transactions of a few events each, and that fixed cost is what saturates the machine (see
/// `docs/performance.md`). A partition whose buffer holds a full batch is *urgent*: it goes at once, since waiting
/// would not make its batch any bigger (a backlog is drained at full speed).
struct TransactionGroupStateMachine<Submission, TickWaiter> {
    /// What an arriving request's stage does.
    enum Arrival {
        /// Take the next round (``takeRound(now:)``) and run it.
        case lead
        /// Wait for the result, or to be handed the lead (``roundEnded()``).
        case wait
        /// Wait, and wake this submission's stage to lead the round: it waits at the head of the queue, and the
        /// arrival was the last one armed.
        case wake(Submission)
    }

    /// What happens when a round ended.
    enum Handoff {
        /// This submission's stage leads the next round.
        case lead(Submission)
        /// Nothing is waiting, or the partitions of the next round are still taking their batches (the last to
        /// arrive starts it): the next arrival decides.
        case idle
    }

    /// What a partition that asks for the tick does.
    enum TickStep: Equatable {
        /// Take the batch now (the partition is armed).
        case go
        /// Time the tick: sleep until this instant, then call ``tickElapsed()``.
        case time(until: ContinuousClock.Instant)
        /// Wait for the tick another partition times (``join(_:)``).
        case join
    }

    /// The most weight one round takes, unless its first request alone weighs more.
    let maxWeight: Int
    /// The least time between the starts of two rounds, for partitions that are not urgent.
    let interval: Duration
    private var waiting: [(submission: Submission, weight: Int)] = []
    private var head = 0
    /// Whether a round runs or is about to (a leader was named).
    private(set) var leading = false
    /// Partitions that passed the tick and have not arrived (nor withdrawn) yet.
    private(set) var armed = 0
    /// When the last round began.
    private(set) var lastRoundStart: ContinuousClock.Instant?
    /// Whether a partition times the next tick.
    private(set) var timing = false
    private var tickWaiters: [TickWaiter] = []

    /// `gathering`: see ``gathering``; nil for the default, `Duration.gatheringMoment(forInterval:)`.
    init(maxWeight: Int, interval: Duration = .zero, gathering: Duration? = nil) {
        self.maxWeight = max(1, maxWeight)
        self.interval = max(.zero, interval)
        self.gathering = max(.zero, gathering ?? .gatheringMoment(forInterval: self.interval))
    }

    /// Requests waiting for a round.
    var waitingCount: Int { waiting.count - head }

    /// Partitions waiting for the tick another one times (``join(_:)``).
    var joinedCount: Int { tickWaiters.count }

    /// A partition has messages and asks when to take its batch; `urgent` when it holds a full batch already.
    ///
    /// The tick comes `interval` after the last round began, and never sooner than ``gathering`` after it was
    /// asked for: the partitions of a round that took longer than `interval` ask again one after another as their
    /// stages wake, and without that moment the first would start a round alone and leave the others to wait a
    /// whole `interval` for the next (the rounds would fragment just when the machine is busiest).
    mutating func tickRequested(now: ContinuousClock.Instant, urgent: Bool) -> TickStep {
        if urgent { return arm() }
        if timing { return .join }
        let due = max(lastRoundStart.map { $0 + interval } ?? now, now + gathering)
        guard due > now else { return arm() }
        timing = true
        return .time(until: due)
    }

    /// How long a tick asked for after `interval` has passed waits for the worker's other partitions: by default a
    /// tenth of `interval`, at most 2 ms (none without an interval).
    let gathering: Duration

    /// `waiter` waits for the tick being timed; false when it came meanwhile (the partition is armed: it goes
    /// now).
    mutating func join(_ waiter: TickWaiter) -> Bool {
        guard timing else {
            _ = arm()
            return false
        }
        tickWaiters.append(waiter)
        return true
    }

    /// The tick came: the partition that timed it and every one that joined are armed; returns those to wake.
    mutating func tickElapsed() -> [TickWaiter] {
        timing = false
        let woken = tickWaiters
        tickWaiters = []
        armed += 1 + woken.count
        return woken
    }

    /// An armed partition withdraws (it has nothing to apply after all): the submission to wake to lead, if it was
    /// the last one the round waited for.
    mutating func disarm() -> Submission? {
        precondition(armed > 0, "only an armed partition withdraws")
        armed -= 1
        return startIfReady()
    }

    /// A request of `weight` arrives; `armed` when its partition passed the tick for it (its first request after
    /// the tick; the later slices of a heavy batch and the requests run again on their own arrive unarmed).
    mutating func arrived(_ submission: Submission, weight: Int, armed wasArmed: Bool = false) -> Arrival {
        if wasArmed {
            precondition(armed > 0, "an armed arrival follows a tick")
            armed -= 1
        }
        waiting.append((submission, weight))
        guard let leader = startIfReady() else { return .wait }
        return waitingCount == 1 ? .lead : .wake(leader)
    }

    /// The leader's round, which begins `now`: the oldest waiting request (the leader's own) and those behind it
    /// while the total stays within ``maxWeight``.
    mutating func takeRound(now: ContinuousClock.Instant) -> [Submission] {
        precondition(leading, "a round is taken by its leader")
        lastRoundStart = now
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
        leading = false
        if let next = startIfReady() { return .lead(next) }
        return .idle
    }

    /// The head of the queue, named leader, when no round runs, requests wait and no partition is still armed.
    private mutating func startIfReady() -> Submission? {
        guard !leading, armed == 0, head < waiting.count else { return nil }
        leading = true
        return waiting[head].submission
    }

    private mutating func arm() -> TickStep {
        armed += 1
        return .go
    }
}

extension TransactionGroupStateMachine.Arrival: Equatable where Submission: Equatable {}

extension Duration {
    /// The default gathering moment of a group whose rounds start at most once every `interval` (see
    /// `TransactionGroupStateMachine.gathering`): a tenth of it, at most 2 ms; none without an interval.
    static func gatheringMoment(forInterval interval: Duration) -> Duration {
        min(max(.zero, interval) / 10, .milliseconds(2))
    }
}
