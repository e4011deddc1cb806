import BadgeStore

/// The decisions of a partition's delivery loop (``PartitionDelivery``) as a state machine: it takes what the loop
/// sees (its doorbell, the clock) and what its rounds did, and answers what to do next. No I/O: `PartitionDelivery`
/// drives it, and the tests drive it directly.
///
/// Rules:
/// - A claim runs at the start (what a previous run or owner left), after a ring that came after the previous claim
///   began, when the earliest retry known becomes due, at once after a claim that reached the round's size or took
///   a full share of some device (`ClaimedPushes.reachedLimit`: a device's backlog drains a share a round, round
///   after round), and every `heldBackPoll` while the partition holds pushes held back. It records the outcomes
///   not recorded yet in its own transaction.
/// - No timer runs for nothing: a claim that took everything it could also reads what it left in the outbox
///   (`ClaimedPushes.ahead`): when the partition's earliest retry is due (one a previous owner scheduled, say) and
///   whether it holds pushes held back, which become due without anything the loop hears of (an earlier push of
///   their device in another partition, recorded by another worker). When some are held back, the loop looks
///   ahead once more after its outcomes are recorded (``Action/lookAhead``), which names the partitions holding
///   them. Then it sleeps until the earliest retry, `heldBackPoll` while pushes are held back, or until woken by
///   new work.
/// - A retry is due its delay after the record that holds it is written, by the database's clock: the loop wakes
///   for it that long after the write returned, on its own monotonic clock (never earlier than the database
///   makes it due, and never reading its wall clock).
/// - Outcomes waiting while the loop is quiet: recorded with the next claim when one comes within `recordDelay`,
///   on their own otherwise.
/// - Closed: the outcomes not recorded yet are recorded, and the loop ends.
struct DeliveryStateMachine {
    /// What the loop sees when it decides.
    struct Observation {
        /// The doorbell is closed: the partition stops.
        var closed: Bool
        /// How many times the doorbell has been rung so far.
        var rings: Int
        /// The monotonic clock's time.
        var now: ContinuousClock.Instant
    }

    /// What to do next.
    enum Action: Equatable {
        /// Claim a round, recording these outcomes in the claim's transaction, and send it; then
        /// ``claimed(_:ringsSeen:)``, with the rings counted just before the claim began.
        case claim(recording: DeliveryRecord)
        /// Record these outcomes now, and wait for the record; then ``recorded(at:)``.
        case record(DeliveryRecord)
        /// Read what waits in the partition's outbox beyond what the claim took; then ``lookedAhead(_:at:)``.
        case lookAhead
        /// Wait for a ring after `ringsSeen`, the close, or `limit` (nil: no limit).
        case wait(Duration?, ringsSeen: Int)
        /// Record these outcomes, and end.
        case finish(DeliveryRecord)
    }

    /// How long the loop waits before it claims again while the partition holds pushes held back (see
    /// ``lookedAhead(_:at:)``).
    let heldBackPoll: Duration
    /// How long outcomes may wait for the next claim before they are recorded on their own.
    let recordDelay: Duration

    /// Where the loop is between two decisions.
    private enum Phase {
        /// At the top of the loop.
        case top
        /// Outcomes waited up to `recordDelay` for a ring.
        case afterBriefWait
    }

    private var phase = Phase.top
    /// When the earliest retry written so far is due (the loop has not reached it yet), on the monotonic clock.
    private(set) var nextRetryAt: ContinuousClock.Instant?
    /// When to claim again because the partition holds pushes held back (see ``lookedAhead(_:at:)``).
    private(set) var heldBackPollAt: ContinuousClock.Instant?
    /// The last claim took everything it could: look ahead in the outbox once its outcomes are recorded.
    private(set) var looksAhead = false
    /// The earliest retry of the record the last claim or record action writes: due its delay after that returns.
    private var writingRetry: Duration?
    /// The outcomes not recorded yet.
    private(set) var pending = DeliveryRecord()
    /// Whether to claim without a new ring: at the start, after a full round (or a full share of a device), on a
    /// due retry or when pushes held back are looked at again.
    private(set) var claimNow = true
    /// Rings the last claim covered: those up to when it began.
    private(set) var ringsSeen = 0

    init(heldBackPoll: Duration, recordDelay: Duration) {
        self.heldBackPoll = heldBackPoll
        self.recordDelay = recordDelay
    }

    /// The next action, given what the loop sees now.
    mutating func next(_ seen: Observation) -> Action {
        let phase = self.phase
        self.phase = .top
        switch phase {
        case .top:
            return top(seen)
        case .afterBriefWait:
            // Rung meanwhile: the claim records the outcomes. Otherwise they are recorded on their own.
            if seen.rings > ringsSeen || seen.closed { return top(seen) }
            return recordPending()
        }
    }

    /// A claimed round (``Action/claim(recording:)``) finished; `rings` is how many times the doorbell had been
    /// rung just before the claim began: those rings are covered by the claim.
    /// The claim wrote its recording before it returned (``DeliveryRounds/RoundResult/claimedAt``).
    mutating func claimed(_ round: DeliveryRounds.RoundResult, ringsSeen rings: Int) {
        recorded(at: round.claimedAt)
        ringsSeen = rings
        pending = round.record
        noteRetry(round.nextRetryAt)
        claimNow = round.moreDue
        heldBackPollAt = nil
        looksAhead = false
        guard !round.moreDue else { return }
        if let ahead = round.ahead, !ahead.heldBack {
            // The claim read what it left (a retry due later, nothing held back): no look-ahead of its own.
            lookedAhead(ahead, at: round.claimedAt)
        } else {
            // Held back (by a row of another partition, say), or unknown: the look-ahead names the holders.
            looksAhead = true
        }
    }

    /// The look-ahead (``Action/lookAhead``) read `ahead`; `now` is when it returned. A retry due its delay from the
    /// database's now is due that long after `now` at the latest. A retry due already, which the claim just before
    /// did not take, is held back like a push never attempted.
    mutating func lookedAhead(_ ahead: OutboxAhead, at now: ContinuousClock.Instant) {
        var heldBack = ahead.heldBack
        if let retryIn = ahead.retryIn {
            if retryIn > .zero { noteRetry(now + retryIn) } else { heldBack = true }
        }
        heldBackPollAt = heldBack ? now + heldBackPoll : nil
    }

    /// The record of the last ``Action/record(_:)`` (or claim) was written; `now` is when the write returned.
    mutating func recorded(at now: ContinuousClock.Instant) {
        if let delay = writingRetry { noteRetry(now + delay) }
        writingRetry = nil
    }

    private mutating func top(_ seen: Observation) -> Action {
        if seen.closed { return .finish(takePending()) }
        if claimIsDue(seen) {
            writingRetry = pending.earliestRetry
            return .claim(recording: takePending())
        }
        if let at = wakeAt, at <= seen.now {
            // A retry came due, or it is time to look again at pushes held back.
            if let retry = nextRetryAt, retry <= seen.now { nextRetryAt = nil }
            if let poll = heldBackPollAt, poll <= seen.now { heldBackPollAt = nil }
            claimNow = true
            return top(seen)
        }
        if !pending.isEmpty {
            // Outcomes to record: with the next claim if one comes soon, otherwise on their own, so that a quiet
            // partition does not leave them unrecorded (sent again after a crash).
            let brief = min(wakeAt.map { $0 - seen.now } ?? recordDelay, recordDelay)
            guard brief > .zero else { return recordPending() }
            phase = .afterBriefWait
            return .wait(brief, ringsSeen: ringsSeen)
        }
        if looksAhead {
            // After the record of the claim's round (its rows are gone from the outbox by then).
            looksAhead = false
            return .lookAhead
        }
        return .wait(wakeAt.map { $0 - seen.now }, ringsSeen: ringsSeen)
    }

    /// The earliest time the loop must claim without a ring, if any.
    private var wakeAt: ContinuousClock.Instant? {
        switch (nextRetryAt, heldBackPollAt) {
        case (let retry?, let poll?): min(retry, poll)
        case (let retry, let poll): retry ?? poll
        }
    }

    /// Whether a claim is due: a full round (or share of a device) asked for the next
    /// at once, a retry came due, pushes held back are looked at again, or the doorbell rang since the last claim
    /// began.
    private func claimIsDue(_ seen: Observation) -> Bool {
        claimNow || seen.rings > ringsSeen
    }

    private mutating func recordPending() -> Action {
        writingRetry = pending.earliestRetry
        return .record(takePending())
    }

    private mutating func takePending() -> DeliveryRecord {
        defer { pending = DeliveryRecord() }
        return pending
    }

    private mutating func noteRetry(_ at: ContinuousClock.Instant?) {
        if let at { nextRetryAt = min(nextRetryAt ?? at, at) }
    }
}
