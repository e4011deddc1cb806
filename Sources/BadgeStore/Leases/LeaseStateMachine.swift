/// The fleet's lease manager as a state machine: it decides, from each lease round's answer, which partitions this
/// worker starts, keeps and stops, and what the next round asks for. No I/O: the worker's session runs the rounds and
/// carries out the actions; the tests drive it directly.
///
/// Rules:
/// - A partition whose lease the round renewed (same epoch) is kept: its term is renewed from the round's start.
/// - A running partition whose lease is gone (expired while this worker stalled, or taken over) stops at once; the
///   database fences any commit and the term any send.
/// - Above the fair share (`round.target`), the highest partitions stop after their batch in progress and are
///   released in the next round (never `basic.cancel`: their channel closes).
/// - Below it, held partitions that are not running start, lowest first; held ones beyond the share are released.
/// - After a round that missed the database for over a TTL (see ``LeaseHoldOff``), expired leases are not taken for
///   a while, and partitions acquired meanwhile wait for their previous owners' claims.
/// - Rounds come every third of the TTL; while the fleet rebalances (this worker acquired or gave up partitions,
///   holds more than its share, or saw the number of live workers change) they come every `fastInterval` for two
///   TTLs, so that a fleet that starts together, or a worker that joins, spreads the partitions in a fraction of a
///   second instead of a few rounds. A partition that stopped is released at once (the session runs a round as
///   soon as one stops).
public struct LeaseStateMachine: Sendable {
    /// What the session does after a round.
    public enum Action: Equatable, Sendable {
        /// Start consuming and delivering `lease`'s partition under a term confirmed at the round's start.
        case start(PartitionLease, waitsForEarlierClaims: Bool)
        /// The lease is still held: renew the partition's term from the round's start and ring its delivery loop.
        case renew(partition: Int)
        /// Stop the partition (after its batch and round in progress).
        case stop(partition: Int)
        /// The round missed the database: log it, careful takeovers for a while.
        case holdOff(gap: Duration, roundTook: Duration)
    }

    /// What the next round asks the database for.
    public struct Request: Equatable, Sendable {
        /// Partitions to release.
        public var releasing: Set<Int>
        /// Whether expired leases may be taken (see ``LeaseHoldOff``).
        public var takeExpired: Bool
    }

    /// The fleet's lease TTL.
    public let ttl: Duration
    /// Running partitions: their lease epoch, and whether they are stopping.
    private(set) var running: [Int: (epoch: Int64, stopping: Bool)] = [:]
    private var releasing: Set<Int> = []
    /// The start of the last round that succeeded, and the end of a hold-off on expired leases.
    private var lastRound: ContinuousClock.Instant?
    private var holdOffUntil: ContinuousClock.Instant?
    /// While the fleet is rebalancing (see ``nextRoundDelay(now:)``): until when rounds come fast.
    private var fastUntil: ContinuousClock.Instant?
    private var lastLiveWorkers: Int?

    /// The interval between rounds while the fleet rebalances.
    public let fastInterval: Duration

    /// A manager holding nothing yet, for leases of `ttl`.
    public init(ttl: Duration, fastInterval: Duration = .milliseconds(250)) {
        self.ttl = ttl
        self.fastInterval = min(fastInterval, ttl / 3)
    }

    /// How long to wait after a round that ended at `now` before the next one (sooner if a partition stops).
    public func nextRoundDelay(now: ContinuousClock.Instant) -> Duration {
        if let fastUntil, now < fastUntil { return fastInterval }
        return ttl / 3
    }

    /// A partition's stages ended and its channel closed: released in the next round.
    public mutating func stopped(_ partition: Int) {
        if running.removeValue(forKey: partition) != nil { releasing.insert(partition) }
    }

    /// The next round, started at `now`.
    public func request(now: ContinuousClock.Instant) -> Request {
        Request(
            releasing: releasing,
            takeExpired: LeaseHoldOff.mayTakeExpired(
                now: now, lastRound: lastRound, holdOffUntil: holdOffUntil, ttl: ttl))
    }

    /// A round started at `confirmed` and answered at `finished` with `round`; returns what to do, in order.
    public mutating func roundSucceeded(
        _ round: LeaseRound, confirmed: ContinuousClock.Instant, finished: ContinuousClock.Instant
    ) -> [Action] {
        var actions: [Action] = []
        if let until = LeaseHoldOff.holdOff(after: confirmed, finished: finished, lastRound: lastRound, ttl: ttl) {
            holdOffUntil = until
            actions.append(.holdOff(gap: confirmed - (lastRound ?? confirmed), roundTook: finished - confirmed))
        }
        let holdingOff = holdOffUntil.map { finished < $0 } ?? false
        lastRound = confirmed
        releasing = []
        let held = Dictionary(round.leases.map { ($0.partition, $0) }) { $0.epoch > $1.epoch ? $0 : $1 }
        for (partition, entry) in running.sorted(by: { $0.key < $1.key }) {
            if held[partition]?.epoch == entry.epoch {
                actions.append(.renew(partition: partition))
            } else if !entry.stopping {
                running[partition]?.stopping = true
                actions.append(.stop(partition: partition))
            }
        }
        let keeping = running.values.filter { !$0.stopping }.count
        if keeping > round.target {
            let kept = running.filter { !$0.value.stopping }.keys.sorted()
            for partition in kept.reversed().prefix(keeping - round.target) {
                running[partition]?.stopping = true
                actions.append(.stop(partition: partition))
            }
        } else {
            var count = keeping
            for (partition, lease) in held.sorted(by: { $0.key < $1.key }) where running[partition] == nil {
                if count >= round.target { break }
                running[partition] = (lease.epoch, false)
                count += 1
                actions.append(.start(lease, waitsForEarlierClaims: holdingOff))
            }
        }
        // Held but not wanted (over the share): released in the next round.
        for partition in held.keys where running[partition] == nil { releasing.insert(partition) }
        let rebalancing =
            !releasing.isEmpty || running.values.contains(where: \.stopping) || lastLiveWorkers != round.liveWorkers
            || actions.contains { if case .start = $0 { true } else if case .stop = $0 { true } else { false } }
        lastLiveWorkers = round.liveWorkers
        if rebalancing { fastUntil = finished + ttl * 2 }
        return actions
    }

    /// Graceful shutdown: every running partition stops.
    public mutating func stopAll() -> [Action] {
        var actions: [Action] = []
        for (partition, entry) in running.sorted(by: { $0.key < $1.key }) where !entry.stopping {
            running[partition]?.stopping = true
            actions.append(.stop(partition: partition))
        }
        return actions
    }

    /// Whether no partition is running any more.
    public var isIdle: Bool { running.isEmpty }

    /// Partitions to release in a last round (at shutdown).
    public var toRelease: Set<Int> { releasing }
}
