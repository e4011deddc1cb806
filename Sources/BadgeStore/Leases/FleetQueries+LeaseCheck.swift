import BadgeCore

extension FleetQueries {
    /// Fails the batch with `lease_lost` unless `lease` is still held: its row names this worker and its epoch. On
    /// PostgreSQL the lease row stays key-share-locked until the batch commits, so nobody takes the partition over
    /// in between.
    ///
    /// An expired lease that nobody took over still passes: a takeover changes the owner and the epoch, so while
    /// they are this worker's nobody else has committed or claimed anything of the partition. That is what lets a
    /// worker go on with the batch it holds after a database outage longer than the TTL (every lease expired, none
    /// could be taken, since taking one writes), instead of stopping the partition and handing its unacked messages
    /// back to the broker, where each return counts toward the queue's delivery limit.
    ///
    /// The lock protocol: a change of owner always locks the row `FOR UPDATE` first (the lease round's takeover
    /// selects free rows `FOR UPDATE SKIP LOCKED`), which waits for every fenced transaction still holding the
    /// row. A renewal, which only moves `expires_at` forward, takes `FOR NO KEY UPDATE` and does not wait for
    /// them: under `FOR SHARE` every renewal would queue behind the in-flight batches and every new batch behind
    /// the renewal, a convoy that would slow every lease round and every batch under load.
    static func checkLease(_ lease: PartitionLease, sql: any SQLExecutor) async throws {
        var binds = SQLBinds()
        let rows = try await sql.query(
            "SELECT 1 FROM partition_leases WHERE \(held(lease, binds: &binds))" + sql.dialect.forKeyShare, binds.values
        )
        if rows.isEmpty { throw leaseLost(lease) }
    }

    /// The same check as a PostgreSQL `WITH` query named `lease` (one row while the lease is held, none
    /// otherwise), for statements that fold it into their first step and so save a round trip; its values go to
    /// `binds`. Materialised, and referenced from the statement's first `WHERE`, it is evaluated before the
    /// statement locks anything else, so the lock order is the one ``checkLease(_:sql:)`` gives.
    static func leaseQuery(_ lease: PartitionLease, binds: inout SQLBinds) -> String {
        "lease AS MATERIALIZED (SELECT 1 FROM partition_leases WHERE \(held(lease, binds: &binds))"
            + "\(SQLDialect.postgres.forKeyShare))"
    }

    /// ``leaseQuery(_:binds:)`` for a batch of several partitions, held by one worker: the `lease` query has one
    /// row per lease still held, all of them key-share-locked in partition order, and ``leaseCondition(count:)``
    /// holds only while every one of them is. One lease gives exactly the single lease's query.
    static func leaseQuery(_ leases: [PartitionLease], binds: inout SQLBinds) -> String {
        guard leases.count > 1 else { return leaseQuery(leases[0], binds: &binds) }
        let sorted = leases.sorted { $0.partition < $1.partition }
        let owner = binds.add(.text(sorted[0].worker))
        let pairs = sorted.map { lease in
            "(\(binds.add(.int(Int64(lease.partition))))::bigint, \(binds.add(.int(lease.epoch)))::bigint)"
        }
        return "lease AS MATERIALIZED (SELECT 1 FROM partition_leases WHERE owner = \(owner) AND (partition_id, epoch) "
            + "IN (\(pairs.joined(separator: ", "))) ORDER BY partition_id"
            + "\(SQLDialect.postgres.forKeyShare))"
    }

    /// The condition on a `partition_leases` row that it is `lease`: its partition, owner and epoch.
    static func held(_ lease: PartitionLease, binds: inout SQLBinds) -> String {
        "partition_id = \(binds.add(.int(Int64(lease.partition)))) AND owner = \(binds.add(.text(lease.worker))) "
            + "AND epoch = \(binds.add(.int(lease.epoch)))"
    }

    /// The condition, over the `lease` query of ``leaseQuery(_:binds:)``, that all of a batch's `count` leases are
    /// held (`true` when there are none).
    static func leaseCondition(count: Int) -> String {
        switch count {
        case 0: "true"
        case 1: "EXISTS (SELECT 1 FROM lease)"
        default: "(SELECT count(*) FROM lease) = \(count)"
        }
    }

    /// The error of a failed check of several leases (at least one of them lost).
    static func leaseLost(_ leases: [PartitionLease]) -> StoreError {
        guard leases.count > 1 else { return leaseLost(leases[0]) }
        let partitions = leases.map { "\($0.partition) (epoch \($0.epoch))" }.joined(separator: ", ")
        return StoreError(
            code: .leaseLost,
            message: "one of partitions \(partitions) is no longer leased to \(leases[0].worker)",
            transient: false)
    }

    /// The error of a failed lease check.
    static func leaseLost(_ lease: PartitionLease) -> StoreError {
        StoreError(
            code: .leaseLost,
            message: "partition \(lease.partition) is no longer leased to \(lease.worker) (epoch \(lease.epoch))",
            transient: false)
    }
}
