import BadgeCore

/// Partition leases and claims, written once for both backends (the fencing check is in
/// `Fencing/FleetQueries+LeaseCheck.swift`). The database's clock is the only clock: workers' clocks never have to
/// agree.
enum FleetQueries {
    static func now(_ dialect: SQLDialect) -> String {
        switch dialect {
        case .postgres: return "CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000000 AS BIGINT)"
        case .sqlite: return "CAST((julianday('now') - 2440587.5) * 86400000000 AS INTEGER)"
        }
    }

    /// One lease round for `worker` (see
    /// ``BadgeStore/leaseRound(worker:partitions:ttlMilliseconds:releasing:takeExpired:)``).
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
            try await sql.execute(
                "INSERT INTO fleet_workers (worker_id, last_seen) VALUES ($1, \(now)) "
                    + "ON CONFLICT (worker_id) DO UPDATE SET last_seen = excluded.last_seen",
                [.text(worker)])
            // Stale workers go; rows another round is deleting right now are skipped (two rounds deleting the
            // same rows in different orders deadlocked).
            try await sql.execute(
                "DELETE FROM fleet_workers WHERE worker_id IN (SELECT worker_id FROM fleet_workers WHERE last_seen < "
                    + "\(now) - $1" + sql.dialect.forUpdateSkipLocked + ")",
                [.int(ttl * 20)])
            let live =
                try await sql.query(
                    "SELECT COUNT(*) AS live FROM fleet_workers WHERE last_seen >= \(now) - $1", [.int(ttl)]
                ).first?["live"].int64 ?? 1
            for partition in releasing.sorted() {
                try await sql.execute(
                    "UPDATE partition_leases SET owner = NULL, expires_at = 0 WHERE partition_id = $1 AND owner = $2",
                    [.int(Int64(partition)), .text(worker)])
            }
            var held = try await sql.query(
                "UPDATE partition_leases SET expires_at = \(now) + $1 WHERE owner = $2 AND expires_at > \(now) "
                    + "RETURNING partition_id, epoch",
                [.int(ttl), .text(worker)]
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
                    let taken = try await sql.query(
                        "UPDATE partition_leases SET owner = $1, epoch = epoch + 1, expires_at = \(now) + $2 "
                            + "WHERE partition_id = $3 AND expires_at <= \(now)"
                            + (takeExpired ? "" : " AND owner IS NULL") + " RETURNING partition_id, epoch",
                        [.text(worker), .int(ttl), .int(Int64(partition))]
                    ).compactMap(lease(worker))
                    held.append(contentsOf: taken)
                }
            }
            return LeaseRound(
                leases: held.sorted { $0.partition < $1.partition }, liveWorkers: Int(live), target: target)
        }
    }

    /// Renews `lease` alone (see ``BadgeStore/renewLease(_:ttlMilliseconds:)``).
    static func renew(
        _ lease: PartitionLease, ttlMilliseconds: Int64, database: any SQLTransactor
    ) async throws
        -> Bool
    {
        try await database.transaction { sql in
            let now = Self.now(sql.dialect)
            return try await !sql.query(
                "UPDATE partition_leases SET expires_at = \(now) + $1 WHERE partition_id = $2 AND owner = $3 "
                    + "AND epoch = $4 AND expires_at > \(now) RETURNING partition_id",
                [.int(ttlMilliseconds * 1000), .int(Int64(lease.partition)), .text(lease.worker), .int(lease.epoch)]
            ).isEmpty
        }
    }

    private static func lease(_ worker: String) -> (SQLRow) throws -> PartitionLease? {
        { row in
            guard let partition = try row["partition_id"].int64, let epoch = try row["epoch"].int64 else { return nil }
            return PartitionLease(partition: Int(partition), epoch: epoch, worker: worker)
        }
    }

    /// The push guard for one outbox row, run just before it is sent: returns the push to send, or nil to drop
    /// it. First records `sent` (outbox rows of pushes sent since the previous call) as sent, in the same
    /// transaction; then, with `lease`, fails with `lease_lost` unless the lease is still held. A row that is gone
    /// was sent by somebody else (the partition's new owner, while this worker was frozen): nil. Otherwise the
    /// decision is ``PushGuard``'s, written by ``DeliveryQueries/claim(_:policy:lease:sql:)`` (the delivery stage
    /// claims many rows at once the same way).
    static func claimPush(
        _ outbox: OutboxPush, policy: BadgePolicy, recordingSent sent: [Int64], lease: PartitionLease?,
        database: any SQLTransactor
    ) async throws -> PlannedPush? {
        try await database.transaction { sql in
            try await deleteOutboxRows(sent, sql: sql)
            if let lease { try await checkLease(lease, sql: sql) }
            let rows = try await sql.query(
                "SELECT \(OutboxRow.selectColumns) FROM outbox WHERE id = $1" + sql.dialect.forUpdate,
                [.int(outbox.id)]
            ).map(OutboxRow.decode)
            return try await DeliveryQueries.claim(rows, policy: policy, lease: lease, sql: sql).first?.push
        }
    }

    /// `push` with its user's current counts, badge and preferences at a fresh `badge_version` (the user's version
    /// is bumped); nil for an unknown user.
    private static func atFreshVersion(
        _ push: PlannedPush, policy: BadgePolicy, sql: any SQLExecutor
    ) async throws
        -> PlannedPush?
    {
        let bumped = try await sql.query(
            "UPDATE users SET badge_version = badge_version + 1 WHERE user_id = $1 "
                + "RETURNING \(EventRules.UserRow.columns)",
            [.text(push.recipient)])
        guard let row = bumped.first else { return nil }
        return try EventRules.UserRow(row: row).current(push, policy: policy)
    }

    /// Plans a badge refresh for the device of `push` (see ``BadgeStore/refreshBadge(after:partition:policy:)``).
    static func refreshBadge(
        after push: PlannedPush, partition: Int?, policy: BadgePolicy, database: any SQLTransactor
    ) async throws -> Bool {
        try await database.transaction { sql in
            let device = try await sql.query(
                "SELECT 1 FROM devices WHERE token = $1 AND user_id = $2 AND active",
                [.text(push.token), .text(push.recipient)])
            if device.isEmpty { return false }
            var badgeOnly = push
            badgeOnly.kind = .badgeOnly
            guard let refresh = try await atFreshVersion(badgeOnly, policy: policy, sql: sql) else { return false }
            let values = OutboxRow.values(
                of: refresh, eventJSON: nil, partition: partition, createdAt: Timestamp.now().microsecondsSinceEpoch)
            try await sql.execute(
                "INSERT INTO outbox (\(OutboxRow.insertColumns)) VALUES ("
                    + (1...values.count).map { "$\($0)" }.joined(separator: ", ") + ")",
                values)
            return true
        }
    }

    /// Deletes outbox rows (sent, dropped or failed pushes), in one statement.
    static func deleteOutboxRows(_ ids: [Int64], sql: any SQLExecutor) async throws {
        guard !ids.isEmpty else { return }
        var set = SQLRowSet([("id", .int)])
        for id in ids.sorted() { set.append([.int(id)]) }
        try await sql.execute(
            "DELETE FROM outbox WHERE id IN (SELECT id FROM \(set.table("s", bind: 1, dialect: sql.dialect)))",
            [set.bind])
    }
}
