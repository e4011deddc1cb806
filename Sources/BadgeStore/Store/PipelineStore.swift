import BadgeCore
import BadgeWire

/// Durable state of the pipeline: users' counts, notifications, messages, devices, processed event ids and the
/// outbox of planned pushes.
///
/// A store behaves exactly like the reference model (`InboxModel` in `Tests/BadgeModel`): the same events give the
/// same pushes (in the same order), counts, badges and badge versions. Counters are maintained incrementally; the
/// cost of an event does not grow with the number of stored or unread notifications.
///
/// Lifecycle: create a store (``StoreFactory/make(url:logger:)``), start ``run()`` in a task you own (for
/// example a child of a task group), call ``migrate()`` once, use it, then call ``close()``; `run()` returns
/// after `close()` or when its task is cancelled.
public protocol PipelineStore: Sendable {
    /// Runs the store's background work (the PostgreSQL connection pool) until ``close()`` is called or the
    /// calling task is cancelled. Start it in a task of its own before using a PostgreSQL store; an SQLite
    /// store works without it (its `run()` only waits).
    func run() async

    /// Applies the schema migrations that are not applied yet. Idempotent; safe when several workers start at
    /// once. Fails with `schema_too_new` (not transient) when the database's schema is newer than this code knows.
    /// On PostgreSQL no migration holds a lock that blocks other sessions' reads or writes for more than a few
    /// seconds: one that would wait longer fails with a transient error (`sqlstate_55P03`), to be tried again.
    func migrate() async throws

    /// Throws `schema_too_new` (not transient) when the database's schema no longer serves this code: a newer
    /// badgepipe applied a migration older code cannot run with since this store migrated. One read.
    func checkSchema() async throws

    /// Applies several partitions' batches in one database transaction (all or nothing), as if each were applied
    /// on its own under its context, one after another, and returns what each batch's events did. Batches of one
    /// worker's partitions (their users are disjoint) share the transaction's fixed cost this way. With leases,
    /// the transaction fails with `lease_lost` if any one of them is no longer held; it does not say which.
    /// A `maxDevicesPerUser` is taken from the first batch. Nothing is claimed: the partitions' delivery stages
    /// claim every push the batches plan.
    func apply(_ batches: [ApplyBatch], policy: BadgePolicy) async throws -> [[AppliedEvent]]

    /// One round of partition leasing for `worker` (call it every fraction of `ttlMilliseconds`): records the
    /// worker as alive, gives up the partitions in `releasing`, renews what it holds, and takes free partitions up
    /// to its fair share: released or never leased ones and, with `takeExpired`, ones whose owner let the lease
    /// expire.
    ///
    /// A worker passes `takeExpired: false` for a while after its own rounds could not reach the database: after
    /// a database outage every lease looks expired, but their owners are alive and still have to record what they
    /// sent before they hand their partitions over (by releasing them); taking an expired lease at once would
    /// re-send those pushes.
    func leaseRound(
        worker: String, partitions: Int, ttlMilliseconds: Int64, releasing: Set<Int>, takeExpired: Bool
    ) async throws -> LeaseRound

    /// Renews one lease on its own, between lease rounds: pushes out its expiry to `ttlMilliseconds` from now and
    /// returns true if `lease` is still held and unexpired; returns false (and changes nothing) if it is not.
    ///
    /// A worker calls it when its own record of the lease's expiry ran out (a slow lease round, a freeze) before
    /// it sends anything more under the lease.
    func renewLease(_ lease: PartitionLease, ttlMilliseconds: Int64) async throws -> Bool

    /// The delivery stage's claim: up to `limit` pushes of `partition` (all when nil) whose next attempt is due by
    /// the database's clock, oldest first, each with its age (``OutboxPush/age``), in one transaction: with
    /// `lease`, fails with `lease_lost` unless it is still held, so a worker that lost a partition sends nothing
    /// more of it. A device's pushes are taken in order (a row waiting for a retry holds back the later rows of
    /// its token), and a badge-only push followed by a later one to the same device is dropped as superseded.
    ///
    /// The push guard (`PushGuard`) keeps the `badge_version` of what reaches one device from ever decreasing: a
    /// push older than one already claimed for that device is dropped when it is badge-only and, when it is an
    /// alert, rebuilt with the user's current counts and badge (under `policy`) at a fresh, higher
    /// `badge_version`; it keeps its event, so its `apns-id` stays the same. A push to a token that moved to
    /// another user is dropped. Claimed rows are marked with the lease's epoch. With `skipClaimedBefore`, rows an
    /// earlier owner claimed under an older epoch are left for it to record.
    ///
    /// `recording` (the previous round's outcomes) is recorded first, in the same transaction, which saves a
    /// transaction per round; when the claim fails (`lease_lost`, say) nothing of it is recorded, and the caller
    /// records it with ``recordDeliveries(_:)``. The result says whether the claim reached `limit` (more may be
    /// due at once) or took everything due.
    func claimPushes(
        partition: Int?, limit: Int, policy: BadgePolicy, lease: PartitionLease?,
        skipClaimedBefore: Int64?, recording: DeliveryRecord
    ) async throws -> ClaimedPushes

    /// What waits in `partition`'s outbox beyond what its claims took (``OutboxAhead``): when its earliest retry is
    /// due, and whether it holds a push never attempted. A delivery loop asks after a claim that took everything it could, to sleep until
    /// then. One statement.
    func outboxAhead(partition: Int) async throws -> OutboxAhead

    /// Listens for wake-ups of partitions' delivery loops that other workers send through the database: a badge
    /// refresh planned in a partition after its lease moved on (``refreshBadge(after:partition:policy:)``), a
    /// look-ahead held back by another partition's rows (``outboxAhead(partition:)``). Calls `partition`
    /// with each partition woken and `listening` each time listening (re)starts (what was sent meanwhile is lost:
    /// the caller looks at every partition it holds). Returns when the calling task is cancelled; at once on a
    /// store that only one worker writes (SQLite).
    func listenForOutbox(
        listening: @escaping @Sendable () -> Void, partition: @escaping @Sendable (Int) -> Void) async

    /// Records a delivery round's outcomes in one transaction (see ``DeliveryRecord``).
    func recordDeliveries(_ record: DeliveryRecord) async throws

    /// Takes up to `limit` entries of token feedback to publish (see ``TokenFeedback``), oldest first: those no
    /// publisher holds, each held for `hold` from the database's now (another publisher takes what is left of them
    /// after that). One statement.
    func takeFeedback(limit: Int, hold: Duration) async throws -> [StoredTokenFeedback]

    /// How long until the earliest entry of token feedback is free to take (``takeFeedback(limit:hold:)``): zero
    /// when one is free now, nil when none waits. A publisher that took everything it could sleeps that long
    /// unless woken. One statement.
    func feedbackAhead() async throws -> Duration?

    /// Deletes entries of token feedback the broker confirmed. One statement.
    func deleteFeedback(_ ids: [Int64]) async throws

    /// Plans a badge-only push of the user's current badge, at a fresh `badge_version` (the user's version is
    /// bumped), to the device `push` went to, in the outbox of `partition`; returns false (and plans nothing) when
    /// the token no longer belongs to that user or is inactive.
    ///
    /// A fleet worker calls it when a push it sent finished only after its term on the partition's lease ended
    /// (it was frozen with the request on its way): that push may have reached the device after newer ones from
    /// the partition's new owner. The owner sends the refresh after them, so the device ends on the current badge.
    func refreshBadge(after push: PlannedPush, partition: Int?, policy: BadgePolicy) async throws -> Bool

    /// How many pushes wait in the outbox of each of `partitions`, and how old the oldest is by the database's
    /// clock (for metrics). One statement.
    func outboxBacklog(partitions: [Int]) async throws -> [OutboxBacklog]

    /// Deletes up to `limit` rows of `kind` older than `age` by the database's clock (the database's now less
    /// `age`) in one short transaction; returns how many it deleted.
    func purge(_ kind: RetentionKind, olderThan age: Duration, limit: Int) async throws -> Int

    /// Takes or renews the maintenance lease `name` for `worker` (free, expired, or already its own) for
    /// `ttlMilliseconds` from the database's now; returns whether `worker` holds it now.
    func maintenanceLease(_ name: String, worker: String, ttlMilliseconds: Int64) async throws -> Bool

    /// Closes the store: releases connections and makes ``run()`` return.
    func close() async throws
}

extension PipelineStore {
    /// A lease round that may take expired leases (see
    /// ``leaseRound(worker:partitions:ttlMilliseconds:releasing:takeExpired:)``).
    public func leaseRound(
        worker: String, partitions: Int, ttlMilliseconds: Int64, releasing: Set<Int>
    ) async throws -> LeaseRound {
        try await leaseRound(
            worker: worker, partitions: partitions, ttlMilliseconds: ttlMilliseconds, releasing: releasing,
            takeExpired: true)
    }
}
