import BadgeStore

/// The decisions of a partition's delivery loop (``PartitionDelivery``) as a state machine: it takes what the loop
/// sees (its doorbell, the clock) and what its rounds did, and answers what to do next. No I/O: `PartitionDelivery`
/// drives it, and the tests drive it directly.
///
/// Rules:
/// - Handed pushes (claimed by ingestion's own transaction) go first, before any claim.
/// - A claim runs at the start (what a previous run or owner left), after a ring that came after the previous claim
///   began, when the earliest retry known becomes due, at once after a claim that reached the round's size or took
///   a full share of some device (`ClaimedPushes.reachedLimit`: a device's backlog drains a share a round, round
///   after round), and every `heldBackPoll` while the partition holds pushes held back. It records the outcomes
///   not recorded yet in its own transaction.
/// - No timer runs for nothing: after a claim that took everything it could, once its outcomes are recorded, the
///   loop looks ahead in the outbox (``Action/lookAhead``): when the partition's earliest retry is due (one a
///   previous owner scheduled, say) and whether it holds pushes held back, which become due without anything the
///   loop hears of (an earlier push of their device in another partition, recorded by another worker). Then it
///   sleeps until the earliest retry, `heldBackPoll` while pushes are held back, or until woken by new work.
/// - A retry is due its delay after the record that holds it is written, by the database's clock: the loop wakes
///   for it that long after the write returned, on its own monotonic clock (never earlier than the database
///   makes it due, and never reading its wall clock). Before it waits while a record with retries runs aside, it
///   waits for that record (``Action/awaitRecordAside``).
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
struct DeliveryStateMachine {
    /// What the loop sees when it decides.
    struct Observation {
        /// The doorbell is closed: the partition stops.
        var closed: Bool
        /// How many times the doorbell has been rung so far.
        var rings: Int
        /// Pushes were handed and not taken yet.
        var hasHanded: Bool
        /// The monotonic clock's time.
        var now: ContinuousClock.Instant
    }

    /// What to do next.
    enum Action: Equatable {
        /// Take the handed pushes and send them without a claim; then ``handedSent(_:)`` (or ``handedFailed()``).
        case sendHanded
        /// Claim a round, recording these outcomes in the claim's transaction, and send it; then
        /// ``claimed(_:ringsSeen:)``, with the rings counted just before the claim began.
        case claim(recording: DeliveryRecord)
        /// Record these outcomes now, and wait for the record; then ``recorded(at:)``.
        case record(DeliveryRecord)
        /// Start recording these outcomes beside the next rounds; once it is done, ``recordedAside(at:)``.
        case recordAside(DeliveryRecord)
        /// Wait for the record running aside (it holds retries, and the wait for them counts from when it is
        /// written); then ``recordedAside(at:)``.
        case awaitRecordAside
        /// Read what waits in the partition's outbox beyond what the claim took; then ``lookedAhead(_:at:)``.
        case lookAhead
        /// Wait for a ring after `ringsSeen`, a handed push, the close, or `limit` (nil: no limit).
        case wait(Duration?, ringsSeen: Int)
        /// Record these outcomes, and end.
        case finish(DeliveryRecord)

        /// Whether it may run while a record runs aside; every other action waits for that record first.
        var runsBesideRecord: Bool { self == .sendHanded }
    }

    /// How long the loop waits before it claims again while the partition holds pushes held back (see
    /// ``lookedAhead(_:at:)``).
    let heldBackPoll: Duration
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
    /// Whether a record runs aside (from ``Action/recordAside(_:)`` until ``recordedAside(at:)``).
    private(set) var recordingAside = false
    /// The earliest retry of the record running aside: due its delay after that record is written.
    private(set) var asideRetry: Duration?
    /// The outcomes not recorded yet.
    private(set) var pending = DeliveryRecord()
    /// Whether to claim without a new ring: at the start, after a full round (or a full share of a device), on a
    /// due retry or when pushes held back are looked at again.
    private(set) var claimNow = true
    /// Rings the last claim covered: those up to when it began.
    private(set) var ringsSeen = 0

    init(heldBackPoll: Duration, recordDelay: Duration, handedRecordSize: Int) {
        self.heldBackPoll = heldBackPoll
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
                // One record aside at a time: the next starts once the loop knows the previous one is written.
                if recordingAside {
                    self.phase = .afterHanded
                    return .awaitRecordAside
                }
                recordingAside = true
                asideRetry = pending.earliestRetry
                return .recordAside(takePending())
            }
            return top(seen)
        case .afterBriefWait:
            // Rung meanwhile: the claim records the outcomes. Otherwise they are recorded on their own.
            if seen.rings > ringsSeen || seen.closed { return top(seen) }
            return recordPending()
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
    /// The claim wrote its recording before it returned (``PushDispatcher/RoundResult/claimedAt``).
    mutating func claimed(_ round: PushDispatcher.RoundResult, ringsSeen rings: Int) {
        recorded(at: round.claimedAt)
        ringsSeen = rings
        pending = round.record
        noteRetry(round.nextRetryAt)
        claimNow = round.moreDue
        looksAhead = !round.moreDue
        heldBackPollAt = nil
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

    /// The record running aside (``Action/recordAside(_:)``) was written; `now` is when that was seen (at or after
    /// it returned).
    mutating func recordedAside(at now: ContinuousClock.Instant) {
        if let delay = asideRetry { noteRetry(now + delay) }
        asideRetry = nil
        recordingAside = false
    }

    private mutating func top(_ seen: Observation) -> Action {
        if seen.closed { return .finish(takePending()) }
        if seen.hasHanded {
            phase = .afterHanded
            return .sendHanded
        }
        if claimIsDue(seen) {
            writingRetry = pending.earliestRetry
            return .claim(recording: takePending())
        }
        // The record running aside holds retries: how long to wait for them is known once it is written.
        if asideRetry != nil { return .awaitRecordAside }
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
            // After every record of the claim's round (its rows are gone from the outbox by then).
            if recordingAside { return .awaitRecordAside }
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

    /// Whether a claim is due, once no handed pushes go first: a full round (or share of a device) asked for the next
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
