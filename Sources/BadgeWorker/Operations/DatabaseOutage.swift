/// A worker's view of whether its database can write, as a state machine: the work that waits for it, when the
/// outage began, and when it is over. No I/O and no clock of its own: `WorkerHealth` feeds it the events with the
/// time, and carries out the actions (a log line, readiness, the watchdog); the tests drive it directly.
///
/// An outage begins when a piece of work (a `Retry` call) first meets ``BadgeStore/DatabaseFailure/unavailable``,
/// and that piece of work waits until it succeeds. The worker is unready, and its watchdog excuses the waits, while
/// any work waits. The outage ends, and is logged as over, once nothing has waited for ``quietPeriod``: a disk that
/// is nearly full lets some transactions through and refuses the next (deletes free a few pages), and that is one
/// outage, logged once when it begins and once when it ends, not at every flap.
struct DatabaseOutage {
    /// What the health report does after an event.
    enum Action: Equatable {
        /// Nothing changes.
        case none
        /// The outage began: log it once, report unready, pause the watchdog.
        case began
        /// Work waits again within an outage that had let everything through: report unready, pause the watchdog.
        case waitsAgain
        /// Nothing waits any more: report ready, resume the watchdog (the outage is not over yet).
        case nothingWaits
        /// The outage is over: log it once, with how long it lasted and how often work waited again in it.
        case ended(lasted: Duration, relapses: Int)
    }

    /// How long nothing must wait before the outage counts as over.
    let quietPeriod: Duration

    /// Pieces of work waiting for the database now.
    private(set) var waiting = 0
    /// When the outage began; nil while the database writes.
    private(set) var since: ContinuousClock.Instant?
    /// When work last met the database unable to write.
    private var lastFailure: ContinuousClock.Instant?
    /// When the last waiting work was done.
    private var cleared: ContinuousClock.Instant?
    /// Times work waited again within the outage after nothing had waited.
    private var relapses = 0

    init(quietPeriod: Duration = .seconds(10)) {
        self.quietPeriod = quietPeriod
    }

    /// Whether the database is in an outage (begun and not yet over).
    var isInOutage: Bool { since != nil }

    /// A piece of work met the database unable to write for the first time: it waits from now on.
    mutating func workWaits(now: ContinuousClock.Instant) -> Action {
        waiting += 1
        lastFailure = now
        guard since != nil else {
            since = now
            relapses = 0
            return .began
        }
        guard waiting == 1 else { return .none }
        relapses += 1
        return .waitsAgain
    }

    /// Work that waits met the database unable to write again.
    mutating func stillFailing(now: ContinuousClock.Instant) {
        lastFailure = now
    }

    /// Work that waited is done: it succeeded, or it was given up (cancelled).
    mutating func workDone(now: ContinuousClock.Instant) -> Action {
        guard waiting > 0 else { return .none }
        waiting -= 1
        guard waiting == 0 else { return .none }
        cleared = now
        return .nothingWaits
    }

    /// A call to the database succeeded (any call: it is how an outage is seen to be over).
    mutating func succeeded(now: ContinuousClock.Instant) -> Action {
        guard let since, waiting == 0, let lastFailure, now - lastFailure >= quietPeriod else { return .none }
        defer {
            self.since = nil
            self.lastFailure = nil
            self.cleared = nil
        }
        return .ended(lasted: (cleared ?? now) - since, relapses: relapses)
    }
}
