import BadgeCore
import BadgeSupport

/// Retention's statements: each deletes one small batch of old rows, found through an index, in a transaction of
/// its own (so that it holds its row locks for a moment only and never makes ingestion wait long); and the
/// maintenance lease, which lets one worker of a fleet do the deleting. Both on the database's clock: what is old,
/// and who holds the lease, is the same for every worker whatever its own clock says.
enum RetentionQueries {
    static func purge(
        _ kind: RetentionKind, olderThan age: Duration, limit: Int, database: any SQLTransactor
    ) async throws -> Int {
        guard limit > 0 else { return 0 }
        let table: String
        let column: String
        switch kind {
        case .processedEvents: (table, column) = ("processed_events", "processed_at")
        case .readTombstones: (table, column) = ("read_tombstones", "created_at")
        case .readNotifications: (table, column) = ("notifications", "read AND occurred_at")
        case .readMessages: (table, column) = ("messages", "read AND occurred_at")
        }
        return try await database.transaction { sql in
            var binds = SQLBinds()
            // The cutoff, one value for the statement (an init plan on PostgreSQL, so still an index condition).
            let cutoffAge = binds.add(.int(max(0, age.wholeMicroseconds)))
            let old = "\(column) < \(FleetQueries.statementNow(sql.dialect)) - \(cutoffAge)"
            // The batch's rows by their physical address (a TID scan on PostgreSQL, the rowid on SQLite), found once:
            // with `(key) IN (SELECT key … LIMIT n)`, a generic plan made while the table is small joins the
            // subquery to the old rows and runs it again for each of them: with a million rows it would never
            // finish within the statement timeout, and retention would stop.
            let address = sql.dialect.rowAddress
            let statement =
                "DELETE FROM \(table) WHERE "
                + sql.dialect.among(
                    address, "SELECT \(address) FROM \(table) WHERE \(old) LIMIT \(binds.add(.int(Int64(limit))))")
                + " AND \(old) RETURNING 1"
            return try await sql.query(statement, binds.values).count
        }
    }

    static func maintenanceLease(
        _ name: String, worker: String, ttlMilliseconds: Int64, database: any SQLTransactor
    ) async throws -> Bool {
        try await database.transaction { sql in
            var insert = SQLBinds()
            try await sql.execute(
                "INSERT INTO maintenance_leases (name, owner, expires_at) VALUES (\(insert.add(.text(name))), NULL, 0) "
                    + "ON CONFLICT (name) DO NOTHING", insert.values)
            // As partition leases (`FleetQueries.round`): the database's clock after any wait for the row.
            let now = FleetQueries.now(sql.dialect)
            var binds = SQLBinds()
            let (lease, owner) = (binds.add(.text(name)), binds.add(.text(worker)))
            let rows = try await sql.query(
                """
                UPDATE maintenance_leases SET owner = \(owner), expires_at = \(now) + \(binds.add(.int(ttlMilliseconds * 1000)))
                WHERE name = \(lease) AND (owner = \(owner) OR owner IS NULL OR expires_at < \(now)) RETURNING owner
                """, binds.values)
            return !rows.isEmpty
        }
    }
}
