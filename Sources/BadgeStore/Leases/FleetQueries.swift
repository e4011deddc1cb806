import BadgeCore

/// Partition leases, written once for both backends (the fencing check below,
/// claims in ``DeliveryQueries``). The database's clock is the only clock: workers' clocks never have to agree.
enum FleetQueries {
    /// The database's time as the expression is evaluated, in microseconds since the epoch (PostgreSQL's
    /// `clock_timestamp()`: after any lock wait earlier in the statement). For leases, whose expiry must count from
    /// when they were really renewed.
    static func now(_ dialect: SQLDialect) -> String {
        switch dialect {
        case .postgres: return "CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000000 AS BIGINT)"
        case .sqlite: return "CAST((julianday('now') - 2440587.5) * 86400000000 AS INTEGER)"
        }
    }

    /// The database's time at the start of the statement, in microseconds since the epoch: one value however often
    /// and wherever the statement uses it (PostgreSQL's `statement_timestamp()`; on SQLite a scalar subquery, which
    /// runs once per statement). Every stored time but a lease's (when a push was planned, when it is due, when an
    /// event id or tombstone was recorded) is written with it, and every comparison with a stored time is made
    /// against it: a worker's own clock never reaches the database, so workers whose clocks disagree agree on what
    /// is due and what is old. A statement that compares one time twice (a claim: is this row due, does an earlier
    /// row of its device still wait) sees the same instant both times.
    static func statementNow(_ dialect: SQLDialect) -> String {
        switch dialect {
        case .postgres: return "(SELECT CAST(EXTRACT(EPOCH FROM statement_timestamp()) * 1000000 AS BIGINT))"
        case .sqlite: return "(SELECT \(now(.sqlite)))"
        }
    }

    /// One lease round for `worker` (see
    /// ``PipelineStore/leaseRound(worker:partitions:ttlMilliseconds:releasing:takeExpired:)``).
    static func round(
        worker: String, partitions: Int, ttlMilliseconds: Int64, releasing: Set<Int>, takeExpired: Bool,
        database: any SQLTransactor
    ) async throws -> LeaseRound {
        try await database.transaction { sql in
            let now = Self.now(sql.dialect)
            let ttl = ttlMilliseconds * 1000
            // Rows for partitions that have none yet. The NOT EXISTS keeps the usual round from attempting an insert
            // at all: a conflicting insert would wait for whoever is renewing that row.
            let values = (0..<partitions).map { "(\($0))" }.joined(separator: ", ")
            try await sql.execute(
                "INSERT INTO partition_leases (partition_id) SELECT v.column1 FROM (VALUES \(values)) AS v "
                    + "WHERE NOT EXISTS (SELECT 1 FROM partition_leases l WHERE l.partition_id = v.column1) "
                    + "ON CONFLICT (partition_id) DO NOTHING")
            var seen = SQLBinds()
            try await sql.execute(
                "INSERT INTO fleet_workers (worker_id, last_seen) VALUES (\(seen.add(.text(worker))), \(now)) "
                    + "ON CONFLICT (worker_id) DO UPDATE SET last_seen = excluded.last_seen",
                seen.values)
            // Stale workers go; rows another round is deleting right now are skipped (two rounds deleting the
            // same rows in different orders deadlocked).
            var stale = SQLBinds()
            try await sql.execute(
                "DELETE FROM fleet_workers WHERE worker_id IN (SELECT worker_id FROM fleet_workers WHERE last_seen < "
                    + "\(now) - \(stale.add(.int(ttl * 20)))" + sql.dialect.forUpdateSkipLocked + ")",
                stale.values)
            var alive = SQLBinds()
            let live =
                try await sql.query(
                    "SELECT COUNT(*) AS live FROM fleet_workers WHERE last_seen >= \(now) - \(alive.add(.int(ttl)))",
                    alive.values
                ).first?["live"].int64 ?? 1
            for partition in releasing.sorted() {
                var release = SQLBinds()
                try await sql.execute(
                    "UPDATE partition_leases SET owner = NULL, expires_at = 0 "
                        + "WHERE partition_id = \(release.add(.int(Int64(partition)))) "
                        + "AND owner = \(release.add(.text(worker)))",
                    release.values)
            }
            // Every lease still in this worker's name is renewed, expired or not: nobody has owned the partition
            // since (a change of owner writes the owner), so nobody committed or sent anything of it. After a
            // database outage longer than the TTL the owners keep their partitions, and the messages they hold,
            // instead of handing them back to the broker (see `checkLease`).
            var renew = SQLBinds()
            var held = try await sql.query(
                "UPDATE partition_leases SET expires_at = \(now) + \(renew.add(.int(ttl))) "
                    + "WHERE owner = \(renew.add(.text(worker))) RETURNING partition_id, epoch",
                renew.values
            ).compactMap(lease(worker))
            let target = (partitions + Int(max(1, live)) - 1) / Int(max(1, live))
            if held.count < target {
                // Free partitions, starting from a place that depends on the worker so that workers starting
                // together do not all reach for the same ones.
                let free = try await sql.query(
                    "SELECT partition_id FROM partition_leases WHERE expires_at <= \(now)"
                        + (takeExpired ? "" : " AND owner IS NULL") + " ORDER BY partition_id"
                        + sql.dialect.forUpdateSkipLocked, []
                ).compactMap { try $0["partition_id"].int64 }.map(Int.init)
                    // A lease renewed above can look expired again by now if the renewal waited on row locks for
                    // longer than the TTL: it is held, not free.
                    .filter { partition in !held.contains { $0.partition == partition } }
                let start = Int(
                    UInt(bitPattern: worker.utf8.reduce(5381) { ($0 &* 33) &+ Int($1) }) % UInt(max(1, free.count)))
                let rotated = Array(free[start...] + free[..<start]).prefix(target - held.count)
                for partition in rotated {
                    var take = SQLBinds()
                    let taken = try await sql.query(
                        "UPDATE partition_leases SET owner = \(take.add(.text(worker))), epoch = epoch + 1, "
                            + "expires_at = \(now) + \(take.add(.int(ttl))) "
                            + "WHERE partition_id = \(take.add(.int(Int64(partition)))) AND expires_at <= \(now)"
                            + (takeExpired ? "" : " AND owner IS NULL") + " RETURNING partition_id, epoch",
                        take.values
                    ).compactMap(lease(worker))
                    held.append(contentsOf: taken)
                }
            }
            return LeaseRound(
                leases: held.sorted { $0.partition < $1.partition }, liveWorkers: Int(live), target: target)
        }
    }

    /// Renews `lease` alone (see ``PipelineStore/renewLease(_:ttlMilliseconds:)``).
    static func renew(
        _ lease: PartitionLease, ttlMilliseconds: Int64, database: any SQLTransactor
    ) async throws
        -> Bool
    {
        try await database.transaction { sql in
            let now = Self.now(sql.dialect)
            var binds = SQLBinds()
            let statement =
                "UPDATE partition_leases SET expires_at = \(now) + \(binds.add(.int(ttlMilliseconds * 1000))) "
                + "WHERE \(held(lease, binds: &binds)) RETURNING partition_id"
            return try await !sql.query(statement, binds.values).isEmpty
        }
    }

    private static func lease(_ worker: String) -> (SQLRow) throws -> PartitionLease? {
        { row in
            guard let partition = try row["partition_id"].int64, let epoch = try row["epoch"].int64 else { return nil }
            return PartitionLease(partition: Int(partition), epoch: epoch, worker: worker)
        }
    }
}

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
