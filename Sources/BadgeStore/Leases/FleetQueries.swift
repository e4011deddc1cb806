import BadgeCore

/// Partition leases, written once for both backends (the fencing check is in `FleetQueries+LeaseCheck.swift`,
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
