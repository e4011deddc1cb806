import BadgeStore

/// The decisions of a partition's delivery loop (``PartitionDelivery``) as a state machine: it takes what the loop
/// sees (its doorbell, the clock) and what its rounds did, and answers what to do next. No I/O: `PartitionDelivery`
/// drives it, and the tests drive it directly.
///
/// Rules:
/// - Handed pushes (claimed by ingestion's own transaction) go first, before any claim.
/// - A claim runs at the start (what a previous run or owner left), after a ring that came after the previous claim
///   began, every `idlePoll` while quiet, when the earliest retry a round scheduled becomes due, and at once after
///   a claim that reached the round's size or took a full share of some device (`ClaimedPushes.reachedLimit`: a
///   device's backlog drains a share a round, round after round). It records the outcomes not recorded yet in its
///   own transaction.
/// - Outcomes waiting while the loop is quiet: recorded with the next claim when one comes within `recordDelay`,
///   on their own otherwise.
/// - Handed rounds that follow each other without a pause gather their outcomes until they are
///   `handedRecordSize`; those are then recorded aside, beside the next rounds (``Action/recordAside(_:)``),
///   unless a claim comes next, which records them itself. A claim does not come next while more handed pushes
///   wait, even when a ring waits too: they go first, and the outcomes would otherwise pile up behind them.
/// - Closed: the outcomes not recorded yet are recorded, and the loop ends.
///
/// At most one record runs aside at a time, and it is finished before anything but a handed round
/// (``Action/runsBesideRecord``): before a claim, a wait, another record and the end.
struct DeliveryLoop {
    /// What the loop sees when it decides.
    struct Observation {
        /// The doorbell is closed: the partition stops.
        var closed: Bool
        /// How many times the doorbell has been rung so far.
        var rings: Int
        /// Pushes were handed and not taken yet.
        var hasHanded: Bool
        /// Microseconds since the epoch.
        var now: Int64
    }

    /// What to do next.
    enum Action: Equatable {
        /// Take the handed pushes and send them without a claim; then ``handedSent(_:)`` (or ``handedFailed()``).
        case sendHanded
        /// Claim a round, recording these outcomes in the claim's transaction, and send it; then
        /// ``claimed(_:ringsSeen:)``, with the rings counted just before the claim began.
        case claim(recording: DeliveryRecord)
        /// Record these outcomes now, and wait for the record.
        case record(DeliveryRecord)
        /// Start recording these outcomes beside the next rounds.
        case recordAside(DeliveryRecord)
        /// Wait for a ring after `ringsSeen`, a handed push, the close, or `limit`.
        case wait(Duration, ringsSeen: Int)
        /// Record these outcomes, and end.
        case finish(DeliveryRecord)

        /// Whether it may run while a record runs aside; every other action waits for that record first.
        var runsBesideRecord: Bool { self == .sendHanded }
    }

    /// How long the loop waits for a ring while quiet before it claims anyway.
    let idlePoll: Duration
    /// How long outcomes may wait for the next claim before they are recorded on their own.
    let recordDelay: Duration
    /// How many outcomes of handed rounds gather before they are recorded aside.
    let handedRecordSize: Int

    /// Where the loop is between two decisions.
    private enum Phase {
        /// At the top of the loop.
        case top
        /// A handed round just finished.
        case afterHanded
        /// Outcomes waited up to `recordDelay` for a ring; `remaining` is what is left of the quiet wait.
        case afterBriefWait(remaining: Duration)
        /// Outcomes were just recorded on their own; `remaining` is what is left of the quiet wait.
        case afterRecord(remaining: Duration)
        /// A quiet wait ended.
        case afterWait
    }

    private var phase = Phase.top
    /// The earliest retry a round scheduled and the loop has not reached yet.
    private(set) var nextRetryAt: Int64?
    /// The outcomes not recorded yet.
    private(set) var pending = DeliveryRecord()
    /// Whether to claim without a new ring: at the start, after a full round (or a full share of a device), on a
    /// due retry or an idle poll.
    private(set) var claimNow = true
    /// Rings the last claim covered: those up to when it began.
    private(set) var ringsSeen = 0

    init(idlePoll: Duration, recordDelay: Duration, handedRecordSize: Int) {
        self.idlePoll = idlePoll
        self.recordDelay = recordDelay
        self.handedRecordSize = handedRecordSize
    }

    /// The next action, given what the loop sees now.
    mutating func next(_ seen: Observation) -> Action {
        let phase = self.phase
        self.phase = .top
        switch phase {
        case .top:
            return top(seen)
        case .afterHanded:
            // Under load handed pushes can keep coming without a pause. A claim records the outcomes itself, but
            // only when it comes next: handed pushes go first, so while more are waiting it does not.
            let claimsNext = !seen.hasHanded && !seen.closed && claimIsDue(seen)
            if pending.count >= handedRecordSize, !claimsNext {
                return .recordAside(takePending())
            }
            return top(seen)
        case .afterBriefWait(let remaining):
            return afterBriefWait(seen, remaining: remaining)
        case .afterRecord(let remaining):
            // Handed meanwhile: they go first.
            if seen.hasHanded || seen.closed { return top(seen) }
            self.phase = .afterWait
            return .wait(remaining, ringsSeen: ringsSeen)
        case .afterWait:
            // Neither rung nor handed anything: the idle poll (or a retry) is due.
            if seen.rings == ringsSeen, !seen.hasHanded { claimNow = true }
            return top(seen)
        }
    }

    /// A handed round (``Action/sendHanded``) finished.
    mutating func handedSent(_ round: PushDispatcher.RoundResult) {
        pending.add(round.record)
        noteRetry(round.nextRetryAt)
    }

    /// A handed round failed: the outcomes to record before the loop ends with its error (what went out before did
    /// go out).
    mutating func handedFailed() -> DeliveryRecord {
        takePending()
    }

    /// A claimed round (``Action/claim(recording:)``) finished; `rings` is how many times the doorbell had been
    /// rung just before the claim began (after the record aside finished): those rings are covered by the claim.
    mutating func claimed(_ round: PushDispatcher.RoundResult, ringsSeen rings: Int) {
        ringsSeen = rings
        pending = round.record
        noteRetry(round.nextRetryAt)
        claimNow = round.moreDue
    }

    private mutating func top(_ seen: Observation) -> Action {
        if seen.closed { return .finish(takePending()) }
        if seen.hasHanded {
            phase = .afterHanded
            return .sendHanded
        }
        if claimIsDue(seen) { return .claim(recording: takePending()) }
        var wait = idlePoll
        if let at = nextRetryAt {
            if at <= seen.now {
                nextRetryAt = nil
                claimNow = true
                return top(seen)
            }
            wait = min(wait, .microseconds(at - seen.now))
        }
        guard !pending.isEmpty else {
            phase = .afterWait
            return .wait(wait, ringsSeen: ringsSeen)
        }
        // Outcomes to record: with the next claim if one comes soon, otherwise on their own, so that a quiet
        // partition does not leave them unrecorded (sent again after a crash) for a whole idle poll.
        let brief = min(wait, recordDelay)
        guard brief > .zero else { return afterBriefWait(seen, remaining: wait) }
        phase = .afterBriefWait(remaining: wait - brief)
        return .wait(brief, ringsSeen: ringsSeen)
    }

    /// Whether a claim is due, once no handed pushes go first: a full round (or share of a device) asked for the next
    /// at once, a wait ended with nothing else to do, or the doorbell rang since the last claim began.
    private func claimIsDue(_ seen: Observation) -> Bool {
        claimNow || seen.rings > ringsSeen
    }

    private mutating func afterBriefWait(_ seen: Observation, remaining: Duration) -> Action {
        if seen.rings > ringsSeen || seen.closed { return top(seen) }
        if remaining <= .zero {
            claimNow = true
        } else {
            phase = .afterRecord(remaining: remaining)
        }
        return .record(takePending())
    }

    private mutating func takePending() -> DeliveryRecord {
        defer { pending = DeliveryRecord() }
        return pending
    }

    private mutating func noteRetry(_ at: Int64?) {
        if let at { nextRetryAt = min(nextRetryAt ?? at, at) }
    }
}
