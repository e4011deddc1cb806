/// When a fleet worker may take over partitions whose lease merely expired.
///
/// Normally at once: an expired lease means its owner died or froze. But when this worker's own lease rounds could
/// not reach the database for longer than a TTL (a database outage, or this worker was frozen), every lease looks
/// expired while most owners are alive: they still have to record what they sent before they hand their
/// partitions over, which they do by releasing them once their batch in progress failed with `lease_lost`. Taking
/// an expired lease at that moment would re-send those pushes. So for two TTLs after such a gap the worker takes
/// only released (or never leased) partitions, and a partition it acquires meanwhile waits for its previous owner
/// to record the pushes it claimed (see `LeaseTerm.isInDoubt(_:)`).
enum LeaseHoldOff {
    /// Whether a round starting `now` may take expired leases.
    static func mayTakeExpired(
        now: ContinuousClock.Instant, lastRound: ContinuousClock.Instant?, holdOffUntil: ContinuousClock.Instant?,
        ttl: Duration
    ) -> Bool {
        if let lastRound, now - lastRound > ttl { return false }
        if let holdOffUntil, now < holdOffUntil { return false }
        return true
    }

    /// The end of the hold-off that a round (started at `start`, done at `finished`) begins when the database was
    /// out of reach: the previous successful round started more than a TTL before this one, or this one took more
    /// than half a TTL (it waited in the connection pool through an outage); nil otherwise.
    static func holdOff(
        after start: ContinuousClock.Instant, finished: ContinuousClock.Instant, lastRound: ContinuousClock.Instant?,
        ttl: Duration
    ) -> ContinuousClock.Instant? {
        let missed = lastRound.map { start - $0 > ttl } ?? false
        guard missed || finished - start > ttl / 2 else { return nil }
        return finished + ttl * 2
    }
}
