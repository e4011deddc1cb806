import BadgeCore

extension DeliveryQueries {
    /// The fenced claim on PostgreSQL in one statement instead of three: the lease check, selecting, locking and
    /// marking the due rows with the claimer's epoch, and locking their devices, in that order (each step reads
    /// the one before: the claim runs only while the lease is held, the devices are those of the claimed rows).
    /// Then the push guard runs as in ``claim(_:policy:lease:marked:devices:sql:)``.
    ///
    /// The statement always returns at least one row: `lease_held` (1 or 0), and the claimed rows joined to their
    /// devices (`d_user_id`, `d_pushed_version`, NULL for a token without a devices row), or NULLs when nothing
    /// was due.
    static func claimDueFenced(
        partition: Int?, limit: Int, now: Int64, policy: BadgePolicy, lease: PartitionLease,
        skipClaimedBefore: Int64?, removing removed: [Int64] = [], sql: any SQLExecutor
    ) async throws -> ClaimedPushes {
        var binds: [SQLValue] = [.int(now), .int(Int64(limit))]
        // The rows of the previous round to remove (its sent and failed pushes): deleted by the same statement, and
        // left out of the claim, which sees them (one snapshot).
        var removal = ""
        if !removed.isEmpty {
            var set = SQLRowSet([("id", .int)])
            for id in removed.sorted() { set.append([.int(id)]) }
            binds.append(set.bind)
            removal =
                "removed AS MATERIALIZED (SELECT id FROM \(set.table("s", bind: binds.count, dialect: .postgres))), "
                + "gone AS (DELETE FROM outbox WHERE id IN (SELECT id FROM removed)), "
        }
        let due = dueRows(
            partition: partition, skipClaimedBefore: skipClaimedBefore, binds: &binds, dialect: .postgres,
            excluding: removed.isEmpty ? nil : "removed")
        let check = FleetQueries.leaseQuery(lease, first: binds.count + 1)
        binds += check.binds
        // The lease's epoch (bound for the check) is the claim's mark too.
        let epoch = binds.count
        let rows = try await sql.query(
            """
            WITH \(removal)\(check.sql),
            c AS (UPDATE outbox SET claimed_epoch = $\(epoch) WHERE EXISTS (SELECT 1 FROM lease)
                AND id IN (SELECT o.id \(due)) RETURNING \(OutboxRow.selectColumns)),
            d AS MATERIALIZED (SELECT token AS d_token, user_id AS d_user_id, pushed_version AS d_pushed_version
                FROM devices WHERE token IN (SELECT token FROM c) ORDER BY token FOR NO KEY UPDATE)
            SELECT (SELECT count(*) FROM lease) AS lease_held, c.*, d.d_user_id, d.d_pushed_version
            FROM (SELECT 1) AS one LEFT JOIN c ON true LEFT JOIN d ON d.d_token = c.token
            """,
            binds)
        guard let first = rows.first, let held = try first["lease_held"].int64 else {
            throw StoreError.corrupt("the claim returned no lease row")
        }
        guard held > 0 else { throw FleetQueries.leaseLost(lease) }
        var claimed: [OutboxPush] = []
        var devices: [String: PushGuard.Device] = [:]
        for row in rows where try row["id"].int64 != nil {
            let push = try OutboxRow.decode(row)
            claimed.append(push)
            if let user = try row["d_user_id"].string, let version = try row["d_pushed_version"].int64 {
                devices[push.push.token] = PushGuard.Device(user: user, pushedVersion: version)
            }
        }
        claimed.sort { $0.id < $1.id }
        let pushes = try await claim(
            claimed, policy: policy, lease: lease, marked: true, devices: devices, sql: sql)
        return ClaimedPushes(pushes: pushes, reachedLimit: claimed.count >= limit)
    }
}
