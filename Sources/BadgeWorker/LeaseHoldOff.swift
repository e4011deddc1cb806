/// When a fleet worker may take over partitions whose lease merely expired.
///
/// Normally at once: an expired lease means its owner died or froze. But when this worker's own lease rounds could
/// not reach the database for longer than a TTL (a database outage, or this worker was frozen), every lease looks
/// expired while most owners are alive: they still have to record what they sent before they hand their
/// partitions over, which they do by releasing them once their batch in progress failed with `lease_lost`. Taking
/// an expired lease at that moment would re-send those pushes. So for two TTLs after such a gap the worker takes
/// only released (or never leased) partitions.
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

    /// The end of the hold-off a round that started at `start` begins, if the previous successful round started
    /// more than a TTL before it; nil otherwise.
    static func holdOff(
        after start: ContinuousClock.Instant, lastRound: ContinuousClock.Instant?, ttl: Duration
    ) -> ContinuousClock.Instant? {
        guard let lastRound, start - lastRound > ttl else { return nil }
        return start + ttl * 2
    }
}
