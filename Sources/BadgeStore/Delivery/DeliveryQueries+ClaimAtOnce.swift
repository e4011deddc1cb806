import BadgeCore

extension DeliveryQueries {
    /// The fenced claim on PostgreSQL as one statement on its own (no `BEGIN`, no `COMMIT`: one round trip instead of
    /// four), for the usual round: every claimed push to a stored device is its user's, at or above the device's
    /// `pushed_version`, and above or at the one before it for the same device. Then the push guard would send them all
    /// and move each device's `pushed_version` to its last push, and the statement does exactly that itself (the
    /// `simple` check). Returns nil, having only marked the rows (which a claim under the same epoch takes again) and
    /// removed `removed`, when the round is not that simple (a push to a token that moved to another user, or one older
    /// than what went to its device): the caller then claims in a transaction. Superseded badge-only pushes
    /// (coalesced) are deleted by a second statement.
    ///
    /// Why: a claim in a transaction is `BEGIN`, the claim, the `pushed_version` update and `COMMIT`, and under a
    /// live load claims come more often than ingestion transactions, so they make most of a fleet's round trips to
    /// PostgreSQL, each a wake-up of a backend and of the worker.
    static func claimDueAtOnce(
        partition: Int?, limit: Int, lease: PartitionLease, skipClaimedBefore: Int64?,
        removing removed: [Int64], database: any SQLTransactor
    ) async throws -> ClaimedPushes? {
        let statement = fencedClaimStatement(
            partition: partition, limit: limit, lease: lease, skipClaimedBefore: skipClaimedBefore,
            removing: removed)
        let result = try decodeFencedClaim(try await database.statement(statement.sql, statement.binds), lease: lease)
        // A row that cannot be read is moved aside in a transaction: the transaction's claim takes the rows again.
        guard result.simple, result.unreadable.isEmpty else { return nil }
        var guardState = PushGuard(devices: result.devices)
        let decisions = guardState.decide(result.claimed.map(\.push))
        var pushes: [ClaimedPush] = []
        var superseded: [Int64] = []
        for (row, decision) in zip(result.claimed, decisions) {
            switch decision {
            case .send: pushes.append(ClaimedPush(outbox: row, push: row.push))
            case .drop(.superseded) where !row.push.kind.isAlert: superseded.append(row.id)
            // The statement's check and the guard disagree: not expected. The transaction's claim decides again
            // from the rows as they stand (each device's version already moved to its last push).
            case .drop, .rebuild: return nil
            }
        }
        if !superseded.isEmpty {
            let delete = deleteStatement(superseded, dialect: .postgres)
            _ = try await database.statement(delete.sql, delete.binds)
        }
        return ClaimedPushes(pushes: pushes, reachedLimit: result.rows >= limit || result.reachedDeviceLimit)
    }

    /// What a fenced claim statement returned.
    private struct FencedClaim {
        var claimed: [OutboxPush]
        /// Claimed rows that cannot be read (see ``RefusedPush``).
        var unreadable: [(row: SQLRow, why: OutboxRow.Unreadable)]
        /// How many rows the statement claimed, readable or not.
        var rows: Int
        /// The statement claimed ``ClaimedPushes/perDeviceLimit`` rows of some token.
        var reachedDeviceLimit: Bool
        var devices: [String: PushGuard.Device]
        /// The statement's `simple` check held (and it set the devices' versions).
        var simple: Bool
        /// The events of the claimed alerts, each read and decoded once.
        var events: OutboxEvents
    }

    /// The fenced claim statement: the removal of `removed`, the lease check, the claim (marking the due rows with
    /// the lease's epoch) and the lock of their devices, in that order (each step reads the one before: the claim
    /// runs only while the lease is held, the devices are those of the claimed rows), then the `simple` check and,
    /// when it holds, each device's new `pushed_version`.
    ///
    /// It always returns at least one row: `lease_held` (1 or 0), `simple`, and the
    /// claimed rows joined to their devices (`d_user_id`, `d_pushed_version`, NULL for a token without a devices
    /// row), or NULLs when nothing was due; each alert's event once, on the first row of that event
    /// (``OutboxEvents/sharedItem(rows:)``).
    private static func fencedClaimStatement(
        partition: Int?, limit: Int, lease: PartitionLease, skipClaimedBefore: Int64?,
        removing removed: [Int64]
    ) -> (sql: String, binds: [SQLValue]) {
        var binds = SQLBinds()
        // The rows of the previous round to remove (its sent and failed pushes): deleted by the same statement, and
        // left out of the claim, which sees them (one snapshot).
        var removal = ""
        if !removed.isEmpty {
            var set = SQLRowSet([("id", .int)])
            for id in removed.sorted() { set.append([.int(id)]) }
            removal =
                "removed AS MATERIALIZED (SELECT id FROM \(set.table("s", binds: &binds, dialect: .postgres))), "
                + "gone AS (DELETE FROM outbox WHERE \(SQLDialect.postgres.among("id", "SELECT id FROM removed"))), "
        }
        let due = dueIDs(
            partition: partition, limit: limit, skipClaimedBefore: skipClaimedBefore, binds: &binds,
            dialect: .postgres, excluding: removed.isEmpty ? nil : "removed")
        let check = FleetQueries.leaseQuery(lease, binds: &binds)
        // The claim's mark: the lease's epoch.
        let epoch = binds.add(.int(lease.epoch))
        // The guard's "send" for every row, per token in id order: the token's user, at or above the device's
        // version, at or above the row before. Then the device's version moves to its last (highest) row.
        let versions = """
            x AS MATERIALIZED (SELECT token AS x_token, max(badge_version) AS x_top, bool_and(ok) AS x_ok FROM (
                SELECT c.token, c.badge_version, c.user_id = d.d_user_id AND c.badge_version >= d.d_pushed_version
                    AND c.badge_version >= coalesce(lag(c.badge_version) OVER (PARTITION BY c.token ORDER BY c.id),
                        c.badge_version) AS ok
                FROM c JOIN d ON d.d_token = c.token) AS s GROUP BY token),
            simple AS MATERIALIZED (SELECT coalesce(bool_and(x_ok), true) AS ok FROM x),
            v AS (UPDATE devices SET pushed_version = x.x_top FROM x WHERE (SELECT ok FROM simple)
                AND devices.token = x.x_token AND devices.pushed_version <> x.x_top)
            """
        let sql = """
            WITH \(removal)\(check),
            c AS (UPDATE outbox SET claimed_epoch = \(epoch) WHERE EXISTS (SELECT 1 FROM lease)
                AND \(SQLDialect.postgres.among("id", due))
                RETURNING \(OutboxRow.claimedColumns(.postgres))),
            d AS MATERIALIZED (SELECT token AS d_token, user_id AS d_user_id, pushed_version AS d_pushed_version
                FROM devices WHERE \(SQLDialect.postgres.among("token", "SELECT token FROM c")) ORDER BY token FOR NO KEY UPDATE),
            \(versions)
            SELECT (SELECT count(*) FROM lease) AS lease_held, (SELECT ok FROM simple) AS simple,
                c.*, d.d_user_id, d.d_pushed_version, \(OutboxEvents.sharedItem(rows: "c"))
            FROM (SELECT 1) AS one LEFT JOIN c ON true LEFT JOIN d ON d.d_token = c.token
            """
        return (sql, binds.values)
    }

    /// The claimed rows (in id order) and their devices, from a fenced claim statement's rows; throws `lease_lost`
    /// when the lease was not held.
    private static func decodeFencedClaim(_ rows: [SQLRow], lease: PartitionLease) throws -> FencedClaim {
        guard let first = rows.first, let held = try first["lease_held"].int64 else {
            throw StoreError.corrupt("the claim returned no lease row")
        }
        guard held > 0 else { throw FleetQueries.leaseLost(lease) }
        var claimed: [OutboxPush] = []
        var unreadable: [(id: Int64, row: SQLRow, why: OutboxRow.Unreadable)] = []
        var devices: [String: PushGuard.Device] = [:]
        var events = try OutboxEvents.shared(in: rows)
        for row in rows {
            guard let id = try row["id"].int64 else { continue }
            let push: OutboxPush
            do {
                push = try OutboxRow.decode(row, events: &events)
            } catch let why as OutboxRow.Unreadable {
                unreadable.append((id, row, why))
                continue
            }
            claimed.append(push)
            if let user = try row["d_user_id"].string, let version = try row["d_pushed_version"].int64 {
                devices[push.push.token] = PushGuard.Device(user: user, pushedVersion: version)
            }
        }
        // The statement returns its rows in no particular order.
        claimed.sort { $0.id < $1.id }
        unreadable.sort { $0.id < $1.id }
        let simple = try first["simple"].bool ?? false
        return FencedClaim(
            claimed: claimed, unreadable: unreadable.map { ($0.row, $0.why) }, rows: claimed.count + unreadable.count,
            reachedDeviceLimit: try reachedDeviceLimit(rows), devices: devices, simple: simple, events: events)
    }
}
