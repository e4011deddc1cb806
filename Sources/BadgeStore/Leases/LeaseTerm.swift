import BadgeSupport

/// A partition lease together with this worker's own, conservative record of how long it is sure to hold it.
///
/// The database fences every commit and every claim, but a push is sent after its claim: a worker frozen in
/// between (SIGSTOP, a long GC-like stall, a paused VM) would send it on waking up, possibly after the
/// partition's new owner sent newer badges to the same device. So a push goes out only while the term is valid.
///
/// The term is valid until `confirmed + ttl − margin`, where `confirmed` is this worker's clock reading taken
/// *before* a database operation that found the lease held and set its expiry to the database's now + ttl. That
/// database now is later than `confirmed`, and nobody can take the partition over before the expiry, so while the
/// term is valid nobody else owns the partition: only the worker's own clock is used, no clocks have to agree.
/// Once the term ran out, ``ensureValid(renew:)`` renews the lease in the database before anything more is sent,
/// or reports it lost.
///
/// The term's end is a ``SendWindow`` (``window``), which the push sender reads right before it writes a
/// request's body: a worker frozen anywhere before that point (in the claim, in the connection pool's queue,
/// between retries) does not deliver the push after the partition moved on.
public final class LeaseTerm: Sendable {
    /// The lease this term is about.
    public let lease: PartitionLease
    /// How long a renewal holds the lease for (the fleet's lease TTL).
    public let ttl: Duration
    /// Open while the term is valid: pushes of the partition are written only while it is.
    public let window: SendWindow
    private let margin: Duration
    /// Until when pushes that an earlier owner claimed (and may have sent) are left to it to record; nil when
    /// they go out at once.
    private let inDoubtUntil: ContinuousClock.Instant?

    /// A term for a lease that a database operation started at `confirmed` found held (or acquired).
    /// `earlierClaimsWaitFrom`: when the lease was acquired just after a database outage, the instant this worker
    /// learnt it held it (the operation's answer), from which pushes an earlier owner claimed wait for
    /// ``earlierClaimsWait(ttl:)`` (see ``isInDoubt(_:)``).
    public init(
        lease: PartitionLease, ttl: Duration, confirmed: ContinuousClock.Instant,
        earlierClaimsWaitFrom acquired: ContinuousClock.Instant? = nil
    ) {
        self.lease = lease
        self.ttl = ttl
        self.margin = ttl / 10
        self.window = SendWindow(until: confirmed + ttl - ttl / 10)
        self.inDoubtUntil = acquired.map { $0 + Self.earlierClaimsWait(ttl: ttl) }
    }

    /// How long pushes an earlier owner claimed are left to it after a takeover just after a database outage: four
    /// TTLs, plus the longest pause between a waiting worker's tries (`Backoff.storeUnavailable`): the earlier
    /// owner records what it sent with its first store call that gets through, and that call may come that long
    /// after the database is back. Counted from when the new owner learnt it holds the lease, never from the start
    /// of a round that waited through the outage (that start may be as old as the outage: the window would have
    /// closed before the earlier owner could reach the database).
    public static func earlierClaimsWait(ttl: Duration) -> Duration {
        ttl * 4 + Backoff.storeUnavailable.maximum
    }

    /// Whether `push` should wait: the lease was acquired just after a database outage, an earlier owner of the
    /// partition claimed the push (under an older epoch) and may have sent it without recording it yet, and
    /// ``earlierClaimsWait(ttl:)`` has not passed since the lease was acquired. After an outage the previous owner is most likely alive: it records what it
    /// sent as soon as it reaches the database again, and re-sending at once would duplicate it. Otherwise (the
    /// owner died or froze) such pushes go out again at once, keeping their `apns-id`, before anything newer: a
    /// frozen owner's push that still lands late then lands as a duplicate, not as an older badge after a newer
    /// one.
    public func isInDoubt(_ push: OutboxPush) -> Bool {
        guard let inDoubtUntil, let claimed = push.claimedEpoch, claimed < lease.epoch else { return false }
        return ContinuousClock.now < inDoubtUntil
    }

    /// The epoch below which claimed rows are left to their claimer right now (this lease's epoch while rows an
    /// earlier owner claimed are in doubt, see ``isInDoubt(_:)``); nil when every row may go.
    public var skipClaimedBefore: Int64? {
        guard let inDoubtUntil, ContinuousClock.now < inDoubtUntil else { return nil }
        return lease.epoch
    }

    /// A lease round (or a renewal) started at `confirmed` found the lease still held and renewed it.
    public func renewed(confirmed: ContinuousClock.Instant) {
        window.extend(to: confirmed + ttl - margin)
    }

    /// ``ttl`` in milliseconds, as the store takes it.
    public var ttlMilliseconds: Int64 {
        ttl.components.seconds * 1000 + ttl.components.attoseconds / 1_000_000_000_000_000
    }

    /// Whether, by this worker's clock, the lease is certainly still held now.
    public var isValid: Bool { window.isOpen }

    /// Returns when the lease is certainly held for a while longer: at once while the term is valid, otherwise
    /// after renewing it through `renew` (which returns whether the lease was still held). Throws `lease_lost`
    /// when it was not.
    public func ensureValid(renew: (PartitionLease) async throws -> Bool) async throws {
        if isValid { return }
        let start = ContinuousClock.now
        guard try await renew(lease) else {
            throw StoreError(
                code: .leaseLost,
                message: "partition \(lease.partition) lease ran out on this worker's clock and was not renewable "
                    + "(epoch \(lease.epoch))",
                transient: false)
        }
        renewed(confirmed: start)
        if !isValid {
            throw StoreError(
                code: .leaseLost,
                message: "partition \(lease.partition) lease renewal took longer than the lease (epoch \(lease.epoch))",
                transient: false)
        }
    }
}
