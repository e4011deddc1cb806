/// The lease-fencing protocol of a fleet: how a worker that lost a partition (frozen, cut off, or merely slow)
/// is kept from committing or sending anything more of it. No instances; this namespace holds the protocol's
/// description, and the types that implement it sit in `Fencing/` folders in three modules, each where its step
/// runs (BadgeStore inside transactions, BadgeDelivery inside the HTTP request, this module around them), so that
/// dependencies keep pointing BadgeCore → BadgeStore, BadgeDelivery → BadgeWorker.
///
/// Step by step:
/// 1. **Epoch.** A lease round (`LeaseManager`, `BadgeStore.leaseRound`) hands out `PartitionLease`s; a lease's
///    epoch grows with every change of owner. The database's clock is the only clock that decides expiry.
/// 2. **Commit fence.** Every batch's transaction checks, and key-share-locks, the lease it was consumed under
///    (`FleetQueries.checkLease`, BadgeStore `Fencing/`). A worker that lost it fails the batch with `lease_lost`;
///    the messages go back unacked.
/// 3. **Claim fence.** A delivery round claims pushes in one transaction that checks the lease the same way, locks
///    the claimed outbox rows and the devices' rows, and runs `PushGuard` (BadgeStore `Fencing/`): what reaches a
///    device never has a lower `badge_version` than what reached it before; a stale alert is rebuilt, never dropped.
/// 4. **Term.** The claim and the HTTP request are two steps, so the worker keeps its own ``LeaseTerm`` on each
///    lease: the instant it started the round that found the lease held, plus the TTL, less a tenth. Only the
///    worker's monotonic clock is read.
/// 5. **Send fence.** ``LeaseFence`` implements BadgeDelivery's `SendFence` with the term: before each HTTP
///    attempt, `prepare()` renews the lease in the database if the term ran out (or fails with `lease_lost`, and
///    the push stays claimed in the outbox for the new owner); when a connection asks for the body, `check()`
///    vetoes it if the term ran out (`FencedBody`, BadgeDelivery `Fencing/`), so the provider never gets a
///    complete request.
/// 6. **Late push.** A request that finished after its term may have landed after the new owner's pushes:
///    `PushDispatcher` renews the lease, and if it is gone plans a badge refresh into the partition's outbox
///    (`BadgeStore.refreshBadge`) for the owner to send after it, then leaves the partition.
/// 7. **Hold-off.** After this worker's own lease rounds missed the database for over a TTL, every lease looks
///    expired while most owners live: ``LeaseHoldOff`` takes only released partitions for two TTLs, and a
///    partition acquired meanwhile waits for its previous owner's claims (``LeaseTerm/isInDoubt(_:)``).
enum Fencing {}
